// CUDA C++ for the GPU loops of a lowered pipeline: every outermost nest of
// gpu_blocks loops becomes one __global__ function, its block loops read
// from blockIdx and its thread loops from threadIdx, with names taken from
// the algorithm. The host side (launches) is CodeGen_LLVM's, planned by
// OffloadGPULoops.
#pragma once

#include <string>
#include <vector>

#include "ir/Util.h"
#include "loom/Target.h"
#include "lower/LoweredFunc.h"

namespace loom {
namespace internal {

/** One kernel: its name, its parameters and its launch shape. */
struct CudaKernel {
    struct Param {
        std::string name;    // in the lowered IR, e.g. "out" or "out.stride.1"
        std::string c_name;  // in the CUDA source
        Type type;           // element type of a buffer, or the scalar's type
        bool is_buffer = false;
        bool read = false;     // buffers only: loaded by the kernel
        bool written = false;  // buffers only: stored to by the kernel
        /** Scalars: the value passed, in the host's terms; undefined: the
         * host's variable `name`. */
        Expr value;
    };
    std::string name;
    std::string loop_name;  // its outermost block loop in the lowered IR
    std::vector<Param> params;
    /** Grid extents (x, y, z), in the host's variables; threads per block
     * (x, y, z), constants. Unused dimensions have extent 1. */
    Expr grid[3];
    int block[3] = {1, 1, 1};
    /** Dynamic shared memory per block, passed at launch: the Funcs
     * computed at the block level (outside the thread loops). */
    int64_t shared_bytes = 0;
    /** The messages of the checks left inside the kernel (those that depend
     * on its block or thread), their values known only at run time shown
     * as "...". A failed one stops the kernel (__trap), and the error the
     * host then gets, which cannot carry the message, lists these. */
    std::vector<std::string> checks;
    /** More of it, for the one such Func whose size is known only at launch
     * (e.g. a row of a matrix whose width is a parameter), in the host's
     * variables; undefined when there is none. */
    Expr dynamic_shared_bytes;
};

struct CudaModule {
    std::string source;  // every kernel, with the helpers they use
    std::vector<CudaKernel> kernels;
    /** What NVRTC must be told besides the architecture: the target's
     * float semantics (`--use_fast_math` for the feature fast_math). The
     * source's first comment says so, for whoever compiles it elsewhere. */
    std::vector<std::string> nvrtc_options;
};

/** The CUDA C++ of every GPU loop nest of f. A Func computed at a block
 * loop (outside the thread loops) lives in shared memory and is computed
 * by the block's threads, with barriers between the thread loops that
 * produce and consume it. Reductions over gpu_threads RVars are combined
 * across the block's threads (see CrossThreadReductions.h). Vectorized loops inside a kernel become
 * small register arrays per thread; their dense loads and stores move whole 16- or 8-byte words
 * when the address is aligned. Throws a CompileError for a GPU schedule this backend cannot map:
 * thread loops outside block loops, extents of thread loops that are not constant, more than 1024
 * threads per block, more shared memory than the target's GPU has per block, allocations whose size
 * is not constant, or stores that several threads make to one element. */
CudaModule codegen_cuda(const LoweredFunc &f, const Target &target);

}  // namespace internal
}  // namespace loom
