// The block's own code of every GPU kernel made explicit (see the .cpp):
// the last lowering pass of a GPU pipeline, after which the CUDA backend
// prints what it is given.
#pragma once

#include <string>

#include "loom/IR.h"

namespace loom {
namespace internal {

/** Lowers the block-level code of each kernel (the outermost gpu_blocks
 * loops of s), fixes its allocations' memory types and inserts its
 * barriers. Kernels are named as the backend names them, from
 * `pipeline_name`. CompileErrors name the kernel, for stores a block's
 * threads cannot share and memory types a kernel cannot give. */
Stmt lower_gpu_kernels(const Stmt &s, const std::string &pipeline_name);

}  // namespace internal
}  // namespace loom
