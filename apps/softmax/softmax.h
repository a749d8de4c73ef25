// Row softmax over the last (contiguous) dimension of a float32 matrix:
// out(r, c) = exp(in(r, c) - max_c in(r, c)) / sum_c exp(in(r, c) - max),
// each row's exponentials multiplied by the reciprocal of their sum (one
// division per row rather than per point: a float division costs several
// times a multiplication, and on the GPU the accurate one is most of what
// each point of the output costs; the result differs from the quotient by
// an ulp at most). The algorithm only; see schedule_cpu for the schedule.
#pragma once

#include <cmath>
#include <limits>

#include <loom/loom.h>

#include "../gpu_rows.h"
#include "softmax_reference.h"

namespace softmax {

struct Softmax {
    loom::BufferParam input;  // [rows, cols]
    loom::Var r{"r"}, c{"c"};
    loom::RDom k;
    loom::Func row_max{"row_max"}, e{"e"}, row_sum{"row_sum"}, inv_sum{"inv_sum"}, out{"out"};

    explicit Softmax(loom::BufferParam in = loom::BufferParam(loom::Float(32), 2, "input"))
        : input(std::move(in)), k(0, input.dim(1).extent(), "k") {
        using namespace loom;
        row_max(r) = -std::numeric_limits<float>::infinity();
        row_max(r) = max(row_max(r), input(r, k));
        e(r, c) = exp(input(r, c) - row_max(r));
        row_sum(r) = 0.0f;
        row_sum(r) += e(r, k);
        inv_sum(r) = 1.0f / row_sum(r);
        out(r, c) = e(r, c) * inv_sum(r);
    }

