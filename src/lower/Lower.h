// The lowering pipeline: Funcs + Schedule -> flat loop IR (a LoweredFunc).
#pragma once

#include <string>
#include <vector>

#include "lang/Function.h"
#include "lang/ScheduleContents.h"
#include "loom/Pipeline.h"
#include "loom/Target.h"
#include "lower/LoweredFunc.h"

namespace loom {
namespace internal {

struct LoweringResult {
    LoweredFunc func;
    std::vector<Argument> arguments;   // public view of func.args
    std::vector<ParameterPtr> params;  // inputs, in argument order
    /** What reduction fusion derived (repairs, how each was accepted). */
    std::vector<std::string> notes;
    double fusion_seconds = 0;  // spent in fuse_reduction_chains
};

/** Runs every lowering pass in order. With LOOM_DEBUG set in the
 * environment, prints the IR after each pass to stderr. */
LoweringResult lower(const std::vector<FunctionPtr> &outputs, const ScheduleContents &schedule,
                     const Target &target, const std::string &name);

/** The loop nest of a lowered statement: loops, allocations, and stores. */
std::string loop_nest_summary(const Stmt &s);

}  // namespace internal
}  // namespace loom
