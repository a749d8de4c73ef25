// Per-thread storage for Funcs that each thread owns at the block level:
// see ThreadOwnedStorage.h.
#include "ThreadOwnedStorage.h"

#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "Bounds.h"
#include "CodeGen_CUDA.h"
#include "IRMutator.h"
#include "IRPrinter.h"
#include "IRVisitor.h"
#include "Simplify.h"
#include "Substitute.h"
#include "loom/Error.h"
#include "loom/IROperator.h"

namespace loom {
namespace internal {

namespace {

// Auto storage is moved to registers only when this small per thread;
// larger per-thread arrays would spill to local memory.
constexpr int64_t max_auto_bytes_per_thread = 512;

const char *const thread_index_names[3] = {"loom.thread_index.x", "loom.thread_index.y",
                                           "loom.thread_index.z"};
const char *const axis_names[3] = {"x", "y", "z"};

Expr thread_index(int axis) { return Variable::make(Int(32), thread_index_names[axis]); }

/** What the code around a point of a kernel says about the values there:
 * the lets, the thread loops' variables as their min plus the thread's
 * index (and those of loops of one iteration as their min), the ranges of
 * the other loops, and the variables that enclosing
 * if-conditions bound (x <= n becomes n = x + slack, slack >= 0). */
class Context {
  public:
    void push_let(const std::string &name, const Expr &value) { lets.emplace_back(name, value); }
    void pop_let() { lets.pop_back(); }

    /** Enters a loop; returns whether it was a thread loop. */
    bool push_loop(const For *op) {
        Expr min = resolve(op->min), extent = resolve(op->extent);
        if (op->for_type == ForType::GPUThread) {
            const int axis = gpu_loop_chain_depth(op->body, ForType::GPUThread);
            const int64_t *n = as_const_int(simplify(extent));
            const int64_t count = n ? *n : -1;
            loop_values[op->name] = min + thread_index(axis);
            threads.push_back({axis, count});
            Expr last = count > 0 ? make_const(Int(32), count - 1) : Expr();
            facts.emplace_back(thread_index_names[axis], Interval(make_zero(Int(32)), last));
            return true;
        }
        // A loop of one iteration (a Func's loop over a single point) is
        // its min.
        if (is_const_one(simplify(extent))) loop_values[op->name] = min;
        facts.emplace_back(op->name, Interval(min, simplify(min + extent - 1)));
        return false;
    }
    void pop_loop(const For *op, bool thread) {
        loop_values.erase(op->name);
        if (thread) threads.pop_back();
        facts.pop_back();
    }

    /** Enters the true branch of `condition`; returns how many bindings
     * it added, for pop_guard. */
    int push_guard(const Expr &condition) {
        int added = 0;
        std::vector<Expr> terms{resolve(condition)};
        while (!terms.empty()) {
            Expr c = terms.back();
            terms.pop_back();
            if (const Call *l = c.as<Call>(); l && l->is_intrinsic(Call::likely)) {
                terms.push_back(l->args[0]);
            } else if (const And *a = c.as<And>()) {
                terms.push_back(a->a);
                terms.push_back(a->b);
            } else if (const LE *le = c.as<LE>()) {
                added += bind_ordered(le->a, le->b, 0);
            } else if (const LT *lt = c.as<LT>()) {
                added += bind_ordered(lt->a, lt->b, 1);
            } else if (const GE *ge = c.as<GE>()) {
                added += bind_ordered(ge->b, ge->a, 0);
            } else if (const GT *gt = c.as<GT>()) {
                added += bind_ordered(gt->b, gt->a, 1);
            }
        }
        return added;
    }
    void pop_guard(int added) {
        for (int i = 0; i < added; i++) {
            guard_bindings.erase(guard_order.back());
            guard_order.pop_back();
            facts.pop_back();
        }
    }

    /** e with the lets, the loop variables known as expressions and the
     * guard bindings substituted. */
    Expr resolve(const Expr &e) const {
        Expr r = substitute_enclosing_lets(lets, e);
        r = substitute_in_all_lets(r);
        if (!loop_values.empty()) r = substitute(loop_values, r);
        if (!guard_bindings.empty()) r = substitute(guard_bindings, r);
        return r;
    }
    /** Applies only the guard bindings (to an expression resolved
     * outside them). */
    Expr rebind(const Expr &e) const {
        return guard_bindings.empty() ? e : substitute(guard_bindings, e);
    }
    Scope<Interval> fact_scope() const {
        Scope<Interval> s;
        for (const auto &f : facts) s.push(f.first, f.second);
        return s;
    }

    struct OpenThreadLoop {
        int axis;
        int64_t extent;  // -1 when not a constant
    };
    std::vector<OpenThreadLoop> threads;

  private:
    std::vector<std::pair<std::string, Expr>> lets;
    std::map<std::string, Expr> loop_values;
    std::vector<std::pair<std::string, Interval>> facts;
    std::map<std::string, Expr> guard_bindings;
    std::vector<std::string> guard_order;
    int slack_count = 0;

