// What the threads of one GPU block do together, made explicit before the
// CUDA C++ is printed. Inside a kernel the code between the block loops and
// the thread loops runs once per thread, so:
//
// - a store there to a single point (a reduction's initial value computed at
//   the block level) is made by the block's first thread alone; a store
//   inside a serial loop there is refused, as one thread would compute a
//   whole Func while the others wait;
// - a reduction whose RVar is a gpu_threads loop has every thread update the
//   same element. Each thread accumulates its own partial in a register
//   instead; the block then combines the partials (warp shuffles, then
//   shared memory across warps) and the first thread folds the total into
//   the element. The update must be an associative and commutative operator
//   of the element and a value (+, *, min, max, &&, ||), as with Halide's
//   rfactor. When the element depends on other gpu_threads loops of the
//   stage (several rows per block, a row per group of threads), each group
//   of threads that shares those loops' coordinates combines its own
//   partials (warp shuffles when a group is a part of a warp), and its
//   first thread folds them into its element.
// - an update that keeps the point where a value reaches its max or min
//   (argmax: each element of a Tuple takes its value at a point under one
//   test of the value against the extreme's old value) is shared the same
//   way: each thread keeps its own extreme, elements and point; the block
//   combines the extremes, then, among the threads that reached the
//   combined one, the points' ranks by the update's RVars (the least for a
//   strict test, the greatest otherwise, as the serial loop would keep);
//   the thread holding that point folds it in. Any other store that
//   several threads make to one element is refused.
// - storage at the block level that every thread keeps a whole copy of
//   (replicated by privatize_thread_owned_storage: a row's max or sum in
//   registers) is each thread's own: every thread makes the stores to it
//   there, and folds a reduction's total (the same in every thread) into
//   its copy, with no first thread and no barrier.
//
// The barriers that make one thread's writes visible to the others are
// placed afterwards, with all the kernel's others, by insert_gpu_barriers.
#pragma once

#include <set>
#include <string>

#include "loom/IR.h"

namespace loom {
namespace internal {

/** Intrinsics the lowered kernel uses, printed by CodeGen_CUDA. */
namespace gpu_intrinsic {
/** bool: this thread is the block's first (threadIdx is 0, 0, 0). */
constexpr const char *first_thread = "gpu_first_thread";
/** Waits for every thread of the block (__syncthreads). */
constexpr const char *barrier = "gpu_barrier";
/** gpu_block_reduce(value, op): value combined over the block's threads with
 * the VectorReduce::Op `op` (an int), returned to every thread. Every
 * thread of the block must reach it. */
constexpr const char *block_reduce = "gpu_block_reduce";
/** gpu_group_reduce(value, op, reduced): value combined over the threads
 * that share this thread's coordinates along the dimensions not in
 * `reduced` (a mask: x 1, y 2, z 4), returned to each of them. Every thread
 * of the block must reach it. */
constexpr const char *group_reduce = "gpu_group_reduce";
/** gpu_point_rank(rvar): the value of one of an update's RVars, bound by a
 * let of its own (`<stage>.<rvar>.rank`, outermost RVar first) around a
 * Tuple update that may keep the point reaching an extreme, when an RVar
 * is on GPU threads (schedule_functions). An intrinsic, so that no pass
 * drops or inlines the let: a thread ranks the points it takes by them.
 * lower_block_level_code turns them back into plain lets. */
constexpr const char *point_rank = "gpu_point_rank";
}  // namespace gpu_intrinsic

struct BlockLevelKernel {
    Stmt body;
    /** The per-thread partials: allocations outside the thread loops that
     * are nonetheless private to each thread (registers, not shared). */
    std::set<std::string> per_thread;
};

/** Whether s has a gpu_threads loop. */
bool has_thread_loop(const Stmt &s);

/** Whether lower_block_level_code would give `loop`, a loop of a block's
 * own code around thread loops, a reduction across the threads: partials
 * accumulated over the loop and combined after it. `per_thread` names the
 * storage outside the loop that each thread owns (MemoryType::Register). */
bool reduces_across_threads(const For *loop, const std::set<std::string> &per_thread);

/** Rewrites the body of one kernel (its outermost gpu_blocks loop) as
 * described above, and drops the point_rank marks. `kernel` names it in
 * errors. Register storage at the block level that every thread keeps a
 * copy of (Allocate::replicated): every thread makes its stores, and folds
 * a reduction's total into its copy. Kernels without thread loops are
 * returned unchanged. */
BlockLevelKernel lower_block_level_code(const Stmt &body, const std::string &kernel);

}  // namespace internal
}  // namespace loom
