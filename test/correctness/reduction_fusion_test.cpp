// rolling_update and split_k on chains of reductions, against the reference
// interpreter (which evaluates the plain, unfused algorithm) with fresh
// random inputs and sizes that are not multiples of any split factor.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "test_util.h"

using namespace loom;
using namespace loom_test;

namespace {

/** A compiled pipeline's log, one note per line. */
std::string log_text(const CompiledPipeline &c) {
    std::string log;
    for (const std::string &s : c.compile_log()) log += s + "\n";
    return log;
}

/** The compile log of one schedule. */
std::string log_of(const Func &out, const Schedule &sch) {
    return log_text(Pipeline(out).compile(sch));
}

/** Softmax-weighted average of rows of v: the attention chain over given
 * scores x. */
struct WeightedAverage {
    BufferParam x{Float(32), 2, "x"}, v{Float(32), 2, "v"};
    Var i{"i"}, j{"j"}, d{"d"};
    RDom r;
    Func m{"m"}, p{"p"}, l{"l"}, o{"o"}, out{"out"};
    WeightedAverage() : r(0, x.dim(1).extent(), "r") {
        m(i) = maximum(x(i, r));
        p(i, j) = exp(x(i, j) - m(i));
        l(i) = sum(p(i, r));
        o(i, d) = sum(p(i, r) * v(r, d));
        out(i, d) = o(i, d) / l(i);
    }
    void set_inputs(int rows, int n, int dims, double scale = 4) {
        x.set(random_buffer<float>({rows, n}, -scale, scale));
        v.set(random_buffer<float>({n, dims}));
    }
    void check(const Schedule &sch, int rows, int dims, double tol = 2e-6) {
        Buffer<float> expected(interpret(out, {rows, dims}));
        Buffer<float> actual({rows, dims});
        Pipeline(out).compile(sch).realize({actual});
        EXPECT_TRUE(buffers_match(actual, expected, tol, tol));
    }
};

TEST(RollingUpdate, WeightedAverageOneStepPerPoint) {
    WeightedAverage a;
    a.set_inputs(5, 37, 6);
    Schedule sch;
    sch.rolling_update(a.o, a.r);
    sch[a.o].compute_root();
    a.check(sch, 5, 6);
}

TEST(RollingUpdate, WeightedAverageTiled) {
    for (int tile : {1, 4, 8, 64}) {
        WeightedAverage a;
        a.set_inputs(7, 53, 5);
        Schedule sch;
        RVar ro("ro"), ri("ri");
        sch.rolling_update(a.o, a.r).split(a.r, ro, ri, tile).vectorize(a.d, 4);
        sch[a.o].compute_root();
        SCOPED_TRACE("tile " + std::to_string(tile));
        a.check(sch, 7, 5);
    }
}

TEST(SplitK, CombineIsSchedulable) {
    // The combine stage takes the directives given to the Func itself.
    WeightedAverage a;
    a.set_inputs(9, 61, 13);
    Schedule sch;
    Var c("c"), io("io"), ii("ii");
    sch.split_k(a.o, a.r, 5, c).compute_root().parallel(c).vectorize(a.d, 4);
    sch[a.o].compute_root().split(a.i, io, ii, 4).parallel(io).vectorize(a.d, 8);
    a.check(sch, 9, 13);
    std::string stmt = Pipeline(a.out).compile_to_lowered_stmt(sch, Target("host"));
    EXPECT_NE(stmt.find("parallel (o.s1.io"), std::string::npos) << stmt;
}

TEST(SplitK, WeightedAverage) {
    for (int k : {1, 2, 7, 16}) {
        WeightedAverage a;
        a.set_inputs(3, 45, 4);
        Schedule sch;
        Var c("c");
        sch.split_k(a.o, a.r, k, c).compute_root().parallel(c);
        sch[a.o].compute_root();
        SCOPED_TRACE("chunks " + std::to_string(k));
        a.check(sch, 3, 4);
    }
}

TEST(SplitK, InterleavedChunks) {
    // Chunk c rolls tiles c, c + k, c + 2k, ... (points, untiled): 45 keys
    // in tiles of 4 are 12 tiles, so 16 chunks leave some empty, and 5
    // give some chunks one step fewer than others.
    for (int k : {1, 5, 16}) {
        for (int tile : {0, 4}) {
            WeightedAverage a;
            a.set_inputs(3, 45, 4);
            Schedule sch;
            Var c("c");
            Stage st = sch.split_k(a.o, a.r, k, c, ChunkLayout::Interleaved);
            if (tile) st.split(a.r, RVar("ro"), RVar("ri"), tile);
            st.compute_root().parallel(c);
            sch[a.o].compute_root();
            SCOPED_TRACE("chunks " + std::to_string(k) + ", tile " + std::to_string(tile));
            a.check(sch, 3, 4);
        }
    }
    // Step s of chunk c reads tile s * k + c.
    WeightedAverage a;
    Schedule sch;
    sch.split_k(a.o, a.r, 5, Var("c"), ChunkLayout::Interleaved)
        .split(a.r, RVar("ro"), RVar("ri"), 4)
        .compute_root();
    sch[a.o].compute_root();
    std::string stmt = Pipeline(a.out).compile_to_lowered_stmt(sch, Target("host"));
    EXPECT_NE(stmt.find("(o_partial.s1.ro * 5) + o_partial.s1.c)"), std::string::npos) << stmt;
}

TEST(SplitK, ALoneReductionIsSplitAsRfactor) {
    // A reduction that reads no other: split_k is Halide's rfactor in
    // chunks, each chunk's partial then a combine. (rolling_update of it
    // stays an error: FusionErrors.NoChainToFuse.)
    BufferParam x(Float(32), 2, "x");
    Var i("i"), c("c");
    RDom r(0, x.dim(1).extent(), "r");
    // spread reads largest over r: a reduction that reads the lone one,
    // computed after it from its result.
    Func total("total"), largest("largest"), spread("spread"), out("out");
    total(i) = sum(x(i, r) * x(i, r));
    largest(i) = maximum(x(i, r));
    spread(i) = sum(largest(i) - x(i, r));
    out(i) = total(i) + largest(i) + spread(i);
    x.set(random_buffer<float>({6, 45}, -2, 2));
    Buffer<float> expected(interpret(out, {6}));
    for (int k : {1, 5, 16}) {
        for (ChunkLayout layout : {ChunkLayout::Contiguous, ChunkLayout::Interleaved}) {
            for (int tile : {0, 4}) {
                Schedule sch;
                for (const Func &f : {total, largest}) {
                    Stage st = sch.split_k(f, r, k, c, layout);
                    if (tile) st.split(r, RVar("ro"), RVar("ri"), tile);
                    st.compute_root().parallel(c);
                    sch[f].compute_root();
                }
                sch[spread].compute_root();
                SCOPED_TRACE("chunks " + std::to_string(k) + ", tile " + std::to_string(tile) +
                             (layout == ChunkLayout::Interleaved ? ", interleaved" : ""));
                Buffer<float> actual({6});
                Pipeline(out).compile(sch).realize({actual});
                EXPECT_TRUE(buffers_match(actual, expected, 1e-5, 1e-5));
            }
        }
    }
}

TEST(SplitK, AReductionWithADirectiveOfItsOwnIsNotInAnotherChain) {
    // split_k of m and of o, which reads m (through p): each is split
    // alone (rfactor), o's chunks reading m's combined value, in either
    // order; l, which no directive names, is computed as written.
    for (bool m_first : {true, false}) {
        WeightedAverage a;
        a.set_inputs(5, 45, 3);
        Schedule sch;
        auto split_m = [&] {
            sch.split_k(a.m, a.r, 3, Var("cm")).compute_root().parallel(Var("cm"));
        };
        if (m_first) split_m();
        sch.split_k(a.o, a.r, 4, Var("c")).compute_root().parallel(Var("c"));
        if (!m_first) split_m();
        sch[a.m].compute_root();
        sch[a.o].compute_root();
        SCOPED_TRACE(m_first ? "m's directive first" : "o's directive first");
        a.check(sch, 5, 3);
        std::string log = log_of(a.out, sch);
        EXPECT_NE(log.find("each rolled into o_partial; combined into o"), std::string::npos)
            << log;
        EXPECT_NE(log.find("each rolled into m_partial; combined into m"), std::string::npos)
            << log;
    }
}

TEST(ReductionFusion, RowsSplitInTheFusedUpdate) {
    // The rows (i, a Var of every member) split into blocks of rows, the
    // last one partial, or renamed: the members' steps run where the rows'
    // loops meet, on i defined from them, under the same guard as the
    // leader's. (test/gpu fuses two Vars of rows.)
    const int rows = 13, n = 45, dims = 6;
    Var c("c"), ib("ib"), it("it");
    RVar ro("ro"), ri("ri");
    {
        WeightedAverage a;
        a.set_inputs(rows, n, dims);
        Schedule sch;
        sch.rolling_update(a.o, a.r).split(a.i, ib, it, 4).parallel(ib);
        sch[a.o].compute_root();
        SCOPED_TRACE("rolling_update, rows in blocks of 4");
        a.check(sch, rows, dims);
    }
    {
        // split(i, i, it): the outer loop takes the Var's own name.
        WeightedAverage a;
        a.set_inputs(rows, n, dims);
        Schedule sch;
        sch.rolling_update(a.o, a.r)
            .split(a.r, ro, ri, 8)
            .split(a.i, a.i, it, 4)
            .reorder(a.i, ro, it, ri, a.d)
            .vectorize(a.d, 4);
        sch[a.o].compute_root();
        SCOPED_TRACE("rolling_update tiled, outer row loop named i");
        a.check(sch, rows, dims);
    }
    {
        WeightedAverage a;
        a.set_inputs(rows, n, dims);
        Schedule sch;
        Var row("row");
        sch.rolling_update(a.o, a.r).rename(a.i, row).parallel(row);
        sch[a.o].compute_root();
        SCOPED_TRACE("rolling_update, rows renamed");
        a.check(sch, rows, dims);
    }
    for (int k : {1, 3, 8}) {
        WeightedAverage a;
        a.set_inputs(rows, n, dims);
        Schedule sch;
        sch.split_k(a.o, a.r, k, c)
            .split(a.r, ro, ri, 4)
            .split(a.i, ib, it, 4)
            .reorder(c, ib, ro, it, ri, a.d)
            .parallel(ib)
            .compute_root();
        sch[a.o].compute_root();
        SCOPED_TRACE("split_k in " + std::to_string(k) + " chunks, rows in blocks of 4");
        a.check(sch, rows, dims);
    }
}

}  // namespace

