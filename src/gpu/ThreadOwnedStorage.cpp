// Per-thread storage for Funcs that each thread owns at the block level:
// see ThreadOwnedStorage.h.
#include "gpu/ThreadOwnedStorage.h"

#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "arith/Bounds.h"
#include "arith/Simplify.h"
#include "gpu/GPULoops.h"
#include "ir/IREquality.h"
#include "ir/IRMutator.h"
#include "ir/IRPrinter.h"
#include "ir/IRVisitor.h"
#include "ir/Substitute.h"
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

/** A condition a + gap <= b that holds where a guard stands. */
struct Ordering {
    Expr a, b;
    int gap;
};

/** The orderings that `condition` (likely(), conjunctions, comparisons)
 * states. */
std::vector<Ordering> orderings_of(const Expr &condition) {
    std::vector<Ordering> found;
    std::vector<Expr> terms{condition};
    while (!terms.empty()) {
        Expr c = terms.back();
        terms.pop_back();
        if (const Call *l = c.as<Call>(); l && l->is_intrinsic(Call::likely)) {
            terms.push_back(l->args[0]);
        } else if (const And *a = c.as<And>()) {
            terms.push_back(a->a);
            terms.push_back(a->b);
        } else if (const LE *le = c.as<LE>()) {
            found.push_back({le->a, le->b, 0});
        } else if (const LT *lt = c.as<LT>()) {
            found.push_back({lt->a, lt->b, 1});
        } else if (const GE *ge = c.as<GE>()) {
            found.push_back({ge->b, ge->a, 0});
        } else if (const GT *gt = c.as<GT>()) {
            found.push_back({gt->b, gt->a, 1});
        }
    }
    return found;
}

/** e with each min(x, y) or max(x, y) that the orderings decide replaced
 * by the side it picks: a point clamped to the end of a row, min(p, n - 1),
 * read under the guard p < n is p. */
class DropImpliedClamps : public IRMutator {
  public:
    explicit DropImpliedClamps(const std::vector<Ordering> &orderings) : orderings(orderings) {}

  protected:
    using IRMutator::visit;
    const std::vector<Ordering> &orderings;

