// Removes the promises bounds analysis read: promise_clamped(v, lo, hi)
// becomes v, since code generation needs only the value.
#pragma once

#include "loom/IR.h"

namespace loom {
namespace internal {

/** Replaces each promise_clamped(v, lo, hi) by v. */
Stmt strip_promises(const Stmt &s);

}  // namespace internal
}  // namespace loom
