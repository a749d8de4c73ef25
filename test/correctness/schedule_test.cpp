// Every scheduling directive, compiled through the JIT and compared with the
// reference interpreter on fresh random inputs and sizes that are not
// multiples of the split factors.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "test_util.h"

using namespace loom;
using loom_test::buffers_match;
using loom_test::random_buffer;

namespace {

// Runs `out` under `sch` and under the interpreter, and compares.
void check_schedule(const Func &out, const Schedule &sch, const std::vector<int> &sizes,
                    double tol = 1e-6) {
    RawBuffer expected = interpret(out, sizes);
    RawBuffer actual = Pipeline(out).realize(sizes, sch);
    EXPECT_TRUE(buffers_match(actual, expected, tol, tol))
        << Pipeline(out).compile_to_lowered_stmt(sch);
}

struct Blur {
    BufferParam in{Float(32), 2, "in"};
    Var y{"y"}, x{"x"};
    Func bx{"bx"}, by{"by"};
    Blur() {
        bx(y, x) = (in(y, x) + in(y, x + 1) + in(y, x + 2)) / 3.0f;
        by(y, x) = (bx(y, x) + bx(y + 1, x) + bx(y + 2, x)) / 3.0f;
    }
    void bind(int h, int w) { in.set(random_buffer<float>({h + 2, w + 2})); }
};

}  // namespace

TEST(Schedule, DefaultInlinesEverything) {
    Blur b;
    b.bind(37, 53);
    check_schedule(b.by, Schedule(), {37, 53});
}

TEST(Schedule, StoreInStackOrHeap) {
    // A small per-row tile forced to the heap, a large root Func forced to
    // the stack would not fit: Stack applies to constant sizes only and
    // falls back to the heap otherwise. Results do not change.
    for (MemoryType m : {MemoryType::Stack, MemoryType::Heap, MemoryType::Global}) {
        Blur b;
        b.bind(19, 35);
        Schedule s;
        s[b.bx].compute_at(b.by, b.y).store_in(m);
        check_schedule(b.by, s, {19, 35});
        std::string stmt = Pipeline(b.by).compile_to_lowered_stmt(s);
        if (m != MemoryType::Global) {
            EXPECT_NE(stmt.find(m == MemoryType::Stack ? "in Stack" : "in Heap"), std::string::npos)
                << stmt;
        }
    }
}

TEST(Schedule, InputWrapperCopiesTheRegionEachLoopNeeds) {
    // Schedule::in: reads of `in` go through in_in, here a copy of the rows
    // a tile needs (its rows plus the stencil's two), made per tile. Not
    // scheduled, the wrapper is inlined and changes nothing.
    Blur b;
    Var yo("yo"), yi("yi"), xo("xo"), xi("xi");
    b.bind(45, 77);
    Schedule inlined;
    inlined.in(b.in, {b.y, b.x});
    check_schedule(b.by, inlined, {45, 77});
    Schedule sch;
    sch[b.by].tile(b.y, b.x, yo, xo, yi, xi, 8, 16);
    sch[b.bx].compute_at(b.by, xo);
    sch.in(b.in, {b.y, b.x}).compute_at(b.by, xo).vectorize(b.x, 4);
    // The same Stage when asked again with the same Vars.
    sch.in(b.in, {b.y, b.x}).unroll(b.y, 2);
    check_schedule(b.by, sch, {45, 77});
    const std::string stmt = Pipeline(b.by).compile_to_lowered_stmt(sch);
    EXPECT_NE(stmt.find("produce in_in"), std::string::npos) << stmt;
    // A Schedule may wrap an input that the pipeline does not read.
    BufferParam unused(Float(32), 2, "unused");
    sch.in(unused, {b.y, b.x}).compute_root();
    check_schedule(b.by, sch, {45, 77});
}

TEST(Schedule, ComputeRoot) {
    Blur b;
    b.bind(23, 41);
    Schedule s;
    s[b.bx].compute_root();
    check_schedule(b.by, s, {23, 41});
}

TEST(Schedule, SplitEachTailStrategy) {
    for (TailStrategy tail : {TailStrategy::Auto, TailStrategy::GuardWithIf,
                              TailStrategy::ShiftInwards, TailStrategy::RoundUp}) {
        Blur b;
        b.bind(19, 45);
        // RoundUp computes bx up to a multiple of 8 columns, reading that far
        // into the input: give it the room.
        if (tail == TailStrategy::RoundUp) b.in.set(random_buffer<float>({19 + 2, 45 + 2 + 8}));
        Schedule s;
        Var xo("xo"), xi("xi");
        s[b.bx].compute_root().split(b.x, xo, xi, 8, tail);
        if (tail != TailStrategy::RoundUp) s[b.by].split(b.x, xo, xi, 7, tail);
        check_schedule(b.by, s, {19, 45});
    }
}

TEST(Schedule, ParamsThatOnlyTheScheduleUsesAreArguments) {
    // A split factor and a split_k chunk count chosen at run time: the
    // algorithm never reads these Params, the loop nest does.
    Blur b;
    b.bind(19, 45);
    Param<int> tile("tile");
    Schedule s;
    Var xo("xo"), xi("xi");
    s[b.bx].compute_root().split(b.x, xo, xi, tile);
    s[b.by].split(b.y, xo, xi, tile + 2);
    for (int t : {1, 4, 7, 64}) {
        tile.set(t);
        check_schedule(b.by, s, {19, 45});
    }

    BufferParam in(Float(32), 2, "in");
    Param<int> pieces("pieces");
    Var x("x"), c("c");
    RDom r(0, in.dim(1).extent(), "r");
    Func m("m"), e("e");
    m(x) = maximum(in(x, r));
    e(x) = sum(exp(in(x, r) - m(x)));
    Schedule sk;
    sk.split_k(e, r, pieces, c).compute_root();
    in.set(random_buffer<float>({5, 23}));
    for (int k : {1, 3, 23, 40}) {
        pieces.set(k);
        check_schedule(e, sk, {5}, 1e-5);
    }
}

