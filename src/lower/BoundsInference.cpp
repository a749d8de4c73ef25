// Bounds inference: see BoundsInference.h. The region of a producer is found
// from the loop nest of its consumers (Halide's approach), so every schedule —
// splits with any tail strategy, compute_at inside tiles — gets exactly the
// region its loops touch.
#include "lower/BoundsInference.h"

#include "arith/Bounds.h"
#include "arith/Simplify.h"
#include "gpu/CrossThreadReductions.h"
#include "ir/IRMutator.h"
#include "ir/IRPrinter.h"
#include "ir/Substitute.h"
#include "loom/IROperator.h"

namespace loom {
namespace internal {

std::string output_buffer_name(const FunctionPtr &f, int index) {
    return f->output_types.size() == 1 ? f->name : f->name + "." + std::to_string(index);
}

namespace {

Expr int_var(const std::string &name) { return Variable::make(Int(32), name); }

/** For bounds analysis only: inside `let x = e; if (likely(x <= m)) body`,
 * the body runs only where e <= m, so x = guarded_value(e, m) (see Bounds.h)
 * describes the iterations that touch anything. This keeps guarded tails
 * from widening the regions their producers compute, at either end. */
class TightenGuards : public IRMutator {
  protected:
    using IRMutator::visit;
    Stmt visit(const LetStmt *op) override {
        Stmt body = mutate(op->body);
        if (const IfThenElse *guard = body.as<IfThenElse>()) {
            if (!guard->else_case.defined()) {
                Expr c = guard->condition;
                if (const Call *l = c.as<Call>(); l && l->is_intrinsic(Call::likely))
                    c = l->args[0];
                if (const LE *le = c.as<LE>()) {
                    const Variable *v = le->a.as<Variable>();
                    if (v && v->name == op->name) {
                        Expr value = Call::make(op->value.type(), guarded_value, {op->value, le->b},
                                                Call::PureIntrinsic);
                        return LetStmt::make(op->name, value, guard->then_case);
                    }
                }
            }
        }
        if (body.same_as(op->body)) return op;
        return LetStmt::make(op->name, op->value, body);
    }
};

/** For bounds analysis only: promise_clamped(v, lo, hi) becomes a clamp, so
 * the promised range bounds the value. */
class ClampPromises : public IRMutator {
  protected:
    using IRMutator::visit;
    Expr visit(const Call *op) override {
        if (op->is_intrinsic(Call::promise_clamped)) {
            Expr v = mutate(op->args[0]);
            return Max::make(Min::make(v, mutate(op->args[2])), mutate(op->args[1]));
        }
        return IRMutator::visit(op);
    }
};

Stmt for_analysis(const Stmt &s) { return bounds_analysis_view(s); }

void check_bounded(const Box &b, const std::string &func, const char *what) {
    for (size_t d = 0; d < b.size(); d++) {
        user_assert(b[d].is_bounded())
            << "Cannot infer the region of " << func << " that the pipeline " << what
            << ": dimension " << d << " is accessed at an index that has no "
            << (b[d].has_lower_bound() ? "upper" : "lower")
            << " bound (for example an index loaded from a buffer). Clamp the index, e.g. " << func
            << "(clamp(i, 0, n - 1)).";
    }
}

Box box_for(const std::map<std::string, Box> &boxes, const std::string &name) {
    auto it = boxes.find(name);
    return it == boxes.end() ? Box() : it->second;
}

/** The bound and bound_extent directives of Func f. */
const std::vector<DeclaredBound> &declared_bounds(const LoweringEnv &env, const std::string &f) {
    static const std::vector<DeclaredBound> none;
    auto it = env.schedules.find(f);
    return it == env.schedules.end() ? none : it->second.bounds;
}

/** Replaces f's region in each Var it is bounded in by the declared range,
 * adding to `checks` a run-time check that the region it replaces (what is
 * read of f there, or, for an output, its buffer) lies inside, where that is
 * not evident. `read_if`, when defined, is the condition under which the
 * region is read at all: only then must it lie inside. */
void apply_declared_bounds(const FunctionPtr &f, const std::vector<DeclaredBound> &declared,
                           Box *region, std::vector<Stmt> *checks, bool output,
                           const Expr &read_if = Expr()) {
    for (const DeclaredBound &b : declared) {
        size_t d = std::find(f->args.begin(), f->args.end(), b.var) - f->args.begin();
        internal_assert(d < f->args.size()) << "bound of " << f->name << " on " << b.var;
        Interval &r = (*region)[d];
        Expr mn = simplify(b.min.defined() ? b.min : r.min);
        Expr mx = simplify(mn + b.extent - 1);
        Expr inside = r.max < r.min || (mn <= r.min && r.max <= mx);
        if (read_if.defined()) inside = !read_if || inside;
        inside = simplify(inside);
        if (!is_const_one(inside)) {
            const std::string directive = b.min.defined() ? "bound" : "bound_extent";
            const std::string k = std::to_string(d);
            std::vector<Expr> message;
            if (output) {
                message = {
                    StringImm::make("Output buffer " + output_buffer_name(f, 0) + " covers ["),
                    r.min,
                    StringImm::make(", "),
                    r.max,
                    StringImm::make("] in dimension " + k + ", but the schedule bounds " + f->name +
                                    " in " + b.var + " to ["),
                    mn,
                    StringImm::make(", "),
                    mx,
                    StringImm::make("] (" + directive +
                                    "). Pass a buffer with exactly that range there.")};
            } else if (!f->copy_of_input.empty()) {
                // A copy made by Schedule::in reads what the pipeline reads of
                // the input: the input is what the user can see and change.
                const std::string &input = f->copy_of_input;
                message = {
                    StringImm::make("The copy of input " + input + " that Schedule::in makes (" +
                                    f->name + ") is bounded in " + b.var + " to ["),
                    mn,
                    StringImm::make(", "),
                    mx,
                    StringImm::make("] (" + directive + "), but the pipeline reads " + input +
                                    " over ["),
                    r.min,
                    StringImm::make(", "),
                    r.max,
                    StringImm::make("] there (dimension " + k + "): check the sizes of " + input +
                                    " and of the outputs, or widen the bound.")};
            } else {
                message = {
                    StringImm::make("Func " + f->name + " is bounded in " + b.var + " to ["),
                    mn,
                    StringImm::make(", "),
                    mx,
                    StringImm::make("] (" + directive + "), but the pipeline reads it over ["),
                    r.min,
                    StringImm::make(", "),
                    r.max,
                    StringImm::make("] there. Widen the bound, or schedule the pipeline "
                                    "to read less of " +
                                    f->name + ".")};
            }
            checks->push_back(AssertStmt::make(inside, error_message(message)));
        }
        r = Interval(mn, mx);
    }
}

/** Wraps `body` in the definitions of the stage bounds of Func f. */
Stmt define_stage_bounds(const FunctionPtr &f, const Box &region, Stmt body, int first_stage,
                         int last_stage) {
    for (int k = last_stage; k >= first_stage; k--) {
        for (size_t d = 0; d < f->args.size(); d++) {
            std::string v = loop_name(f->name, k, f->args[d]);
            body = LetStmt::make(v + ".max", region[d].max, body);
            body = LetStmt::make(v + ".min", region[d].min, body);
        }
    }
    return body;
}

/** Defines the bounds of Func `func` at its compute site: the Block
 * (produce f; consume f). */
class ComputeSiteBounds : public IRMutator {
  public:
    ComputeSiteBounds(const FunctionPtr &f, const LoweringEnv &env) : f(f), env(env) {}
    bool found = false;

