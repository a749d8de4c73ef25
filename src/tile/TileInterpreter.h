// The meaning of a tile program, computed on the host: every translation of
// it (to CUDA, later to the CPU) must give what this gives. Tiles are whole
// arrays here, with no threads and no layouts; each operation rounds to its
// result's element type, and dot accumulates in its accumulator's type, in
// order of k.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "loom/Expr.h"
#include "tile/TileIR.h"

namespace loom {
namespace internal {
namespace tile {

/** A global buffer on the host: element (c_0, c_1, ...) is at
 * data + sum of c_d * strides[d] elements. */
struct TileHostBuffer {
    std::string name;
    Type elem;
    void *data = nullptr;
    std::vector<int64_t> strides;
};

/** Runs every program instance of p over the grid [0, grid[i]) (one extent
 * per grid variable), with the scalars its expressions read given by name
 * (constants: ints for indices and sizes, floats for a map's
 * coefficients). An access's buffer dimension d is at origin[d] plus the
 * tile index along axis access_axes(op)[d] (axis -1: at origin[d]); an
 * element is masked, not read (zero) or not written, when any coordinate
 * is at or past bounds[d]. A shared value's slots are separate tiles (a
 * slot never written reads as NaNs). Reads inside the masks past a
 * buffer's end are the caller's error, as on a GPU. */
void interpret_tile_program(const TileProgram &p, const std::vector<TileHostBuffer> &buffers,
                            const std::map<std::string, Expr> &scalars,
                            const std::vector<int> &grid);

}  // namespace tile
}  // namespace internal
}  // namespace loom
