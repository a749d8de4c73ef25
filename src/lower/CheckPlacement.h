// Refuses schedules that place a Func's storage or computation where a
// consumer cannot see it: every Func read must be read inside its
// realization, after it is produced.
#pragma once

#include "lower/ScheduleFunctions.h"

namespace loom {
namespace internal {

/** Checks that every Func read is read inside its realization, after it
 * is produced (a CompileError naming the Func and its consumer if not). */
void check_placement(const Stmt &s, const LoweringEnv &env);

}  // namespace internal
}  // namespace loom