    /** Blocks of rows in parallel; per row the max, the exponentials (one row,
     * in L1) and their sum, then the normalized row, vectorized along it. The
     * two reductions stay serial: vectorizing them would reassociate. */
    void schedule_cpu(loom::Schedule &sch, int rows_per_task = 8, int vector = 16) const {
        using namespace loom;
        Var ro("ro"), ri("ri");
        sch[out].split(r, ro, ri, rows_per_task).parallel(ro).vectorize(c, vector);
        sch[row_max].compute_at(out, ri);
        sch[e].compute_at(out, ri).vectorize(c, vector);
        sch[row_sum].compute_at(out, ri);
        sch[inv_sum].compute_at(out, ri);
    }
    /** One GPU block per row: each reduction's threads share the row and
     * combine their partials across the block; the output row is written
     * `vector` floats per thread (16-byte stores for 4). With `stage_rows`
     * the row is copied into shared memory first, so that the three passes
     * (max, sum, output) read device memory once (rows up to 58,112 floats
     * on sm_90). Without, schedule_gpu_online: two passes over the row in
     * device memory, any row length. `threads` 0 is
     * loom_apps::row_app_gpu_threads(stage_rows): 512 staged, 1024 not.
     * With `rows_per_block` above 1, a block takes that many rows, `threads`
     * threads each (0: loom_apps::row_app_threads), each row's threads
     * reducing it across themselves at each step, staged or not: for short
     * rows (loom_apps::schedule_rows_on_gpu). */
    void schedule_gpu(loom::Schedule &sch, int threads = 0, int vector = 4, bool stage_rows = true,
                      int rows_per_block = 1) const {
        threads = loom_apps::row_app_threads(threads, stage_rows, rows_per_block);
        if (!stage_rows && rows_per_block <= 1) {
            schedule_gpu_online(sch, threads, vector);
            return;
        }
        loom_apps::schedule_rows_on_gpu(sch, input, out, r, c, k, {row_max, row_sum}, {inv_sum},
                                        threads, vector, stage_rows, rows_per_block);
    }
    /** One GPU block per row, as schedule_gpu, but keeping the row's
     * exponentials e in shared memory instead of its input: the max's pass
     * reads the row from device memory, e's pass reads it again (from the
     * L2 cache, as a rule: the block read it just before) and computes
     * each exponential once, and the sum's and the output's passes read e.
     * schedule_gpu's staged input costs an exponential per point twice
     * (the sum's and the output's), the most expensive part of each point
     * (8 instructions in IEEE float), but reads device memory once for
     * certain. Rows up to 58,112 floats on sm_90. */
    void schedule_gpu_exponentials(loom::Schedule &sch, int threads = 256, int vector = 4) const {
        loom_apps::schedule_rows_on_gpu(sch, input, out, r, c, k, {row_max, row_sum}, {inv_sum},
                                        threads, vector, false);
        loom_apps::stage_row_on_gpu(sch[e], out, r, c, input.dim(1).extent(), threads, vector);
    }
    /** One GPU block per row, the row not staged: the max and the sum in
     * one pass over it, then the output in a second. split_k cuts the
     * row's chain (row_max, row_sum) into one chunk per thread,
     * interleaved: at each step thread t rolls the `vector` floats at
     * (step * threads + t) * vector, keeping its running max and sum in
     * registers and rescaling the sum when the max moves (the derived
     * repair); the block then combines the threads' partials with the
     * same repair (a max and a sum across the threads). The output's pass
     * reads the row again, from the L2 cache as a rule. This is the online
     * softmax of torch.compile's kernels: no shared memory for the row, so
     * any row length, and an SM holds as many blocks as their registers
     * allow. Each step of a thread rolls `per_step` floats (0: two
     * vectors, or one with `stage_rows`): more of them put more loads in
     * flight and pay one repair for more points, for more registers (on
     * sm_90, 4 and 8 floats take 32 registers a thread, 16 take 48). With
     * `stage_rows` the row is first copied into shared memory, as
     * schedule_gpu does, and the online pass reads it there: one read of
     * device memory, and one pass over the copy instead of two. */
    void schedule_gpu_online(loom::Schedule &sch, int threads = 256, int vector = 4,
                             int per_step = 0, bool stage_rows = false) const {
        loom_apps::schedule_rows_on_gpu(sch, input, out, r, c, k, {}, {row_max, inv_sum}, threads,
                                        vector, stage_rows);
        const int step = per_step > 0 ? per_step : stage_rows ? vector : 2 * vector;
        loom_apps::reduce_row_per_thread(sch, row_sum, k, out, r, threads, step);
    }
    /** schedule_gpu_online with its default step: each thread rolls its own
     * points of the row before the block combines them, as the norms'
     * schedule_gpu_per_thread sums them. */
    void schedule_gpu_per_thread(loom::Schedule &sch, int threads = 256, int vector = 4,
                                 bool stage_rows = false) const {
        schedule_gpu_online(sch, threads, vector, 0, stage_rows);
    }
    /** One GPU block per row, the row kept in its threads' registers
     * (loom_apps::schedule_row_app_in_registers): with `per_thread`, the
     * two passes schedule_gpu_exponentials_in_registers makes; without,
     * the max and the sum are each combined across the threads at each
     * step of schedule_gpu. The row length must be fixed first
     * (fix_row_length). */
    void schedule_gpu_in_registers(loom::Schedule &sch, int threads = 1024, int vector = 4,
                                   bool per_thread = true, int blocks_per_sm = 0) const {
        if (per_thread) {
            schedule_gpu_exponentials_in_registers(sch, threads, vector, blocks_per_sm);
        } else {
            loom_apps::schedule_row_app_in_registers(*this, sch, threads, vector, false,
                                                     blocks_per_sm);
        }
    }
    /** One GPU block per row, the row kept in its threads' registers and
     * then replaced there by its exponentials: each thread takes the max
     * of its own vectors of the row, and the block combines the maxima;
     * each thread computes its exponentials e (kept in its registers,
     * where its copy of the row was) and sums them, and the block combines
     * the sums; each thread scales its e by the reciprocal. With no
     * running max to repair, a point costs one exponential, where the
     * online schedule over the same registers (schedule_row_app_in_registers
     * with `per_thread`) pays two and a repair per step. The row length
     * must be fixed first (fix_row_length). */
    void schedule_gpu_exponentials_in_registers(loom::Schedule &sch, int threads = 1024,
                                                int vector = 4, int blocks_per_sm = 0) const {
        using namespace loom;
        loom_apps::schedule_rows_on_gpu(sch, input, out, r, c, k, {}, {inv_sum}, threads, vector,
                                        true);
        sch.in(input, {r, c}).store_in(MemoryType::Register);
        loom_apps::stage_row_on_gpu(sch[e], out, r, c, input.dim(1).extent(), threads, vector);
        sch[e].store_in(MemoryType::Register);
        loom_apps::reduce_row_per_thread(sch, row_max, k, out, r, threads, vector);
        loom_apps::reduce_row_per_thread(sch, row_sum, k, out, r, threads, vector);
        if (blocks_per_sm > 0) sch[out].gpu_blocks_per_sm(blocks_per_sm);
    }
    /** Fixes the row length at `columns` (loom_apps::fix_row_length). */
    void fix_row_length(int columns) const { loom_apps::fix_row_length(input, out, {}, columns); }
    /** The promises of loom_apps::promise_aligned_rows: the GPU
     * schedule's vectors then move as aligned words, untested. */
    void promise_aligned_rows() const { loom_apps::promise_aligned_rows(input, out, {}); }
    loom::Schedule cpu_schedule() const {
        loom::Schedule sch;
        schedule_cpu(sch);
        return sch;
    }
};

}  // namespace softmax
