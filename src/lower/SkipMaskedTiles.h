// Skips the tiles of a fused reduction chain that cannot change it.
#pragma once

#include "loom/IR.h"
#include "lower/ScheduleFunctions.h"

namespace loom {
namespace internal {

/** Wraps the body of each fused group's tile loop (rolling_update or a
 * split_k chunk rolled in tiles) in a test that the group's mask
 * (FusedGroup::mask, e.g. attention's causal or sliding-window condition)
 * can hold somewhere in the tile: for some key of the tile and some row the
 * loop serves. Where it cannot, every term of the tile is its reduction's
 * identity, so the whole tile (the Funcs computed per tile, the partials,
 * the repairs) is skipped: for causal attention, the tiles above the
 * diagonal, about half the work. The test is interval arithmetic on the
 * mask over the tile's keys and the rows' loop bounds, so it is
 * conservative: a tile it keeps may still be fully masked, never the
 * reverse. Runs on the loop nest before bounds inference. */
Stmt skip_masked_tiles(const Stmt &s, const LoweringEnv &env);

}  // namespace internal
}  // namespace loom