    /** a + gap <= b: b - a is a fresh variable `slack` of at least `gap`.
     * Solves that for a free variable that b - a holds once, added or
     * subtracted (a buffer's extent in `x + t <= min + extent - 1`), and
     * binds the variable to its solution. */
    int bind_ordered(const Expr &a, const Expr &b, int gap) {
        const Expr difference = simplify(b - a);
        for (const std::string &v : free_variables(difference)) {
            if (v.rfind("loom.", 0) == 0 || guard_bindings.count(v) || loop_values.count(v)) {
                continue;  // a thread index, slack or known value
            }
            Expr var = Variable::make(Int(32), v);
            Expr rest = simplify(substitute(v, make_zero(Int(32)), difference));
            const std::string slack = "loom.guard_slack." + std::to_string(slack_count++);
            Expr s = Variable::make(Int(32), slack);
            if (is_const_zero(simplify(difference - rest - var))) {
                bind(v, s - rest, slack, gap);  // v + rest == slack
                return 1;
            }
            if (is_const_zero(simplify(difference - rest + var))) {
                bind(v, rest - s, slack, gap);  // rest - v == slack
                return 1;
            }
        }
        return 0;
    }
    void bind(const std::string &var, const Expr &value, const std::string &slack, int gap) {
        guard_bindings[var] = value;
        guard_order.push_back(var);
        facts.emplace_back(slack, Interval(make_const(Int(32), gap), Expr()));
    }
};

/** Walks the body of one realization at the block level and decides, per
 * dimension of its Func, which thread dimension (if any) owns it. */
class OwnershipProof : public IRVisitor {
  public:
    OwnershipProof(const Realize *realize, const Context &outside, const int block[3])
        : name(realize->name), context(outside), block(block) {
        for (const Range &r : realize->bounds) mins.push_back(context.resolve(r.min));
        owner.assign(realize->bounds.size(), unset);
    }

    static constexpr int unset = -2, no_thread = -1;
    std::vector<int> owner;  // per dimension: unset, no_thread or an axis
    std::string why_not;     // empty when the proof holds

    bool holds() const {
        if (!why_not.empty()) return false;
        for (int o : owner) {
            if (o >= 0) return true;
        }
        return false;
    }

  protected:
    using IRVisitor::visit;

    void visit(const LetStmt *op) override {
        op->value.accept(this);
        context.push_let(op->name, op->value);
        op->body.accept(this);
        context.pop_let();
    }
    void visit(const For *op) override {
        op->min.accept(this);
        op->extent.accept(this);
        bool thread = context.push_loop(op);
        op->body.accept(this);
        context.pop_loop(op, thread);
    }
    void visit(const IfThenElse *op) override {
        op->condition.accept(this);
        int added = context.push_guard(op->condition);
        op->then_case.accept(this);
        context.pop_guard(added);
        if (op->else_case.defined()) op->else_case.accept(this);
    }
    void visit(const Provide *op) override {
        IRVisitor::visit(op);
        if (op->name == name) check(op->args, "stored to");
    }
    void visit(const Call *op) override {
        IRVisitor::visit(op);
        if (op->call_type == Call::Func && op->name == name) check(op->args, "read");
    }

  private:
    std::string name;
    Context context;
    const int *block;
    std::vector<Expr> mins;

    void check(const std::vector<Expr> &args, const char *how) {
        if (!why_not.empty()) return;
        const Scope<Interval> facts = context.fact_scope();
        bool owned_by[3] = {false, false, false};
        for (size_t k = 0; k < args.size() && k < mins.size(); k++) {
            Expr delta = simplify(context.resolve(args[k]) - context.rebind(mins[k]), true, facts);
            int axis = no_thread;
            for (int a = 0; a < 3; a++) {
                if (!expr_uses_var(delta, thread_index_names[a])) continue;
                if (axis != no_thread ||
                    !is_const_zero(simplify(delta - thread_index(a), true, facts))) {
                    return fail(how, args,
                                "its coordinate " + std::to_string(k) +
                                    " is not the realization's min plus one "
                                    "thread index (it is the min plus " +
                                    to_string(delta) + ")");
                }
                axis = a;
            }
            if (owner[k] == unset) owner[k] = axis;
            if (owner[k] != axis) {
                return fail(how, args,
                            "its coordinate " + std::to_string(k) +
                                (axis == no_thread
                                     ? " is the same for every thread"
                                     : std::string(" follows threadIdx.") + axis_names[axis]) +
                                ", unlike another access's");
            }
            if (axis >= 0) owned_by[axis] = true;
        }
        for (int a = 0; a < 3; a++) {
            if (block[a] <= 1 || owned_by[a]) continue;
            bool first_only = false;
            for (const Context::OpenThreadLoop &t : context.threads) {
                first_only = first_only || (t.axis == a && t.extent == 1);
            }
            if (!first_only) {
                return fail(how, args,
                            std::string("the block's threads along ") + axis_names[a] +
                                " all touch the same element there");
            }
        }
    }
    void fail(const char *how, const std::vector<Expr> &args, const std::string &reason) {
        std::ostringstream s;
        s << name << "(";
        for (size_t i = 0; i < args.size(); i++) s << (i ? ", " : "") << args[i];
        s << ") is " << how << " where " << reason;
        why_not = s.str();
    }
    /** e as the message shows it, with CUDA's names for the thread
     * indices. */
    static std::string to_string(const Expr &e) {
        std::map<std::string, Expr> cuda_names;
        for (int a = 0; a < 3; a++) {
            cuda_names[thread_index_names[a]] =
                Variable::make(Int(32), std::string("threadIdx.") + axis_names[a]);
        }
        std::ostringstream s;
        s << substitute(cuda_names, e);
        return s.str();
    }
};

class PrivatizeThreadOwnedStorage : public IRMutator {
  public:
    explicit PrivatizeThreadOwnedStorage(LoweringEnv &env) : env(env) {}

