#include "arith/Bounds.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "arith/Simplify.h"
#include "ir/IREquality.h"
#include "ir/IRVisitor.h"
#include "ir/Substitute.h"
#include "loom/IROperator.h"

namespace loom {
namespace internal {

namespace {

/** An interval whose ends are equal but separately built (e.g. the bounds
 * of max(x / 7, 1), a value that does not vary) as the single point it is,
 * so that a product, quotient or remainder with it keeps both ends (a
 * fused loop's pieces, t / e and t % e, at one point of t). */
Interval as_point_if_equal(const Interval &i) {
    if (!i.is_single_point() && i.is_bounded() && equal(i.min, i.max)) {
        return Interval::single_point(i.min);
    }
    return i;
}

// Signed integer arithmetic of 32 bits or more is assumed not to overflow
// (as the simplifier assumes); narrower and unsigned types wrap.
bool no_overflow(Type t) { return t.is_float() || (t.is_int() && t.bits >= 32); }

// The bounds implied by the type alone. int32 and int64 (and the upper end of
// uint32/uint64) are treated as unbounded: their extremes are never useful
// bounds and invite overflow in later arithmetic.
Interval bounds_of_type(Type t) {
    t = t.element_of();
    if (t.is_bool()) return Interval(make_zero(t), make_one(t));
    if (t.is_int_or_uint() && t.bits < 32) {
        return Interval(make_const(t, t.min_int()), make_const(t, t.max_int()));
    }
    if (t.is_uint()) return Interval(make_zero(t), Expr());
    return Interval();
}

// Folds a min/max of two bounds right away when it is decidable, so the
// intervals stay small; anything left is simplified at the end.
Expr bmin(const Expr &a, const Expr &b) {
    if (!a.defined() || !b.defined()) return Expr();
    return simplify_shallow(Min::make(a, b));
}
Expr bmax(const Expr &a, const Expr &b) {
    if (!a.defined() || !b.defined()) return Expr();
    return simplify_shallow(Max::make(a, b));
}

Expr as_scalar(const Expr &e) {
    if (const Broadcast *b = e.as<Broadcast>()) return b->value;
    return e;
}

class BoundsOf : public IRVisitor {
  public:
    explicit BoundsOf(const Scope<Interval> &s) : scope(s) {}

    Interval bounds(const Expr &e) {
        e.accept(this);
        return result;
    }

    Interval result;

  private:
    const Scope<Interval> &scope;
    Scope<Interval> lets;

    // Folds the ends as we go, so constant ends are recognized by the rules
    // of enclosing nodes (and the expressions stay small). The arithmetic
    // nodes, casts and variables tidy their ends; as those are built from
    // their operands' tidied ends, only the new root needs simplifying.
    void tidy() {
        if (result.min.defined() && !is_const(result.min))
            result.min = simplify_shallow(result.min);
        if (result.max.defined()) {
            if (result.max.same_as(result.min)) return;
            if (!is_const(result.max)) result.max = simplify_shallow(result.max);
        }
    }

    // Narrow and unsigned types wrap: keep an interval only if it is provably
    // within the type's range.
    void fix_overflow(Type t) {
        tidy();
        if (no_overflow(t)) return;
        Interval tb = bounds_of_type(t);
        if (!t.is_int_or_uint()) return;
        bool ok = result.is_bounded();
        if (ok && tb.min.defined()) ok = can_prove(result.min >= tb.min);
        if (ok && tb.max.defined()) ok = can_prove(result.max <= tb.max);
        if (!ok) result = tb;
    }

    void visit(const IntImm *op) override { result = Interval::single_point(op); }
    void visit(const UIntImm *op) override { result = Interval::single_point(op); }
    void visit(const FloatImm *op) override { result = Interval::single_point(op); }
    void visit(const StringImm *op) override { result = Interval::single_point(op); }

    void visit(const Variable *op) override {
        if (const Interval *i = lets.find(op->name)) {
            result = *i;
        } else if (const Interval *i = scope.find(op->name)) {
            // Ranges in the scope come from callers and may be unsimplified.
            result = *i;
            tidy();
            Interval tb = bounds_of_type(op->type);
            if (!result.min.defined()) result.min = tb.min;
            if (!result.max.defined()) result.max = tb.max;
        } else {
            result = Interval::single_point(op);
        }
    }

    void visit(const Cast *op) override {
        Interval a = bounds(op->value);
        Type from = op->value.type().element_of(), to = op->type.element_of();
        Interval tb = bounds_of_type(op->type);
        if (a.is_single_point()) {
            result = Interval::single_point(Cast::make(op->type, a.min));
            return;
        }
        // Whether the cast preserves every value in [a.min, a.max]; then it
        // is monotone and maps the ends to the ends.
        bool safe;
        if (to.can_represent(from) || (from.is_float() && to.is_float()) ||
            (to.is_float() && from.is_int_or_uint())) {
            safe = true;
        } else if (from.is_float()) {
            safe = a.is_bounded() &&
                   can_prove(a.min >= make_const(from, static_cast<double>(to.min_int())) &&
                             a.max <= make_const(from, static_cast<double>(to.max_int())));
        } else {
            // Integer to a narrower or differently signed integer.
            bool lo_ok, hi_ok;
            if (from.is_uint() || from.min_int() >= to.min_int()) lo_ok = true;
            else lo_ok = a.min.defined() && can_prove(a.min >= make_const(from, to.min_int()));
            uint64_t to_max = to.is_uint() ? to.max_uint() : static_cast<uint64_t>(to.max_int());
            uint64_t from_max =
                from.is_uint() ? from.max_uint() : static_cast<uint64_t>(from.max_int());
            if (from_max <= to_max) hi_ok = true;
            else hi_ok = a.max.defined() && can_prove(a.max <= make_const(from, to_max));
            safe = lo_ok && hi_ok;
        }
        if (safe) {
            result.min =
                a.min.defined() ? Cast::make(to.with_lanes(a.min.type().lanes), a.min) : tb.min;
            result.max =
                a.max.defined() ? Cast::make(to.with_lanes(a.max.type().lanes), a.max) : tb.max;
            if (!result.min.defined() && to.is_uint()) result.min = make_zero(to);
            tidy();
        } else {
            result = tb;
        }
    }

