#include "lower/AlignVectorAccesses.h"

#include "arith/Simplify.h"
#include "ir/IRMutator.h"

namespace loom {
namespace internal {

namespace {

class AlignAccesses : public IRMutator {
  public:
    explicit AlignAccesses(const Scope<ModulusRemainder> &f) : facts(f) {}

    using IRMutator::mutate;

  private:
    const Scope<ModulusRemainder> &facts;
    // The value of each integer let in scope, in terms of the variables
    // outside all of them; undefined for a name whose value is unknown (a
    // loop variable, or a let too big to carry) that shadows an outer one.
    Scope<Expr> values;

    Expr expanded(const Expr &e) const { return expand_lets(e, values); }

    ModulusRemainder alignment_of(const Expr &index) {
        const Ramp *r = index.as<Ramp>();
        if (!r) return ModulusRemainder();
        Expr base = expanded(r->base);
        if (count_nodes(base) > kMaxExpandedNodes) return ModulusRemainder();
        return modulus_remainder(base, facts);
    }

    template <typename LetOrLetStmt, typename Body>
    auto visit_let(const LetOrLetStmt *op, const Body &body) {
        Expr value = mutate(op->value);
        Expr known;
        if (value.type().is_int_or_uint() && value.type().is_scalar()) {
            Expr e = expanded(value);
            if (count_nodes(e) <= kMaxExpandedNodes) known = e;
        }
        values.push(op->name, known);
        auto b = mutate(body);
        values.pop(op->name);
        using Node = std::remove_cv_t<std::remove_pointer_t<decltype(op)>>;
        if (value.same_as(op->value) && b.same_as(body)) return decltype(b)(op);
        return decltype(b)(Node::make(op->name, value, b));
    }

    Expr visit(const Let *op) override { return visit_let(op, op->body); }
    Stmt visit(const LetStmt *op) override { return visit_let(op, op->body); }

    Stmt visit(const For *op) override {
        Expr mn = mutate(op->min), ext = mutate(op->extent);
        values.push(op->name, Expr());
        Stmt body = mutate(op->body);
        values.pop(op->name);
        if (mn.same_as(op->min) && ext.same_as(op->extent) && body.same_as(op->body)) return op;
        return For::make(op->name, mn, ext, op->for_type, body, op->attributes);
    }

    Expr visit(const Load *op) override {
        Expr index = mutate(op->index), pred = mutate(op->predicate);
        return Load::make(op->type, op->name, index, pred, op->param, alignment_of(index));
    }

    Stmt visit(const Store *op) override {
        Expr value = mutate(op->value), index = mutate(op->index), pred = mutate(op->predicate);
        return Store::make(op->name, value, index, pred, op->param, alignment_of(index));
    }
};

}  // namespace

int count_nodes(const Expr &e) {
    struct Counter : IRMutator {
        int n = 0;
        using IRMutator::mutate;
        Expr mutate(const Expr &x) override {
            if (++n > kMaxExpandedNodes) return x;
            return IRMutator::mutate(x);
        }
    } c;
    c.mutate(e);
    return c.n;
}

Expr expand_lets(const Expr &e, const Scope<Expr> &values) {
    struct Expand : IRMutator {
        const Scope<Expr> &values;
        explicit Expand(const Scope<Expr> &v) : values(v) {}
        using IRMutator::visit;
        Expr visit(const Variable *op) override {
            const Expr *v = values.find(op->name);
            return v && v->defined() ? *v : Expr(op);
        }
    } expand(values);
    return expand.mutate(e);
}

Stmt align_vector_accesses(const Stmt &s, const Scope<ModulusRemainder> &facts) {
    return AlignAccesses(facts).mutate(s);
}

}  // namespace internal
}  // namespace loom