TEST(Schedule, SplitsMayReuseTheOldName) {
    // As in Halide, split(x, x, xi, 8) names the outer loop after what it
    // splits; the guard and the arithmetic still use the old variable's
    // bounds, not the new loop's.
    Blur b;
    b.bind(19, 1000);
    Var xi("xi"), v("v"), xo("xo");
    {
        Schedule s;
        s[b.bx].compute_root().split(b.x, b.x, xi, 8);
        s[b.by].split(b.x, xo, xi, 512).split(xi, xi, v, 4).vectorize(v);
        check_schedule(b.by, s, {19, 1000});
    }
    {
        Schedule s;
        // The inner loop may take the name too; compute_at finds it.
        s[b.by].split(b.x, xi, b.x, 7, TailStrategy::ShiftInwards);
        s[b.bx].compute_at(b.by, b.x);
        check_schedule(b.by, s, {19, 1000});
    }
    BufferParam A(Float(32), 2, "A"), B(Float(32), 2, "B");
    Var i("i"), j("j");
    RDom k(0, A.dim(1).extent(), "k");
    RVar ki("ki");
    Func C("C");
    C(i, j) = 0.0f;
    C(i, j) += A(i, k) * B(k, j);
    A.set(random_buffer<float>({21, 13}));
    B.set(random_buffer<float>({13, 35}));
    Schedule s;
    s[C].update().split(k, k, ki, 4).split(j, j, xi, 8);
    check_schedule(C, s, {21, 35}, 1e-5);
}

TEST(Schedule, ReorderFuseTile) {
    Blur b;
    b.bind(29, 31);
    Schedule s;
    Var yo("yo"), xo("xo"), yi("yi"), xi("xi"), t("t");
    s[b.bx].compute_root().reorder(b.x, b.y);
    s[b.by].tile(b.y, b.x, yo, xo, yi, xi, 8, 5).fuse(yo, xo, t).parallel(t);
    check_schedule(b.by, s, {29, 31});
}

TEST(Schedule, ComputeAtTileAndStoreRoot) {
    Blur b;
    b.bind(33, 70);
    Var yo("yo"), xo("xo"), yi("yi"), xi("xi");
    {
        Schedule s;
        s[b.by].tile(b.y, b.x, yo, xo, yi, xi, 8, 16);
        s[b.bx].compute_at(b.by, xo);
        check_schedule(b.by, s, {33, 70});
    }
    {
        Schedule s;
        s[b.by].split(b.y, yo, yi, 4);
        s[b.bx].store_root().compute_at(b.by, yo);
        check_schedule(b.by, s, {33, 70});
    }
}

TEST(Schedule, RenameAndSerial) {
    Blur b;
    b.bind(12, 20);
    Schedule s;
    Var col("col"), xo("xo"), xi("xi");
    s[b.by].rename(b.x, col).split(col, xo, xi, 3).parallel(xo).serial(xo);
    check_schedule(b.by, s, {12, 20});
}

TEST(Schedule, VectorizeAndUnroll) {
    Blur b;
    b.bind(17, 61);
    Schedule s;
    Var yo("yo"), yi("yi");
    s[b.bx].compute_root().vectorize(b.x, 8);
    s[b.by].split(b.y, yo, yi, 3).unroll(yi).vectorize(b.x, 16).parallel(yo);
    check_schedule(b.by, s, {17, 61});
}

TEST(Schedule, SplittingAMarkedLoopKeepsItsMarking) {
    // A loop spread over tasks (or blocks, or threads) keeps that on the
    // outer loop of a split, each task running the inner one serially; a
    // vectorized or unrolled loop keeps it on the inner one. So
    // parallel(y) then split(y, ...) still runs the rows' chunks in
    // parallel, and vectorize(x, n) after gpu_threads(x) gives each thread
    // a vector.
    Blur b;
    b.bind(37, 70);
    Schedule s;
    Var yo("yo"), yi("yi"), yj("yj"), xo("xo"), xi("xi");
    s[b.by].parallel(b.y).split(b.y, yo, yi, 4).unroll(yi).split(yi, yi, yj, 2);
    s[b.by].vectorize(b.x).split(b.x, xo, xi, 8);
    EXPECT_NE(s[b.by].dump().find("parallel(yo) for(yi) unrolled(yj) for(xo) vectorized(xi)"),
              std::string::npos)
        << s[b.by].dump();
    check_schedule(b.by, s, {37, 70});

    Schedule gpu;
    gpu[b.by].gpu_tile(b.y, b.x, yo, xo, yi, xi, 4, 64).vectorize(xi, 4);
    EXPECT_NE(gpu[b.by].dump().find("gpu_block(yo) gpu_block(xo) gpu_thread(yi) gpu_thread(xi) "
                                    "vectorized(xi_i)"),
              std::string::npos)
        << gpu[b.by].dump();
}

TEST(Schedule, VectorizeEmitsSimd) {
    Blur b;
    b.bind(16, 64);
    Schedule s;
    s[b.by].vectorize(b.x, 8);
    CompiledPipeline c = Pipeline(b.by).compile(s);
    EXPECT_NE(c.assembly().find("ymm"), std::string::npos) << c.assembly();
    RawBuffer expected = interpret(b.by, {16, 64});
    RawBuffer out(Float(32), {16, 64});
    c.realize({out});
    EXPECT_TRUE(buffers_match(out, expected, 1e-6, 1e-6));
}

TEST(Schedule, MatmulUpdateSchedules) {
    BufferParam A(Float(32), 2, "A"), B(Float(32), 2, "B");
    Var i("i"), j("j");
    RDom k(0, A.dim(1).extent(), "k");
    Func C("C");
    C(i, j) = 0.0f;
    C(i, j) += A(i, k) * B(k, j);
    A.set(random_buffer<float>({21, 13}));
    B.set(random_buffer<float>({13, 35}));
    Var jo("jo"), ji("ji");
    check_schedule(C, Schedule(), {21, 35}, 1e-5);
    Schedule s;
    s[C].vectorize(j, 8).parallel(i);
    s[C].update().split(j, jo, ji, 8).reorder(i, jo, k, ji).vectorize(ji).parallel(i);
    check_schedule(C, s, {21, 35}, 1e-5);
}

