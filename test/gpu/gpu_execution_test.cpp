// GPU pipelines run on a GPU and compared against the reference interpreter,
// with fresh random inputs and sizes that are no multiple of the tiles.
// Label gpu: without a device (as in CI) every test reports itself skipped;
// scripts/gpu-check.sh runs them, under compute-sanitizer too.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "gpu_test_pipelines.h"
#include "loom/loom.h"
#include "test_util.h"

using namespace loom;
using loom_test::Blur;
using loom_test::buffers_match;
using loom_test::no_gpu_reason;
using loom_test::random_buffer;

namespace {

/** The GPU's capability, read from the device at compile time. */
const Target kGpu("host-cuda");

/** Runs `out` on the GPU over `shape` and compares with the interpreter. */
void expect_gpu_matches_interpreter(const Func &out, const Schedule &sch,
                                    const std::vector<int> &shape, double rel_tol = 0,
                                    double abs_tol = 0) {
    RawBuffer expected = interpret(out, shape);
    RawBuffer actual = Pipeline(out).realize(shape, sch, kGpu);
    EXPECT_TRUE(buffers_match(actual, expected, rel_tol, abs_tol));
}

/** Runs the Tuple-valued `out` on the GPU into buffers shaped as
 * `expected` (the interpreter's, interpret_tuple) and compares every
 * element exactly. */
void expect_gpu_tuple_matches(const Func &out, const Schedule &sch,
                              const std::vector<RawBuffer> &expected) {
    std::vector<RawBuffer> actual;
    for (const RawBuffer &e : expected) actual.push_back(RawBuffer(e.type(), e.shape()));
    Pipeline(out).realize(actual, sch, kGpu);
    for (size_t k = 0; k < actual.size(); k++) {
        EXPECT_TRUE(buffers_match(actual[k], expected[k])) << "element " << k;
    }
}

}  // namespace

TEST(GpuExecution, ElementwiseWithAScalar) {
    REQUIRE_GPU();
    loom_test::Brighten p;
    Schedule sch;
    sch[p.brighten].gpu_tile(p.x, p.xo, p.xi, 128);
    const int n = 100003;
    p.in.set(random_buffer<float>({n}));
    p.gain.set(1.75f);
    expect_gpu_matches_interpreter(p.brighten, sch, {n}, 2e-6, 1e-6);
}

TEST(GpuExecution, MinAndMaxOfANaNGiveTheNumber) {
    REQUIRE_GPU();
    // docs/ir.md: IEEE's minNum and maxNum, on the GPU as on the CPU, in
    // either operand order and against a constant (which the simplifier
    // moves to the right).
    const float nan = std::numeric_limits<float>::quiet_NaN();
    BufferParam a(Float(32), 1, "a"), b(Float(32), 1, "b");
    Var x("x"), xo("xo"), xi("xi"), k("k");
    Buffer<float> av({4}), bv({4});
    const float as[] = {nan, 1.0f, nan, 2.0f}, bs[] = {1.0f, nan, nan, 3.0f};
    for (int i = 0; i < 4; i++) av(i) = as[i], bv(i) = bs[i];
    a.set(av);
    b.set(bv);
    Func f("f");
    f(x, k) = select(k == 0, min(a(x), b(x)), k == 1, max(a(x), b(x)),
                     select(k == 2, min(1.5f, a(x)), max(b(x), 2.5f)));
    Schedule sch;
    sch[f].gpu_tile(x, k, xo, Var("ko"), xi, Var("ki"), 4, 4);
    Buffer<float> got(Pipeline(f).realize({4, 4}, sch, kGpu));
    for (int i = 0; i < 4; i++) {
        const float want[] = {std::fmin(as[i], bs[i]), std::fmax(as[i], bs[i]),
                              std::fmin(1.5f, as[i]), std::fmax(bs[i], 2.5f)};
        for (int j = 0; j < 4; j++) {
            if (std::isnan(want[j])) EXPECT_TRUE(std::isnan(got(i, j))) << i << ", " << j;
            else EXPECT_EQ(got(i, j), want[j]) << i << ", " << j;
        }
    }
    expect_gpu_matches_interpreter(f, sch, {4, 4});
}

TEST(GpuExecution, TilesWithAPerThreadReduction) {
    REQUIRE_GPU();
    loom_test::RowNormalize p;
    Schedule sch;
    sch[p.normalized].gpu_tile(p.y, p.x, p.yo, p.xo, p.yi, p.xi, 8, 32);
    sch[p.rowsum].compute_at(p.normalized, p.xi);
    p.in.set(random_buffer<float>({77, 301}, 0.0, 1.0));
    expect_gpu_matches_interpreter(p.normalized, sch, {77, 301}, 1e-5);
}

TEST(GpuExecution, ABoundTableInSharedMemory) {
    REQUIRE_GPU();
    loom_test::Taps p;
    Schedule sch = p.table_per_block(32);
    for (int taps : {1, 21, 32}) {
        SCOPED_TRACE(taps);
        p.in.set(random_buffer<float>({9, 70 + taps}));
        p.coef.set(random_buffer<float>({taps}));
        expect_gpu_matches_interpreter(p.filtered, sch, {9, 70}, 1e-5, 1e-6);
    }
    // More taps than the table holds: the host's check refuses the call
    // before the launch.
    p.in.set(random_buffer<float>({9, 70 + 33}));
    p.coef.set(random_buffer<float>({33}));
    EXPECT_TRUE(loom_test::throws_with<RuntimeError>(
        [&] {
            Pipeline(p.filtered).realize({9, 70}, sch, kGpu);
        },
        {"Func weight is bounded in k to [0, 31] (bound), but the pipeline reads it over [0, "
         "32]"}));

    // A table per block of blur_x's 32 columns, the last block's too:
    // a check that depends on the block stays in the kernel.
    const int rows = 21, cols = 77;
    Blur b;
    b.in.set(random_buffer<float>({rows + 2, 96 + 2}));
    expect_gpu_matches_interpreter(b.blur_y, b.shared_tiles_of_32_columns(), {rows, cols}, 1e-6);
}

TEST(GpuExecution, IntegerArithmeticKeepsLoomSemantics) {
    REQUIRE_GPU();
    loom_test::IntegerMix p;
    Schedule sch;
    sch[p.f].gpu_tile(p.x, p.xo, p.xi, 64);
    p.in.set(random_buffer<int32_t>({4099}, -1000, 1000));
    expect_gpu_matches_interpreter(p.f, sch, {4099});
    Schedule shifts;
    shifts[p.shifted].gpu_tile(p.x, p.xo, p.xi, 64).vectorize(p.xi, 4);
    p.in.set(random_buffer<int32_t>({4099}, std::numeric_limits<int32_t>::min(),
                                    std::numeric_limits<int32_t>::max()));
    expect_gpu_matches_interpreter(p.shifted, shifts, {4099});
}