  protected:
    using IRMutator::visit;
    Stmt visit(const Block *op) override {
        const ProducerConsumer *produce = op->first.as<ProducerConsumer>();
        const ProducerConsumer *consume = op->rest.as<ProducerConsumer>();
        if (!produce || !consume || produce->name != f->name || !produce->is_producer ||
            consume->is_producer) {
            return IRMutator::visit(op);
        }
        found = true;
        if (const FusedGroup *g = env.group_led_by(f->name)) return group_bounds(op, *g);
        Box required =
            box_for(boxes_required_with_conditions(for_analysis(consume->body)), f->name);
        // Interval arithmetic over consumer loops that run no times (zero
        // keys) still yields a region: computing it would read the inputs
        // where they have no data. Compute f only where it is read.
        Expr read_if = required.used;
        required.used = Expr();
        // A branch may differ between a block's threads only where each
        // thread computes its own f; none may differ between a vector's
        // lanes.
        const bool cooperative = has_thread_loop(produce->body);
        for (const auto &[v, thread] : lane_loops) {
            if (read_if.defined() && (cooperative || !thread) && expr_uses_var(read_if, v))
                read_if = Expr();
        }
        const bool unread = required.empty() && !f->args.empty();
        if (unread) {
            // Nothing reads it at this site; compute nothing.
            required = Box(f->args.size());
            for (auto &i : required.bounds) i = Interval(0, -1);
        }
        check_bounded(required, f->name, "reads");
        for (auto &i : required.bounds) i = Interval(simplify(i.min), simplify(i.max));
        // A Func nothing reads here stays empty, bounded or not.
        std::vector<Stmt> checks;
        if (!unread) {
            apply_declared_bounds(f, declared_bounds(env, f->name), &required, &checks, false,
                                  read_if);
        }

        // Updates run over the region consumers read; the pure definition must
        // also cover what the updates write and read of f itself.
        Box init_region = required;
        int n_updates = static_cast<int>(f->updates.size());
        if (n_updates > 0) {
            const Block *stages = produce->body.as<Block>();
            Stmt updates = stages ? stages->rest : Stmt();
            if (updates.defined()) {
                updates = define_stage_bounds(f, required, for_analysis(updates), 1, n_updates);
                Box touched = box_for(boxes_touched(updates), f->name);
                if (!touched.empty()) {
                    check_bounded(touched, f->name, "updates");
                    init_region = box_union(required, touched);
                    for (auto &i : init_region.bounds)
                        i = Interval(simplify(i.min), simplify(i.max));
                }
            }
        }
        Stmt produce_f = op->first;
        if (read_if.defined()) {
            produce_f = ProducerConsumer::make_produce(
                f->name, IfThenElse::make(read_if, produce->body, Stmt()));
        }
        checks.push_back(Block::make(produce_f, op->rest));
        Stmt result = define_stage_bounds(f, required, Block::make(checks), 1, n_updates);
        return define_stage_bounds(f, init_region, result, 0, 0);
    }