TEST(Schedule, ReductionsThatCommuteVisitTheirDomainInAnyOrder) {
    // An update that combines its point with + - * min max && || (a sum, a
    // max, a histogram) gives the same result in any order, so its RVars
    // may be reordered, split and interleaved with its Vars, as in Halide.
    // (ScheduleErrors.ReorderingRVarsChangesMeaning: the others may not.)
    BufferParam in(Float(32), 3, "in");
    BufferParam bins(Int(32), 2, "bins");
    Var x("x");
    RDom r({{0, 6}, {0, 9}}, "r");
    RVar ro("ro"), ri("ri");
    Func sum("sum"), drop("drop"), peak("peak"), hist("hist"), all_positive("all_positive");
    sum(x) = 0.0f;
    sum(x) += in(x, r.y, r.x);
    drop(x) = 1.0f;
    drop(x) = drop(x) - in(x, r.y, r.x);
    peak(x) = -1.0f;
    peak(x) = max(in(x, r.y, r.x) * 2.0f, peak(x));
    hist(x) = 0;
    hist(clamp(bins(r.y, r.x), 0, 7)) += 1;
    all_positive(x) = true;
    all_positive(x) = in(x, r.y, r.x) > -0.9f && all_positive(x);
    in.set(random_buffer<float>({11, 9, 6}));
    bins.set(random_buffer<int32_t>({9, 6}, -1, 9));
    for (Func *f : {&sum, &drop, &peak, &hist, &all_positive}) {
        SCOPED_TRACE(f->name());
        const int n = f->name() == "hist" ? 8 : 11;
        Schedule swapped;
        swapped[*f].update().reorder(r.y, r.x);
        check_schedule(*f, swapped, {n}, 1e-5);
        // The domain's inner RVar split, its inner part outermost, and x
        // (which the histogram's update has not) inside it all.
        Schedule interleaved;
        Stage update = interleaved[*f].update().split(r.x, ro, ri, 4);
        if (f == &hist) update.reorder(ri, r.y, ro);
        else update.reorder(ri, r.y, ro, x);
        check_schedule(*f, interleaved, {n}, 1e-5);
    }
}

TEST(Schedule, InlineReductionsDefaultPlacement) {
    BufferParam in(Float(32), 2, "in");
    Var r("r"), c("c");
    RDom k(0, in.dim(1).extent(), "k");
    Func rowmax("rowmax"), e("e"), norm("norm");
    rowmax(r) = maximum(in(r, k));
    e(r, c) = exp(in(r, c) - rowmax(r));
    norm(r, c) = e(r, c) / sum(e(r, k));
    in.set(random_buffer<float>({9, 27}, -3, 3));
    check_schedule(norm, Schedule(), {9, 27}, 1e-5);
    Schedule s;
    s[rowmax].compute_root().parallel(r);
    s[norm].vectorize(c, 8);
    check_schedule(norm, s, {9, 27}, 1e-5);
}

TEST(Schedule, InlineReductionInsideVectorLoopIsVectorized) {
    // A sum() whose value differs along the consumer's vectorized loop is
    // computed inside that loop, one copy per lane, so its serial loop over
    // the RDom runs once for all lanes on vectors (as in Halide). The sizes
    // leave a ragged tail, where the copies of the lanes past the end are
    // computed but never stored.
    BufferParam a(Float(32), 2, "a"), b(Float(32), 2, "b");
    Var i("i"), j("j"), jo("jo"), ji("ji");
    RDom e(0, a.dim(1).extent(), "e");
    Func dot("dot");
    dot(i, j) = sum(a(i, e) * b(j, e)) * 0.5f;
    a.set(random_buffer<float>({5, 19}));
    b.set(random_buffer<float>({29, 19}));
    Schedule s;
    s[dot].split(j, jo, ji, 8).vectorize(ji);
    check_schedule(dot, s, {5, 29}, 1e-5);
    std::string stmt = Pipeline(dot).compile_to_lowered_stmt(s);
    // The reduction's update is a vector statement: its accumulator is read
    // and written as 8 lanes, inside the serial loop over e.
    EXPECT_NE(stmt.find("for (sum"), std::string::npos) << stmt;
    EXPECT_NE(stmt.find("ramp("), std::string::npos) << stmt;
    size_t loop = stmt.find("for (sum");
    ASSERT_NE(loop, std::string::npos);
    std::string update = stmt.substr(loop, stmt.find('}', loop) - loop);
    EXPECT_NE(update.find("x8("), std::string::npos) << update;
    // Each lane's accumulator is one element, so every access to it, the
    // consumer's read included, is the dense ramp(0, 1, 8), not a gather.
    auto count = [&](const std::string &needle) {
        size_t n = 0;
        for (size_t p = stmt.find(needle); p != std::string::npos; p = stmt.find(needle, p + 1))
            n++;
        return n;
    };
    // (The inline reduction's name is numbered by how many the process has
    // made: sum$0 when this test runs alone.)
    const size_t named = stmt.find("allocate sum$");
    ASSERT_NE(named, std::string::npos) << stmt;
    const std::string accumulator = stmt.substr(named + 9, stmt.find('[', named) - named - 9);
    size_t accesses = count(accumulator + "[") - count("allocate " + accumulator + "[");
    EXPECT_GT(accesses, 0u) << stmt;
    EXPECT_EQ(accesses, count(accumulator + "[ramp(0, 1, 8)]")) << stmt;
}