TEST(GpuExecution, BlurSchedules) {
    REQUIRE_GPU();
    const int rows = 123, cols = 517;
    struct Case {
        const char *name;
        void (*schedule)(Blur &, Schedule &);
    };
    const Case cases[] = {
        {"two kernels",
         [](Blur &b, Schedule &sch) {
             sch[b.blur_x].compute_root().gpu_tile(b.y, b.x, b.yo, b.xo, b.yi, b.xi, 4, 64);
             sch[b.blur_y].gpu_tile(b.y, b.x, b.yo, b.xo, b.yi, b.xi, 16, 16);
         }},
        {"per-thread producer",
         [](Blur &b, Schedule &sch) {
             sch[b.blur_y].gpu_tile(b.y, b.x, b.yo, b.xo, b.yi, b.xi, 8, 32);
             sch[b.blur_x].compute_at(b.blur_y, b.xi);
         }},
        {"shared-memory tiles",
         [](Blur &b, Schedule &sch) {
             sch[b.blur_y].gpu_tile(b.y, b.x, b.yo, b.xo, b.yi, b.xi, 8, 32,
                                    TailStrategy::ShiftInwards);
             sch[b.blur_x].compute_at(b.blur_y, b.xo).gpu_threads(b.x, b.y);
         }},
        // Each row of threads computes its three rows of blur_x into the
        // block's copy, every thread of the row all of them: the same
        // values, the waste is the schedule's.
        {"stored per block, computed per row of threads",
         [](Blur &b, Schedule &sch) {
             sch[b.blur_y].gpu_tile(b.y, b.x, b.yo, b.xo, b.yi, b.xi, 8, 32);
             sch[b.blur_x].store_at(b.blur_y, b.xo).compute_at(b.blur_y, b.yi);
         }},
    };
    for (const Case &c : cases) {
        SCOPED_TRACE(c.name);
        Blur b;
        Schedule sch;
        c.schedule(b, sch);
        b.in.set(random_buffer<float>({rows + 2, cols + 2}));
        expect_gpu_matches_interpreter(b.blur_y, sch, {rows, cols}, 1e-6);
    }
}

TEST(GpuExecution, TupleSchedules) {
    REQUIRE_GPU();
    // A Tuple's elements are buffers of their own (pair.0, pair.1), placed,
    // guarded and synchronized as one Func.
    BufferParam in(Float(32), 2, "in");
    Var y("y"), x("x"), yo("yo"), xo("xo"), yi("yi"), xi("xi");
    Func pair("pair"), out("out");
    pair(y, x) = Tuple(in(y, x) + in(y, x + 1), in(y, x) * in(y, x + 1));
    out(y, x) = pair(y, x)[0] + pair(y + 1, x)[1] * 2.0f;
    in.set(random_buffer<float>({40, 48}));
    Schedule tiles;
    tiles[out].gpu_tile(y, x, yo, xo, yi, xi, 8, 32);
    Schedule root = tiles.clone();
    root[pair].compute_root().gpu_tile(y, x, yo, xo, yi, xi, 4, 16);
    Schedule per_block = tiles.clone();
    per_block[pair].compute_at(out, xo).gpu_threads(x, y);
    Schedule shared_row = tiles.clone();
    shared_row[pair].compute_at(out, xo).gpu_threads(x).store_in(MemoryType::Shared);
    Schedule per_row_of_threads = tiles.clone();
    per_row_of_threads[pair].store_at(out, xo).compute_at(out, yi);
    for (const Schedule *sch : {&root, &per_block, &shared_row, &per_row_of_threads}) {
        expect_gpu_matches_interpreter(out, *sch, {37, 45}, 1e-6);
    }
}

namespace {

/** Rows of small whole numbers (many ties), with rows of -inf, of +inf, of
 * one value throughout, and one whose max is at its last two points. */
Buffer<float> rows_with_ties(int rows, int cols) {
    Buffer<float> b = random_buffer<float>({rows, cols}, -4.0, 4.0);
    for (int y = 0; y < rows; y++) {
        for (int x = 0; x < cols; x++) {
            b(y, x) = y == 1 ? -INFINITY : y == 2 ? INFINITY : y == 3 ? 1.0f : std::floor(b(y, x));
        }
    }
    b(4, cols - 1) = b(4, cols - 2) = 9.0f;
    return b;
}

}  // namespace

TEST(GpuExecution, ArgmaxAndArgminAcrossThreads) {
    REQUIRE_GPU();
    // The threads of a row (a block, or a group of its threads) share an
    // update that keeps the point where the row reaches its max or min and
    // what it carries there; among ties the serial loop's point (the first
    // with a strict test, the last without) wins, whichever thread saw it.
    // With 77 columns a block's split of the row has a single piece; with
    // the unrolled schedule, each thread takes 4 points per iteration, and
    // with the vectorized one 4 points from one vector load (77 columns
    // end in a ragged vector, masked); with a thread per row vectorized along
    // it, each of its 4 lanes keeps a point of its own, folded after the
    // row.
    const int rows = 37;
    for (bool is_max : {true, false}) {
        for (bool strict : {true, false}) {
            for (bool min_max_form : {false, true}) {
                loom_test::RowArgExtreme a(is_max, strict, min_max_form);
                for (int cols : {1000, 77}) {
                    SCOPED_TRACE(std::string(is_max ? "max" : "min") +
                                 (strict ? " strict" : " not strict") +
                                 (min_max_form ? ", min/max form, " : ", ") + std::to_string(cols) +
                                 " columns");
                    a.in.set(rows_with_ties(rows, cols));
                    a.tag.set(random_buffer<float>({rows, cols}));
                    std::vector<RawBuffer> expected = interpret_tuple(a.best, {rows});
                    for (const Schedule &sch :
                         {a.one_row_per_block(128), a.rows_per_block(8, 32),
                          a.rows_per_block(4, 64), a.unrolled_in_threads(64, 4),
                          a.vectorized_in_threads(48, 4), a.row_per_thread_vectorized(16, 4)}) {
                        expect_gpu_tuple_matches(a.best, sch, expected);
                    }
                }
            }
        }
    }
    // Over two RVars, threads on both: points rank by the outer RVar first.
    BufferParam img(Int(32), 3, "img");
    img.set(random_buffer<int32_t>({5, 20, 30}, 0, 4));
    RDom q({{0, 20}, {0, 30}}, "q");
    Var z("z");
    RVar qo("qo"), qi("qi");
    Func best("best");
    best(z) = Tuple(0, 0, -1);
    Expr v = img(z, q.x, q.y), better = v > best(z)[2];
    best(z) = Tuple(select(better, Expr(q.x), best(z)[0]), select(better, Expr(q.y), best(z)[1]),
                    max(best(z)[2], v));
    Schedule sch;
    sch[best].gpu_blocks(z);
    sch[best].update().split(q.y, qo, qi, 16).gpu_threads(qi, q.x).gpu_blocks(z);
    expect_gpu_tuple_matches(best, sch, interpret_tuple(best, {5}));
}