namespace {

/** A chain over the rows of x(i, r): out(i) from reductions over r. */
struct RowChain {
    BufferParam x{Float(32), 2, "x"};
    Var i{"i"}, j{"j"};
    RDom r;
    Func m{"m"}, l{"l"}, out{"out"};
    RowChain() : r(0, x.dim(1).extent(), "r") {}
    void check(const Schedule &sch, int rows, double tol = 2e-6) {
        Buffer<float> expected(interpret(out, {rows}));
        Buffer<float> actual({rows});
        Pipeline(out).compile(sch).realize({actual});
        EXPECT_TRUE(buffers_match(actual, expected, tol, tol));
    }
    /** rolling_update untiled and tiled, and split_k in 1, 2, 7, 16 chunks,
     * contiguous and interleaved (point by point and in tiles of 3). */
    void check_all_schedules(const Func &x_dependent, int rows, double tol = 2e-6) {
        for (int tile : {0, 5, 16}) {
            Schedule sch;
            Stage st = sch.rolling_update(x_dependent, r);
            if (tile) st.split(r, RVar("ro"), RVar("ri"), tile);
            SCOPED_TRACE("rolling_update, tile " + std::to_string(tile));
            check(sch, rows, tol);
        }
        for (int k : {1, 2, 7, 16}) {
            Schedule sch;
            Var c("c");
            sch.split_k(x_dependent, r, k, c).compute_root().parallel(c);
            SCOPED_TRACE("split_k " + std::to_string(k));
            check(sch, rows, tol);
            for (int tile : {0, 3}) {
                Schedule inter;
                Stage st = inter.split_k(x_dependent, r, k, c, ChunkLayout::Interleaved);
                if (tile) st.split(r, RVar("ro"), RVar("ri"), tile);
                st.compute_root().parallel(c);
                SCOPED_TRACE("interleaved, tile " + std::to_string(tile));
                check(inter, rows, tol);
            }
        }
    }
};

TEST(ReductionFusion, LogSumExp) {
    RowChain a;
    a.x.set(random_buffer<float>({6, 41}, -30, 30));
    a.m(a.i) = maximum(a.x(a.i, a.r));
    a.l(a.i) = sum(exp(a.x(a.i, a.r) - a.m(a.i)));
    a.out(a.i) = a.m(a.i) + log(a.l(a.i));
    a.check_all_schedules(a.l, 6);
}

TEST(ReductionFusion, ExpInBaseTwo) {
    RowChain a;
    a.x.set(random_buffer<float>({5, 39}, -20, 20));
    a.m(a.i) = maximum(a.x(a.i, a.r));
    a.l(a.i) = sum(pow(2.0f, a.x(a.i, a.r) - a.m(a.i)));
    a.out(a.i) = a.l(a.i);
    a.check_all_schedules(a.l, 5);
    // The repair is the base-2 rescaling, proved symbolically.
    Schedule sch;
    sch.rolling_update(a.l, a.r);
    std::string log;
    for (const std::string &s : Pipeline(a.out).compile(sch).compile_log()) log += s + "\n";
    EXPECT_NE(log.find("proved symbolically"), std::string::npos) << log;
    EXPECT_NE(log.find("t * pow_f32(2.0f, (m - m'))"), std::string::npos) << log;
}

TEST(ReductionFusion, MinProducer) {
    // A min producer and a decaying weight: sum of exp(min - x).
    RowChain a;
    a.x.set(random_buffer<float>({4, 33}, -10, 10));
    a.m(a.i) = minimum(a.x(a.i, a.r));
    a.l(a.i) = sum(exp(a.m(a.i) - a.x(a.i, a.r)));
    a.out(a.i) = a.l(a.i);
    a.check_all_schedules(a.l, 4);
}

TEST(ReductionFusion, CarriedTermCount) {
    // sum(x - max) needs how many terms a partial sum holds: the compiler
    // carries a count beside it.
    RowChain a;
    a.x.set(random_buffer<float>({5, 37}, -4, 4));
    a.m(a.i) = maximum(a.x(a.i, a.r));
    a.l(a.i) = sum(a.x(a.i, a.r) - a.m(a.i));
    a.out(a.i) = a.l(a.i);
    a.check_all_schedules(a.l, 5, 1e-5);
    Schedule sch;
    sch.rolling_update(a.l, a.r);
    std::string log = log_of(a.out, sch);
    EXPECT_NE(log.find("carrying A1 = sum of 1"), std::string::npos) << log;
}

TEST(ReductionFusion, SinglePassVariance) {
    // Variance from the sum: (x - S/n)^2 is a polynomial in S, so the repair
    // carries the sums of its coefficients (sum of x, and the count): a
    // two-pass statistic in one pass.
    RowChain a;
    a.x.set(random_buffer<float>({4, 45}, 1, 3));
    Expr n = cast<float>(a.x.dim(1).extent());
    a.m(a.i) = sum(a.x(a.i, a.r));
    Expr dev = a.x(a.i, a.r) - a.m(a.i) / n;
    a.l(a.i) = sum(dev * dev);
    a.out(a.i) = a.l(a.i) / n;
    a.check_all_schedules(a.l, 4, 2e-5);
}

TEST(ReductionFusion, TiledChainWithMaskedPrefix) {
    // Leading -inf scores: tiles with nothing unmasked so far must add
    // nothing (no exp(-inf + inf)).
    WeightedAverage a;
    const int rows = 4, n = 50, dims = 3;
    Buffer<float> x = random_buffer<float>({rows, n}, -5, 5);
    for (int i = 0; i < rows; i++) {
        for (int k = 0; k < 10 * i + 3 && k < n; k++) x(i, k) = -INFINITY;
    }
    a.x.set(x);
    a.v.set(random_buffer<float>({n, dims}));
    for (int tile : {1, 4, 8}) {
        Schedule sch;
        sch.rolling_update(a.o, a.r).split(a.r, RVar("ro"), RVar("ri"), tile);
        sch[a.o].compute_root();
        SCOPED_TRACE("tile " + std::to_string(tile));
        a.check(sch, rows, dims);
    }
    for (int k : {2, 7}) {
        for (ChunkLayout layout : {ChunkLayout::Contiguous, ChunkLayout::Interleaved}) {
            Schedule sch;
            Var c("c");
            sch.split_k(a.o, a.r, k, c, layout).compute_root();
            sch[a.o].compute_root();
            SCOPED_TRACE("split_k " + std::to_string(k) +
                         (layout == ChunkLayout::Interleaved ? ", interleaved" : ""));
            a.check(sch, rows, dims);
        }
    }
}

TEST(ReductionFusion, AChainWhoseTermsReadAnotherChain) {
    // Two softmax-weighted averages over the same rows, the second's scores
    // scaled by the first's result: the second chain's tile partials read
    // the first chain's members, which must be done before them.
    BufferParam x(Float(32), 2, "x");
    Var i("i");
    RDom r(0, x.dim(1).extent(), "r"), r2(0, x.dim(1).extent(), "r2");
    Func m1("m1"), l1("l1"), a1("a1"), avg1("avg1"), m2("m2"), l2("l2"), a2("a2"), out("out");
    m1(i) = maximum(x(i, r));
    l1(i) = sum(exp(x(i, r) - m1(i)));
    a1(i) = sum(exp(x(i, r) - m1(i)) * x(i, r));
    avg1(i) = a1(i) / l1(i);
    Expr s = x(i, r2) * avg1(i);
    m2(i) = maximum(s);
    l2(i) = sum(exp(s - m2(i)));
    a2(i) = sum(exp(s - m2(i)) * x(i, r2));
    out(i) = a2(i) / l2(i);
    x.set(random_buffer<float>({5, 37}, -2, 2));
    Buffer<float> expected(interpret(out, {5}));
    for (int tile : {0, 8}) {
        Schedule sch;
        for (auto [f, dom] : {std::pair<Func, RDom>{a1, r}, {a2, r2}}) {
            Stage st = sch.rolling_update(f, dom);
            if (tile) st.split(dom, RVar("ro"), RVar("ri"), tile);
            sch[f].compute_root();
        }
        Buffer<float> actual({5});
        Pipeline(out).compile(sch).realize({actual});
        SCOPED_TRACE("tile " + std::to_string(tile));
        EXPECT_TRUE(buffers_match(actual, expected, 1e-5, 1e-5));
    }
}

TEST(ReductionFusion, TilePartialsStartFromTheRepairedRunningValue) {
    // FlashAttention-2's form: each tile's partial of o starts from o
    // repaired to the tile's new max and accumulates the tile into it, so
    // the step only copies it back (o and the partial are never live
    // together); the test that the max is still -inf is made once per
    // tile, not at every point and element.
    WeightedAverage a;
    a.set_inputs(5, 45, 7);
    Schedule sch;
    sch.rolling_update(a.o, a.r).split(a.r, RVar("ro"), RVar("ri"), 8).vectorize(a.d, 4);
    sch[a.o].compute_root();
    a.check(sch, 5, 7);
    std::string stmt = Pipeline(a.out).compile_to_lowered_stmt(sch);
    size_t produce = stmt.find("produce o_tile"), points = stmt.find("for (o_tile.s1.ri");
    size_t consume = stmt.find("consume o_tile");
    ASSERT_NE(produce, std::string::npos) << stmt;
    ASSERT_NE(points, std::string::npos) << stmt;
    ASSERT_NE(consume, std::string::npos) << stmt;
    size_t test = stmt.find("-inf", produce);
    EXPECT_LT(stmt.find("exp_f32", produce), points) << "the repair, in the partial's start";
    EXPECT_LT(test, points) << stmt;
    EXPECT_GT(stmt.find("-inf", points), consume) << "no test at the points: " << stmt;
    size_t step_end = stmt.find("\n", stmt.find("o_tile[", consume));
    EXPECT_EQ(stmt.substr(consume, step_end - consume).find("exp_f32"), std::string::npos)
        << "the step copies the partial: " << stmt;
}

}  // namespace

