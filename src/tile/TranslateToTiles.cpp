// The loop-to-tile translation (see the header).
#include "tile/TranslateToTiles.h"

#include <map>
#include <set>

#include "arith/Bounds.h"
#include "arith/Simplify.h"
#include "fusion/RolledChain.h"
#include "ir/IREquality.h"
#include "ir/IRMutator.h"
#include "ir/IRPrinter.h"
#include "ir/IRVisitor.h"
#include "ir/Substitute.h"
#include "ir/Util.h"
#include "lang/ScheduleContents.h"
#include "loom/Error.h"
#include "loom/IROperator.h"
#include "lower/ScheduleFunctions.h"
#include "tile/AssignLayouts.h"
#include "tile/EliminateCommonTiles.h"
#include "tile/LoopInvariants.h"
#include "tile/StageOperands.h"
#include "tile/TensorInstructions.h"
#include "tile/TileKernel.h"
#include "tile/TileToLoops.h"

namespace loom {
namespace internal {

using namespace tile;

namespace {

Expr int_var(const std::string &name) { return Variable::make(Int(32), name); }

TileType register_tile(Type elem, std::vector<int> shape) {
    TileType t;
    t.elem = elem;
    t.shape = std::move(shape);
    return t;
}

/** The program's index Exprs simplified, and identity axes left implicit,
 * for the reader of the printed program as much as for the code. */
void simplify_program(std::vector<TileStmt> &body) {
    for (TileStmt &s : body) {
        if (s.loop) {
            s.loop->min = simplify(s.loop->min);
            s.loop->extent = simplify(s.loop->extent);
            simplify_program(s.loop->body);
            continue;
        }
        TileOp &o = *s.op;
        for (Expr &e : o.origin) e = simplify(e);
        for (Expr &e : o.bounds) e = simplify(e);
        if (o.slot.defined()) o.slot = simplify(o.slot);
        if (o.fn.defined()) o.fn = simplify(o.fn);
        bool identity = true;
        for (size_t d = 0; d < o.axes.size(); d++) identity &= o.axes[d] == int(d);
        if (identity && o.axes.size() == o.type.shape.size()) o.axes.clear();
        if (identity && o.kind == TileOpKind::Store && o.axes.size() == 2) o.axes.clear();
    }
}

/** Where a Var of a definition lies in the program: along a tile axis
 * from `start` (the coordinate of tile index 0) up to `end` (exclusive),
 * or, for axis -1, at the single coordinate `start`. Program Exprs. */
struct Axis {
    int axis = -1;
    Expr start, end;
    int size = 1;  // the tile's extent along its axis
    /** Grouped rows (TileOptions::group_rows): the first row of the
     * program's group, where a contraction's other operand reads it. */
    Expr group_start;
};
using Axes = std::map<std::string, Axis>;

/** One tile program in the making, for Func `out`. */
class ProgramBuilder {
  public:
    ProgramBuilder(const FunctionPtr &out, const TileProgramSchedule &ts, const LoweringEnv &env,
                   const std::string &kernel_name, bool gpu,
                   const std::map<std::string, Expr> &fixed_sizes)
        : out(out), ts(ts), env(env), gpu(gpu), fixed_sizes(fixed_sizes) {
        program.name = kernel_name;
        program.num_warps = ts.options.warps_m * ts.options.warps_n;
    }

    Stmt build() {
        // The grid: the tiles along the columns and the rows, then the
        // stage's other Var, each a GPU block index.
        const std::string stage = out->name + ".s0.";
        program.grid = {"tile_col", "tile_row"};
        grid_extents = {int_var(stage + ts.col_block + ".loop_extent"),
                        int_var(stage + ts.row_block + ".loop_extent")};
        Axes axes;
        // The stage's other Vars (batch, heads) share one grid dimension,
        // the last of them fastest.
        std::vector<std::string> batch;
        for (const std::string &v : out->args) {
            if (v != ts.row_var && v != ts.col_var) batch.push_back(v);
        }
        Expr batch_stride = 1;
        for (size_t k = batch.size(); k-- > 0;) {
            const std::string &v = batch[k];
            const Expr extent = host_scalar(stage + v + ".loop_extent");
            Expr at = int_var("tile_batch");
            if (batch.size() > 1) at = (at / batch_stride) % extent;
            axes[v] = {-1, host_scalar(stage + v + ".loop_min") + at, Expr()};
            batch_stride = batch_stride * extent;
        }
        if (!batch.empty()) {
            program.grid.push_back("tile_batch");
            Expr total = 1;
            for (const std::string &v : batch) total = total * int_var(stage + v + ".loop_extent");
            grid_extents.push_back(total);
        }
        for (const std::string &v : out->args) {
            const Expr lo = host_scalar(stage + v + ".loop_min");
            const Expr hi = host_scalar(stage + v + ".loop_max") + 1;
            if (v == ts.row_var) {
                axes[v] = ts.options.grouped_rows
                              ? grouped_row_axis(lo, hi)
                              : Axis{0, lo + int_var("tile_row") * ts.rows, hi, ts.rows};
                if (ts.options.grouped_rows) {
                    program.live_rows = clamp(axes[v].end - axes[v].start, 0, ts.rows);
                }
                axis_min[0] = int_var(stage + v + ".loop_min");
                axis_tiles[0] = grid_extents[1];
            } else if (v == ts.col_var) {
                axes[v] = {1, lo + int_var("tile_col") * ts.cols, hi, ts.cols};
                axis_min[1] = int_var(stage + v + ".loop_min");
                axis_tiles[1] = grid_extents[0];
            }
        }
        user_assert(out->output_types.size() == 1)
            << "Func " << out->name << " is a tile program and has " << out->output_types.size()
            << " values (a Tuple): tile programs compute one. Make a Func of each.";
        members = funcs_in_program();
        find_rolled_chain();
        assign_axes(out, axes);
        assign_stored_axes();
        find_per_tile_members();
        for (const std::string &name : env.order) {
            if (members.count(name) && !per_tile.count(name)) translate_func(env.funcs.at(name));
        }
        store_output();
        store_stored_members();
        bind_row_group();
        auto contents = std::make_shared<TileKernelContents>();
        contents->buffers = buffers;
        eliminate_common_tiles(program);
        simplify_program(program.body);
        if (program.live_rows.defined()) program.live_rows = simplify(program.live_rows);
        unroll_single_step_loops(program);
        Stmt kernel;
        if (!gpu) {
            hoist_invariant_loads(program);
            simplify_program(program.body);
            contents->program = program;
            kernel = tile_program_to_loops(*contents, grid_extents, scalar_names, scalar_values);
        } else {
            assign_layouts(program, warps(), instruction);
            stage_operands(program, ts.options.stages);
            simplify_program(program.body);
            contents->program = program;
            kernel = TileKernel::make(contents, grid_extents, scalar_names, scalar_values);
        }
        checks.push_back(kernel);
        return Block::make(checks);
    }

  private:
    const FunctionPtr &out;
    const TileProgramSchedule &ts;
    const LoweringEnv &env;
    const bool gpu;
    const std::map<std::string, Expr> &fixed_sizes;
    TileProgram program;
    std::vector<Expr> grid_extents;
    std::vector<std::string> scalar_names;
    std::vector<Expr> scalar_values;
    std::vector<TileBuffer> buffers;
    std::set<std::string> members;
    std::map<std::string, Axes> func_axes;     // each member's Vars
    std::map<std::string, std::string> value;  // each member's tile value
    const TensorInstruction *instruction = nullptr;
    int next_value = 0;
    /** The program axis of each member Func of one dimension (a row's or
     * a column's values), whose tile is 1-D. */
    std::map<std::string, int> program_axis;
    /** What must hold at run time for the program to compute the
     * pipeline (a reduction fits its tile), checked before it. */
    std::vector<Stmt> checks;
    /** The host's first coordinate of each program axis and its tile
     * count. */
    Expr axis_min[2], axis_tiles[2];
    /** The chain of reductions the program rolls over tiles of its RVar
     * (rolling_update of a member), if any; the RVar's axis in the loop
     * over those tiles; the members computed per tile (read at the RVar);
     * and the rolled members whose pure values are still to come. */
    const RolledChain *rolled = nullptr;
    Axis key_axis;
    Expr key_extent;
    std::string key_loop;
    int key_tile = 0;
    std::set<std::string> per_tile;
    size_t rolled_pending = 0;
    /** Grouped rows: the program scalar of a group's size; the divisor E
     * of the contractions' reads at row / E, and whether one reads the rows
     * otherwise (groups of one). */
    const std::string row_group_name = "row_group";
    Expr group_divisor;
    bool group_reads_other = false;

    WarpGrid warps() const { return {ts.options.warps_m, ts.options.warps_n}; }