TEST(GpuExecution, FusedChainsWithRowsOnBlocksAndThreads) {
    REQUIRE_GPU();
    // Heads and rows split (and fused) into blocks and threads in the
    // fused update itself: rolling_update at root, and split_k with its
    // chunks on blocks or on threads. Partial blocks of rows, a partial
    // tile, and chunks past the last key (12 keys in 8 chunks of 4).
    const int heads = 3, rows = 37, dims = 6;
    for (int keys : {12, 45}) {
        loom_test::HeadsWeightedAverage a(dims);
        a.x.set(random_buffer<float>({heads, rows, keys}, -4.0, 4.0));
        a.v.set(random_buffer<float>({heads, keys, dims}));
        SCOPED_TRACE(std::to_string(keys) + " keys");
        expect_gpu_matches_interpreter(a.out, a.rolled_rows_in_blocks(), {heads, rows, dims}, 1e-5,
                                       1e-6);
        for (int chunks : {1, 3, 8}) {
            SCOPED_TRACE(std::to_string(chunks) + " chunks");
            expect_gpu_matches_interpreter(a.out, a.chunks_in_blocks(chunks), {heads, rows, dims},
                                           1e-5, 1e-6);
            expect_gpu_matches_interpreter(a.out, a.chunks_in_threads(chunks), {heads, rows, dims},
                                           1e-5, 1e-6);
        }
    }
}

TEST(GpuExecution, ChunksOnThreadsAreCombinedAcrossTheBlock) {
    REQUIRE_GPU();
    // Online softmax: split_k cuts each row's chain (the max, then the sum
    // of exps) into a chunk per thread of the row's block; each thread
    // rolls its chunk in registers, and the block combines the partials
    // with the derived repair (a max, then a sum, across its threads).
    // Interleaved chunks in tiles of 4 and point by point, and contiguous
    // ones; 48 threads leave a partial warp; rows of 1 and 7 points leave
    // chunks empty (their partials are the identities), rows of 1001 take
    // several steps, with a partial last tile.
    loom_test::RowSoftmax a;
    for (int cols : {1, 7, 123, 1001}) {
        a.in.set(random_buffer<float>({5, cols}, -8, 8));
        for (auto [threads, tile, layout] : {std::tuple{32, 4, ChunkLayout::Interleaved},
                                             {48, 4, ChunkLayout::Interleaved},
                                             {64, 1, ChunkLayout::Interleaved},
                                             {32, 4, ChunkLayout::Contiguous},
                                             {48, 1, ChunkLayout::Contiguous}}) {
            SCOPED_TRACE(std::to_string(cols) + " columns, " + std::to_string(threads) +
                         " threads, tiles of " + std::to_string(tile) +
                         (layout == ChunkLayout::Interleaved ? ", interleaved" : ", contiguous"));
            expect_gpu_matches_interpreter(a.softmax, a.chunks_on_threads(threads, tile, layout),
                                           {5, cols}, 1e-5, 1e-7);
        }
    }
    // A lone reduction (split_k as rfactor): each thread sums its chunk.
    loom_test::RowNormalize n;
    for (int cols : {1, 123, 1001}) {
        n.in.set(random_buffer<float>({5, cols}, 0, 1));
        for (int tile : {1, 8}) {
            SCOPED_TRACE("a lone sum, " + std::to_string(cols) + " columns, tiles of " +
                         std::to_string(tile));
            expect_gpu_matches_interpreter(n.normalized, n.chunks_on_threads(48, tile), {5, cols},
                                           1e-5, 1e-7);
        }
    }
}

TEST(GpuExecution, RowsKeptInTheirThreadsRegisters) {
    REQUIRE_GPU();
    // Each row copied once into its block's threads' registers, a run of
    // `vector` points per thread in every period of threads * vector, and
    // read back in the same runs by the max, the sum and the output: the
    // reductions each thread's own (split_k) or across the threads at each
    // step. Rows of 1 and 7 points leave most threads nothing; 48 threads
    // a partial warp; 1001 points a partial last period and vector; vector
    // 1 a run of one point.
    for (int cols : {1, 7, 1001}) {
        for (auto [threads, vector, per_thread] : {std::tuple{32, 4, true},
                                                   {48, 4, true},
                                                   {64, 1, true},
                                                   {32, 4, false},
                                                   {48, 1, false}}) {
            SCOPED_TRACE(std::to_string(cols) + " columns, " + std::to_string(threads) +
                         " threads, runs of " + std::to_string(vector) +
                         (per_thread ? ", each thread's reductions" : ", reductions per step"));
            loom_test::RowSoftmax a;
            a.in.dim(1).set_min(0).set_extent(cols);
            a.softmax.output_buffer().dim(1).set_min(0).set_extent(cols);
            a.in.set(random_buffer<float>({5, cols}, -8, 8));
            expect_gpu_matches_interpreter(
                a.softmax, a.row_in_registers(threads, vector, per_thread), {5, cols}, 1e-5, 1e-7);
        }
    }
}

TEST(GpuExecution, HalfAndBFloat16) {
    REQUIRE_GPU();
    loom_test::HalfChain p;
    Schedule sch;
    sch[p.out].gpu_tile(p.x, p.xo, p.xi, 128);
    p.in.set(random_buffer<float16_t>({1025}));
    // One bfloat16 rounding apart at most (exp's last bits may differ).
    expect_gpu_matches_interpreter(p.out, sch, {1025}, 1.0 / 128);
}

