// Pipelines shared by the GPU tests (CUDA code generation, GPU execution and
// GPU schedule errors), and whether there is a GPU to run them on.
#pragma once

#include <loom/loom.h>

#include <cmath>
#include <cstdlib>
#include <string>

/** Skips the test, saying why, where there is no GPU to run on. */
#define REQUIRE_GPU()                                                  \
    do {                                                               \
        std::string why = loom_test::no_gpu_reason();                  \
        if (!why.empty()) GTEST_SKIP() << "no GPU to run on: " << why; \
    } while (0)

namespace loom_test {

/** Makes the stand-in driver (test/fake_cuda) the GPU, running kernels on
 * the CPU, when LOOM_TEST_GPU_ON_CPU names it, or
 * LOOM_TEST_GPU_ON_CPU_REVERSED (each block's threads and the grid's blocks
 * then run highest first). One variable each, as gtest_discover_tests'
 * ENVIRONMENT property keeps only the first of a list. */
inline bool use_stand_in_driver() {
    static const bool on_cpu = [] {
        const char *driver = std::getenv("LOOM_TEST_GPU_ON_CPU");
        const char *reversed = std::getenv("LOOM_TEST_GPU_ON_CPU_REVERSED");
        if (reversed && *reversed) {
            driver = reversed;
            setenv("LOOM_FAKE_CUDA_REVERSED", "1", 1);
        }
        if (!driver || !*driver) return false;
        setenv("LOOM_CUDA_DRIVER", driver, 1);
        setenv("LOOM_FAKE_CUDA_RUN_KERNELS", "1", 1);
        return true;
    }();
    return on_cpu;
}

/** Why there is no GPU to run on, or "" when there is one (the stand-in
 * driver, when the environment names it: use_stand_in_driver). */
inline std::string no_gpu_reason() {
    const bool on_cpu = use_stand_in_driver();
    (void)on_cpu;
    int32_t capability = 0;
    if (loom_cuda_device_capability(0, &capability) != 0) return loom_last_error_message();
    if (capability < 80) return "GPU 0 is sm_" + std::to_string(capability) + "; Loom needs sm_80+";
    return "";
}

/** Blocks of `per_block` consecutive x, each thread taking `lanes` of them
 * as one vector. */
inline void vectorized_threads(loom::Stage s, const loom::Var &x, int per_block, int lanes,
                               loom::TailStrategy tail = loom::TailStrategy::ShiftInwards) {
    loom::Var xo("xo"), xi("xi"), v("v");
    s.split(x, xo, xi, per_block, tail).split(xi, xi, v, lanes).vectorize(v);
    s.gpu_blocks(xo).gpu_threads(xi);
}

/** A 3 x 3 box blur in two stages, over a 2-D input. */
struct Blur {
    loom::BufferParam in{loom::Float(32), 2, "in"};
    loom::Var x{"x"}, y{"y"}, xo{"xo"}, yo{"yo"}, xi{"xi"}, yi{"yi"};
    loom::Func blur_x{"blur_x"}, blur_y{"blur_y"};
    Blur() {
        blur_x(y, x) = (in(y, x) + in(y, x + 1) + in(y, x + 2)) / 3.0f;
        blur_y(y, x) = (blur_x(y, x) + blur_x(y + 1, x) + blur_x(y + 2, x)) / 3.0f;
    }
    /** blur_y's CUDA C++ for sm_90. */
    std::string cuda(const loom::Schedule &sch) const {
        return loom::Pipeline(blur_y).compile_to_cuda(sch, loom::Target("host-cuda-sm_90"));
    }
    /** Blocks of `tile` x `tile` outputs, `tile` threads each walking the
     * rows, with blur_x for the block in shared memory: (tile + 2) x tile
     * floats (65 KiB for 128). */
    loom::Schedule shared_tiles(int tile) const {
        loom::Schedule sch;
        sch[blur_y]
            .split(y, yo, yi, tile, loom::TailStrategy::ShiftInwards)
            .split(x, xo, xi, tile, loom::TailStrategy::ShiftInwards)
            .reorder(yo, xo, yi, xi)
            .gpu_blocks(xo, yo)
            .gpu_threads(xi);
        sch[blur_x].compute_at(blur_y, xo).gpu_threads(x);
        return sch;
    }
    /** Blocks of 8 x 32 outputs (the last ones partial, GuardWithIf), with
     * blur_x for the block in shared memory over 32 columns wherever the
     * block starts (bound_extent): 10 x 32 floats for every block. */
    loom::Schedule shared_tiles_of_32_columns() const {
        loom::Schedule sch;
        sch[blur_y].gpu_tile(y, x, yo, xo, yi, xi, 8, 32);
        sch[blur_x].compute_at(blur_y, xo).bound_extent(x, 32).gpu_threads(x, y);
        return sch;
    }
};

/** A select, exp, sqrt and a scalar, elementwise over a 1-D input. */
struct Brighten {
    loom::BufferParam in{loom::Float(32), 1, "in"};
    loom::Param<float> gain{"gain"};
    loom::Var x{"x"}, xo{"xo"}, xi{"xi"};
    loom::Func brighten{"brighten"};
    Brighten() {
        using loom::abs;
        brighten(x) = loom::select(in(x) > 0.5f, in(x)*gain, -in(x)) + loom::exp(in(x)) -
                      loom::sqrt(abs(in(x)));
    }
    /** brighten's CUDA C++ for sm_90. */
    std::string cuda(const loom::Schedule &sch) const {
        return loom::Pipeline(brighten).compile_to_cuda(sch, loom::Target("host-cuda-sm_90"));
    }
};

/** Each row divided by its sum: a reduction per row (RDom over x). */
struct RowNormalize {
    loom::BufferParam in{loom::Float(32), 2, "in"};
    loom::Var x{"x"}, y{"y"}, xo{"xo"}, yo{"yo"}, xi{"xi"}, yi{"yi"};
    loom::RDom r{0, in.dim(1).extent(), "r"};
    loom::Func rowsum{"rowsum"}, normalized{"normalized"};
    RowNormalize() {
        rowsum(y) = loom::sum(in(y, r));
        normalized(y, x) = in(y, x) / loom::max(rowsum(y), 1e-3f);
    }
    /** A block per row; split_k of the lone sum (Halide's rfactor) into
     * `threads` interleaved chunks, one per thread, in tiles of `tile`
     * points; the block combines the threads' sums. */
    loom::Schedule chunks_on_threads(int threads, int tile) const {
        loom::Schedule sch;
        loom::Var t{"t"};
        loom::RVar ko{"ko"}, kv{"kv"};
        sch[normalized].split(x, xo, xi, 32).gpu_blocks(y).gpu_threads(xi);
        loom::Stage partial = sch.split_k(rowsum, r, threads, t, loom::ChunkLayout::Interleaved);
        if (tile > 1) partial.split(r, ko, kv, tile).vectorize(kv);
        partial.compute_at(normalized, y).gpu_threads(t);
        sch[rowsum].compute_at(normalized, y);
        return sch;
    }
};

/** Four weighted sums of each row, moments(y, k) = k + sum_r in(y, r) *
 * (k + 1), and a single point from them, scale(y) = moments(y, 0) +
 * moments(y, 3); the output reads both: out(y, x) = in(y, x) * scale(y) +
 * moments(y, x % 4). */
struct RowMoments {
    loom::BufferParam in{loom::Float(32), 2, "in"};
    loom::Var x{"x"}, y{"y"}, k{"k"}, xo{"xo"}, xi{"xi"};
    loom::RDom r{0, in.dim(1).extent(), "r"};
    loom::RVar ro{"ro"}, ri{"ri"};
    loom::Func moments{"moments"}, scale{"scale"}, out{"out"};
    RowMoments() {
        moments(y, k) = loom::cast<float>(k);
        moments(y, k) += in(y, r) * loom::cast<float>(k + 1);
        scale(y) = moments(y, 0) + moments(y, 3);
        out(y, x) = in(y, x) * scale(y) + moments(y, x % 4);
    }
    /** A block per row of `threads` threads: moments computed once per
     * block, its four sums each combined across the block (the RVar on the
     * threads, k a serial loop of the block around them), stored in
     * `memory`; scale computed once per block, stored as Auto decides. In
     * shared memory, moments' pure definition is on the threads (k); in
     * registers, every thread computes all of it. */
    loom::Schedule per_block(int threads, loom::MemoryType memory) const {
        loom::Schedule sch;
        sch[out].split(x, xo, xi, threads).gpu_blocks(y).gpu_threads(xi);
        sch[moments].compute_at(out, y).bound(k, 0, 4).store_in(memory);
        if (memory == loom::MemoryType::Shared) sch[moments].gpu_threads(k);
        sch[moments].update().split(r, ro, ri, threads).gpu_threads(ri);
        sch[scale].compute_at(out, y);
        return sch;
    }
};

/** Softmax of each row: a max and a sum over the row (explicit update
 * definitions, so that their RVars can be scheduled), then exp(x - max) /
 * sum. */
struct RowSoftmax {
    loom::BufferParam in{loom::Float(32), 2, "in"};
    loom::Var x{"x"}, y{"y"}, xo{"xo"}, xi{"xi"};
    loom::RDom r{0, in.dim(1).extent(), "r"};
    loom::RVar ro{"ro"}, ri{"ri"};
    loom::Func row_max{"row_max"}, row_sum{"row_sum"}, softmax{"softmax"};
    RowSoftmax() {
        row_max(y) = loom::cast<float>(-INFINITY);
        row_max(y) = loom::max(row_max(y), in(y, r));
        row_sum(y) = 0.0f;
        row_sum(y) = row_sum(y) + loom::exp(in(y, r) - row_max(y));
        softmax(y, x) = loom::exp(in(y, x) - row_max(y)) / row_sum(y);
    }
    /** A block per row: split_k cuts its chain (row_max, row_sum) into
     * `threads` chunks, one per thread, rolled in tiles of `tile` points
     * (vectorized; 1: point by point); row_max and row_sum, computed by the
     * whole block, combine the threads' partials across it: the online
     * softmax. The output's threads write 32 points a step. */
    loom::Schedule chunks_on_threads(int threads, int tile, loom::ChunkLayout layout) const {
        loom::Schedule sch;
        loom::Var t{"t"};
        loom::RVar ko{"ko"}, kv{"kv"};
        sch[softmax].split(x, xo, xi, 32).gpu_blocks(y).gpu_threads(xi);
        loom::Stage partial = sch.split_k(row_sum, r, threads, t, layout);
        if (tile > 1) partial.split(r, ko, kv, tile).vectorize(kv);
        partial.compute_at(softmax, y).gpu_threads(t);
        sch[row_max].compute_at(softmax, y);
        sch[row_sum].compute_at(softmax, y);
        return sch;
    }
    /** A block per row with the row copied once into its threads'
     * registers (the input's wrapper in MemoryType::Register): each thread
     * copies every (threads * vector)-th run of `vector` points from its
     * own, and every pass reads the same runs: the max and the sum (with
     * `per_thread`, split_k's chunk per thread, interleaved, in tiles of
     * `vector`; without, each reduction across the threads at each step)
     * and the output. The row length must be fixed (in.dim(1).set_extent):
     * a thread's registers are counted when the kernel compiles. */
    loom::Schedule row_in_registers(int threads, int vector, bool per_thread) const {
        loom::Schedule sch;
        loom::Var xv{"xv"};
        loom::RVar rv{"rv"};
        auto runs = [&](loom::Stage st) {
            st.split(x, xo, xi, threads * vector);
            if (vector > 1) st.split(xi, xi, xv, vector).vectorize(xv);
            st.gpu_threads(xi);
        };
        runs(sch[softmax]);
        sch[softmax].gpu_blocks(y);
        loom::Stage row = sch.in(in, {y, x});
        row.compute_at(softmax, y)
            .store_in(loom::MemoryType::Register)
            .bound(x, 0, in.dim(1).extent());
        runs(row);
        if (per_thread) {
            loom::Var t{"t"};
            loom::Stage partial =
                sch.split_k(row_sum, r, threads, t, loom::ChunkLayout::Interleaved);
            if (vector > 1) partial.split(r, ro, rv, vector).vectorize(rv);
            partial.compute_at(softmax, y).gpu_threads(t);
        }
        for (const loom::Func &f : {row_max, row_sum}) {
            sch[f].compute_at(softmax, y);
            if (per_thread) continue;
            sch[f].update().split(r, ro, ri, threads * vector);
            if (vector > 1) sch[f].update().split(ri, ri, rv, vector).vectorize(rv);
            sch[f].update().gpu_threads(ri);
        }
        return sch;
    }
    /** One block per row, `threads` threads striding along it: both
     * reductions are combined across the block's threads. With `vector` >
     * 1, each thread reads `vector` consecutive points of the row at a time
     * (a vectorized RVar): it combines their lanes, then its partial. */
    loom::Schedule one_row_per_block(int threads, int vector = 1) const {
        loom::Schedule sch;
        sch[softmax].split(x, xo, xi, threads).gpu_blocks(y).gpu_threads(xi);
        loom::RVar rv("rv");
        for (const loom::Func &f : {row_max, row_sum}) {
            sch[f].compute_at(softmax, y);
            if (vector > 1) {
                sch[f].update().split(r, ro, ri, threads * vector).split(ri, ri, rv, vector);
                sch[f].update().gpu_threads(ri).vectorize(rv);
            } else {
                sch[f].update().split(r, ro, ri, threads).gpu_threads(ri);
            }
        }
        return sch;
    }
    /** `rows` rows per block, `threads` threads per row: each row's
     * threads (a group; threadIdx.y is the row) combine their partials. */
    loom::Schedule rows_per_block(int rows, int threads) const {
        loom::Var yo("yo"), yi("yi");
        loom::Schedule sch;
        sch[softmax]
            .split(y, yo, yi, rows, loom::TailStrategy::ShiftInwards)
            .split(x, xo, xi, threads)
            .reorder(yo, xo, yi, xi)
            .gpu_blocks(yo)
            .gpu_threads(xi, yi);
        for (const loom::Func &f : {row_max, row_sum}) {
            sch[f].compute_at(softmax, yo).gpu_threads(y);
            sch[f].update().split(r, ro, ri, threads).reorder(ro, y, ri).gpu_threads(ri, y);
        }
        return sch;
    }
    /** The same, with each block's row of `in` copied into shared memory
     * first (Schedule::in), sized at launch by the row's length. */
    loom::Schedule staged_rows(int threads) const {
        loom::Schedule sch = one_row_per_block(threads);
        sch.in(in, {y, x}).compute_at(softmax, y).split(x, xo, xi, threads).gpu_threads(xi);
        return sch;
    }
};

/** Each row minus its max, with both reading the row 4 floats per thread
 * (blocks of rows, GuardWithIf tails). With `promise`, the input and the
 * output promise what makes those vectors provably aligned: 16-byte host
 * alignment, row strides that are multiples of 4 floats, and columns from
 * 0. */
struct AlignedRows {
    loom::BufferParam in{loom::Float(32), 2, "in"};
    loom::Var x{"x"}, y{"y"}, xo{"xo"}, xi{"xi"}, xv{"xv"};
    loom::RDom r{0, in.dim(1).extent(), "r"};
    loom::RVar ro{"ro"}, ri{"ri"}, rv{"rv"};
    loom::Func row_max{"row_max"}, centered{"centered"};
    explicit AlignedRows(bool promise) {
        row_max(y) = loom::cast<float>(-INFINITY);
        row_max(y) = loom::max(row_max(y), in(y, r));
        centered(y, x) = in(y, x) - row_max(y);
        if (promise) {
            in.set_host_alignment(16).dim(0).set_stride_multiple(4);
            in.dim(1).set_min(0);
            centered.output_buffer().set_host_alignment(16).dim(0).set_stride_multiple(4);
            centered.output_buffer().dim(1).set_min(0);
        }
    }
    /** One block per row, 4 floats per thread; `staged`: the row is first
     * copied into shared memory, and both passes read it there. */
    loom::Schedule schedule(int threads = 64, bool staged = false) const {
        using loom::TailStrategy;
        loom::Schedule sch;
        sch[centered]
            .split(x, xo, xi, threads * 4, TailStrategy::GuardWithIf)
            .split(xi, xi, xv, 4)
            .vectorize(xv)
            .gpu_blocks(y)
            .gpu_threads(xi);
        if (staged) {
            sch.in(in, {y, x})
                .compute_at(centered, y)
                .store_in(loom::MemoryType::Shared)
                .split(x, xo, xi, threads * 4)
                .split(xi, xi, xv, 4)
                .vectorize(xv)
                .gpu_threads(xi);
        }
        sch[row_max].compute_at(centered, y);
        sch[row_max].update().split(r, ro, ri, threads * 4).split(ri, ri, rv, 4);
        sch[row_max].update().gpu_threads(ri).vectorize(rv);
        return sch;
    }
};

/** c(i, j) = sum over k of a(i, k) * b(k, j), times 2. */
struct MatMul {
    loom::BufferParam a{loom::Float(32), 2, "a"}, b{loom::Float(32), 2, "b"};
    loom::Var i{"i"}, j{"j"}, io{"io"}, jo{"jo"}, ii{"ii"}, ji{"ji"};
    loom::RDom k{0, a.dim(1).extent(), "k"};
    loom::RVar ko{"ko"}, ki{"ki"};
    loom::Func acc{"acc"}, c{"c"};
    MatMul() {
        acc(i, j) = 0.0f;
        acc(i, j) += a(i, k) * b(k, j);
        c(i, j) = acc(i, j) * 2.0f;
    }
    /** The classic shared-memory GEMM: blocks of tile x tile threads, one
     * element of c each; the block walks k in steps of `step`, staging the
     * step's tiles of a and b in shared memory, while each thread keeps its
     * element's sum in a register across the steps (acc is computed at the
     * block loop, stored in MemoryType::Register: each thread owns its
     * element). */
    loom::Schedule shared_tiles(int tile, int step) const {
        loom::Schedule sch;
        sch[c]
            .tile(i, j, io, jo, ii, ji, tile, tile, loom::TailStrategy::GuardWithIf)
            .gpu_blocks(io, jo)
            .gpu_threads(ii, ji);
        sch[acc].compute_at(c, io).gpu_threads(i, j).store_in(loom::MemoryType::Register);
        sch[acc].update().split(k, ko, ki, step).reorder(ko, i, j, ki).gpu_threads(i, j);
        loom::Var a0("a0"), a1("a1"), b0("b0"), b1("b1");
        sch.in(a, {a0, a1}).compute_at(acc, ko).gpu_threads(a0, a1);
        sch.in(b, {b0, b1}).compute_at(acc, ko).gpu_threads(b0, b1);
        return sch;
    }
};

/** Integer division, modulo, min/max, bit operations and narrowing casts;
 * and in `shifted`, shifts by amounts from -10 to 39 (negative ones shift
 * the other way, those of 32 or more shift every bit out) and negative
 * values shifted left, which C leaves undefined. */
struct IntegerMix {
    loom::BufferParam in{loom::Int(32), 1, "in"};
    loom::Var x{"x"}, xo{"xo"}, xi{"xi"};
    loom::Func f{"f"}, shifted{"shifted"};
    IntegerMix() {
        loom::Expr v = in(x);
        f(x) = loom::cast<uint8_t>(v / 7 + v % 5 + loom::min(v, 3) * loom::max(v, -2)) +
               loom::cast<uint8_t>((v & 12) | (v >> 2)) + loom::cast<uint8_t>(x / 3);
        loom::Expr amount = x % 50 - 10;
        shifted(x) = (v << amount) ^ (v >> amount) ^ (v << 3) ^
                     loom::cast<int32_t>(loom::cast<uint16_t>(v) >> loom::cast<uint16_t>(x % 20)) ^
                     loom::cast<int32_t>(loom::cast<uint32_t>(v) << 5);
    }
};

/** float16 in, bfloat16 out, float32 arithmetic in between; a 16-bit
 * constant, min, max, and abs of either 16-bit type. */
struct HalfChain {
    loom::BufferParam in{loom::Float(16), 1, "in"};
    loom::Var x{"x"}, xo{"xo"}, xi{"xi"};
    loom::Func h{"h"}, out{"out"};
    HalfChain() {
        using loom::float16_t;
        h(x) = loom::max(in(x), loom::cast<float16_t>(0.25f)) * loom::cast<float16_t>(2.0f);
        out(x) = loom::cast<loom::bfloat16_t>(loom::exp(loom::cast<float>(h(x))) -
                                              loom::cast<float>(loom::min(in(x), h(x)))) +
                 loom::cast<loom::bfloat16_t>(loom::abs(in(x)-h(x))) +
                 loom::abs(loom::cast<loom::bfloat16_t>(in(x)));
    }
};

/** Per tile of out (4 x 16 threads), two Funcs over its columns, each with
 * one thread loop over x: the column sums of in and a pointwise update. */
struct ColumnTerms {
    loom::BufferParam in{loom::Float(32), 2, "in"};
    loom::Var y{"y"}, x{"x"}, yo{"yo"}, xo{"xo"}, yi{"yi"}, xi{"xi"};
    loom::RDom r{0, in.dim(0).extent(), "r"};
    loom::Func sums{"sums"}, scaled{"scaled"}, out{"out"};
    ColumnTerms() {
        sums(x) = 0.0f;
        sums(x) += in(r, x);
        scaled(x) = in(0, x);
        scaled(x) = scaled(x) * 2.0f + 1.0f;
        out(y, x) = sums(x) * in(y, x) + scaled(x);
    }
    loom::Schedule schedule(loom::MemoryType memory = loom::MemoryType::Auto) const {
        loom::Schedule sch;
        sch[out].gpu_tile(y, x, yo, xo, yi, xi, 4, 16);
        for (const loom::Func &f : {sums, scaled}) {
            sch[f].compute_at(out, xo).gpu_threads(x).store_in(memory);
            sch[f].update().gpu_threads(x);
        }
        return sch;
    }
};

/** The softmax-weighted average of attention over given scores, per head
 * h and row i: m (the max), l (the sum) and o (the weighted sum of v's
 * rows) over r, a chain that rolling_update and split_k fuse. The head
 * dimension d is fixed (`dims`), so that per-thread partials have a
 * constant size. */
struct HeadsWeightedAverage {
    loom::BufferParam x{loom::Float(32), 3, "x"}, v{loom::Float(32), 3, "v"};
    loom::Var h{"h"}, i{"i"}, j{"j"}, d{"d"};
    loom::RDom r{0, x.dim(2).extent(), "r"};
    loom::Func m{"m"}, p{"p"}, l{"l"}, o{"o"}, out{"out"};
    explicit HeadsWeightedAverage(int dims) {
        m(h, i) = loom::maximum(x(h, i, r));
        p(h, i, j) = loom::exp(x(h, i, j) - m(h, i));
        l(h, i) = loom::sum(p(h, i, r));
        o(h, i, d) = loom::sum(p(h, i, r) * v(h, r, d));
        out(h, i, d) = o(h, i, d) / l(h, i);
        v.dim(2).set_extent(dims);
        out.output_buffer().dim(2).set_min(0);
        out.output_buffer().dim(2).set_extent(dims);
    }
    /** The chain at root, rolled over tiles of 8 keys: the heads and rows
     * fused, and split into blocks of 32 threads, one row each. */
    loom::Schedule rolled_rows_in_blocks() const {
        loom::Schedule sch;
        loom::Var hi{"hi"}, b{"b"}, t{"t"}, io{"io"}, ii{"ii"};
        loom::RVar ro{"ro"}, ri{"ri"};
        sch[out].split(i, io, ii, 32).gpu_blocks(io, h).gpu_threads(ii);
        sch.rolling_update(o, r)
            .split(r, ro, ri, 8)
            .fuse(h, i, hi)
            .split(hi, b, t, 32)
            .reorder(b, ro, t, ri, d)
            .gpu_blocks(b)
            .gpu_threads(t);
        sch[o].compute_root();
        return sch;
    }
    /** split_k at root: a block per (chunk, 16 rows, head), a row per
     * thread, each rolling its chunk in tiles of 4 keys; each thread of out
     * then combines its row's chunks. */
    loom::Schedule chunks_in_blocks(int chunks) const {
        loom::Schedule sch;
        loom::Var c{"c"}, io{"io"}, ii{"ii"};
        loom::RVar ro{"ro"}, ri{"ri"};
        sch[out].split(i, io, ii, 16).gpu_blocks(io, h).gpu_threads(ii);
        sch.split_k(o, r, chunks, c)
            .split(r, ro, ri, 4)
            .split(i, io, ii, 16)
            .reorder(h, c, io, ro, ii, ri, d)
            .gpu_blocks(io, c, h)
            .gpu_threads(ii)
            .compute_root();
        sch[o].compute_at(out, ii);
        return sch;
    }
    /** split_k within each block of out: a thread per chunk and row, the
     * partials in shared memory, combined by each thread of out. */
    loom::Schedule chunks_in_threads(int chunks) const {
        loom::Schedule sch;
        loom::Var c{"c"}, io{"io"}, ii{"ii"};
        loom::RVar ro{"ro"}, ri{"ri"};
        sch[out].split(i, io, ii, 8).gpu_blocks(io, h).gpu_threads(ii);
        sch.split_k(o, r, chunks, c).split(r, ro, ri, 4).compute_at(out, io).gpu_threads(c, i);
        sch[o].compute_at(out, ii);
        return sch;
    }
};

/** The point of each row where `in` reaches its max (or min), with the
 * value of `tag` there: a Tuple update (index, extreme, tag) written out,
 * as a Halide user writes argmax to schedule it. A strict test keeps the
 * first such point, one that is not strict the last. With `min_max_form`
 * the extreme is kept with max (min) and only the index and the tag test. */
struct RowArgExtreme {
    loom::BufferParam in{loom::Float(32), 2, "in"}, tag{loom::Float(32), 2, "tag"};
    loom::Var y{"y"}, yo{"yo"}, yi{"yi"};
    loom::RDom r{0, in.dim(1).extent(), "r"};
    loom::RVar ro{"ro"}, ri{"ri"};
    loom::Func best{"best"};
    RowArgExtreme(bool is_max, bool strict, bool min_max_form = false) {
        loom::Expr start =
            is_max ? loom::type_min(loom::Float(32)) : loom::type_max(loom::Float(32));
        best(y) = loom::Tuple(0, start, 0.0f);
        loom::Expr v = in(y, r), old = best(y)[1];
        loom::Expr better = is_max ? (strict ? v > old : v >= old) : (strict ? v < old : v <= old);
        loom::Expr extreme = !min_max_form ? loom::select(better, v, old)
                             : is_max      ? loom::max(old, v)
                                           : loom::min(old, v);
        best(y) = loom::Tuple(loom::select(better, loom::Expr(r), best(y)[0]), extreme,
                              loom::select(better, tag(y, r), best(y)[2]));
    }
    /** A block per row, `threads` threads striding along it. */
    loom::Schedule one_row_per_block(int threads) const {
        loom::Schedule sch;
        sch[best].gpu_blocks(y);
        sch[best].update().split(r, ro, ri, threads).gpu_threads(ri).gpu_blocks(y);
        return sch;
    }
    /** A block per row, each of `threads` threads taking `unrolled`
     * consecutive points at a time, in an unrolled loop. */
    loom::Schedule unrolled_in_threads(int threads, int unrolled) const {
        return steps_in_threads(threads, unrolled, false);
    }
    /** A block per row, each of `threads` threads taking `lanes`
     * consecutive points at a time, the RVar vectorized: a thread still
     * takes its lanes one by one (the block ranks every point it keeps),
     * from one vector load of the row. */
    loom::Schedule vectorized_in_threads(int threads, int lanes) const {
        return steps_in_threads(threads, lanes, true);
    }
    /** A block per row, each of `threads` threads taking `per_step`
     * consecutive points a step, in a vectorized loop or an unrolled one. */
    loom::Schedule steps_in_threads(int threads, int per_step, bool vectorized) const {
        loom::Schedule sch;
        loom::RVar step{"step"};
        sch[best].gpu_blocks(y);
        loom::Stage u = sch[best].update();
        u.split(r, ro, ri, threads * per_step).split(ri, ri, step, per_step).gpu_threads(ri);
        if (vectorized) u.vectorize(step);
        else u.unroll(step);
        u.gpu_blocks(y);
        return sch;
    }
    /** A thread per row, `rows` rows per block, each thread taking `lanes`
     * consecutive points of its row at a time (a vectorized RVar: each
     * lane keeps its own point, folded after the row). */
    loom::Schedule row_per_thread_vectorized(int rows, int lanes) const {
        loom::Schedule sch;
        sch[best].gpu_tile(y, yo, yi, rows);
        sch[best].update().gpu_tile(y, yo, yi, rows).vectorize(r, lanes);
        return sch;
    }
    /** `rows` rows per block (threadIdx.y), `threads` threads per row. */
    loom::Schedule rows_per_block(int rows, int threads) const {
        loom::Schedule sch;
        sch[best].gpu_tile(y, yo, yi, rows);
        sch[best]
            .update()
            .split(r, ro, ri, threads)
            .split(y, yo, yi, rows)
            .reorder(yo, ro, yi, ri)
            .gpu_threads(ri, yi)
            .gpu_blocks(yo);
        return sch;
    }
};

/** A filter along x whose taps (their count a run-time size) go through a
 * table computed per block: weight(k), zero past the last tap, so that it
 * can be computed over more entries than there are taps. */
struct Taps {
    loom::BufferParam in{loom::Float(32), 2, "in"}, coef{loom::Float(32), 1, "coef"};
    loom::Var x{"x"}, y{"y"}, k{"k"}, xo{"xo"}, xi{"xi"}, yo{"yo"}, yi{"yi"};
    loom::RDom r{0, coef.dim(0).extent(), "r"};
    loom::Func weight{"weight"}, filtered{"filtered"};
    Taps() {
        loom::Expr taps = coef.dim(0).extent();
        loom::Expr c = coef(loom::clamp(k, 0, taps - 1));
        weight(k) = loom::select(k < taps, c / (1.0f + loom::abs(c)), 0.0f);
        filtered(y, x) = loom::sum(weight(r) * in(y, x + r));
    }
    /** The table in shared memory, one entry per thread of a row of the
     * block: bound() gives it the constant size that a block needs (none
     * for max_taps 0: the thread loop's extent is then the taps'). */
    loom::Schedule table_per_block(int max_taps) const {
        loom::Schedule sch;
        sch[filtered].gpu_tile(y, x, yo, xo, yi, xi, 4, 32);
        sch[weight].compute_at(filtered, xo).store_in(loom::MemoryType::Shared).gpu_threads(k);
        if (max_taps > 0) sch[weight].bound(k, 0, max_taps);
        return sch;
    }
};

}  // namespace loom_test
