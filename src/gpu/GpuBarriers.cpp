#include "gpu/GpuBarriers.h"

#include <map>
#include <vector>

#include "gpu/CrossThreadReductions.h"
#include "ir/IRMutator.h"
#include "ir/IRVisitor.h"
#include "ir/Util.h"

namespace loom {
namespace internal {

namespace {

/** Who may make an access: any thread of the block, or only its first. */
enum Who { AnyThread = 0, FirstThread = 1 };

/** What a window of a block's code does to one shared buffer. */
struct Access {
    bool read[2] = {false, false};
    bool write[2] = {false, false};
    /** A write other than of the buffer's pure definition. */
    bool impure_write = false;

    void merge(const Access &o) {
        for (int w = 0; w < 2; w++) {
            read[w] = read[w] || o.read[w];
            write[w] = write[w] || o.write[w];
        }
        impure_write = impure_write || o.impure_write;
    }
};
using Accesses = std::map<std::string, Access>;

bool is_intrinsic_call(const Expr &e, const char *name) {
    const Call *c = e.as<Call>();
    return c && c->is_intrinsic(name);
}

/** Every access to a shared buffer in a statement of the block's own code,
 * and who makes it. */
class CollectAccesses : public IRVisitor {
  public:
    explicit CollectAccesses(const std::set<std::string> &shared) : shared(shared) {}
    Accesses found;
    /** Whether the statement reduces across the whole block, which waits
     * for every thread of it. */
    bool reduces_across_block = false;

    using IRVisitor::visit;

  private:
    const std::set<std::string> &shared;
    int thread_loops = 0, first_thread_guards = 0;
    std::vector<std::string> loops;  // enclosing, outermost first

    Who who() const {
        return thread_loops == 0 && first_thread_guards > 0 ? FirstThread : AnyThread;
    }

    void visit(const For *op) override {
        const bool thread = op->for_type == ForType::GPUThread;
        op->min.accept(this);
        op->extent.accept(this);
        thread_loops += thread;
        loops.push_back(op->name);
        op->body.accept(this);
        loops.pop_back();
        thread_loops -= thread;
    }
    void visit(const IfThenElse *op) override {
        op->condition.accept(this);
        const bool first =
            thread_loops == 0 && is_intrinsic_call(op->condition, gpu_intrinsic::first_thread);
        first_thread_guards += first;
        op->then_case.accept(this);
        first_thread_guards -= first;
        if (op->else_case.defined()) op->else_case.accept(this);
    }
    void visit(const Load *op) override {
        if (shared.count(op->name)) found[op->name].read[who()] = true;
        IRVisitor::visit(op);
    }
    void visit(const Store *op) override {
        if (shared.count(op->name)) {
            Access &a = found[op->name];
            a.write[who()] = true;
            a.impure_write = a.impure_write || !in_pure_definition(op->name);
        }
        IRVisitor::visit(op);
    }
    void visit(const Call *op) override {
        reduces_across_block =
            reduces_across_block || op->is_intrinsic(gpu_intrinsic::block_reduce);
        IRVisitor::visit(op);
    }

    /** Whether the innermost enclosing loop of buffer's Func is one of
     * its pure definition's. */
    bool in_pure_definition(const std::string &buffer) const {
        const std::string loop = innermost_loop_of_buffer(loops, buffer);
        return !loop.empty() && is_pure_definition_loop(loop, buffer);
    }
};

/** What a stretch of a statement does to shared buffers, and whether it
 * reaches a barrier on every way through (ending the stretch). */
struct Window {
    Accesses accesses;
    bool ends_at_barrier = false;