TEST(GpuExecution, VectorizedThreads) {
    REQUIRE_GPU();
    {
        // Whole 16-byte words; a view starting one element in makes the
        // addresses unaligned, which takes the lane-by-lane path.
        loom_test::Brighten p;
        Schedule sch;
        loom_test::vectorized_threads(sch[p.brighten], p.x, 512, 4);
        const int n = 100003;
        Buffer<float> in = random_buffer<float>({n + 1});
        p.in.set(in);
        p.gain.set(0.5f);
        expect_gpu_matches_interpreter(p.brighten, sch, {n}, 2e-6, 1e-6);
        RawBuffer shifted = in.cropped(0, 1, n);
        shifted.set_min({0});
        p.in.set(shifted);
        expect_gpu_matches_interpreter(p.brighten, sch, {n}, 2e-6, 1e-6);
        // GuardWithIf: the last block's lanes past the end are masked.
        Schedule guarded;
        loom_test::vectorized_threads(guarded[p.brighten], p.x, 256, 4, TailStrategy::GuardWithIf);
        expect_gpu_matches_interpreter(p.brighten, guarded, {n}, 2e-6, 1e-6);
        // Halide's way, vectorizing the thread loop: the split keeps the
        // threads on its outer loop, 64 of them with 4 lanes each.
        Schedule halide_way;
        Var xo("xo"), xi("xi");
        halide_way[p.brighten].gpu_tile(p.x, xo, xi, 256).vectorize(xi, 4);
        EXPECT_NE(Pipeline(p.brighten)
                      .compile_to_cuda(halide_way, Target("host-cuda-sm_90"))
                      .find("__launch_bounds__(64)"),
                  std::string::npos);
        expect_gpu_matches_interpreter(p.brighten, halide_way, {n}, 2e-6, 1e-6);
    }
    {
        loom_test::HalfChain p;
        Schedule sch;
        loom_test::vectorized_threads(sch[p.out], p.x, 1024, 8);
        p.in.set(random_buffer<float16_t>({5001}));
        expect_gpu_matches_interpreter(p.out, sch, {5001}, 1.0 / 128);
    }
    {
        // A per-thread producer vectorized into its registers.
        Blur b;
        Schedule sch;
        sch[b.blur_y].gpu_tile(b.y, b.x, b.yo, b.xo, b.yi, b.xi, 8, 32);
        sch[b.blur_x].compute_at(b.blur_y, b.xi).vectorize(b.y, 4);
        b.in.set(random_buffer<float>({75, 133}));
        expect_gpu_matches_interpreter(b.blur_y, sch, {73, 131}, 1e-6, 1e-6);

        // A producer in shared memory whose threads each compute a vector,
        // under guarded tiles: the last blocks' regions are narrower, and
        // the thread loop over the vectors, (width + 3) / 4 long, is bounded
        // by 32 for every block.
        Schedule shared;
        shared[b.blur_y]
            .gpu_tile(b.y, b.x, b.yo, b.xo, b.yi, b.xi, 8, 128, TailStrategy::GuardWithIf)
            .vectorize(b.xi, 4);
        shared[b.blur_x].compute_at(b.blur_y, b.xo).gpu_threads(b.x, b.y).vectorize(b.x, 4);
        EXPECT_NE(Pipeline(b.blur_y)
                      .compile_to_cuda(shared, Target("host-cuda-sm_90"))
                      .find("block (32, 10, 1)"),
                  std::string::npos);
        expect_gpu_matches_interpreter(b.blur_y, shared, {73, 131}, 1e-6, 1e-6);
    }
}

TEST(GpuExecution, RowLoopsTestTheirAlignmentOnce) {
    REQUIRE_GPU();
    // No promises: each loop along a row tests where the row starts, once,
    // and moves whole words untested when it is aligned, or runs the loop
    // with a test at each access when it is not. Rows padded to 1004
    // floats start aligned; rows of 1001, and rows that begin a float into
    // their memory, start aligned every fourth row or never.
    loom_test::AlignedRows p(false);
    const int rows = 37, cols = 1001;
    for (const bool staged : {false, true}) {
        CompiledPipeline compiled = Pipeline(p.centered).compile(p.schedule(64, staged), kGpu);
        for (const int stride : {1004, 1001}) {
            for (const int shift : {0, 1}) {
                SCOPED_TRACE(std::to_string(stride) + " floats a row, shifted by " +
                             std::to_string(shift) + (staged ? ", staged" : ""));
                RawBuffer in = random_buffer<float>({rows, stride + shift}).cropped(1, shift, cols);
                in.set_min({0, 0});
                RawBuffer out = random_buffer<float>({rows, stride}).cropped(1, 0, cols);
                p.in.set(in);
                compiled.realize({out});
                EXPECT_TRUE(buffers_match(out, interpret(p.centered, {rows, cols})));
            }
        }
    }
}

TEST(GpuExecution, PromisedAlignment) {
    REQUIRE_GPU();
    // Rows of 1001 floats padded to 1004 (a multiple of 4), columns from
    // 0, in Loom's own (aligned) memory: every promise holds, and the
    // vectors the compiler proved aligned move as whole words.
    loom_test::AlignedRows p(true);
    CompiledPipeline compiled = Pipeline(p.centered).compile(p.schedule(), kGpu);
    const int rows = 37, cols = 1001;
    auto padded_rows = [&](int columns) {
        return random_buffer<float>({rows, columns}).cropped(1, 0, cols);
    };
    RawBuffer in = padded_rows(1004), out = padded_rows(1004);
    p.in.set(in);
    compiled.realize({out});
    const RawBuffer expected = interpret(p.centered, {rows, cols});
    EXPECT_TRUE(buffers_match(out, expected));
    // The same with each row staged in shared memory: the copy's words are
    // proven aligned too.
    RawBuffer staged_out = padded_rows(1004);
    Pipeline(p.centered).compile(p.schedule(64, true), kGpu).realize({staged_out});
    EXPECT_TRUE(buffers_match(staged_out, expected));

    // Each broken promise is refused, naming the buffer and the promise.
    using loom_test::throws_with;
    RawBuffer shifted = padded_rows(1004).cropped(1, 1, cols - 1);
    shifted.set_min({0, 0});  // columns from 0, and 4 bytes into its memory
    p.in.set(shifted);
    EXPECT_TRUE(throws_with<RuntimeError>(
        [&] { compiled.realize({padded_rows(1004).cropped(1, 0, cols - 1)}); },
        {"Input buffer in starts on the GPU at an address 4 bytes past a multiple of 16",
         "in.set_host_alignment(16)"}));
    p.in.set(random_buffer<float>({rows, cols}));
    EXPECT_TRUE(
        throws_with<RuntimeError>([&] { compiled.realize({out}); },
                                  {"Input buffer in has stride 1001 in dimension 0",
                                   "not a multiple of 4", "in.dim(0).set_stride_multiple(4)"}));
    p.in.set(in);
    RawBuffer from_one = padded_rows(1004);
    from_one.set_min({0, 1});
    EXPECT_TRUE(
        throws_with<RuntimeError>([&] { compiled.realize({from_one}); },
                                  {"Output buffer centered has min 1 in dimension 1", "exactly 0",
                                   "centered.output_buffer().dim(1).set_min(0)"}));
}

