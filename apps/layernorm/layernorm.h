// LayerNorm over the last (contiguous) dimension of a float32 matrix:
// out(r, c) = (in(r, c) - mean(r)) / sqrt(var(r) + eps) * gamma(c) + beta(c),
// with the biased variance, as in PyTorch. The algorithm only; see
// schedule_cpu for the schedule.
#pragma once

#include <cmath>

#include <loom/loom.h>

#include "../gpu_rows.h"
#include "layernorm_reference.h"

namespace layernorm {

struct LayerNorm {
    loom::BufferParam input;        // [rows, cols]
    loom::BufferParam gamma, beta;  // [cols]
    loom::Param<float> eps;
    loom::Var r{"r"}, c{"c"};
    loom::RDom k;
    loom::Func sum_x{"sum_x"}, mean{"mean"}, sum_sq{"sum_sq"}, inv_std{"inv_std"}, out{"out"};

    explicit LayerNorm(loom::BufferParam in = loom::BufferParam(loom::Float(32), 2, "input"),
                       loom::BufferParam g = loom::BufferParam(loom::Float(32), 1, "gamma"),
                       loom::BufferParam b = loom::BufferParam(loom::Float(32), 1, "beta"),
                       // A parameter made elsewhere (a generator's Input) so that
                       // the generated function takes eps as its argument.
                       loom::Param<float> epsilon = loom::Param<float>("eps", 1e-5f))
        : input(std::move(in)),
          gamma(std::move(g)),
          beta(std::move(b)),
          eps(std::move(epsilon)),
          k(0, input.dim(1).extent(), "k") {
        using namespace loom;
        Expr n = cast<float>(input.dim(1).extent());
        sum_x(r) = 0.0f;
        sum_x(r) += input(r, k);
        mean(r) = sum_x(r) / n;
        // Two passes (the mean first) rather than E[x^2] - E[x]^2, which
        // cancels catastrophically for inputs far from zero.
        sum_sq(r) = 0.0f;
        Expr d = input(r, k) - mean(r);
        sum_sq(r) += d * d;
        inv_std(r) = 1.0f / sqrt(sum_sq(r) / n + eps);
        out(r, c) = (input(r, c) - mean(r)) * inv_std(r) * gamma(c) + beta(c);
    }

