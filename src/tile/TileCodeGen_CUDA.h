// CUDA C++ for tile programs: one kernel per program, one program instance
// per GPU block, built on the instruction families of src/codegen/cuda
// (mma, ldmatrix, cp_async). Where each thread's elements are comes from
// the values' layouts alone: a linear layout is printed as the XOR of its
// bases over the bits of the lane (and of the register, a constant), so the
// code for any layout is the same few lines.
#pragma once

#include <string>
#include <vector>

#include "tile/TileIR.h"

namespace loom {
namespace internal {
namespace tile {

/** A global buffer a tile program reads or writes: row-major 2-D, whose
 * row stride (in elements) is the kernel parameter `<name>_stride`. */
struct TileBuffer {
    std::string name;
    Type elem;
    bool written = false;
};

/** The kernel `p.name`: its parameters are the buffers (in order), their
 * strides, then the scalars the program's expressions read (sorted by
 * name, as Int(32)). Its grid is p.grid on blockIdx.x, y, z; its block
 * 32 * num_warps threads. Needs the sources cuda_source("prelude"),
 * "mma", "ldmatrix" and "cp_async" before it (tile_module_source).
 *
 * What it translates today, one warp per program: zeros; async_copy of a
 * 2-D 16-bit tile into shared memory in any layout of "offset" (16-byte
 * chunks, zero-filled past the bounds; the rows' global addresses must be
 * 16-byte aligned); async_commit, async_wait, barrier; convert_layout from
 * shared memory to the mma.sync A or B fragment (ldmatrix); dot on those
 * fragments into an f32 accumulator (mma.sync); map, register by register;
 * and store from any register layout, masked past the bounds. Anything
 * else is an InternalError naming the op. */
std::string tile_program_to_cuda(const TileProgram &p, const std::vector<TileBuffer> &buffers);

/** A whole module: the headers and sources a tile kernel needs, then the
 * kernels. */
std::string tile_module_source(const std::vector<std::string> &kernels);

}  // namespace tile
}  // namespace internal
}  // namespace loom