TEST(Schedule, VectorizedRVarCombinesTheLanesOfEachVector) {
    // Vectorizing the RVar of an associative update (a sum, a product, a
    // min or max, && or ||) makes each vector of its iterations combine its
    // lanes (a VectorReduce) and update the element once. The extents leave
    // a ragged tail, where the lanes past the end contribute the operator's
    // identity; one is smaller than a single vector.
    for (int n : {45, 5, 16}) {
        BufferParam in(Float(32), 2, "in"), ints(Int(32), 2, "ints");
        Var i("i");
        RDom k(0, in.dim(1).extent(), "k");
        Func total("total"), prod("prod"), lo("lo"), hi("hi"), any("any"), all("all"), out("out");
        total(i) = 0.0f;
        total(i) += in(i, k);
        prod(i) = 1;
        prod(i) *= ints(i, k) * 2 - 1;  // -1 or 1: a lane taken as 0 would flip it
        lo(i) = 1e30f;
        lo(i) = min(lo(i), in(i, k));
        hi(i) = ints(i, 0);
        hi(i) = max(hi(i), ints(i, k));
        any(i) = in(i, 0) > 5.0f;
        any(i) = any(i) || in(i, k) > 0.9f;
        all(i) = in(i, 0) < 5.0f;
        all(i) = all(i) && in(i, k) > -0.9f;
        out(i) = total(i) + cast<float>(prod(i) + hi(i)) + lo(i) * 10.0f +
                 select(any(i), 100.0f, 0.0f) + select(all(i), 1000.0f, 0.0f);
        in.set(random_buffer<float>({7, n}));
        ints.set(random_buffer<int32_t>({7, n}, 0, 2));
        Schedule s;
        int width = 8;
        for (const Func &f : {total, prod, lo, hi, any, all}) {
            s[f].compute_root();
            s[f].update().vectorize(k, width);
            width = width == 8 ? 4 : 8;
        }
        check_schedule(out, s, {7}, 1e-5);
        std::string stmt = Pipeline(out).compile_to_lowered_stmt(s);
        for (const char *reduce :
             {"vector_reduce_add(", "vector_reduce_mul(", "vector_reduce_min(",
              "vector_reduce_max(", "vector_reduce_or(", "vector_reduce_and("}) {
            EXPECT_NE(stmt.find(reduce), std::string::npos) << reduce << "\n" << stmt;
        }
    }
}

TEST(Schedule, VectorizedRVarUnderWhereAndInnerLoops) {
    // The points where() leaves out are masked lanes, which contribute
    // nothing; an RVar vectorized outside a serial one (r.y around r.x)
    // combines the lanes of every inner iteration.
    BufferParam in(Float(32), 3, "in");
    Var i("i");
    RDom r({{0, in.dim(1).extent()}, {0, in.dim(2).extent()}}, "r");
    r.where((r.x + r.y) % 3 != 1);
    Func f("f"), g("g");
    f(i) = 0.5f;
    f(i) += in(i, r.x, r.y) * in(i, r.y % in.dim(1).extent(), r.x % in.dim(2).extent());
    // (A masked lane that took the value of a load it skipped, 0, would
    // show here: every point's value is below -1.)
    g(i) = -1e30f;
    g(i) = max(g(i), -in(i, r.x, r.y));
    in.set(random_buffer<float>({6, 13, 11}, 1.0, 2.0));
    Schedule m;
    m[g].update().vectorize(r.x, 4);
    check_schedule(g, m, {6});
    RVar yo("yo"), yi("yi");
    Schedule a;
    a[f].update().vectorize(r.x, 4);
    check_schedule(f, a, {6}, 1e-5);
    Schedule b;
    b[f].update().split(r.y, yo, yi, 8).vectorize(yi);
    check_schedule(f, b, {6}, 1e-5);
    EXPECT_NE(Pipeline(f).compile_to_lowered_stmt(b).find("vector_reduce_add("), std::string::npos);
}

TEST(Schedule, VectorizedRVarOfATupleOfIndependentUpdates) {
    // Each element of the Tuple is its own associative update.
    BufferParam in(Float(32), 2, "in");
    Var i("i");
    RDom k(0, in.dim(1).extent(), "k");
    Func stats("stats");
    stats(i) = Tuple(0.0f, -1e30f);
    stats(i) = Tuple(stats(i)[0] + in(i, k) * in(i, k), max(stats(i)[1], in(i, k)));
    in.set(random_buffer<float>({9, 30}));
    Schedule s;
    s[stats].update().vectorize(k, 8);
    std::vector<RawBuffer> expected = interpret_tuple(stats, {9});
    RawBuffer sq(Float(32), {9}), mx(Float(32), {9});
    Pipeline(stats).realize(std::vector<RawBuffer>{sq, mx}, s);
    EXPECT_TRUE(buffers_match(sq, expected[0], 1e-5, 1e-5));
    EXPECT_TRUE(buffers_match(mx, expected[1]));
    EXPECT_NE(Pipeline(stats).compile_to_lowered_stmt(s).find("vector_reduce_max("),
              std::string::npos);
}

TEST(Schedule, HistogramAndScan) {
    BufferParam in(Int(32), 1, "in");
    Var x("x");
    RDom r(0, in.dim(0).extent(), "r");
    Func hist("hist");
    hist(x) = 0;
    hist(clamp(in(r), 0, 9)) += 1;
    in.set(random_buffer<int32_t>({101}, -2, 12));
    check_schedule(hist, Schedule(), {10});

    BufferParam v(Float(32), 1, "v");
    RDom s(1, v.dim(0).extent() - 1, "s");
    Func scan("scan");
    scan(x) = v(x);
    scan(s) = scan(s - 1) + v(s);
    v.set(random_buffer<float>({77}));
    check_schedule(scan, Schedule(), {77}, 1e-5);
}

TEST(Schedule, ScansRunTheirIndependentLoopsInParallel) {
    // A scan along each row reads its row's previous point: the rows never
    // meet, so its pure Var y may be parallel or vectorized, each lane a
    // row.
    BufferParam in(Float(32), 2, "in");
    Var y("y"), x("x"), yo("yo"), yi("yi");
    RDom s(1, in.dim(1).extent() - 1, "s");
    Func rows("rows");
    rows(y, x) = in(y, x);
    rows(y, s) = rows(y, s - 1) * 0.75f + in(y, s);
    in.set(random_buffer<float>({45, 203}));
    Schedule parallel_rows;
    parallel_rows[rows].parallel(y);
    parallel_rows[rows].update().parallel(y);
    check_schedule(rows, parallel_rows, {45, 203}, 1e-5);
    Schedule vector_rows;
    vector_rows[rows].update().split(y, yo, yi, 8).reorder(yo, s, yi).vectorize(yi).parallel(yo);
    check_schedule(rows, vector_rows, {45, 203}, 1e-5);

    // A scan down each column over a two-dimensional RDom: each column is
    // read and written at its own c.x alone, so its loop may be parallel,
    // and may move inside the loop down the rows, which keeps its order.
    RDom c({{0, in.dim(1).extent()}, {1, in.dim(0).extent() - 1}}, "c");
    Func columns("columns");
    columns(y, x) = in(y, x);
    columns(c.y, c.x) = columns(c.y - 1, c.x) * 0.5f + in(c.y, c.x);
    Schedule parallel_columns;
    parallel_columns[columns].update().parallel(c.x);
    check_schedule(columns, parallel_columns, {45, 203}, 1e-5);
    Schedule columns_inside;
    RVar cxo("cxo"), cxi("cxi");
    columns_inside[columns].update().split(c.x, cxo, cxi, 8).reorder(cxo, c.y, cxi).vectorize(cxi);
    check_schedule(columns, columns_inside, {45, 203}, 1e-5);
}

