// Loops of a tile program that do less than they say. A loop of one step
// (a reduction over a head dimension that one tile holds) is its body with
// the variable at its min: the step's loads are then the enclosing loop's,
// where staging pipelines them with that loop's other operands, and no
// loop of one step is compiled and versioned. A load that every step of a
// loop repeats (attention's queries, in the loop over key tiles) is loaded
// once, before the loop: on the CPU by hoisting it here; on the GPU,
// staging copies it into shared memory once (StageOperands.h).
#pragma once

#include "tile/TileIR.h"

namespace loom {
namespace internal {
namespace tile {

/** `body` with `var` replaced by `value` in every Expr (its ops copied). */
std::vector<TileStmt> substitute_in_body(const std::vector<TileStmt> &body, const std::string &var,
                                         const Expr &value);

/** Replaces each loop whose extent is the constant 1 by its body. */
void unroll_single_step_loops(TileProgram &p);

/** Whether load `o` reads the same tile at every step of a loop over
 * `var`, and nothing the loop body `body` stores changes it. */
bool is_loop_invariant_load(const TileOp &o, const std::string &var,
                            const std::vector<TileStmt> &body);

/** Moves each loop-invariant load whose value nothing else in the loop
 * defines, and that nothing in the loop reads before it, to just before
 * the loop (from the innermost loop out). */
void hoist_invariant_loads(TileProgram &p);

}  // namespace tile
}  // namespace internal
}  // namespace loom
