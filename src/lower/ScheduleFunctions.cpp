// Builds the loop nests of the pipeline: see ScheduleFunctions.h.
#include "lower/ScheduleFunctions.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <set>

#include "gpu/CrossThreadReductions.h"
#include "ir/IRMutator.h"
#include "ir/IRVisitor.h"
#include "ir/Substitute.h"
#include "loom/Error.h"
#include "loom/IROperator.h"

namespace loom {
namespace internal {

std::string loop_name(const std::string &func, int stage, const std::string &var) {
    return func + ".s" + std::to_string(stage) + "." + var;
}

bool LoweringEnv::is_output(const std::string &name) const {
    for (const FunctionPtr &f : outputs) {
        if (f->name == name) return true;
    }
    return false;
}

const FusedGroup *LoweringEnv::group_led_by(const std::string &name) const {
    for (const FusedGroup &g : groups) {
        if (g.leader == name) return &g;
    }
    return nullptr;
}

const FusedGroup *LoweringEnv::group_following(const std::string &name) const {
    for (const FusedGroup &g : groups) {
        if (g.leader == name) continue;
        if (std::find(g.members.begin(), g.members.end(), name) != g.members.end()) return &g;
    }
    return nullptr;
}

namespace {

Expr int_var(const std::string &name) { return Variable::make(Int(32), name); }

/** Replaces calls to inlined Funcs by their (already inlined) values, and
 * reads of a wrapped input (Schedule::in) by calls to its wrapper. */
class InlineCalls : public IRMutator {
  public:
    InlineCalls(const std::map<std::string, FunctionPtr> &inlined,
                const std::map<std::string, FunctionPtr> &wrappers)
        : inlined(inlined), wrappers(wrappers) {}
    bool redirect_inputs = true;  // false in a wrapper's own definition

  protected:
    using IRMutator::visit;
    Expr visit(const Call *op) override {
        Expr e = IRMutator::visit(op);
        op = e.as<Call>();
        if (op && op->call_type == Call::Image && redirect_inputs) {
            auto w = wrappers.find(op->name);
            if (w != wrappers.end()) {
                // (Then inlined below, like any call, if the wrapper is.)
                e = Call::make(op->type, w->second->name, op->args, Call::Func, w->second);
                op = e.as<Call>();
            }
        }
        if (!op || op->call_type != Call::Func) return e;
        auto it = inlined.find(op->name);
        if (it == inlined.end()) return e;
        const FunctionPtr &g = it->second;
        std::map<std::string, Expr> args;
        for (size_t i = 0; i < g->args.size(); i++) args[g->args[i]] = op->args[i];
        return substitute(args, g->init.values[op->value_index]);
    }

