// Intervals of values (possibly unbounded). (Modulus facts, ModulusRemainder, are in loom/IR.h.)
#pragma once

#include <cstdint>

#include "loom/IR.h"

namespace loom {
namespace internal {

/** A closed interval [min, max]. An undefined min or max means unbounded on
 * that side. */
struct Interval {
    Expr min, max;
    Interval() = default;
    Interval(Expr mn, Expr mx) : min(std::move(mn)), max(std::move(mx)) {}
    static Interval everything() { return Interval(); }
    static Interval single_point(const Expr &e) { return Interval(e, e); }
    bool has_lower_bound() const { return min.defined(); }
    bool has_upper_bound() const { return max.defined(); }
    bool is_bounded() const { return min.defined() && max.defined(); }
    bool is_everything() const { return !min.defined() && !max.defined(); }
    bool is_single_point() const { return min.defined() && min.same_as(max); }
    /** The smallest interval containing both (simplified where constant). */
    static Interval make_union(const Interval &a, const Interval &b);
    static Interval make_intersection(const Interval &a, const Interval &b);
};

}  // namespace internal
}  // namespace loom
