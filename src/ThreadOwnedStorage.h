// Storage that each GPU thread keeps for itself although its Func is
// computed at a block loop.
//
// A Func computed at a block loop, outside the thread loops, is stored once
// per block, and the block's threads share it in shared memory. Often each
// of its elements is touched by one thread only: FlashAttention keeps every
// query's running max, sum and weighted sum across a block-level loop over
// tiles of the keys (each tile staged in shared memory by all the threads),
// and a GEMM keeps each thread's accumulators across the loop over tiles of
// the reduction. Such a Func can live in each thread's registers, with no
// shared memory and no barrier for it.
//
// This pass proves that a Func is used so, and makes its storage per
// thread: along some dimensions, every access to the Func (by its own
// stages and by its consumers) is at the realization's min plus the index of
// the thread that makes it, along one dimension of the block each, and no
// other coordinate depends on the thread; every dimension of the block with
// several threads is one of them (or the access runs on its first thread
// alone). Each thread then owns one element along those dimensions, and the
// realization's extent there becomes 1. The proof uses, as facts, the
// ranges of the enclosing loops and the bounds that enclosing if-conditions
// put on a variable (a guard `x + t <= n` of a ragged tail).
#pragma once

#include "ScheduleFunctions.h"
#include "loom/IR.h"

namespace loom {
namespace internal {

/** Makes per-thread storage of every realization at the block level of a
 * GPU kernel that is owned by its threads, as above, and marks its Func's
 * storage MemoryType::Register in env. Funcs stored in Register must be
 * owned so (a CompileError names the access that is not); Auto ones are
 * made per-thread when owned and small (at most 512 bytes per thread), and
 * are otherwise left to shared memory. Runs after bounds inference, before
 * storage flattening. */
Stmt privatize_thread_owned_storage(const Stmt &s, LoweringEnv &env);

}  // namespace internal
}  // namespace loom
