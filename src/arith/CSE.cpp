#include "arith/CSE.h"

#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/IREquality.h"
#include "ir/IRMutator.h"
#include "ir/IRVisitor.h"
#include "loom/IROperator.h"

namespace loom {
namespace internal {

namespace {

// The direct subexpressions of a node (not of Lets, which are kept whole).
std::vector<Expr> children(const Expr &e) {
    switch (e.node_type()) {
    case IRNodeType::Cast: return {e.as<Cast>()->value};
    case IRNodeType::Reinterpret: return {e.as<Reinterpret>()->value};
#define LOOM_BIN(T) \
    case IRNodeType::T: return {e.as<T>()->a, e.as<T>()->b}
        LOOM_BIN(Add);
        LOOM_BIN(Sub);
        LOOM_BIN(Mul);
        LOOM_BIN(Div);
        LOOM_BIN(Mod);
        LOOM_BIN(Min);
        LOOM_BIN(Max);
        LOOM_BIN(EQ);
        LOOM_BIN(NE);
        LOOM_BIN(LT);
        LOOM_BIN(LE);
        LOOM_BIN(GT);
        LOOM_BIN(GE);
        LOOM_BIN(And);
        LOOM_BIN(Or);
#undef LOOM_BIN
    case IRNodeType::Not: return {e.as<Not>()->a};
    case IRNodeType::Select: {
        const Select *s = e.as<Select>();
        return {s->condition, s->true_value, s->false_value};
    }
    case IRNodeType::Load: return {e.as<Load>()->index, e.as<Load>()->predicate};
    case IRNodeType::Ramp: return {e.as<Ramp>()->base, e.as<Ramp>()->stride};
    case IRNodeType::Broadcast: return {e.as<Broadcast>()->value};
    case IRNodeType::Call: return e.as<Call>()->args;
    case IRNodeType::VectorReduce: return {e.as<VectorReduce>()->value};
    default: return {};
    }
}

bool has_impure_call(const Expr &e) {
    struct Check : IRVisitor {
        bool found = false;
        void visit(const Call *op) override {
            if (!op->is_pure()) found = true;
            IRVisitor::visit(op);
        }
    } c;
    e.accept(&c);
    return c.found;
}

// Whether computing e once and naming it is worthwhile (and safe: impure
// calls must run exactly as written). Loads are extracted too: no store
// runs inside one expression, and a load under a select is in bounds either
// way (bounds inference asks for what both of its values read).
bool should_extract(const Expr &e) {
    if (is_const(e) || e.as<Variable>() || e.as<StringImm>()) return false;
    if (const Broadcast *b = e.as<Broadcast>()) {
        if (is_const(b->value) || b->value.as<Variable>()) return false;
    }
    // A dense or strided ramp stays in place (its base is named instead
    // where it repeats): a load or store whose index is a named ramp
    // would be a gather or scatter, one whose index is a ramp a vector
    // move.
    if (const Ramp *r = e.as<Ramp>()) {
        if (is_const(r->stride)) return false;
    }
    if (e.type().is_handle()) return false;
    return !has_impure_call(e);
}

// Global value numbering: maps structurally equal subexpressions to one
// canonical node and counts the edges of the resulting DAG.
class GVN : public IRMutator {
  public:
    struct Entry {
        Expr e;
        int uses = 0;
    };
    std::vector<Entry> entries;
    std::map<Expr, int, ExprDeepCompare> numbers;

    int number_of(const Expr &e) { return numbers.at(e); }

    using IRMutator::mutate;
    Expr mutate(const Expr &e) override {
        auto m = memo.find(e.get());
        if (m != memo.end()) return m->second;
        Expr c = e.as<Let>() ? e : IRMutator::mutate(e);
        auto it = numbers.find(c);
        Expr canon;
        if (it != numbers.end()) {
            canon = entries[it->second].e;
        } else {
            numbers.emplace(c, static_cast<int>(entries.size()));
            entries.push_back({c, 0});
            for (const Expr &ch : children(c)) entries[numbers.at(ch)].uses++;
            canon = c;
        }
        memo.emplace(e.get(), canon);
        keep.push_back(e);
        return canon;
    }