namespace {

TEST(ReductionFusion, TilesOutsideTheMaskAreSkipped) {
    // A banded mask, key j allowed for row i when i - w < j <= i + lag:
    // most tiles of a row hold no allowed key. Every term of the chain
    // vanishes there (exp(-inf - m) = 0), so the compiler skips those tiles
    // whole; the results must not change.
    BufferParam x(Float(32), 2, "x"), v(Float(32), 2, "v");
    Param<int> lag("lag"), w("w");
    Var i("i"), j("j"), d("d");
    RDom r(0, x.dim(1).extent(), "r");
    Func s("s"), m("m"), p("p"), l("l"), o("o"), out("out");
    s(i, j) = select(j <= i + lag && j > i - w, x(i, j), -std::numeric_limits<float>::infinity());
    m(i) = maximum(s(i, r));
    p(i, j) = exp(s(i, j) - m(i));
    l(i) = sum(p(i, r));
    o(i, d) = sum(p(i, r) * v(r, d));
    out(i, d) = select(l(i) > 0, o(i, d) / l(i), 0.0f);
    const int rows = 37, n = 61, dims = 3;
    x.set(random_buffer<float>({rows, n}, -4, 4));
    v.set(random_buffer<float>({n, dims}));
    // lag -3 leaves rows 0..2 with no key at all (defined as 0); w 1 leaves
    // one key per row.
    for (auto [lag_value, w_value] : {std::pair{0, 9}, {-3, 1}, {5, 100}}) {
        lag.set(lag_value);
        w.set(w_value);
        Buffer<float> expected(interpret(out, {rows, dims}));
        auto check = [&](const Schedule &sch, const std::string &what) {
            SCOPED_TRACE(what + ", lag " + std::to_string(lag_value) + ", w " +
                         std::to_string(w_value));
            Buffer<float> actual({rows, dims});
            Pipeline(out).compile(sch).realize({actual});
            EXPECT_TRUE(buffers_match(actual, expected, 2e-6, 2e-6));
            std::string log = log_of(out, sch);
            EXPECT_NE(log.find("tiles where it holds for no row are skipped"), std::string::npos)
                << log;
        };
        for (int tile : {1, 4, 16}) {
            Schedule sch;
            Var io("io"), ii("ii");
            sch[out].split(i, io, ii, 8);
            sch.rolling_update(o, r).split(r, RVar("ro"), RVar("ri"), tile);
            sch[o].compute_at(out, io);
            check(sch, "rolling_update, tile " + std::to_string(tile));
        }
        for (int k : {2, 7}) {
            Schedule sch;
            Var c("c");
            sch.split_k(o, r, k, c).split(r, RVar("ro"), RVar("ri"), 4).compute_root();
            sch[o].compute_root();
            check(sch, "split_k " + std::to_string(k));
            Schedule inter;
            inter.split_k(o, r, k, c, ChunkLayout::Interleaved)
                .split(r, RVar("ro"), RVar("ri"), 4)
                .compute_root();
            inter[o].compute_root();
            check(inter, "split_k " + std::to_string(k) + ", interleaved");
        }
    }
    // The test is on the tile loop: its whole body, the Funcs computed per
    // tile included, sits under it.
    Schedule sch;
    sch.rolling_update(o, r).split(r, RVar("ro"), RVar("ri"), 16);
    sch[o].compute_root();
    sch[s].compute_at(o, RVar("ro"));
    std::string stmt = Pipeline(out).compile_to_lowered_stmt(sch);
    size_t loop = stmt.find("for (o.s1.ro");
    ASSERT_NE(loop, std::string::npos) << stmt;
    size_t test = stmt.find("if (", loop), produce_s = stmt.find("produce s", loop);
    EXPECT_LT(test, produce_s) << stmt;
}

TEST(ReductionFusion, OnlineTopOneCarryingAValue) {
    // The top-1 score, the value it carries, and its first index, in one
    // pass: the dependents count only terms attaining the running max, and
    // forget them when it moves (a reset repair).
    BufferParam x(Float(32), 2, "x"), v(Float(32), 2, "v");
    Var i("i");
    RDom r(0, x.dim(1).extent(), "r");
    Func m("m"), val("val"), idx("idx"), out("out");
    m(i) = maximum(x(i, r));
    val(i) = maximum(select(x(i, r) == m(i), v(i, r), -INFINITY));
    idx(i) = minimum(select(x(i, r) == m(i), Expr(r), x.dim(1).extent()));
    out(i) = val(i) * 1000.0f + cast<float>(idx(i));
    const int rows = 9, n = 47;
    // Few distinct scores, so that ties (several keys attaining the max)
    // happen and the first index must win.
    Buffer<float> xs = random_buffer<float>({rows, n}, 0, 6);
    for (int y = 0; y < rows; y++) {
        for (int k = 0; k < n; k++) xs(y, k) = std::floor(xs(y, k));
    }
    x.set(xs);
    Buffer<float> vs = random_buffer<float>({rows, n});
    v.set(vs);
    Buffer<float> expected(interpret(out, {rows}));
    // Plain C++ too: the interpreter runs the same algorithm.
    for (int y = 0; y < rows; y++) {
        int best = 0;
        for (int k = 1; k < n; k++) best = xs(y, k) > xs(y, best) ? k : best;
        float carried = -INFINITY;
        for (int k = 0; k < n; k++) {
            if (xs(y, k) == xs(y, best)) carried = std::max(carried, vs(y, k));
        }
        ASSERT_EQ(expected(y), carried * 1000.0f + best);
    }
    auto check = [&](const Schedule &sch, const std::string &what) {
        Buffer<float> actual({rows});
        CompiledPipeline c = Pipeline(out).compile(sch);
        c.realize({actual});
        EXPECT_TRUE(buffers_match(actual, expected)) << what;
        return c;
    };
    for (int tile : {0, 4, 16}) {
        Schedule sch;
        Stage st = sch.rolling_update(val, r);
        if (tile) st.split(r, RVar("ro"), RVar("ri"), tile);
        CompiledPipeline c = check(sch, "rolling_update, tile " + std::to_string(tile));
        std::string log = log_text(c);
        EXPECT_NE(log.find("reset repair"), std::string::npos) << log;
        EXPECT_NE(log.find("computes val idx m"), std::string::npos) << log;
    }
    for (int k : {1, 2, 7, 16}) {
        Schedule sch;
        sch.split_k(val, r, k, Var("c")).compute_root();
        check(sch, "split_k " + std::to_string(k));
    }
}

}  // namespace

