// Loop-invariant code motion: values a loop's body computes the same way in
// every iteration are computed once, before the loop.
#pragma once

#include "loom/IR.h"

namespace loom {
namespace internal {

/** Lifts each maximal non-trivial expression of a serial, unrolled or
 * vectorized loop's body inside a GPU kernel that does not change across its iterations into a
 * let just outside the loop, outer loops first. Invariant means: it reads
 * no variable the body defines (the loop's own included), loads only from
 * allocations the body does not store to, at a constant index inside the
 * allocation, and calls only pure functions; evaluating such an expression
 * where the loop would not (no iteration, or a branch not taken) can
 * neither fault nor have an effect.
 *
 * LLVM does this for the CPU (which is why CPU code is left as it is, in
 * the shape the later passes, e.g. loop partitioning, expect), but the CUDA
 * C++ path cannot rely on NVRTC for it: a rolling update's repair factor,
 * exp(m_old - m_new), sits under selects in each element's update and was
 * evaluated once per element of the accumulator. GPU loops themselves are
 * left alone. */
Stmt hoist_loop_invariants(const Stmt &s);

}  // namespace internal
}  // namespace loom
