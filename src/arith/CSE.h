// Common subexpression elimination: repeated pure subexpressions are computed
// once, in a Let, and referred to by name.
#pragma once

#include "loom/IR.h"

namespace loom {
namespace internal {

/** Replaces each repeated, non-trivial, pure subexpression of e by a variable
 * bound in a Let around the expression. Calls with call_type Intrinsic (and
 * anything containing one) and Loads are never lifted. */
Expr common_subexpression_elimination(const Expr &e);

/** Applies common_subexpression_elimination to every expression in s. */
Stmt common_subexpression_elimination(const Stmt &s);

}  // namespace internal
}  // namespace loom