namespace {

TEST(ReductionFusion, TupleStates) {
    // A Tuple-valued producer, argmax's (index, value), read by a softmax
    // denominator; and a Tuple-valued dependent holding two sums. Each
    // Tuple's elements become reductions of their own (argmax's index a
    // dependent of its value), fused like any other chain: greedy decoding's
    // top-1 token and its probability, in one pass.
    BufferParam x(Float(32), 2, "x"), w(Float(32), 2, "w");
    Var i("i");
    RDom r(0, x.dim(1).extent(), "r");
    Func top("top"), sums("sums"), out("out");
    top(i) = argmax(x(i, r));
    sums(i) = Tuple(0.0f, 0.0f);
    Expr p = exp(x(i, r) - top(i)[1]);
    sums(i) = Tuple(sums(i)[0] + p, sums(i)[1] + p * w(i, r));
    // index + probability of the top-1 + softmax-weighted mean of w / 10
    out(i) = cast<float>(top(i)[0]) + 1.0f / sums(i)[0] + sums(i)[1] / sums(i)[0] / 10.0f;
    const int rows = 7, n = 45;
    Buffer<float> xs = random_buffer<float>({rows, n}, 0, 8);
    for (int y = 0; y < rows; y++) {
        for (int k = 0; k < n; k++) xs(y, k) = std::floor(xs(y, k));  // ties: first index wins
    }
    x.set(xs);
    w.set(random_buffer<float>({rows, n}));
    Buffer<float> expected(interpret(out, {rows}));
    auto check = [&](const Schedule &sch, const std::string &what) {
        Buffer<float> actual({rows});
        CompiledPipeline c = Pipeline(out).compile(sch);
        c.realize({actual});
        EXPECT_TRUE(buffers_match(actual, expected, 2e-6, 2e-6)) << what;
        return c;
    };
    for (int tile : {0, 8}) {
        Schedule sch;
        Stage st = sch.rolling_update(sums, r);
        if (tile) st.split(r, RVar("ro"), RVar("ri"), tile);
        CompiledPipeline c = check(sch, "rolling_update, tile " + std::to_string(tile));
        std::string log = log_text(c);
        EXPECT_NE(log.find("Tuple reduction sums is computed as sums_0, sums_1"), std::string::npos)
            << log;
        EXPECT_NE(log.find("reset repair"), std::string::npos) << log;  // argmax's index
    }
    for (int k : {1, 2, 7, 16}) {
        Schedule sch;
        sch.split_k(sums, r, k, Var("c")).compute_root();
        check(sch, "split_k " + std::to_string(k));
    }
}

TEST(ReductionFusion, SplitKVectorizesAnArgmax) {
    // split_k with interleaved chunks, vectorized over the chunks, gives
    // each lane a running max and index of its own, over points c,
    // c + lanes, ..., and the combine keeps the first index of the row's
    // max, as the serial loop does (as vectorize on the RVar itself does,
    // Schedule.VectorizingAnUpdateThatKeepsAPoint, by other means). Rows
    // of whole numbers tie often; 45 and 3 points leave ragged tails, and 5
    // points fewer than 8 lanes, empty ones.
    BufferParam x(Float(32), 2, "x");
    Var i("i"), c("c");
    RDom r(0, x.dim(1).extent(), "r");
    Func top("top"), out("out");
    top(i) = Tuple(0, type_min(Float(32)));
    Expr beats = x(i, r) > top(i)[1];
    top(i) = Tuple(select(beats, Expr(r), top(i)[0]), select(beats, x(i, r), top(i)[1]));
    out(i) = Tuple(top(i)[0], top(i)[1]);
    for (int lanes : {4, 8}) {
        Schedule sch;
        sch.split_k(top, r, lanes, c, ChunkLayout::Interleaved).vectorize(c).compute_root();
        if (lanes == 4) sch[top].compute_at(out, i);
        CompiledPipeline compiled = Pipeline(out).compile(sch);
        for (int n : {45, 3, 5}) {
            const int rows = 9;
            Buffer<float> xs = random_buffer<float>({rows, n}, 0, 6);
            for (int y = 0; y < rows; y++) {
                for (int k = 0; k < n; k++) xs(y, k) = std::floor(xs(y, k));
            }
            x.set(xs);
            std::vector<RawBuffer> expected = interpret_tuple(out, {rows});
            Buffer<int32_t> index({rows});
            Buffer<float> value({rows});
            compiled.realize({index, value});
            EXPECT_TRUE(buffers_match(index, expected[0])) << lanes << " lanes, " << n << " points";
            EXPECT_TRUE(buffers_match(value, expected[1])) << lanes << " lanes, " << n << " points";
        }
        // The partials' update is vector code, not lane by lane.
        EXPECT_NE(Pipeline(out).compile_to_lowered_stmt(sch).find("ramp("), std::string::npos);
    }
    // Unplaced, the Tuple's elements are still computed together: where only
    // the index is read, the combined max once per row, before the index's
    // combine over the chunks reads it (not once per chunk inside that
    // loop, where the reads alone would put it).
    Func index("index");
    index(i) = top(i)[0];
    Schedule sch;
    sch.split_k(top, r, 8, c, ChunkLayout::Interleaved).vectorize(c).compute_root();
    const std::string stmt = Pipeline(index).compile_to_lowered_stmt(sch);
    EXPECT_LT(stmt.find("produce top_1 {"), stmt.find("produce top_0 {")) << stmt;
    x.set(random_buffer<float>({9, 45}, 0, 6));
    Buffer<int32_t> got({9});
    Pipeline(index).compile(sch).realize({got});
    EXPECT_TRUE(buffers_match(got, interpret(index, {9})));
}

}  // namespace

