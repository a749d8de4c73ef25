// The conditioning check of a derived repair: is the fused recurrence as
// accurate in the pipeline's own precision as the unfused order?
//
// Properties (1) and (2) make a repair exact in real arithmetic, which says
// nothing about rounding: sum((x - S/n)^2) repaired about the running sum
// S is the textbook E[x^2] - E[x]^2, which loses every digit once the mean
// is large against the spread. So each dependent is also simulated: its
// producers and every carried sum are run through the fused recurrence
// (one term a step, as rolling_update does, and in chunks combined as
// split_k does), every operation rounded to its type, on adversarial
// inputs (a large offset against a unit spread, mixed signs, a producer
// that moves at every term, a few thousand terms), and compared with the
// unfused order (the producers' final values first, then the sum) against
// float64. A repair whose error exceeds the unfused one's by more than
// kConditioningFactor is unstable; ReductionFusion then tries another
// state (its pivots) or refuses the chain.
#pragma once

#include <string>
#include <vector>

#include "fusion/RepairDerivation.h"

namespace loom {
namespace internal {

/** How much less accurate than the unfused order a fused repair may be
 * before it is called unstable (documented in docs/schedule.md). */
constexpr double kConditioningFactor = 8;

/** One dependent reduction to simulate. */
struct ConditioningSubject {
    ReduceOp op;
    Expr g;  // its term, in the slot variables
    std::vector<ProducerSlot> slots;
    Repair repair;
    /** Per slot: whether the state is kept about the producer's pivot (its
     * running value extrapolated to all terms, ReductionFusion). */
    std::vector<bool> pivoted;
    /** The reduction's extent: a Variable here takes the simulated length. */
    Expr extent;
};

struct ConditioningReport {
    /** False when the chain cannot be simulated (a producer that is itself
     * repaired, an integer reduction): `summary` says why. */
    bool checked = false;
    bool stable = true;
    /** The worst case: fused error / max(unfused error, one rounding of the
     * terms' magnitudes), and where it happened. */
    double worst_ratio = 0;
    std::string worst_case;  // e.g. "rolled one term a step, on 2048 terms drawn as 1000 + N(0, 1)"
    double fused_error = 0, unfused_error = 0;  // relative to the result, there
    std::string summary;                        // for the compile log
};

ConditioningReport check_conditioning(const ConditioningSubject &s);

}  // namespace internal
}  // namespace loom