    std::vector<int> tile_shape() const { return {ts.rows, ts.cols}; }

    /** A program scalar standing for a host Expr; named `name`. */
    Expr bind_scalar(const std::string &name, const Expr &host) {
        // A size the buffers fix is a constant of the program.
        const Expr fixed = simplify(substitute(fixed_sizes, host));
        if (is_const(fixed)) return fixed;
        for (size_t i = 0; i < scalar_names.size(); i++) {
            if (scalar_names[i] == name) return Variable::make(host.type(), name);
        }
        scalar_names.push_back(name);
        scalar_values.push_back(host);
        return Variable::make(host.type(), name);
    }
    Expr host_scalar(const std::string &name) { return bind_scalar(name, int_var(name)); }

    std::string fresh(const std::string &base) {
        return c_identifier(base) + "_" + std::to_string(next_value++);
    }

    std::set<std::string> funcs_in_program() const {
        std::set<std::string> in = {out->name};
        for (const auto &[name, fs] : env.schedules) {
            if (name == out->name || !env.funcs.count(name)) continue;
            const LoopLevel &l = fs.compute_level;
            if (l.kind != LoopLevel::At || l.func != out->name) continue;
            user_assert(l.var == ts.col_block)
                << "Func " << name << " is computed at loop " << l.var << " of Func " << out->name
                << ", a tile program: the Funcs of a tile program are computed at its innermost "
                   "tile loop, "
                << ts.col_block << " (compute_at(" << out->name << ", " << ts.col_block << ")).";
            in.insert(name);
        }
        return in;
    }

    /** Gives each member Func the axes of its Vars, from the calls to it
     * in f's definitions (f's own axes known). */
    void assign_axes(const FunctionPtr &f, const Axes &own) {
        func_axes[f->name] = own;
        struct Calls : IRVisitor {
            std::vector<const Call *> found;
            using IRVisitor::visit;
            void visit(const Call *op) override {
                if (op->call_type == Call::Func) found.push_back(op);
                IRVisitor::visit(op);
            }
        } calls;
        for (const Expr &v : f->init.values) v.accept(&calls);
        const size_t in_init = calls.found.size();
        for (const Definition &d : f->updates) {
            for (const Expr &v : d.values) v.accept(&calls);
        }
        const Axes in_update = with_reduction_axis(f, own);
        for (size_t i = 0; i < calls.found.size(); i++) {
            const Call *c = calls.found[i];
            const Axes &axes = i < in_init ? own : in_update;
            if (!members.count(c->name) || c->name == f->name || func_axes.count(c->name)) continue;
            const FunctionPtr &g = env.funcs.at(c->name);
            Axes ga;
            for (size_t d = 0; d < c->args.size(); d++) {
                const Variable *v = c->args[d].as<Variable>();
                user_assert(v && axes.count(v->name))
                    << "Func " << f->name << " reads " << to_string(Expr(c))
                    << " in its tile program: a Func computed in a tile program is read at the "
                       "program's own coordinates, one Var of "
                    << f->name << " per dimension (" << to_string(c->args[d])
                    << " is not one). Compute " << c->name << " outside the tile program.";
                ga[g->args[d]] = axes.at(v->name);
            }
            assign_axes(g, ga);
        }
    }

    /** The tile value of f's definitions, in order: the pure definition,
     * then its contraction. */
    void translate_func(const FunctionPtr &f) {
        user_assert(func_axes.count(f->name))
            << "Func " << f->name << " is computed in the tile program of " << out->name
            << ", but nothing there reads it. Compute it elsewhere.";
        user_assert(f->output_types.size() == 1)
            << "Func " << f->name << " has a Tuple of values; tile programs compute one.";
        const Axes &axes = func_axes.at(f->name);
        int on_axes = 0, last = -1;
        for (const auto &[v, a] : axes) {
            if (a.axis >= 0) on_axes++, last = a.axis;
        }
        user_assert(on_axes > 0) << "Func " << f->name << " is computed in the tile program of "
                                 << out->name << " but depends on neither of its tile coordinates ("
                                 << ts.row_var << ", " << ts.col_var
                                 << "). Compute it outside the program.";
        if (on_axes == 1) program_axis[f->name] = last;
        value[f->name] = translate_expr(f->init.values[0], local_axes(f, axes), f->name,
                                        "its definition", shape_of(f));
        user_assert(f->updates.size() <= 1)
            << "Func " << f->name << " has " << f->updates.size()
            << " updates; in a tile program a Func has one at most, a contraction or a "
               "reduction along a row or column.";
        if (rolled && rolled->member(f->name)) {
            // Its update is the rolled loop's, once every member has its
            // starting value.
            if (--rolled_pending == 0) translate_rolled_loop();
            return;
        }
        if (f->updates.size() == 1) {
            if (program_axis.count(f->name)) {
                translate_reduction(f, axes);
            } else {
                translate_contraction(f, axes);
            }
        }
    }

    int axis_size(int axis) const { return axis == 0 ? ts.rows : ts.cols; }

    /** The rows of grouped programs: groups of G rows from row 0 (G the
     * program scalar row_group, found while translating), each in
     * ceil(G / rows) tiles, the rows of a tile past its group's end (or
     * the axis's) idle. From `lo` to `hi` (exclusive). */
    Axis grouped_row_axis(const Expr &lo, const Expr &hi) const {
        const Expr g = Variable::make(Int(32), row_group_name);
        const Expr tiles_per_group = (g + (ts.rows - 1)) / ts.rows;
        const Expr t = int_var("tile_row");
        Axis a;
        a.axis = 0;
        a.size = ts.rows;
        a.group_start = (lo / g + t / tiles_per_group) * g;
        a.start = max(a.group_start, lo) + (t % tiles_per_group) * ts.rows;
        a.end = min(a.group_start + g, hi);
        return a;
    }

    /** A contraction's other operand `b` reads the grouped row Var `row`:
     * at row / E (a group of E rows reads one value), or otherwise (a group
     * of one). */
    void note_group_read(const Expr &b, const std::string &row) {
        struct Reads : IRVisitor {
            std::string row;
            const Axes *axes;
            std::vector<Expr> divisors;
            bool other = false;
            using IRVisitor::visit;
            void visit(const Div *op) override {
                const Variable *v = op->a.as<Variable>();
                bool of_axes = false;
                for (const auto &[name, a] : *axes) of_axes |= expr_uses_var(op->b, name);
                if (v && v->name == row && !of_axes) {
                    divisors.push_back(op->b);
                    return;
                }
                IRVisitor::visit(op);
            }
            void visit(const Variable *op) override { other |= op->name == row; }
        } reads;
        reads.row = row;
        const Axes &axes = func_axes.at(out->name);
        reads.axes = &axes;
        b.accept(&reads);
        group_reads_other |= reads.other;
        for (const Expr &d : reads.divisors) {
            if (!group_divisor.defined()) group_divisor = d;
            else if (!equal(group_divisor, d)) group_reads_other = true;
        }
    }

    /** Binds row_group, the size of grouped rows' groups, now that the
     * contractions have said how they read the rows, and gives the grid
     * its row tiles. */
    void bind_row_group() {
        if (!ts.options.grouped_rows) return;
        user_assert(group_divisor.defined() || group_reads_other)
            << "Func " << out->name << "'s tile program groups its rows (group_rows()), but no "
            << "contraction in it has an operand that reads " << ts.row_var
            << ", so there is nothing to group them by. Drop group_rows().";
        const Expr g = group_reads_other ? Expr(1) : group_divisor;
        scalar_names.push_back(row_group_name);
        scalar_values.push_back(g);
        if (!is_const(g)) {
            checks.push_back(AssertStmt::make(
                g >= 1,
                error_message(
                    {StringImm::make("Func " + out->name + "'s tile program groups its rows by " +
                                     to_string(g) + ", which is "),
                     g, StringImm::make(" here: a group has at least one row.")})));
        }
        const std::string stage = out->name + ".s0." + ts.row_var;
        const Expr lo = int_var(stage + ".loop_min"), last = int_var(stage + ".loop_max");
        grid_extents[1] = (last / g - lo / g + 1) * ((g + (ts.rows - 1)) / ts.rows);
        axis_tiles[0] = grid_extents[1];
    }

    /** Whether a contraction's operands a (the rows') and b (the columns')
     * come the wrong way round: a reads the columns, or b the rows (which
     * it may read, as its group allows, when they are grouped). */
    static bool swapped_operands(const Expr &a, const Expr &b, const std::string &row,
                                 const std::string &col, bool rows_grouped) {
        return expr_uses_var(a, col) || (!rows_grouped && expr_uses_var(b, row));
    }

    /** Whether f's row Var is grouped (its Axis in `axes`). */
    static bool grouped(const Axes &axes, const std::string &row) {
        auto it = axes.find(row);
        return it != axes.end() && it->second.group_start.defined();
    }