TEST(ReductionFusion, EveryDirectiveWithNoFurtherScheduling) {
    // What a new user writes first: the directive alone. The chains' other
    // Funcs, the partials and the combines take their default places.
    BufferParam x(Float(32), 2, "x"), v(Float(32), 2, "v");
    BufferParam target(Int(32), 1, "target");
    Var i("i"), d("d");
    RDom r(0, x.dim(1).extent(), "r");
    x.set(random_buffer<float>({5, 43}, -6, 6));
    v.set(random_buffer<float>({43, 3}));
    Buffer<int32_t> t({5});
    t.fill([](const std::vector<int> &c) { return (c[0] * 7) % 43; });
    target.set(t);
    struct Chain {
        std::string name;
        Func out, reduction;
        std::vector<int> shape;
    };
    std::vector<Chain> chains;
    {
        Func m("m"), l("l"), out("log_softmax");
        m(i) = maximum(x(i, r));
        l(i) = sum(exp(x(i, r) - m(i)));
        out(i, d) = x(i, d) - m(i) - log(l(i));
        chains.push_back({"log-softmax", out, l, {5, 43}});
    }
    {
        Func m("m"), l("l"), out("cross_entropy");
        m(i) = maximum(x(i, r));
        l(i) = sum(exp(x(i, r) - m(i)));
        out(i) = m(i) + log(l(i)) - x(i, clamp(target(i), 0, 42));
        chains.push_back({"cross-entropy", out, l, {5}});
    }
    {
        Func m("m"), l("l"), o("o"), out("average");
        m(i) = maximum(x(i, r));
        l(i) = sum(exp(x(i, r) - m(i)));
        o(i, d) = sum(exp(x(i, r) - m(i)) * v(r, d));
        out(i, d) = o(i, d) / l(i);
        chains.push_back({"softmax-weighted average", out, o, {5, 3}});
    }
    {
        Func s("s"), l("l"), out("variance");
        Expr n = cast<float>(x.dim(1).extent());
        s(i) = sum(x(i, r));
        l(i) = sum((x(i, r) - s(i) / n) * (x(i, r) - s(i) / n));
        out(i) = l(i) / n;
        chains.push_back({"variance", out, l, {5}});
    }
    for (const Chain &c : chains) {
        Buffer<float> expected(interpret(c.out, c.shape));
        for (int k = 0; k < 5; k++) {
            Schedule sch;
            Var chunk("c");
            const char *what[] = {"rolling_update", "rolling_update in tiles of 8", "split_k 7",
                                  "split_k 7 interleaved", "split_k 4 in tiles of 5"};
            if (k == 0) sch.rolling_update(c.reduction, r);
            if (k == 1) sch.rolling_update(c.reduction, r).split(r, RVar("ro"), RVar("ri"), 8);
            if (k == 2) sch.split_k(c.reduction, r, 7, chunk);
            if (k == 3) sch.split_k(c.reduction, r, 7, chunk, ChunkLayout::Interleaved);
            if (k == 4) sch.split_k(c.reduction, r, 4, chunk).split(r, RVar("ro"), RVar("ri"), 5);
            SCOPED_TRACE(c.name + ", " + what[k]);
            Buffer<float> actual(c.shape);
            Pipeline(c.out).compile(sch).realize({actual});
            EXPECT_TRUE(buffers_match(actual, expected, 2e-5, 2e-5));
        }
    }
}

TEST(ReductionFusion, InlineReductionsOverAnRDomWithAPredicate) {
    // maximum() and sum() over one RDom whose where() reads the row (a
    // causal mask) share that RDom after lowering, so they form a chain.
    BufferParam x(Float(32), 2, "x");
    Var i("i");
    RDom r(0, x.dim(1).extent(), "r");
    r.where(r <= i);
    Func m("m"), l("l"), out("out");
    m(i) = maximum(x(i, r));
    l(i) = sum(exp(x(i, r) - m(i)));
    out(i) = m(i) + log(l(i));
    x.set(random_buffer<float>({9, 9}, -5, 5));
    Buffer<float> expected(interpret(out, {9}));
    for (int tile : {0, 4}) {
        Schedule sch;
        Stage st = sch.rolling_update(l, r);
        if (tile) st.split(r, RVar("ro"), RVar("ri"), tile);
        SCOPED_TRACE("tile " + std::to_string(tile));
        std::string log = log_of(out, sch);
        EXPECT_NE(log.find("one loop over"), std::string::npos) << log;
        Buffer<float> actual({9});
        Pipeline(out).compile(sch).realize({actual});
        EXPECT_TRUE(buffers_match(actual, expected, 1e-5, 1e-5));
    }
}