    /** Blocks of rows in parallel; per row the two serial reductions and the
     * row statistics, then the normalized row, vectorized along it. */
    void schedule_cpu(loom::Schedule &sch, int rows_per_task = 8, int vector = 16) const {
        using namespace loom;
        Var ro("ro"), ri("ri");
        sch[out].split(r, ro, ri, rows_per_task).parallel(ro).vectorize(c, vector);
        sch[sum_x].compute_at(out, ri);
        sch[mean].compute_at(out, ri);
        sch[sum_sq].compute_at(out, ri);
        sch[inv_std].compute_at(out, ri);
    }
    /** The row statistics in one pass over the row: sum_sq rolled with
     * sum_x (rolling_update of sum_sq) over tiles of `tile` points, each
     * tile a vector, the squares kept about the running mean (Welford's
     * update, which the compiler derives from the two-pass definition:
     * docs/numerics.md). Then the normalized row. Reads each row twice
     * instead of three times; as accurate as the two passes. */
    void schedule_cpu_one_pass(loom::Schedule &sch, int rows_per_task = 8, int vector = 16,
                               int tile = 64) const {
        using namespace loom;
        Var ro("ro"), ri("ri");
        RVar ko("ko"), ki("ki");
        sch[out].split(r, ro, ri, rows_per_task).parallel(ro).vectorize(c, vector);
        sch.rolling_update(sum_sq, k).split(k, ko, ki, tile).vectorize(ki);
        for (const Func &f : {sum_sq, mean, inv_std}) sch[f].compute_at(out, ri);
    }
    /** One GPU block per row, the row statistics in one pass: as
     * schedule_gpu_per_thread, each thread rolls its own interleaved points
     * of the row (`per_step` floats a step, 0: two vectors, one with
     * `stage_rows`), but through sum_sq's fused chain: its sum and the
     * squares about its running mean, so that the row is read once for
     * both; the block then combines the threads' states with the derived
     * repair (Chan's combine). Without `stage_rows` the normalized row
     * reads the row again (from L2 as a rule): two reads instead of three,
     * in any row length. */
    void schedule_gpu_one_pass(loom::Schedule &sch, int threads = 256, int vector = 4,
                               bool stage_rows = false, int per_step = 0) const {
        loom_apps::schedule_rows_on_gpu(sch, input, out, r, c, k, {}, {mean, inv_std}, threads,
                                        vector, stage_rows);
        const int step = per_step > 0 ? per_step : stage_rows ? vector : 2 * vector;
        loom_apps::reduce_row_per_thread(sch, sum_sq, k, out, r, threads, step);
        sch[sum_x].compute_at(out, r);
    }
    /** One GPU block per row: the two reductions are shared by the block's
     * threads, the row statistics are single points in shared memory, and
     * the output row is written `vector` floats per thread. With
     * `stage_rows` the row is copied into shared memory first, so that its
     * three passes read device memory once (rows up to 58,112 floats on
     * sm_90). Without, schedule_gpu_per_thread: the row is read three
     * times, the second and third from L2 as a rule. `threads` 0 is
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
        loom_apps::schedule_rows_on_gpu(sch, input, out, r, c, k, {sum_x, sum_sq}, {mean, inv_std},
                                        threads, vector, stage_rows, rows_per_block);
    }
    /** One GPU block per row, as schedule_gpu, but each reduction's pass
     * has each thread sum its own interleaved points in a loop of its own
     * before the block combines the sums (loom_apps::reduce_row_per_thread):
     * its whole steps have no test of the row's end, and nvcc unrolls them.
     * Each sum is split alone (Halide's rfactor), sum_sq reading the mean
     * of sum_x's combined value. Two vectors a step from device memory;
     * with `stage_rows`, one from the row's copy in shared memory (no bank
     * conflicts). */
    void schedule_gpu_per_thread(loom::Schedule &sch, int threads = 256, int vector = 4,
                                 bool stage_rows = false) const {
        loom_apps::schedule_rows_on_gpu(sch, input, out, r, c, k, {}, {mean, inv_std}, threads,
                                        vector, stage_rows);
        const int step = stage_rows ? vector : 2 * vector;
        loom_apps::reduce_row_per_thread(sch, sum_x, k, out, r, threads, step);
        loom_apps::reduce_row_per_thread(sch, sum_sq, k, out, r, threads, step);
    }
    /** loom_apps::schedule_row_app_in_registers: the row kept in its
     * threads' registers; with `per_thread`, each thread sums its own
     * vectors first in each of the two passes; without, each sum is
     * combined across the threads at each step. The row length must be
     * fixed first (fix_row_length). */
    void schedule_gpu_in_registers(loom::Schedule &sch, int threads = 1024, int vector = 4,
                                   bool per_thread = true, int blocks_per_sm = 0) const {
        loom_apps::schedule_row_app_in_registers(*this, sch, threads, vector, per_thread,
                                                 blocks_per_sm);
    }
    /** Fixes the row length at `columns` (loom_apps::fix_row_length). */
    void fix_row_length(int columns) const {
        loom_apps::fix_row_length(input, out, {gamma, beta}, columns);
    }
    /** The promises of loom_apps::promise_aligned_rows, with gamma and beta: the GPU
     * schedule's vectors then move as aligned words, untested. */
    void promise_aligned_rows() const {
        loom_apps::promise_aligned_rows(input, out, {gamma, beta});
    }
    loom::Schedule cpu_schedule() const {
        loom::Schedule sch;
        schedule_cpu(sch);
        return sch;
    }
    loom::Schedule cpu_one_pass_schedule() const {
        loom::Schedule sch;
        schedule_cpu_one_pass(sch);
        return sch;
    }
};

}  // namespace layernorm
