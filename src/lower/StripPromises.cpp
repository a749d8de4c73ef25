// Removes the promises bounds analysis read: promise_clamped(v, lo, hi)
// becomes v, since code generation needs only the value.
#include "lower/StripPromises.h"

#include "ir/IRMutator.h"

namespace loom {
namespace internal {

/** Replaces each promise_clamped(v, lo, hi) by v: the promise served bounds
 * analysis; code generation needs only the value. */
Stmt strip_promises(const Stmt &s) {
    class Strip : public IRMutator {
      protected:
        using IRMutator::visit;
        Expr visit(const Call *op) override {
            if (op->is_intrinsic(Call::promise_clamped)) return mutate(op->args[0]);
            return IRMutator::visit(op);
        }
    };
    return Strip().mutate(s);
}

}  // namespace internal
}  // namespace loom
