#include "CrossThreadReductions.h"

#include <cctype>
#include <map>
#include <set>
#include <vector>

#include "AssociativeUpdates.h"
#include "IREquality.h"
#include "IRMutator.h"
#include "IRPrinter.h"
#include "IRVisitor.h"
#include "Scope.h"
#include "Substitute.h"
#include "Util.h"
#include "loom/Error.h"
#include "loom/IROperator.h"

namespace loom {
namespace internal {

namespace {

Expr intrinsic(Type t, const char *name, const std::vector<Expr> &args = {}) {
    return Call::make(t, name, args, Call::Intrinsic);
}

/** One update that every thread of a block (or of a group of its threads)
 * makes to the same element: buffer[index] = op(buffer[index], value). */
struct Reduction {
    std::string buffer, partial;
    Expr index;
    VectorReduce::Op op;
    Type type;
    /** Grouped: the element depends on some of the stage's thread loops
     * (each of their points is a group of threads with an element of its
     * own), and these are all the stage's thread loops around the update,
     * outermost first, to fold each group's total at its coordinates. Empty:
     * the whole block shares one element. */
    std::vector<const For *> thread_loops;
    std::set<std::string> group_loops;  // those of them the element depends on
    /** The region's lets the element's index reads (outermost first), to
     * bind them again where the groups fold. */
    std::vector<std::pair<std::string, Expr>> index_lets;
    /** The conditions around the update that depend on the group alone
     * (a guarded split of its rows): a group they exclude has no element. */
    Expr group_condition;
    /** The thread dimensions reduced over (x 1, y 2, z 4). */
    int reduced = 7;
};

/** The stores to one element per region (or per group of its threads) made
 * inside the thread loops of stage `stage` within `region`: the element is
 * fixed for the whole region, or depends only on some of the stage's thread
 * loops there (its groups), through lets at most. */
class FindReductions : public IRVisitor {
  public:
    FindReductions(const std::string &stage, const std::set<std::string> &per_thread)
        : stage(stage), per_thread(per_thread) {}
    std::vector<Reduction> found;

    using IRVisitor::visit;
    void visit(const For *op) override {
        const bool stage_thread =
            op->for_type == ForType::GPUThread && stage_of_loop(op->name) == stage;
        // A thread loop whose bounds the region computes cannot be re-made
        // after it, where its groups fold their totals.
        bool bounds_fixed = true;
        for (const Expr &e : {op->min, op->extent}) {
            for (const std::string &v : free_variables(e)) bounds_fixed &= !bound.contains(v);
        }
        std::set<std::string> self;
        if (stage_thread && bounds_fixed) self.insert(op->name);
        else self.insert("");  // "": something no group may depend on
        ScopedBinding<std::set<std::string>> b(bound, op->name, self);
        if (stage_thread) stage_threads.push_back(op);
        unfixed_threads += stage_thread && !bounds_fixed;
        op->body.accept(this);
        unfixed_threads -= stage_thread && !bounds_fixed;
        if (stage_thread) stage_threads.pop_back();
    }
    void visit(const LetStmt *op) override {
        ScopedBinding<std::set<std::string>> b(bound, op->name, depends_on(op->value));
        lets_open.push_back(op);
        op->body.accept(this);
        lets_open.pop_back();
    }
    void visit(const Allocate *op) override {
        ScopedBinding<std::set<std::string>> b(bound, op->name, {""});
        op->body.accept(this);
    }
    void visit(const IfThenElse *op) override {
        conditions_open.push_back(op->condition);
        op->then_case.accept(this);
        conditions_open.pop_back();
        if (op->else_case.defined()) {
            conditions_open.push_back(!op->condition);
            op->else_case.accept(this);
            conditions_open.pop_back();
        }
    }
    void visit(const Store *op) override {
        if (stage_threads.empty() || per_thread.count(op->name) || bound.contains(op->name)) {
            return;
        }
        std::set<std::string> deps = depends_on(op->index);
        if (deps.count("")) return;  // a different element per iteration
        VectorReduce::Op reduce;
        Expr value;
        if (!as_associative_update(op, &reduce, &value)) return;  // refused as a race later
        for (const Reduction &r : found) {
            if (r.buffer == op->name) return;  // a second update: refused later
        }
        Reduction r{op->name, "", op->index, reduce, op->value.type(), {}, deps, {}, Expr(), 0};
        // The innermost thread loop is x, the next y, then z.
        for (size_t i = 0; i < stage_threads.size(); i++) {
            if (!deps.count(stage_threads[i]->name))
                r.reduced |= 1 << (stage_threads.size() - 1 - i);
        }
        if (r.reduced == 0) return;  // one element per thread: no reduction
        if (deps.empty()) {
            r.reduced = 7;
        } else {
            if (unfixed_threads) return;  // its groups cannot be found again: refused later
            r.thread_loops = stage_threads;
            std::set<std::string> needed = free_variables(op->index);
            for (const Expr &c : conditions_open) {
                std::set<std::string> on = depends_on(c);
                bool group_only = !on.empty() && !on.count("");
                for (const std::string &d : on) group_only &= deps.count(d) > 0;
                if (!group_only) continue;
                r.group_condition = r.group_condition.defined() ? (r.group_condition && c) : c;
                for (const std::string &v : free_variables(c)) needed.insert(v);
            }
            for (auto l = lets_open.rbegin(); l != lets_open.rend(); ++l) {
                if (!needed.count((*l)->name)) continue;
                r.index_lets.insert(r.index_lets.begin(), {(*l)->name, (*l)->value});
                for (const std::string &v : free_variables((*l)->value)) needed.insert(v);
            }
        }
        found.push_back(r);
    }

