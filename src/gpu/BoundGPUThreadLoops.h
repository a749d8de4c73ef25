// A GPU block has a fixed number of threads, but a Func computed at a block
// loop covers the region its consumer needs there, which is smaller in the
// last block of a ragged split: its gpu_threads loop then has an extent that
// varies between blocks. Such a loop runs over the largest extent it can
// have, a constant, with its body guarded by the true extent (as Halide
// does), so that the launch has one block shape.
#pragma once

#include "loom/IR.h"

namespace loom {
namespace internal {

/** Writes the extent of each gpu_threads loop that is a constant once the
 * enclosing lets are substituted as that constant. Gives each one whose
 * extent is not a constant, but has a
 * constant upper bound (constant_upper_bound, with the enclosing lets
 * substituted), that bound as its extent, and guards its body with
 * `var < min + extent`. A loop with no such bound is left as it is, for
 * the code generator to refuse with the loop's name. */
Stmt bound_gpu_thread_loops(const Stmt &s);

}  // namespace internal
}  // namespace loom
