// The loop-to-tile translation: each Func scheduled with tile_program
// becomes one block-level tile program (src/tile/TileIR.h), with the Funcs
// computed at its tile loop, run by a TileKernel node in place of its loop
// nest. It runs after bounds inference, whose loop nest it replaces: the
// nest's bounds (the region computed, the inputs' required regions and
// their checks) are the program's too, and the program's ops come from
// the definitions of the Funcs in it. Then the program's own passes run:
// tensorize, layout assignment and the staging of operands (each in its
// own file here).
#pragma once

#include <map>
#include <string>

#include "loom/IR.h"
#include "loom/Target.h"

namespace loom {
namespace internal {

struct LoweringEnv;

/** Replaces the loop nest of every tile_program Func in s. Throws a
 * CompileError naming the Func, the definition and the reason for a part
 * of it that is not a tile operation. `fixed_sizes` (BufferPromises.h):
 * the buffers' sizes fixed at compile time, constants in the programs (a
 * head dimension fixed to one reduction tile leaves a loop of one step,
 * which goes). */
Stmt translate_tile_programs(const Stmt &s, const LoweringEnv &env, const Target &target,
                             const std::string &pipeline_name,
                             const std::map<std::string, Expr> &fixed_sizes);

}  // namespace internal
}  // namespace loom
