// Builds the loop nests of a pipeline from its Funcs and Schedule: inlines the
// Funcs computed inline, turns each stage's definition into loops following
// its splits, fusions and loop order, and injects each remaining Func's
// production and storage at the loop levels its schedule names.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "fusion/RolledChain.h"
#include "ir/Util.h"
#include "lang/Function.h"
#include "lang/ScheduleContents.h"

namespace loom {
namespace internal {

/** The Funcs of a pipeline as lowering sees them: definitions with every
 * inlined Func substituted in, and each Func's resolved schedule. */
/** Reductions computed together in one loop (rolling_update): the leader's
 * production runs every member's pure definition and then the leader's
 * update loop nest, into whose `loop_var` loop the other members' steps are
 * placed after the leader's own; the members are realized with the leader. */
struct FusedGroup {
    std::string leader;
    std::vector<std::string> members;   // step order: the leader first, producers last
    std::string loop_var;               // the leader's stage-1 loop where the steps meet
    std::vector<std::string> row_dims;  // the leader's Vars that every member has
    /** Tiles that cannot change the chain (skip_masked_tiles). Every term of
     * every member is its reduction's identity at the points where `mask`
     * is false; `mask` is written in the leader's Vars and `mask_key` for
     * the point of the reduction domain. Tile `tile_loop` (the leader's
     * stage-1 loop over tiles) holds the points [tile_first, tile_last],
     * written in the leader's Vars and `tile_loop`. Undefined mask: none. */
    Expr mask;
    std::string mask_key, tile_loop;
    Expr tile_first, tile_last;
};

struct LoweringEnv {
    std::map<std::string, FunctionPtr> funcs;  // inlined Funcs removed
    std::map<std::string, FuncSchedule> schedules;
    std::vector<std::string> order;  // realization order, outputs last
    std::vector<FunctionPtr> outputs;
    std::vector<FusedGroup> groups;
    /** What reduction fusion derived and how it accepted each repair. */
    std::vector<std::string> fusion_log;
    /** Checks of values the schedule takes at run time (split_k's number of
     * chunks from a Param), made before the pipeline touches a buffer. */
    std::vector<Stmt> schedule_checks;
    /** The elements of a Tuple reduction that reduction fusion made Funcs of
     * their own, each with its siblings. Placed by default, an element that
     * a sibling reads is computed where that sibling is, not inside its
     * loops: a Tuple's elements are computed together. */
    std::map<std::string, std::set<std::string>> tuple_siblings;
    /** The chains rolled inside tile programs: derived by reduction
     * fusion, computed by the tile layer (TranslateToTiles). */
    std::vector<RolledChain> rolled_in_tiles;
    /** The Funcs reduction fusion made, for messages (func_for_message). */
    FuncOrigins origins;
    bool is_output(const std::string &name) const;
    /** The group `name` leads, or null. */
    const FusedGroup *group_led_by(const std::string &name) const;
    /** The group `name` belongs to without leading it, or null. */
    const FusedGroup *group_following(const std::string &name) const;
};

/** Resolves schedules, validates placements and inlines. */
LoweringEnv make_lowering_env(const std::vector<FunctionPtr> &outputs, const ScheduleContents &s);

/** The loop nest computing stage `stage` of f. Loop bounds refer to the
 * symbols f.sK.v.min / f.sK.v.max of the stage's pure Vars, which bounds
 * inference defines. `env` tells which Funcs are computed inside f's loops
 * (a test of its reduction domain that reads one stays at the point). */
Stmt build_stage(const LoweringEnv &env, const FunctionPtr &f, int stage, const StageSchedule &ss);

/** The whole pipeline's loop nest before bounds inference. */
Stmt schedule_functions(const LoweringEnv &env);

/** The name of the loop of variable v in stage k of Func f. */
std::string loop_name(const std::string &func, int stage, const std::string &var);

}  // namespace internal
}  // namespace loom