  private:
    std::string stage;
    const std::set<std::string> &per_thread;
    /** Names the region binds, each with the stage's thread loops its value
     * depends on ("" for anything else the region binds). */
    Scope<std::set<std::string>> bound;
    std::vector<const For *> stage_threads;  // open, outermost first
    int unfixed_threads = 0;                 // open ones whose bounds the region computes
    std::vector<const LetStmt *> lets_open;
    std::vector<Expr> conditions_open;  // around the statement visited

    std::set<std::string> depends_on(const Expr &e) const {
        std::set<std::string> deps;
        for (const std::string &v : free_variables(e)) {
            if (bound.contains(v)) {
                for (const std::string &d : bound.get(v)) deps.insert(d);
            }
        }
        return deps;
    }
};

/** Replaces the region's updates of each reduction's element by updates of
 * the thread's partial. */
class AccumulatePartials : public IRMutator {
  public:
    explicit AccumulatePartials(const std::vector<Reduction> &r) : reductions(r) {}
    using IRMutator::visit;
    Stmt visit(const Store *op) override {
        for (const Reduction &r : reductions) {
            VectorReduce::Op reduce;
            Expr value;
            if (op->name == r.buffer && equal(op->index, r.index) &&
                as_associative_update(op, &reduce, &value) && reduce == r.op) {
                Expr partial = Load::make(r.type, r.partial, 0, const_true());
                return Store::make(r.partial, combine(r.op, partial, value), 0, const_true());
            }
        }
        return op;
    }

  private:
    const std::vector<Reduction> &reductions;
};

class LowerBlockLevel : public IRMutator {
  public:
    explicit LowerBlockLevel(const std::string &kernel) : kernel(kernel) {}
    std::set<std::string> per_thread;

    using IRMutator::visit;

    Stmt visit(const For *op) override {
        if (threads_open == 0 && op->for_type != ForType::GPUBlock &&
            (op->for_type == ForType::GPUThread || has_thread_loop(op->body))) {
            const std::string stage = stage_of_loop(op->name);
            if (!open_regions.count(stage)) {
                FindReductions find(stage, per_thread);
                op->accept(&find);
                if (!find.found.empty()) return lower_region(op, stage, find.found);
            }
        }
        std::set<std::string> deps;
        if (op->for_type == ForType::GPUThread) {
            deps.insert(op->name);
        } else {
            deps = depends_on(op->min);
            for (const std::string &d : depends_on(op->extent)) deps.insert(d);
        }
        ScopedBinding<std::set<std::string>> bind(thread_dependence, op->name, deps);
        const bool thread = op->for_type == ForType::GPUThread;
        const int64_t *extent = as_const_int(op->extent);
        const bool several = thread && !(extent && *extent == 1);
        const bool block_level_loop =
            threads_open == 0 && !thread && op->for_type != ForType::GPUBlock;
        threads_open += thread;
        if (several) thread_loops.push_back(op);
        if (block_level_loop) block_level_loops.push_back(op);
        Stmt s = IRMutator::visit(op);
        if (block_level_loop) block_level_loops.pop_back();
        if (several) thread_loops.pop_back();
        threads_open -= thread;
        return s;
    }
    Stmt visit(const LetStmt *op) override {
        ScopedBinding<std::set<std::string>> bind(thread_dependence, op->name,
                                                  depends_on(op->value));
        return IRMutator::visit(op);
    }
    Stmt visit(const Allocate *op) override {
        // Register storage at the block level is each thread's own
        // (privatize_thread_owned_storage proved that it may be).
        if (threads_open > 0 || op->memory_type == MemoryType::Register) {
            per_thread.insert(op->name);
        }
        return IRMutator::visit(op);
    }
    Stmt visit(const Store *op) override {
        if (per_thread.count(op->name)) return op;
        if (threads_open == 0) {
            user_assert(block_level_loops.empty())
                << "Kernel " << kernel << " stores to " << op->name
                << " outside its gpu_threads loops, in the serial loop "
                << block_level_loops.back()->name
                << ": one thread of each block would compute all of it while the others wait. "
                   "A Func computed at a block loop is shared by the block and computed by its "
                   "threads: mark its loops with gpu_threads (compute_at(consumer, "
                   "xo).gpu_threads(x, y)), or compute it inside the thread loops.";
            // A single point (a reduction's initial value): once, by one
            // thread (insert_gpu_barriers makes the others wait for it
            // where they read it).
            return IfThenElse::make(intrinsic(Bool(), gpu_intrinsic::first_thread), op);
        }
        std::set<std::string> deps = depends_on(op->index);
        for (const For *t : thread_loops) {
            user_assert(deps.count(t->name))
                << "Kernel " << kernel << " has every thread of the gpu_threads loop " << t->name
                << " store to the same element of " << op->name << " (at " << op->index
                << "). A reduction across a block's threads must update its element with +, "
                   "*, min, max, && or || of its own value (f(x) = f(x) + e), once per "
                   "stage, at an element fixed for the whole reduction or for each point of "
                   "the stage's other gpu_threads loops. Otherwise make the loop serial, or "
                   "mark a pure variable of "
                << func_of_loop(t->name) << " with gpu_threads instead.";
        }
        return op;
    }