    void visit(const Reinterpret *op) override { result = bounds_of_type(op->type); }

    // Narrow wrapping types: compute in int64 and keep the result only if it
    // provably stays in range (else the type's full range).
    template <typename Op> bool visit_wrapping(const Op *op) {
        Type t = op->type;
        if (no_overflow(t) || !t.is_int_or_uint() || t.is_bool()) return false;
        if (t.bits > 32) {
            result = bounds_of_type(t);
            return true;
        }
        Type wide = Int(64, t.lanes);
        Interval w = bounds(Op::make(Cast::make(wide, op->a), Cast::make(wide, op->b)));
        Type te = t.element_of();
        if (w.is_bounded() && can_prove(w.min >= make_const(Int(64), te.min_int())) &&
            can_prove(w.max <= make_const(Int(64), te.max_int()))) {
            result = Interval(simplify(Cast::make(te.with_lanes(w.min.type().lanes), w.min)),
                              simplify(Cast::make(te.with_lanes(w.max.type().lanes), w.max)));
        } else {
            result = bounds_of_type(t);
        }
        return true;
    }

    void visit(const Add *op) override {
        if (visit_wrapping(op)) return;
        Interval a = bounds(op->a), b = bounds(op->b);
        result = Interval();
        if (a.min.defined() && b.min.defined()) result.min = a.min + b.min;
        if (a.max.defined() && b.max.defined()) result.max = a.max + b.max;
        fix_overflow(op->type);
    }

    void visit(const Sub *op) override {
        if (visit_wrapping(op)) return;
        Interval a = bounds(op->a), b = bounds(op->b);
        result = Interval();
        if (a.min.defined() && b.max.defined()) result.min = a.min - b.max;
        if (a.max.defined() && b.min.defined()) result.max = a.max - b.min;
        fix_overflow(op->type);
    }

    // Whether e is provably >= 0 / <= 0.
    static bool nonneg(const Expr &e) {
        if (!e.defined()) return false;
        if (is_const(e)) return !is_negative_const(e);
        return can_prove(e >= make_zero(e.type()));
    }
    static bool nonpos(const Expr &e) {
        if (!e.defined()) return false;
        if (is_const(e)) return !is_positive_const(e);
        return can_prove(e <= make_zero(e.type()));
    }

    void visit(const Mul *op) override {
        if (visit_wrapping(op)) return;
        Interval a = as_point_if_equal(bounds(op->a)), b = as_point_if_equal(bounds(op->b));
        result = Interval();
        if (a.is_single_point() && b.is_single_point()) {
            result = Interval::single_point(a.min * b.min);
        } else {
            if (b.is_single_point() && !a.is_single_point()) std::swap(a, b);
            if (a.is_single_point()) {
                // A fixed factor: its sign decides which end maps where.
                Expr k = a.min;
                if (nonneg(k)) {
                    if (b.min.defined()) result.min = b.min * k;
                    if (b.max.defined()) result.max = b.max * k;
                } else if (nonpos(k)) {
                    if (b.max.defined()) result.min = b.max * k;
                    if (b.min.defined()) result.max = b.min * k;
                } else if (b.is_bounded()) {
                    Expr p = b.min * k, q = b.max * k;
                    result = Interval(bmin(p, q), bmax(p, q));
                }
            } else if (a.is_bounded() && b.is_bounded() &&
                       ((is_const(a.min) && is_const(a.max)) ||
                        (is_const(b.min) && is_const(b.max)))) {
                // Corners; kept to a constant range on one side, as symbolic
                // corners on both sides grow exponentially with nesting.
                Expr p0 = a.min * b.min, p1 = a.min * b.max, p2 = a.max * b.min, p3 = a.max * b.max;
                result.min = bmin(bmin(p0, p1), bmin(p2, p3));
                result.max = bmax(bmax(p0, p1), bmax(p2, p3));
            } else if (nonneg(a.min) && nonneg(b.min)) {
                // Both nonnegative: monotone in each factor.
                result.min = a.min * b.min;
                if (a.max.defined() && b.max.defined()) result.max = a.max * b.max;
            }
        }
        fix_overflow(op->type);
    }

    void visit(const Div *op) override {
        Interval a = as_point_if_equal(bounds(op->a)), b = as_point_if_equal(bounds(op->b));
        result = Interval();
        Type t = op->type;
        if (a.is_single_point() && b.is_single_point()) {
            result = Interval::single_point(a.min / b.min);
            return;
        }
        if (b.is_single_point() && is_const(b.min) && !is_const_zero(b.min)) {
            if (is_positive_const(b.min)) {
                if (a.min.defined()) result.min = a.min / b.min;
                if (a.max.defined()) result.max = a.max / b.min;
            } else {
                if (a.max.defined()) result.min = a.max / b.min;
                if (a.min.defined()) result.max = a.min / b.min;
            }
        } else if (b.is_bounded() && a.is_bounded() &&
                   (t.is_float() ? can_prove(b.min > make_zero(b.min.type()))
                                 : can_prove(b.min > make_zero(b.min.type())))) {
            // A positive divisor: extremes lie at the corners.
            Expr p0 = a.min / b.min, p1 = a.min / b.max, p2 = a.max / b.min, p3 = a.max / b.max;
            result.min = bmin(bmin(p0, p1), bmin(p2, p3));
            result.max = bmax(bmax(p0, p1), bmax(p2, p3));
        } else if (t.is_int_or_uint() && a.is_bounded()) {
            // |a / b| <= |a| for any integer b (and a / 0 == 0).
            if (t.is_uint()) {
                result = Interval(make_zero(t), a.max);
            } else {
                Expr m = bmax(make_zero(t) - a.min, a.max);
                result = Interval(make_zero(t) - m, m);
            }
        }
        if (t.is_uint() && !result.min.defined()) result.min = make_zero(t);
        fix_overflow(op->type);
    }

