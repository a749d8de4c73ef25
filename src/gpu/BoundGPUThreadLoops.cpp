// Constant extents for gpu_threads loops: see BoundGPUThreadLoops.h.
#include "gpu/BoundGPUThreadLoops.h"

#include <string>
#include <utility>
#include <vector>

#include "arith/Bounds.h"
#include "arith/Simplify.h"
#include "ir/IRMutator.h"
#include "ir/Substitute.h"
#include "loom/IROperator.h"

namespace loom {
namespace internal {

namespace {

class BoundThreadLoops : public LetTrackingMutator {
  protected:
    using LetTrackingMutator::visit;

    Scope<Interval> loop_bounds;

    Stmt visit(const For *op) override {
        Expr min = substitute_enclosing_lets(enclosing_lets, op->min);
        Expr extent = substitute_enclosing_lets(enclosing_lets, op->extent);
        Stmt body;
        {
            ScopedBinding<Interval> bind(loop_bounds, op->name,
                                         Interval(min, simplify(min + extent - 1)));
            body = mutate(op->body);
        }
        int64_t bound = 0;
        if (op->for_type == ForType::GPUThread) {
            const Expr simplified = simplify(extent);
            if (const int64_t *n = as_const_int(simplified)) {
                // Constant already: say so, for the passes that read the
                // block's shape.
                return For::make(op->name, op->min, make_const(op->extent.type(), *n), op->for_type,
                                 body, op->attributes);
            }
        }
        if (op->for_type != ForType::GPUThread ||
            !constant_upper_bound(extent, loop_bounds, &bound) || bound <= 0) {
            return body.same_as(op->body) ? Stmt(op)
                                          : For::make(op->name, op->min, op->extent, op->for_type,
                                                      body, op->attributes);
        }
        Expr var = Variable::make(op->min.type(), op->name);
        body = IfThenElse::make(var < op->min + op->extent, body);
        return For::make(op->name, op->min, make_const(op->extent.type(), bound), op->for_type,
                         body, op->attributes);
    }
};

}  // namespace

Stmt bound_gpu_thread_loops(const Stmt &s) { return BoundThreadLoops().mutate(s); }

}  // namespace internal
}  // namespace loom