    /** A contraction's other operand, b, over `axes`: at its group's first
     * row if the rows are grouped (b reads them as the group allows; noted
     * for the group's size), else off the rows (b does not read them). */
    void place_other_operand(const Expr &b, Axes &b_axes, const std::string &row) {
        if (!grouped(b_axes, row)) {
            b_axes[row].axis = -1;
            return;
        }
        note_group_read(b, row);
        b_axes[row].axis = -1;
        b_axes[row].start = b_axes[row].group_start;
    }

    /** f's axes and, for a Func of one tile coordinate reduced over one
     * RVar, the RVar's: along the other axis, over its range. */
    Axes with_reduction_axis(const FunctionPtr &f, Axes axes) {
        if (rolled && rolled->member(f->name)) {
            axes[rolled->rvar] = key_axis;
            return axes;
        }
        int on_axes = 0, a = -1;
        for (const auto &[v, ax] : axes) {
            if (ax.axis >= 0) on_axes++, a = ax.axis;
        }
        if (on_axes != 1 || f->updates.size() != 1 || !f->updates[0].rdom ||
            f->updates[0].rdom->domain.size() != 1) {
            return axes;  // not a reduction (translation says why if it must be)
        }
        const ReductionVariable &rv = f->updates[0].rdom->domain[0];
        const Expr r_min = bind_scalar(f->name + ".r_min", rv.min);
        axes[rv.var] = {1 - a, r_min, r_min + bind_scalar(f->name + ".r_extent", rv.extent)};
        return axes;
    }

    /** A member's tile: the program's, or for a Func of one tile
     * coordinate, a 1-D tile along it. */
    std::vector<int> shape_of(const FunctionPtr &f) const {
        auto a = program_axis.find(f->name);
        if (a != program_axis.end()) return {axis_size(a->second)};
        std::vector<int> shape = tile_shape();
        auto axes = func_axes.find(f->name);
        if (axes == func_axes.end()) return shape;
        for (const auto &[v, ax] : axes->second) {
            if (ax.axis >= 0) shape[ax.axis] = ax.size;
        }
        return shape;
    }

    /** A member's Vars on its own tile's axes: a 1-D tile's one axis is
     * its 0. */
    Axes local_axes(const FunctionPtr &f, Axes axes) const {
        if (!program_axis.count(f->name)) return axes;
        for (auto &[v, a] : axes) {
            if (a.axis >= 0) a.axis = 0;
        }
        return axes;
    }

    /** The one RVar of f's update, which writes at f's own Vars. */
    static const ReductionVariable &single_reduction_variable(const FunctionPtr &f,
                                                              const std::string &where) {
        const Definition &u = f->updates[0];
        for (size_t d = 0; d < u.args.size(); d++) {
            const Variable *v = u.args[d].as<Variable>();
            user_assert(v && v->name == f->args[d])
                << where << " writes " << f->name << " at " << to_string(u.args[d])
                << ": an update in a tile program writes at the Func's own Vars.";
        }
        user_assert(u.rdom && u.rdom->domain.size() == 1 && !u.rdom->predicate.defined())
            << where
            << " is not over one reduction variable without a where() condition, which is "
               "what a tile program's contractions and reductions are over.";
        return u.rdom->domain[0];
    }

    /** The chain a member's rolling_update makes the program roll, its
     * key tile (the split of its RVar) and the loop over those tiles. */
    void find_rolled_chain() {
        for (const RolledChain &c : env.rolled_in_tiles) {
            if (!members.count(c.leader)) continue;
            user_assert(!rolled) << "Func " << out->name << "'s tile program rolls two chains ("
                                 << rolled->leader << " and " << c.leader
                                 << "); a tile program rolls one.";
            rolled = &c;
        }
        if (!rolled) return;
        const std::string what = "rolling_update(" + rolled->leader + ", " + rolled->rvar + ")";
        const FuncSchedule &fs = env.schedules.at(rolled->leader);
        if (fs.stages.size() > 1) {
            for (const Split &sp : fs.stages[1].splits) {
                const int64_t *k = as_const_int(sp.factor);
                if (sp.kind == Split::SplitVar && sp.old_var == rolled->rvar && k) {
                    key_tile = int(*k);
                }
            }
        }
        user_assert(key_tile > 0) << what << " is rolled by the tile program of " << out->name
                                  << ", which rolls over tiles of " << rolled->rvar
                                  << ": split it into tiles of a "
                                  << "constant size (rolling_update(...).split(" << rolled->rvar
                                  << ", ro, ri, 64)).";
        user_assert((key_tile & (key_tile - 1)) == 0)
            << what << ": tiles of " << key_tile << " points of " << rolled->rvar
            << "; a tile program's tiles are powers of two.";
        key_loop = c_identifier(rolled->leader) + "_rt";
        const Expr r_min = bind_scalar(rolled->leader + ".r_min", rolled->r_min);
        const Expr r_extent = bind_scalar(rolled->leader + ".r_extent", rolled->r_extent);
        key_axis = {1, r_min + int_var(key_loop) * key_tile, r_min + r_extent, key_tile};
        key_extent = r_extent;
        rolled_pending = rolled->members.size();
    }

    /** Members a rolled member reads at the RVar: computed in each tile. */
    void find_per_tile_members() {
        if (!rolled) return;
        for (const RolledMember &m : rolled->members) {
            visit_calls(m.term, [&](const Call *c) {
                if (c->call_type != Call::Func || !members.count(c->name) ||
                    rolled->member(c->name)) {
                    return;
                }
                for (const Expr &arg : c->args) {
                    if (expr_uses_var(arg, rolled->rvar)) per_tile.insert(c->name);
                }
            });
        }
    }

    static const char *reduction_name(ReduceOp op) {
        switch (op) {
        case ReduceOp::Add: return "sum";
        case ReduceOp::Max: return "max";
        case ReduceOp::Min: return "min";
        default: return "";
        }
    }

    /** The call to `func` in e (a producer's, at the member's Vars). */
    static Expr call_in(const Expr &e, const std::string &func) {
        Expr found;
        visit_calls(e, [&](const Call *c) {
            if (c->call_type == Call::Func && c->name == func && !found.defined()) found = c;
        });
        return found;
    }

    /** A 1-D value over a 2-D tile of `shape`, repeated along `axis`; the
     * result named after `name`. */
    std::string broadcast(const std::string &v, Type t, const std::vector<int> &shape, int axis,
                          const std::string &name) {
        TileOp bc = make_op(TileOpKind::Broadcast, fresh(name), register_tile(t, shape), {v});
        bc.axis = axis;
        body->push_back(op_stmt(bc));
        return bc.result;
    }

    /** m's value before this tile repaired for its producers' moves:
     * h(t, old, new), or t where no producer moved or one was still its
     * identity (nothing reduced yet, so t is the identity too). In value
     * `into`. */
    void repair(const RolledMember &m, const std::vector<int> &shape,
                const std::map<std::string, std::string> &before, const std::string &into) {
        const Type t = env.funcs.at(m.name)->output_types[0];
        // The producers' old and new row values, and when the repair is
        // the identity: no producer moved, or one was still its identity
        // (nothing reduced yet, so t is the identity too).
        std::vector<std::string> rows;
        std::vector<Expr> olds, news;
        Expr unchanged = const_true(), fresh_producer = const_false();
        for (const ProducerSlot &slot : m.slots) {
            rows.push_back(before.at(slot.func));
            olds.push_back(Variable::make(slot.type, "_" + std::to_string(rows.size() - 1)));
            rows.push_back(value.at(slot.func));
            news.push_back(Variable::make(slot.type, "_" + std::to_string(rows.size() - 1)));
            unchanged = unchanged && olds.back() == news.back();
            if (slot.op == ReduceOp::Max || slot.op == ReduceOp::Min) {
                fresh_producer =
                    fresh_producer || olds.back() == reduce_identity(slot.op, slot.type);
            }
        }
        const Expr keep = simplify(unchanged || fresh_producer);
        if (m.repair.kind == Repair::Scale || m.repair.kind == Repair::Shift) {
            // The factor (offset) depends on the producers alone: once per
            // row, then applied to the row's elements.
            const bool scale = m.repair.kind == Repair::Scale;
            const Expr one = m.repair.apply(make_const(t, scale ? 1 : 0), m.slots, olds, news);
            TileOp f = make_op(TileOpKind::Map, fresh(m.name),
                               register_tile(t, shape_of(env.funcs.at(m.slots[0].func))), rows);
            f.fn = simplify(select(keep, make_const(t, scale ? 1 : 0), one));
            body->push_back(op_stmt(f));
            std::string factor = f.result;
            if (shape.size() == 2) factor = broadcast(factor, t, shape, 1, factor);
            TileOp apply = make_op(TileOpKind::Map, into, register_tile(t, shape),
                                   {before.at(m.name), factor});
            const Expr t0 = Variable::make(t, "_0"), t1 = Variable::make(t, "_1");
            apply.fn = scale ? t0 * t1 : t0 + t1;
            body->push_back(op_stmt(apply));
            return;
        }
        // No repair: the value goes on as it is.
        internal_assert(m.repair.kind == Repair::None)
            << "a rolled repair of kind " << m.repair.kind;
        TileOp copy = make_op(TileOpKind::Map, into, register_tile(t, shape), {before.at(m.name)});
        copy.fn = Variable::make(t, "_0");
        body->push_back(op_stmt(copy));
    }