    void visit(const Mod *op) override {
        Interval a = as_point_if_equal(bounds(op->a)), b = as_point_if_equal(bounds(op->b));
        Type t = op->type;
        result = Interval();
        if (a.is_single_point() && b.is_single_point()) {
            result = Interval::single_point(a.min % b.min);
            return;
        }
        if (t.is_float()) {
            if (b.is_single_point() && is_positive_const(b.min))
                result = Interval(make_zero(t), b.min);
            return;
        }
        if (b.is_single_point() && is_const(b.min)) {
            if (is_const_zero(b.min)) {
                result = Interval::single_point(make_zero(t));
            } else if (is_positive_const(b.min)) {
                // Already within [0, b): the mod does nothing.
                if (a.is_bounded() && nonneg(a.min) && can_prove(a.max < b.min)) {
                    result = a;
                } else {
                    result = Interval(make_zero(t), b.min - make_one(t));
                    if (a.max.defined() && nonneg(a.min) && is_const(a.max))
                        result.max = bmin(result.max, a.max);
                }
            } else {
                result = Interval(b.min + make_one(t), make_zero(t));
            }
        } else if (b.is_bounded()) {
            // The result lies between 0 and the divisor (exclusive).
            result.min = bmin(make_zero(t), b.min + make_one(t));
            result.max = bmax(make_zero(t), b.max - make_one(t));
            if (t.is_uint()) result.min = make_zero(t);
        } else if (b.min.defined() && nonneg(b.min)) {
            result.min = make_zero(t);
            if (a.max.defined() && nonneg(a.min)) result.max = a.max;
        } else if (t.is_uint()) {
            result.min = make_zero(t);
            if (a.max.defined()) result.max = a.max;
        }
        fix_overflow(op->type);
    }

    void visit(const Min *op) override {
        Interval a = bounds(op->a), b = bounds(op->b);
        result = Interval();
        result.min = bmin(a.min, b.min);
        if (a.max.defined() && b.max.defined()) result.max = bmin(a.max, b.max);
        else result.max = a.max.defined() ? a.max : b.max;
    }

    void visit(const Max *op) override {
        Interval a = bounds(op->a), b = bounds(op->b);
        result = Interval();
        result.max = bmax(a.max, b.max);
        if (a.min.defined() && b.min.defined()) result.min = bmax(a.min, b.min);
        else result.min = a.min.defined() ? a.min : b.min;
    }

    // Comparisons give bool intervals whose ends are themselves conditions:
    // a < b is surely true when a.max < b.min and possibly true when
    // a.min < b.max.
    template <typename Cmp> void visit_cmp(const Cmp *op, bool strict, bool swap) {
        Interval a = bounds(op->a), b = bounds(op->b);
        if (swap) std::swap(a, b);
        int lanes = op->type.lanes;
        Expr f = const_false(lanes), t = const_true(lanes);
        if (a.is_single_point() && b.is_single_point()) {
            result =
                Interval::single_point(strict ? LT::make(a.min, b.min) : LE::make(a.min, b.min));
            return;
        }
        result = Interval(f, t);
        if (a.max.defined() && b.min.defined())
            result.min = strict ? LT::make(a.max, b.min) : LE::make(a.max, b.min);
        if (a.min.defined() && b.max.defined())
            result.max = strict ? LT::make(a.min, b.max) : LE::make(a.min, b.max);
    }
    void visit(const LT *op) override { visit_cmp(op, true, false); }
    void visit(const LE *op) override { visit_cmp(op, false, false); }
    void visit(const GT *op) override { visit_cmp(op, true, true); }
    void visit(const GE *op) override { visit_cmp(op, false, true); }

    template <typename Cmp> void visit_eq(const Cmp *op, bool is_eq) {
        Interval a = bounds(op->a), b = bounds(op->b);
        int lanes = op->type.lanes;
        if (a.is_single_point() && b.is_single_point()) {
            Expr e = is_eq ? EQ::make(a.min, b.min) : NE::make(a.min, b.min);
            result = Interval::single_point(e);
            return;
        }
        result = Interval(const_false(lanes), const_true(lanes));
        // Disjoint ranges: never equal.
        if (a.is_bounded() && b.is_bounded()) {
            Expr disjoint = a.max < b.min || b.max < a.min;
            if (is_eq) result.max = !disjoint;
            else result.min = disjoint;
        }
    }
    void visit(const EQ *op) override { visit_eq(op, true); }
    void visit(const NE *op) override { visit_eq(op, false); }

    void visit(const And *op) override {
        Interval a = bounds(op->a), b = bounds(op->b);
        result = Interval(And::make(a.min, b.min), And::make(a.max, b.max));
    }
    void visit(const Or *op) override {
        Interval a = bounds(op->a), b = bounds(op->b);
        result = Interval(Or::make(a.min, b.min), Or::make(a.max, b.max));
    }
    void visit(const Not *op) override {
        Interval a = bounds(op->a);
        result = Interval(Not::make(a.max), Not::make(a.min));
    }

    void visit(const Select *op) override {
        Interval c = bounds(op->condition);
        Interval t = bounds(op->true_value), f = bounds(op->false_value);
        Expr cmin = simplify(c.min), cmax = simplify(c.max);
        if (is_const_one(cmin)) {
            result = t;
        } else if (is_const_zero(cmax)) {
            result = f;
        } else {
            result = Interval::make_union(t, f);
            if (result.min.defined() && !is_const(result.min)) result.min = bmin(t.min, f.min);
            if (result.max.defined() && !is_const(result.max)) result.max = bmax(t.max, f.max);
        }
    }

    void visit(const Load *op) override {
        op->index.accept(this);
        result = bounds_of_type(op->type);
    }

