// The host's side of a GPU pipeline, planned before LLVM code generation:
// the kernels (CUDA C++ compiled by NVRTC for the target's GPU), which
// allocations live in GPU memory, and which buffers the CPU code touches.
// CodeGen_LLVM then replaces every kernel's loop nest with its launch and
// keeps each buffer's host and GPU copies coherent (loom_runtime.h's flags).
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>

#include "codegen/CodeGen_CUDA.h"
#include "codegen/NVRTC.h"
#include "loom/Target.h"
#include "lower/LoweredFunc.h"

namespace loom {
namespace internal {

struct BufferAccess {
    bool read = false, written = false;
};

/** The loads and stores outside GPU kernels (the CPU's), by buffer or
 * allocation name. */
std::map<std::string, BufferAccess> host_accesses(const Stmt &s);

struct GpuOffload {
    CudaModule module;
    CudaBinary binary;
    /** Allocations outside the kernels that only kernels touch: GPU memory. */
    std::set<std::string> device_allocations;
};

/** The kernels of f and what their launches need; null when f has no GPU
 * loops. Throws a CompileError when a Func or buffer is written on one
 * side (CPU or GPU) and used on the other within the pipeline: Loom does
 * not copy in the middle of a pipeline. */
std::shared_ptr<const GpuOffload> offload_gpu_loops(const LoweredFunc &f, const Target &t);

/** The NVRTC architecture for t: its capability, or that of GPU 0 when t
 * names none ("host-cuda"). `what` names the caller in the error. */
std::string cuda_arch_for(const Target &t, const std::string &what);

}  // namespace internal
}  // namespace loom
