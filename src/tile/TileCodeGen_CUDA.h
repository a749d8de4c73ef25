// CUDA C++ for tile programs: one kernel per program, one program instance
// per GPU block, built on the instruction families of src/codegen/cuda
// (mma, ldmatrix, cp_async). Where each thread's elements are comes from
// the values' layouts alone: a linear layout is printed as the XOR of its
// bases over the bits of the lane (and of the register, a constant), so the
// code for any layout is the same few lines. A register index is a
// constant once the loops over registers are unrolled, so each thread's
// tiles stay in registers.
#pragma once

#include <string>
#include <vector>

#include "tile/TileIR.h"

namespace loom {
namespace internal {
namespace tile {

/** A global buffer a tile program reads or writes: `dims` dimensions, the
 * last dense (stride 1), the others' strides (in elements) kernel
 * parameters `<name>.stride.<d>`. */
struct TileBuffer {
    std::string name;
    Type elem;
    int dims = 2;
    bool written = false;
};

/** A parameter of a tile kernel: a buffer (a pointer to `type`), a
 * buffer's stride or a scalar the program reads (of `type`). `name` is the
 * program's (it may hold dots, "C.stride.0"), `c_name` the C identifier
 * the kernel calls it. */
struct TileKernelParam {
    std::string name;
    std::string c_name;
    Type type;
    bool is_buffer = false;
    bool written = false;
};

/** A kernel and what launching it takes: its parameters in order, the
 * dynamic shared memory (bytes) and the threads of its block. */
struct TileKernelSource {
    std::string source;
    std::vector<TileKernelParam> params;
    int64_t shared_bytes = 0;
    int threads = 0;
};

/** The kernel c_identifier(p.name). Its parameters: the buffers (in order), then each
 * buffer's strides `<buffer>.stride.<d>` for d < dims - 1 (int), then the
 * scalars the program reads (origins, bounds, loop bounds, slots, maps'
 * functions; not the grid's or loops' variables) sorted by name, each of
 * its Variable's type. Its grid is p.grid on blockIdx.x, y, z; its block
 * 32 * num_warps threads (thread t is lane t % 32 of warp t / 32). Needs
 * the CUDA half headers and the instruction families (prelude, mma,
 * ldmatrix, cp_async) before it, as tile_module_source and CodeGen_CUDA
 * put them; it carries its own helpers for packed halves (once per module).
 *
 * Translated: zeros; load into any register layout and store from any (a
 * thread reads or writes each element its registers hold, masked past the
 * bounds; an element held by several threads is written by each); map
 * register by register (operands in one layout; the function's arithmetic,
 * comparisons, &&, ||, !, select, casts among f16, bf16, f32, f64 and ints,
 * abs and the math intrinsics <fn>_f32 / <fn>_f64 as CUDA's functions);
 * async_copy of a 2-D 16-bit tile into a shared layout of offsets with
 * `slots` copies: when the layout's 16-byte chunks run along the tile axis
 * the buffer's dense dimension follows, by cp.async chunks shared by the
 * block's threads (zero-filled past the bounds), of 16 bytes when the
 * buffer's start, its strides and the copy's origin along the dense
 * dimension make every chunk 16-byte aligned, else of 4 bytes when they
 * make pairs 4-byte aligned, else element by element (checked at run
 * time, the same for the whole block; for the copies of a loop whose
 * origin along the dense dimension advances by multiples of 8, once before
 * the loop, which is versioned: its fast version runs unmasked 16-byte
 * chunks while every such tile is within its bounds, a last step computed
 * before the loop, then masked ones); element by element with plain
 * loads and stores otherwise (a transposed source into a row-major
 * layout); async_commit,
 * async_wait, barrier; convert_layout from a shared slot to the A or B
 * operand of mma_a_layout / mma_b_layout (ldmatrix, .trans when the
 * shared layout's chunks run along the fragment's other axis); dot of
 * those into mma_accumulator_layout (mma.sync per fragment, f16 or bf16 in,
 * f32 accumulator). A load or map whose one use is a map or store just
 * after it (only loads and maps between) is computed element by element
 * there, so an epilogue's operands never take a tile of registers.
 * Slots (var + c) % S of a loop's ops are counters rotating with the loop;
 * the thread's part of each chunk's and each ldmatrix row's offset is
 * computed once, at the kernel's start.
 * Anything else is an InternalError naming the op. */
TileKernelSource tile_program_to_cuda(const TileProgram &p, const std::vector<TileBuffer> &buffers);

/** The instruction families and register helpers tile kernels build on
 * (src/codegen/cuda/: mma, ldmatrix, cp_async, tile_registers), to follow
 * the prelude in a module. */
std::string tile_kernel_sources();

/** A whole module: the headers and sources a tile kernel needs, then the
 * kernels. */
std::string tile_module_source(const std::vector<std::string> &kernels);

}  // namespace tile
}  // namespace internal
}  // namespace loom