    void visit(const Ramp *op) override {
        // The lanes are base + i * stride for i in [0, lanes): the extremes
        // are the first and last lane.
        Expr last = op->base + op->stride * make_const(op->stride.type(), op->lanes - 1);
        Interval a = bounds(op->base), b = bounds(last);
        result = Interval::make_union(a, b);
        if (result.min.defined() && !is_const(result.min)) result.min = bmin(a.min, b.min);
        if (result.max.defined() && !is_const(result.max)) result.max = bmax(a.max, b.max);
    }

    void visit(const Broadcast *op) override { op->value.accept(this); }

    void visit(const Let *op) override {
        Interval v = bounds(op->value);
        ScopedBinding<Interval> bind(lets, op->name, v);
        op->body.accept(this);
    }

    void visit(const Call *op) override {
        Type t = op->type;
        if (op->is_intrinsic(Call::likely) && op->args.size() == 1) {
            op->args[0].accept(this);
            return;
        }
        if (op->is_intrinsic(guarded_value) && op->args.size() == 2) {
            Interval value = bounds(op->args[0]);
            if (as_point_if_equal(value).is_single_point()) {
                Min::make(op->args[0], op->args[1]).accept(this);
                return;
            }
            Interval limit = bounds(op->args[1]);
            result = value;
            if (limit.max.defined())
                result.max = value.max.defined() ? bmin(value.max, limit.max) : limit.max;
            return;
        }
        if (op->is_intrinsic(Call::abs) && op->args.size() == 1) {
            Interval a = bounds(op->args[0]);
            result = Interval();
            if (a.is_single_point()) {
                result = Interval::single_point(op);
                return;
            }
            if (t.is_uint()) {
                result = a;
                return;
            }
            if (a.is_bounded()) {
                if (nonneg(a.min)) {
                    result = a;
                } else {
                    result.min = make_zero(t);
                    result.max = bmax(make_zero(t) - a.min, a.max);
                }
            } else {
                result.min = make_zero(t);
            }
            if (!t.is_float()) fix_overflow(t);
            return;
        }
        if (op->call_type == Call::PureIntrinsic && op->args.size() == 1 && t.is_float()) {
            // Monotone increasing math functions map ends to ends.
            static const char *monotone[] = {"exp",  "log",   "sqrt", "floor",
                                             "ceil", "round", "tanh", "erf"};
            std::string base = op->name.substr(0, op->name.find('_'));
            for (const char *m : monotone) {
                if (base == m) {
                    Interval a = bounds(op->args[0]);
                    result = Interval();
                    if (a.min.defined())
                        result.min = Call::make(t, op->name, {a.min}, op->call_type);
                    if (a.max.defined())
                        result.max = Call::make(t, op->name, {a.max}, op->call_type);
                    if (base == "exp" && !result.min.defined()) result.min = make_zero(t);
                    if (base == "tanh" || base == "erf") {
                        if (!result.min.defined()) result.min = make_const(t, -1.0);
                        if (!result.max.defined()) result.max = make_const(t, 1.0);
                    }
                    return;
                }
            }
            if (base == "sin" || base == "cos") {
                for (const Expr &a : op->args) a.accept(this);
                result = Interval(make_const(t, -1.0), make_const(t, 1.0));
                return;
            }
        }
        if (op->is_intrinsic(Call::bitwise_and) && op->args.size() == 2 && t.is_int_or_uint()) {
            Interval a = bounds(op->args[0]), b = bounds(op->args[1]);
            // x & m, for a nonnegative m, lies in [0, m].
            if (b.is_single_point() && is_const(b.min) && !is_negative_const(b.min)) {
                result = Interval(make_zero(t), b.min);
                if (a.is_bounded() && nonneg(a.min)) result.max = bmin(a.max, b.min);
                return;
            }
            if (a.is_single_point() && is_const(a.min) && !is_negative_const(a.min)) {
                result = Interval(make_zero(t), a.min);
                return;
            }
        }
        for (const Expr &a : op->args) a.accept(this);
        result = bounds_of_type(t);
    }

