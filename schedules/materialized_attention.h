// The baseline schedule the fused templates are measured against: the
// softmax of each block of queries materialized over the whole key range.
#pragma once

#include <loom/loom.h>

#include "flash_attention.h"

namespace loom {
namespace schedules {

/** Blocks of `query_block` queries of one head in parallel; per block the
 * scores, probabilities and softmax statistics are computed in turn, each
 * over all keys (s and p stored as query_block x Lk), vectorized along the
 * key and head dimensions. */
inline void materialized_attention(Schedule &sch, const AttentionChain &a, Func m, Func l,
                                   int query_block = 16, int vector = 8) {
    Var io("io"), ii("ii"), task("task");
    sch[a.out]
        .split(a.i, io, ii, query_block)
        .fuse(a.h, io, task)
        .parallel(task)
        .vectorize(a.d, vector);
    sch[a.s].compute_at(a.out, task).vectorize(a.j, vector);
    sch[m].compute_at(a.out, task);
    sch[a.p].compute_at(a.out, task).vectorize(a.j, vector);
    sch[l].compute_at(a.out, task);
    sch[a.o].compute_at(a.out, task).vectorize(a.d, vector);
}

}  // namespace schedules
}  // namespace loom
