// The meaning of a tile program, computed on the host: every translation of
// it (to CUDA, later to the CPU) must give what this gives. Tiles are whole
// arrays here, with no threads and no layouts; each operation rounds to its
// result's element type, and dot accumulates in its accumulator's type, in
// order of k.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tile/TileIR.h"

namespace loom {
namespace internal {
namespace tile {

/** A global buffer on the host: row-major 2-D, `stride` elements per row. */
struct TileHostBuffer {
    std::string name;
    Type elem;
    void *data = nullptr;
    int stride = 0;
};

/** Runs every program instance of p over the grid [0, grid[i]) (one extent
 * per grid variable), with the scalars its expressions read given by
 * name. Reads and writes outside the masks never touch the buffers; a read
 * inside the masks past a buffer's rows is the caller's error, as on a
 * GPU. */
void interpret_tile_program(const TileProgram &p, const std::vector<TileHostBuffer> &buffers,
                            const std::map<std::string, int> &scalars,
                            const std::vector<int> &grid);

}  // namespace tile
}  // namespace internal
}  // namespace loom
