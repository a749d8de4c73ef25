// Replaces free Variables by name with Exprs (respecting Let shadowing), and
// replaces subexpressions by identity or by structure.
#pragma once

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "loom/IR.h"

namespace loom {
namespace internal {

Expr substitute(const std::string &name, const Expr &replacement, const Expr &e);
Stmt substitute(const std::string &name, const Expr &replacement, const Stmt &s);
Expr substitute(const std::map<std::string, Expr> &replacements, const Expr &e);
Stmt substitute(const std::map<std::string, Expr> &replacements, const Stmt &s);
// A string literal would otherwise also convert to Expr (through bool).
inline Expr substitute(const char *name, const Expr &replacement, const Expr &e) {
    return substitute(std::string(name), replacement, e);
}
inline Stmt substitute(const char *name, const Expr &replacement, const Stmt &s) {
    return substitute(std::string(name), replacement, s);
}
/** Replaces every subexpression structurally equal to `find`. */
Expr substitute(const Expr &find, const Expr &replacement, const Expr &e);
/** e as it reads where the bindings `lets` (outermost first, each able to
 * use the ones before it) are in scope, with their values substituted in. */
Expr substitute_enclosing_lets(const std::vector<std::pair<std::string, Expr>> &lets, Expr e);
/** Substitutes away every Let (and LetStmt) so no bindings remain. */
Expr substitute_in_all_lets(const Expr &e);
Stmt substitute_in_all_lets(const Stmt &s);

/** The names of the Variables e uses that are not bound inside it. */
std::set<std::string> free_variables(const Expr &e);

/** The names s binds: its loops, lets and allocations. */
std::set<std::string> names_defined_in(const Stmt &s);

/** Whether e (or s) refers to a free Variable named `name`. */
bool expr_uses_var(const Expr &e, const std::string &name);
bool stmt_uses_var(const Stmt &s, const std::string &name);

}  // namespace internal
}  // namespace loom