  private:
    std::map<const IRNode *, Expr> memo;
    std::vector<Expr> keep;  // keeps memo keys alive
};

class VarNames : public IRVisitor {
  public:
    std::set<std::string> names;
    void visit(const Variable *op) override { names.insert(op->name); }
    void visit(const Let *op) override {
        names.insert(op->name);
        IRVisitor::visit(op);
    }
};

Expr cse(const Expr &e, std::set<std::string> &used_names, int &counter);

// Replaces lifted nodes by their variables, recording their values in order.
class Replace : public IRMutator {
  public:
    Replace(GVN &g, std::vector<bool> &l, std::set<std::string> &names, int &ctr)
        : gvn(g), lift(l), used_names(names), counter(ctr), vars(g.entries.size()) {}
    std::vector<std::pair<std::string, Expr>> lets;

    using IRMutator::mutate;
    Expr mutate(const Expr &e) override {
        int n = gvn.number_of(e);
        if (lift[n] && vars[n].defined()) return vars[n];
        if (!lift[n] && done[n].defined()) return done[n];
        Expr r;
        if (const Let *l = e.as<Let>()) {
            r = Let::make(l->name, cse(l->value, used_names, counter),
                          cse(l->body, used_names, counter));
        } else {
            r = IRMutator::mutate(e);
        }
        if (!lift[n]) {
            done[n] = r;
            return r;
        }
        std::string name;
        do {
            name = "t" + std::to_string(counter++);
        } while (used_names.count(name));
        used_names.insert(name);
        lets.emplace_back(name, r);
        vars[n] = Variable::make(r.type(), name);
        return vars[n];
    }

  private:
    GVN &gvn;
    std::vector<bool> &lift;
    std::set<std::string> &used_names;
    int &counter;
    std::vector<Expr> vars;
    std::map<int, Expr> done;
};

Expr cse(const Expr &e, std::set<std::string> &used_names, int &counter) {
    if (!e.defined()) return e;
    GVN gvn;
    Expr canon = gvn.mutate(e);
    gvn.entries[gvn.number_of(canon)].uses++;
    std::vector<bool> lift(gvn.entries.size(), false);
    for (size_t i = 0; i < gvn.entries.size(); i++) {
        lift[i] = gvn.entries[i].uses > 1 && should_extract(gvn.entries[i].e);
    }
    Replace rep(gvn, lift, used_names, counter);
    Expr body = rep.mutate(canon);
    for (auto it = rep.lets.rbegin(); it != rep.lets.rend(); ++it)
        body = Let::make(it->first, it->second, body);
    return body;
}

class CSEStmt : public IRMutator {
  public:
    std::set<std::string> names;
    int counter = 0;
    using IRMutator::mutate;
    Expr mutate(const Expr &e) override { return cse(e, names, counter); }

  protected:
    using IRMutator::visit;
    // An assert's message is the error() call codegen expects to find there,
    // built only on the failure path: it stays as it is.
    Stmt visit(const AssertStmt *op) override {
        Expr c = mutate(op->condition);
        if (c.same_as(op->condition)) return op;
        return AssertStmt::make(c, op->message);
    }
};

}  // namespace

Expr common_subexpression_elimination(const Expr &e) {
    if (!e.defined()) return e;
    VarNames v;
    e.accept(&v);
    int counter = 0;
    return cse(e, v.names, counter);
}

Stmt common_subexpression_elimination(const Stmt &s) {
    if (!s.defined()) return s;
    struct StmtNames : IRVisitor {
        std::set<std::string> names;
        void visit(const Variable *op) override { names.insert(op->name); }
        void visit(const Let *op) override {
            names.insert(op->name);
            IRVisitor::visit(op);
        }
        void visit(const LetStmt *op) override {
            names.insert(op->name);
            IRVisitor::visit(op);
        }
        void visit(const For *op) override {
            names.insert(op->name);
            IRVisitor::visit(op);
        }
    } v;
    s.accept(&v);
    CSEStmt c;
    c.names = v.names;
    return c.mutate(s);
}

}  // namespace internal
}  // namespace loom