    /** The rolled chain's loop: per tile of the RVar, the members computed
     * per tile, then each member in turn (producers first): its tile's
     * partial (a reduction along the tile's keys, or for a member of both
     * tile coordinates a dot over them) combined with its value repaired
     * for its producers' moves. Producers take their new values at the
     * end of the step, so that their dependents see both. */
    void translate_rolled_loop() {
        auto loop = std::make_shared<TileLoop>();
        loop->var = key_loop;
        const Expr all_tiles = (key_extent + (key_tile - 1)) / key_tile;
        loop->min = 0;
        loop->extent = all_tiles;
        if (!rolled->chunk_var.empty()) {
            // Chunk c: its tiles of the whole range (none past the end).
            const Expr chunks = bind_scalar(rolled->leader + ".chunks", rolled->chunks);
            const Expr per_chunk = (all_tiles + chunks - 1) / chunks;
            const Expr c = func_axes.at(rolled->leader).at(rolled->chunk_var).start;
            loop->min = min(c * per_chunk, all_tiles);
            loop->extent = clamp(all_tiles - c * per_chunk, 0, per_chunk);
        }
        const MaskedTiles tiles = skip_masked_tiles(loop.get());
        std::vector<TileStmt> *saved = body;
        body = &loop->body;
        translate_rolled_step(false, Expr());
        body = saved;
        // On the GPU each loop stages its own operands; a step with a loop
        // inside (over a head dimension of several tiles) would stage them
        // in shared memory of its own per copy of the step.
        bool inner_loop = false;
        for (const TileStmt &st : loop->body) {
            inner_loop |= st.loop && !is_const_one(simplify(st.loop->extent));
        }
        if (!tiles.split || (gpu && inner_loop)) {
            body->push_back({nullptr, loop});
            return;
        }
        // The tiles wholly inside the mask (and the keys) run without it;
        // those at its edges test it per element. The step translated
        // above serves the first edge loop.
        const Expr first = loop->min, end = loop->min + loop->extent;
        const Expr full_first = tiles.full_first, full_end = tiles.full_end;
        std::vector<TileStmt> edge_step = std::move(loop->body);
        auto add_loop = [&](const std::string &var, const Expr &lo, const Expr &hi, bool inside) {
            const Expr extent = simplify(max(hi - lo, 0));
            if (is_const_zero(extent)) return;
            auto l = std::make_shared<TileLoop>();
            l->var = key_loop;
            l->min = lo;
            l->extent = extent;
            l->few_steps = !inside;
            if (!inside && !edge_step.empty()) {
                l->body = std::move(edge_step);
                edge_step.clear();
            } else {
                body = &l->body;
                translate_rolled_step(inside, tiles.mask);
                body = saved;
            }
            if (var != key_loop) {
                l->body = substitute_in_body(l->body, key_loop, int_var(var));
                l->var = var;
            }
            body->push_back({nullptr, l});
        };
        add_loop(key_loop, first, full_first, false);
        add_loop(key_loop + "_inside", full_first, full_end, true);
        add_loop(key_loop + "_edge", full_end, end, false);
    }

    /** One step of the rolled loop, into `body`. `inside`: the step is of
     * a tile wholly inside the chain's mask (if any) and inside the keys,
     * so the mask is true there and the reductions run over the whole
     * tile. */
    void translate_rolled_step(bool inside, const Expr &mask) {
        const std::string what = "rolling_update(" + rolled->leader + ", " + rolled->rvar + ")";
        for (const std::string &name : env.order) {
            if (per_tile.count(name)) translate_func(env.funcs.at(name));
        }
        std::set<std::string> producers;
        for (const RolledMember &m : rolled->members) {
            for (const ProducerSlot &slot : m.slots) producers.insert(slot.func);
        }
        const std::map<std::string, std::string> before = value;
        const Expr keys_left = key_extent - int_var(key_loop) * key_tile;
        for (const RolledMember &m : rolled->members) {
            const FunctionPtr &f = env.funcs.at(m.name);
            const Type t = f->output_types[0];
            const Axes axes = with_reduction_axis(f, func_axes.at(m.name));
            const std::vector<int> shape = shape_of(f);
            const std::string result = producers.count(m.name) ? fresh(m.name) : before.at(m.name);
            // Terms where a max or min producer is still its identity
            // (nothing reduced yet: masked so far) are the identity.
            Expr term = m.term;
            if (inside && mask.defined()) term = simplify(substitute(mask, const_true(), term));
            Expr idle;
            for (const ProducerSlot &slot : m.slots) {
                if (slot.op != ReduceOp::Max && slot.op != ReduceOp::Min) continue;
                const Expr p = call_in(term, slot.func);
                if (!p.defined()) continue;
                const Expr fresh_producer = p == reduce_identity(slot.op, slot.type);
                idle = idle.defined() ? idle || fresh_producer : fresh_producer;
            }
            // So are the terms past the keys' end, which a reduction leaves
            // out by its bounds but a dot would multiply: a factor there may
            // be infinite (exp(0 - m) with every score below -88) even where
            // the other is the zero padding. Guarded too: the terms that read
            // producers, so that those a dot and a reduction share (P, in
            // attention) stay one tile.
            const bool dot = !program_axis.count(m.name);
            if (!inside && (dot || !m.slots.empty())) {
                const Expr past =
                    Variable::make(Int(32), rolled->rvar) >= rolled->r_min + rolled->r_extent;
                idle = idle.defined() ? idle || past : past;
            }
            if (idle.defined()) term = select(idle, reduce_identity(m.op, term.type()), term);
            if (program_axis.count(m.name)) {
                user_assert(program_axis.at(m.name) == 0 && *reduction_name(m.op))
                    << what << ": " << m.name << " is rolled by the tile program of " << out->name
                    << " along its rows, by a sum, a maximum or a minimum.";
                const std::string x =
                    translate_expr(term, axes, m.name, "its rolled update", {shape[0], key_tile});
                TileOp reduce =
                    make_op(TileOpKind::Reduce, fresh(m.name), register_tile(t, shape), {x});
                reduce.axis = 1;
                reduce.reduction = reduction_name(m.op);
                if (!inside) reduce.bounds = {keys_left};
                body->push_back(op_stmt(reduce));
                std::string repaired = before.at(m.name);
                if (!m.slots.empty()) {
                    repaired = fresh(m.name);
                    repair(m, shape, before, repaired);
                }
                TileOp combine =
                    make_op(TileOpKind::Map, result, reduce.type, {repaired, reduce.result});
                const Expr p0 = Variable::make(t, "_0"), p1 = Variable::make(t, "_1");
                combine.fn = reduce_combine(m.op, p0, p1);
                body->push_back(op_stmt(combine));
            } else {
                translate_rolled_contraction(m, f, axes, shape, term, before, result);
            }
            value[m.name] = result;
        }
        // The producers' new values become their running values.
        for (const std::string &p : producers) {
            const Type t = env.funcs.at(p)->output_types[0];
            TileOp commit = make_op(TileOpKind::Map, before.at(p),
                                    register_tile(t, shape_of(env.funcs.at(p))), {value.at(p)});
            commit.fn = Variable::make(t, "_0");
            body->push_back(op_stmt(commit));
            value[p] = before.at(p);
        }
    }

    /** The rolled loop narrowed to the tiles where the chain's mask may
     * hold for some row of the program: where every member's term is its
     * identity wherever the mask is false (a max producer's term
     * select(mask, s, -inf), and its dependents), the tiles wholly outside
     * it (causal: past the diagonal; a window: before and past it) change
     * nothing. The mask's comparisons of the RVar with an expression of
     * the row bound the keys it allows; the loop runs from the first tile
     * holding such a key to the last. */
    struct MaskedTiles {
        /** Whether [full_first, full_end) is known: the chain has no mask,
         * or one that is a conjunction of comparisons of the RVar with
         * expressions of the row (`mask`). */
        bool split = false;
        Expr mask;
        /** The tiles [full_first, full_end) lie wholly inside the mask for
         * every row of the program, and inside the keys. */
        Expr full_first, full_end;
    };

