// Which dense vector accesses in a loop are aligned at every iteration
// exactly when they are at the first, so that one test before the loop can
// stand for a test at each access.
//
// A vector access moves whole words only at an address that is a multiple
// of the word. Where the compiler cannot prove that (an input's start is
// unknown: a cropped tensor may begin anywhere), the CUDA backend tests the
// address at each access and keeps a lane-by-lane fallback beside the wide
// one; the GPU compiler then predicates both, issuing every load twice, and
// unrolls the loop less. In a loop along a row, though, the index is
// usually a loop-invariant part (the row's start) plus a multiple of the
// vector (the loop's and the threads' steps), and then every access has the
// alignment of the invariant part. This analysis finds such accesses and
// the invariant index; CodeGen_CUDA tests those once, before the loop, and
// runs a copy of the loop whose accesses move aligned words untested (the
// original loop, with its tests, runs when the test fails).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "loom/IR.h"

namespace loom {
namespace internal {

/** A dense vector access whose alignment is that of a loop-invariant
 * index: index.base - invariant_index is a multiple of word / element
 * size however the loop's (and its inner loops') variables vary. */
struct InvariantAlignment {
    const Ramp *index = nullptr;  // the access's index: with the buffer, keys the access
    std::string buffer;
    Type element;
    int word = 0;  // bytes
    /** In variables bound outside the loop. */
    Expr invariant_index;
};

/** The dense, unmasked vector loads and stores inside `loop` (its body's
 * lets seen through, its own and inner loops' variables varying) for which
 * `tested_word(buffer, element type, lanes, proven congruence)` returns the
 * word (in bytes) that the access would test at run time (0: no test), and
 * whose index moves in multiples of that word. IR shares nodes: an index
 * node that occurs on one buffer at several places counts only when every
 * occurrence has the same invariant index. */
std::vector<InvariantAlignment> invariant_alignments(
    const For *loop,
    const std::function<int(const std::string &, Type, int, const ModulusRemainder &)>
        &tested_word);

}  // namespace internal
}  // namespace loom