TEST(GpuExecution, ReductionsAcrossThreads) {
    REQUIRE_GPU();
    {
        // Rows longer and shorter than the block, none a multiple of it.
        loom_test::RowSoftmax p;
        p.in.set(random_buffer<float>({77, 1001}, -20.0, 20.0));
        expect_gpu_matches_interpreter(p.softmax, p.one_row_per_block(256), {77, 1001}, 1e-5, 1e-7);
        p.in.set(random_buffer<float>({5, 97}, -20.0, 20.0));
        expect_gpu_matches_interpreter(p.softmax, p.one_row_per_block(128), {5, 97}, 1e-5, 1e-7);
    }
    {
        // An integer minimum over a 64 x 4 block: exact.
        BufferParam in(Int(32), 2, "in");
        Var y("y");
        RDom r(0, in.dim(1).extent(), "r");
        RVar ro("ro"), ri("ri"), rj("rj");
        Func lo("lo");
        lo(y) = std::numeric_limits<int32_t>::max();
        lo(y) = min(lo(y), in(y, r));
        Schedule sch;
        sch[lo].gpu_blocks(y);
        sch[lo]
            .update()
            .split(r, ro, ri, 64)
            .split(ro, ro, rj, 4)
            .gpu_blocks(y)
            .gpu_threads(ri, rj);
        in.set(random_buffer<int32_t>({19, 3001}, -100000, 100000));
        expect_gpu_matches_interpreter(lo, sch, {19});
    }
    {
        // Exact integer sums over blocks whose last warp is partial: 48
        // threads (a warp and a half), 1000 (31 warps and 8 threads), and
        // 20 (one partial warp), each warp's total then combined by the
        // first warp.
        BufferParam in(Int(32), 2, "in");
        Var y("y");
        RDom r(0, in.dim(1).extent(), "r");
        RVar ro("ro"), ri("ri");
        Func total("total");
        total(y) = 0;
        total(y) += in(y, r);
        in.set(random_buffer<int32_t>({7, 2999}, -100000, 100000));
        for (const int threads : {48, 1000, 20}) {
            SCOPED_TRACE(std::to_string(threads) + " threads");
            Schedule sch;
            sch[total].gpu_blocks(y);
            sch[total].update().split(r, ro, ri, threads).gpu_blocks(y).gpu_threads(ri);
            expect_gpu_matches_interpreter(total, sch, {7});
        }
    }
}

TEST(GpuExecution, BlockReductionsOfEveryShapeInTurn) {
    // Three reductions of each row in turn, a float sum, a double max and
    // an int count, each combined across the block: loom_block_reduce's
    // paths for one warp (no shared memory), a power of two of warps
    // (halves of its shared memory taken in turn, one barrier), 3 warps
    // (the general path) and 32 x 2 threads (a block of two dimensions);
    // consecutive reductions of 4- and 8-byte values in the same halves.
    REQUIRE_GPU();
    BufferParam in(Float(32), 2, "in");
    Var y("y");
    RDom r(0, in.dim(1).extent(), "r");
    RVar ro("ro"), ri("ri"), rj("rj");
    Func total("total"), peak("peak"), count("count"), out("out");
    total(y) = 0.0f;
    total(y) += in(y, r);
    peak(y) = cast<double>(-1e30);
    peak(y) = max(peak(y), cast<double>(in(y, r)) * cast<double>(total(y)));
    count(y) = 0;
    count(y) += select(in(y, r) > 0.5f, 1, 0);
    out(y) = total(y) + cast<float>(peak(y)) + cast<float>(count(y));
    in.set(random_buffer<float>({9, 1001}, -1.0, 1.0));
    for (const std::vector<int> &block :
         std::vector<std::vector<int>>{{32}, {96}, {1024}, {32, 2}}) {
        SCOPED_TRACE(std::to_string(block[0]) + " x " +
                     std::to_string(block.size() > 1 ? block[1] : 1) + " threads");
        Schedule sch;
        sch[out].gpu_blocks(y);
        for (const Func &f : {total, peak, count}) {
            sch[f].compute_at(out, y);
            Stage u = sch[f].update().split(r, ro, ri, block[0]);
            if (block.size() > 1) {
                u.split(ro, ro, rj, block[1]).gpu_threads(ri, rj);
            } else {
                u.gpu_threads(ri);
            }
        }
        expect_gpu_matches_interpreter(out, sch, {9}, 1e-5, 1e-5);
    }
}

TEST(GpuExecution, ValuesOfTheBlockReachItsThreads) {
    // What the first thread stores alone (a single point, or a reduction's
    // initial value and fold) and what the block's threads store together
    // reach every thread that reads them: barriers where a value passes
    // from one thread to another, and only there.
    REQUIRE_GPU();
    BufferParam in(Float(32), 1, "in");
    in.set(random_buffer<float>({300}));
    Var x("x"), xo("xo"), xi("xi");
    RDom r(0, 100, "r");
    RVar ro("ro"), ri("ri");
    {
        // shared, read by one thread (g's initial value), read by all.
        Func shared("shared"), g("g"), out("out");
        shared(x) = in(x)*2.0f;
        g() = shared(3) + shared(40);
        g() = max(g(), in(r) + shared(5));
        out(x) = in(x)-g();
        Schedule sch;
        sch[out].gpu_tile(x, xo, xi, 64);
        sch[shared].compute_at(out, xo).gpu_threads(x);
        sch[g].compute_at(out, xo);
        sch[g].update().split(r, ro, ri, 64).gpu_threads(ri);
        expect_gpu_matches_interpreter(out, sch, {200});
        // A single point alone, with no update.
        Func h("h"), point("point"), out2("out2");
        h(x) = in(x)*2.0f;
        point() = h(3) + h(40);
        out2(x) = in(x)-point();
        Schedule single;
        single[out2].gpu_tile(x, xo, xi, 64);
        single[h].compute_at(out2, xo).gpu_threads(x);
        single[point].compute_at(out2, xo);
        expect_gpu_matches_interpreter(out2, single, {200});
    }
    {
        // The second reduction starts from the first's total, which its
        // threads read too.
        Func total("total"), scaled("scaled"), out("out");
        total() = 0.0f;
        total() = total() + in(r);
        scaled() = total() * 0.5f;
        scaled() = scaled() + in(r)*total();
        out(x) = in(x) + scaled();
        Schedule sch;
        sch[out].gpu_tile(x, xo, xi, 32);
        for (const Func &f : {total, scaled}) {
            sch[f].compute_at(out, xo);
            sch[f].update().split(r, ro, ri, 32).gpu_threads(ri);
        }
        expect_gpu_matches_interpreter(out, sch, {100}, 1e-4, 1e-4);
    }
    {
        // A Func made anew per iteration of a serial loop around the
        // threads: the next iteration's writes wait for this one's reads.
        BufferParam rows(Float(32), 2, "rows");
        rows.set(random_buffer<float>({40, 100}));
        Var y("y");
        Func h("h"), out("out");
        h(y, x) = rows(y, x) * 3.0f;
        out(y, x) = h(y, x) + h(y, x + 1);
        Schedule sch;
        sch[out]
            .split(x, xo, xi, 32, TailStrategy::ShiftInwards)
            .reorder(xo, y, xi)
            .gpu_blocks(xo)
            .gpu_threads(xi);
        sch[h].compute_at(out, y).gpu_threads(x);
        expect_gpu_matches_interpreter(out, sch, {40, 99});
    }
}

