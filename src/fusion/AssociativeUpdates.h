// Updates that combine an element with a value by an associative and
// commutative operator: buffer[i] = op(buffer[i], value). Such updates may
// run in any order and in any grouping, which is what lets several GPU
// threads (CrossThreadReductions) or several vector lanes (VectorizeLoops)
// make them together: each combines its own values, and the partial results
// are combined into the element.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "loom/IR.h"

namespace loom {
namespace internal {

/** Recognizes st as buffer[index] = op(buffer[index], value) (either
 * operand order), through the lets common-subexpression elimination wraps
 * around its value. On success sets *op and *value (the operand other than
 * the element, with those lets around it). The value must not read the
 * buffer, and the store must be scalar and unpredicated. */
bool as_associative_update(const Store *st, VectorReduce::Op *op, Expr *value);

/** Recognizes a < b, a <= b, b > a or b >= a: sets its operands, with the
 * smaller one in *a, and whether it is strict. The tests of the updates
 * that keep a point (argmax's `v > best`) take these forms. */
bool as_less(const Expr &e, Expr *a, Expr *b, bool *strict);

/** The innermost of `lets` (open around a statement, outermost first)
 * that binds `name`; null if none does. */
const LetStmt *innermost_binding(const std::vector<const LetStmt *> &lets, const std::string &name);

/** Recognizes st as element = select(condition, value, element), as the
 * stores of an update that keeps a point are (argmax's index): the stored
 * value itself, or a Variable bound by one of `open_lets` (the LetStmts
 * around st, outermost first) that computed it ahead of the stores, through
 * the lets CSE wraps around it. Sets *condition and *value, those lets
 * substituted, and *computed_before to the LetStmt (null if none). The
 * store must be scalar and unpredicated. */
bool as_select_update(const Store *st, const std::vector<const LetStmt *> &open_lets,
                      Expr *condition, Expr *value, const LetStmt **computed_before);

/** Whether e loads from any of `buffers`. */
bool loads_from(const Expr &e, const std::set<std::string> &buffers);

/** x such that combine(op, x, y) == y, for values of type t. */
Expr reduction_identity(VectorReduce::Op op, Type t);

/** a op b, for a VectorReduce operator. */
Expr combine(VectorReduce::Op op, const Expr &a, const Expr &b);

}  // namespace internal
}  // namespace loom