  protected:
    using IRMutator::visit;

    LoweringEnv &env;
    Context context;
    bool in_kernel = false;
    int threads_open = 0;
    int block[3] = {1, 1, 1};
    bool block_known = false;

    Stmt visit(const LetStmt *op) override {
        context.push_let(op->name, op->value);
        Stmt body = mutate(op->body);
        context.pop_let();
        return body.same_as(op->body) ? Stmt(op) : LetStmt::make(op->name, op->value, body);
    }
    // Loops and guards are facts only inside kernels: resolving them costs
    // a substitution of every enclosing let, which CPU code need not pay.
    Stmt visit(const IfThenElse *op) override {
        int added = in_kernel ? context.push_guard(op->condition) : 0;
        Stmt then_case = mutate(op->then_case);
        context.pop_guard(added);
        Stmt else_case = op->else_case.defined() ? mutate(op->else_case) : Stmt();
        if (then_case.same_as(op->then_case) && else_case.same_as(op->else_case)) return op;
        return IfThenElse::make(op->condition, then_case, else_case);
    }
    Stmt visit(const For *op) override {
        const bool kernel = op->for_type == ForType::GPUBlock && !in_kernel;
        if (kernel) {
            in_kernel = true;
            for (int &b : block) b = 1;
            block_known = gpu_block_shape(op->body, block) == nullptr;
        }
        const bool tracked = in_kernel;
        const bool thread = tracked && context.push_loop(op);
        threads_open += thread;
        Stmt body = mutate(op->body);
        threads_open -= thread;
        if (tracked) context.pop_loop(op, thread);
        if (kernel) in_kernel = false;
        return body.same_as(op->body)
                   ? Stmt(op)
                   : For::make(op->name, op->min, op->extent, op->for_type, body);
    }
    Stmt visit(const Realize *op) override {
        Stmt body = mutate(op->body);
        Stmt same = body.same_as(op->body)
                        ? Stmt(op)
                        : Realize::make(op->name, op->types, op->bounds, op->condition, body);
        if (!in_kernel || threads_open > 0 || !block_known || block[0] * block[1] * block[2] <= 1) {
            return same;
        }
        auto fs = env.schedules.find(op->name);
        const MemoryType memory =
            fs == env.schedules.end() ? MemoryType::Auto : fs->second.memory_type;
        if (memory != MemoryType::Auto && memory != MemoryType::Register) return same;

        OwnershipProof proof(op, context, block);
        op->body.accept(&proof);
        if (!proof.holds()) {
            user_assert(memory != MemoryType::Register)
                << "Func " << op->name
                << " is stored in MemoryType::Register at a block loop of a GPU kernel, outside "
                   "its thread loops, so each thread must keep the elements it alone touches: "
                   "every access must be at the Func's region min plus the index of the thread "
                   "making it (mark the Func's loops of those dimensions, and its consumer's, "
                   "with gpu_threads). But "
                << (proof.why_not.empty()
                        ? op->name + " has no dimension indexed by the thread alone"
                        : proof.why_not)
                << ". Store it in MemoryType::Shared, or compute it inside the thread loops.";
            return same;
        }
        Region bounds = op->bounds;
        int64_t bytes_per_thread = 0;
        for (const Type &t : op->types) bytes_per_thread += t.bytes();
        const Scope<Interval> facts = context.fact_scope();
        for (size_t k = 0; k < bounds.size(); k++) {
            if (proof.owner[k] >= 0) {
                bounds[k] = Range(bounds[k].min, make_one(Int(32)));
                continue;
            }
            int64_t extent = 0;
            if (constant_upper_bound(context.resolve(bounds[k].extent), facts, &extent)) {
                bytes_per_thread *= std::max<int64_t>(extent, 1);
            } else {
                bytes_per_thread = -1;
                break;
            }
        }
        if (memory == MemoryType::Auto &&
            (bytes_per_thread < 0 || bytes_per_thread > max_auto_bytes_per_thread)) {
            return same;
        }
        if (fs != env.schedules.end()) fs->second.memory_type = MemoryType::Register;
        return Realize::make(op->name, op->types, bounds, op->condition, body);
    }
};

}  // namespace

Stmt privatize_thread_owned_storage(const Stmt &s, LoweringEnv &env) {
    return PrivatizeThreadOwnedStorage(env).mutate(s);
}

}  // namespace internal
}  // namespace loom