TEST(Schedule, TupleAndArgmax) {
    BufferParam in(Float(32), 2, "in");
    Var r("r");
    RDom k(0, in.dim(1).extent(), "k");
    Func best("best");
    best(r) = argmax(in(r, k));
    in.set(random_buffer<float>({13, 40}));
    std::vector<RawBuffer> expected = interpret_tuple(best, {13});
    RawBuffer idx(Int(32), {13}), val(Float(32), {13});
    Pipeline(best).realize(std::vector<RawBuffer>{idx, val});
    EXPECT_TRUE(buffers_match(idx, expected[0]));
    EXPECT_TRUE(buffers_match(val, expected[1]));
}

namespace {

/** A row reduction that keeps a point, written out as a Tuple update: the
 * key (element 1) at its extreme and the point's index and a second value
 * from `other` (elements 0 and 2) taken under the same test. `test` is
 * the point's value against the key's: > (argmax, the first point), >=
 * (the last), < (argmin); `max_key` keeps the key with max() instead of a
 * select. */
Func row_point(const BufferParam &in, const BufferParam &other, const Var &r, const RDom &k,
               const std::string &test, bool max_key) {
    Func top("top");
    const Type t = in.type();
    top(r) = Tuple(0, test == "<" ? type_max(t) : type_min(t), cast(other.type(), 0));
    Expr v = in(r, k), best = top(r)[1];
    Expr takes = test == ">" ? v > best : test == ">=" ? v >= best : v < best;
    Expr key = max_key ? max(best, v) : select(takes, v, best);
    top(r) = Tuple(select(takes, Expr(k), top(r)[0]), key, select(takes, other(r, k), top(r)[2]));
    return top;
}

}  // namespace

TEST(Schedule, VectorizingAnUpdateThatKeepsAPoint) {
    // vectorize on the RVar of an argmax: each lane keeps its own point, and
    // the lanes are folded after the loop into the point the serial loop
    // keeps. Whole numbers tie often; NaNs are never taken; rows of 1, 3, 8
    // and 45 points leave ragged and empty lanes.
    struct Case {
        Type type;
        std::string test;
        bool max_key;
    };
    for (const Case &c :
         {Case{Float(32), ">", false}, Case{Float(32), ">=", false}, Case{Float(32), "<", false},
          Case{Float(32), ">", true}, Case{Int(32), ">", false}, Case{Int(32), ">=", false}}) {
        BufferParam in(c.type, 2, "in"), other(Float(32), 2, "other");
        Var r("r");
        RDom k(0, in.dim(1).extent(), "k");
        Func top = row_point(in, other, r, k, c.test, c.max_key);
        for (int lanes : {4, 8, 16}) {
            Schedule s;
            RVar ko("ko"), ki("ki");
            Var ro("ro"), ri("ri");
            s[top].parallel(r);
            if (lanes == 8) {
                // Blocks of 5 rows: the last block's rows past the end are
                // guarded, and their elements never touched.
                s[top]
                    .update()
                    .split(r, ro, ri, 5)
                    .parallel(ro)
                    .split(k, ko, ki, lanes)
                    .vectorize(ki);
            } else {
                s[top].update().parallel(r).split(k, ko, ki, lanes).vectorize(ki);
            }
            CompiledPipeline compiled = Pipeline(top).compile(s);
            const std::string what = type_to_string(c.type) + " " + c.test +
                                     (c.max_key ? " (max key), " : ", ") + std::to_string(lanes) +
                                     " lanes";
            EXPECT_NE(Pipeline(top).compile_to_lowered_stmt(s).find("lane_key"), std::string::npos)
                << what;
            for (int n : {45, 8, 3, 1}) {
                const int rows = 13;
                if (c.type.is_float()) {
                    Buffer<float> x = random_buffer<float>({rows, n}, 0, 7);
                    for (int y = 0; y < rows; y++) {
                        for (int j = 0; j < n; j++) x(y, j) = std::floor(x(y, j));
                    }
                    x(3, n / 2) = NAN;
                    x(5, 0) = NAN;
                    in.set(x);
                } else {
                    in.set(random_buffer<int32_t>({rows, n}, -3, 4));
                }
                other.set(random_buffer<float>({rows, n}));
                std::vector<RawBuffer> expected = interpret_tuple(top, {rows});
                Buffer<int32_t> index({rows});
                RawBuffer key(c.type, {rows});
                Buffer<float> value({rows});
                compiled.realize({index, key, value});
                EXPECT_TRUE(buffers_match(index, expected[0])) << what << ", " << n << " points";
                EXPECT_TRUE(buffers_match(key, expected[1])) << what << ", " << n << " points";
                EXPECT_TRUE(buffers_match(value, expected[2])) << what << ", " << n << " points";
            }
        }
        // A domain of one vector: no serial loop keeps the lanes' points,
        // the vector's own fold does.
        RDom eight(0, 8, "eight");
        Func top8 = row_point(in, other, r, eight, c.test, c.max_key);
        Schedule s8;
        s8[top8].update().vectorize(eight);
        EXPECT_NE(Pipeline(top8).compile_to_lowered_stmt(s8).find("lane_key"), std::string::npos);
        const int rows = 40;
        if (c.type.is_float()) {
            Buffer<float> x = random_buffer<float>({rows, 8}, 0, 4);
            for (int y = 0; y < rows; y++) {
                for (int j = 0; j < 8; j++) x(y, j) = std::floor(x(y, j));
            }
            in.set(x);
        } else {
            in.set(random_buffer<int32_t>({rows, 8}, -2, 2));
        }
        other.set(random_buffer<float>({rows, 8}));
        std::vector<RawBuffer> expected = interpret_tuple(top8, {rows});
        Buffer<int32_t> index({rows});
        RawBuffer key(c.type, {rows});
        Buffer<float> value({rows});
        Pipeline(top8).compile(s8).realize({index, key, value});
        EXPECT_TRUE(buffers_match(index, expected[0])) << c.test << ", one vector";
        EXPECT_TRUE(buffers_match(key, expected[1])) << c.test << ", one vector";
        EXPECT_TRUE(buffers_match(value, expected[2])) << c.test << ", one vector";
    }
}

