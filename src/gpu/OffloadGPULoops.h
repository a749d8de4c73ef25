// The host's side of a GPU pipeline, made explicit in the IR: the kernels are
// compiled (CUDA C++, by NVRTC for the target's GPU), and every place where
// the host code meets them becomes a call of the runtime's device interface
// (loom_runtime.h's loom_device_*): each kernel's loop nest or TileKernel
// node becomes the preparation of its buffers and its launch, an allocation
// that only kernels touch becomes GPU memory, a buffer the CPU reads is
// copied back first if the GPU's copy is newer, and the pipeline ends by
// waiting for its kernels. The module's code and the runtime's state for it
// become globals of the host module. Host code generation (CodeGen_LLVM)
// then sees only calls, globals and buffer descriptors, and names no GPU API,
// so that another API (HIP) is another implementation of the same interface.
// Halide's OffloadGPULoops is the model.
//
// It runs on the lowered function as codegen_llvm receives it, not in
// lower(): codegen_cuda compiles the kernels from their loops, and the
// lowered IR that others read (compile_to_lowered_stmt, compile_to_cuda)
// keeps them.
#pragma once

#include <string>
#include <vector>

#include "codegen/CodeGen_LLVM.h"
#include "loom/Target.h"
#include "lower/LoweredFunc.h"

namespace loom {
namespace internal {

/** A lowered function whose host code calls the device interface, with the
 * globals those calls name. */
struct OffloadedFunc {
    LoweredFunc func;
    std::vector<HostGlobal> globals;
};

/** f with its GPU work offloaded (see above); f itself when it has no GPU
 * loops, except that the buffers its CPU code reads are still copied back
 * from the GPU when a previous pipeline left them newer there. `portable`
 * is codegen_llvm's: AOT code carries the kernels' cubin and PTX, and their
 * CUDA C++ source only for a target with cuda_source; JIT code carries the
 * source too, for a driver that compiles it (the tests' stand-in).
 *
 * Throws a CompileError when a Func or buffer is written on one side (CPU
 * or GPU) and used on the other within the pipeline: Loom does not copy in
 * the middle of a pipeline. */
OffloadedFunc offload_gpu_loops(const LoweredFunc &f, const Target &t, bool portable);

/** The name of the global in which the runtime keeps a GPU pipeline's loaded
 * module: the JIT finds it, to unload the module with the code. */
std::string device_module_state_name(const std::string &function);

/** The NVRTC architecture for t: its capability, or that of GPU 0 when t
 * names none ("host-cuda"). `what` names the caller in the error. */
std::string cuda_arch_for(const Target &t, const std::string &what);

}  // namespace internal
}  // namespace loom
