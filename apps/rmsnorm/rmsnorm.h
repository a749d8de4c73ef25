// RMSNorm over the last (contiguous) dimension of a float32 matrix:
// out(r, c) = in(r, c) / sqrt(mean_c in(r, c)^2 + eps) * weight(c),
// as in LLaMA-style transformers (torch.nn.functional.rms_norm). The
// algorithm only; schedule_cpu and schedule_gpu are its schedules.
#pragma once

#include <loom/loom.h>

#include "../gpu_rows.h"
#include "rmsnorm_reference.h"

namespace rmsnorm {

struct RmsNorm {
    loom::BufferParam input;   // [rows, cols]
    loom::BufferParam weight;  // [cols]
    loom::Param<float> eps;
    loom::Var r{"r"}, c{"c"};
    loom::RDom k;
    loom::Func sum_sq{"sum_sq"}, inv_rms{"inv_rms"}, out{"out"};

    explicit RmsNorm(loom::BufferParam in = loom::BufferParam(loom::Float(32), 2, "input"),
                     loom::BufferParam w = loom::BufferParam(loom::Float(32), 1, "weight"),
                     loom::Param<float> epsilon = loom::Param<float>("eps", 1e-6f))
        : input(std::move(in)),
          weight(std::move(w)),
          eps(std::move(epsilon)),
          k(0, input.dim(1).extent(), "k") {
        using namespace loom;
        sum_sq(r) = 0.0f;
        sum_sq(r) += input(r, k) * input(r, k);
        inv_rms(r) = rsqrt(sum_sq(r) / cast<float>(input.dim(1).extent()) + eps);
        out(r, c) = input(r, c) * inv_rms(r) * weight(c);
    }

    /** Blocks of rows in parallel; per row the serial sum of squares, then
     * the scaled row, vectorized along it. */
    void schedule_cpu(loom::Schedule &sch, int rows_per_task = 8, int vector = 16) const {
        using namespace loom;
        Var ro("ro"), ri("ri");
        sch[out].split(r, ro, ri, rows_per_task).parallel(ro).vectorize(c, vector);
        sch[sum_sq].compute_at(out, ri);
        sch[inv_rms].compute_at(out, ri);
    }
    /** One GPU block per row: the sum of squares is shared by the block's
     * threads, the row's scale is a single point in shared memory, and the
     * output row is written `vector` floats per thread. With `stage_rows`
     * the row is copied into shared memory first, so that both passes read
     * device memory once (rows up to 58,112 floats on sm_90). Without,
     * schedule_gpu_per_thread: the row is read twice, the second time from
     * L2 as a rule. `threads` 0 is
     * loom_apps::row_app_gpu_threads(stage_rows): 512 staged, 1024 not.
     * With `rows_per_block` above 1, a block takes that many rows, `threads`
     * threads each (0: loom_apps::row_app_threads), each row's threads
     * reducing it across themselves at each step, staged or not: for short
     * rows (loom_apps::schedule_rows_on_gpu). */
    void schedule_gpu(loom::Schedule &sch, int threads = 0, int vector = 4, bool stage_rows = true,
                      int rows_per_block = 1) const {
        threads = loom_apps::row_app_threads(threads, stage_rows, rows_per_block);
        if (!stage_rows && rows_per_block <= 1) {
            schedule_gpu_per_thread(sch, threads, vector, false);
            return;
        }
        loom_apps::schedule_rows_on_gpu(sch, input, out, r, c, k, {sum_sq}, {inv_rms}, threads,
                                        vector, stage_rows, rows_per_block);
    }
    /** One GPU block per row, as schedule_gpu, but each thread sums its
     * own interleaved points of the row in a loop of its own before the
     * block combines the sums (loom_apps::reduce_row_per_thread): its
     * whole steps have no test of the row's end, and nvcc unrolls them.
     * Two vectors a step from device memory; with `stage_rows`, one from
     * the row's copy in shared memory (neighbouring threads then read
     * neighbouring 16-byte words: no bank conflicts). */
    void schedule_gpu_per_thread(loom::Schedule &sch, int threads = 256, int vector = 4,
                                 bool stage_rows = false) const {
        loom_apps::schedule_rows_on_gpu(sch, input, out, r, c, k, {}, {inv_rms}, threads, vector,
                                        stage_rows);
        loom_apps::reduce_row_per_thread(sch, sum_sq, k, out, r, threads,
                                         stage_rows ? vector : 2 * vector);
    }
    /** loom_apps::schedule_row_app_in_registers: the row kept in its
     * threads' registers; with `per_thread`, each thread sums its own
     * vectors first; without, the sum is combined across the threads at
     * each step. The row length must be fixed first (fix_row_length). */
    void schedule_gpu_in_registers(loom::Schedule &sch, int threads = 1024, int vector = 4,
                                   bool per_thread = true, int blocks_per_sm = 0) const {
        loom_apps::schedule_row_app_in_registers(*this, sch, threads, vector, per_thread,
                                                 blocks_per_sm);
    }
    /** Fixes the row length at `columns` (loom_apps::fix_row_length). */
    void fix_row_length(int columns) const {
        loom_apps::fix_row_length(input, out, {weight}, columns);
    }
    /** The promises of loom_apps::promise_aligned_rows, with the weight: the GPU
     * schedule's vectors then move as aligned words, untested. */
    void promise_aligned_rows() const { loom_apps::promise_aligned_rows(input, out, {weight}); }
};

}  // namespace rmsnorm
