// The GPU schedule shared by the row-wise apps (softmax, LayerNorm, and the
// benchmark's RMSNorm): one block per row.
#pragma once

#include <vector>

#include <loom/loom.h>

namespace loom_apps {

/** One GPU block per row `r` of `out`: its threads pass along the row `c`
 * `threads` at a time, each writing `vector` consecutive points as one
 * vector (16-byte stores for 4 floats). `reductions` (updates over `k`) and
 * `per_row` (single points) are computed per row; the reductions' threads
 * share each row and combine their partials across the block. */
inline void schedule_rows_on_gpu(loom::Schedule &sch, const loom::Func &out, const loom::Var &r,
                                 const loom::Var &c, const loom::RDom &k,
                                 const std::vector<loom::Func> &reductions,
                                 const std::vector<loom::Func> &per_row, int threads, int vector) {
    using namespace loom;
    Var co("co"), ci("ci"), cv("cv");
    RVar ko("ko"), ki("ki");
    sch[out].split(c, co, ci, threads * vector).split(ci, ci, cv, vector).vectorize(cv);
    sch[out].gpu_blocks(r).gpu_threads(ci);
    for (const Func &f : per_row) sch[f].compute_at(out, r);
    for (const Func &f : reductions) {
        sch[f].compute_at(out, r);
        sch[f].update().split(k, ko, ki, threads).gpu_threads(ki);
    }
}

}  // namespace loom_apps