    Stmt visit(const For *op) override {
        bool thread = op->for_type == ForType::GPUThread;
        bool lanes = thread || op->for_type == ForType::Vectorized;
        if (lanes) lane_loops.emplace_back(op->name, thread);
        Stmt result = IRMutator::visit(op);
        if (lanes) lane_loops.pop_back();
        return result;
    }
    Stmt visit(const LetStmt *op) override {
        // A let of a thread or lane index varies as it does.
        bool lanes = false, thread = true;
        for (const auto &[v, t] : lane_loops) {
            if (expr_uses_var(op->value, v)) lanes = true, thread = thread && t;
        }
        if (lanes) lane_loops.emplace_back(op->name, thread);
        Stmt result = IRMutator::visit(op);
        if (lanes) lane_loops.pop_back();
        return result;
    }

  private:
    FunctionPtr f;
    const LoweringEnv &env;
    // The enclosing loops over a block's threads (true) or a vector's lanes
    // (false), and the lets that depend on them.
    std::vector<std::pair<std::string, bool>> lane_loops;

    /** A fused group computes every member over one region of the Vars
     * they share (the union of what consumers read of each), and the
     * leader over what is read of its own other Vars. */
    Stmt group_bounds(const Block *op, const FusedGroup &g) {
        const ProducerConsumer *consume = op->rest.as<ProducerConsumer>();
        std::map<std::string, Box> required = boxes_required(for_analysis(consume->body));
        std::map<std::string, Interval> dims;
        for (const std::string &m : g.members) {
            user_assert(declared_bounds(env, m).empty())
                << "Func " << m << " is bounded (bound or bound_extent), but it is computed in "
                << "the fused loops of " << g.leader << " (rolling_update or split_k), whose "
                << "region the chain decides. Drop the bound, or bound a Func outside the chain.";
            const FunctionPtr &mf = env.funcs.at(m);
            Box b = box_for(required, m);
            if (b.empty()) continue;
            check_bounded(b, m, "reads");
            for (size_t d = 0; d < mf->args.size(); d++) {
                const std::string &v = mf->args[d];
                bool row = std::find(g.row_dims.begin(), g.row_dims.end(), v) != g.row_dims.end();
                if (!row && m != g.leader) continue;
                auto it = dims.find(v);
                dims[v] = it == dims.end() ? b[d] : Interval::make_union(it->second, b[d]);
            }
        }
        Stmt result = Block::make(op->first, op->rest);
        for (const std::string &m : g.members) {
            const FunctionPtr &mf = env.funcs.at(m);
            Box region(mf->args.size());
            for (size_t d = 0; d < mf->args.size(); d++) {
                auto it = dims.find(mf->args[d]);
                region[d] = it == dims.end()
                                ? Interval(0, -1)
                                : Interval(simplify(it->second.min), simplify(it->second.max));
            }
            result = define_stage_bounds(mf, region, result, 0, 1);
        }
        return result;
    }
};

/** Gives the Realize of each Func the bounds of what is touched inside it.
 * In a Var the Func is bounded in, what it writes: reads past that are
 * refused where it is computed, before anything reads them. */
class RealizeBounds : public IRMutator {
  public:
    explicit RealizeBounds(const LoweringEnv &env) : env(env) {}

