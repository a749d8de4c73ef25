#include "arith/Interval.h"

#include "ir/IREquality.h"
#include "loom/IROperator.h"

namespace loom {
namespace internal {

namespace {

// min/max of two bounds, folded when both are constants or equal. Full
// simplification is left to the callers (bounds inference simplifies).
Expr fold_min(const Expr &a, const Expr &b) {
    if (equal(a, b)) return a;
    const int64_t *ia = as_const_int(a), *ib = as_const_int(b);
    if (ia && ib) return *ia <= *ib ? a : b;
    const uint64_t *ua = as_const_uint(a), *ub = as_const_uint(b);
    if (ua && ub) return *ua <= *ub ? a : b;
    const double *fa = as_const_float(a), *fb = as_const_float(b);
    if (fa && fb) return *fa <= *fb ? a : b;
    return Min::make(a, b);
}

Expr fold_max(const Expr &a, const Expr &b) {
    if (equal(a, b)) return a;
    const int64_t *ia = as_const_int(a), *ib = as_const_int(b);
    if (ia && ib) return *ia >= *ib ? a : b;
    const uint64_t *ua = as_const_uint(a), *ub = as_const_uint(b);
    if (ua && ub) return *ua >= *ub ? a : b;
    const double *fa = as_const_float(a), *fb = as_const_float(b);
    if (fa && fb) return *fa >= *fb ? a : b;
    return Max::make(a, b);
}

}  // namespace

Interval Interval::make_union(const Interval &a, const Interval &b) {
    Interval r;
    if (a.min.defined() && b.min.defined()) r.min = fold_min(a.min, b.min);
    if (a.max.defined() && b.max.defined()) r.max = fold_max(a.max, b.max);
    return r;
}

Interval Interval::make_intersection(const Interval &a, const Interval &b) {
    Interval r;
    if (a.min.defined() && b.min.defined()) r.min = fold_max(a.min, b.min);
    else r.min = a.min.defined() ? a.min : b.min;
    if (a.max.defined() && b.max.defined()) r.max = fold_min(a.max, b.max);
    else r.max = a.max.defined() ? a.max : b.max;
    return r;
}

}  // namespace internal
}  // namespace loom