    MaskedTiles skip_masked_tiles(TileLoop *loop) {
        MaskedTiles result;
        Expr mask;
        const RolledMember *masked = nullptr;
        for (const RolledMember &m : rolled->members) {
            const Select *sel = m.term.as<Select>();
            if (m.op == ReduceOp::Max && m.slots.empty() && sel &&
                equal(sel->false_value, reduce_identity(ReduceOp::Max, m.term.type()))) {
                mask = sel->condition;
                masked = &m;
                break;
            }
        }
        const Expr r_min = bind_scalar(rolled->leader + ".r_min", rolled->r_min);
        if (!mask.defined()) {
            // No mask: the whole tiles are inside.
            result.split = true;
            result.full_first = loop->min;
            result.full_end = clamp(key_extent / key_tile, loop->min, loop->min + loop->extent);
            return result;
        }
        for (const RolledMember &m : rolled->members) {
            ReplaceProducers to_slots;
            to_slots.members = rolled;
            if (!vanishes_where_false(to_slots.mutate(m.term), m.op, mask, m.slots)) return result;
        }
        // The rows' range in this program.
        const Axes &axes = func_axes.at(masked->name);
        const std::string row = var_of_axis(axes, 0);
        if (row.empty()) return result;
        Scope<Interval> rows;
        const Axis &ra = axes.at(row);
        rows.push(row, Interval(ra.start, ra.start + (ra.size - 1)));
        // The program's other coordinates (a batch's, a head's, a query's
        // when the rows are heads) are single points.
        for (const auto &[v, a] : axes) {
            if (a.axis < 0 && a.start.defined()) rows.push(v, Interval::single_point(a.start));
        }
        // Keys allowed: lo <= r <= hi for some row, from the comparisons
        // of r alone; lo_all <= r <= hi_all for every row. The mask is
        // exactly those comparisons when no other term is left over.
        Expr lo, hi, lo_all, hi_all;
        bool comparisons_only = true;
        std::vector<Expr> terms = {mask};
        while (!terms.empty()) {
            const Expr t = terms.back();
            terms.pop_back();
            if (const And *a = t.as<And>()) {
                terms.push_back(a->a);
                terms.push_back(a->b);
                continue;
            }
            int bounded = 0;
            // x narrowed to at most (upper) or at least e.
            auto narrow = [](Expr &x, const Expr &e, bool upper) {
                x = !x.defined() ? e : upper ? min(x, e) : max(x, e);
            };
            auto bound = [&](const Expr &var_side, const Expr &other, int shift, bool upper) {
                const Variable *v = var_side.as<Variable>();
                if (!v || v->name != rolled->rvar || expr_uses_var(other, rolled->rvar)) return;
                const Interval in = bounds_of_expr_in_scope(
                    scalars_of(other, rolled->leader, "its mask", &axes), rows);
                const Expr some = upper ? in.max : in.min, all = upper ? in.min : in.max;
                if (!some.defined()) return;
                bounded++;
                narrow(upper ? hi : lo, some + shift, upper);
                if (all.defined()) narrow(upper ? hi_all : lo_all, all + shift, upper);
                else comparisons_only = false;
            };
            if (const LE *c = t.as<LE>()) bound(c->a, c->b, 0, true), bound(c->b, c->a, 0, false);
            if (const LT *c = t.as<LT>()) bound(c->a, c->b, -1, true), bound(c->b, c->a, 1, false);
            if (const GE *c = t.as<GE>()) bound(c->a, c->b, 0, false), bound(c->b, c->a, 0, true);
            if (const GT *c = t.as<GT>()) bound(c->a, c->b, 1, false), bound(c->b, c->a, -1, true);
            if (bounded == 0) comparisons_only = false;
        }
        if (!lo.defined() && !hi.defined()) return result;
        const Expr loop_first = loop->min, loop_end = loop->min + loop->extent;
        Expr first = loop_first, end = loop_end;
        if (lo.defined()) first = clamp((lo - r_min) / key_tile, loop_first, loop_end);
        if (hi.defined()) end = clamp((hi - r_min) / key_tile + 1, loop_first, loop_end);
        loop->min = first;
        loop->extent = max(end - first, 0);
        if (!comparisons_only) return result;
        // Tile t holds keys r_min + t * key_tile + [0, key_tile): inside
        // for every row from the first tile starting at or after lo_all to
        // the last ending at or before hi_all, and before the keys' end.
        Expr full_first = first, full_end = min(end, key_extent / key_tile);
        if (lo_all.defined()) {
            full_first = max(full_first, (lo_all - r_min + (key_tile - 1)) / key_tile);
        }
        if (hi_all.defined()) full_end = min(full_end, (hi_all - r_min + 1) / key_tile);
        result.split = true;
        result.mask = mask;
        result.full_first = clamp(full_first, first, end);
        result.full_end = clamp(full_end, result.full_first, end);
        return result;
    }

    /** Producer calls as their slot Variables (as RepairDerivation reads
     * a term). */
    struct ReplaceProducers : IRMutator {
        const RolledChain *members;
        using IRMutator::visit;
        Expr visit(const Call *op) override {
            if (op->call_type == Call::Func && members->member(op->name)) {
                return Variable::make(op->type, op->name);
            }
            return IRMutator::visit(op);
        }
    };

    /** A member of both tile coordinates rolled by a sum of products
     * a(i, r) * b(r, j): its repaired value plus a dot over the tile's
     * keys, a the rows' factor (computed: P in attention), b the columns'
     * (loaded). */
    void translate_rolled_contraction(const RolledMember &m, const FunctionPtr &f, const Axes &axes,
                                      const std::vector<int> &shape, const Expr &term,
                                      const std::map<std::string, std::string> &before,
                                      const std::string &result) {
        const std::string what = "rolling_update(" + rolled->leader + ", " + rolled->rvar +
                                 "): " + m.name + " (in the tile program of " + out->name + ")";
        // The guard of the term (a select on a producer) goes to the
        // factor that reads the producer.
        Expr guard, product = term;
        if (const Select *sel = term.as<Select>()) {
            guard = sel->condition;
            product = sel->false_value;
        }
        const Mul *mul = product.as<Mul>();
        user_assert(m.op == ReduceOp::Add && mul)
            << what << " is a sum of " << to_string(term)
            << ": a Func of both tile coordinates is rolled as a sum of products a(i, "
            << rolled->rvar << ") * b(" << rolled->rvar << ", j).";
        const std::string row = var_of_axis(axes, 0);
        Expr a = mul->a, b = mul->b;
        std::string col_var;
        for (const auto &[v, ax] : func_axes.at(m.name)) {
            if (ax.axis == 1) col_var = v;
        }
        const bool rows_grouped = grouped(axes, row);
        auto misplaced = [&](const Expr &x, const Expr &y) {
            return swapped_operands(x, y, row, col_var, rows_grouped);
        };
        if (misplaced(a, b)) std::swap(a, b);
        user_assert(!misplaced(a, b))
            << what << " multiplies " << to_string(a) << " by " << to_string(b)
            << ": each factor of a rolled product depends on one tile coordinate.";
        if (guard.defined()) a = select(guard, make_zero(a.type()), a);
        Axes a_axes = axes, b_axes = axes;
        a_axes[col_var].axis = -1;
        place_other_operand(b, b_axes, row);
        b_axes[rolled->rvar].axis = 0;
        std::string instruction_name;
        if (gpu) {
            // On tensor cores: the operands in the instruction's types, a
            // rounded to them if the schedule allows it.
            const StageSchedule &ss = env.schedules.at(m.name).stages.at(1);
            user_assert(!ss.tensorize.empty())
                << what << " is a sum of products: on the GPU a tile program computes it on "
                << "tensor cores. Add sch[" << m.name << "].update().tensorize(\"mma.m16n8k16\""
                << (a.type() == Float(32) ? ", TensorizeRounding::RoundOperands" : "") << ").";
            std::string why;
            const Expr acc = Variable::make(f->output_types[0], "acc");
            const ContractionMatch cm =
                match_contraction(ss.tensorize, acc + a * b, &why, ss.tensorize_rounds);
            user_assert(cm.instruction)
                << what << " cannot be tensorized with " << ss.tensorize << ": " << why
                << (ss.tensorize_rounds || a.type() != Float(32)
                        ? "."
                        : ". To round the float32 factor " + to_string(a) +
                              " to the other's type, as FlashAttention rounds P, tensorize with "
                              "TensorizeRounding::RoundOperands.");
            a = cm.a;
            b = cm.b;
            if (misplaced(a, b)) std::swap(a, b);
            check_tiles_fit(*cm.instruction, f, shape);
            user_assert(key_tile % cm.instruction->k == 0)
                << what << ": tiles of " << key_tile << " keys are not whole steps of "
                << cm.instruction->k << " of " << cm.instruction->name << ".";
            instruction = cm.instruction;
            instruction_name = cm.instruction->name;
        }
        // A factor rounded for the instruction is the rounding of a tile
        // of its own, which the other members' terms may share (attention's
        // l sums the P that P V rounds).
        std::string av;
        const Cast *rounded = a.as<Cast>();
        if (rounded && rounded->value.type() == Float(32) && !rounded->value.as<Call>()) {
            const std::string wide = translate_expr(rounded->value, a_axes, m.name,
                                                    "its rolled update", {shape[0], key_tile});
            TileOp cast_op = make_op(TileOpKind::Map, fresh(m.name),
                                     register_tile(a.type(), {shape[0], key_tile}), {wide});
            cast_op.fn = cast(a.type(), Variable::make(Float(32), "_0"));
            body->push_back(op_stmt(cast_op));
            av = cast_op.result;
        } else {
            av = translate_expr(a, a_axes, m.name, "its rolled update", {shape[0], key_tile});
        }
        const std::string bv =
            gpu ? operand_load(b, b_axes, f, {key_tile, shape[1]})
                : translate_expr(b, b_axes, m.name, "its rolled update", {key_tile, shape[1]});
        std::string c = before.at(m.name);
        if (!m.slots.empty()) {
            repair(m, shape, before, result);
            c = result;
        }
        TileOp dot =
            make_op(TileOpKind::Dot, result, register_tile(f->output_types[0], shape), {av, bv, c});
        dot.instruction = instruction_name;
        body->push_back(op_stmt(dot));
    }

