// Interval analysis: the range of values an expression takes when its free
// variables range over given intervals, and the regions of Funcs and buffers
// that a statement reads and writes. The engine of bounds inference.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "arith/Interval.h"
#include "ir/Scope.h"
#include "loom/IR.h"

namespace loom {
namespace internal {

/** Bounds of e when each variable in `scope` ranges over its interval;
 * variables not in scope are treated as fixed symbols. The result is
 * conservative (it may be wider than the true range, never narrower). */
Interval bounds_of_expr_in_scope(const Expr &e, const Scope<Interval> &scope);

/** guarded_value(value, limit), for bounds analysis only: the value of a
 * let that is used only under a guard `if (value <= limit)` (a loop's tail
 * past the end of a split). Its range is that of `value`, capped at the
 * limit's maximum: the iterations past the limit touch nothing, so they
 * must not move the low end either. At a single point it is
 * min(value, limit), which keeps a region computed per iteration (at the
 * compute_at site of a producer) its constant size. */
constexpr const char *guarded_value = "guarded_value";

/** A constant upper bound of e, if one is found: from its shape (constants,
 * sums, min and max, products and quotients by constants, differences
 * distributed over min and max so that shared terms cancel: the extent
 * min(x + 63, n) - min(x, n) + 1 of a region clamped at the edge of the
 * data is at most 64) and from bounds_of_expr_in_scope. The extent of a loop over a region that is
 * smaller at the edge has one: code that needs a constant size (a GPU
 * block's threads, per-thread arrays, unrolled copies) uses it. */
bool constant_upper_bound(const Expr &e, const Scope<Interval> &scope, int64_t *out);

/** constant_upper_bound of e where it stands inside `enclosing_lets`
 * (name, value; outermost first), whose values are substituted in first:
 * an allocation's or a loop's extent is usually a let of the region. */
bool constant_upper_bound_under_lets(
    const Expr &e, const std::vector<std::pair<std::string, Expr>> &enclosing_lets,
    const Scope<Interval> &scope, int64_t *out);

/** A region of a Func or buffer: one Interval per dimension. `used`, when
 * defined, is a condition under which the region is touched at all. */
struct Box {
    std::vector<Interval> bounds;
    Expr used;
    Box() = default;
    explicit Box(size_t n) : bounds(n) {}
    size_t size() const { return bounds.size(); }
    Interval &operator[](size_t i) { return bounds[i]; }
    const Interval &operator[](size_t i) const { return bounds[i]; }
    bool empty() const { return bounds.empty(); }
};

/** The smallest box containing both (boxes of equal dimension). */
Box box_union(const Box &a, const Box &b);

/** Regions read by Calls (Func and Image calls, by name) within s or e, and
 * regions written by Provides, with loop variables of enclosed For loops and
 * variables in `scope` ranging over their intervals. */
std::map<std::string, Box> boxes_required(const Expr &e,
                                          const Scope<Interval> &scope = Scope<Interval>());
std::map<std::string, Box> boxes_required(const Stmt &s,
                                          const Scope<Interval> &scope = Scope<Interval>());
std::map<std::string, Box> boxes_provided(const Stmt &s,
                                          const Scope<Interval> &scope = Scope<Interval>());
/** Both reads and writes. */
std::map<std::string, Box> boxes_touched(const Stmt &s,
                                         const Scope<Interval> &scope = Scope<Interval>());

/** As boxes_required and boxes_provided, with each Box's `used` set to a
 * condition over the statement's free variables that holds whenever the
 * region is touched: every enclosing loop has a positive extent, and every
 * enclosing branch can be taken, for some values of the loops around it.
 * Interval arithmetic over a loop that runs no times still yields a region
 * (a read clamped to n - 1 over zero keys gives [-1, -1]); the condition
 * tells a check that such a region is never touched. Undefined `used`
 * means always touched. */
std::map<std::string, Box> boxes_required_with_conditions(const Stmt &s);
std::map<std::string, Box> boxes_provided_with_conditions(const Stmt &s);

}  // namespace internal
}  // namespace loom
