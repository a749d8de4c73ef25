// Replaces loops marked ForType::Unrolled by one copy of the body per
// iteration.
#pragma once

#include "loom/IR.h"

namespace loom {
namespace internal {

/** Unrolls every ForType::Unrolled loop in s: the loop becomes a Block of
 * copies of its body, the loop variable replaced by min + i in copy i. The
 * extent must be a constant after simplification; if it is not but has a
 * constant upper bound, each copy is guarded by i < extent. Throws
 * CompileError otherwise. */
Stmt unroll_loops(const Stmt &s);

}  // namespace internal
}  // namespace loom
