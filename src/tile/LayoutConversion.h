// How a register tile moves from one layout to another. Both layouts map
// (register, lane, warp) to the same tile's coordinates; the plan says
// where each thread finds each element it is to hold:
//  - Registers: in its own registers (the layouts agree on lanes and
//    warps and differ in which register holds what): a renaming, no data
//    moves. The accumulator of mma.sync over two n fragments and the A
//    operand of the next one are such a pair, which is how attention feeds
//    P to P V without leaving the registers.
//  - Shuffles: in one register, the same for every lane, of another lane
//    of its own warp: one warp shuffle per destination register.
//  - SharedMemory: anywhere else (another warp, or a register that depends
//    on the lane): through shared memory and a barrier.
// Solved over GF(2) on the layouts' bases, so any pair of linear layouts
// gets a plan, and the cheapest that exists.
#pragma once

#include <string>
#include <vector>

#include "tile/Layout.h"

namespace loom {
namespace internal {
namespace tile {

struct ConversionPlan {
    enum Kind { Registers, Shuffles, SharedMemory } kind = SharedMemory;
    /** Registers, Shuffles: the source register of each destination
     * register. */
    std::vector<int> source_register;
    /** Shuffles: the lane to read destination register i from is
     * lane_constant[i] ^ (XOR of lane_bases[b] over the set bits b of the
     * reading lane). */
    std::vector<int> lane_constant;
    std::vector<int> lane_bases;
};

/** The plan that moves a tile from layout `from` to layout `to` (the same
 * outputs, inputs register, lane and warp). */
ConversionPlan plan_conversion(const LinearLayout &from, const LinearLayout &to);

/** "registers", "shuffles" or "shared memory". */
std::string to_string(ConversionPlan::Kind k);

}  // namespace tile
}  // namespace internal
}  // namespace loom
