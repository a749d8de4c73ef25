// Device memory for Funcs computed inside a GPU kernel: see
// HoistKernelAllocations.h.
#include "HoistKernelAllocations.h"

#include <string>
#include <utility>
#include <vector>

#include "IRMutator.h"
#include "IRPrinter.h"
#include "Simplify.h"
#include "Substitute.h"
#include "loom/Error.h"
#include "loom/IROperator.h"

namespace loom {
namespace internal {

namespace {

/** Adds `offset` to the index of every load and store of `name`. */
class OffsetAccesses : public IRMutator {
  public:
    OffsetAccesses(const std::string &name, const Expr &offset) : name(name), offset(offset) {}

  protected:
    using IRMutator::visit;
    Expr shifted(const Expr &index) const {
        return index.type().is_vector() ? index + Broadcast::make(offset, index.type().lanes)
                                        : index + offset;
    }
    Expr visit(const Load *op) override {
        Expr e = IRMutator::visit(op);
        const Load *l = e.as<Load>();
        if (l->name != name) return e;
        return Load::make(l->type, l->name, shifted(l->index), l->predicate, l->param);
    }
    Stmt visit(const Store *op) override {
        Stmt s = IRMutator::visit(op);
        const Store *st = s.as<Store>();
        if (st->name != name) return s;
        return Store::make(st->name, st->value, shifted(st->index), st->predicate, st->param);
    }

  private:
    const std::string &name;
    Expr offset;
};

class HoistKernelAllocations : public IRMutator {
  protected:
    using IRMutator::visit;

    struct Hoisted {
        std::string name;
        Type type;
        Expr extent;  // every instance's copy
    };
    bool in_kernel = false;
    std::vector<const For *> gpu_loops;              // around the statement, outermost first
    std::vector<std::string> other_loops;            // the kernel's serial (and other) loops
    std::vector<std::pair<std::string, Expr>> lets;  // the kernel's, outermost first
    std::vector<Hoisted> hoisted;

    Stmt visit(const For *op) override {
        const bool gpu = op->for_type == ForType::GPUBlock || op->for_type == ForType::GPUThread;
        if (!in_kernel && op->for_type == ForType::GPUBlock) {
            in_kernel = true;
            gpu_loops.push_back(op);
            Stmt body = mutate(op->body);
            gpu_loops.pop_back();
            in_kernel = false;
            Stmt s = For::make(op->name, op->min, op->extent, op->for_type, body);
            for (auto it = hoisted.rbegin(); it != hoisted.rend(); ++it) {
                s = Allocate::make(it->name, it->type, MemoryType::Global, {it->extent},
                                   const_true(), s);
            }
            hoisted.clear();
            return s;
        }
        if (!in_kernel) return IRMutator::visit(op);
        if (gpu) gpu_loops.push_back(op);
        else other_loops.push_back(op->name);
        Stmt s = IRMutator::visit(op);
        if (gpu) gpu_loops.pop_back();
        else other_loops.pop_back();
        return s;
    }

    Stmt visit(const LetStmt *op) override {
        if (!in_kernel) return IRMutator::visit(op);
        lets.emplace_back(op->name, op->value);
        Stmt s = IRMutator::visit(op);
        lets.pop_back();
        return s;
    }

    Stmt visit(const Allocate *op) override {
        if (!in_kernel || op->memory_type != MemoryType::Global) return IRMutator::visit(op);
        // The size of one copy, in the values the host has at the launch.
        Expr size = 1;
        for (const Expr &e : op->extents) size = size * e;
        size = simplify(substitute_enclosing_lets(lets, size));
        auto varies = [&](const std::string &loop) { return expr_uses_var(size, loop); };
        bool per_loop = false;
        for (const For *l : gpu_loops) per_loop = per_loop || varies(l->name);
        for (const std::string &l : other_loops) per_loop = per_loop || varies(l);
        user_assert(!per_loop)
            << "Func " << op->name
            << " is stored in MemoryType::Global inside a GPU kernel with a size that differs "
               "between blocks, threads or iterations ("
            << size
            << "). Each block (or thread) gets a copy of one size, allocated before the launch: "
               "compute it over a region of the same size everywhere (split with "
               "TailStrategy::ShiftInwards), or at root.";
        // Its instance: the linear index of its block, and of its thread if
        // it is inside the thread loops.
        Expr instance = 0, instances = 1;
        for (auto it = gpu_loops.rbegin(); it != gpu_loops.rend(); ++it) {
            const For *l = *it;
            instance = instance + (Variable::make(Int(32), l->name) - l->min) * instances;
            instances = instances * l->extent;
        }
        Stmt body = OffsetAccesses(op->name, simplify(instance * size)).mutate(op->body);
        body = mutate(body);
        hoisted.push_back({op->name, op->type, simplify(size * instances)});
        return body;
    }
};

}  // namespace

Stmt hoist_kernel_allocations(const Stmt &s) { return HoistKernelAllocations().mutate(s); }

}  // namespace internal
}  // namespace loom