    /** f(i) = op(f(i), e(i, r)) over an RDom of r, f a Func of one tile
     * coordinate: e as a tile, r along the other axis, reduced along it. */
    void translate_reduction(const FunctionPtr &f, const Axes &axes) {
        const Definition &u = f->updates[0];
        const std::string where =
            "The update of Func " + f->name + " (in the tile program of " + out->name + ")";
        const ReductionVariable &rv = single_reduction_variable(f, where);
        std::string reduction;
        Expr e;
        const Expr &value_expr = u.values[0];
        auto other = [&](const Expr &a, const Expr &b) {
            if (is_self_call(a, f) && !calls_func(b, f->name)) e = b;
            else if (is_self_call(b, f) && !calls_func(a, f->name)) e = a;
            return e.defined();
        };
        if (const Add *o = value_expr.as<Add>()) {
            if (other(o->a, o->b)) reduction = "sum";
        } else if (const Max *o = value_expr.as<Max>()) {
            if (other(o->a, o->b)) reduction = "max";
        } else if (const Min *o = value_expr.as<Min>()) {
            if (other(o->a, o->b)) reduction = "min";
        }
        user_assert(!reduction.empty())
            << where << " is " << to_string(value_expr) << ": in a tile program a Func of one "
            << "tile coordinate reduces by " << f->name << "(...) + e, max(" << f->name
            << "(...), e) or min(" << f->name << "(...), e).";
        for (const auto &[v, a] : axes) {
            user_assert(!expr_uses_var(rv.min, v) && !expr_uses_var(rv.extent, v))
                << where << " reduces over " << rv.var << " in a range that depends on " << v
                << "; a tile program's reduction has the same range at every point.";
        }
        const int along = 1 - program_axis.at(f->name);
        const Axes e_axes = with_reduction_axis(f, axes);
        const Expr r_extent = bind_scalar(f->name + ".r_extent", rv.extent);
        const std::string x = translate_expr(e, e_axes, f->name, "its update", tile_shape());
        const char *lines = along == 1 ? "columns" : "rows";
        // One tile holds the whole reduction.
        checks.push_back(AssertStmt::make(
            rv.extent <= axis_size(along),
            error_message({StringImm::make(where + " reduces over " + rv.var + ", of extent "),
                           rv.extent,
                           StringImm::make(", but the program's tiles hold " +
                                           std::to_string(axis_size(along)) + " " + lines +
                                           ": a tile program reduces within one tile. Make the "
                                           "tiles at least as large as the reduction.")})));
        // Funcs of the program read at r must be the tile's own lines.
        if (reads_member_at(e, rv.var)) {
            checks.push_back(AssertStmt::make(
                rv.min == axis_min[along] && axis_tiles[along] == 1,
                error_message(
                    {StringImm::make(where + " reads Funcs of the program at " + rv.var +
                                     ", so its range must be the program's " + lines + ": from "),
                     axis_min[along], StringImm::make(" in one tile, but it starts at "), rv.min,
                     StringImm::make(" and the " + std::string(lines) + " span "),
                     axis_tiles[along],
                     StringImm::make(" tiles. Reduce over the Func's own range, in a tile as "
                                     "large as it.")})));
        }
        TileOp reduce = make_op(TileOpKind::Reduce, fresh(f->name),
                                register_tile(f->output_types[0], shape_of(f)), {x});
        reduce.axis = along;
        reduce.reduction = reduction;
        reduce.bounds = {r_extent};
        body->push_back(op_stmt(reduce));
        TileOp combine =
            make_op(TileOpKind::Map, fresh(f->name), reduce.type, {value[f->name], reduce.result});
        const Expr p0 = Variable::make(reduce.type.elem, "_0"),
                   p1 = Variable::make(reduce.type.elem, "_1");
        combine.fn = reduction == "sum" ? p0 + p1 : reduction == "max" ? max(p0, p1) : min(p0, p1);
        body->push_back(op_stmt(combine));
        value[f->name] = combine.result;
    }

    static bool calls_func(const Expr &e, const std::string &name) {
        bool found = false;
        visit_calls(e,
                    [&](const Call *c) { found |= c->call_type == Call::Func && c->name == name; });
        return found;
    }

    bool reads_member_at(const Expr &e, const std::string &var) const {
        bool found = false;
        visit_calls(e, [&](const Call *c) {
            if (c->call_type != Call::Func || !members.count(c->name)) return;
            for (const Expr &arg : c->args) found |= expr_uses_var(arg, var);
        });
        return found;
    }

    template <typename F> static void visit_calls(const Expr &e, F f) {
        struct Calls : IRVisitor {
            F *f;
            using IRVisitor::visit;
            void visit(const Call *op) override {
                (*f)(op);
                IRVisitor::visit(op);
            }
        } calls;
        calls.f = &f;
        e.accept(&calls);
    }

    /** f(i, j) = f(i, j) + a(i, k) * b(k, j) over an RDom of k: a dot in a
     * loop over k's tiles. */
    void translate_contraction(const FunctionPtr &f, const Axes &axes) {
        const Definition &u = f->updates[0];
        const std::string where =
            "The update of Func " + f->name + " (in the tile program of " + out->name + ")";
        const ReductionVariable &rv = single_reduction_variable(f, where);
        const auto sched = env.schedules.find(f->name);
        const std::string tensorize_name =
            sched == env.schedules.end() || sched->second.stages.size() < 2
                ? ""
                : sched->second.stages[1].tensorize;
        user_assert(!gpu || !tensorize_name.empty())
            << where << " is a contraction: on the GPU a tile program computes it on tensor "
            << "cores. Add sch[" << f->name << "].update().tensorize(\"mma.m16n8k16\").";
        std::string why;
        ContractionMatch m;
        if (!tensorize_name.empty()) {
            m = match_contraction(tensorize_name, u.values[0], &why);
            user_assert(m.instruction)
                << where << " cannot be tensorized with " << tensorize_name << ": " << why << ".";
        } else {
            m = match_product(u.values[0]);
            user_assert(m.c.defined())
                << where << " is not an accumulation of a product, " << f->name
                << "(i, j) + a(i, k) * b(k, j), which is the reduction a tile program computes "
                   "(it is "
                << to_string(u.values[0]) << ").";
        }
        user_assert(is_self_call(m.c, f)) << where << " accumulates into " << to_string(m.c)
                                          << ", not into " << f->name << " at its own Vars.";
        // Which operand runs along the rows: swap if the product is b * a.
        const std::string row = var_of_axis(axes, 0), col = var_of_axis(axes, 1);
        const bool rows_grouped = grouped(axes, row);
        if (swapped_operands(m.a, m.b, row, col, rows_grouped)) std::swap(m.a, m.b);
        for (const auto &[operand, other] : {std::make_pair(m.a, col), std::make_pair(m.b, row)}) {
            user_assert(!expr_uses_var(operand, other) || (rows_grouped && other == row))
                << where << " multiplies " << to_string(operand) << ", which depends on both "
                << row << " and " << col << ": a contraction's operands each depend on one.";
        }
        if (m.instruction) {
            check_tiles_fit(*m.instruction, f, shape_of(f));
            instruction = m.instruction;
        }

        // The reduction's range, and the loop over its tiles.
        for (const auto &[v, a] : axes) {
            user_assert(!expr_uses_var(rv.min, v) && !expr_uses_var(rv.extent, v))
                << where << " reduces over " << rv.var << " in a range that depends on " << v
                << "; a tile program's reduction has the same range at every point.";
        }
        const Expr k_min = bind_scalar(f->name + ".k_min", rv.min);
        const Expr k_extent = bind_scalar(f->name + ".k_extent", rv.extent);
        const int bk = ts.options.k_tile;
        auto loop = std::make_shared<TileLoop>();
        loop->var = c_identifier(f->name) + "_k";
        loop->min = 0;
        loop->extent = (k_extent + (bk - 1)) / bk;
        Axes inner = axes;
        inner[rv.var] = {-1, k_min + int_var(loop->var) * bk, k_min + k_extent};
        // a is rows x k, b is k x cols.
        Axes a_axes = inner, b_axes = inner;
        a_axes[rv.var].axis = 1;
        b_axes[rv.var].axis = 0;
        place_other_operand(m.b, b_axes, row);
        a_axes[col].axis = -1;
        std::vector<TileStmt> *saved = body;
        body = &loop->body;
        // On the GPU the operands are staged from input buffers; on the
        // CPU they may be computed, elementwise.
        const std::vector<int> shape = shape_of(f);
        const std::string a =
            gpu ? operand_load(m.a, a_axes, f, {shape[0], bk})
                : translate_expr(m.a, a_axes, f->name, "its update", {shape[0], bk});
        const std::string b =
            gpu ? operand_load(m.b, b_axes, f, {bk, shape[1]})
                : translate_expr(m.b, b_axes, f->name, "its update", {bk, shape[1]});
        body = saved;
        TileOp dot = make_op(TileOpKind::Dot, value[f->name],
                             register_tile(f->output_types[0], shape), {a, b, value[f->name]});
        if (m.instruction) dot.instruction = m.instruction->name;
        loop->body.push_back(op_stmt(dot));
        body->push_back({nullptr, loop});
    }

