// Builds the loop nests of a pipeline from its Funcs and Schedule: inlines the
// Funcs computed inline, turns each stage's definition into loops following
// its splits, fusions and loop order, and injects each remaining Func's
// production and storage at the loop levels its schedule names.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "Function.h"
#include "ScheduleContents.h"

namespace loom {
namespace internal {

/** The Funcs of a pipeline as lowering sees them: definitions with every
 * inlined Func substituted in, and each Func's resolved schedule. */
struct LoweringEnv {
    std::map<std::string, FunctionPtr> funcs;  // inlined Funcs removed
    std::map<std::string, FuncSchedule> schedules;
    std::vector<std::string> order;  // realization order, outputs last
    std::vector<FunctionPtr> outputs;
    bool is_output(const std::string &name) const;
};

/** Resolves schedules, validates placements and inlines. */
LoweringEnv make_lowering_env(const std::vector<FunctionPtr> &outputs, const ScheduleContents &s);

/** The loop nest computing stage `stage` of f. Loop bounds refer to the
 * symbols f.sK.v.min / f.sK.v.max of the stage's pure Vars, which bounds
 * inference defines. */
Stmt build_stage(const FunctionPtr &f, int stage, const StageSchedule &ss);

/** The whole pipeline's loop nest before bounds inference. */
Stmt schedule_functions(const LoweringEnv &env);

/** The name of the loop of variable v in stage k of Func f. */
std::string loop_name(const std::string &func, int stage, const std::string &var);

}  // namespace internal
}  // namespace loom
