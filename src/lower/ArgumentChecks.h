// Run-time checks of a pipeline's buffer arguments that do not depend on the
// algorithm: the descriptor is not null, its element type and its number of
// dimensions are the ones the pipeline was compiled for, its host pointer
// is not null unless it holds no elements, and its elements lie within the
// reach of 32-bit indices.
//
// These checks make AOT-compiled code (whose callers are C programs, with no
// Loom library on the C++ side to check for them) refuse bad arguments with a
// clear message instead of touching memory. The JIT's CompiledPipeline::call
// checks the same things on the host first, so JIT users see those messages.
// The region and stride checks are added by Lower.cpp (add_buffer_checks,
// assume_dense_innermost); these run before them.
#pragma once

#include <vector>

#include "lang/Function.h"
#include "loom/IR.h"

namespace loom {
namespace internal {

/** Prepends the checks of every buffer argument (the buffer inputs among
 * `params`, then the outputs' buffers) to s. They read the symbols that code
 * generation defines for each buffer b (LoweredFunc.h): b.is_null,
 * b.type.code, b.type.bits, b.type.lanes, b.dimensions, b.dim_is_null,
 * b.host_is_null, b.gpu_memory_alone, b.extent.K and b.stride.K. */
Stmt add_argument_checks(const Stmt &s, const std::vector<ParameterPtr> &params,
                         const std::vector<FunctionPtr> &outputs);

}  // namespace internal
}  // namespace loom
