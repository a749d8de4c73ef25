// The scheduling directives. Each one is checked against the stage's current
// loop nest when it is called, so a mistake is reported at the line that made
// it, naming the Func, the stage and the loop.
#include "loom/Schedule.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "ir/IREquality.h"
#include "ir/IRVisitor.h"
#include "ir/Substitute.h"
#include "ir/Util.h"
#include "lang/ScheduleContents.h"
#include "tile/TensorInstructions.h"

namespace loom {

using namespace internal;

namespace internal {

namespace {

std::string stage_name(const FunctionPtr &f, int stage) {
    if (stage == 0) return "Func " + f->name;
    return "update " + std::to_string(stage - 1) + " of Func " + f->name;
}

const Definition &definition_of(const FunctionPtr &f, int stage) {
    return stage == 0 ? f->init : f->updates[stage - 1];
}

}  // namespace

StageSchedule default_stage_schedule(const FunctionPtr &f, int stage) {
    StageSchedule s;
    if (stage == 0) {
        for (const std::string &a : f->args) s.dims.push_back({a, ForType::Serial, false});
        return s;
    }
    const Definition &d = definition_of(f, stage);
    // Pure Vars of the update: those used as a bare argument in their own
    // position; the other positions are written at computed coordinates.
    for (size_t i = 0; i < d.args.size(); i++) {
        const Variable *v = d.args[i].as<Variable>();
        if (v && !v->rdom && !v->param && v->name == f->args[i]) {
            s.dims.push_back({v->name, ForType::Serial, false});
        }
    }
    for (const ReductionVariable &rv : rvars_of(d))
        s.dims.push_back({rv.var, ForType::Serial, true});
    return s;
}

FuncSchedule get_func_schedule(const ScheduleContents &s, const FunctionPtr &f) {
    auto it = s.funcs.find(f->name);
    if (it != s.funcs.end() && it->second.func == f) {
        FuncSchedule fs = it->second;
        fs.stages.resize(f->updates.size() + 1);
        for (size_t i = 0; i < fs.stages.size(); i++) {
            if (fs.stages[i].dims.empty() && fs.stages[i].splits.empty()) {
                fs.stages[i] = default_stage_schedule(f, static_cast<int>(i));
            }
        }
        return fs;
    }
    FuncSchedule fs;
    fs.func = f;
    for (size_t i = 0; i <= f->updates.size(); i++) {
        fs.stages.push_back(default_stage_schedule(f, static_cast<int>(i)));
    }
    fs.compute_level = LoopLevel::inlined();
    fs.store_level = LoopLevel::inlined();
    return fs;
}

namespace {

/** The arguments of every call an update definition makes to its own Func:
 * in its values, in the coordinates it writes, and in its RDom's where(). */
std::vector<std::vector<Expr>> self_calls(const FunctionPtr &f, const Definition &d) {
    struct SelfCalls : IRVisitor {
        const std::string *name;
        std::vector<std::vector<Expr>> args;
        void visit(const Call *op) override {
            if (op->call_type == Call::Func && op->name == *name) args.push_back(op->args);
            IRVisitor::visit(op);
        }
    } calls;
    calls.name = &f->name;
    for (const Expr &v : d.values) v.accept(&calls);
    for (const Expr &a : d.args) a.accept(&calls);
    if (d.rdom && d.rdom->predicate.defined()) d.rdom->predicate.accept(&calls);
    return calls.args;
}

bool is_bare_var(const Expr &e, const std::string &v) {
    const Variable *var = e.as<Variable>();
    return var && var->name == v;
}

}  // namespace

bool update_separates_iterations_of(const FunctionPtr &f, const Definition &d,
                                    const std::string &var) {
    const std::vector<std::vector<Expr>> calls = self_calls(f, d);
    for (size_t i = 0; i < d.args.size(); i++) {
        if (!is_bare_var(d.args[i], var)) continue;
        bool everywhere = true;
        for (const std::vector<Expr> &args : calls) {
            everywhere = everywhere && args.size() == d.args.size() && is_bare_var(args[i], var);
        }
        if (everywhere) return true;
    }
    return false;
}

/** Whether an update combines the point it writes with a value that does
 * not read the Func, by + - * min max && or ||: the contributions to each
 * point then give the same result in any order, so its reduction domain
 * may be visited in any order (as Halide allows for an update it proves
 * associative and commutative). For floats the order changes the rounding,
 * as grouping a sum across threads or lanes does. */
bool update_commutes(const FunctionPtr &f, const Definition &d) {
    // Its one read of itself (in its values, coordinates and where()) is
    // the old value of the point, an operand of the combining operator.
    const std::vector<std::vector<Expr>> calls = self_calls(f, d);
    if (d.values.size() != 1 || calls.size() != 1) return false;
    auto is_the_point = [&](const Expr &e) {
        const Call *c = e.as<Call>();
        if (!c || c->call_type != Call::Func || c->name != f->name ||
            c->args.size() != d.args.size())
            return false;
        for (size_t k = 0; k < c->args.size(); k++) {
            if (!equal(c->args[k], d.args[k])) return false;
        }
        return true;
    };
    const Expr &v = d.values[0];
    Expr old, term;
    bool either_side = true;  // f - g commutes only with f on the left
    if (const Add *n = v.as<Add>()) old = n->a, term = n->b;
    else if (const Sub *n = v.as<Sub>()) old = n->a, term = n->b, either_side = false;
    else if (const Mul *n = v.as<Mul>()) old = n->a, term = n->b;
    else if (const Min *n = v.as<Min>()) old = n->a, term = n->b;
    else if (const Max *n = v.as<Max>()) old = n->a, term = n->b;
    else if (const And *n = v.as<And>()) old = n->a, term = n->b;
    else if (const Or *n = v.as<Or>()) old = n->a, term = n->b;
    else return false;
    return is_the_point(old) || (either_side && is_the_point(term));
}

/** Whether an update definition may run the iterations of a loop over
 * `vars` in any order. A name the update separates the iterations of
 * (update_separates_iterations_of) may: distinct values touch distinct
 * points whatever else they read. That includes every pure Var, since an
 * update's reads of itself keep its pure Vars in place, so a scan along r
 * may run its rows in parallel. Any other name needs the update to read
 * the Func only at the point it writes, and to be a bare argument of the
 * write, so distinct iterations touch distinct points; with
 * `combines_same_point` it may also be absent from the write's arguments:
 * every iteration then updates one point, which the threads of a GPU block
 * (or the lanes of a vector) combine as a reduction. */
bool update_is_order_independent(const FunctionPtr &f, const Definition &d,
                                 const std::set<std::string> &vars, bool combines_same_point) {
    bool reads_only_the_written_point = true;
    for (const std::vector<Expr> &args : self_calls(f, d)) {
        if (args.size() != d.args.size()) reads_only_the_written_point = false;
        for (size_t i = 0; reads_only_the_written_point && i < args.size(); i++) {
            if (!equal(args[i], d.args[i])) reads_only_the_written_point = false;
        }
    }
    for (const std::string &v : vars) {
        if (update_separates_iterations_of(f, d, v)) continue;
        if (!reads_only_the_written_point) return false;
        bool bare = false, used = false;
        for (const Expr &a : d.args) {
            bare = bare || is_bare_var(a, v);
            used = used || expr_uses_var(a, v);
        }
        // Every iteration updating one point is a reduction, which the
        // threads of a GPU block can combine; a point chosen by a function
        // of v (a histogram) could still collide.
        if (!bare && !(combines_same_point && !used)) return false;
    }
    return true;
}

}  // namespace internal

}  // namespace loom

