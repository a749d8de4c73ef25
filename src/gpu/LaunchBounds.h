// The launch bounds a GPU kernel asks for, fixed on its loop before code
// generation: Stage::gpu_blocks_per_sm names a Func, and the kernel whose
// block loops are that Func's carries the count as an attribute of its
// outermost gpu_blocks loop (LoopAttributes::gpu_blocks_per_sm). The CUDA
// backend prints it as __launch_bounds__'s second argument and decides
// nothing; whether the blocks fit an SM, and whether the Func makes a
// kernel at all, are checked here, as schedule errors.
#pragma once

#include <string>

#include "loom/IR.h"
#include "lower/ScheduleFunctions.h"

namespace loom {
namespace internal {

/** Sets LoopAttributes::gpu_blocks_per_sm on the outermost gpu_blocks loop
 * of each kernel whose Func asks for it. A CompileError names the Func and
 * the kernel (named as the backend names it, from `pipeline_name`) when
 * that many blocks of the kernel's threads exceed the 2048 threads an SM
 * holds, and names the Func when s has kernels but none is that Func's.
 * Runs after the kernels' thread loops have their final, constant extents
 * (after lower_gpu_kernels). */
Stmt set_gpu_launch_bounds(const Stmt &s, const std::string &pipeline_name, const LoweringEnv &env);

}  // namespace internal
}  // namespace loom
