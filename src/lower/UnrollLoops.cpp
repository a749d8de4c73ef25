// UnrollLoops: this is where the schedule's unroll() takes effect. Each
// ForType::Unrolled loop becomes straight-line code, one copy of the body per
// iteration with the loop variable replaced by a constant offset from the
// loop's min, so the backend can keep the iterations' values in registers and
// schedule them together. Inner loops are unrolled first.
#include "lower/UnrollLoops.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "arith/Bounds.h"
#include "arith/Simplify.h"
#include "ir/IRMutator.h"
#include "ir/Substitute.h"
#include "loom/Error.h"
#include "loom/IROperator.h"

namespace loom {
namespace internal {

namespace {

// Unrolling beyond this many copies is almost certainly a schedule mistake,
// and would make the compiler crawl.
constexpr int64_t max_unroll = 1024;

class UnrollLoops : public LetTrackingMutator {
  protected:
    using LetTrackingMutator::visit;

    // Loop bounds of the enclosing loops (and their lets), to find a
    // constant upper bound for an extent that is not a constant.
    Scope<Interval> loop_bounds;

    Stmt visit(const For *op) override {
        if (op->for_type != ForType::Unrolled) {
            Expr max = simplify(op->min + op->extent - 1);
            ScopedBinding<Interval> bind(loop_bounds, op->name, Interval(op->min, max));
            return IRMutator::visit(op);
        }
        Stmt body = mutate(op->body);

        Expr extent = op->extent;
        if (!as_const_int(extent)) extent = simplify(extent);
        const int64_t *n = as_const_int(extent);
        bool guarded = false;
        int64_t upper = 0;
        // A non-constant extent with a constant upper bound unrolls to that
        // bound, each copy guarded.
        if (!n && constant_upper_bound_under_lets(extent, enclosing_lets, loop_bounds, &upper)) {
            n = &upper;
            guarded = true;
        }
        user_assert(n) << "The unrolled loop over " << op->name
                       << " needs a constant extent, but its extent is not a constant. Split "
                       << "it by a constant factor and unroll the inner loop instead.";
        user_assert(*n <= max_unroll) << "The unrolled loop over " << op->name << " has " << *n
                                      << " iterations; unroll by at most " << max_unroll
                                      << " (split it by a smaller factor first).";
        if (*n <= 0) return Evaluate::make(make_zero(Int(32)));

        Type t = op->min.type();
        std::vector<Stmt> copies;
        for (int64_t i = 0; i < *n; i++) {
            Expr x;
            if (const int64_t *m = as_const_int(op->min)) {
                x = make_const(t, *m + i);
            } else {
                x = i == 0 ? op->min : Add::make(op->min, make_const(t, i));
            }
            Stmt copy = substitute(op->name, x, body);
            if (guarded) copy = IfThenElse::make(LT::make(make_const(t, i), op->extent), copy);
            copies.push_back(copy);
        }
        return Block::make(copies);
    }
};

}  // namespace

Stmt unroll_loops(const Stmt &s) { return UnrollLoops().mutate(s); }

}  // namespace internal
}  // namespace loom
