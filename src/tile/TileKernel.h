// What an IR TileKernel node holds: a tile program and the global buffers
// it reads and writes, by the names the loop IR gives them.
#pragma once

#include <vector>

#include "tile/TileCodeGen_CUDA.h"
#include "tile/TileIR.h"

namespace loom {
namespace internal {
namespace tile {

struct TileKernelContents {
    TileProgram program;
    std::vector<TileBuffer> buffers;
};

}  // namespace tile
}  // namespace internal
}  // namespace loom
