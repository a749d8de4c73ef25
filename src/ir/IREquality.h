// Structural equality and a total order on IR, for CSE and simplifier rules.
#pragma once

#include "loom/IR.h"

namespace loom {
namespace internal {

/** Whether a and b are the same tree (same node kinds, types, names, values). */
bool equal(const Expr &a, const Expr &b);
bool equal(const Stmt &a, const Stmt &b);
/** A total order consistent with equal(): !less(a,b) && !less(b,a) iff equal. */
bool less(const Expr &a, const Expr &b);

struct ExprDeepCompare {
    bool operator()(const Expr &a, const Expr &b) const { return less(a, b); }
};

}  // namespace internal
}  // namespace loom
