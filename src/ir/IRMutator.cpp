#include "ir/IRMutator.h"

#include "loom/Error.h"

namespace loom {
namespace internal {

Expr IRMutator::mutate(const Expr &e) {
    if (!e.defined()) return e;
    switch (e.node_type()) {
#define LOOM_CASE(T) \
    case IRNodeType::T: return visit(e.as<T>())
        LOOM_CASE(IntImm);
        LOOM_CASE(UIntImm);
        LOOM_CASE(FloatImm);
        LOOM_CASE(StringImm);
        LOOM_CASE(Cast);
        LOOM_CASE(Reinterpret);
        LOOM_CASE(Variable);
        LOOM_CASE(Add);
        LOOM_CASE(Sub);
        LOOM_CASE(Mul);
        LOOM_CASE(Div);
        LOOM_CASE(Mod);
        LOOM_CASE(Min);
        LOOM_CASE(Max);
        LOOM_CASE(EQ);
        LOOM_CASE(NE);
        LOOM_CASE(LT);
        LOOM_CASE(LE);
        LOOM_CASE(GT);
        LOOM_CASE(GE);
        LOOM_CASE(And);
        LOOM_CASE(Or);
        LOOM_CASE(Not);
        LOOM_CASE(Select);
        LOOM_CASE(Load);
        LOOM_CASE(Ramp);
        LOOM_CASE(Broadcast);
        LOOM_CASE(Let);
        LOOM_CASE(Call);
        LOOM_CASE(VectorReduce);
#undef LOOM_CASE
    default: internal_error << "mutate(Expr) called on a statement";
    }
}

Stmt IRMutator::mutate(const Stmt &s) {
    if (!s.defined()) return s;
    switch (s.node_type()) {
#define LOOM_CASE(T) \
    case IRNodeType::T: return visit(s.as<T>())
        LOOM_CASE(LetStmt);
        LOOM_CASE(AssertStmt);
        LOOM_CASE(ProducerConsumer);
        LOOM_CASE(For);
        LOOM_CASE(Store);
        LOOM_CASE(Provide);
        LOOM_CASE(Allocate);
        LOOM_CASE(Free);
        LOOM_CASE(Realize);
        LOOM_CASE(Block);
        LOOM_CASE(IfThenElse);
        LOOM_CASE(Evaluate);
        LOOM_CASE(TileKernel);
#undef LOOM_CASE
    default: internal_error << "mutate(Stmt) called on an expression";
    }
}

std::vector<Expr> IRMutator::mutate_exprs(const std::vector<Expr> &v, bool *changed) {
    std::vector<Expr> out(v.size());
    for (size_t i = 0; i < v.size(); i++) {
        out[i] = mutate(v[i]);
        if (!out[i].same_as(v[i])) *changed = true;
    }
    return out;
}

Expr IRMutator::visit(const IntImm *op) { return op; }
Expr IRMutator::visit(const UIntImm *op) { return op; }
Expr IRMutator::visit(const FloatImm *op) { return op; }
Expr IRMutator::visit(const StringImm *op) { return op; }
Expr IRMutator::visit(const Variable *op) { return op; }

Expr IRMutator::visit(const Cast *op) {
    Expr v = mutate(op->value);
    return v.same_as(op->value) ? Expr(op) : Cast::make(op->type, v);
}
Expr IRMutator::visit(const Reinterpret *op) {
    Expr v = mutate(op->value);
    return v.same_as(op->value) ? Expr(op) : Reinterpret::make(op->type, v);
}

#define LOOM_MUTATE_BINARY(T)                                \
    Expr IRMutator::visit(const T *op) {                     \
        Expr a = mutate(op->a), b = mutate(op->b);           \
        if (a.same_as(op->a) && b.same_as(op->b)) return op; \
        return T::make(std::move(a), std::move(b));          \
    }
LOOM_MUTATE_BINARY(Add)
LOOM_MUTATE_BINARY(Sub)
LOOM_MUTATE_BINARY(Mul)
LOOM_MUTATE_BINARY(Div)
LOOM_MUTATE_BINARY(Mod)
LOOM_MUTATE_BINARY(Min)
LOOM_MUTATE_BINARY(Max)
LOOM_MUTATE_BINARY(EQ)
LOOM_MUTATE_BINARY(NE)
LOOM_MUTATE_BINARY(LT)
LOOM_MUTATE_BINARY(LE)
LOOM_MUTATE_BINARY(GT)
LOOM_MUTATE_BINARY(GE)
LOOM_MUTATE_BINARY(And)
LOOM_MUTATE_BINARY(Or)
#undef LOOM_MUTATE_BINARY

Expr IRMutator::visit(const Not *op) {
    Expr a = mutate(op->a);
    return a.same_as(op->a) ? Expr(op) : Not::make(a);
}
Expr IRMutator::visit(const Select *op) {
    Expr c = mutate(op->condition), t = mutate(op->true_value), f = mutate(op->false_value);
    if (c.same_as(op->condition) && t.same_as(op->true_value) && f.same_as(op->false_value))
        return op;
    return Select::make(c, t, f);
}
Expr IRMutator::visit(const Load *op) {
    Expr i = mutate(op->index), p = mutate(op->predicate);
    if (i.same_as(op->index) && p.same_as(op->predicate)) return op;
    return Load::make(op->type, op->name, i, p, op->param, op->alignment);
}
Expr IRMutator::visit(const Ramp *op) {
    Expr b = mutate(op->base), s = mutate(op->stride);
    if (b.same_as(op->base) && s.same_as(op->stride)) return op;
    return Ramp::make(b, s, op->lanes);
}
Expr IRMutator::visit(const Broadcast *op) {
    Expr v = mutate(op->value);
    return v.same_as(op->value) ? Expr(op) : Broadcast::make(v, op->lanes);
}
Expr IRMutator::visit(const Let *op) {
    Expr v = mutate(op->value), b = mutate(op->body);
    if (v.same_as(op->value) && b.same_as(op->body)) return op;
    return Let::make(op->name, v, b);
}
Expr IRMutator::visit(const Call *op) {
    bool changed = false;
    std::vector<Expr> args = mutate_exprs(op->args, &changed);
    if (!changed) return op;
    return Call::make(op->type, op->name, args, op->call_type, op->func, op->value_index, op->param,
                      op->buffer);
}
Expr IRMutator::visit(const VectorReduce *op) {
    Expr v = mutate(op->value);
    return v.same_as(op->value) ? Expr(op) : VectorReduce::make(op->op, v, op->type.lanes);
}

Stmt IRMutator::visit(const LetStmt *op) {
    Expr v = mutate(op->value);
    Stmt b = mutate(op->body);
    if (v.same_as(op->value) && b.same_as(op->body)) return op;
    return LetStmt::make(op->name, v, b);
}
Stmt IRMutator::visit(const AssertStmt *op) {
    Expr c = mutate(op->condition), m = mutate(op->message);
    if (c.same_as(op->condition) && m.same_as(op->message)) return op;
    return AssertStmt::make(c, m);
}
Stmt IRMutator::visit(const ProducerConsumer *op) {
    Stmt b = mutate(op->body);
    return b.same_as(op->body) ? Stmt(op) : ProducerConsumer::make(op->name, op->is_producer, b);
}
Stmt IRMutator::visit(const For *op) {
    Expr mn = mutate(op->min), ext = mutate(op->extent);
    Stmt b = mutate(op->body);
    if (mn.same_as(op->min) && ext.same_as(op->extent) && b.same_as(op->body)) return op;
    return For::make(op->name, mn, ext, op->for_type, b, op->attributes);
}
Stmt IRMutator::visit(const Store *op) {
    Expr v = mutate(op->value), i = mutate(op->index), p = mutate(op->predicate);
    if (v.same_as(op->value) && i.same_as(op->index) && p.same_as(op->predicate)) return op;
    return Store::make(op->name, v, i, p, op->param, op->alignment);
}
Stmt IRMutator::visit(const Provide *op) {
    bool changed = false;
    std::vector<Expr> values = mutate_exprs(op->values, &changed);
    std::vector<Expr> args = mutate_exprs(op->args, &changed);
    if (!changed) return op;
    return Provide::make(op->name, values, args);
}
Stmt IRMutator::visit(const Allocate *op) {
    bool changed = false;
    std::vector<Expr> extents = mutate_exprs(op->extents, &changed);
    Expr c = mutate(op->condition);
    Stmt b = mutate(op->body);
    if (!changed && c.same_as(op->condition) && b.same_as(op->body)) return op;
    return Allocate::make(op->name, op->type, op->memory_type, extents, c, b, op->replicated);
}
Stmt IRMutator::visit(const Free *op) { return op; }
Stmt IRMutator::visit(const Realize *op) {
    bool changed = false;
    Region bounds(op->bounds.size());
    for (size_t i = 0; i < bounds.size(); i++) {
        bounds[i].min = mutate(op->bounds[i].min);
        bounds[i].extent = mutate(op->bounds[i].extent);
        changed |= !bounds[i].min.same_as(op->bounds[i].min) ||
                   !bounds[i].extent.same_as(op->bounds[i].extent);
    }
    Expr c = mutate(op->condition);
    Stmt b = mutate(op->body);
    if (!changed && c.same_as(op->condition) && b.same_as(op->body)) return op;
    return Realize::make(op->name, op->types, op->memory_type, bounds, c, b, op->replicated);
}
Stmt IRMutator::visit(const Block *op) {
    Stmt f = mutate(op->first), r = mutate(op->rest);
    if (f.same_as(op->first) && r.same_as(op->rest)) return op;
    return Block::make(f, r);
}
Stmt IRMutator::visit(const IfThenElse *op) {
    Expr c = mutate(op->condition);
    Stmt t = mutate(op->then_case), e = mutate(op->else_case);
    if (c.same_as(op->condition) && t.same_as(op->then_case) && e.same_as(op->else_case)) return op;
    if (!t.defined() && !e.defined()) return Stmt();
    if (!t.defined()) return IfThenElse::make(Not::make(c), e);
    return IfThenElse::make(c, t, e);
}
Stmt IRMutator::visit(const TileKernel *op) {
    bool changed = false;
    auto all = [&](const std::vector<Expr> &es) {
        std::vector<Expr> out;
        for (const Expr &e : es) {
            out.push_back(mutate(e));
            changed |= !out.back().same_as(e);
        }
        return out;
    };
    std::vector<Expr> grid = all(op->grid), values = all(op->scalar_values);
    if (!changed) return op;
    return TileKernel::make(op->contents, grid, op->scalar_names, values);
}
Stmt IRMutator::visit(const Evaluate *op) {
    Expr v = mutate(op->value);
    return v.same_as(op->value) ? Stmt(op) : Evaluate::make(v);
}

Expr IRGraphMutator::mutate(const Expr &e) {
    if (!e.defined()) return e;
    auto it = expr_replacements.find(e);
    if (it != expr_replacements.end()) return it->second;
    Expr r = IRMutator::mutate(e);
    expr_replacements.emplace(e, r);
    return r;
}

Stmt IRGraphMutator::mutate(const Stmt &s) {
    if (!s.defined()) return s;
    auto it = stmt_replacements.find(s);
    if (it != stmt_replacements.end()) return it->second;
    Stmt r = IRMutator::mutate(s);
    stmt_replacements.emplace(s, r);
    return r;
}

Stmt LetTrackingMutator::visit(const LetStmt *op) {
    enclosing_lets.emplace_back(op->name, op->value);
    Stmt body = mutate(op->body);
    enclosing_lets.pop_back();
    return body.same_as(op->body) ? Stmt(op) : LetStmt::make(op->name, op->value, body);
}

}  // namespace internal
}  // namespace loom