TEST(Schedule, TupleScatterThroughItsOwnValues) {
    // The coordinate of the update reads element 0, which the update itself
    // changes: both elements are stored where the old values pointed.
    const int n = 23, steps = 61;
    BufferParam hop(Int(32), 1, "hop"), weight(Float(32), 1, "weight");
    Var x("x");
    RDom r(0, steps, "r");
    Func f("f");
    f(x) = Tuple(x, 0.0f);
    Expr at = clamp(f(clamp(hop(r), 0, n - 1))[0], 0, n - 1);
    f(at) = Tuple((f(at)[0] + 3) % n, f(at)[1] + weight(r));
    Buffer<int32_t> hops = random_buffer<int32_t>({steps}, 0, n);
    Buffer<float> weights = random_buffer<float>({steps});
    hop.set(hops);
    weight.set(weights);
    std::vector<int32_t> next(n);
    std::vector<float> total(n, 0.0f);
    for (int i = 0; i < n; i++) next[i] = i;
    for (int k = 0; k < steps; k++) {
        int p = std::min(std::max(next[hops(k)], 0), n - 1);
        next[p] = (next[p] + 3) % n;
        total[p] += weights(k);
    }
    Buffer<int32_t> got_next({n});
    Buffer<float> got_total({n});
    Pipeline(f).realize(std::vector<RawBuffer>{got_next, got_total});
    for (int i = 0; i < n; i++) {
        EXPECT_EQ(got_next(i), next[i]) << "at " << i;
        EXPECT_EQ(got_total(i), total[i]) << "at " << i;
    }
}

TEST(Schedule, RDomWhereAndScalarParam) {
    BufferParam in(Float(32), 1, "in");
    Param<float> scale("scale");
    Var x("x");
    RDom r(0, in.dim(0).extent(), "r");
    r.where(r.x % 3 != 1);
    Func f("f");
    f(x) = sum(in(r)*cast<float>(x)) * scale;
    in.set(random_buffer<float>({50}));
    scale.set(0.75f);
    check_schedule(f, Schedule(), {11}, 1e-5);
}

TEST(Schedule, RDomWhereConjunctsAreTestedInTheLoopsTheyRead) {
    // A conjunct of the predicate that reads only the row is tested once
    // per row, around the loops of the row; the one that reads r and x
    // stays at the point.
    BufferParam in(Float(32), 2, "in"), flag(Int(32), 1, "flag");
    Var y("y"), x("x");
    RDom r(0, in.dim(1).extent(), "r");
    r.where(flag(y) != 0 && r.x <= x);
    Func f("f");
    f(y, x) = 0.0f;
    f(y, x) += in(y, r);
    in.set(random_buffer<float>({13, 29}));
    Buffer<int32_t> flags({13});
    for (int k = 0; k < 13; k++) flags(k) = k % 3 == 1 ? 0 : k;
    flag.set(flags);
    Schedule sch;
    sch[f].update().vectorize(x, 4);
    check_schedule(f, sch, {13, 29}, 1e-5);
    std::string stmt = Pipeline(f).compile_to_lowered_stmt(sch);
    size_t rows = stmt.find("for (f.s1.y"), test = stmt.find("flag[", rows);
    ASSERT_NE(rows, std::string::npos) << stmt;
    EXPECT_LT(test, stmt.find("for (f.s1.x", rows)) << stmt;
    EXPECT_LT(stmt.find("for (f.s1.r", rows), stmt.find("<= f.s1.x", rows)) << stmt;
}

TEST(Schedule, MultipleOutputs) {
    BufferParam in(Float(32), 1, "in");
    Var x("x");
    Func sq("sq"), cube("cube");
    sq(x) = in(x)*in(x);
    cube(x) = sq(x) * in(x);
    in.set(random_buffer<float>({33}));
    RawBuffer a(Float(32), {33}), b(Float(32), {33});
    Schedule s;
    s[sq].vectorize(x, 4);
    Pipeline({sq, cube}).realize(std::vector<RawBuffer>{a, b}, s);
    EXPECT_TRUE(buffers_match(a, interpret(sq, {33})));
    EXPECT_TRUE(buffers_match(b, interpret(cube, {33})));
}

TEST(Schedule, SameScheduleIsNotRecompiled) {
    Blur b;
    b.bind(8, 8);
    Schedule s;
    s[b.by].vectorize(b.x, 4);
    CompiledPipeline first = Pipeline(b.by).compile(s);
    CompiledPipeline second = Pipeline(b.by).compile(s);
    EXPECT_EQ(&first.assembly(), &second.assembly());
}

TEST(Schedule, SteadyStateOfGuardedTileHasConstantProducerWidth) {
    // With GuardWithIf tiles, a producer computed per tile is clamped to the
    // image in the last tile; in the steady state of the partitioned tile
    // loop the guard's condition (x <= x.max for the whole tile) makes the
    // clamps redundant, so the producer's width is the tile's, a constant,
    // as in Halide: constant strides and no tail loop inside the tile.
    Blur b;
    b.bind(13, 37);
    Schedule s;
    Var yo("yo"), xo("xo"), yi("yi"), xi("xi");
    s[b.by].tile(b.y, b.x, yo, xo, yi, xi, 4, 16).vectorize(xi, 8);
    s[b.bx].compute_at(b.by, xo).vectorize(b.x, 8);
    check_schedule(b.by, s, {13, 37});
    std::string stmt = Pipeline(b.by).compile_to_lowered_stmt(s);
    EXPECT_NE(stmt.find("allocate bx[float32 * bx.extent.0 * 16]"), std::string::npos) << stmt;
}