TEST(GpuExecution, VectorizedRVarsAcrossThreads) {
    REQUIRE_GPU();
    // Each thread reads 4 consecutive points of its row at a time and
    // combines them before the block combines the threads. The rows' lengths
    // leave ragged vectors, whose lanes past the end count for nothing, and
    // rows that start unaligned (1001 floats), read lane by lane.
    loom_test::RowSoftmax p;
    p.in.set(random_buffer<float>({13, 1001}, -20.0, 20.0));
    expect_gpu_matches_interpreter(p.softmax, p.one_row_per_block(64, 4), {13, 1001}, 1e-5, 1e-7);
    p.in.set(random_buffer<float>({6, 1024}, -20.0, 20.0));
    expect_gpu_matches_interpreter(p.softmax, p.one_row_per_block(32, 8), {6, 1024}, 1e-5, 1e-7);
    p.in.set(random_buffer<float>({3, 7}, -20.0, 20.0));
    expect_gpu_matches_interpreter(p.softmax, p.one_row_per_block(32, 4), {3, 7}, 1e-5, 1e-7);
}

TEST(GpuExecution, UnrolledRVarsAcrossThreads) {
    REQUIRE_GPU();
    // Each thread takes 4 consecutive points of its row per iteration, in
    // an unrolled loop. The element's index, a loop invariant hoisted out
    // of that loop into a let inside the thread loop, is bound again where
    // the block folds its total.
    BufferParam in(Float(32), 2, "in");
    Var y("y");
    RDom r(0, in.dim(1).extent(), "r");
    RVar ro("ro"), ri("ri"), ru("ru");
    Func total("total");
    total(y) = 0.0f;
    total(y) = total(y) + in(y, r);
    Schedule sch;
    sch[total].gpu_blocks(y);
    sch[total].update().split(r, ro, ri, 64 * 4).split(ri, ri, ru, 4).gpu_threads(ri).unroll(ru);
    sch[total].update().gpu_blocks(y);
    in.set(random_buffer<float>({13, 1001}));
    // (The threads add in another order: a sum of 1001 terms near 1 in size
    // may differ by a few ulps of its largest partial sums.)
    expect_gpu_matches_interpreter(total, sch, {13}, 1e-5, 1e-4);
}

TEST(GpuExecution, ScansWithAThreadPerRowOrColumn) {
    REQUIRE_GPU();
    // Each thread scans its own row: the rows never meet.
    BufferParam in(Float(32), 2, "in");
    Var y("y"), x("x"), yo("yo"), xo("xo"), yi("yi"), xi("xi");
    RDom s(1, in.dim(1).extent() - 1, "s");
    Func rows("rows");
    rows(y, x) = in(y, x);
    rows(y, s) = rows(y, s - 1) * 0.75f + in(y, s);
    Schedule per_row;
    per_row[rows].gpu_tile(y, x, yo, xo, yi, xi, 4, 32);
    per_row[rows].update().split(y, yo, yi, 32).gpu_blocks(yo).gpu_threads(yi);
    in.set(random_buffer<float>({75, 131}));
    expect_gpu_matches_interpreter(rows, per_row, {75, 131}, 1e-5, 1e-6);
    // Each thread scans a column down the rows, over a two-dimensional
    // RDom whose column RVar goes on the threads.
    RDom c({{0, in.dim(1).extent()}, {1, in.dim(0).extent() - 1}}, "c");
    RVar cxo("cxo"), cxi("cxi");
    Func columns("columns");
    columns(y, x) = in(y, x);
    columns(c.y, c.x) = columns(c.y - 1, c.x) * 0.5f + in(c.y, c.x);
    Schedule per_column;
    per_column[columns].gpu_tile(y, x, yo, xo, yi, xi, 4, 32);
    per_column[columns]
        .update()
        .split(c.x, cxo, cxi, 64)
        .reorder(cxo, c.y, cxi)
        .gpu_blocks(cxo)
        .gpu_threads(cxi);
    expect_gpu_matches_interpreter(columns, per_column, {75, 131}, 1e-5, 1e-6);
}

TEST(GpuExecution, AThreadLoopOfOneInATallerBlock) {
    REQUIRE_GPU();
    // f0 is three rows of each tile, so the block is 8 x 3 threads; f1 is
    // one row, a thread loop of extent 1 that only threadIdx.y == 0 may
    // run. Its update reads and writes its element: run by all three rows
    // of threads it was applied three times (the loop had been simplified
    // away). Found by Fuzz.GpuSchedulesRunOnTheCpu.
    BufferParam in(Float(32), 2, "in");
    Var y("y"), x("x"), yo("yo"), xo("xo"), yi("yi"), xi("xi");
    Func f0("f0"), f1("f1"), f2("f2");
    f0(y, x) = in(y, x) * 2.0f;
    f1(y, x) = f0(y, x);
    f1(y, x) = f1(y, x) - f0(y + 2, x);
    f2(y, x) = f1(y, x) + f0(y + 1, x);
    Schedule sch;
    sch[f2].gpu_tile(y, x, yo, xo, yi, xi, 1, 8, TailStrategy::ShiftInwards);
    sch[f0].compute_at(f2, xo).gpu_threads(x, y);
    sch[f1].compute_at(f2, xo).gpu_threads(x, y);
    sch[f1].update().gpu_threads(x, y);
    in.set(random_buffer<float>({13 + 2, 37}));
    expect_gpu_matches_interpreter(f2, sch, {13, 37}, 1e-6, 1e-6);
}

TEST(GpuExecution, ANestOfFewerThreadLoopsThanTheBlockHas) {
    REQUIRE_GPU();
    // The tiles of out are 4 x 16 threads, but sums and scaled, computed per
    // tile, have one thread loop each (over x): only the threads at
    // threadIdx.y == 0 may run them. Run by all four rows of threads, their
    // updates were applied four times: the column sums came out four times
    // too large.
    loom_test::ColumnTerms c;
    for (MemoryType memory : {MemoryType::Auto, MemoryType::Shared}) {
        c.in.set(random_buffer<float>({37, 45}));
        SCOPED_TRACE(memory == MemoryType::Shared ? "in shared memory" : "memory by default");
        expect_gpu_matches_interpreter(c.out, c.schedule(memory), {37, 45}, 1e-5, 1e-5);
    }
}

