// Run-time checks out of GPU kernels: a check (an AssertStmt, such as the
// one a bound() leaves where its Func is computed) inside a kernel can only
// stop the kernel with __trap, which the launch reports as a fault; the
// error can list the kernel's checks (CudaKernel::checks) but not say which
// failed, nor with what values. One that depends on nothing the kernel defines has the same
// value on the host before the launch, where it fails the call with its
// message before anything runs.
#pragma once

#include "loom/IR.h"

namespace loom {
namespace internal {

/** Moves each AssertStmt inside a GPU kernel's loop nest (the loops under
 * an outermost gpu_blocks loop) to just before that loop, when its
 * condition and message use none of the kernel's loop variables,
 * allocations or loads, and it is reached through GPU loops, lets and
 * blocks alone (not inside a serial loop or an if, which might not run it).
 * Lets inside the kernel that name host values only are substituted into
 * it. Others stay in the kernel. */
Stmt hoist_kernel_checks(const Stmt &s);

}  // namespace internal
}  // namespace loom