    /** c + a * b, in either order, with no instruction. */
    static ContractionMatch match_product(const Expr &update) {
        ContractionMatch m;
        const Add *add = update.as<Add>();
        if (!add) return m;
        for (const auto &[c, p] :
             {std::make_pair(add->a, add->b), std::make_pair(add->b, add->a)}) {
            if (const Mul *mul = p.as<Mul>()) {
                m.c = c;
                m.a = mul->a;
                m.b = mul->b;
                return m;
            }
        }
        return m;
    }

    static bool is_self_call(const Expr &e, const FunctionPtr &f) {
        const Call *c = e.as<Call>();
        if (!c || c->call_type != Call::Func || c->name != f->name) return false;
        for (size_t d = 0; d < c->args.size(); d++) {
            const Variable *v = c->args[d].as<Variable>();
            if (!v || v->name != f->args[d]) return false;
        }
        return true;
    }

    static std::string var_of_axis(const Axes &axes, int axis) {
        for (const auto &[v, a] : axes) {
            if (a.axis == axis) return v;
        }
        return "";
    }

    void check_tiles_fit(const TensorInstruction &t, const FunctionPtr &f,
                         const std::vector<int> &shape) const {
        const int wm = ts.options.warps_m, wn = ts.options.warps_n;
        auto fits = [&](int tile, int warps, int step, const char *what) {
            user_assert(tile % warps == 0 && (tile / warps) % step == 0)
                << "Func " << out->name << "'s tile program: " << t.name << " (tensorize of "
                << f->name << ") computes " << t.m << " x " << t.n << " x " << t.k
                << " blocks, and each warp's " << what << " (" << tile << " / " << warps
                << " warps) is not a multiple of " << step
                << ". Choose tile sizes and warps that divide.";
        };
        fits(shape[0], wm, t.m, "rows");
        fits(shape[1], wn, t.n, "columns");
        fits(ts.options.k_tile, 1, t.k, "reduction tile");
    }

    /** A dot operand: the load of one input buffer, in the operand's type. */
    std::string operand_load(const Expr &e, const Axes &axes, const FunctionPtr &f,
                             const std::vector<int> &shape) {
        const Call *c = e.as<Call>();
        user_assert(c && c->call_type == Call::Image)
            << "The update of Func " << f->name << " multiplies " << to_string(e)
            << ", which is computed: a tile program stages its contraction's operands from "
               "input buffers. Compute it in a Func of its own (compute_root) and pass it in.";
        return load(c, axes, shape, f->name);
    }

    /** The access of buffer `c` over a tile: its origin, masks and axes. */
    std::string load(const Call *c, const Axes &axes, const std::vector<int> &shape,
                     const std::string &func) {
        TileOp o = make_op(TileOpKind::Load, fresh(c->name), register_tile(c->type, shape));
        access(&o, c->name, c->args, axes, func, to_string(Expr(c)));
        add_buffer(c->name, c->type, int(c->args.size()), false);
        body->push_back(op_stmt(o));
        return o.result;
    }

    void access(TileOp *o, const std::string &buffer, const std::vector<Expr> &args,
                const Axes &axes, const std::string &func, const std::string &what) {
        o->buffer = buffer;
        for (size_t d = 0; d < args.size(); d++) {
            const Expr min = host_scalar(buffer + ".min." + std::to_string(d));
            // args[d] = v + offset, v one of the axes' Vars, or no Var.
            std::string var;
            for (const auto &[v, a] : axes) {
                if (expr_uses_var(args[d], v)) {
                    user_assert(var.empty())
                        << "Func " << func << " reads " << what << " at " << to_string(args[d])
                        << " in a tile program, which depends on " << var << " and " << v
                        << ": each index of a tile access follows one Var (plus a constant).";
                    var = v;
                }
            }
            if (!var.empty() && axes.at(var).axis < 0) {
                // One coordinate of the program (a batch's, a head's): any
                // function of it, such as grouped-query attention's h / G.
                const Expr at =
                    substitute(var, axes.at(var).start, scalars_of(args[d], func, what, &axes)) -
                    min;
                o->origin.push_back(at);
                o->bounds.push_back(at + 1);
                o->axes.push_back(-1);
                continue;
            }
            Expr offset = args[d];
            if (!var.empty()) {
                offset = simplify_offset(args[d] - Variable::make(Int(32), var), var);
                user_assert(offset.defined())
                    << "Func " << func << " reads " << what << " at " << to_string(args[d])
                    << " in a tile program: an index of a tile access is a Var plus a constant "
                       "(a Var times a stride or a gather is not a tile).";
            }
            offset = scalars_of(offset, func, what);
            if (var.empty() || axes.at(var).axis < 0) {
                const Expr at = (var.empty() ? offset : axes.at(var).start + offset) - min;
                o->origin.push_back(at);
                o->bounds.push_back(at + 1);
                o->axes.push_back(-1);
            } else {
                const Axis &a = axes.at(var);
                o->origin.push_back(a.start + offset - min);
                o->bounds.push_back(a.end + offset - min);
                o->axes.push_back(a.axis);
            }
        }
    }

    /** e - v's remainder when it no longer uses v, else undefined. */
    static Expr simplify_offset(const Expr &e, const std::string &v) {
        Expr s = simplify(e);
        if (expr_uses_var(s, v)) return Expr();
        return s;
    }

    /** e with its free Variables (Params, buffer sizes) made the program's
     * scalars. */
    Expr scalars_of(const Expr &e, const std::string &func, const std::string &what,
                    const Axes *keep = nullptr) {
        struct Bind : IRMutator {
            ProgramBuilder *b;
            std::string func, what;
            const Axes *keep;
            using IRMutator::visit;
            Expr visit(const Variable *op) override {
                if (keep && keep->count(op->name)) return op;
                user_assert(!op->param || op->type.is_scalar())
                    << "Func " << func << " reads " << what << " in a tile program.";
                return b->bind_scalar(op->name, Expr(op));
            }
            Expr visit(const Call *op) override {
                user_error << "Func " << func << " reads " << to_string(Expr(op)) << " in " << what
                           << " of a tile program where a scalar is expected.";
                return Expr();
            }
        } bind;
        bind.b = this;
        bind.func = func;
        bind.what = what;
        bind.keep = keep;
        return bind.mutate(e);
    }

    /** Whether Func `name`, not one of the program's, is computed at root,
     * before the program runs, so that a CPU program can read it as a
     * buffer. */
    bool realized_outside(const std::string &name) const {
        const auto it = env.schedules.find(name);
        return !gpu && it != env.schedules.end() && it->second.compute_level.is_root() &&
               env.funcs.count(name) && env.funcs.at(name)->output_types.size() == 1;
    }

