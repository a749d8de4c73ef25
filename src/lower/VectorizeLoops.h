// Replaces loops marked ForType::Vectorized by vector code: the loop variable
// becomes a Ramp and every expression that depends on it is widened.
#pragma once

#include "loom/IR.h"
#include "loom/Target.h"

namespace loom {
namespace internal {

/** Vectorizes every ForType::Vectorized loop in s. Each such loop must have a
 * constant extent (after simplification), which becomes the number of lanes.
 * Conditions that differ between lanes turn the stores and loads they guard
 * into predicated (masked) ones; allocations inside the loop get one copy per
 * lane. Throws CompileError for a non-constant extent, for nested vectorized
 * loops, and for a loop that carries a dependence from lane to lane (a store
 * to one element that every lane writes, e.g. sum[0] = sum[0] + in[x]). */
Stmt vectorize_loops(const Stmt &s, const Target &t);

}  // namespace internal
}  // namespace loom
