// Loop-invariant code motion: see HoistLoopInvariants.h.
#include "lower/HoistLoopInvariants.h"

#include <map>
#include <set>
#include <utility>
#include <vector>

#include "arith/Simplify.h"
#include "ir/IREquality.h"
#include "ir/IRMutator.h"
#include "ir/IRVisitor.h"
#include "ir/Scope.h"
#include "loom/IROperator.h"

namespace loom {
namespace internal {

namespace {

/** Everything a loop body may change between iterations: the names it
 * defines (loop variables, lets, allocations) and the buffers it stores to;
 * and whether it holds GPU loops. */
class BodyEffects : public IRVisitor {
  public:
    std::set<std::string> defined, stored;
    bool has_gpu_loop = false;

  protected:
    using IRVisitor::visit;
    void visit(const For *op) override {
        defined.insert(op->name);
        has_gpu_loop |= op->for_type == ForType::GPUBlock || op->for_type == ForType::GPUThread;
        IRVisitor::visit(op);
    }
    void visit(const LetStmt *op) override {
        defined.insert(op->name);
        IRVisitor::visit(op);
    }
    void visit(const Let *op) override {
        defined.insert(op->name);
        IRVisitor::visit(op);
    }
    void visit(const Allocate *op) override {
        defined.insert(op->name);
        IRVisitor::visit(op);
    }
    void visit(const Store *op) override {
        stored.insert(op->name);
        IRVisitor::visit(op);
    }
};

/** Whether an expression has the same value in every iteration of a loop
 * whose body has `effects`, and may be evaluated before it. */
class IsInvariant : public IRVisitor {
  public:
    IsInvariant(const BodyEffects &effects, const Scope<int64_t> &allocations)
        : effects(effects), allocations(allocations) {}
    bool result = true;

  protected:
    using IRVisitor::visit;
    const BodyEffects &effects;
    /** The allocations around the loop, with their element counts (-1: not
     * a constant, or not unconditional). */
    const Scope<int64_t> &allocations;

    void visit(const Variable *op) override {
        if (effects.defined.count(op->name)) result = false;
    }
    void visit(const Load *op) override {
        // Only loads that cannot fault wherever they are evaluated: from an
        // allocation the body does not write, at a constant index inside it.
        const int64_t *elements = allocations.find(op->name);
        const int64_t *index = as_const_int(op->index);
        if (op->param || !elements || effects.stored.count(op->name) ||
            effects.defined.count(op->name) || !index || *index < 0 || *index >= *elements ||
            (op->predicate.defined() && !is_const_one(op->predicate))) {
            result = false;
            return;
        }
    }
    void visit(const Call *op) override {
        if (!op->is_pure() || op->is_intrinsic("likely")) {
            result = false;
            return;
        }
        IRVisitor::visit(op);
    }
};

bool is_trivial(const Expr &e) {
    if (e.as<Variable>() || is_const(e) || e.as<StringImm>()) return true;
    if (const Cast *c = e.as<Cast>()) return is_trivial(c->value);
    if (const Broadcast *b = e.as<Broadcast>()) return is_trivial(b->value);
    return false;
}

/** Replaces the maximal invariant non-trivial expressions of one loop's
 * body by variables, remembering each (equal expressions share one). */
class LiftInvariants : public IRMutator {
  public:
    LiftInvariants(const BodyEffects &effects, const Scope<int64_t> &allocations,
                   const std::string &loop, int *counter)
        : effects(effects), allocations(allocations), loop(loop), counter(counter) {}
    std::vector<std::pair<std::string, Expr>> lifted;

    using IRMutator::mutate;
    Expr mutate(const Expr &e) override {
        if (!e.defined() || is_trivial(e)) return e;
        IsInvariant check(effects, allocations);
        e.accept(&check);
        if (!check.result) return IRMutator::mutate(e);
        auto found = names.find(e);
        if (found != names.end()) return Variable::make(e.type(), found->second);
        // Numbered per pass, not globally: the same pipeline must lower to
        // the same code (compiled pipelines are cached by it).
        std::string name = loop + ".invariant" + std::to_string((*counter)++);
        names.emplace(e, name);
        lifted.emplace_back(name, e);
        return Variable::make(e.type(), name);
    }

  private:
    const BodyEffects &effects;
    const Scope<int64_t> &allocations;
    const std::string loop;
    int *counter;
    std::map<Expr, std::string, ExprDeepCompare> names;
};

class HoistLoopInvariants : public IRMutator {
  protected:
    using IRMutator::visit;
    /** The allocations around the point being visited, by name, with their
     * element counts, or -1 for one of no constant size or conditional. */
    Scope<int64_t> allocations;
    int counter = 0;
    bool in_kernel = false;

    Stmt visit(const Allocate *op) override {
        int64_t elements = 1;
        bool constant = !op->condition.defined() || is_const_one(op->condition);
        for (const Expr &e : op->extents) {
            const Expr simplified = simplify(e);
            const int64_t *n = as_const_int(simplified);
            constant = constant && n;
            if (n) elements *= *n;
        }
        ScopedBinding<int64_t> bind(allocations, op->name, constant ? elements : -1);
        return IRMutator::visit(op);
    }

    Stmt visit(const For *op) override {
        if (op->for_type == ForType::GPUBlock && !in_kernel) {
            in_kernel = true;
            Stmt s = IRMutator::visit(op);
            in_kernel = false;
            return s;
        }
        const bool movable =
            in_kernel && (op->for_type == ForType::Serial || op->for_type == ForType::Unrolled ||
                          op->for_type == ForType::Vectorized);
        if (!movable) return IRMutator::visit(op);
        BodyEffects effects;
        effects.defined.insert(op->name);
        op->body.accept(&effects);
        if (effects.has_gpu_loop) return IRMutator::visit(op);
        LiftInvariants lift(effects, allocations, op->name, &counter);
        Stmt body = lift.mutate(op->body);
        // Then the inner loops, for what depends on this loop only.
        body = mutate(body);
        Stmt s = For::make(op->name, op->min, op->extent, op->for_type, body, op->attributes);
        for (auto it = lift.lifted.rbegin(); it != lift.lifted.rend(); ++it)
            s = LetStmt::make(it->first, it->second, s);
        return s;
    }
};

}  // namespace

Stmt hoist_loop_invariants(const Stmt &s) { return HoistLoopInvariants().mutate(s); }

}  // namespace internal
}  // namespace loom