  private:
    const std::map<std::string, FunctionPtr> &inlined, &wrappers;
};

/** Whether a Func in `all` uses the input `name` (reads it, or its shape). */
bool reads_input(const std::map<std::string, FunctionPtr> &all, const std::string &name) {
    for (const ParameterPtr &p : find_parameters(all)) {
        if (p->is_buffer && p->name == name) return true;
    }
    return false;
}

Definition inline_definition(const Definition &d, InlineCalls &inliner) {
    Definition r = d;
    for (Expr &v : r.values) v = inliner.mutate(v);
    for (Expr &a : r.args) a = inliner.mutate(a);
    if (d.rdom && d.rdom->predicate.defined()) {
        Expr p = inliner.mutate(d.rdom->predicate);
        if (!p.same_as(d.rdom->predicate)) {
            auto dom = std::make_shared<ReductionDomainContents>(*d.rdom);
            dom->predicate = p;
            r.rdom = dom;
        }
    }
    return r;
}

}  // namespace

LoweringEnv make_lowering_env(const std::vector<FunctionPtr> &outputs, const ScheduleContents &s) {
    LoweringEnv env;
    env.outputs = outputs;
    std::map<std::string, FunctionPtr> all = find_transitive_calls(outputs);
    std::vector<std::string> order = realization_order(outputs, all);
    // Wrapped inputs (Schedule::in) that the pipeline reads: their wrappers
    // read only the input, so they come first.
    std::map<std::string, FunctionPtr> wrappers;
    for (const auto &kv : s.input_wrappers) {
        if (!reads_input(all, kv.first)) continue;
        const FunctionPtr &w = kv.second;
        user_assert(!all.count(w->name))
            << "Schedule::in(" << kv.first << ") names its wrapper Func " << w->name
            << ", but the pipeline has a Func of that name already. Rename that Func.";
        wrappers[kv.first] = w;
        all[w->name] = w;
        order.insert(order.begin(), w->name);
    }

    // Check that the Schedule talks about this pipeline's Funcs.
    for (const auto &kv : s.funcs) {
        auto it = all.find(kv.first);
        if (it != all.end() && it->second != kv.second.func) {
            user_error << "The Schedule names a Func '" << kv.first
                       << "' that is not the one this pipeline uses (two Funcs share that name).";
        }
    }

    std::map<std::string, FunctionPtr> inlined;
    InlineCalls inliner(inlined, wrappers);
    for (const std::string &name : order) {
        const FunctionPtr &f = all.at(name);
        inliner.redirect_inputs = true;
        for (const auto &w : wrappers) inliner.redirect_inputs &= w.second != f;
        FuncSchedule fs = get_func_schedule(s, f);
        bool output = std::find(outputs.begin(), outputs.end(), f) != outputs.end();
        // A copy with the inlined Funcs substituted; the user's Func is untouched.
        auto copy = make_lowered_function(*f);
        copy->init = inline_definition(f->init, inliner);
        for (Definition &u : copy->updates) u = inline_definition(u, inliner);
        if (output) {
            user_assert(!fs.compute_level_set || fs.compute_level.is_root())
                << "Func " << name << " is an output of the pipeline; it is always computed at "
                << "root and cannot be computed inline or at another Func's loop.";
            fs.compute_level = fs.store_level = LoopLevel::root();
        } else if (fs.compute_level.is_inlined() && f->updates.empty()) {
            user_assert(fs.bounds.empty())
                << "Func " << name << " is bounded in " << fs.bounds[0].var
                << " (bound or bound_extent), but it is computed inline, where it has no region "
                   "of its own. Compute it somewhere (compute_root or compute_at), or drop the "
                   "bound.";
            inlined[name] = copy;
            continue;
        }
        if (fs.compute_level.kind == LoopLevel::At) {
            bool made_by_directive = false;  // split_k's partials exist from lowering on
            for (const FusionDirective &d : s.fusions) {
                made_by_directive = made_by_directive || d.partial == fs.compute_level.func;
            }
            user_assert(all.count(fs.compute_level.func) || made_by_directive)
                << "Func " << name << " is computed at " << fs.compute_level.to_string()
                << ", but Func " << fs.compute_level.func << " is not part of this pipeline.";
        }
        fs.func = copy;
        env.funcs[name] = copy;
        env.schedules[name] = fs;
        env.order.push_back(name);
    }
    return env;
}

namespace {

/** The stage's splits with every variable that a split replaces by a loop
 * of the same name (split(x, x, xi, 8), fuse(x, y, x), as Halide allows)
 * given a stage-internal name, in that split and in the records before it
 * that made it. Otherwise the variable's definition and its bounds
 * (loop_min, loop_max) would be shadowed by the new loop's. `original`
 * maps each renamed Var or RVar of the definition to its internal name. */
std::vector<Split> unshadowed_splits(const StageSchedule &ss,
                                     std::map<std::string, std::string> &original) {
    std::vector<Split> splits = ss.splits;
    int fresh = 0;
    for (size_t k = splits.size(); k-- > 0;) {
        Split &s = splits[k];
        std::vector<std::string *> consumed, produced;
        if (s.kind == Split::FuseVars) {
            consumed = {&s.outer, &s.inner};
            produced = {&s.old_var};
        } else {
            consumed = {&s.old_var};
            produced = {&s.outer};
            if (s.kind == Split::SplitVar) produced.push_back(&s.inner);
        }
        for (std::string *c : consumed) {
            bool shadowed = false;
            for (std::string *p : produced) shadowed = shadowed || *p == *c;
            if (!shadowed) continue;
            const std::string name = *c, internal = name + ".pre" + std::to_string(fresh++);
            *c = internal;
            // The record that made it, if any; else it is the definition's.
            bool made = false;
            for (size_t j = k; j-- > 0 && !made;) {
                Split &e = splits[j];
                std::vector<std::string *> outs = {&e.outer};
                if (e.kind == Split::SplitVar) outs.push_back(&e.inner);
                if (e.kind == Split::FuseVars) outs = {&e.old_var};
                for (std::string *o : outs) {
                    if (*o == name) {
                        *o = internal;
                        made = true;
                    }
                }
            }
            if (!made) original[name] = internal;
        }
    }
    return splits;
}

/** Whether `e` calls Func f, a Func computed inside f's loops, or a
 * loop-partitioning hint: a test that must stay where the stage's point is
 * computed. */
bool reads_stage_or_hint(const Expr &e, const LoweringEnv &env, const std::string &f) {
    struct Finder : IRVisitor {
        const LoweringEnv &env;
        const std::string &f;
        bool found = false;
        Finder(const LoweringEnv &env, const std::string &f) : env(env), f(f) {}
        using IRVisitor::visit;
        void visit(const Call *op) override {
            auto s = env.schedules.find(op->name);
            found |= op->name == f || op->is_intrinsic(Call::likely) ||
                     (s != env.schedules.end() && s->second.compute_level.kind == LoopLevel::At &&
                      s->second.compute_level.func == f);
            IRVisitor::visit(op);
        }
    } finder(env, f);
    e.accept(&finder);
    return finder.found;
}

void split_conjuncts(const Expr &e, std::vector<Expr> *out) {
    if (const And *a = e.as<And>()) {
        split_conjuncts(a->a, out);
        split_conjuncts(a->b, out);
    } else {
        out->push_back(e);
    }
}

/** Wraps `body` in the definitions of the variables that `splits` (a
 * stage's, with their stage-local names under `prefix`) split away, each
 * from the loops that replace it, with the guards their tails need. Later
 * splits refine earlier ones, so their definitions wrap outside. */
Stmt define_split_variables(const std::string &prefix, const std::vector<Split> &splits,
                            Stmt body) {
    auto var = [&](const std::string &v) { return int_var(prefix + v); };
    for (const Split &s : splits) {
        Expr old = var(s.old_var);
        if (s.kind == Split::SplitVar) {
            Expr outer = var(s.outer), inner = var(s.inner);
            Expr base = var(s.old_var + ".loop_min") + outer * s.factor;
            Expr guard;
            switch (s.tail) {
            case TailStrategy::ShiftInwards:
                base = min(base, var(s.old_var + ".loop_max") + 1 - s.factor);
                break;
            case TailStrategy::RoundUp: break;
            case TailStrategy::Auto:
            case TailStrategy::GuardWithIf:
                guard = likely(old <= var(s.old_var + ".loop_max"));
                break;
            }
            if (guard.defined()) body = IfThenElse::make(guard, body);
            Expr value = base + inner;
            if (s.tail != TailStrategy::ShiftInwards) {
                // The split arithmetic loop_min + xo * f + xi is bounded by
                // interval analysis through both loop_min and loop_max (via
                // xo's extent); when those are per-iteration lets it loses
                // their correlation and overestimates, in both directions.
                // State the range these tails really keep, [loop_min,
                // loop_max + f - 1], through each bound alone. ShiftInwards'
                // arithmetic is already bounded that way, and a promise there
                // would hide the constant extents of tiles from the simplifier.
                Expr loop_min = var(s.old_var + ".loop_min"),
                     loop_max = var(s.old_var + ".loop_max");
                value = make_intrinsic(Int(32), Call::promise_clamped,
                                       {value, loop_min, loop_max + (s.factor - 1)});
            }
            body = LetStmt::make(prefix + s.old_var, value, body);
        } else if (s.kind == Split::FuseVars) {
            // Interval arithmetic cannot see that t / e and t % e stay within
            // the fused loops' ranges when e is symbolic; promise it.
            Expr fused = old;
            Expr inner_extent = var(s.inner + ".loop_extent");
            auto promise = [&](const std::string &v, const Expr &value) {
                return make_intrinsic(Int(32), Call::promise_clamped,
                                      {value, var(v + ".loop_min"), var(v + ".loop_max")});
            };
            body = LetStmt::make(
                prefix + s.inner,
                promise(s.inner, fused % inner_extent + var(s.inner + ".loop_min")), body);
            body = LetStmt::make(
                prefix + s.outer,
                promise(s.outer, fused / inner_extent + var(s.outer + ".loop_min")), body);
        } else {
            body = LetStmt::make(prefix + s.old_var, var(s.outer), body);
        }
    }

    return body;
}

/** Whether an update of f has an element that becomes select(test, x, its
 * own old value), as those of an update keeping a point do. */
bool may_keep_a_point(const FunctionPtr &f, const Definition &def) {
    for (size_t k = 0; k < def.values.size(); k++) {
        const Select *s = def.values[k].as<Select>();
        const Call *old = s ? s->false_value.as<Call>() : nullptr;
        if (old && old->call_type == Call::Func && old->name == f->name &&
            old->value_index == static_cast<int>(k)) {
            return true;
        }
    }
    return false;
}

}  // namespace

Stmt build_stage(const LoweringEnv &env, const FunctionPtr &f, int stage, const StageSchedule &ss) {
    const Definition &def = stage == 0 ? f->init : f->updates[stage - 1];
    std::string prefix = f->name + ".s" + std::to_string(stage) + ".";
    auto var = [&](const std::string &v) { return int_var(prefix + v); };
    std::map<std::string, std::string> internal;  // renamed Vars and RVars
    const std::vector<Split> splits = unshadowed_splits(ss, internal);
    auto internal_name = [&](const std::string &v) {
        auto it = internal.find(v);
        return it == internal.end() ? v : it->second;
    };

    // Stage-local names for the definition's pure Vars and RVars.
    std::map<std::string, Expr> rename;
    for (const std::string &a : f->args) rename[a] = var(internal_name(a));
    std::vector<ReductionVariable> rvars = rvars_of(def);
    for (const ReductionVariable &rv : rvars) rename[rv.var] = var(internal_name(rv.var));

    std::vector<Expr> values, args;
    for (const Expr &v : def.values) values.push_back(substitute(rename, v));
    for (const Expr &a : def.args) args.push_back(substitute(rename, a));
    Stmt body = Provide::make(f->name, values, args);
    // A Tuple update that may keep the point where a value reaches an
    // extreme (argmax: an element becomes select(test, x, its old value)),
    // with an RVar on GPU threads: lets that say where the point lies in
    // the serial order, its RVars outermost first. The threads that share
    // the update keep the point the serial loop would by them
    // (lower_block_level_code); they are intrinsics, which no pass inlines
    // or drops (the RVars' own lets may be: an unrolled loop's are
    // constants plus the thread's index).
    if (stage > 0 && values.size() > 1 && may_keep_a_point(f, def) &&
        std::any_of(ss.dims.begin(), ss.dims.end(),
                    [](const Dim &d) { return d.is_rvar && d.for_type == ForType::GPUThread; })) {
        for (auto it = rvars.rbegin(); it != rvars.rend(); ++it) {
            body = LetStmt::make(prefix + internal_name(it->var) + ".rank",
                                 Call::make(Int(32), gpu_intrinsic::point_rank,
                                            {rename.at(it->var)}, Call::Intrinsic),
                                 body);
        }
    }
    // The reduction domain's predicate is tested at every point; a conjunct
    // that reads only some of the stage's loops (e.g. a tile partial's test
    // of its producers, the same for the whole tile) is tested once per
    // iteration of the innermost of them instead. Conjuncts that read what
    // the stage writes, names the splits define, or are hints for loop
    // partitioning stay at the point.
    std::vector<Expr> per_loop;
    if (def.rdom && def.rdom->predicate.defined()) {
        std::set<std::string> loops;
        for (const Dim &d : ss.dims) loops.insert(prefix + d.var);
        std::vector<Expr> conjuncts;
        split_conjuncts(substitute(rename, def.rdom->predicate), &conjuncts);
        Expr at_point;
        for (const Expr &c : conjuncts) {
            bool movable = !reads_stage_or_hint(c, env, f->name);
            for (const std::string &v : free_variables(c)) {
                movable = movable && (v.compare(0, prefix.size(), prefix) != 0 || loops.count(v));
            }
            if (movable) {
                per_loop.push_back(c);
            } else {
                at_point = at_point.defined() ? (at_point && c) : c;
            }
        }
        if (at_point.defined()) body = IfThenElse::make(at_point, body);
    }

    // Define each split-away variable from the loops that replace it.
    body = define_split_variables(prefix, splits, body);

    // The loops, innermost first. Their extent is written in terms of
    // loop_min and loop_max so that interval analysis can cancel min + extent
    // - 1 back to loop_max instead of losing the correlation.
    auto test_inside = [&](const std::function<bool(const Expr &)> &here) {
        for (auto c = per_loop.begin(); c != per_loop.end();) {
            if (here(*c)) {
                body = IfThenElse::make(*c, body);
                c = per_loop.erase(c);
            } else {
                ++c;
            }
        }
    };
    for (auto it = ss.dims.rbegin(); it != ss.dims.rend(); ++it) {
        const std::string loop = prefix + it->var;
        test_inside([&](const Expr &c) { return expr_uses_var(c, loop); });
        Expr mn = var(it->var + ".loop_min"), mx = var(it->var + ".loop_max");
        body = For::make(loop, mn, mx - mn + 1, it->for_type, body);
    }
    test_inside([](const Expr &) { return true; });

    // Loop bounds of the split products, from those of what they split.
    auto define_bounds = [&](const std::string &v, Expr mn, Expr mx, Stmt s) {
        s = LetStmt::make(prefix + v + ".loop_extent",
                          var(v + ".loop_max") - var(v + ".loop_min") + 1, s);
        s = LetStmt::make(prefix + v + ".loop_max", mx, s);
        return LetStmt::make(prefix + v + ".loop_min", mn, s);
    };
    for (auto it = splits.rbegin(); it != splits.rend(); ++it) {
        const Split &s = *it;
        if (s.kind == Split::SplitVar) {
            Expr old_extent = var(s.old_var + ".loop_extent");
            body = define_bounds(s.inner, 0, s.factor - 1, body);
            body = define_bounds(s.outer, 0, (old_extent + s.factor - 1) / s.factor - 1, body);
        } else if (s.kind == Split::FuseVars) {
            body = define_bounds(s.old_var, 0,
                                 var(s.outer + ".loop_extent") * var(s.inner + ".loop_extent") - 1,
                                 body);
        } else {
            body = define_bounds(s.outer, var(s.old_var + ".loop_min"),
                                 var(s.old_var + ".loop_max"), body);
        }
    }
    // Bounds of the original variables: pure Vars span the region bounds
    // inference asks for; RVars span their reduction domain.
    for (const ReductionVariable &rv : rvars) {
        Expr mn = substitute(rename, rv.min), ext = substitute(rename, rv.extent);
        body =
            define_bounds(internal_name(rv.var), var(rv.var + ".min"), var(rv.var + ".max"), body);
        body = LetStmt::make(prefix + rv.var + ".max", mn + ext - 1, body);
        body = LetStmt::make(prefix + rv.var + ".min", mn, body);
    }
    for (const std::string &a : f->args) {
        body = define_bounds(internal_name(a), var(a + ".min"), var(a + ".max"), body);
    }
    return body;
}

namespace {

Stmt build_produce(const LoweringEnv &env, const FunctionPtr &f, const FuncSchedule &fs) {
    std::vector<Stmt> stages;
    for (size_t k = 0; k < fs.stages.size(); k++) {
        stages.push_back(build_stage(env, f, static_cast<int>(k), fs.stages[k]));
    }
    return ProducerConsumer::make_produce(f->name, Block::make(stages));
}

/** Appends `steps` to the body of the loop named `loop`. */
class AppendToLoop : public IRMutator {
  public:
    AppendToLoop(const std::string &loop, Stmt steps) : loop(loop), steps(std::move(steps)) {}
    bool found = false;

