// Buffers are assumed contiguous in their innermost dimension unless a
// BufferParam allows otherwise (outputs always are): stride 1 is
// substituted for that stride, so that vector accesses are dense, and the
// assumption is checked when the pipeline runs.
#pragma once

#include <vector>

#include "lang/Function.h"
#include "loom/Param.h"

namespace loom {
namespace internal {

/** Substitutes stride 1 for the innermost stride of every input buffer
 * assumed contiguous and of every output, and checks it at run time. */
Stmt assume_dense_innermost(const Stmt &s, const std::vector<ParameterPtr> &params,
                            const std::vector<FunctionPtr> &outputs);

}  // namespace internal
}  // namespace loom