TEST(GpuExecution, FuncsInDeviceMemoryInsideKernels) {
    REQUIRE_GPU();
    // store_in(Global) inside a kernel: one copy per block (blur_x of each
    // tile), or per thread (each thread's row sum), in device memory the
    // host allocates before the launch.
    Blur b;
    b.in.set(random_buffer<float>({77 + 2, 301 + 2}));
    Schedule per_block = b.shared_tiles(32);
    per_block[b.blur_x].store_in(MemoryType::Global);
    expect_gpu_matches_interpreter(b.blur_y, per_block, {77, 301}, 1e-6, 1e-6);
    // Guarded tiles: the last blocks' regions are smaller, and every
    // block's copy has room for the most any block needs (34 x 32). The
    // blocks' copies sit side by side in one allocation, so a block that
    // strayed past its copy would spoil its neighbour's.
    for (TailStrategy tail : {TailStrategy::GuardWithIf, TailStrategy::Auto}) {
        Schedule ragged;
        ragged[b.blur_y].gpu_tile(b.y, b.x, b.yo, b.xo, b.yi, b.xi, 32, 32, tail);
        ragged[b.blur_x]
            .compute_at(b.blur_y, b.xo)
            .store_in(MemoryType::Global)
            .split(b.x, b.xo, b.xi, 32)
            .gpu_threads(b.xi);
        const std::string stmt =
            Pipeline(b.blur_y).compile_to_lowered_stmt(ragged, Target("host-cuda-sm_90"));
        EXPECT_NE(stmt.find(" * 1088)] in Global"), std::string::npos) << stmt;
        expect_gpu_matches_interpreter(b.blur_y, ragged, {77, 301}, 1e-6, 1e-6);
    }

    loom_test::RowNormalize p;
    Schedule per_thread;
    per_thread[p.normalized].gpu_tile(p.y, p.x, p.yo, p.xo, p.yi, p.xi, 8, 32);
    per_thread[p.rowsum].compute_at(p.normalized, p.xi).store_in(MemoryType::Global);
    p.in.set(random_buffer<float>({77, 301}, 0.0, 1.0));
    expect_gpu_matches_interpreter(p.normalized, per_thread, {77, 301}, 1e-5, 1e-6);

    // A producer with an update in device memory per block, read by a
    // vectorized output through a per-thread window sum. The vectors'
    // split makes the producer's region look block-dependent, so its copy
    // is sized by a constant bound (2 rows by 16 + 1 columns): an int32
    // extent like any other.
    // (Found by the fuzzer: the bound was once an int64 constant, which
    // left the allocation's size of mixed types, an internal error.)
    BufferParam in(Float(32), 2, "in");
    Var y("y"), x("x"), yo("yo"), xo("xo"), yi("yi"), xi("xi"), xv("xv");
    RDom u(0, 3, "u"), r(0, 2, "r");
    Func f0("f0"), f1("f1"), f2("f2");
    f0(y, x) = in(y, x);
    f0(y, x) += in(y + u, x + 1) * 0.125f;
    f1(y, x) = sum(f0(y + 2, x + r)) * 0.25f;
    f2(y, x) = in(y, x) + f1(y, x + 2) * 0.5f;
    Schedule vectors;
    vectors[f2]
        .gpu_tile(y, x, yo, xo, yi, xi, 2, 16, TailStrategy::ShiftInwards)
        .split(xi, xi, xv, 4)
        .vectorize(xv);
    vectors[f0].compute_at(f2, xo).gpu_threads(x, y).store_in(MemoryType::Global);
    vectors[f0].update().gpu_threads(x, y);
    vectors[f1].compute_at(f2, xi);
    const std::string stmt =
        Pipeline(f2).compile_to_lowered_stmt(vectors, Target("host-cuda-sm_90"));
    EXPECT_NE(stmt.find(" * 34)] in Global"), std::string::npos) << stmt;
    in.set(random_buffer<float>({8 + 4, 37 + 5}));
    expect_gpu_matches_interpreter(f2, vectors, {8, 37}, 1e-6, 1e-6);
}

TEST(GpuExecution, RowsStagedInSharedMemorySizedAtLaunch) {
    REQUIRE_GPU();
    // Schedule::in copies each block's row into shared memory whose size
    // the launch computes from the row's length: short, odd, and past the
    // 48 KiB a block gets without asking (13001 floats).
    loom_test::RowSoftmax p;
    for (const std::vector<int> &shape : std::vector<std::vector<int>>{{7, 1001}, {3, 13001}}) {
        p.in.set(random_buffer<float>(shape, -20.0, 20.0));
        expect_gpu_matches_interpreter(p.softmax, p.staged_rows(256), shape, 1e-5, 1e-7);
    }
}

TEST(GpuExecution, FastMathKeepsResultsCloseToTheInterpreters) {
    REQUIRE_GPU();
    // fast_math compiles with --use_fast_math: exp, the division and the
    // square root below are the hardware's approximations, a few ulp off
    // (and on the stand-in driver, which compiles the same source for the
    // CPU, the accurate ones). A row softmax's exponentials and a norm.
    loom_test::RowSoftmax p;
    const std::vector<int> shape = {7, 1001};
    p.in.set(random_buffer<float>(shape, -20.0, 20.0));
    RawBuffer expected = interpret(p.softmax, shape);
    RawBuffer actual(expected.type(), shape);
    Pipeline(p.softmax)
        .compile(p.staged_rows(256), kGpu.with_feature(Target::FastMath))
        .realize({actual});
    EXPECT_TRUE(buffers_match(actual, expected, 1e-5, 1e-7));
    Var x("x"), xo("xo"), xi("xi");
    Func norm("norm");
    norm(x) = sqrt(p.in(0, x) * p.in(0, x) + 1.0f) / (abs(p.in(1, x)) + 0.5f);
    Schedule sch;
    sch[norm].gpu_tile(x, xo, xi, 128);
    RawBuffer expected_norm = interpret(norm, {1001});
    RawBuffer actual_norm(expected_norm.type(), {1001});
    Pipeline(norm).compile(sch, kGpu.with_feature(Target::FastMath)).realize({actual_norm});
    EXPECT_TRUE(buffers_match(actual_norm, expected_norm, 1e-5, 0));
}

TEST(GpuExecution, ReductionsAcrossGroupsOfThreads) {
    REQUIRE_GPU();
    // Several rows per block, each row's threads combining their own
    // partials: groups that are segments of a warp (shuffles), groups of 2
    // and 4 whole warps (each warp's total through shared memory, one
    // barrier), and groups of 40 threads (a value per thread through shared
    // memory). 37 rows leave the last block's last groups without a row.
    loom_test::RowSoftmax p;
    p.in.set(random_buffer<float>({37, 301}, -20.0, 20.0));
    expect_gpu_matches_interpreter(p.softmax, p.rows_per_block(8, 32), {37, 301}, 1e-5, 1e-7);
    expect_gpu_matches_interpreter(p.softmax, p.rows_per_block(16, 8), {37, 301}, 1e-5, 1e-7);
    expect_gpu_matches_interpreter(p.softmax, p.rows_per_block(4, 64), {37, 301}, 1e-5, 1e-7);
    expect_gpu_matches_interpreter(p.softmax, p.rows_per_block(2, 128), {37, 301}, 1e-5, 1e-7);
    expect_gpu_matches_interpreter(p.softmax, p.rows_per_block(3, 40), {37, 301}, 1e-5, 1e-7);
    // Exact, over two dimensions of threads: each row's minimum over a
    // 16 x 4 group, four rows (threadIdx.z) per block.
    BufferParam in(Int(32), 2, "in");
    Var y("y"), yo("yo"), yi("yi");
    RDom r(0, in.dim(1).extent(), "r");
    RVar ro("ro"), ri("ri"), rj("rj");
    Func lo("lo"), out("out");
    lo(y) = std::numeric_limits<int32_t>::max();
    lo(y) = min(lo(y), in(y, r));
    out(y) = lo(y) + 1;
    Schedule sch;
    sch[out].split(y, yo, yi, 4, TailStrategy::ShiftInwards).gpu_blocks(yo).gpu_threads(yi);
    sch[lo].compute_at(out, yo).gpu_threads(y);
    sch[lo]
        .update()
        .split(r, ro, ri, 16)
        .split(ro, ro, rj, 4)
        .reorder(ro, y, rj, ri)
        .gpu_threads(ri, rj, y);
    in.set(random_buffer<int32_t>({19, 1001}, -100000, 100000));
    expect_gpu_matches_interpreter(out, sch, {19});
    // lo's own kernel, six rows per block over 20: the last block's groups
    // for rows 20 to 23 have no element, and must not fold (the stand-in
    // driver's guard page follows the 80 bytes of lo).
    Schedule guarded;
    guarded[lo].split(y, yo, yi, 6).gpu_blocks(yo).gpu_threads(yi);
    guarded[lo]
        .update()
        .split(y, yo, yi, 6)
        .split(r, ro, ri, 16)
        .split(ro, ro, rj, 4)
        .reorder(yo, ro, yi, rj, ri)
        .gpu_blocks(yo)
        .gpu_threads(ri, rj, yi);
    in.set(random_buffer<int32_t>({20, 1001}, -100000, 100000));
    expect_gpu_matches_interpreter(lo, guarded, {20});
}

