// Which buffer arguments of a pipeline may share memory, and the run-time
// check that refuses the others.
//
// A pipeline reads its inputs while it writes its outputs, and code
// generation tells LLVM and NVRTC that distinct buffers never overlap. A
// caller who passes overlapping memory as an input and an output (a blur
// into its own input) would get a result computed partly from elements the
// pipeline had already overwritten, silently. One sharing is useful and
// safe: an output computed in place over an input (x = relu(x)), when the
// pipeline reads each element of the input only to compute the same element
// of the output, just before writing it. That is decided here, from the
// loop nest, and the check refuses every other overlap with a message that
// names both buffers.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "lang/Function.h"
#include "loom/IR.h"
#include "lower/ScheduleFunctions.h"

namespace loom {
namespace internal {

/** For each (input, output buffer) pair, by name: why the output cannot be
 * computed in place over the input, or empty where it can. */
using InPlaceVerdicts = std::map<std::pair<std::string, std::string>, std::string>;

/** The verdicts for every input and output of the loop nest `s`, which
 * schedule_functions built from `env`. An output of a single-valued Func f
 * may be computed over an input when every read of that input anywhere in
 * the pipeline is in the value of f's pure definition, at the point that
 * definition writes (inlined Funcs included: f(y, x) = g(in(y, x))
 * qualifies, f(y, x) = in(y, x + 1) does not), no split of that stage
 * recomputes points (ShiftInwards), and its elements have the size of the
 * input's. f's update stages may run on: they read f, not the input. */
InPlaceVerdicts in_place_verdicts(const Stmt &s, const LoweringEnv &env);

/** Prepends to s the checks that no output buffer overlaps an input or
 * another output, on the host or on the GPU, except an input and an output
 * that `verdicts` allows in place and that are the same memory at every
 * coordinate (equal strides, and the output's first element at the input's
 * element of the same coordinates). They read `b.host_pointer`, `b.device_pointer` and the
 * descriptor's `b.min/extent/stride.K` (LoweredFunc.h), so they belong after
 * the argument checks (ArgumentChecks.h), which validate those. */
Stmt check_buffer_aliasing(const Stmt &s, const std::vector<ParameterPtr> &params,
                           const std::vector<FunctionPtr> &outputs,
                           const InPlaceVerdicts &verdicts);

}  // namespace internal
}  // namespace loom