namespace loom {
namespace internal {

/** The state of one stage being scheduled. */
struct StageState {
    FuncSchedule *fs;
    StageSchedule *ss;
    FunctionPtr f;
    int stage;
};

}  // namespace internal

namespace {

StageState state_of(ScheduleContents &sc, const FunctionPtr &f, int stage) {
    auto it = sc.funcs.find(f->name);
    if (it != sc.funcs.end() && it->second.func != f) {
        user_error << "The Schedule already has a different Func named '" << f->name
                   << "'. Give your Funcs distinct names.";
    }
    if (it == sc.funcs.end()) {
        FuncSchedule fs;
        fs.func = f;
        it = sc.funcs.emplace(f->name, fs).first;
    }
    FuncSchedule &fs = it->second;
    if (fs.stages.size() < f->updates.size() + 1) fs.stages.resize(f->updates.size() + 1);
    StageSchedule &ss = fs.stages[stage];
    if (ss.dims.empty() && ss.splits.empty()) ss = default_stage_schedule(f, stage);
    return {&fs, &ss, f, stage};
}

std::string loops_of(const StageSchedule &ss) {
    std::string s;
    for (const Dim &d : ss.dims) s += (s.empty() ? "" : ", ") + d.var;
    return s.empty() ? "(none)" : s;
}

// Which original RVars each current loop is made of, replayed from the splits.
std::map<std::string, std::set<std::string>> rvar_origins(const FunctionPtr &f, int stage,
                                                          const StageSchedule &ss) {
    std::map<std::string, std::set<std::string>> origin;
    if (stage == 0) return origin;
    for (const ReductionVariable &rv : rvars_of(f->updates[stage - 1])) origin[rv.var] = {rv.var};
    for (const Split &s : ss.splits) {
        if (s.kind == Split::SplitVar) {
            if (origin.count(s.old_var)) origin[s.outer] = origin[s.inner] = origin[s.old_var];
        } else if (s.kind == Split::RenameVar) {
            if (origin.count(s.old_var)) origin[s.outer] = origin[s.old_var];
        } else {
            std::set<std::string> u;
            if (origin.count(s.outer)) u = origin[s.outer];
            if (origin.count(s.inner)) u.insert(origin[s.inner].begin(), origin[s.inner].end());
            if (!u.empty()) origin[s.old_var] = u;
        }
    }
    return origin;
}

int find_dim(const StageState &st, const std::string &name, const char *directive) {
    for (size_t i = 0; i < st.ss->dims.size(); i++) {
        if (st.ss->dims[i].var == name) return static_cast<int>(i);
    }
    for (const Split &s : st.ss->splits) {
        if ((s.kind != Split::FuseVars && s.old_var == name) ||
            (s.kind == Split::FuseVars && (s.outer == name || s.inner == name))) {
            user_error << "In the schedule of " << stage_name(st.f, st.stage) << ": " << directive
                       << " names loop '" << name
                       << "', which was already split, fused or renamed away. Its loops now are: "
                       << loops_of(*st.ss) << ".";
        }
    }
    user_error << "In the schedule of " << stage_name(st.f, st.stage) << ": " << directive
               << " names '" << name
               << "', which is not a loop of this stage. Its loops are: " << loops_of(*st.ss)
               << ".";
}

void check_new_name(const StageState &st, const std::string &name, const char *directive) {
    for (const Dim &d : st.ss->dims) {
        if (d.var == name) {
            user_error << "In the schedule of " << stage_name(st.f, st.stage) << ": " << directive
                       << " would create loop '" << name
                       << "', but a loop of that name already exists. Use a fresh Var.";
        }
    }
}

// Parallel and vector loops must not carry a dependence of an update. The
// threads of a GPU block may all update one point: the CUDA backend combines
// them as a reduction across threads (or refuses an update it cannot).
void check_loop_may_be_reordered(const StageState &st, const std::string &loop, const char *what,
                                 bool combines_same_point) {
    if (st.stage == 0) return;
    auto origins = rvar_origins(st.f, st.stage, *st.ss);
    const Definition &d = st.f->updates[st.stage - 1];
    std::set<std::string> vars;
    auto it = origins.find(loop);
    if (it != origins.end()) vars = it->second;
    if (!update_is_order_independent(st.f, d, vars, combines_same_point)) {
        user_error << "In the schedule of " << stage_name(st.f, st.stage) << ": cannot " << what
                   << " loop '" << loop << "': the update carries a dependence along it (it reads "
                   << st.f->name
                   << " at points other than the one it writes, or several iterations write the "
                      "same point). Run that loop serially, or schedule another loop.";
    }
}

}  // namespace

Schedule::Schedule() : contents_(std::make_shared<ScheduleContents>()) {}

Schedule Schedule::clone() const {
    Schedule s;
    *s.contents_ = *contents_;
    return s;
}

Stage Schedule::operator[](const Func &f) {
    user_assert(f.defined()) << "Schedule[] of Func '" << f.name()
                             << "', which has no definition. Define it before scheduling it.";
    state_of(*contents_, f.function(), 0);
    return Stage(contents_, f.function(), 0);
}

Stage Stage::update(int i) const {
    user_assert(i >= 0 && i < static_cast<int>(func_->updates.size()))
        << "Func " << func_->name << " has " << func_->updates.size()
        << " update definition(s); there is no update(" << i << ").";
    state_of(*sched_, func_, i + 1);
    return Stage(sched_, func_, i + 1);
}

Stage &Stage::split(const VarOrRVar &old, const VarOrRVar &outer, const VarOrRVar &inner,
                    const Expr &factor, TailStrategy tail) {
    StageState st = state_of(*sched_, func_, stage_);
    user_assert(factor.defined() && factor.type().is_int_or_uint() && factor.type().is_scalar())
        << "In the schedule of " << stage_name(func_, stage_) << ": the split factor of '"
        << old.name() << "' must be an integer.";
    if (const int64_t *c = as_const_int(factor)) {
        user_assert(*c > 0) << "In the schedule of " << stage_name(func_, stage_)
                            << ": the split factor of '" << old.name() << "' is " << *c
                            << "; it must be positive.";
    }
    int i = find_dim(st, old.name(), "split");
    if (outer.name() != old.name()) check_new_name(st, outer.name(), "split");
    if (inner.name() != old.name()) check_new_name(st, inner.name(), "split");
    user_assert(outer.name() != inner.name())
        << "In the schedule of " << stage_name(func_, stage_) << ": split of '" << old.name()
        << "' gives the outer and inner loops the same name '" << outer.name() << "'.";
    if (stage_ > 0 && (tail == TailStrategy::ShiftInwards || tail == TailStrategy::RoundUp)) {
        user_error << "In the schedule of " << stage_name(func_, stage_) << ": split of '"
                   << old.name()
                   << "' asks for a tail strategy that recomputes points, which would apply an "
                      "update twice. Use TailStrategy::GuardWithIf for updates.";
    }
    Split s{Split::SplitVar, old.name(), outer.name(), inner.name(), cast(Int(32), factor), tail};
    st.ss->splits.push_back(s);
    Dim d = st.ss->dims[i];
    Dim o = d, in = d;
    o.var = outer.name();
    in.var = inner.name();
    // The loop's marking stays with the part it is about: a loop spread
    // over tasks, blocks or threads keeps it on the outer loop (each task
    // or thread then runs the inner one), a vectorized or unrolled loop on
    // the inner one; the other loop is serial. So gpu_threads(xi) and then
    // vectorize(xi, 4) gives each thread a vector, as in Halide. (Halide
    // gives both loops the marking, nesting two thread or vector loops of
    // one dimension, which a split rarely means.)
    const ForType t = d.for_type;
    const bool spread = t == ForType::Parallel || t == ForType::GPUBlock || t == ForType::GPUThread;
    o.for_type = spread ? t : ForType::Serial;
    in.for_type = spread ? ForType::Serial : t;
    st.ss->dims[i] = in;
    st.ss->dims.insert(st.ss->dims.begin() + i, o);
    return *this;
}

Stage &Stage::fuse(const VarOrRVar &outer, const VarOrRVar &inner, const VarOrRVar &fused) {
    StageState st = state_of(*sched_, func_, stage_);
    int io = find_dim(st, outer.name(), "fuse");
    int ii = find_dim(st, inner.name(), "fuse");
    user_assert(ii == io + 1) << "In the schedule of " << stage_name(func_, stage_)
                              << ": fuse needs '" << outer.name() << "' directly outside '"
                              << inner.name() << "', but the loops are: " << loops_of(*st.ss)
                              << ". Reorder them first.";
    check_new_name(st, fused.name(), "fuse");
    st.ss->splits.push_back(
        {Split::FuseVars, fused.name(), outer.name(), inner.name(), Expr(), TailStrategy::Auto});
    Dim d = st.ss->dims[io];
    d.var = fused.name();
    d.is_rvar = st.ss->dims[io].is_rvar || st.ss->dims[ii].is_rvar;
    d.for_type = ForType::Serial;
    st.ss->dims.erase(st.ss->dims.begin() + ii);
    st.ss->dims[io] = d;
    return *this;
}

Stage &Stage::reorder(const std::vector<VarOrRVar> &order) {
    StageState st = state_of(*sched_, func_, stage_);
    std::vector<int> slots;
    std::set<std::string> seen;
    for (const VarOrRVar &v : order) {
        user_assert(seen.insert(v.name()).second)
            << "In the schedule of " << stage_name(func_, stage_) << ": reorder names '" << v.name()
            << "' twice.";
        slots.push_back(find_dim(st, v.name(), "reorder"));
    }
    std::vector<int> sorted = slots;
    std::sort(sorted.begin(), sorted.end());
    std::vector<Dim> dims = st.ss->dims;
    for (size_t k = 0; k < slots.size(); k++) dims[sorted[k]] = st.ss->dims[slots[k]];
    // Reordering the loops of an update's reduction domain changes the
    // order in which it visits the domain, which matters unless the update
    // commutes (update_commutes). Two iterations that touch one
    // point differ only in RVars the update does not separate
    // (update_separates_iterations_of), so only the loops made of those
    // must keep their relative order; loops of separated RVars may move
    // anywhere. Splitting an RVar keeps its order as long as its outer
    // loop stays outside its inner one, which this checks too.
    if (stage_ > 0 && !update_commutes(func_, func_->updates[stage_ - 1])) {
        auto origins = rvar_origins(func_, stage_, *st.ss);
        const Definition &d = func_->updates[stage_ - 1];
        auto ordered_loops = [&](const std::vector<Dim> &ds) {
            std::vector<std::string> loops;
            for (const Dim &dim : ds) {
                auto it = origins.find(dim.var);
                if (it == origins.end()) continue;
                bool separated = true;
                for (const std::string &rv : it->second)
                    separated = separated && update_separates_iterations_of(func_, d, rv);
                if (!separated) loops.push_back(dim.var);
            }
            return loops;
        };
        const std::vector<std::string> before = ordered_loops(st.ss->dims);
        if (before != ordered_loops(dims)) {
            user_error << "In the schedule of " << stage_name(func_, stage_)
                       << ": this reorder changes the order in which the reduction domain is "
                          "visited, which changes what the update computes. RVars must keep "
                          "their relative order: the loops "
                       << join(before, ", ")
                       << " (outermost first). An RVar that the update writes and reads itself "
                          "at alone, in one place (each column of a scan down the columns), may "
                          "move; all may where the update only combines the point it writes with "
                          "a value by + - * min max && or || (a sum).";
        }
    }
    st.ss->dims = dims;
    return *this;
}

Stage &Stage::tile(const VarOrRVar &y, const VarOrRVar &x, const VarOrRVar &yo, const VarOrRVar &xo,
                   const VarOrRVar &yi, const VarOrRVar &xi, const Expr &ty, const Expr &tx,
                   TailStrategy tail) {
    split(y, yo, yi, ty, tail);
    split(x, xo, xi, tx, tail);
    return reorder({yo, xo, yi, xi});
}

Stage &Stage::rename(const VarOrRVar &old, const VarOrRVar &new_name) {
    StageState st = state_of(*sched_, func_, stage_);
    int i = find_dim(st, old.name(), "rename");
    check_new_name(st, new_name.name(), "rename");
    st.ss->splits.push_back(
        {Split::RenameVar, old.name(), new_name.name(), "", Expr(), TailStrategy::Auto});
    st.ss->dims[i].var = new_name.name();
    return *this;
}

namespace {
Stage &set_for_type(Stage &s, StageState st, const VarOrRVar &v, ForType t, const char *what) {
    int i = find_dim(st, v.name(), what);
    if (t != ForType::Serial && t != ForType::Unrolled) {
        // The threads of a block, like the lanes of a vector, can combine
        // an associative update of one point (VectorReduce); parallel
        // tasks cannot, having no combining step.
        check_loop_may_be_reordered(st, v.name(), what,
                                    t == ForType::GPUThread || t == ForType::Vectorized);
    }
    st.ss->dims[i].for_type = t;
    return s;
}
}  // namespace

Stage &Stage::unroll(const VarOrRVar &v) {
    return set_for_type(*this, state_of(*sched_, func_, stage_), v, ForType::Unrolled, "unroll");
}
Stage &Stage::vectorize(const VarOrRVar &v) {
    return set_for_type(*this, state_of(*sched_, func_, stage_), v, ForType::Vectorized,
                        "vectorize");
}
Stage &Stage::parallel(const VarOrRVar &v) {
    return set_for_type(*this, state_of(*sched_, func_, stage_), v, ForType::Parallel,
                        "parallelize");
}
Stage &Stage::serial(const VarOrRVar &v) {
    return set_for_type(*this, state_of(*sched_, func_, stage_), v, ForType::Serial, "serial");
}

Stage &Stage::gpu_loops(const std::vector<VarOrRVar> &loops, bool threads) {
    if (loops.size() > 1) reorder(std::vector<VarOrRVar>(loops.rbegin(), loops.rend()));
    for (const VarOrRVar &v : loops) {
        set_for_type(*this, state_of(*sched_, func_, stage_), v,
                     threads ? ForType::GPUThread : ForType::GPUBlock,
                     threads ? "gpu_threads" : "gpu_blocks");
    }
    return *this;
}
Stage &Stage::gpu_blocks(const VarOrRVar &x) { return gpu_loops({x}, false); }
Stage &Stage::gpu_blocks(const VarOrRVar &x, const VarOrRVar &y) {
    return gpu_loops({x, y}, false);
}
Stage &Stage::gpu_blocks(const VarOrRVar &x, const VarOrRVar &y, const VarOrRVar &z) {
    return gpu_loops({x, y, z}, false);
}
Stage &Stage::gpu_threads(const VarOrRVar &x) { return gpu_loops({x}, true); }
Stage &Stage::gpu_threads(const VarOrRVar &x, const VarOrRVar &y) {
    return gpu_loops({x, y}, true);
}
Stage &Stage::gpu_threads(const VarOrRVar &x, const VarOrRVar &y, const VarOrRVar &z) {
    return gpu_loops({x, y, z}, true);
}
Stage &Stage::gpu_tile(const VarOrRVar &x, const VarOrRVar &xo, const VarOrRVar &xi, const Expr &tx,
                       TailStrategy tail) {
    split(x, xo, xi, tx, tail);
    gpu_blocks(xo);
    return gpu_threads(xi);
}
Stage &Stage::gpu_tile(const VarOrRVar &y, const VarOrRVar &x, const VarOrRVar &yo,
                       const VarOrRVar &xo, const VarOrRVar &yi, const VarOrRVar &xi,
                       const Expr &ty, const Expr &tx, TailStrategy tail) {
    tile(y, x, yo, xo, yi, xi, ty, tx, tail);
    gpu_blocks(xo, yo);
    return gpu_threads(xi, yi);
}

namespace {
// unroll, vectorize and parallel with a factor split `v` by it and mark one
// of the loops. As in Halide, the outer loop keeps v's name, so that
// compute_at(f, v) and later directives on v still name a loop (the outer
// one), and the inner loop is v's name with "_i".
VarOrRVar inner_of(const VarOrRVar &v) {
    if (v.is_rvar()) return VarOrRVar(RVar(v.name() + "_i"));
    return VarOrRVar(Var(v.name() + "_i"));
}
}  // namespace

Stage &Stage::unroll(const VarOrRVar &v, const Expr &factor, TailStrategy tail) {
    const VarOrRVar inner = inner_of(v);
    split(v, v, inner, factor, tail);
    return unroll(inner);
}
Stage &Stage::vectorize(const VarOrRVar &v, const Expr &factor, TailStrategy tail) {
    user_assert(as_const_int(factor) != nullptr)
        << "In the schedule of " << stage_name(func_, stage_) << ": vectorize('" << v.name()
        << "', factor) needs a constant factor.";
    const VarOrRVar inner = inner_of(v);
    split(v, v, inner, factor, tail);
    return vectorize(inner);
}
Stage &Stage::parallel(const VarOrRVar &v, const Expr &task_size, TailStrategy tail) {
    const VarOrRVar inner = inner_of(v);
    split(v, v, inner, task_size, tail);
    return parallel(v);
}

Stage &Stage::compute_inline() {
    StageState st = state_of(*sched_, func_, stage_);
    user_assert(func_->updates.empty())
        << "Func " << func_->name
        << " has update definitions and cannot be computed inline. Use compute_root() or "
           "compute_at().";
    st.fs->compute_level = st.fs->store_level = LoopLevel::inlined();
    st.fs->compute_level_set = true;
    st.fs->store_level_set = false;
    return *this;
}

Stage &Stage::compute_root() {
    StageState st = state_of(*sched_, func_, stage_);
    st.fs->compute_level = LoopLevel::root();
    st.fs->compute_level_set = true;
    if (!st.fs->store_level_set) st.fs->store_level = LoopLevel::root();
    return *this;
}

Stage &Stage::compute_at(const Func &consumer, const VarOrRVar &loop) {
    StageState st = state_of(*sched_, func_, stage_);
    user_assert(consumer.defined()) << "compute_at of " << func_->name << " names Func "
                                    << consumer.name() << ", which has no definition.";
    user_assert(consumer.function() != func_)
        << "Func " << func_->name << " cannot be computed at one of its own loops.";
    st.fs->compute_level = {LoopLevel::At, consumer.name(), loop.name()};
    st.fs->compute_level_set = true;
    if (!st.fs->store_level_set) st.fs->store_level = st.fs->compute_level;
    sched_->consumers[consumer.name()] = consumer;
    return *this;
}

Stage &Stage::compute_at(const Stage &consumer, const VarOrRVar &loop) {
    StageState st = state_of(*sched_, func_, stage_);
    user_assert(consumer.func_ != func_)
        << "Func " << func_->name << " cannot be computed at one of its own loops.";
    st.fs->compute_level = {LoopLevel::At, consumer.func_->name, loop.name()};
    st.fs->compute_level_set = true;
    if (!st.fs->store_level_set) st.fs->store_level = st.fs->compute_level;
    return *this;
}

namespace {
bool is_power_of_two(int n) { return n > 0 && (n & (n - 1)) == 0; }
}  // namespace

Stage &Stage::tile_program(const Var &y, const Var &x, const Var &yo, const Var &xo, int rows,
                           int cols, const TileOptions &options) {
    const std::string call =
        "tile_program(" + y.name() + ", " + x.name() + ", ...) on Func " + func_->name;
    // The stage split_k returns stands for its partial Func, which the user
    // has no other handle on: the program is made from the pure stage.
    if (stage_ > 0) {
        for (const FusionDirective &d : sched_->fusions) {
            if (d.kind == FusionDirective::SplitK && d.partial == func_->name) {
                Stage(sched_, func_, 0).tile_program(y, x, yo, xo, rows, cols, options);
                return *this;
            }
        }
    }
    user_assert(stage_ == 0) << call
                             << ": a tile program is made from a Func's pure definition, and "
                                "computes its updates with it. Give the directive on the Func's "
                                "first stage (sch[f]), not on an update.";
    user_assert(is_power_of_two(rows) && is_power_of_two(cols))
        << call << ": tiles of " << rows << " x " << cols
        << ": a tile's rows and columns are powers of two. Round them to one.";
    user_assert(is_power_of_two(options.warps_m) && is_power_of_two(options.warps_n) &&
                options.warps_m * options.warps_n <= 32)
        << call << ": " << options.warps_m << " x " << options.warps_n
        << " warps: warps along each axis are a power of two, at most 32 in all (1024 threads).";
    user_assert(rows % options.warps_m == 0 && cols % options.warps_n == 0)
        << call << ": " << rows << " x " << cols << " tiles do not divide among " << options.warps_m
        << " x " << options.warps_n << " warps.";
    user_assert(is_power_of_two(options.k_tile))
        << call << ": a reduction tile of " << options.k_tile
        << ": it is a power of two. Round it to one.";
    user_assert(options.stages >= 1 && options.stages <= 8)
        << call << ": " << options.stages << " pipeline stages: give 1 to 8.";
    StageState st = state_of(*sched_, func_, stage_);
    user_assert(!st.fs->tile_program)
        << call << ": the Func is a tile program already. Give the directive once.";
    std::vector<VarOrRVar> others;
    for (const std::string &a : func_->args) {
        if (a != y.name() && a != x.name()) others.push_back(Var(a));
    }
    auto ts = std::make_shared<TileProgramSchedule>();
    ts->row_var = y.name();
    ts->col_var = x.name();
    ts->row_block = yo.name();
    ts->col_block = xo.name();
    ts->row_inner = y.name() + "_tile";
    ts->col_inner = x.name() + "_tile";
    ts->rows = rows;
    ts->cols = cols;
    ts->options = options;
    tile(y, x, yo, xo, Var(ts->row_inner), Var(ts->col_inner), rows, cols,
         TailStrategy::GuardWithIf);
    // The loops over tiles outermost, the batch's first: lowering replaces
    // the nest from there with the program (on the GPU, a block per tile).
    std::vector<VarOrRVar> order = others;
    for (const VarOrRVar &v : {VarOrRVar(yo), VarOrRVar(xo), VarOrRVar(Var(ts->row_inner)),
                               VarOrRVar(Var(ts->col_inner))}) {
        order.push_back(v);
    }
    reorder(order);
    ts->outer_loop = order[0].name();
    state_of(*sched_, func_, stage_).fs->tile_program = ts;
    return *this;
}

Stage &Stage::tensorize(const std::string &instruction, TensorizeRounding rounding) {
    user_assert(stage_ > 0) << "tensorize(\"" << instruction << "\") on Func " << func_->name
                            << ": tensorize computes a contraction, an update of the Func. Give "
                               "it on sch[f].update().";
    bool known = false;
    for (const internal::tile::TensorInstruction &t : internal::tile::tensor_instructions()) {
        known |= t.name == instruction;
    }
    user_assert(known) << "tensorize(\"" << instruction << "\") on Func " << func_->name
                       << ": no tensor instruction has that name. Known: "
                       << internal::tile::tensor_instruction_names() << ".";
    state_of(*sched_, func_, stage_).ss->tensorize = instruction;
    state_of(*sched_, func_, stage_).ss->tensorize_rounds =
        rounding == TensorizeRounding::RoundOperands;
    return *this;
}

Stage &Stage::gpu_blocks_per_sm(int blocks) {
    user_assert(blocks >= 1 && blocks <= 32)
        << "gpu_blocks_per_sm(" << blocks << ") on Func " << func_->name
        << ": an SM holds 1 to 32 blocks at once. Ask for a count in that range.";
    StageState st = state_of(*sched_, func_, stage_);
    st.fs->gpu_blocks_per_sm = blocks;
    return *this;
}

Stage &Stage::store_in(MemoryType memory) {
    StageState st = state_of(*sched_, func_, stage_);
    st.fs->memory_type = memory;
    return *this;
}

Stage &Stage::store_root() {
    StageState st = state_of(*sched_, func_, stage_);
    st.fs->store_level = LoopLevel::root();
    st.fs->store_level_set = true;
    return *this;
}

Stage &Stage::store_at(const Func &consumer, const VarOrRVar &loop) {
    StageState st = state_of(*sched_, func_, stage_);
    st.fs->store_level = {LoopLevel::At, consumer.name(), loop.name()};
    st.fs->store_level_set = true;
    sched_->consumers[consumer.name()] = consumer;
    return *this;
}

namespace {

/** Refuses a bound's min or extent that is not a scalar integer of
 * constants and Params (a Var or RVar has no value where the Func's
 * region is decided). */
void check_bound_expr(const FunctionPtr &f, const Var &v, const Expr &e, const char *what,
                      const char *directive) {
    user_assert(e.defined() && e.type().is_int_or_uint() && e.type().is_scalar())
        << "In the schedule of " << f->name << ": the " << what << " of " << directive << "("
        << v.name() << ", ...) must be an integer expression.";
    struct FreeVars : IRVisitor {
        std::string found;
        using IRVisitor::visit;
        void visit(const Variable *op) override {
            if (!op->param && found.empty()) found = op->name;
        }
    } free;
    e.accept(&free);
    user_assert(free.found.empty())
        << "In the schedule of " << f->name << ": the " << what << " of " << directive << "("
        << v.name() << ", ...) uses " << free.found << ", which has no value where the region of "
        << f->name << " is decided. Use constants and Params only.";
}

}  // namespace

Stage &Stage::bound(const Var &v, const Expr &min, const Expr &extent) {
    StageState st = state_of(*sched_, func_, stage_);
    const char *directive = min.defined() ? "bound" : "bound_extent";
    user_assert(stage_ == 0) << "In the schedule of " << stage_name(func_, stage_) << ": "
                             << directive << " applies to the Func " << func_->name
                             << " as a whole; call it on sch[" << func_->name
                             << "], not on an update stage.";
    user_assert(std::find(func_->args.begin(), func_->args.end(), v.name()) != func_->args.end())
        << "In the schedule of " << func_->name << ": " << directive << " names '" << v.name()
        << "', which is not one of the Vars of " << func_->name << " (" << join(func_->args, ", ")
        << "). Bound one of those.";
    if (min.defined()) check_bound_expr(func_, v, min, "min", directive);
    check_bound_expr(func_, v, extent, "extent", directive);
    if (const int64_t *c = as_const_int(extent)) {
        user_assert(*c > 0) << "In the schedule of " << func_->name << ": the extent of "
                            << directive << "(" << v.name() << ", ...) is " << *c
                            << "; it must be positive.";
    }
    DeclaredBound b{v.name(), min.defined() ? cast(Int(32), min) : Expr(), cast(Int(32), extent)};
    auto &bounds = st.fs->bounds;
    auto it = std::find_if(bounds.begin(), bounds.end(),
                           [&](const DeclaredBound &d) { return d.var == b.var; });
    if (it != bounds.end()) *it = b;
    else bounds.push_back(b);
    return *this;
}

Stage &Stage::bound_extent(const Var &v, const Expr &extent) { return bound(v, Expr(), extent); }

std::string Stage::describe() const { return stage_name(func_, stage_); }

std::string Stage::dump() const {
    StageState st = state_of(*sched_, func_, stage_);
    std::ostringstream s;
    s << describe() << ": compute " << st.fs->compute_level.to_string() << ", loops:";
    for (const Dim &d : st.ss->dims) s << " " << for_type_name(d.for_type) << "(" << d.var << ")";
    return s.str();
}

}  // namespace loom