TEST(Schedule, PerfJitListenerCompilesAndRuns) {
    // LOOM_PERF_JIT=1 links the JIT's code through a layer that describes it
    // to perf (jit-<pid>.dump, here in a temporary directory); the code must
    // run the same. (A schedule no other test uses, so it is not cached.)
    std::string dir = testing::TempDir() + "loom_perf_jit";
    std::string mk = "mkdir -p " + dir;
    ASSERT_EQ(std::system(mk.c_str()), 0);
    setenv("JITDUMPDIR", dir.c_str(), 1);
    setenv("LOOM_PERF_JIT", "1", 1);
    Blur b;
    b.bind(13, 21);
    Schedule s;
    Var yo("yo"), yi("yi");
    s[b.by].split(b.y, yo, yi, 5).parallel(yo).vectorize(b.x, 4);
    check_schedule(b.by, s, {13, 21});
    unsetenv("LOOM_PERF_JIT");
    // And perf's description of the code was written.
    bool dumped = false;
    for (const auto &entry : std::filesystem::recursive_directory_iterator(dir)) {
        std::string name = entry.path().filename().string();
        if (name.rfind("jit-", 0) == 0 && entry.path().extension() == ".dump") dumped = true;
    }
    EXPECT_TRUE(dumped) << "no jit-<pid>.dump under " << dir;
}

TEST(Schedule, Avx512EmitsZmm) {
    if (!Target::host().has_feature(Target::AVX512)) GTEST_SKIP() << "host has no AVX-512";
    Blur b;
    b.bind(9, 77);
    Schedule s;
    s[b.by].vectorize(b.x, 16);
    Target t("x86-64-linux-avx512");
    CompiledPipeline c = Pipeline(b.by).compile(s, t);
    EXPECT_NE(c.assembly().find("zmm"), std::string::npos);
    RawBuffer out(Float(32), {9, 77});
    c.realize({out});
    EXPECT_TRUE(buffers_match(out, interpret(b.by, {9, 77}), 1e-6, 1e-6));
}

TEST(Schedule, DebugPrintsEveryPass) {
    Blur b;
    setenv("LOOM_DEBUG", "1", 1);
    ::testing::internal::CaptureStderr();
    Pipeline(b.by).compile_to_lowered_stmt(Schedule());
    std::string log = ::testing::internal::GetCapturedStderr();
    unsetenv("LOOM_DEBUG");
    for (const char *pass : {"schedule_functions", "bounds_inference", "storage_flattening",
                             "vectorize_loops", "final simplify"}) {
        EXPECT_NE(log.find(std::string("after ") + pass), std::string::npos) << pass;
    }
}

TEST(Schedule, LoweredStmtAndLoopNest) {
    Blur b;
    Schedule s;
    Var yo("yo"), yi("yi");
    s[b.bx].compute_root();
    s[b.by].split(b.y, yo, yi, 4).parallel(yo).vectorize(b.x, 8);
    std::string nest = Pipeline(b.by).print_loop_nest(s);
    EXPECT_NE(nest.find("produce bx"), std::string::npos) << nest;
    EXPECT_NE(nest.find("parallel by.s0.yo"), std::string::npos) << nest;
    EXPECT_NE(nest.find("(x8)"), std::string::npos) << nest;
    std::string stmt = Pipeline(b.by).compile_to_lowered_stmt(s);
    EXPECT_NE(stmt.find("allocate bx"), std::string::npos) << stmt;
    EXPECT_NE(stmt.find("ramp("), std::string::npos) << stmt;
}

// Found by the fuzzer: producers split with RoundUp, computed (and one stored
// at root) inside the output's tiles. Interval arithmetic on per-tile bounds
// once inflated the input region they read by tens of columns, so a
// correctly sized input was refused.
TEST(Schedule, RoundUpProducersInsideTiles) {
    BufferParam in(Float(32), 2, "in");
    Var y("y"), x("x"), yo("yo"), xo("xo"), yi("yi"), xi("xi");
    Func f0("f0"), f1("f1"), out("out");
    f0(y, x) = max(in(y, x + 2), -0.5f);
    f1(y, x) = f0(y, x) + f0(y, x + 1) + f0(y, x + 2);
    out(y, x) = f1(y, x) * 0.5f + f1(y + 1, x + 3);
    Schedule s;
    s[out].tile(y, x, yo, xo, yi, xi, 2, 4);
    s[f0].compute_at(out, xo).vectorize(x, 8, TailStrategy::RoundUp);
    s[f1].store_root().compute_at(out, xo).vectorize(x, 4, TailStrategy::RoundUp);
    // Enough columns for what RoundUp can really over-read (3 + 7 + 2 + 3).
    const int h = 13, w = 29;
    Buffer<float> input = random_buffer<float>({h + 1, w + 3 + 2 + 2 + 3 + 7 + 4});
    in.set(input);
    check_schedule(out, s, {h, w});
}

TEST(Schedule, FixedExtentsMakeLoopsAndStorageConstant) {
    // A matrix-vector product whose row length is fixed at compile time:
    // the reduction can be unrolled, and a per-row copy of the vector has a
    // constant size, which neither could be with the extent left open.
    BufferParam A(Float(32), 2, "A"), x(Float(32), 1, "x");
    A.dim(1).set_extent(12);
    x.dim(0).set_extent(12);
    Var i("i"), c("c");
    RDom k(0, A.dim(1).extent(), "k");
    Func xcopy("xcopy"), y("y");
    xcopy(c) = x(c) * 2.0f;
    y(i) = 0.0f;
    y(i) += A(i, k) * xcopy(k);
    Schedule s;
    s[xcopy].compute_at(y, i).unroll(c);
    s[y].update().unroll(k);
    A.set(random_buffer<float>({37, 12}));
    x.set(random_buffer<float>({12}));
    check_schedule(y, s, {37}, 1e-5);
}

TEST(Schedule, AConstantBoundaryConditionReadsOnlyInsideItsInput) {
    // select(inside, in(clamp(...)), 0): the load is evaluated whatever the
    // condition, so its clamp must stay (the simplifier once dropped it,
    // knowing k < n in the true branch, and this read 64 MiB past in).
    BufferParam in(Float(32), 1, "in");
    Var k("k");
    Func padded("padded");
    Expr n = in.dim(0).extent();
    Expr v = in(clamp(k, 0, n - 1));
    padded(k) = select(k < n, v / (1.0f + abs(v)), 0.0f);
    Buffer<float> small = random_buffer<float>({4});
    const int size = 1 << 24;
    Buffer<float> out({size});
    Pipeline(padded).compile(Schedule())(small, out);
    for (int i = 0; i < 4; i++) EXPECT_EQ(out(i), small(i) / (1.0f + std::abs(small(i))));
    for (int i : {4, 5, 1000, size - 1}) EXPECT_EQ(out(i), 0.0f) << i;
}

