// Bounds inference: decides which region of each Func is computed and stored.
#pragma once

#include "lower/ScheduleFunctions.h"

namespace loom {
namespace internal {

/** Defines the symbols f.sK.v.min / f.sK.v.max of every stage at its compute
 * site from the region its consumers read (plus the region its own update
 * stages touch), pins the outputs' bounds to their buffers, and gives every
 * Realize the bounds of the region touched inside it. A region that cannot be
 * bounded (a Func read at a data-dependent index) is a CompileError. */
Stmt bounds_inference(const Stmt &s, const LoweringEnv &env);

/** The statement as interval analysis should see it: guarded split tails
 * tightened to their guards and promise_clamped values clamped. Its regions
 * are those the original statement touches. */
Stmt bounds_analysis_view(const Stmt &s);

/** The name of the buffer holding Tuple element `index` of output Func f. */
std::string output_buffer_name(const FunctionPtr &f, int index);

}  // namespace internal
}  // namespace loom
