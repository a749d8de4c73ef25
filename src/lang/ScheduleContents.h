// The data a Schedule records for each Func and stage. Lowering reads it;
// only the directives in Schedule.cpp write it.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "lang/Function.h"
#include "loom/Schedule.h"

namespace loom {
namespace internal {

/** One loop transformation, applied in order. */
struct Split {
    enum Kind { SplitVar, FuseVars, RenameVar };
    Kind kind;
    std::string old_var, outer, inner;  // fuse: outer/inner -> old_var is the fused
    Expr factor;
    TailStrategy tail = TailStrategy::Auto;
};

/** One loop of a stage's nest. */
struct Dim {
    std::string var;
    ForType for_type = ForType::Serial;
    bool is_rvar = false;
};

struct StageSchedule {
    std::vector<Split> splits;
    std::vector<Dim> dims;          // outermost first
    std::string tensorize;          // tensorize: the instruction's name
    bool tensorize_rounds = false;  // tensorize: a float32 factor may be rounded
};

/** A tile_program directive. */
struct TileProgramSchedule {
    std::string row_var, col_var;      // the stage's Vars made tile axes
    std::string row_block, col_block;  // the loops over the tiles
    std::string row_inner, col_inner;  // the loops within a tile
    std::string outer_loop;            // the outermost loop of the nest
    int rows = 0, cols = 0;
    TileOptions options;
};

/** Where a Func is computed or stored. */
struct LoopLevel {
    enum Kind { Inlined, Root, At };
    Kind kind = Inlined;
    std::string func;  // At: the consumer Func
    std::string var;   // At: the loop (a Var or RVar name of the consumer)
    static LoopLevel root() { return {Root, "", ""}; }
    static LoopLevel inlined() { return {Inlined, "", ""}; }
    bool is_root() const { return kind == Root; }
    bool is_inlined() const { return kind == Inlined; }
    std::string to_string() const {
        return kind == Root ? "root" : kind == Inlined ? "inline" : func + "." + var;
    }
};

/** A bound or bound_extent directive: the Func is computed over
 * [min, min + extent) of Var `var` (min undefined: from bounds inference). */
struct DeclaredBound {
    std::string var;
    Expr min, extent;
};

struct FuncSchedule {
    FunctionPtr func;
    LoopLevel compute_level, store_level;
    bool compute_level_set = false, store_level_set = false;
    MemoryType memory_type = MemoryType::Auto;                // store_in
    int gpu_blocks_per_sm = 0;                                // gpu_blocks_per_sm; 0: not asked
    std::vector<StageSchedule> stages;                        // 0: pure definition; i+1: update i
    std::vector<DeclaredBound> bounds;                        // bound / bound_extent, one per Var
    std::shared_ptr<const TileProgramSchedule> tile_program;  // null: none
};

/** A rolling_update or split_k directive. */
struct FusionDirective {
    enum Kind { RollingUpdate, SplitK };
    Kind kind;
    std::string func;  // the user's Func X
    std::string
        reduction;  // the Function whose update reduces over rvar (X or its inline reduction)
    std::string rvar;
    Expr chunks;                                   // split_k: how many chunks
    std::string chunk_var;                         // split_k: the Var indexing them
    std::string partial;                           // split_k: the name of X's partial Func
    ChunkLayout layout = ChunkLayout::Contiguous;  // split_k: which points a chunk rolls
};

struct ScheduleContents {
    std::map<std::string, FuncSchedule> funcs;
    std::vector<FusionDirective> fusions;
    std::map<std::string, Func> consumers;  // keeps Funcs named in compute_at alive
    /** Schedule::in's wrapper Funcs, by the name of the input they wrap. */
    std::map<std::string, FunctionPtr> input_wrappers;
};

/** The default loop nest of stage `stage` of f: pure definition: its Vars;
 * update: its pure Vars outside its RVars (RVars innermost, in RDom order). */
StageSchedule default_stage_schedule(const FunctionPtr &f, int stage);

/** f's schedule, or the default one (inlined if pure, else computed at the
 * innermost loop of its consumer) if the Schedule does not mention f. */
FuncSchedule get_func_schedule(const ScheduleContents &s, const FunctionPtr &f);

}  // namespace internal
}  // namespace loom
