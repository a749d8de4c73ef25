// Lets vectorize() take the RVar of an update that keeps a point: argmax
// and argmin written out as a Tuple update, a key element kept at the
// extreme (select(v > key, v, key), or max(key, v)) and payload elements
// taking their value at the point under the same test (select(v > key, x,
// payload)). Every lane of the vectorized loop would write the same
// elements, and no associative operator combines them, so vectorize_loops
// cannot; this pass first gives each lane its own key, payloads and point,
// as split_k's interleaved chunks do, and folds the lanes into the elements
// after the loop, keeping the point the serial loop keeps.
#pragma once

#include "loom/IR.h"

namespace loom {
namespace internal {

/** Rewrites the updates that keep a point in each vectorized loop, on the
 * CPU and in a GPU thread's own code (not where the update's RVar is on
 * the block's threads too: CrossThreadReductions ranks the points the
 * threads share, and a thread takes its lanes one by one). Each lane
 * keeps, in arrays of one element per lane, its key, payloads and the rank
 * of its point in the loop's order; after the loop, or after the serial
 * loop around it where the elements do not move, the lanes are folded into
 * the elements in rank order: a lane's point is taken if its key is more
 * extreme, or equal and earlier (strict tests, < and >: the first point
 * wins) or later (<= and >=: the last point wins). Run just before
 * vectorize_loops, which vectorizes the per-lane updates like any other
 * stores of a lane's own element. */
Stmt vectorize_point_reductions(const Stmt &s);

}  // namespace internal
}  // namespace loom