    void visit(const VectorReduce *op) override {
        Interval a = bounds(op->value);
        int factor = op->value.type().lanes / op->type.lanes;
        Type t = op->type;
        switch (op->op) {
        case VectorReduce::Add:
            result = Interval();
            if (a.min.defined()) result.min = a.min * make_const(a.min.type(), factor);
            if (a.max.defined()) result.max = a.max * make_const(a.max.type(), factor);
            fix_overflow(t);
            break;
        case VectorReduce::Min:
        case VectorReduce::Max:
        case VectorReduce::And:
        case VectorReduce::Or: result = a; break;
        default: result = bounds_of_type(t);
        }
        // The interval of a horizontal reduction is scalar-valued per lane.
        if (result.min.defined()) result.min = as_scalar(result.min);
        if (result.max.defined()) result.max = as_scalar(result.max);
        if (t.is_vector()) {
            if (result.min.defined() && result.min.type().is_scalar())
                result.min = Broadcast::make(result.min, t.lanes);
            if (result.max.defined() && result.max.type().is_scalar())
                result.max = Broadcast::make(result.max, t.lanes);
        }
    }
};

// Bounds of vector expressions are reported as scalars (the range over all
// lanes).
Expr scalarize(const Expr &e) {
    if (!e.defined() || e.type().is_scalar()) return e;
    if (const Broadcast *b = e.as<Broadcast>()) return b->value;
    return e;
}

Interval simplify_interval(const Interval &i) {
    Interval r;
    // The ends were simplified as they were built, all but their roots; a
    // vector end is simplified in full, to let it reduce to a broadcast.
    auto tidy = [](const Expr &e) {
        return scalarize(e.type().is_scalar() ? simplify_shallow(e) : simplify(e));
    };
    if (i.min.defined()) r.min = tidy(i.min);
    if (i.max.defined()) r.max = tidy(i.max);
    if (r.min.defined() && r.max.defined() && equal(r.min, r.max)) r.max = r.min;
    return r;
}

}  // namespace

Interval bounds_of_expr_in_scope(const Expr &e, const Scope<Interval> &scope) {
    BoundsOf b(scope);
    Interval i = b.bounds(e);
    Interval r = simplify_interval(i);
    // Vector-valued intervals that did not reduce to a broadcast: take the
    // bounds over the lanes.
    for (Expr *end : {&r.min, &r.max}) {
        if (end->defined() && end->type().is_vector()) {
            Interval v = bounds_of_expr_in_scope(*end, scope);
            *end = end == &r.min ? v.min : v.max;
        }
    }
    return r;
}

Box box_union(const Box &a, const Box &b) {
    if (a.empty()) return b;
    if (b.empty()) return a;
    internal_assert(a.size() == b.size()) << "box_union of boxes of different dimensions";
    Box r(a.size());
    for (size_t i = 0; i < a.size(); i++) {
        // The ends of a and b are simplified: only the new min/max is not.
        r[i] = Interval::make_union(a[i], b[i]);
        if (r[i].min.defined()) r[i].min = simplify_shallow(r[i].min);
        if (r[i].max.defined()) r[i].max = simplify_shallow(r[i].max);
    }
    if (a.used.defined() && b.used.defined()) r.used = simplify(a.used || b.used);
    return r;
}

namespace {

// A scalar integer comparison with the given truth, as a < b (`strict`) or
// a <= b: a comparison's falsehood swaps its sides (!(a < b) is b <= a).
bool as_integer_less_than(const Expr &c, bool truth, Expr *a, Expr *b, bool *strict) {
    if (const LT *lt = c.as<LT>()) *a = lt->a, *b = lt->b, *strict = true;
    else if (const LE *le = c.as<LE>()) *a = le->a, *b = le->b, *strict = false;
    else if (const GT *gt = c.as<GT>()) *a = gt->b, *b = gt->a, *strict = true;
    else if (const GE *ge = c.as<GE>()) *a = ge->b, *b = ge->a, *strict = false;
    else return false;
    if (!a->type().is_int() || !a->type().is_scalar()) return false;
    if (!truth) {
        std::swap(*a, *b);
        *strict = !*strict;
    }
    return true;
}

// Walks a statement, keeping the ranges of loop variables and lets in scope,
// and merges the boxes of the Func/Image calls (reads) and Provides (writes).
// With `track_conditions`, it also keeps the conditions under which the
// current point of the walk can run at all (see boxes_required_with_conditions).
class BoxesTouched : public IRVisitor {
  public:
    BoxesTouched(const Scope<Interval> &outer, bool reads, bool writes,
                 bool track_conditions = false)
        : consider_reads(reads), consider_writes(writes), track_conditions(track_conditions) {
        outer.for_each([&](const std::string &n, const Interval &i) { scope.push(n, i); });
    }
    std::map<std::string, Box> boxes;

  private:
    bool consider_reads, consider_writes, track_conditions;
    Scope<Interval> scope;
    // Necessary conditions, over the walk's free variables, for reaching the
    // current point: one per enclosing loop or branch that may be skipped.
    std::vector<Expr> reachable;

    void merge(const std::string &name, const std::vector<Expr> &args) {
        Box b(args.size());
        for (size_t i = 0; i < args.size(); i++) b[i] = bounds_of_expr_in_scope(args[i], scope);
        if (!reachable.empty()) {
            Expr all = reachable[0];
            for (size_t i = 1; i < reachable.size(); i++) all = all && reachable[i];
            b.used = all;
        }
        auto it = boxes.find(name);
        if (it == boxes.end()) boxes.emplace(name, b);
        else if (it->second.size() == b.size()) it->second = box_union(it->second, b);
        else internal_error << "boxes of " << name << " with different dimensions";
    }

    void visit(const Call *op) override {
        IRVisitor::visit(op);
        if (consider_reads && (op->call_type == Call::Func || op->call_type == Call::Image)) {
            merge(op->name, op->args);
        }
    }
    void visit(const Provide *op) override {
        IRVisitor::visit(op);
        if (consider_writes) merge(op->name, op->args);
    }
    void visit(const Let *op) override {
        op->value.accept(this);
        ScopedBinding<Interval> bind(scope, op->name, bounds_of_expr_in_scope(op->value, scope));
        op->body.accept(this);
    }
    void visit(const LetStmt *op) override {
        op->value.accept(this);
        ScopedBinding<Interval> bind(scope, op->name, bounds_of_expr_in_scope(op->value, scope));
        op->body.accept(this);
    }
    void visit(const For *op) override {
        op->min.accept(this);
        op->extent.accept(this);
        Interval mn = bounds_of_expr_in_scope(op->min, scope);
        // Simplified first: loops written as (min, max - min + 1) then
        // give max itself, keeping its correlation with min.
        Interval last = bounds_of_expr_in_scope(simplify(op->min + op->extent - 1), scope);
        ScopedBinding<Interval> bind(scope, op->name, Interval(mn.min, last.max));
        size_t depth = reachable.size();
        if (track_conditions) {
            // The body runs only if the extent is positive for some values
            // of the enclosing loops.
            Interval extent = bounds_of_expr_in_scope(op->extent, scope);
            if (extent.max.defined()) add_reachable(extent.max > 0);
        }
        op->body.accept(this);
        reachable.resize(depth);
    }

    void add_reachable(const Expr &condition) {
        Expr c = simplify(condition);
        if (!is_const_one(c)) reachable.push_back(c);
    }

