// Run-time checks out of GPU kernels: see HoistKernelChecks.h.
#include "gpu/HoistKernelChecks.h"

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ir/IREquality.h"
#include "ir/IRMutator.h"
#include "ir/IRVisitor.h"
#include "ir/Substitute.h"
#include "loom/IROperator.h"

namespace loom {
namespace internal {

namespace {

bool is_gpu_loop(const For *op) {
    return op->for_type == ForType::GPUBlock || op->for_type == ForType::GPUThread;
}

/** Takes the hoistable checks out of one kernel's loop nest. */
class TakeChecks : public IRMutator {
  public:
    std::vector<Stmt> taken;

  protected:
    using IRMutator::visit;
    std::set<std::string> kernel_names;                   // defined in the kernel
    std::vector<std::pair<std::string, Expr>> host_lets;  // lets of host values
    int conditional = 0;  // inside a serial loop or an if: might not run

    Stmt visit(const For *op) override {
        kernel_names.insert(op->name);
        conditional += !is_gpu_loop(op);
        Stmt s = IRMutator::visit(op);
        conditional -= !is_gpu_loop(op);
        return s;
    }
    Stmt visit(const IfThenElse *op) override {
        conditional++;
        Stmt s = IRMutator::visit(op);
        conditional--;
        return s;
    }
    Stmt visit(const Allocate *op) override {
        kernel_names.insert(op->name);
        return IRMutator::visit(op);
    }
    Stmt visit(const LetStmt *op) override {
        if (uses_kernel_names(op->value)) {
            kernel_names.insert(op->name);
            return IRMutator::visit(op);
        }
        host_lets.emplace_back(op->name, op->value);
        Stmt s = IRMutator::visit(op);
        host_lets.pop_back();
        return s;
    }
    Stmt visit(const AssertStmt *op) override {
        if (conditional || uses_kernel_names(op->condition) || uses_kernel_names(op->message)) {
            return op;
        }
        Stmt check = AssertStmt::make(substitute_enclosing_lets(host_lets, op->condition),
                                      substitute_enclosing_lets(host_lets, op->message));
        bool seen = false;
        for (const Stmt &t : taken) seen = seen || equal(t, check);
        if (!seen) taken.push_back(check);
        return Evaluate::make(0);
    }

  private:
    bool uses_kernel_names(const Expr &e) const {
        if (reads_memory(e)) return true;
        for (const std::string &v : free_variables(e)) {
            if (kernel_names.count(v)) return true;
        }
        return false;
    }
};

class HoistKernelChecks : public IRMutator {
  protected:
    using IRMutator::visit;
    Stmt visit(const For *op) override {
        if (op->for_type != ForType::GPUBlock) return IRMutator::visit(op);
        TakeChecks take;
        Stmt kernel = take.mutate(Stmt(op));
        if (take.taken.empty()) return op;
        std::vector<Stmt> stmts = take.taken;
        stmts.push_back(kernel);
        return Block::make(stmts);
    }
};

}  // namespace

Stmt hoist_kernel_checks(const Stmt &s) { return HoistKernelChecks().mutate(s); }

}  // namespace internal
}  // namespace loom
