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
// realization's extent there becomes 1.
//
// Or a thread owns runs: every access along a dimension is at the min plus
// w * t + q + w * T * s, for t the thread's index, T the block's threads
// along that axis, a lane q in [0, w) and any s. A row that a block's
// threads copy a vector each, T vectors at a time, and read back in the
// same pattern (the reductions and the output of a row softmax, each
// thread's loop over its own interleaved vectors) is so: each thread keeps
// its w elements of each period, at (d / (w * T)) * w + d % w for the
// offset d. A row of 16384 floats and 1024 threads is 16 registers a
// thread, read from device memory once and never written to shared memory.
// Every access is rewritten so, in the loops' variables, which once the
// loops over periods are unrolled are constants (an array indexed at run
// time would be in local memory).
//
// When neither holds, every thread may still keep a copy of the whole Func
// (replication): where each of its stores is the same for every thread.
// Stores outside the thread loops are; inside them, a reduction across the
// threads (f = f + v at an element no thread index picks) is, once the
// block combines the threads' values and every thread folds the total into
// its copy (CrossThreadReductions). A row's max and sum, and the row
// statistics computed from them, are so: in registers, they need no shared
// memory, no first thread to compute them alone and no barrier before the
// others read them.
//
// The proof uses, as facts, the ranges of the enclosing loops, the bounds
// that enclosing if-conditions put on a variable (a guard `x + t <= n` of a
// ragged tail), and the orderings they state, which decide a clamp (a point
// min(p, n - 1) read under the guard p < n is p).
#pragma once

#include "loom/IR.h"

namespace loom {
namespace internal {

/** Makes per-thread storage of every realization at the block level of a
 * GPU kernel that is owned by its threads, as above, and marks the
 * Realize MemoryType::Register. Realizes in Register (the schedule's
 * store_in) must be owned so, or replicated (a CompileError names the
 * access that allows neither), and their elements per thread must have a
 * constant bound; Auto ones are made per-thread when owned and small (at
 * most 512 bytes per thread), replicated when they are a single point that
 * no serial loop of the block stores to, and are otherwise left to shared
 * memory. A replicated Realize is marked so (Realize::replicated, which
 * storage flattening hands to its Allocates): every thread makes its
 * stores and folds the block's totals into its copy. Runs after bounds
 * inference, before storage flattening. */
Stmt privatize_thread_owned_storage(const Stmt &s);

}  // namespace internal
}  // namespace loom
