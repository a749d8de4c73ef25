// Common tile values: a map or a broadcast that computes what an earlier
// op of the same list computes (the same function of the same operands,
// none redefined between) is dropped, and its uses read the earlier value.
// The translation writes each definition's expression on its own, so one
// subexpression read by two definitions becomes two tiles: attention's P is
// the term of its row sum l and the factor of P V. Merged, P costs one
// exponential per score.
#pragma once

#include "tile/TileIR.h"

namespace loom {
namespace internal {
namespace tile {

void eliminate_common_tiles(TileProgram &p);

}  // namespace tile
}  // namespace internal
}  // namespace loom