    void add(const Accesses &more) {
        for (const auto &[name, access] : more) accesses[name].merge(access);
    }
};

/** The accesses of s before its first barrier (from_start), or after its
 * last (otherwise). A sequence stops at a barrier; the scopes around a
 * sequence are looked through. Any other statement is taken whole: a
 * loop may run no iteration, and a branch may not be taken. */
Window window(const Stmt &s, bool from_start, const std::set<std::string> &shared) {
    if (const Block *b = s.as<Block>()) {
        Window w = window(from_start ? b->first : b->rest, from_start, shared);
        if (w.ends_at_barrier) return w;
        Window next = window(from_start ? b->rest : b->first, from_start, shared);
        next.add(w.accesses);
        return next;
    }
    if (const LetStmt *l = s.as<LetStmt>()) {
        Window w = window(l->body, from_start, shared);
        // The value is computed before the body, on every thread.
        if (!from_start && w.ends_at_barrier) return w;
        CollectAccesses value(shared);
        l->value.accept(&value);
        w.add(value.found);
        return w;
    }
    if (const Allocate *a = s.as<Allocate>()) return window(a->body, from_start, shared);
    if (const ProducerConsumer *pc = s.as<ProducerConsumer>()) {
        return window(pc->body, from_start, shared);
    }
    if (const Evaluate *e = s.as<Evaluate>();
        e && is_intrinsic_call(e->value, gpu_intrinsic::barrier)) {
        return Window{{}, true};
    }
    CollectAccesses collect(shared);
    s.accept(&collect);
    Window w{collect.found, false};
    // A statement that reduces across the block (a partial combined in
    // place) waits for every thread inside. Its accesses are few and are
    // kept, whichever side of its wait they are on.
    const Store *store = s.as<Store>();
    w.ends_at_barrier = store && collect.reduces_across_block;
    return w;
}

/** Whether one access of `a` and one of `b` may be made by different
 * threads (only the first thread's accesses are known to be one
 * thread's). */
bool different_threads(const bool a[2], const bool b[2]) {
    return (a[AnyThread] && (b[AnyThread] || b[FirstThread])) || (a[FirstThread] && b[AnyThread]);
}

Stmt barrier() {
    return Evaluate::make(Call::make(Int(32), gpu_intrinsic::barrier, {}, Call::Intrinsic));
}

class InsertBarriers : public IRMutator {
  public:
    InsertBarriers(const std::set<std::string> &per_thread, std::set<std::string> shared)
        : per_thread(per_thread), shared(std::move(shared)) {}

    using IRMutator::visit;

  private:
    const std::set<std::string> &per_thread;
    std::set<std::string> shared;
    int thread_loops = 0;

    Stmt visit(const Allocate *op) override {
        if (thread_loops == 0 && !per_thread.count(op->name)) shared.insert(op->name);
        return IRMutator::visit(op);
    }
    Stmt visit(const Block *op) override {
        Stmt first = mutate(op->first), rest = mutate(op->rest);
        if (thread_loops == 0 && needs_barrier_between(first, rest, shared)) {
            return Block::make({first, barrier(), rest});
        }
        if (first.same_as(op->first) && rest.same_as(op->rest)) return op;
        return Block::make(first, rest);
    }
    Stmt visit(const For *op) override {
        const bool thread = op->for_type == ForType::GPUThread;
        thread_loops += thread;
        Stmt body = mutate(op->body);
        thread_loops -= thread;
        // The next iteration of a serial loop of the block's own code
        // follows this one's last statement. (Block loops are other
        // blocks; their iterations share nothing.)
        const bool serial = op->for_type == ForType::Serial || op->for_type == ForType::Unrolled;
        if (serial && thread_loops == 0 && needs_barrier_between(body, body, shared, op)) {
            body = Block::make(body, barrier());
        }
        if (body.same_as(op->body)) return op;
        return For::make(op->name, op->min, op->extent, op->for_type, body, op->attributes);
    }
};

}  // namespace

Stmt insert_gpu_barriers(const Stmt &kernel_body, const std::set<std::string> &per_thread,
                         const std::set<std::string> &shared_buffers) {
    // With one thread per block, there is no one to wait for.
    if (!has_thread_loop(kernel_body)) return kernel_body;
    return InsertBarriers(per_thread, shared_buffers).mutate(kernel_body);
}

bool needs_barrier_between(const Stmt &before, const Stmt &after,
                           const std::set<std::string> &shared, const For *carried_by) {
    const Window first = window(before, false, shared);
    const Window second = window(after, true, shared);
    for (const auto &[name, a] : first.accesses) {
        auto it = second.accesses.find(name);
        if (it == second.accesses.end()) continue;
        const Access &b = it->second;
        if (different_threads(a.write, b.read) || different_threads(a.read, b.write)) return true;
        // Writes of a pure definition agree where they meet, if they are
        // of one computation of it: in one sequence, or in the iterations
        // of one of its own loops. (A loop around its compute_at level
        // computes it anew in each iteration.)
        const bool one_computation = !carried_by || is_pure_definition_loop(carried_by->name, name);
        if (different_threads(a.write, b.write) &&
            (a.impure_write || b.impure_write || !one_computation)) {
            return true;
        }
    }
    return false;
}

}  // namespace internal
}  // namespace loom
