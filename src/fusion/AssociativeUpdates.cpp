#include "fusion/AssociativeUpdates.h"

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "ir/IREquality.h"
#include "ir/IRVisitor.h"
#include "ir/Substitute.h"
#include "loom/IROperator.h"

namespace loom {
namespace internal {

bool loads_from(const Expr &e, const std::set<std::string> &buffers) {
    struct Find : IRVisitor {
        const std::set<std::string> *buffers;
        bool found = false;
        using IRVisitor::visit;
        void visit(const Load *op) override {
            found = found || buffers->count(op->name);
            IRVisitor::visit(op);
        }
    } find;
    find.buffers = &buffers;
    e.accept(&find);
    return find.found;
}

bool as_less(const Expr &e, Expr *a, Expr *b, bool *strict) {
    if (const LT *n = e.as<LT>()) return *a = n->a, *b = n->b, *strict = true, true;
    if (const LE *n = e.as<LE>()) return *a = n->a, *b = n->b, *strict = false, true;
    if (const GT *n = e.as<GT>()) return *a = n->b, *b = n->a, *strict = true, true;
    if (const GE *n = e.as<GE>()) return *a = n->b, *b = n->a, *strict = false, true;
    return false;
}

const LetStmt *innermost_binding(const std::vector<const LetStmt *> &lets,
                                 const std::string &name) {
    for (auto l = lets.rbegin(); l != lets.rend(); ++l) {
        if ((*l)->name == name) return *l;
    }
    return nullptr;
}

bool as_select_update(const Store *st, const std::vector<const LetStmt *> &open_lets,
                      Expr *condition, Expr *value, const LetStmt **computed_before) {
    if (!st->value.type().is_scalar() || !is_const_one(st->predicate)) return false;
    Expr v = st->value;
    const Variable *var = v.as<Variable>();
    *computed_before = var ? innermost_binding(open_lets, var->name) : nullptr;
    if (*computed_before) v = (*computed_before)->value;
    v = substitute_in_all_lets(v);
    const Select *select = v.as<Select>();
    if (!select) return false;
    const Load *old = select->false_value.as<Load>();
    if (!old || old->name != st->name || !equal(old->index, st->index) ||
        !is_const_one(old->predicate)) {
        return false;
    }
    *condition = select->condition;
    *value = select->true_value;
    return true;
}

bool as_associative_update(const Store *st, VectorReduce::Op *op, Expr *value) {
    Expr v = st->value;
    std::vector<const Let *> lets;
    while (const Let *l = v.as<Let>()) {
        lets.push_back(l);
        v = l->body;
    }
    Expr a, b;
    if (const Add *n = v.as<Add>()) *op = VectorReduce::Add, a = n->a, b = n->b;
    else if (const Mul *n = v.as<Mul>()) *op = VectorReduce::Mul, a = n->a, b = n->b;
    else if (const Min *n = v.as<Min>()) *op = VectorReduce::Min, a = n->a, b = n->b;
    else if (const Max *n = v.as<Max>()) *op = VectorReduce::Max, a = n->a, b = n->b;
    else if (const And *n = v.as<And>()) *op = VectorReduce::And, a = n->a, b = n->b;
    else if (const Or *n = v.as<Or>()) *op = VectorReduce::Or, a = n->a, b = n->b;
    else return false;
    // (CSE may have named the index, or a part of it, in one of the lets.)
    std::vector<std::pair<std::string, Expr>> bindings;
    for (const Let *l : lets) bindings.emplace_back(l->name, l->value);
    auto is_self = [&](const Expr &e) {
        const Load *l = e.as<Load>();
        return l && l->name == st->name &&
               equal(substitute_enclosing_lets(bindings, l->index), st->index) &&
               is_const_one(l->predicate);
    };
    if (is_self(b)) std::swap(a, b);
    if (!is_self(a) || loads_from(b, {st->name})) return false;
    for (auto l = lets.rbegin(); l != lets.rend(); ++l) {
        if (loads_from((*l)->value, {st->name})) return false;
        b = Let::make((*l)->name, (*l)->value, b);
    }
    *value = b;
    return st->value.type().is_scalar() && is_const_one(st->predicate);
}

Expr reduction_identity(VectorReduce::Op op, Type t) {
    switch (op) {
    case VectorReduce::Add: return make_zero(t);
    case VectorReduce::Mul: return make_one(t);
    case VectorReduce::Min: return t.is_float() ? FloatImm::make(t, INFINITY) : type_max(t);
    case VectorReduce::Max: return t.is_float() ? FloatImm::make(t, -INFINITY) : type_min(t);
    case VectorReduce::And: return make_const(t, 1);
    case VectorReduce::Or: return make_const(t, 0);
    }
    return Expr();
}

Expr combine(VectorReduce::Op op, const Expr &a, const Expr &b) {
    switch (op) {
    case VectorReduce::Add: return Add::make(a, b);
    case VectorReduce::Mul: return Mul::make(a, b);
    case VectorReduce::Min: return Min::make(a, b);
    case VectorReduce::Max: return Max::make(a, b);
    case VectorReduce::And: return And::make(a, b);
    case VectorReduce::Or: return Or::make(a, b);
    }
    return Expr();
}

}  // namespace internal
}  // namespace loom