    void add_buffer(const std::string &name, Type elem, int dims, bool written) {
        for (TileBuffer &b : buffers) {
            if (b.name == name) {
                b.written |= written;
                return;
            }
        }
        TileBuffer b;
        b.name = name;
        b.elem = elem;
        b.dims = dims;
        b.written = written;
        buffers.push_back(b);
        for (int d = 0; d + 1 < dims; d++) host_scalar(name + ".stride." + std::to_string(d));
    }

    /** An elementwise expression of a definition as a tile: its leaves
     * (loads, the tiles of member Funcs) are the operands of one map. */
    std::string translate_expr(const Expr &e, const Axes &axes, const std::string &func,
                               const std::string &what, const std::vector<int> &shape) {
        struct Leaves : IRMutator {
            ProgramBuilder *b;
            const Axes *axes;
            std::string func, what;
            std::vector<int> shape;
            std::vector<std::string> operands;
            using IRMutator::visit;
            Expr operand(const std::string &name, Type t) {
                for (size_t i = 0; i < operands.size(); i++) {
                    if (operands[i] == name) return Variable::make(t, "_" + std::to_string(i));
                }
                operands.push_back(name);
                return Variable::make(t, "_" + std::to_string(operands.size() - 1));
            }
            Expr visit(const Call *op) override {
                if (op->call_type == Call::Image) {
                    return operand(b->load(op, *axes, shape, func), op->type);
                }
                if (op->call_type == Call::Func && !b->members.count(op->name) &&
                    b->realized_outside(op->name)) {
                    // On the CPU a Func stored before the program (the keys
                    // transposed at root, say) is read like an input.
                    return operand(b->load(op, *axes, shape, func), op->type);
                }
                if (op->call_type == Call::Func) {
                    user_assert(b->members.count(op->name))
                        << "Func " << func << " reads Func " << op->name << " in " << what
                        << " of a tile program, but " << op->name
                        << " is not computed in the program. Compute it at the program's tile "
                           "loop (compute_at), or make it an input"
                        << (b->gpu ? " (on the GPU a program reads no Func stored outside it)" : "")
                        << ".";
                    for (size_t d = 0; d < op->args.size(); d++) {
                        const Variable *v = op->args[d].as<Variable>();
                        user_assert(v && axes->count(v->name))
                            << "Func " << func << " reads " << to_string(Expr(op))
                            << " in a tile program, away from the program's own coordinates.";
                    }
                    auto it = b->value.find(op->name);
                    internal_assert(it != b->value.end()) << op->name << " not translated yet";
                    auto one_d = b->program_axis.find(op->name);
                    if (one_d == b->program_axis.end()) {
                        user_assert(shape.size() == 2)
                            << "Func " << func << " reads " << to_string(Expr(op)) << " in " << what
                            << " of a tile program, but " << func
                            << " is a Func of one tile coordinate and " << op->name
                            << " of two; reduce it along a row or column instead.";
                        return operand(it->second, op->type);
                    }
                    if (shape.size() == 1) return operand(it->second, op->type);
                    // A row's (column's) values over the tile: broadcast
                    // along the other axis.
                    int along = -1;
                    for (const Expr &arg : op->args) {
                        const Axis &ax = axes->at(arg.as<Variable>()->name);
                        if (ax.axis >= 0) along = ax.axis;
                    }
                    internal_assert(along >= 0) << op->name << " read off the tile's axes";
                    return operand(b->broadcast(it->second, op->type, shape, 1 - along, op->name),
                                   op->type);
                }
                return IRMutator::visit(op);
            }
            Expr visit(const Variable *op) override {
                auto a = axes->find(op->name);
                if (a == axes->end()) return b->bind_scalar(op->name, Expr(op));
                // A coordinate as a value (a mask, a position): the tile's
                // start plus the element's coordinate along its axis.
                const Axis &ax = a->second;
                const Expr at = ax.axis >= 0 ? ax.start + tile_coordinate(ax.axis) : ax.start;
                return cast(op->type, at);
            }
        } leaves;
        leaves.b = this;
        leaves.axes = &axes;
        leaves.func = func;
        leaves.what = what;
        leaves.shape = shape;
        Expr fn = leaves.mutate(e);
        if (const Variable *v = fn.as<Variable>()) {
            if (v->name == "_0" && leaves.operands.size() == 1) return leaves.operands[0];
        }
        const std::string result = fresh(func);
        if (leaves.operands.empty()) {
            body->push_back(
                op_stmt(make_op(TileOpKind::Zeros, result, register_tile(e.type(), shape))));
            if (is_const_zero(e)) return result;
            leaves.operands.push_back(result);
        }
        TileOp map =
            make_op(TileOpKind::Map, fresh(func), register_tile(e.type(), shape), leaves.operands);
        map.fn = fn;
        body->push_back(op_stmt(map));
        return map.result;
    }

    /** Members whose values the program stores (split_k's partials) are
     * over the leader's Vars, by name, whether or not a member reads them. */
    void assign_stored_axes() {
        if (!rolled) return;
        const Axes &lead = func_axes.at(rolled->leader);
        for (const auto &[stored, member] : rolled->stored) {
            if (func_axes.count(member)) continue;
            Axes own;
            for (const std::string &v : env.funcs.at(member)->args) {
                internal_assert(lead.count(v))
                    << member << "'s Var " << v << " is not " << rolled->leader << "'s";
                own[v] = lead.at(v);
            }
            assign_axes(env.funcs.at(member), own);
        }
    }

    /** The members' values stored to Funcs at root (split_k's partials). */
    void store_stored_members() {
        if (!rolled) return;
        for (const auto &[stored, member] : rolled->stored) store(env.funcs.at(stored), member);
    }

    void store_output() {
        bool is_output = false;
        for (const FunctionPtr &o : env.outputs) is_output |= o->name == out->name;
        const auto fs = env.schedules.find(out->name);
        const bool at_root = fs != env.schedules.end() && fs->second.compute_level.is_root();
        user_assert(is_output || at_root)
            << "Func " << out->name
            << " is a tile program but not an output of the pipeline: tile programs store to "
               "output buffers or to Funcs computed at root (compute_root()).";
        store(out, out->name);
    }

    /** Stores member `from`'s tile (over its axes) to Func f's buffer. */
    void store(const FunctionPtr &f, const std::string &from) {
        TileOp op = make_op(TileOpKind::Store, "", TileType(), {value.at(from)});
        std::vector<Expr> args;
        for (const std::string &v : f->args) args.push_back(int_var(v));
        access(&op, f->name, args, func_axes.at(from), f->name, f->name);
        add_buffer(f->name, f->output_types[0], int(args.size()), true);
        body->push_back(op_stmt(op));
    }

  public:
    std::vector<TileStmt> *body = &program.body;
};

class Translate : public IRMutator {
  public:
    Translate(const LoweringEnv &env, const Target &target, const std::string &pipeline,
              const std::map<std::string, Expr> &fixed_sizes)
        : env(env), target(target), pipeline(pipeline), fixed_sizes(fixed_sizes) {}

  private:
    const LoweringEnv &env;
    const Target &target;
    const std::string pipeline;
    const std::map<std::string, Expr> &fixed_sizes;
    int kernels = 0;

    using IRMutator::visit;
    Stmt visit(const For *op) override {
        // Funcs a program stores beside its own have no loops of their own.
        for (const RolledChain &c : env.rolled_in_tiles) {
            for (const auto &[stored, member] : c.stored) {
                if (starts_with(op->name, stored + ".s")) return Evaluate::make(0);
            }
        }
        {
            for (const auto &[name, fs] : env.schedules) {
                if (!fs.tile_program) continue;
                // The program computes the Func's updates with its pure
                // definition: their own loop nests go.
                for (size_t u = 1; u <= env.funcs.at(name)->updates.size(); u++) {
                    if (starts_with(op->name, name + ".s" + std::to_string(u) + ".")) {
                        return Evaluate::make(0);
                    }
                }
                if (op->name != name + ".s0." + fs.tile_program->outer_loop) continue;
                ProgramBuilder b(
                    env.funcs.at(name), *fs.tile_program, env,
                    c_identifier(pipeline + "_" + name + "_tile" + std::to_string(kernels++)),
                    target.has_feature(Target::CUDA), fixed_sizes);
                return b.build();
            }
        }
        return IRMutator::visit(op);
    }
};

}  // namespace

Stmt translate_tile_programs(const Stmt &s, const LoweringEnv &env, const Target &target,
                             const std::string &pipeline_name,
                             const std::map<std::string, Expr> &fixed_sizes) {
    bool any = false;
    for (const auto &[name, fs] : env.schedules) any |= fs.tile_program != nullptr;
    if (!any) return s;
    return Translate(env, target, pipeline_name, fixed_sizes).mutate(s);
}

}  // namespace internal
}  // namespace loom