    // A condition over the free variables that holds if `cond` has the given
    // truth for some values of the variables in scope; undefined if none is
    // found. A condition free of them is itself; a comparison a < b can hold
    // only if min(a - b) < 0.
    Expr possible(const Expr &cond, bool truth) {
        Expr c = cond;
        bool is_likely = false;
        if (const Call *l = c.as<Call>()) {
            is_likely = l->is_intrinsic(Call::likely) && l->args.size() == 1;
            if (is_likely) c = l->args[0];
        }
        std::set<std::string> vars = free_variables(c);
        if (!reads_memory(c) && !has_side_effects(c) &&
            std::none_of(vars.begin(), vars.end(),
                         [&](const std::string &v) { return scope.contains(v); })) {
            // A likely() condition stays one: partition_loops then drops
            // the test of a producer computed where the condition is read
            // (a rolled step's tile) along with the consumer's own.
            if (truth) return is_likely ? likely(c) : c;
            return !c;
        }
        if (const Not *n = c.as<Not>()) return possible(n->a, !truth);
        // a && b true, or a || b false: both sides must be; else either may be.
        const And *conj = c.as<And>();
        const Or *disj = c.as<Or>();
        if (conj || disj) {
            Expr pa = possible(conj ? conj->a : disj->a, truth);
            Expr pb = possible(conj ? conj->b : disj->b, truth);
            if ((conj != nullptr) == truth) {
                if (!pa.defined()) return pb;
                if (!pb.defined()) return pa;
                return pa && pb;
            }
            if (!pa.defined() || !pb.defined()) return Expr();
            return pa || pb;
        }
        Expr a, b;
        bool strict;
        if (!as_integer_less_than(c, truth, &a, &b, &strict)) return Expr();
        Interval d = bounds_of_expr_in_scope(simplify(a - b), scope);
        if (!d.min.defined()) return Expr();
        Expr zero = make_zero(d.min.type());
        return strict ? d.min < zero : d.min <= zero;
    }

    // If `cond` (or its negation) is a simple comparison of a variable in
    // scope, the narrowed range of that variable.
    bool narrow(const Expr &cond, bool truth, std::string *name, Interval *range) {
        Expr c = cond;
        if (const Call *l = c.as<Call>()) {
            if (l->is_intrinsic(Call::likely) && l->args.size() == 1) c = l->args[0];
        }
        if (const Not *n = c.as<Not>()) {
            c = n->a;
            truth = !truth;
        }
        Expr a, b;
        bool strict;
        if (!as_integer_less_than(c, truth, &a, &b, &strict)) return false;
        Type t = a.type();
        const Variable *va = a.as<Variable>(), *vb = b.as<Variable>();
        if (va && scope.contains(va->name)) {
            Interval bb = bounds_of_expr_in_scope(b, scope);
            if (!bb.max.defined()) return false;
            *name = va->name;
            *range = scope.get(va->name);
            Expr hi = strict ? simplify(bb.max - make_one(t)) : bb.max;
            range->max = range->max.defined() ? simplify(Min::make(range->max, hi)) : hi;
            return true;
        }
        if (vb && scope.contains(vb->name)) {
            Interval ab = bounds_of_expr_in_scope(a, scope);
            if (!ab.min.defined()) return false;
            *name = vb->name;
            *range = scope.get(vb->name);
            Expr lo = strict ? simplify(ab.min + make_one(t)) : ab.min;
            range->min = range->min.defined() ? simplify(Max::make(range->min, lo)) : lo;
            return true;
        }
        return false;
    }

    void visit_branch(const Expr &cond, bool truth, const Stmt &s) {
        if (!s.defined()) return;
        size_t depth = reachable.size();
        if (track_conditions) {
            Expr p = possible(cond, truth);
            if (p.defined()) add_reachable(p);
        }
        // Split conjunctions (in the true branch) into several narrowings.
        std::vector<Expr> conds;
        if (truth) {
            std::vector<Expr> stack{cond};
            while (!stack.empty()) {
                Expr c = stack.back();
                stack.pop_back();
                if (const And *a = c.as<And>()) {
                    stack.push_back(a->a);
                    stack.push_back(a->b);
                } else {
                    conds.push_back(c);
                }
            }
        } else {
            conds.push_back(cond);
        }
        std::vector<std::string> pushed;
        for (const Expr &c : conds) {
            std::string name;
            Interval range;
            if (narrow(c, truth, &name, &range)) {
                scope.push(name, range);
                pushed.push_back(name);
            }
        }
        s.accept(this);
        for (auto it = pushed.rbegin(); it != pushed.rend(); ++it) scope.pop(*it);
        reachable.resize(depth);
    }

    void visit(const IfThenElse *op) override {
        op->condition.accept(this);
        visit_branch(op->condition, true, op->then_case);
        visit_branch(op->condition, false, op->else_case);
    }
};

std::map<std::string, Box> boxes_of(const Stmt &s, const Scope<Interval> &scope, bool reads,
                                    bool writes, bool track_conditions = false) {
    BoxesTouched b(scope, reads, writes, track_conditions);
    if (s.defined()) s.accept(&b);
    return b.boxes;
}

}  // namespace

std::map<std::string, Box> boxes_required(const Expr &e, const Scope<Interval> &scope) {
    BoxesTouched b(scope, true, false);
    if (e.defined()) e.accept(&b);
    return b.boxes;
}
std::map<std::string, Box> boxes_required(const Stmt &s, const Scope<Interval> &scope) {
    return boxes_of(s, scope, true, false);
}
std::map<std::string, Box> boxes_provided(const Stmt &s, const Scope<Interval> &scope) {
    return boxes_of(s, scope, false, true);
}
std::map<std::string, Box> boxes_touched(const Stmt &s, const Scope<Interval> &scope) {
    return boxes_of(s, scope, true, true);
}
std::map<std::string, Box> boxes_required_with_conditions(const Stmt &s) {
    return boxes_of(s, Scope<Interval>(), true, false, true);
}
std::map<std::string, Box> boxes_provided_with_conditions(const Stmt &s) {
    return boxes_of(s, Scope<Interval>(), false, true, true);
}

namespace {

/** Constant bounds of an expression from its shape. A difference of two
 * mins (or maxes) is bounded by the differences of their operands, pair by
 * pair; another difference whose sides are a min or max is distributed over
 * them, exactly
 * (min(a1, a2) - b == min(a1 - b, a2 - b)), and each new difference is
 * simplified, so that terms shared by both sides cancel: the extent of a
 * region clamped at the edge of the data, min(x + 63, n) - min(x, n), is
 * at most max(63, 0). */
class ConstantBounds {
  public:
    explicit ConstantBounds(const Scope<Interval> &scope) : scope(scope) {}