  protected:
    const LoweringEnv &env;
    using IRMutator::visit;
    Stmt visit(const Realize *op) override {
        Stmt body = mutate(op->body);
        Box touched = box_for(boxes_touched(for_analysis(body)), op->name);
        const FunctionPtr *f = env.funcs.count(op->name) ? &env.funcs.at(op->name) : nullptr;
        const std::vector<DeclaredBound> &declared = declared_bounds(env, op->name);
        if (f && !declared.empty() && !touched.empty()) {
            Box written = box_for(boxes_provided(for_analysis(body)), op->name);
            for (const DeclaredBound &b : declared) {
                size_t d =
                    std::find((*f)->args.begin(), (*f)->args.end(), b.var) - (*f)->args.begin();
                if (d < written.size() && written[d].is_bounded()) touched[d] = written[d];
            }
        }
        Region bounds;
        if (touched.empty()) {
            // Touched nowhere: an empty realization.
            for (size_t d = 0; d < op->bounds.size(); d++) bounds.push_back(Range(0, 0));
        }
        check_bounded(touched, op->name, "touches");
        for (size_t d = 0; d < touched.size(); d++) {
            Expr mn = simplify(touched[d].min), mx = simplify(touched[d].max);
            bounds.push_back(Range(mn, simplify(max(mx - mn + 1, 0))));
        }
        return Realize::make(op->name, op->types, op->memory_type, bounds, op->condition, body,
                             op->replicated);
    }
};

}  // namespace

Stmt bounds_analysis_view(const Stmt &s) {
    return ClampPromises().mutate(TightenGuards().mutate(s));
}

Stmt bounds_inference(const Stmt &input, const LoweringEnv &env) {
    Stmt s = input;
    // Consumers first: a producer's region is read off the loops of its
    // consumers, whose bounds must already be defined.
    for (auto it = env.order.rbegin(); it != env.order.rend(); ++it) {
        if (env.is_output(*it)) continue;
        ComputeSiteBounds site(env.funcs.at(*it), env);
        s = site.mutate(s);
    }
    s = RealizeBounds(env).mutate(s);

    // The outputs compute exactly the region of their buffers.
    for (const FunctionPtr &out : env.outputs) {
        const FunctionPtr &f = env.funcs.at(out->name);
        std::string buf = output_buffer_name(f, 0);
        Box region(f->args.size());
        for (size_t d = 0; d < f->args.size(); d++) {
            Expr mn = int_var(buf + ".min." + std::to_string(d));
            Expr ext = int_var(buf + ".extent." + std::to_string(d));
            region[d] = Interval(mn, mn + ext - 1);
        }
        std::vector<Stmt> checks;
        apply_declared_bounds(f, declared_bounds(env, f->name), &region, &checks, true);
        checks.push_back(s);
        s = define_stage_bounds(f, region, Block::make(checks), 0,
                                static_cast<int>(f->updates.size()));
    }
    return s;
}

}  // namespace internal
}  // namespace loom
