// Asserts, before any access, that each input buffer covers the region the
// pipeline reads and each output buffer the region it writes, naming the
// buffer, the dimension and both ranges when it does not.
#pragma once

#include <vector>

#include "lower/ScheduleFunctions.h"

namespace loom {
namespace internal {

/** s with the checks of every input's read region and every output's
 * written (and read) region before it. */
Stmt add_buffer_checks(const Stmt &s, const std::vector<ParameterPtr> &inputs,
                       const LoweringEnv &env);

}  // namespace internal
}  // namespace loom