    bool upper(const Expr &e, int64_t *out) { return find(e, true, out); }

  private:
    const Scope<Interval> &scope;
    int budget = 4096;  // distributing can branch; give up past this many steps

    bool find(const Expr &e, bool upper, int64_t *out) {
        if (const int64_t *c = as_const_int(e)) {
            *out = *c;
            return true;
        }
        if (--budget < 0) return false;
        int64_t x, y;
        if (const Add *op = e.as<Add>()) {
            if (find(op->a, upper, &x) && find(op->b, upper, &y)) {
                *out = x + y;
                return true;
            }
            if (distribute_over_extremum(e, upper, out)) return true;
        } else if (const Sub *op = e.as<Sub>()) {
            // A difference of extrema pairs up their operands (sub); an
            // extremum deeper in the sum takes the rest of it inside.
            if (is_extremum(op->a) || is_extremum(op->b)) {
                if (sub(op->a, op->b, upper, out)) return true;
            } else if (distribute_over_extremum(e, upper, out) || sub(op->a, op->b, upper, out)) {
                return true;
            }
        } else if (const Min *op = e.as<Min>()) {
            // The smaller of two values is at most either's upper bound.
            if (either_or_both(op->a, op->b, upper, upper, out, true)) return true;
        } else if (const Max *op = e.as<Max>()) {
            if (either_or_both(op->a, op->b, upper, !upper, out, false)) return true;
        } else if (const Mul *op = e.as<Mul>()) {
            if (const int64_t *k = as_const_int(op->b); k && *k != 0) {
                if (find(op->a, *k > 0 ? upper : !upper, &x)) {
                    *out = x * *k;
                    return true;
                }
            }
        } else if (const Div *op = e.as<Div>()) {
            if (const int64_t *k = as_const_int(op->b); k && *k > 0) {
                if (find(op->a, upper, &x)) {
                    // Division rounds toward -inf.
                    *out = x >= 0 ? x / *k : -((-x + *k - 1) / *k);
                    return true;
                }
                if (Expr q = extremum_of_quotient(e); q.defined() && find(q, upper, out)) {
                    return true;
                }
            }
        }
        return by_intervals(e, upper, out);
    }

    bool by_intervals(const Expr &e, bool upper, int64_t *out) {
        Interval i = bounds_of_expr_in_scope(e, scope);
        Expr end = upper ? i.max : i.min;
        if (!end.defined()) return false;
        const Expr simplified = simplify(end);
        if (const int64_t *c = as_const_int(simplified)) {
            *out = *c;
            return true;
        }
        return false;
    }

    static bool is_extremum(const Expr &e) { return e.as<Min>() || e.as<Max>(); }

    /** A sum with a min or max among its terms, as that extremum with the
     * other terms added to each operand: min(p, q) + r == min(p + r, q + r)
     * and r - min(p, q) == max(r - p, r - q). Terms then cancel inside the
     * extremum, which bounding each term alone misses: min(x, n - 64) - x
     * is at most 0 whatever x and n are. */
    bool distribute_over_extremum(const Expr &e, bool upper, int64_t *out) {
        Expr whole = extremum_outside(e);
        return whole.defined() && find(whole, upper, out);
    }

    /** The sum e as one min or max with its other terms inside (see
     * distribute_over_extremum); undefined if no term is an extremum. A
     * term that is a quotient of such a sum by a positive constant counts
     * as an extremum too (extremum_of_quotient): a loop over the vectors of
     * a clamped region has the extent (min(p, q) - r + 3) / 4, and its
     * thread loop's bound needs terms outside the quotient to cancel with
     * ones inside. */
    static Expr extremum_outside(const Expr &e) {
        std::vector<std::pair<Expr, int>> terms;
        std::function<void(const Expr &, int)> collect = [&](const Expr &x, int sign) {
            if (const Add *op = x.as<Add>()) {
                collect(op->a, sign), collect(op->b, sign);
            } else if (const Sub *op = x.as<Sub>()) {
                collect(op->a, sign), collect(op->b, -sign);
            } else if (Expr q = extremum_of_quotient(x); q.defined()) {
                terms.emplace_back(q, sign);
            } else {
                terms.emplace_back(x, sign);
            }
        };
        collect(e, 1);
        auto extremum = std::find_if(terms.begin(), terms.end(),
                                     [](const auto &t) { return is_extremum(t.first); });
        if (terms.size() < 2 || extremum == terms.end()) return Expr();
        Expr rest;
        for (const auto &[term, sign] : terms) {
            if (term.same_as(extremum->first)) continue;
            if (!rest.defined()) rest = sign > 0 ? term : make_zero(term.type()) - term;
            else rest = sign > 0 ? rest + term : rest - term;
        }
        const Expr &m = extremum->first;
        const bool is_min = m.as<Min>() != nullptr;
        Expr p = is_min ? m.as<Min>()->a : m.as<Max>()->a;
        Expr q = is_min ? m.as<Min>()->b : m.as<Max>()->b;
        // Negated, a min turns into a max of the negated operands.
        const bool negated = extremum->second < 0;
        Expr p2 = simplify(negated ? rest - p : p + rest),
             q2 = simplify(negated ? rest - q : q + rest);
        return (is_min != negated) ? Min::make(p2, q2) : Max::make(p2, q2);
    }

