// Staging of a contraction's operands: in each loop over a reduction's
// tiles, the loads of the dot's operands become asynchronous copies
// (cp.async) into swizzled shared memory, read into the instruction's
// fragments by layout conversions (ldmatrix). With `stages` > 1 the shared
// tiles are rings of that many slots: the copies of the next stages - 1
// tiles are in flight while the dot of this one runs. The prologue issues
// the first stages - 1 copies; each step waits for its own tile's group,
// meets the block at a barrier (after which no warp still reads the slot
// the previous step read), issues the copy of the tile stages - 1 ahead
// into that slot, then converts and multiplies. A copy past the end of
// the reduction is masked to nothing, so every step commits a group and
// the wait counts stay exact. An operand the same at every step (the
// queries, in attention's loop over key tiles) is copied once, with the
// prologue's first group, into a shared tile of one slot, and only
// converted at each step.
#pragma once

#include "tile/TileIR.h"

namespace loom {
namespace internal {
namespace tile {

void stage_operands(TileProgram &p, int stages);

}  // namespace tile
}  // namespace internal
}  // namespace loom