  protected:
    using IRMutator::visit;
    Stmt visit(const For *op) override {
        if (op->name != loop) return IRMutator::visit(op);
        found = true;
        return For::make(op->name, op->min, op->extent, op->for_type, Block::make(op->body, steps),
                         op->attributes);
    }

  private:
    std::string loop;
    Stmt steps;
};

/** The production of a fused group: every member's pure definition, then
 * the leader's update loops with the other members' steps placed, in
 * group order, in the loop where they meet. Their Vars are the leader's
 * variables of the same names: its loops', or, where the leader's update
 * splits, fuses or renames the Vars they share (whose loops are all around
 * the meeting point), defined there from those loops as inside the
 * leader's, with the same guards. */
Stmt build_group_produce(const LoweringEnv &env, const FusedGroup &g) {
    std::vector<Stmt> stages;
    for (const std::string &m : g.members) {
        stages.push_back(build_stage(env, env.funcs.at(m), 0, env.schedules.at(m).stages[0]));
    }
    const FunctionPtr &leader = env.funcs.at(g.leader);
    const StageSchedule &leader_update = env.schedules.at(g.leader).stages[1];
    Stmt update = build_stage(env, leader, 1, leader_update);
    const Definition &lu = leader->updates[0];
    std::map<std::string, std::string> internal;
    const std::vector<Split> splits = unshadowed_splits(leader_update, internal);
    auto internal_name = [&](const std::string &v) {
        auto it = internal.find(v);
        return it == internal.end() ? v : it->second;
    };
    std::vector<Split> row_splits;
    std::set<std::string> row_vars;
    for (const std::string &d : g.row_dims) row_vars.insert(internal_name(d));
    for (const Split &s : splits) {
        if (s.kind == Split::FuseVars) {
            if (!row_vars.count(s.outer) || !row_vars.count(s.inner)) continue;
            row_vars.insert(s.old_var);
        } else {
            if (!row_vars.count(s.old_var)) continue;
            row_vars.insert(s.outer);
            if (s.kind == Split::SplitVar) row_vars.insert(s.inner);
        }
        row_splits.push_back(s);
    }
    std::map<std::string, Expr> rename;
    for (const std::string &a : leader->args) {
        rename[a] = int_var(loop_name(g.leader, 1, internal_name(a)));
    }
    for (const ReductionVariable &rv : rvars_of(lu)) {
        rename[rv.var] = int_var(loop_name(g.leader, 1, internal_name(rv.var)));
    }
    std::vector<Stmt> steps;
    for (const std::string &m : g.members) {
        if (m == g.leader) continue;
        const FunctionPtr &f = env.funcs.at(m);
        const Definition &u = f->updates[0];
        std::vector<Expr> values, args;
        for (const Expr &v : u.values) values.push_back(substitute(rename, v));
        for (const Expr &a : u.args) args.push_back(substitute(rename, a));
        steps.push_back(Provide::make(m, values, args));
    }
    // A lone reduction (split_k as rfactor) has no other members' steps.
    if (!steps.empty()) {
        Stmt body = Block::make(steps);
        if (lu.rdom && lu.rdom->predicate.defined()) {
            body = IfThenElse::make(substitute(rename, lu.rdom->predicate), body);
        }
        body = define_split_variables(g.leader + ".s1.", row_splits, body);
        AppendToLoop append(loop_name(g.leader, 1, g.loop_var), body);
        update = append.mutate(update);
        internal_assert(append.found) << "fused loop " << g.loop_var << " of " << g.leader;
    }
    stages.push_back(update);
    Stmt s = Block::make(stages);
    for (auto it = g.members.rbegin(); it != g.members.rend(); ++it) {
        s = ProducerConsumer::make_produce(*it, s);
    }
    return s;
}

bool stmt_calls(const Stmt &s, const std::string &func) {
    struct Finder : IRVisitor {
        const std::string *name;
        bool found = false;
        using IRVisitor::visit;
        void visit(const Call *op) override {
            if (op->call_type == Call::Func && op->name == *name) found = true;
            IRVisitor::visit(op);
        }
    } finder;
    finder.name = &func;
    s.accept(&finder);
    return finder.found;
}

/** The name of the innermost loop that encloses every call to any of
 * `funcs` (a Func, or the members of a fused group, which are computed
 * together), or "" if no loop does. Unrolled loops are skipped: a Func computed there would
 * be recomputed once per unrolled copy. Vectorized loops are not: there the
 * vectorizer widens the Func's storage and its loops run once for all lanes,
 * so a reduction used by a vectorized stage becomes a vector reduction. A
 * call inside the production of one of `together` counts where that
 * production is, outside its loops (the elements of one Tuple). */
std::string innermost_loop_enclosing_calls(const Stmt &s, const std::set<std::string> &funcs,
                                           const std::set<std::string> &together = {}) {
    struct Finder : IRVisitor {
        const std::set<std::string> *names;
        const std::set<std::string> *together;
        std::vector<std::string> loops;
        size_t visible = SIZE_MAX;        // loops a call sees: those outside a sibling's production
        std::vector<std::string> common;  // common prefix of the loop stacks of all calls
        bool any = false;
        using IRVisitor::visit;
        void visit(const For *op) override {
            bool push = op->for_type != ForType::Unrolled;
            if (push) loops.push_back(op->name);
            IRVisitor::visit(op);
            if (push) loops.pop_back();
        }
        void visit(const ProducerConsumer *op) override {
            const size_t saved = visible;
            if (op->is_producer && together->count(op->name))
                visible = std::min(visible, loops.size());
            IRVisitor::visit(op);
            visible = saved;
        }
        void visit(const Call *op) override {
            if (op->call_type == Call::Func && names->count(op->name)) {
                const size_t seen = std::min(loops.size(), visible);
                if (!any) {
                    common.assign(loops.begin(), loops.begin() + seen);
                    any = true;
                } else {
                    size_t n = 0;
                    while (n < common.size() && n < seen && common[n] == loops[n]) n++;
                    common.resize(n);
                }
            }
            IRVisitor::visit(op);
        }
    } finder;
    finder.names = &funcs;
    finder.together = &together;
    s.accept(&finder);
    return finder.common.empty() ? "" : finder.common.back();
}

/** Wraps the body of the loop named `loop` (or the whole statement when
 * `loop` is empty) with `wrap`. Reports whether it found the loop. */
class InjectAtLoop : public IRMutator {
  public:
    template <typename F> InjectAtLoop(const std::string &loop, F wrap) : loop(loop), wrap(wrap) {}
    bool found = false;