    /** Whether x <= y follows from an ordering a + gap <= b, with x - a
     * and y - b constants. */
    bool at_most(const Expr &x, const Expr &y) const {
        for (const Ordering &o : orderings) {
            const Expr below = simplify(x - o.a), above = simplify(y - o.b);
            const int64_t *c = as_const_int(below), *d = as_const_int(above);
            if (c && d && *c - o.gap <= *d) return true;  // x <= b - gap + c <= y
        }
        return false;
    }
    Expr visit(const Min *op) override {
        Expr a = mutate(op->a), b = mutate(op->b);
        if (at_most(a, b)) return a;
        if (at_most(b, a)) return b;
        return Min::make(a, b);
    }
    Expr visit(const Max *op) override {
        Expr a = mutate(op->a), b = mutate(op->b);
        if (at_most(b, a)) return a;
        if (at_most(a, b)) return b;
        return Max::make(a, b);
    }
};

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
            const Expr simplified = simplify(extent);
            const int64_t *n = as_const_int(simplified);
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

    /** What push_guard added, for pop_guard. */
    struct GuardMark {
        int bindings = 0;
        size_t orderings = 0;
    };
    /** Enters the true branch of `condition`: its orderings hold, and
     * the variables they bound are bound. */
    GuardMark push_guard(const Expr &condition) {
        GuardMark mark;
        for (const Ordering &o : orderings_of(resolve(condition))) {
            orderings.push_back(o);
            mark.orderings++;
            mark.bindings += bind_ordered(o.a, o.b, o.gap);
        }
        return mark;
    }
    void pop_guard(const GuardMark &mark) {
        orderings.resize(orderings.size() - mark.orderings);
        for (int i = 0; i < mark.bindings; i++) {
            guard_bindings.erase(guard_order.back());
            guard_order.pop_back();
            facts.pop_back();
        }
    }
    /** The orderings that the enclosing guards state, resolved. */
    std::vector<Ordering> orderings;

    /** e with the lets, the loop variables known as expressions and the
     * guard bindings substituted. */
    Expr resolve(const Expr &e) const {
        Expr r = substitute_enclosing_lets(lets, e);
        r = substitute_in_all_lets(r);
        if (!loop_values.empty()) r = substitute(loop_values, r);
        if (!guard_bindings.empty()) r = substitute(guard_bindings, r);
        return r;
    }
    /** e with the lets substituted only: an expression of the loops'
     * variables, valid where e stands. */
    Expr resolve_lets(const Expr &e) const {
        return substitute_in_all_lets(substitute_enclosing_lets(lets, e));
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
            if (v.rfind("loom.", 0) == 0 || guard_bindings.count(v) || loop_values.count(v) ||
                is_loop_variable(v)) {
                continue;  // a thread index, slack, known value or loop's variable
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
    /** Whether v is an enclosing loop's variable: a guard of a ragged
     * tail (`4 * t + lane <= last`) bounds the loop's point, it does not
     * define it, and solving for the lane would hide the thread's part. */
    bool is_loop_variable(const std::string &v) const {
        for (const auto &f : facts) {
            if (f.first == v) return true;
        }
        return false;
    }
    void bind(const std::string &var, const Expr &value, const std::string &slack, int gap) {
        guard_bindings[var] = value;
        guard_order.push_back(var);
        facts.emplace_back(slack, Interval(make_const(Int(32), gap), Expr()));
    }
};

/** A walk of a kernel's code that keeps the Context of each point: the
 * lets, the loops (thread loops as their min plus the thread's index) and
 * the guards around it. */
class WalkInContext : public IRVisitor {
  public:
    explicit WalkInContext(const Context &outside) : context(outside) {}

  protected:
    using IRVisitor::visit;
    Context context;

    void visit(const LetStmt *op) override {
        op->value.accept(this);
        context.push_let(op->name, op->value);
        op->body.accept(this);
        context.pop_let();
    }
    void visit(const For *op) override {
        op->min.accept(this);
        op->extent.accept(this);
        const bool thread = context.push_loop(op);
        op->body.accept(this);
        context.pop_loop(op, thread);
    }
    void visit(const IfThenElse *op) override {
        op->condition.accept(this);
        const Context::GuardMark added = context.push_guard(op->condition);
        op->then_case.accept(this);
        context.pop_guard(added);
        if (op->else_case.defined()) op->else_case.accept(this);
    }
};

/** Walks the body of one realization at the block level and decides, per
 * dimension of its Func, which thread dimension (if any) owns it. */
class OwnershipProof : public WalkInContext {
  public:
    OwnershipProof(const Realize *realize, const Context &outside, const int block[3])
        : WalkInContext(outside), name(realize->name), block(block) {
        for (const Range &r : realize->bounds) mins.push_back(context.resolve(r.min));
        owner.assign(realize->bounds.size(), unset);
        widths.assign(realize->bounds.size(), 0);
        single_points.assign(realize->bounds.size(), true);
    }

    static constexpr int unset = -2, no_thread = -1;
    std::vector<int> owner;  // per dimension: unset, no_thread or an axis
    // Per dimension its owner owns: how many consecutive elements a
    // thread owns in each period of width * (the block's threads along the
    // owner's axis), and whether every access is at the min plus the
    // thread index (one element per thread).
    std::vector<int64_t> widths;
    std::vector<bool> single_points;
    std::string why_not;  // empty when the proof holds

    bool holds() const {
        if (!why_not.empty()) return false;
        for (int o : owner) {
            if (o >= 0) return true;
        }
        return false;
    }

  protected:
    using WalkInContext::visit;

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
    const int *block;
    std::vector<Expr> mins;

    void check(const std::vector<Expr> &args, const char *how) {
        if (!why_not.empty()) return;
        const Scope<Interval> facts = context.fact_scope();
        bool owned_by[3] = {false, false, false};
        for (size_t k = 0; k < args.size() && k < mins.size(); k++) {
            // The clamps that guards decide go first: within the loops'
            // ranges alone, a row of one point's clamp min(p, 0) is 0, the
            // same for every thread, though only the thread with p = 0
            // passes the guard p < 1.
            Expr delta = context.resolve(args[k]) - context.rebind(mins[k]);
            if (!context.orderings.empty()) {
                delta = DropImpliedClamps(context.orderings).mutate(simplify(delta));
            }
            delta = simplify(delta, true, facts);
            int axis = no_thread;
            int64_t width = 0;
            bool single = false;
            for (int a = 0; a < 3; a++) {
                if (!expr_uses_var(delta, thread_index_names[a])) continue;
                if (axis != no_thread) {
                    return fail(how, args,
                                "its coordinate " + std::to_string(k) +
                                    " follows two thread indices (it is the min plus " +
                                    to_string(delta) + ")");
                }
                axis = a;
                single = is_const_zero(simplify(delta - thread_index(a), true, facts));
                width = single ? 1 : cyclic_width(delta, a, facts);
                if (width == 0) {
                    return fail(how, args,
                                "its coordinate " + std::to_string(k) +
                                    " is not the realization's min plus the thread index, "
                                    "nor w times it plus a lane in [0, w) plus a multiple of "
                                    "w times the block's threads (it is the min plus " +
                                    to_string(delta) + ")" + run_time_mins(delta));
                }
            }
            if (owner[k] == unset) {
                owner[k] = axis;
                widths[k] = width;
                single_points[k] = single;
            }
            if (owner[k] != axis || widths[k] != width) {
                return fail(
                    how, args,
                    "its coordinate " + std::to_string(k) +
                        (axis == no_thread ? " is the same for every thread"
                                           : std::string(" follows threadIdx.") + axis_names[axis] +
                                                 " in runs of " + std::to_string(width)) +
                        ", unlike another access's");
            }
            single_points[k] = single_points[k] && single;
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
    /** A hint for an offset that holds a buffer's min known only at run
     * time (an output whose columns may start anywhere): which thread owns
     * an element then depends on it. */
    static std::string run_time_mins(const Expr &delta) {
        std::string names;
        for (const std::string &v : free_variables(delta)) {
            const size_t at = v.find(".min.");
            if (at == std::string::npos || v.find(".s") < at) continue;
            names += (names.empty() ? "" : ", ") + v;
        }
        if (names.empty()) return "";
        return "; it holds " + names +
               ", a buffer's min known only at run time: fix it (dim(d).set_min(0) on the "
               "buffer, or output_buffer() for an output) so that the runs are the same for "
               "every call";
    }
    /** w when delta, an access's offset from the realization's min, is
     * w * t + q + w * T * s, for t the thread index along `axis`, T the
     * block's threads along it, q in [0, w) and s any integer: each
     * thread owns runs of w elements, one run in each period of w * T
     * (a row that a block's threads copy a vector each, T vectors at a
     * time). 0 when it is not. */
    int64_t cyclic_width(const Expr &delta, int axis, const Scope<Interval> &facts) const {
        const Expr t = thread_index(axis);
        const Expr at0 = simplify(substitute(thread_index_names[axis], make_zero(Int(32)), delta));
        const Expr at1 = simplify(substitute(thread_index_names[axis], make_one(Int(32)), delta));
        const Expr step = simplify(at1 - at0);
        const int64_t *w = as_const_int(step);
        if (!w || *w <= 0 || block[axis] <= 0) return 0;
        if (!is_const_zero(simplify(delta - at0 - step * t, true, facts))) {
            return 0;  // not linear in the thread index
        }
        // at0 = q + P * s: the terms whose constant factor P divides go
        // to s; the others, q, must lie in [0, w).
        const Expr q = rest_modulo(at0, *w * block[axis]);
        const Interval range = bounds_of_expr_in_scope(simplify(q, true, facts), facts);
        const Expr lo = range.has_lower_bound() ? simplify(range.min) : Expr();
        const Expr hi = range.has_upper_bound() ? simplify(range.max) : Expr();
        if (!as_const_int(lo) || !as_const_int(hi) || *as_const_int(lo) < 0 ||
            *as_const_int(hi) >= *w) {
            return 0;
        }
        return *w;
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

/** Whether every thread of the block may keep a whole copy of a Func
 * realized at the block level (replication): every thread then computes
 * all of it, which gives each the same values if each of its stores is
 * the same for every thread. A store outside the thread loops is (it
 * depends on no thread's index); one inside them must be a reduction
 * across them, f(i) = f(i) op v for an associative and commutative op at
 * an element that no thread index picks: the block combines its threads'
 * v and every thread folds the total into its copy. Reads may be
 * anywhere: every copy is whole. */
class ReplicationProof : public WalkInContext {
  public:
    ReplicationProof(const Realize *realize, const Context &outside)
        : WalkInContext(outside), name(realize->name) {}

    std::string why_not;  // empty when the proof holds
    /** Whether some store to the Func is in a serial loop outside the
     * thread loops: every thread would run the loop. */
    bool stored_in_serial_loop = false;

  protected:
    using WalkInContext::visit;

    // A guard does not make a store the same for every thread; the
    // bindings it implies could only hide a thread's index.
    void visit(const IfThenElse *op) override { IRVisitor::visit(op); }
    void visit(const For *op) override {
        const bool serial = op->for_type != ForType::GPUThread && context.threads.empty() &&
                            !is_const_one(simplify(context.resolve(op->extent)));
        serial_loops += serial;
        WalkInContext::visit(op);
        serial_loops -= serial;
    }
    void visit(const Provide *op) override {
        IRVisitor::visit(op);
        if (op->name != name || !why_not.empty()) return;
        if (context.threads.empty()) {
            stored_in_serial_loop = stored_in_serial_loop || serial_loops > 0;
            return;
        }
        std::ostringstream at;
        at << name << "(";
        for (size_t i = 0; i < op->args.size(); i++) at << (i ? ", " : "") << op->args[i];
        at << ")";
        for (const Expr &arg : op->args) {
            const Expr resolved = context.resolve(arg);
            for (const char *t : thread_index_names) {
                if (expr_uses_var(resolved, t)) {
                    why_not = at.str() +
                              " is stored to inside the thread loops at an element that depends "
                              "on the thread";
                    return;
                }
            }
        }
        for (size_t i = 0; i < op->values.size(); i++) {
            if (!updates_own_element(op->values[i], op->args, static_cast<int>(i))) {
                why_not = at.str() +
                          " is stored to inside the thread loops by something other than a "
                          "reduction across them (f = f + v, f * v, min, max, && or ||)";
                return;
            }
        }
    }

  private:
    std::string name;
    int serial_loops = 0;

    /** Whether `value` is op(f(args)[index], v) or op(v, f(args)[index]) for an
     * associative and commutative op, v not reading f. */
    bool updates_own_element(const Expr &value, const std::vector<Expr> &args, int index) const {
        Expr a, b;
        if (const Add *n = value.as<Add>()) a = n->a, b = n->b;
        else if (const Mul *n = value.as<Mul>()) a = n->a, b = n->b;
        else if (const Min *n = value.as<Min>()) a = n->a, b = n->b;
        else if (const Max *n = value.as<Max>()) a = n->a, b = n->b;
        else if (const And *n = value.as<And>()) a = n->a, b = n->b;
        else if (const Or *n = value.as<Or>()) a = n->a, b = n->b;
        else return false;
        auto is_element = [&](const Expr &e) {
            const Call *c = e.as<Call>();
            if (!c || c->call_type != Call::Func || c->name != name || c->value_index != index ||
                c->args.size() != args.size()) {
                return false;
            }
            for (size_t k = 0; k < args.size(); k++) {
                if (!equal(c->args[k], args[k])) return false;
            }
            return true;
        };
        if (is_element(a)) return !reads_func(b);
        if (is_element(b)) return !reads_func(a);
        return false;
    }
    bool reads_func(const Expr &e) const {
        struct Find : IRVisitor {
            const std::string &name;
            bool found = false;
            explicit Find(const std::string &n) : name(n) {}
            using IRVisitor::visit;
            void visit(const Call *c) override {
                found = found || (c->call_type == Call::Func && c->name == name);
                IRVisitor::visit(c);
            }
        } find(name);
        e.accept(&find);
        return find.found;
    }
};

/** A dimension whose elements each thread owns in runs (see
 * OwnershipProof::cyclic_width): the realization's min there, the run's
 * width and the period. */
struct CyclicRuns {
    Expr min;
    int64_t width, period;
};

/** Rewrites every access to `func` along its cyclic dimensions to the
 * thread's own index there: offset d from the min becomes
 * (d / period) * width + d % width. The offset is first written in the
 * loops' variables (the lets substituted) and simplified within their
 * ranges, so that a thread's vector, 4 * t + [0, 4) past a multiple of
 * the period, becomes a constant run of its array once the loops over
 * periods are unrolled: an array indexed at run time would be in local
 * memory, not registers. */
class LocalizeCyclicAccesses : public IRMutator {
  public:
    LocalizeCyclicAccesses(std::string func, const std::map<int, CyclicRuns> &dims,
                           const Context &outside)
        : func(std::move(func)), dims(dims), outside(outside) {
        facts = outside.fact_scope();
    }

  protected:
    using IRMutator::visit;

    Stmt visit(const LetStmt *op) override {
        Expr value = mutate(op->value);
        lets.emplace_back(op->name, op->value);
        Stmt body = mutate(op->body);
        lets.pop_back();
        return LetStmt::make(op->name, value, body);
    }
    Stmt visit(const For *op) override {
        Expr min = resolved(op->min), extent = simplify(resolved(op->extent));
        // A loop of one iteration (a tile's loop over its single step)
        // is its min.
        const bool single = is_const_one(extent);
        if (single) lets.emplace_back(op->name, op->min);
        ScopedBinding<Interval> bind(facts, op->name,
                                     Interval(simplify(min), simplify(min + extent - 1)));
        Stmt body = mutate(op->body);
        if (single) lets.pop_back();
        return For::make(op->name, op->min, op->extent, op->for_type, body, op->attributes);
    }
    Stmt visit(const IfThenElse *op) override {
        Expr condition = mutate(op->condition);
        const std::vector<Ordering> added = orderings_of(resolved(op->condition));
        orderings.insert(orderings.end(), added.begin(), added.end());
        Stmt then_case = mutate(op->then_case);
        orderings.resize(orderings.size() - added.size());
        Stmt else_case = op->else_case.defined() ? mutate(op->else_case) : Stmt();
        return IfThenElse::make(condition, then_case, else_case);
    }
    Stmt visit(const Provide *op) override {
        Stmt s = IRMutator::visit(op);
        const Provide *p = s.as<Provide>();
        if (p->name != func) return s;
        return Provide::make(p->name, p->values, localized(p->args));
    }
    Expr visit(const Call *op) override {
        Expr e = IRMutator::visit(op);
        const Call *c = e.as<Call>();
        if (!c || c->call_type != Call::Func || c->name != func) return e;
        return Call::make(c->type, c->name, localized(c->args), c->call_type, c->func,
                          c->value_index, c->param, c->buffer);
    }

  private:
    std::string func;
    const std::map<int, CyclicRuns> &dims;
    const Context &outside;
    std::vector<std::pair<std::string, Expr>> lets;
    Scope<Interval> facts;
    std::vector<Ordering> orderings;  // of the guards inside the realization

    Expr resolved(const Expr &e) const {
        return outside.resolve_lets(substitute_enclosing_lets(lets, e));
    }
    std::vector<Expr> localized(std::vector<Expr> args) const {
        for (const auto &[k, runs] : dims) {
            Expr d = resolved(args[k]) - outside.resolve_lets(runs.min);
            if (!orderings.empty()) d = DropImpliedClamps(orderings).mutate(simplify(d));
            args[k] =
                simplify(d / make_const(Int(32), runs.period) * make_const(Int(32), runs.width) +
                             d % make_const(Int(32), runs.width),
                         true, facts);
        }
        return args;
    }
};

class PrivatizeThreadOwnedStorage : public IRMutator {
  protected:
    using IRMutator::visit;

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
        const Context::GuardMark added =
            in_kernel ? context.push_guard(op->condition) : Context::GuardMark();
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
                   : For::make(op->name, op->min, op->extent, op->for_type, body, op->attributes);
    }
    Stmt visit(const Realize *op) override {
        Stmt body = mutate(op->body);
        Stmt same = body.same_as(op->body)
                        ? Stmt(op)
                        : Realize::make(op->name, op->types, op->memory_type, op->bounds,
                                        op->condition, body, op->replicated);
        if (!in_kernel || threads_open > 0 || !block_known || block[0] * block[1] * block[2] <= 1) {
            return same;
        }
        const MemoryType memory = op->memory_type;
        if (memory != MemoryType::Auto && memory != MemoryType::Register) return same;

        OwnershipProof proof(op, context, block);
        op->body.accept(&proof);
        if (!proof.holds()) {
            ReplicationProof replication(op, context);
            op->body.accept(&replication);
            if (replication.why_not.empty()) {
                return replicate(op, same, memory, replication.stored_in_serial_loop);
            }
            user_assert(memory != MemoryType::Register)
                << "Func " << op->name
                << " is stored in MemoryType::Register at a block loop of a GPU kernel, outside "
                   "its thread loops, so each thread must keep the elements it alone touches: "
                   "every access must be at the Func's region min plus the index of the thread "
                   "making it, or plus w times it and a lane in [0, w), in each period of w "
                   "times the block's threads (mark the Func's loops of those dimensions, and "
                   "its consumers', with gpu_threads, split alike). But "
                << (proof.why_not.empty()
                        ? op->name + " has no dimension indexed by the thread alone"
                        : proof.why_not)
                << ". Nor can every thread keep a copy of all of it, computing it alike: "
                << replication.why_not
                << ". Store it in MemoryType::Shared, or compute it inside the thread loops.";
            return same;
        }
        Region bounds = op->bounds;
        // Runs of w elements in each period P = w * T: a thread's offset d
        // from the min is w * t + q + P * s, which it keeps at s * w + q,
        // that is (d / P) * w + d % w; its elements are w per period.
        std::map<int, CyclicRuns> cyclic;
        for (size_t k = 0; k < bounds.size(); k++) {
            if (proof.owner[k] >= 0 && proof.single_points[k]) {
                bounds[k] = Range(bounds[k].min, make_one(Int(32)));
                continue;
            }
            if (proof.owner[k] >= 0) {
                const int64_t w = proof.widths[k], period = w * block[proof.owner[k]];
                cyclic[static_cast<int>(k)] = {bounds[k].min, w, period};
                bounds[k] = Range(make_zero(Int(32)),
                                  simplify((bounds[k].extent - 1) / make_const(Int(32), period) *
                                               make_const(Int(32), w) +
                                           make_const(Int(32), w)));
            }
        }
        int64_t bytes_per_thread = constant_elements(bounds);
        if (bytes_per_thread >= 0) {
            int64_t bytes_per_element = 0;
            for (const Type &t : op->types) bytes_per_element += t.bytes();
            bytes_per_thread *= bytes_per_element;
        }
        if (memory == MemoryType::Auto &&
            (bytes_per_thread < 0 || bytes_per_thread > max_auto_bytes_per_thread)) {
            return same;
        }
        user_assert(bytes_per_thread >= 0)
            << "Func " << op->name
            << " is stored in MemoryType::Register at a block loop of a GPU kernel, and each "
               "thread owns part of it, but how many elements that is per thread is known only "
               "at run time: a thread's registers must be counted when the kernel compiles. "
               "Bound the Func's region by constants (bound() on its Vars, or set_extent() on "
               "the input buffer's dimension it follows), or store it in MemoryType::Shared.";
        if (!cyclic.empty()) body = LocalizeCyclicAccesses(op->name, cyclic, context).mutate(body);
        return Realize::make(op->name, op->types, MemoryType::Register, bounds, op->condition,
                             body);
    }

    /** The most elements `bounds` can hold at this point of the kernel, a
     * constant; -1 where an extent has no constant bound. */
    int64_t constant_elements(const Region &bounds) const {
        const Scope<Interval> facts = context.fact_scope();
        int64_t elements = 1;
        for (const Range &r : bounds) {
            int64_t extent = 0;
            if (!constant_upper_bound(context.resolve(r.extent), facts, &extent)) return -1;
            elements *= std::max<int64_t>(extent, 1);
        }
        return elements;
    }

    /** `same` (op with its body mutated) with every thread keeping a copy
     * of the whole Func, in registers, when it may (ReplicationProof held)
     * and should: asked for (Register), or Auto storage of a single point
     * (a row's max, sum or mean) that no serial loop of the block stores
     * to, which then needs no shared memory, no first thread to compute it
     * alone and no barrier before the others read it. */
    Stmt replicate(const Realize *op, const Stmt &same, MemoryType memory,
                   bool stored_in_serial_loop) {
        const int64_t elements = constant_elements(op->bounds);
        if (memory == MemoryType::Auto && (elements != 1 || stored_in_serial_loop)) return same;
        user_assert(elements >= 0)
            << "Func " << op->name
            << " is stored in MemoryType::Register at a block loop of a GPU kernel, where every "
               "thread keeps a copy of all of it, but its size is known only at run time: a "
               "thread's registers must be counted when the kernel compiles. Bound its region "
               "by constants (bound() on its Vars), or store it in MemoryType::Shared.";
        const Realize *r = same.as<Realize>();
        return Realize::make(r->name, r->types, MemoryType::Register, r->bounds, r->condition,
                             r->body, /*replicated=*/true);
    }
};

}  // namespace

Stmt privatize_thread_owned_storage(const Stmt &s) {
    return PrivatizeThreadOwnedStorage().mutate(s);
}

}  // namespace internal
}  // namespace loom