TEST(GpuExecution, CopiesThatEveryThreadKeeps) {
    // Funcs computed once per block that every thread keeps whole in its
    // registers: scale, a single point (Auto), and moments, four points
    // per row in Register, whose pure definition every thread computes
    // in a serial loop and whose four sums every thread folds the block's
    // totals into. The same in shared memory, computed by the first
    // thread, gives the same values. Rows shorter and longer than the
    // block, none a multiple of it; one warp (no shared memory), 8 warps
    // and 3 (the combines' two paths). (Positive inputs: sums in another
    // order differ by their rounding, not by cancellation.)
    REQUIRE_GPU();
    loom_test::RowMoments p;
    for (const std::vector<int> &shape : std::vector<std::vector<int>>{{7, 1001}, {5, 20}}) {
        p.in.set(random_buffer<float>(shape, 0.5, 1.0));
        for (const int threads : {32, 256, 96}) {
            for (const MemoryType memory : {MemoryType::Register, MemoryType::Shared}) {
                SCOPED_TRACE(std::to_string(shape[1]) + " columns, " + std::to_string(threads) +
                             " threads, " +
                             (memory == MemoryType::Register ? "registers" : "shared memory"));
                expect_gpu_matches_interpreter(p.out, p.per_block(threads, memory), shape, 1e-5,
                                               1e-5);
            }
        }
    }
    // A Tuple of two sums' kinds at a single point (Auto): a copy of each
    // of its two buffers in every thread, each folded from its own combine.
    BufferParam in(Float(32), 2, "in");
    Var y("y"), x("x"), xo("xo"), xi("xi");
    RDom r(0, in.dim(1).extent(), "r");
    RVar ro("ro"), ri("ri");
    Func stats("stats"), centered("centered");
    stats(y) = Tuple(0.0f, cast<float>(-INFINITY));
    stats(y) = Tuple(stats(y)[0] + in(y, r), max(stats(y)[1], in(y, r)));
    centered(y, x) = in(y, x) * stats(y)[0] - stats(y)[1];
    Schedule sch;
    sch[centered].split(x, xo, xi, 64).gpu_blocks(y).gpu_threads(xi);
    sch[stats].compute_at(centered, y);
    sch[stats].update().split(r, ro, ri, 64).gpu_threads(ri);
    in.set(random_buffer<float>({6, 333}, 0.5, 1.0));
    expect_gpu_matches_interpreter(centered, sch, {6, 333}, 1e-5, 1e-5);
    const std::string kernel = Pipeline(centered).compile_to_cuda(sch, Target("host-cuda-sm_90"));
    EXPECT_NE(kernel.find("float stats_0_[1];"), std::string::npos) << kernel;
    EXPECT_NE(kernel.find("float stats_1_[1];"), std::string::npos) << kernel;
    EXPECT_EQ(kernel.find("threadIdx.x == 0"), std::string::npos) << kernel;
}

TEST(GpuExecution, RegistersThatThreadsKeepAcrossABlockLoop) {
    REQUIRE_GPU();
    // A GEMM whose threads keep their sums in registers while the block
    // stages tiles of a and b in shared memory, step by step along k; the
    // sizes leave partial tiles in every dimension, so the last blocks'
    // thread loops are shorter than the block.
    loom_test::MatMul p;
    for (const std::vector<int> &mnk : std::vector<std::vector<int>>{{77, 45, 70}, {16, 16, 8}}) {
        p.a.set(random_buffer<float>({mnk[0], mnk[2]}));
        p.b.set(random_buffer<float>({mnk[2], mnk[1]}));
        expect_gpu_matches_interpreter(p.c, p.shared_tiles(16, 8), {mnk[0], mnk[1]}, 1e-5, 1e-5);
    }
    // Eight threads by four along the tile, and a k step that leaves a
    // partial step.
    p.a.set(random_buffer<float>({33, 21}));
    p.b.set(random_buffer<float>({21, 50}));
    expect_gpu_matches_interpreter(p.c, p.shared_tiles(8, 4), {33, 50}, 1e-5, 1e-5);
}

TEST(GpuExecution, BuffersStayOnTheGpuBetweenCalls) {
    REQUIRE_GPU();
    BufferParam in(Float(32), 2, "in");
    Var x("x"), y("y"), xo("xo"), yo("yo"), xi("xi"), yi("yi");
    Func twice("twice");
    twice(y, x) = in(y, x) * 2.0f;
    Schedule sch;
    sch[twice].gpu_tile(y, x, yo, xo, yi, xi, 8, 32);
    CompiledPipeline p = Pipeline(twice).compile(sch, kGpu);
    Buffer<float> a = random_buffer<float>({33, 65}), b({33, 65}), c({33, 65});
    p(a, b);
    p(b, c);  // b is read where the first call left it, on the GPU
    EXPECT_TRUE(b.device_dirty());
    EXPECT_EQ(c(32, 64), a(32, 64) * 4.0f);
    a(0, 0) = 3.0f;  // changed on the host: copied again
    p(a, b);
    EXPECT_EQ(b(0, 0), 6.0f);
    // A buffer of GPU memory alone (as a PyTorch tensor's would be).
    RawBuffer on_device = RawBuffer::wrap_device(Float(32), b.raw_buffer()->device, {33, 65});
    p(on_device, c);
    EXPECT_EQ(c(0, 0), 12.0f);
    EXPECT_EQ(c(20, 40), a(20, 40) * 4.0f);
}
