// The GPU schedules shared by the row-wise apps (softmax, LayerNorm, RMSNorm:
// one block per row) and the elementwise ones.
#pragma once

#include <algorithm>
#include <vector>

#include <loom/loom.h>

namespace loom_apps {

/** Threads per block of the row apps' schedule_gpu, and so of their
 * generators: 512 with the row staged in shared memory, 1024 without. On
 * an H200, rows of 16384 floats (apps/bench/README.md, "Results on an
 * H200"), staged blocks of 512 reach 0.88 - 0.96 of the copy's bandwidth,
 * of 1024 0.82 - 0.95 and of 256 0.62 - 0.91. A staged row of 64 KiB leaves
 * room for three blocks an SM: 768 threads of 256 are too few loads in
 * flight; 2048 of 1024 are two rows, each of whose passes (copy, combine,
 * reduce, write) waits for the last, where three rows of 512 overlap
 * better. Unstaged, an SM's blocks are bounded by registers alone, and
 * 1024 threads reach 0.82 - 0.94, 512 0.82 - 0.87. */
inline constexpr int row_app_gpu_threads(bool stage_rows) { return stage_rows ? 512 : 1024; }

/** Threads per row of the row apps' schedule_gpu: `threads`, or for 0
 * row_app_gpu_threads(stage_rows), shared among `rows_per_block` rows a
 * block, at least a warp a row. */
inline constexpr int row_app_threads(int threads, bool stage_rows, int rows_per_block) {
    if (threads > 0) return threads;
    if (rows_per_block <= 1) return row_app_gpu_threads(stage_rows);
    const int t = row_app_gpu_threads(stage_rows) / rows_per_block;
    return t < 32 ? 32 : t;
}

/** Threads per block of the elementwise apps' schedule_gpu: 0.97 - 0.98 of
 * the copy's bandwidth on an H200. */
inline constexpr int elementwise_gpu_threads = 256;

/** Threads per block for a row of `columns` floats kept in its threads'
 * registers: about 32 floats a thread, a multiple of a warp, at most 1024.
 * At 16384 floats that is 512 threads, the fastest measured on an H200
 * (0.95 - 0.96 of the copy's bandwidth, against 0.84 - 0.96 at 1024, whose
 * 16 floats a thread leave too few loads in flight); 64 floats a thread
 * (256) was as fast. Rows over 32768 floats give a thread more than 32,
 * over 65536 more than 64, which nothing has measured. */
inline int row_app_register_threads(int columns) {
    const int warps = (columns / 32 + 31) / 32;
    return std::min(1024, std::max(32, warps * 32));
}

/** Computes the Func of `row` (a stage of it) once per row `r` of `out`,
 * in shared memory, over its columns `c` in [0, `columns`), so that the
 * reads of it start aligned: its threads move `vector` points each,
 * `threads` at a time. A row must fit a block's shared memory. With
 * `rows_loop` (a loop of `out` over several rows, a block's), it is
 * computed there instead, all of the block's rows, each by its own group
 * of `threads` (threadIdx.y the row). */
inline void stage_row_on_gpu(loom::Stage row, const loom::Func &out, const loom::Var &r,
                             const loom::Var &c, const loom::Expr &columns, int threads, int vector,
                             const loom::Var *rows_loop = nullptr) {
    using namespace loom;
    Var co("co"), ci("ci"), cv("cv");
    row.compute_at(out, rows_loop ? *rows_loop : r)
        .store_in(MemoryType::Shared)
        .bound(c, 0, columns)
        .split(c, co, ci, threads * vector)
        .split(ci, ci, cv, vector)
        .vectorize(cv);
    if (rows_loop) {
        row.reorder(co, r, ci).gpu_threads(ci, r);
    } else {
        row.gpu_threads(ci);
    }
}

/** One GPU block per row `r` of `out`: its threads pass along the row `c`
 * `threads` at a time, each writing `vector` consecutive points as one
 * vector (16-byte stores for 4 floats). `reductions` (updates over `k`) and
 * `per_row` (single points) are computed per row; the reductions' threads
 * share each row and combine their partials across the block.
 *
 * With `stage_rows`, each block first copies its row of `input` into shared
 * memory (16-byte loads), and every pass over the row reads it there: the
 * row comes from device memory once, however many passes the algorithm
 * makes. A row must then fit a block's shared memory: up to 58,112 floats
 * on sm_90 (227 KiB), 41,728 on sm_80; a longer one fails at launch.
 *
 * With `rows_per_block` above 1, a block takes that many rows instead, a
 * group of `threads` threads each (threadIdx.y is the row), and each
 * group combines its own row's partials: for short rows, which would
 * leave a block of one row mostly idle and pay a block's start and its
 * combines for a few hundred bytes. The rows of the last block that the
 * matrix does not have are guarded; a staged block holds `rows_per_block`
 * rows. */
inline void schedule_rows_on_gpu(loom::Schedule &sch, const loom::BufferParam &input,
                                 const loom::Func &out, const loom::Var &r, const loom::Var &c,
                                 const loom::RDom &k, const std::vector<loom::Func> &reductions,
                                 const std::vector<loom::Func> &per_row, int threads, int vector,
                                 bool stage_rows, int rows_per_block = 1) {
    using namespace loom;
    user_assert(rows_per_block >= 1 && threads * rows_per_block <= 1024)
        << "schedule_rows_on_gpu: " << rows_per_block << " rows a block of " << threads
        << " threads each: a block has 1 to 1024 threads. Take fewer rows or threads.";
    Var co("co"), ci("ci"), cv("cv");
    RVar ko("ko"), ki("ki"), kv("kv");
    if (rows_per_block == 1) {
        sch[out].split(c, co, ci, threads * vector).split(ci, ci, cv, vector).vectorize(cv);
        sch[out].gpu_blocks(r).gpu_threads(ci);
        if (stage_rows) {
            stage_row_on_gpu(sch.in(input, {r, c}), out, r, c, input.dim(1).extent(), threads,
                             vector);
        }
        for (const Func &f : per_row) sch[f].compute_at(out, r);
        for (const Func &f : reductions) {
            sch[f].compute_at(out, r);
            sch[f]
                .update()
                .split(k, ko, ki, threads * vector)
                .split(ki, ki, kv, vector)
                .vectorize(kv)
                .gpu_threads(ki);
        }
        return;
    }
    Var ro("ro"), ri("ri");
    sch[out]
        .split(r, ro, ri, rows_per_block)
        .split(c, co, ci, threads * vector)
        .split(ci, ci, cv, vector)
        .vectorize(cv)
        .reorder(ro, co, ri, ci)
        .gpu_blocks(ro)
        .gpu_threads(ci, ri);
    if (stage_rows) {
        stage_row_on_gpu(sch.in(input, {r, c}), out, r, c, input.dim(1).extent(), threads, vector,
                         &ro);
    }
    for (const Func &f : per_row) sch[f].compute_at(out, ro).gpu_threads(r);
    for (const Func &f : reductions) {
        sch[f].compute_at(out, ro).gpu_threads(r);
        sch[f]
            .update()
            .split(k, ko, ki, threads * vector)
            .split(ki, ki, kv, vector)
            .vectorize(kv)
            .reorder(ko, r, ki)
            .gpu_threads(ki, r);
    }
}

/** The row reduction `f` (an update over `k`, or the last of a chain of
 * them) computed by the block of row `r` of `out`, without a loop that
 * reduces across the threads: split_k cuts it into a chunk per thread,
 * interleaved, each thread rolling `per_step` consecutive points a step
 * (vectorized) into its own partial, in registers; the block then
 * combines the partials. A thread's loop is its own, so the steps over
 * whole tiles lose the row end's test (and nvcc unrolls a short one). The
 * other members of f's chain, and the Funcs they feed per row, are the
 * caller's to place at (out, r). */
inline void reduce_row_per_thread(loom::Schedule &sch, const loom::Func &f, const loom::RDom &k,
                                  const loom::Func &out, const loom::Var &r, int threads,
                                  int per_step) {
    using namespace loom;
    Var t("t");
    RVar ko("ko"), kv("kv");
    sch.split_k(f, k, threads, t, ChunkLayout::Interleaved)
        .split(k, ko, kv, per_step)
        .vectorize(kv)
        .compute_at(out, r)
        .gpu_threads(t);
    sch[f].compute_at(out, r);
}

/** Fixes the row length of a row app at compile time, `columns` floats
 * from column 0, for `input`, the output of `out` and each of `per_column`
 * (LayerNorm's gamma and beta, RMSNorm's weight): Dimension::set_min and
 * set_extent. The pipeline checks them when it runs and refuses any other
 * length, by name. Rows kept in registers need it: a thread's registers
 * are counted when the kernel compiles. */
inline void fix_row_length(loom::BufferParam input, const loom::Func &out,
                           const std::vector<loom::BufferParam> &per_column, int columns) {
    input.dim(1).set_min(0).set_extent(columns);
    out.output_buffer().dim(1).set_min(0).set_extent(columns);
    for (loom::BufferParam b : per_column) b.dim(0).set_min(0).set_extent(columns);
}

/** One GPU block per row of a row app (softmax, LayerNorm, RMSNorm) with
 * the row kept in its threads' registers instead of shared memory: the
 * app's staged schedule, each thread reducing its own vectors first
 * (`per_thread`: schedule_gpu_per_thread over the copy) or the reductions
 * combined across the threads at each step (schedule_gpu), with the copy
 * of the row stored in MemoryType::Register. Each thread copies, and then
 * reads in every pass, the same vectors of the row (every
 * (threads * vector)-th run of `vector` floats from its own), so each
 * keeps its own: columns / threads floats (16 for rows of 16384 and 1024
 * threads), from device memory once, with no shared memory or barrier for
 * the row and no bound from shared memory on the row's length.
 * `blocks_per_sm` > 0 asks nvcc to fit that many blocks on an SM
 * (Stage::gpu_blocks_per_sm), capping the registers a thread takes. Needs
 * the row length fixed (fix_row_length); rows so long that a thread's part
 * outgrows its registers spill to local memory. */
template <typename App> void schedule_row_app_in_registers(const App &app, loom::Schedule &sch,
                                                           int threads, int vector, bool per_thread,
                                                           int blocks_per_sm) {
    if (per_thread) {
        app.schedule_gpu_per_thread(sch, threads, vector, true);
    } else {
        app.schedule_gpu(sch, threads, vector, true);
    }
    sch.in(app.input, {app.r, app.c}).store_in(loom::MemoryType::Register);
    if (blocks_per_sm > 0) sch[app.out].gpu_blocks_per_sm(blocks_per_sm);
}

/** Elementwise over rows `r` of `out`: each thread writes `vector`
 * consecutive points of a row `c` as one vector (16-byte loads and stores
 * for 4 floats), `threads` to a block; blocks tile the rows. The row's
 * pieces and the rows are one fused loop of blocks, on the grid's x,
 * which takes 2^31 - 1 of them: on y the rows would stop at 65,535. */
inline void schedule_elementwise_on_gpu(loom::Schedule &sch, const loom::Func &out,
                                        const loom::Var &r, const loom::Var &c, int threads,
                                        int vector) {
    using namespace loom;
    Var co("co"), ci("ci"), cv("cv"), block("block");
    sch[out]
        .split(c, co, ci, threads * vector, TailStrategy::GuardWithIf)
        .split(ci, ci, cv, vector)
        .vectorize(cv)
        .fuse(r, co, block)
        .gpu_blocks(block)
        .gpu_threads(ci);
}

/** Promises that let the CUDA kernels of a row-wise app move each whole
 * vector of a row as aligned 16-byte words, with no test of its address
 * and no lane-by-lane fallback (BufferParam::set_host_alignment): `input`
 * and the output of `out` start on 16 bytes, their rows hold a whole
 * number of float4s (a stride that is a multiple of 4), and their columns
 * count from 0; each of `per_column` (LayerNorm's gamma and beta, RMSNorm's
 * weight) starts on 16 bytes at column 0. The pipeline checks every
 * promise when it runs and refuses a buffer that breaks one, by name.
 * Loom's, PyTorch's and cudaMalloc's buffers start on 16 bytes or more,
 * so for them this asks for rows of a multiple of 4 floats, or padded to
 * one. */
inline void promise_aligned_rows(loom::BufferParam input, const loom::Func &out,
                                 const std::vector<loom::BufferParam> &per_column) {
    input.set_host_alignment(16).dim(0).set_stride_multiple(4);
    input.dim(1).set_min(0);
    out.output_buffer().set_host_alignment(16).dim(0).set_stride_multiple(4);
    out.output_buffer().dim(1).set_min(0);
    for (loom::BufferParam b : per_column) {
        b.set_host_alignment(16);
        b.dim(0).set_min(0);
    }
}

/** The vector width of a generator's `vector` param for `target`: `asked`,
 * or when it is 0 the natural one, 16 floats on the CPU (a cache line) and
 * 4 on the GPU (one 16-byte access per thread). */
inline int vector_for(const loom::Target &target, int asked) {
    if (asked > 0) return asked;
    return target.has_feature(loom::Target::CUDA) ? 4 : 16;
}

}  // namespace loom_apps