  protected:
    using IRMutator::visit;
    Stmt visit(const For *op) override {
        if (op->name == loop && !found) {
            found = true;
            return For::make(op->name, op->min, op->extent, op->for_type, wrap(op->body),
                             op->attributes);
        }
        return IRMutator::visit(op);
    }

  private:
    std::string loop;
    std::function<Stmt(const Stmt &)> wrap;
};

/** The loops of `consumer`'s stages named `var` that enclose a call to
 * `func`, as loop names. `loop_vars` gets the names of all of the
 * consumer's loops (each once, outermost first), for an error to list. */
std::vector<std::string> candidate_loops(const Stmt &s, const std::string &consumer,
                                         const std::string &var, const std::string &func,
                                         std::vector<std::string> *loop_vars) {
    struct Finder : IRVisitor {
        std::string consumer, var, func;
        std::vector<std::string> found, all, *loop_vars;
        using IRVisitor::visit;
        void visit(const For *op) override {
            const std::string prefix = consumer + ".s";
            if (op->name.compare(0, prefix.size(), prefix) == 0) {
                size_t dot = op->name.find('.', prefix.size());
                const std::string v = dot == std::string::npos ? "" : op->name.substr(dot + 1);
                if (!v.empty() &&
                    std::find(loop_vars->begin(), loop_vars->end(), v) == loop_vars->end()) {
                    loop_vars->push_back(v);
                }
                if (!v.empty() && v == var) {
                    all.push_back(op->name);
                    if (stmt_calls(op->body, func)) found.push_back(op->name);
                }
            }
            IRVisitor::visit(op);
        }
    } finder;
    finder.consumer = consumer;
    finder.var = var;
    finder.func = func;
    finder.loop_vars = loop_vars;
    s.accept(&finder);
    return finder.found.empty() ? finder.all : finder.found;
}

std::string resolve_loop_level(const Stmt &s, const LoopLevel &level, const std::string &func,
                               const char *what, const FuncOrigins &origins) {
    if (level.is_root()) return "";
    std::vector<std::string> present;
    std::vector<std::string> loops = candidate_loops(s, level.func, level.var, func, &present);
    if (loops.empty()) {
        std::string list;
        for (const std::string &n : present) list += (list.empty() ? "" : ", ") + n;
        user_error << func_for_message(origins, func) << " is " << what << " at " << level.func
                   << "." << level.var << ", but " << level.func << " has no loop '" << level.var
                   << "' (after its splits)"
                   << (list.empty() ? ", or " + level.func +
                                          " is inlined or itself computed inside Func " + func
                                    : "; its loops are: " + list)
                   << ". Name a loop of a Func that is computed before being used.";
    }
    return loops.front();
}

}  // namespace

Stmt schedule_functions(const LoweringEnv &env) {
    // The outputs' productions, in order.
    std::vector<Stmt> outputs;
    for (const FunctionPtr &f : env.outputs) {
        outputs.push_back(build_produce(env, env.funcs.at(f->name), env.schedules.at(f->name)));
    }
    Stmt s = Block::make(outputs);

    // Inject the other Funcs, consumers before their producers, so that each
    // producer wraps everything that may use it.
    for (auto it = env.order.rbegin(); it != env.order.rend(); ++it) {
        const std::string &name = *it;
        if (env.is_output(name)) continue;
        // A group's other members are produced and stored with its leader.
        if (env.group_following(name)) continue;
        const FusedGroup *group = env.group_led_by(name);
        const FunctionPtr &f = env.funcs.at(name);
        const FuncSchedule &fs = env.schedules.at(name);
        bool used = stmt_calls(s, name);
        for (size_t k = 0; group && k < group->members.size(); k++) {
            used = used || stmt_calls(s, group->members[k]);
        }
        if (!used) continue;  // every use was inlined away

        std::string compute_loop, store_loop;
        if (fs.compute_level.is_inlined()) {
            // A Func with updates that was not scheduled: computed at the
            // innermost loop that encloses all of its uses (a group's: all
            // of its members' uses, as split_k's partials, each read by its
            // own member's combine), those inside the production of an
            // element of the same Tuple counted there.
            auto siblings = env.tuple_siblings.find(name);
            std::set<std::string> computed = {name};
            if (group) computed.insert(group->members.begin(), group->members.end());
            compute_loop = store_loop = innermost_loop_enclosing_calls(
                s, computed,
                siblings == env.tuple_siblings.end() ? std::set<std::string>() : siblings->second);
        } else {
            compute_loop = resolve_loop_level(s, fs.compute_level, name, "computed", env.origins);
            store_loop = fs.store_level.kind == fs.compute_level.kind &&
                                 fs.store_level.func == fs.compute_level.func &&
                                 fs.store_level.var == fs.compute_level.var
                             ? compute_loop
                             : resolve_loop_level(s, fs.store_level, name, "stored", env.origins);
        }

        std::vector<std::string> realized = {name};
        if (group) realized = group->members;
        Stmt produce = group ? build_group_produce(env, *group) : build_produce(env, f, fs);
        auto compute_wrap = [&](const Stmt &body) {
            Stmt consume = body;
            for (auto it = realized.rbegin(); it != realized.rend(); ++it) {
                consume = ProducerConsumer::make_consume(*it, consume);
            }
            return Block::make(produce, consume);
        };
        Region no_bounds;  // filled in by bounds inference
        auto realize_wrap = [&](const Stmt &body) {
            Stmt s = body;
            for (auto it = realized.rbegin(); it != realized.rend(); ++it) {
                auto member = env.schedules.find(*it);
                const MemoryType memory =
                    member == env.schedules.end() ? MemoryType::Auto : member->second.memory_type;
                s = Realize::make(*it, env.funcs.at(*it)->output_types, memory, no_bounds,
                                  const_true(), s);
            }
            return s;
        };

        if (compute_loop.empty()) {
            s = compute_wrap(s);
        } else {
            InjectAtLoop inject(compute_loop, compute_wrap);
            s = inject.mutate(s);
            internal_assert(inject.found) << "loop " << compute_loop << " vanished";
        }
        if (store_loop.empty()) {
            s = realize_wrap(s);
        } else {
            InjectAtLoop inject(store_loop, realize_wrap);
            s = inject.mutate(s);
            internal_assert(inject.found);
        }
    }
    return s;
}

}  // namespace internal
}  // namespace loom
