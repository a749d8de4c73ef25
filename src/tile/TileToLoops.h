// Tile programs on the CPU: a program becomes loops of the loop IR, which
// the CPU backend vectorizes and compiles like any other. The grid is a
// loop nest (tiles of rows in parallel), each tile value a small stack
// allocation, each op a loop nest over its tile with the columns
// innermost, and dot register-blocked: a block of rows by the columns'
// vectors, unrolled, with k outside it, so that its accumulators stay in
// vector registers across k. Masked accesses read and write
// only inside their bounds (the rest of a loaded tile is zero), so a tile
// schedule runs, and is checked, without a GPU.
#pragma once

#include <string>
#include <vector>

#include "loom/IR.h"
#include "tile/TileKernel.h"

namespace loom {
namespace internal {
namespace tile {

/** The loops of program `k` over `grid` (the extents of its grid
 * variables), its scalars bound by lets to their host values. */
Stmt tile_program_to_loops(const TileKernelContents &k, const std::vector<Expr> &grid,
                           const std::vector<std::string> &scalar_names,
                           const std::vector<Expr> &scalar_values);

}  // namespace tile
}  // namespace internal
}  // namespace loom
