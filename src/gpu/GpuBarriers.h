// Where a GPU block's threads must wait for each other. Between two
// statements of a block's own code (outside its thread loops), a barrier is
// needed when a thread of the second may touch an element of shared storage
// that another thread of the first touched, one of the two writing it,
// with no barrier between them already. insert_gpu_barriers asks this at
// every sequence and at the end of every serial loop there (the next
// iteration follows the last), rather than separating every two thread
// loops that touch shared memory: two copies that only write, or a value
// that one thread writes and reads alone, then need no barrier. It works
// from the inside out, so each decision sees the barriers placed within.
#pragma once

#include <set>
#include <string>

#include "loom/IR.h"

namespace loom {
namespace internal {

/** Whether `after`, run right after `before` by the threads of a block, can
 * race with it on one of `shared` (the storage the block's threads share,
 * by name) unless a barrier separates them. Both are the block's own code,
 * outside its thread loops. It looks at what `before` does after its last
 * barrier and what `after` does before its first (a barrier, or a
 * reduction across the block, which waits for every thread), and at who
 * does it: a thread loop's iterations may be any threads, a store guarded
 * by gpu_first_thread is the first thread's alone, and other block-level
 * code runs on every thread. Conflicts are a write and a read or write of
 * the same buffer by possibly different threads; two writes of a pure
 * definition (stage 0 of the buffer's own Func) do not conflict, as they
 * write the same value at any point both write. With `carried_by`, `after`
 * is the next iteration of that loop, whose body `before` is; the pure
 * definition's writes then agree only if it is one of that definition's
 * own loops, not a loop that computes it anew each iteration. */
bool needs_barrier_between(const Stmt &before, const Stmt &after,
                           const std::set<std::string> &shared, const For *carried_by = nullptr);

/** The body of one kernel (its outermost gpu_blocks loop, after
 * lower_block_level_code) with a gpu_barrier wherever
 * needs_barrier_between says so: between the parts of each sequence, and
 * at the end of each serial loop's body, of the block's own code. The
 * storage the threads share is every allocation there but `per_thread`
 * (lower_block_level_code's partials), and `shared_buffers`: device memory
 * the kernel both reads and writes. A kernel without thread loops is
 * returned unchanged. */
Stmt insert_gpu_barriers(const Stmt &kernel_body, const std::set<std::string> &per_thread,
                         const std::set<std::string> &shared_buffers);

}  // namespace internal
}  // namespace loom
