// Reduction fusion: rewrites the chains named by rolling_update and split_k
// directives into Funcs that compute them in one pass or in parallel chunks,
// with repairs derived by RepairDerivation.
//
// A chain is a reduction X over an RDom r, the reductions over r it reads
// (its producers, e.g. softmax's max), and the other reductions over r that
// read those producers (siblings, e.g. the sum beside attention's weighted
// sum). Both directives cut r into pieces and compute, per piece, partial
// results P_k of every member k:
//
//   split_k(X, r, K):  K chunks. P_k(.., c) is the chain restricted to chunk
//     c (an ordinary Func, schedulable, e.g. parallel over c), and each
//     member becomes a combine over c: producers fold their partials,
//     dependents fold h(P_k(c), P_p(c), p): the repair to the final p.
//   rolling_update(X, r): tiles of T (T = 1 unless r is split). Each member
//     becomes one update over the tiles, and all of them run in ONE loop
//     (a FusedGroup): dependents first, reading the producers' running
//     values before the tile (old) and after it (new, recomputed inline):
//       k = h(k, p_old, p_new) ⊕ P_k(tile),
//     where P_k(tile) reduces the tile with the producers' new values.
//
// Steps and partials in which a max/min producer is still its identity
// (every term so far was -inf, e.g. masked) contribute nothing to its
// dependents, and a repair whose producer did not move is skipped; so
// masked prefixes and fully masked rows never evaluate exp(-inf + inf).
#pragma once

#include "lang/ScheduleContents.h"
#include "lower/ScheduleFunctions.h"

namespace loom {
namespace internal {

/** Applies every fusion directive of `s` to `env`: replaces the members of
 * each chain by their fused or split forms, adds the partial Funcs, records
 * the FusedGroups and the derivation log, and recomputes the order. */
void fuse_reduction_chains(LoweringEnv &env, const ScheduleContents &s);

}  // namespace internal
}  // namespace loom
