// The GPU loops of a lowered statement: analyses of their chains and block
// shapes, and the check that refuses GPU loops no kernel can hold.
#pragma once

#include <set>
#include <string>

#include "ir/Util.h"
#include "loom/IR.h"
#include "loom/Target.h"

namespace loom {
namespace internal {

/** The name of the kernel whose outermost block loop is `loop` in the
 * pipeline `prefix`: prefix_<func>, numbered when the name is taken
 * already (kernels are named in the order they appear). Adds it to taken. */
std::string next_kernel_name(const std::string &prefix, const std::string &loop,
                             std::set<std::string> *taken);

/** Whether t is a GPU block or thread loop. */
bool is_gpu_loop(ForType t);

/** Each stage's thread loops in a kernel, as "f: 10 x 128 (y, x)", x
 * first: the block is the largest of these in each dimension, so an error
 * about its size names the stage that made it large. */
std::string describe_thread_loops(const Stmt &kernel_body);

/** How many loops of type t (GPUBlock or GPUThread) a chain of them holds
 * below (and including) s's first such loop: a loop's dimension, x for the
 * innermost of its chain, is the depth of the chain below it. */
int gpu_loop_chain_depth(const Stmt &s, ForType t);

/** Threads per block along x, y and z: the largest constant extent of the
 * kernel's thread loops of each dimension (block starts at 1, 1, 1).
 * Returns the first thread loop whose extent is not a positive constant,
 * or null. */
const For *gpu_block_shape(const Stmt &kernel_body, int block[3]);

/** Refuses GPU loops that no kernel can hold: on a target without cuda, one
 * inside another kernel's thread loops, thread loops with no block loop
 * around them, more than three block or thread dimensions, and GPU loops
 * inside parallel or vectorized loops. Names the Func whose loop it is. */
void check_gpu_loops(const Stmt &s, const Target &target, const FuncOrigins &origins = {});

}  // namespace internal
}  // namespace loom
