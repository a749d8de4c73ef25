#include "ir/Substitute.h"

#include <set>

#include "ir/IREquality.h"
#include "ir/IRMutator.h"
#include "ir/IRVisitor.h"
#include "ir/Scope.h"

namespace loom {
namespace internal {

namespace {

// Replaces free variables by name. A Let, LetStmt or For that rebinds a name
// hides the replacement within its body.
class SubstituteVars : public IRMutator {
  public:
    explicit SubstituteVars(const std::map<std::string, Expr> &r) : replace(r) {}

  private:
    const std::map<std::string, Expr> &replace;
    Scope<int> hidden;

    const Expr *find(const std::string &name) const {
        if (hidden.contains(name)) return nullptr;
        auto it = replace.find(name);
        return it == replace.end() ? nullptr : &it->second;
    }

    Expr visit(const Variable *op) override {
        const Expr *r = find(op->name);
        return r ? *r : Expr(op);
    }
    Expr visit(const Let *op) override {
        Expr v = mutate(op->value);
        Expr b;
        {
            ScopedBinding<int> bind(hidden, op->name, 0);
            b = mutate(op->body);
        }
        if (v.same_as(op->value) && b.same_as(op->body)) return op;
        return Let::make(op->name, v, b);
    }
    Stmt visit(const LetStmt *op) override {
        Expr v = mutate(op->value);
        Stmt b;
        {
            ScopedBinding<int> bind(hidden, op->name, 0);
            b = mutate(op->body);
        }
        if (v.same_as(op->value) && b.same_as(op->body)) return op;
        return LetStmt::make(op->name, v, b);
    }
    Stmt visit(const For *op) override {
        Expr mn = mutate(op->min), ext = mutate(op->extent);
        Stmt b;
        {
            ScopedBinding<int> bind(hidden, op->name, 0);
            b = mutate(op->body);
        }
        if (mn.same_as(op->min) && ext.same_as(op->extent) && b.same_as(op->body)) return op;
        return For::make(op->name, mn, ext, op->for_type, b, op->attributes);
    }
};

class SubstituteExpr : public IRMutator {
  public:
    SubstituteExpr(const Expr &f, const Expr &r) : find(f), replacement(r) {}
    Expr mutate(const Expr &e) override {
        if (e.defined() && equal(e, find)) return replacement;
        return IRMutator::mutate(e);
    }
    using IRMutator::mutate;

  private:
    const Expr &find, &replacement;
};

class SubstituteInAllLets : public IRMutator {
    Expr visit(const Let *op) override {
        Expr v = mutate(op->value);
        Expr b = mutate(op->body);
        return substitute(op->name, v, b);
    }
    Stmt visit(const LetStmt *op) override {
        Expr v = mutate(op->value);
        Stmt b = mutate(op->body);
        return substitute(op->name, v, b);
    }
};

class UsesVar : public IRVisitor {
  public:
    explicit UsesVar(const std::string &n) : name(n) {}
    bool result = false;

  private:
    const std::string &name;
    int hidden = 0;

    void visit(const Variable *op) override {
        if (!hidden && op->name == name) result = true;
    }
    void visit(const Let *op) override {
        op->value.accept(this);
        if (op->name == name) hidden++;
        op->body.accept(this);
        if (op->name == name) hidden--;
    }
    void visit(const LetStmt *op) override {
        op->value.accept(this);
        if (op->name == name) hidden++;
        op->body.accept(this);
        if (op->name == name) hidden--;
    }
    void visit(const For *op) override {
        op->min.accept(this);
        op->extent.accept(this);
        if (op->name == name) hidden++;
        op->body.accept(this);
        if (op->name == name) hidden--;
    }
};

}  // namespace

Expr substitute(const std::string &name, const Expr &replacement, const Expr &e) {
    std::map<std::string, Expr> m{{name, replacement}};
    return SubstituteVars(m).mutate(e);
}
Stmt substitute(const std::string &name, const Expr &replacement, const Stmt &s) {
    std::map<std::string, Expr> m{{name, replacement}};
    return SubstituteVars(m).mutate(s);
}
Expr substitute(const std::map<std::string, Expr> &replacements, const Expr &e) {
    if (replacements.empty()) return e;
    return SubstituteVars(replacements).mutate(e);
}
Stmt substitute(const std::map<std::string, Expr> &replacements, const Stmt &s) {
    if (replacements.empty()) return s;
    return SubstituteVars(replacements).mutate(s);
}
Expr substitute_enclosing_lets(const std::vector<std::pair<std::string, Expr>> &lets, Expr e) {
    // Innermost first: a value may use the lets around it.
    for (auto it = lets.rbegin(); it != lets.rend(); ++it) {
        if (expr_uses_var(e, it->first)) e = substitute(it->first, it->second, e);
    }
    return e;
}
Expr substitute(const Expr &find, const Expr &replacement, const Expr &e) {
    return SubstituteExpr(find, replacement).mutate(e);
}
Expr substitute_in_all_lets(const Expr &e) { return SubstituteInAllLets().mutate(e); }
Stmt substitute_in_all_lets(const Stmt &s) { return SubstituteInAllLets().mutate(s); }

std::set<std::string> free_variables(const Expr &e) {
    struct Free : IRVisitor {
        std::set<std::string> names;
        Scope<int> bound;
        using IRVisitor::visit;
        void visit(const Variable *op) override {
            if (!bound.contains(op->name)) names.insert(op->name);
        }
        void visit(const Let *op) override {
            op->value.accept(this);
            ScopedBinding<int> b(bound, op->name, 0);
            op->body.accept(this);
        }
    } free;
    e.accept(&free);
    return free.names;
}

std::set<std::string> names_defined_in(const Stmt &s) {
    struct Defined : IRVisitor {
        std::set<std::string> names;
        using IRVisitor::visit;
        void visit(const For *op) override {
            names.insert(op->name);
            IRVisitor::visit(op);
        }
        void visit(const LetStmt *op) override {
            names.insert(op->name);
            IRVisitor::visit(op);
        }
        void visit(const Let *op) override {
            names.insert(op->name);
            IRVisitor::visit(op);
        }
        void visit(const Allocate *op) override {
            names.insert(op->name);
            IRVisitor::visit(op);
        }
    } defined;
    s.accept(&defined);
    return defined.names;
}

bool expr_uses_var(const Expr &e, const std::string &name) {
    if (!e.defined()) return false;
    UsesVar u(name);
    e.accept(&u);
    return u.result;
}
bool stmt_uses_var(const Stmt &s, const std::string &name) {
    if (!s.defined()) return false;
    UsesVar u(name);
    s.accept(&u);
    return u.result;
}

}  // namespace internal
}  // namespace loom