    /** (min(p, q) + r) / k as min((p + r) / k, (q + r) / k) for a constant
     * k > 0, and likewise for max: division by a positive constant (rounding
     * toward -inf) never decreases, so it moves inside the extremum
     * exactly. Undefined if e is no such quotient. */
    static Expr extremum_of_quotient(const Expr &e) {
        const Div *d = e.as<Div>();
        const int64_t *k = d ? as_const_int(d->b) : nullptr;
        if (!k || *k <= 0) return Expr();
        Expr inside = is_extremum(d->a) ? d->a : extremum_outside(d->a);
        if (const Min *m = inside.as<Min>()) {
            return Min::make(simplify(m->a / d->b), simplify(m->b / d->b));
        }
        if (const Max *m = inside.as<Max>()) {
            return Max::make(simplify(m->a / d->b), simplify(m->b / d->b));
        }
        return Expr();
    }

    /** The bound of min(a, b) (is_min) or max(a, b). `one_suffices`: the
     * bound of either operand bounds the whole (an upper bound of a min,
     * a lower bound of a max); otherwise both are needed. */
    bool either_or_both(const Expr &a, const Expr &b, bool upper, bool one_suffices, int64_t *out,
                        bool is_min) {
        int64_t x, y;
        const bool hx = find(a, upper, &x), hy = find(b, upper, &y);
        if (hx && hy) {
            *out = is_min ? std::min(x, y) : std::max(x, y);
            return true;
        }
        if (one_suffices && (hx || hy)) {
            *out = hx ? x : y;
            return true;
        }
        return false;
    }

    /** min(a1, a2) - min(b1, b2) lies between the smallest and the largest
     * of a1 - b1 and a2 - b2 (if min(b1, b2) is b1, the difference is at
     * most a1 - b1; if min(a1, a2) is a1, at least a1 - b1), and so does the
     * difference of two maxes. A clamp is a min of a max, so this bounds
     * the difference of two clamped values by that of the unclamped ones. */
    bool paired(const Expr &a, const Expr &b, bool upper, int64_t *out) {
        Expr x = constant_inside(a), y = constant_inside(b);
        Expr x1, x2, y1, y2;
        if (const Min *p = x.as<Min>(); p && y.as<Min>()) {
            x1 = p->a, x2 = p->b, y1 = y.as<Min>()->a, y2 = y.as<Min>()->b;
        } else if (const Max *q = x.as<Max>(); q && y.as<Max>()) {
            x1 = q->a, x2 = q->b, y1 = y.as<Max>()->a, y2 = y.as<Max>()->b;
        } else {
            return false;
        }
        for (int swap = 0; swap < 2; swap++) {
            const Expr &first = swap ? y2 : y1, &second = swap ? y1 : y2;
            int64_t d1, d2;
            if (sub(x1, first, upper, &d1) && sub(x2, second, upper, &d2)) {
                *out = upper ? std::max(d1, d2) : std::min(d1, d2);
                return true;
            }
        }
        return false;
    }
    /** min(p, q) + c as min(p + c, q + c) (and likewise for max), so that
     * the operands line up with another min's. */
    static Expr constant_inside(const Expr &e) {
        const Add *add = e.as<Add>();
        if (!add || !as_const_int(add->b)) return e;
        if (const Min *m = add->a.as<Min>()) {
            return Min::make(simplify(m->a + add->b), simplify(m->b + add->b));
        }
        if (const Max *m = add->a.as<Max>()) {
            return Max::make(simplify(m->a + add->b), simplify(m->b + add->b));
        }
        return e;
    }

    bool sub(const Expr &a, const Expr &b, bool upper, int64_t *out) {
        Expr d = simplify(a - b);
        if (const int64_t *c = as_const_int(d)) {
            *out = *c;
            return true;
        }
        // a * k - b * k, as the simplifier writes (a - b) * k: bound a - b,
        // whose operands may pair up (a fused loop's extent, a product).
        const Mul *ma = a.as<Mul>(), *mb = b.as<Mul>();
        if (ma && mb) {
            const int64_t *ka = as_const_int(ma->b), *kb = as_const_int(mb->b);
            int64_t d;
            if (ka && kb && *ka == *kb && *ka != 0 &&
                sub(ma->a, mb->a, *ka > 0 ? upper : !upper, &d)) {
                *out = d * *ka;
                return true;
            }
        }
        if (paired(a, b, upper, out)) return true;
        // min(a1, a2) - b == min(a1 - b, a2 - b), and likewise for max;
        // a - min(b1, b2) == max(a - b1, a - b2).
        if (const Min *m = a.as<Min>()) {
            return either_or_both(simplify(m->a - b), simplify(m->b - b), upper, upper, out, true);
        }
        if (const Max *m = a.as<Max>()) {
            return either_or_both(simplify(m->a - b), simplify(m->b - b), upper, !upper, out,
                                  false);
        }
        if (const Min *m = b.as<Min>()) {
            return either_or_both(simplify(a - m->a), simplify(a - m->b), upper, !upper, out,
                                  false);
        }
        if (const Max *m = b.as<Max>()) {
            return either_or_both(simplify(a - m->a), simplify(a - m->b), upper, upper, out, true);
        }
        int64_t x, y;
        if (find(a, upper, &x) && find(b, !upper, &y)) {
            *out = x - y;
            return true;
        }
        // Where simplifying changed nothing, the same steps would repeat.
        const Sub *same = d.as<Sub>();
        if (same && equal(same->a, a) && equal(same->b, b)) return by_intervals(d, upper, out);
        return find(d, upper, out);
    }
};

}  // namespace

bool constant_upper_bound(const Expr &e, const Scope<Interval> &scope, int64_t *out) {
    // The scope's ranges also simplify: a loop variable known to stay below
    // some bound makes a min against that bound the variable itself.
    return ConstantBounds(scope).upper(simplify(substitute_in_all_lets(e), true, scope), out);
}

bool constant_upper_bound_under_lets(
    const Expr &e, const std::vector<std::pair<std::string, Expr>> &enclosing_lets,
    const Scope<Interval> &scope, int64_t *out) {
    return constant_upper_bound(substitute_enclosing_lets(enclosing_lets, e), scope, out);
}

}  // namespace internal
}  // namespace loom
