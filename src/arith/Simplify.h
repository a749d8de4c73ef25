// The simplifier: constant folding, canonical ordering of commutative
// operands, algebraic rewrite rules over +,-,*,/,%,min,max,select and
// comparisons, and reasoning with interval and modulus facts about the
// variables in scope. Bounds inference, loop partitioning and the repair
// derivations all lean on it.
#pragma once

#include "arith/Interval.h"
#include "ir/Scope.h"
#include "loom/IR.h"

namespace loom {
namespace internal {

/** Simplifies e. `bounds` gives known ranges of free variables; `alignment`
 * known (modulus, remainder) facts. */
Expr simplify(const Expr &e, bool remove_dead_lets = true,
              const Scope<Interval> &bounds = Scope<Interval>(),
              const Scope<ModulusRemainder> &alignment = Scope<ModulusRemainder>());
/** Simplifies e assuming its operands are simplified already: only the rules
 * at its root run (which may still rewrite the operands they combine). For
 * code that builds expressions bottom-up from simplified parts, such as
 * interval arithmetic, where simplify() would walk every operand again at
 * every level. */
Expr simplify_shallow(const Expr &e);
/** Simplifies a statement: also folds constant branches, drops empty loops,
 * and uses loop bounds and if conditions as facts inside their bodies. */
Stmt simplify(const Stmt &s, bool remove_dead_lets = true,
              const Scope<Interval> &bounds = Scope<Interval>(),
              const Scope<ModulusRemainder> &alignment = Scope<ModulusRemainder>());

/** What e (an integer) is congruent to, from the facts about its free
 * variables: the alignment the simplifier tracks through e's arithmetic
 * once it is simplified. */
ModulusRemainder modulus_remainder(
    const Expr &e, const Scope<ModulusRemainder> &facts = Scope<ModulusRemainder>());

/** e (an integer) less the terms of its sum whose constant factor c > 0
 * divides, its constant reduced modulo c: e minus the result is a multiple
 * of c (co * 1024 + 4 * t + 5, modulo 1024: 4 * t + 5). */
Expr rest_modulo(const Expr &e, int64_t c);

/** Whether e (a bool) simplifies to true. Never claims true wrongly. */
bool can_prove(const Expr &e, const Scope<Interval> &bounds = Scope<Interval>());

}  // namespace internal
}  // namespace loom
