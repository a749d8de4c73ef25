// The reference interpreter: evaluates Func definitions directly, with no
// schedule, as the oracle that every compiled schedule is checked against.
//
// Each Expr is evaluated in its own type exactly as compiled code computes it:
// integers wrap at their width (for signed 32- and 64-bit integers, whose
// overflow compiled code assumes never happens, one of the results it may
// give), integer / and % round toward negative infinity
// (x / 0 == 0), float32 results are rounded to float32 after every operation,
// float16 and bfloat16 results are computed in float32 and rounded to the
// 16-bit format, float->int casts truncate toward zero.
//
// A Func's value is what running its pure definition over its whole (infinite)
// domain and then each update definition in order, over every point of its
// RDom (last RVar innermost, where the RDom's predicate holds), gives. Input
// BufferParams and Params take the values bound with set(); reading an input
// outside its bounds is a RuntimeError.
#pragma once

#include <vector>

#include "loom/Buffer.h"
#include "loom/Func.h"

namespace loom {

/** Computes f over [0, sizes[d]) in each dimension d. f must have one output. */
RawBuffer interpret(const Func &f, const std::vector<int> &sizes);

/** Computes every output of a Tuple-valued f over [0, sizes). */
std::vector<RawBuffer> interpret_tuple(const Func &f, const std::vector<int> &sizes);

/** Fills the given buffers over their own regions (mins and extents): one
 * buffer per output of each Func, in order (a Tuple-valued Func takes as many
 * consecutive buffers as it has outputs, all with the same region). */
void interpret_into(const std::vector<Func> &outputs, const std::vector<RawBuffer> &out_buffers);

}  // namespace loom