namespace loom {

namespace {

/** The Function whose update reduces X over `r`: X itself, or the inline
 * reduction (sum, maximum, ...) that X's pure definition calls at X's
 * Vars. */
FunctionPtr reduction_behind(const Func &X, const RVar &r, const char *directive) {
    user_assert(X.defined()) << directive << " of Func " << X.name()
                             << ", which has no definition. Define it first.";
    const FunctionPtr &f = X.function();
    auto reduces_over = [&](const FunctionPtr &g) {
        if (g->updates.size() != 1 || !g->updates[0].rdom) return false;
        for (const ReductionVariable &rv : g->updates[0].rdom->domain) {
            if (rv.var == r.name()) return true;
        }
        return false;
    };
    if (!f->updates.empty()) {
        user_assert(reduces_over(f))
            << directive << "(" << f->name << ", " << r.name() << "): Func " << f->name
            << " must have exactly one update definition, reducing over RVar " << r.name()
            << ". It has " << f->updates.size() << " update definition(s).";
        return f;
    }
    const Call *c = f->init.values.size() == 1 ? f->init.values[0].as<Call>() : nullptr;
    if (c && c->call_type == Call::Func && c->func && c->func->is_inline_reduction &&
        c->args.size() == f->args.size()) {
        std::set<std::string> vars;
        for (const Expr &a : c->args) {
            const Variable *v = a.as<Variable>();
            if (v && std::find(f->args.begin(), f->args.end(), v->name) != f->args.end())
                vars.insert(v->name);
        }
        if (vars.size() == f->args.size() && reduces_over(c->func)) return c->func;
    }
    user_error << directive << "(" << f->name << ", " << r.name() << "): Func " << f->name
               << " is not a reduction over RVar " << r.name()
               << ". Name a Func defined as an inline reduction over it, e.g. " << f->name
               << "(x) = sum(g(x, " << r.name() << ")), or one with an update definition "
               << "that reduces over it.";
}

}  // namespace

Stage Schedule::rolling_update(const Func &X, const RVar &r) {
    FunctionPtr red = reduction_behind(X, r, "rolling_update");
    for (const FusionDirective &d : contents_->fusions) {
        user_assert(d.func != X.name())
            << "rolling_update(" << X.name() << ", " << r.name() << "): Func " << X.name()
            << " already has a "
            << (d.kind == FusionDirective::SplitK ? "split_k" : "rolling_update")
            << " directive; give each reduction chain one.";
    }
    contents_->fusions.push_back(
        {FusionDirective::RollingUpdate, X.name(), red->name, r.name(), Expr(), "", ""});
    contents_->consumers[X.name()] = X;
    return Stage(contents_, red, 1);
}

Stage Schedule::split_k(const Func &X, const RVar &r, const Expr &chunks, const Var &chunk,
                        ChunkLayout layout) {
    FunctionPtr red = reduction_behind(X, r, "split_k");
    user_assert(chunks.defined() && chunks.type().is_int_or_uint() && chunks.type().is_scalar())
        << "split_k(" << X.name() << ", " << r.name() << "): the number of chunks must be an "
        << "integer.";
    if (const int64_t *k = as_const_int(chunks)) {
        user_assert(*k > 0) << "split_k(" << X.name() << ", " << r.name()
                            << "): the number of chunks is " << *k << "; it must be positive.";
    }
    for (const std::string &a : X.function()->args) {
        user_assert(a != chunk.name())
            << "split_k(" << X.name() << ", " << r.name() << "): the chunk Var '" << chunk.name()
            << "' is already a Var of " << X.name() << ". Use a fresh Var.";
    }
    for (const FusionDirective &d : contents_->fusions) {
        user_assert(d.func != X.name())
            << "split_k(" << X.name() << ", " << r.name() << "): Func " << X.name()
            << " already has a "
            << (d.kind == FusionDirective::SplitK ? "split_k" : "rolling_update")
            << " directive; give each reduction chain one.";
    }
    // A stand-in for X's partial, with the loops the real one (made during
    // lowering) will have, so that its schedule can be checked as written.
    auto partial = std::make_shared<FunctionContents>();
    partial->name = X.name() + "_partial";
    partial->args = {chunk.name()};  // outermost, as in the real partial
    for (const std::string &a : X.function()->args) partial->args.push_back(a);
    partial->output_types = red->output_types;
    std::vector<Expr> pure;
    for (const std::string &a : partial->args) pure.push_back(Var(a));
    Type t = red->output_types[0];
    partial->init.args = pure;
    partial->init.values = {make_zero(t)};
    Definition u;
    u.args = pure;
    u.rdom = red->updates[0].rdom;
    Expr self = Call::make(t, partial->name, pure, Call::Func);
    Expr rv;
    for (size_t i = 0; i < u.rdom->domain.size(); i++) {
        if (u.rdom->domain[i].var == r.name()) rv = RVar(u.rdom, static_cast<int>(i));
    }
    u.values = {self + cast(t, rv)};
    partial->updates.push_back(u);
    contents_->fusions.push_back({FusionDirective::SplitK, X.name(), red->name, r.name(),
                                  cast(Int(32), chunks), chunk.name(), partial->name, layout});
    contents_->consumers[X.name()] = X;
    return Stage(contents_, partial, 1);
}

Stage Schedule::in(const BufferParam &input, const std::vector<Var> &vars) {
    const std::string what = "in(" + input.name() + ", ...)";
    user_assert(static_cast<int>(vars.size()) == input.dimensions())
        << what << ": " << input.name() << " has " << input.dimensions() << " dimensions but "
        << vars.size() << " Vars were given; name one Var per dimension, outermost first.";
    std::vector<std::string> names;
    for (const Var &v : vars) {
        user_assert(std::find(names.begin(), names.end(), v.name()) == names.end())
            << what << ": the Var " << v.name() << " is given twice; each dimension needs its own.";
        names.push_back(v.name());
    }
    auto existing = contents_->input_wrappers.find(input.name());
    if (existing != contents_->input_wrappers.end()) {
        user_assert(existing->second->args == names)
            << what << " was called before with other Vars; call it once, or with the same Vars.";
        return Stage(contents_, existing->second, 0);
    }
    auto w = std::make_shared<FunctionContents>();
    w->name = input.name() + "_in";
    w->copy_of_input = input.name();
    w->args = names;
    w->output_types = {input.type()};
    std::vector<Expr> pure(vars.begin(), vars.end());
    w->init.args = pure;
    w->init.values = {input(pure)};
    contents_->input_wrappers[input.name()] = w;
    return Stage(contents_, w, 0);
}

}  // namespace loom
