// The CUDA C++ that generated kernels build on, kept as real .cuh files in
// src/codegen/cuda/ and embedded into libloom at build time
// (embed_sources.cmake). CodeGen_CUDA copies each into a module's source
// only when its kernels use it:
//  - prelude: Loom's integer division, modulo and shifts, and readonly
//    loads; every module.
//  - vectors: vectors from vectorized loops inside a kernel, small arrays
//    in registers; each operation applies its scalar form lane by lane, and
//    dense loads and stores of whole 16-, 8- or 4-byte words become single
//    wide memory instructions when the address is aligned (checked at run
//    time: a view's base need not be).
//  - block_reduce: reductions across a block's threads, warp shuffles
//    within each warp, then the warps' totals through shared memory. Every
//    thread of the block calls them and gets the total; the order of
//    combination is fixed, so results repeat from run to run.
//  - mma: mma.sync.aligned.m16n8k16 with f16 and bf16 operands and f32
//    accumulation (sm_80+), as inline PTX; on the tests' stand-in driver,
//    its warp-collective emulation (test/fake_cuda/cuda_on_cpu.h).
//  - ldmatrix: ldmatrix.sync.aligned.m8n8 x4, x4.trans, x2 and x2.trans (the
//    mma fragments from shared memory), emulated as a warp-collective step.
//  - cp_async: cp.async of 16 bytes (.cg) and 4 bytes (.ca), zero-filled
//    past a source size, commit and wait groups; the emulation lands a copy
//    only when its group is waited for, so a missing wait reads stale
//    shared memory, and fails a source not aligned to the copy's size.
//  - tile_registers: an f16/bf16 element of the 32-bit registers that pack
//    two (tile kernels' fragments).
#pragma once

#include <string>

namespace loom {
namespace internal {

/** The text of src/codegen/cuda/<name>.cuh. An InternalError for an
 * unknown name. */
const char *cuda_source(const std::string &name);

}  // namespace internal
}  // namespace loom