TEST(Schedule, BoundFixesTheRegionAFuncIsComputedOver) {
    // An RGB image whose channel count the algorithm leaves open: bound()
    // says it is 3 (or 4), so the per-pixel producer's channel loop can be
    // unrolled or vectorized whole, with storage of a constant size.
    BufferParam in(Float(32), 3, "in");
    Param<int> channels("channels");
    Var y("y"), x("x"), c("c");
    Func lit("lit"), out("out");
    lit(y, x, c) = in(y, x, c) * 1.5f + cast<float>(c);
    out(y, x, c) = lit(y, x, c) - lit(y, x, 0) * 0.25f;
    const auto allocates = [&](const Schedule &sch, const std::string &what) {
        return Pipeline(out).compile_to_lowered_stmt(sch).find(what) != std::string::npos;
    };
    {
        Schedule sch;
        sch[lit].compute_at(out, x).bound(c, 0, 3).unroll(c);
        sch[out].bound(c, 0, 3).unroll(c);
        in.set(random_buffer<float>({7, 9, 3}));
        check_schedule(out, sch, {7, 9, 3});
        EXPECT_TRUE(allocates(sch, "allocate lit[float32 * 1 * 1 * 3]"));
        Schedule unbounded;
        unbounded[lit].compute_at(out, x);
        EXPECT_FALSE(allocates(unbounded, "allocate lit[float32 * 1 * 1 * 3]"));
    }
    {
        // Four channels in one vector, the bound's extent a Param.
        Schedule sch;
        sch[lit].compute_at(out, x).bound(c, 0, channels).vectorize(c, 4);
        channels.set(4);
        in.set(random_buffer<float>({5, 6, 4}));
        check_schedule(out, sch, {5, 6, 4});
        // Reading fewer channels than the bound computes is allowed.
        check_schedule(out, sch, {5, 6, 2});
    }
    {
        // bound_extent: the blur's first pass computed per 8 columns of the
        // second, 8 columns wherever they start: the last, partial tile too
        // (so the input needs room for it, as with RoundUp). One vector per
        // row, and no tail.
        Blur b;
        b.in.set(random_buffer<float>({12 + 2, 19 + 2 + 8}));
        Schedule sch;
        Var xo("xo"), xi("xi");
        sch[b.by].split(b.x, xo, xi, 8);
        sch[b.bx].compute_at(b.by, xo).bound_extent(b.x, 8).vectorize(b.x, 8);
        check_schedule(b.by, sch, {12, 19});
        const std::string stmt = Pipeline(b.by).compile_to_lowered_stmt(sch);
        EXPECT_NE(stmt.find("allocate bx[float32 * 3 * 8]"), std::string::npos) << stmt;
        Schedule unbounded;
        unbounded[b.by].split(b.x, xo, xi, 8);
        unbounded[b.bx].compute_at(b.by, xo).vectorize(b.x, 8);
        EXPECT_NE(Pipeline(b.by).compile_to_lowered_stmt(unbounded).find(
                      "allocate bx[float32 * 3 * bx.extent.1]"),
                  std::string::npos);
    }
}

TEST(Schedule, OutputsComputedInPlaceOverTheirInput) {
    // One buffer as the input and the output: allowed where each element
    // is read only to compute the same element of the output (see
    // FrontendErrors.OutputsThatOverlapAnInputOrEachOther for the rest).
    // The result must be the one computed into a buffer of its own.
    BufferParam in(Float(32), 2, "in");
    Var y("y"), x("x"), xo("xo"), xi("xi"), yo("yo"), yi("yi");
    Func shifted("shifted"), act("act");
    shifted(y, x) = in(y, x) - 0.25f;  // inlined: act still reads in at its point
    act(y, x) = select(shifted(y, x) > 0.0f, shifted(y, x), shifted(y, x) * 0.125f);
    Func prefix("prefix");  // its update reads itself, not in
    RDom r(1, 36, "r");
    prefix(y, x) = in(y, x) * 2.0f;
    prefix(y, r) = prefix(y, r - 1) + prefix(y, r);

    Schedule vector_rows;
    vector_rows[act].split(x, xo, xi, 8).vectorize(xi).parallel(y);
    Schedule tiles;
    tiles[act].tile(y, x, yo, xo, yi, xi, 4, 16).vectorize(xi, 4).unroll(yi);
    Schedule plain;
    struct Case {
        const Func *f;
        const Schedule *s;
        const char *name;
    };
    for (const Case &c : {Case{&act, &vector_rows, "act, vectors of rows"},
                          Case{&act, &tiles, "act, tiles"}, Case{&prefix, &plain, "prefix"}}) {
        SCOPED_TRACE(c.name);
        Buffer<float> data = random_buffer<float>({7, 37}, -1, 1);
        in.set(data);
        Buffer<float> apart({7, 37});
        Pipeline(*c.f).realize({apart}, *c.s);
        Pipeline(*c.f).realize({data}, *c.s);
        EXPECT_TRUE(buffers_match(data, apart, 0, 0));
        // A view holds the same elements at the same coordinates: rows 2
        // to 5 are computed in place, the others are left as they were.
        Buffer<float> again = random_buffer<float>({7, 37}, -1, 1), before({7, 37});
        for (int i = 0; i < 7; i++) {
            for (int j = 0; j < 37; j++) before(i, j) = again(i, j);
        }
        in.set(again);
        Pipeline(*c.f).realize({again.cropped(0, 2, 4)}, *c.s);
        in.set(before);
        Buffer<float> rows({7, 37});
        Pipeline(*c.f).realize({rows}, *c.s);
        for (int i = 0; i < 7; i++) {
            for (int j = 0; j < 37; j++) {
                ASSERT_EQ(again(i, j), i >= 2 && i < 6 ? rows(i, j) : before(i, j))
                    << i << "," << j;
            }
        }
    }
}
