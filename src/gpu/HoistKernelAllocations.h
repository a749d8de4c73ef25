// Device memory for Funcs computed inside a GPU kernel (store_in(Global)):
// a kernel cannot allocate, so the storage of every block (or every thread)
// is one allocation made by the host before the launch, and each instance
// indexes its own slice of it.
#pragma once

#include "loom/IR.h"

namespace loom {
namespace internal {

/** Moves each MemoryType::Global allocation inside a GPU kernel out of it:
 * the allocation around the kernel holds one copy per block (computed at a
 * block loop) or per thread (inside the thread loops), and the loads and
 * stores inside add the instance's offset, its linear block (and thread)
 * index times the size of one copy. The host side then allocates it in
 * device memory like any buffer only kernels touch. The size of one copy
 * is, per dimension, the region's extent with the kernel's lets
 * substituted where it does not depend on the kernel's loops (the same
 * for every block, known at launch), else its constant upper bound (a
 * region that is smaller at the edge of the data); with neither, a
 * CompileError names the Func. A size that is no constant is let-bound
 * around the kernel as <func>.copy_size. */
Stmt hoist_kernel_allocations(const Stmt &s);

}  // namespace internal
}  // namespace loom