  private:
    std::string kernel;
    int threads_open = 0;
    std::vector<const For *> thread_loops;       // open ones with several threads
    std::vector<const For *> block_level_loops;  // serial loops outside them
    Scope<std::set<std::string>> thread_dependence;
    std::set<std::string> open_regions;
    std::map<std::string, int> partial_names;

    /** The thread loops e varies with. */
    std::set<std::string> depends_on(const Expr &e) {
        std::set<std::string> deps;
        for (const std::string &v : free_variables(e)) {
            if (thread_dependence.contains(v)) {
                for (const std::string &d : thread_dependence.get(v)) deps.insert(d);
            }
        }
        return deps;
    }

    Stmt lower_region(const For *op, const std::string &stage, std::vector<Reduction> found) {
        for (Reduction &r : found) {
            int n = partial_names[r.buffer]++;
            r.partial = r.buffer + ".partial" + (n ? std::to_string(n) : "");
            per_thread.insert(r.partial);
        }
        open_regions.insert(stage);
        Stmt loop = mutate(AccumulatePartials(found).mutate(Stmt(op)));
        open_regions.erase(stage);

        std::vector<Stmt> steps;
        for (const Reduction &r : found) {
            steps.push_back(
                Store::make(r.partial, reduction_identity(r.op, r.type), 0, const_true()));
        }
        steps.push_back(loop);
        for (const Reduction &r : found) {
            Expr partial = Load::make(r.type, r.partial, 0, const_true());
            Expr op_code = make_const(Int(32), static_cast<int>(r.op));
            const bool grouped = !r.thread_loops.empty();
            Expr total = grouped
                             ? intrinsic(r.type, gpu_intrinsic::group_reduce,
                                         {partial, op_code, make_const(Int(32), r.reduced)})
                             : intrinsic(r.type, gpu_intrinsic::block_reduce, {partial, op_code});
            steps.push_back(Store::make(r.partial, total, 0, const_true()));
            Expr element = Load::make(r.type, r.buffer, r.index, const_true());
            Stmt fold =
                Store::make(r.buffer, combine(r.op, element, partial), r.index, const_true());
            if (r.group_condition.defined()) fold = IfThenElse::make(r.group_condition, fold);
            for (auto l = r.index_lets.rbegin(); l != r.index_lets.rend(); ++l) {
                fold = LetStmt::make(l->first, l->second, fold);
            }
            // The first thread of the block; of a group, the one at the
            // first point of the loops reduced over, with the stage's thread
            // loops made again around it (on the same dimensions) to give
            // its group's coordinates.
            Expr first = grouped ? Expr() : intrinsic(Bool(), gpu_intrinsic::first_thread);
            for (const For *t : r.thread_loops) {
                if (r.group_loops.count(t->name)) continue;
                Expr at_min = Variable::make(Int(32), t->name) == t->min;
                first = first.defined() ? (first && at_min) : at_min;
            }
            fold = IfThenElse::make(first, fold);
            for (auto it = r.thread_loops.rbegin(); it != r.thread_loops.rend(); ++it) {
                const For *t = *it;
                fold = For::make(t->name, t->min, t->extent, ForType::GPUThread, fold);
            }
            steps.push_back(fold);
        }
        Stmt s = Block::make(steps);
        for (const Reduction &r : found) {
            s = Allocate::make(r.partial, r.type, MemoryType::Register, {}, const_true(), s);
        }
        return s;
    }
};

}  // namespace

bool has_thread_loop(const Stmt &s) {
    struct Find : IRVisitor {
        bool found = false;
        using IRVisitor::visit;
        void visit(const For *op) override {
            found = found || op->for_type == ForType::GPUThread;
            if (!found) IRVisitor::visit(op);
        }
    } find;
    s.accept(&find);
    return find.found;
}

bool reduces_across_threads(const For *loop, const std::set<std::string> &per_thread) {
    FindReductions find(stage_of_loop(loop->name), per_thread);
    loop->accept(&find);
    return !find.found.empty();
}

BlockLevelKernel lower_block_level_code(const Stmt &body, const std::string &kernel) {
    BlockLevelKernel k;
    if (!has_thread_loop(body)) {
        k.body = body;
        return k;
    }
    LowerBlockLevel lower(kernel);
    k.body = lower.mutate(body);
    k.per_thread = lower.per_thread;
    return k;
}

}  // namespace internal
}  // namespace loom
