// Device memory for Funcs computed inside a GPU kernel: see
// HoistKernelAllocations.h.
#include "gpu/HoistKernelAllocations.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "arith/Bounds.h"
#include "arith/Simplify.h"
#include "ir/IRMutator.h"
#include "ir/IRPrinter.h"
#include "ir/Substitute.h"
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
        // A copy's size where it is no constant: bound around the kernel,
        // which then takes it as an argument.
        std::string copy_size_name;
        Expr copy_size;
    };
    bool in_kernel = false;
    std::vector<const For *> gpu_loops;                   // around the statement, outermost first
    std::vector<std::string> other_loops;                 // the kernel's serial (and other) loops
    std::vector<std::pair<std::string, Expr>> lets;       // the kernel's, outermost first
    std::vector<std::pair<std::string, Expr>> host_lets;  // around the kernel
    std::vector<Hoisted> hoisted;

    Stmt visit(const For *op) override {
        const bool gpu = op->for_type == ForType::GPUBlock || op->for_type == ForType::GPUThread;
        if (!in_kernel && op->for_type == ForType::GPUBlock) {
            in_kernel = true;
            gpu_loops.push_back(op);
            Stmt body = mutate(op->body);
            gpu_loops.pop_back();
            in_kernel = false;
            Stmt s = For::make(op->name, op->min, op->extent, op->for_type, body, op->attributes);
            for (auto it = hoisted.rbegin(); it != hoisted.rend(); ++it) {
                s = Allocate::make(it->name, it->type, MemoryType::Global, {it->extent},
                                   const_true(), s);
                if (it->copy_size.defined())
                    s = LetStmt::make(it->copy_size_name, it->copy_size, s);
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
        auto &scope = in_kernel ? lets : host_lets;
        scope.emplace_back(op->name, op->value);
        Stmt s = IRMutator::visit(op);
        scope.pop_back();
        return s;
    }

    /** Whether e depends on the kernel's loops (a block, a thread, an
     * iteration): then it is not known at the launch. */
    bool varies_in_kernel(const Expr &e) const {
        for (const For *l : gpu_loops) {
            if (expr_uses_var(e, l->name)) return true;
        }
        for (const std::string &l : other_loops) {
            if (expr_uses_var(e, l)) return true;
        }
        return false;
    }

    /** The most that `extent` (with the kernel's lets substituted) can be
     * in any block, thread or iteration, as the host can compute it at the
     * launch: the extent itself where it does not vary inside the kernel,
     * else a constant bound (a region computed per block that is smaller
     * at the edge of the data, a ragged last tile, has one); undefined if
     * neither is found. Shared memory is sized the same way. */
    Expr most_at_launch(const Expr &extent) const {
        Expr e = simplify(substitute_enclosing_lets(lets, extent));
        if (!varies_in_kernel(e)) return e;
        // The loops' sizes are the host's lets (a thread loop's extent
        // among them): the bound needs their values.
        int64_t most = 0;
        if (constant_upper_bound(simplify(substitute_enclosing_lets(host_lets, e)),
                                 Scope<Interval>(), &most) &&
            most <= INT32_MAX) {
            // (An extent's type: an int64 constant would make the size
            // int64 and its products with the other extents mixed.)
            return make_const(Int(32), std::max<int64_t>(most, 0));
        }
        return Expr();
    }

    Stmt visit(const Allocate *op) override {
        if (!in_kernel || op->memory_type != MemoryType::Global) return IRMutator::visit(op);
        // The size of one copy, in the values the host has at the launch:
        // room for the most that any copy holds, where that varies.
        auto whole_region = [&] {
            Expr n = 1;
            for (const Expr &e : op->extents) n = n * e;
            return simplify(substitute_enclosing_lets(lets, n));
        };
        Expr size = 1;
        for (const Expr &e : op->extents) {
            Expr most = most_at_launch(e);
            user_assert(most.defined())
                << "Func " << op->name
                << " is stored in MemoryType::Global inside a GPU kernel with a size that differs "
                   "between blocks, threads or iterations ("
                << whole_region()
                << ") and no constant bound. Each block (or thread) gets a copy of one size, "
                   "allocated before the launch: compute it over a region of the same size "
                   "everywhere, or of a constant most (e.g. a tile of a split), or at root.";
            size = size * most;
        }
        size = simplify(size);
        // Its instance: the linear index of its block, and of its thread if
        // it is inside the thread loops.
        Expr instance = 0, instances = 1;
        for (auto it = gpu_loops.rbegin(); it != gpu_loops.rend(); ++it) {
            const For *l = *it;
            instance = instance + (Variable::make(Int(32), l->name) - l->min) * instances;
            instances = instances * l->extent;
        }
        Hoisted h{op->name, op->type, Expr(), "", Expr()};
        if (!is_const(size)) {
            h.copy_size_name = op->name + ".copy_size";
            h.copy_size = size;
            size = Variable::make(Int(32), h.copy_size_name);
        }
        h.extent = simplify(size * instances);
        Stmt body = OffsetAccesses(op->name, simplify(instance * size)).mutate(op->body);
        hoisted.push_back(h);
        return mutate(body);
    }
};

}  // namespace

Stmt hoist_kernel_allocations(const Stmt &s) { return HoistKernelAllocations().mutate(s); }

}  // namespace internal
}  // namespace loom
