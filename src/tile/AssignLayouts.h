// Layout assignment: which thread and register hold each element of each
// register tile of a program. A program with a tensorized dot takes the
// instruction's layouts: its accumulator's for the accumulator and for
// every tile computed elementwise with it (so that an epilogue runs on the
// accumulator's registers where they are, loading what it reads straight
// into that layout), and the instruction's operand layouts for the dot's
// operands. A program with no dot takes a blocked layout, coalesced.
#pragma once

#include "tile/TensorInstructions.h"
#include "tile/TileIR.h"

namespace loom {
namespace internal {
namespace tile {

/** How a block's warps tile a program's tiles: m along the rows, n along
 * the columns. */
struct WarpGrid {
    int m = 1, n = 1;
};

/** Sets the layout of every register value of p (num_warps = m * n). */
void assign_layouts(TileProgram &p, WarpGrid warps, const TensorInstruction *instruction);

}  // namespace tile
}  // namespace internal
}  // namespace loom
