// Proves what the first lane of each vector load and store is aligned to.
//
// A dense vector access moves whole 16-, 8- or 4-byte words only when its
// address is a multiple of the word. Without a proof, the CUDA backend tests
// the address at run time and keeps a lane-by-lane fallback beside every
// wide access, which the GPU compiler often predicates: its instructions
// issue even when the words suffice. This pass records, on every Load and
// Store whose index is a Ramp, what the Ramp's base is congruent to (in
// elements from the buffer's start). Code generation combines it with what
// it knows of the buffer's start (an allocation's alignment, or an input's
// or output's promised host alignment) to drop the test.
//
// The proof sees through lets, as index arithmetic is spread over them
// (`c = c.min + co * 8; ... in[c - c.min]` is a multiple of 8 once c is
// replaced by its value), and uses the facts the caller knows about free
// symbols, such as a stride promised to be a multiple of 4.
#pragma once

#include "ir/Scope.h"
#include "loom/IR.h"

namespace loom {
namespace internal {

/** A let's value is carried into an index only up to this many nodes:
 * chains of lets can double in size at each step, and indices are small. */
constexpr int kMaxExpandedNodes = 400;

/** The nodes of e's tree (a shared subexpression counts at each use), or
 * more than kMaxExpandedNodes once past it. */
int count_nodes(const Expr &e);

/** e with each variable that `values` holds a defined value for replaced
 * by it (the values already expanded: one pass). */
Expr expand_lets(const Expr &e, const Scope<Expr> &values);

/** Sets the alignment of every Load and Store with a Ramp index. `facts`:
 * known congruences of free symbols (buffer descriptor fields, which no
 * statement rebinds). */
Stmt align_vector_accesses(const Stmt &s, const Scope<ModulusRemainder> &facts);

}  // namespace internal
}  // namespace loom
