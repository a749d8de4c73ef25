// Vector reductions accumulated in vector registers across a loop. A sum
// over a vectorized RVar leaves, in every iteration of the loops around the
// vectorized one, f[i] = f[i] + vector_reduce_add(v): a horizontal reduction
// (log2(lanes) shuffles and adds on a CPU) and a load and store of f[i] per
// vector. When nothing else in a serial loop touches f[i], and i does not
// change across the loop, this pass keeps a vector of partials instead:
//
//   partial = identity;  for (...) { partial = partial + v }
//   f[i] = f[i] + vector_reduce_add(partial)
//
// so the loop body is one vector operation, as with Halide's rfactor, and
// the lanes are combined once, after the loop. Like the vectorization that
// made the reduction, it changes the order of the operator's applications
// (the operator is associative and commutative). Applied from the innermost
// loop out, as far as the conditions hold. A GPU kernel's block-level code
// is left alone: an allocation there is shared by the block's threads.
#pragma once

#include "loom/IR.h"

namespace loom {
namespace internal {

Stmt hoist_vector_reductions(const Stmt &s);

}  // namespace internal
}  // namespace loom
