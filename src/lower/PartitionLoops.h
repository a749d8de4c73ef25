// Splits loops whose bodies test likely() conditions into a prologue, a
// steady state in which those conditions are known true, and an epilogue.
#pragma once

#include <string>

#include "loom/IR.h"

namespace loom {
namespace internal {

/** Partitions each serial or parallel loop whose body contains conditions
 * wrapped in likely() (in IfThenElse or Select conditions, or anywhere in an
 * expression) that hold over a contiguous middle range of the loop. The
 * conditions it can solve are linear comparisons in the loop variable, such
 * as likely(xo * 8 + xi < n) with xi an inner loop variable; in the steady
 * state they are replaced by true (and the branches folded). A loop with no
 * solvable condition is left as it was. A loop of a GPU block's own code
 * that reduces across its threads is not (see PartitionLoops.cpp); the
 * Register storage at the block level that every thread keeps a copy of
 * (Allocate::replicated) is updated by such reductions. */
Stmt partition_loops(const Stmt &s);

}  // namespace internal
}  // namespace loom
