// A chain of reductions rolled inside a tile program: what reduction
// fusion derives for a rolling_update whose Func a tile program computes,
// for the tile layer to compute per tile of the reduction domain (the
// loops the fusion would otherwise write are the tile program's).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "fusion/RepairDerivation.h"
#include "loom/IR.h"

namespace loom {
namespace internal {

struct RolledMember {
    std::string name;
    ReduceOp op;
    /** The per-term contribution g, over the member's Vars and the RVar,
     * with the producers' calls kept (read at their new values). */
    Expr term;
    /** Its producers (none for a producer of its own) and the repair of a
     * partial result for their move. */
    std::vector<ProducerSlot> slots;
    Repair repair;
};

struct RolledChain {
    std::string leader;
    std::string rvar;  // the RVar rolled over
    Expr r_min, r_extent;
    /** Producers before their dependents. */
    std::vector<RolledMember> members;
    /** split_k: chunk c of the program (its Var chunk_var) rolls the tiles
     * [c * T, (c + 1) * T) of the whole range, T = ceil(tiles / chunks).
     * Empty: the program rolls the whole range. */
    std::string chunk_var;
    Expr chunks;
    /** Funcs computed at root that the program (of Func `program`) stores
     * besides its own: (Func, the member whose final value it holds). */
    std::vector<std::pair<std::string, std::string>> stored;
    std::string program;
    const RolledMember *member(const std::string &name) const {
        for (const RolledMember &m : members) {
            if (m.name == name) return &m;
        }
        return nullptr;
    }
};

}  // namespace internal
}  // namespace loom
