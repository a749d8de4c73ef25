// Schedule mistakes and run-time argument mistakes: each must raise a clear
// exception naming the culprit, before any memory is touched.
#include <gtest/gtest.h>

#include "test_util.h"

using namespace loom;
using loom_test::random_buffer;
using loom_test::throws_with;

namespace {

struct TwoStage {
    BufferParam in{Float(32), 2, "in"};
    Var y{"y"}, x{"x"};
    Func f{"f"}, g{"g"};
    TwoStage() {
        f(y, x) = in(y, x) * 2.0f;
        g(y, x) = f(y, x) + f(y, x + 1);
    }
};

}  // namespace

TEST(ScheduleErrors, InputWrapperNeedsOneFreshVarPerDimension) {
    TwoStage p;
    Schedule sch;
    EXPECT_TRUE(throws_with<CompileError>([&] { sch.in(p.in, {p.y}); },
                                          {"in(in, ...)", "in has 2 dimensions but 1 Vars"}));
    EXPECT_TRUE(throws_with<CompileError>(
        [&] {
            sch.in(p.in, {p.y, p.y});
        },
        {"in(in, ...)", "the Var y is given twice"}));
    sch.in(p.in, {p.y, p.x});
    EXPECT_TRUE(throws_with<CompileError>(
        [&] {
            sch.in(p.in, {p.x, p.y});
        },
        {"was called before with other Vars"}));
    // The wrapper's name, in_in, taken by a Func of the pipeline.
    Func clash("in_in"), out("out");
    clash(p.y, p.x) = p.in(p.y, p.x) + 1.0f;
    out(p.y, p.x) = clash(p.y, p.x) * 2.0f;
    Schedule s2;
    s2.in(p.in, {p.y, p.x});
    s2[clash].compute_root();
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { Pipeline(out).compile(s2); },
        {"Schedule::in(in) names its wrapper Func in_in", "has a Func of that name already"}));
}

TEST(ScheduleErrors, UnknownVar) {
    TwoStage p;
    Schedule s;
    Var z("z"), zo("zo"), zi("zi");
    EXPECT_TRUE(throws_with<CompileError>([&] { s[p.g].split(z, zo, zi, 4); },
                                          {"Func g", "'z'", "not a loop", "y, x"}));
}

TEST(ScheduleErrors, AlreadySplitVar) {
    TwoStage p;
    Schedule s;
    Var xo("xo"), xi("xi"), a("a"), b("b");
    s[p.g].split(p.x, xo, xi, 4);
    EXPECT_TRUE(throws_with<CompileError>([&] { s[p.g].split(p.x, a, b, 2); },
                                          {"Func g", "'x'", "already split"}));
}

TEST(ScheduleErrors, ComputeAtLoopNotInConsumer) {
    TwoStage p;
    Schedule s;
    Var nope("nope");
    s[p.f].compute_at(p.g, nope);
    p.in.set(random_buffer<float>({4, 9}));
    EXPECT_TRUE(throws_with<CompileError>([&] { Pipeline(p.g).compile(s); },
                                          {"Func f", "g.nope", "no loop 'nope'"}));
    // A loop a split renamed: the message lists the loops there are.
    Schedule split;
    Var xo("xo"), xi("xi");
    split[p.g].split(p.x, xo, xi, 8);
    split[p.f].compute_at(p.g, p.x);
    EXPECT_TRUE(
        throws_with<CompileError>([&] { Pipeline(p.g).compile(split); },
                                  {"no loop 'x' (after its splits)", "its loops are: y, xo, xi"}));
}

TEST(ScheduleErrors, ParallelizingDependentUpdate) {
    BufferParam in(Float(32), 1, "in");
    Var x("x");
    RDom r(1, 20, "r");
    Func scan("scan");
    scan(x) = in(x);
    scan(r) = scan(r - 1) + in(r);
    Schedule s;
    EXPECT_TRUE(throws_with<CompileError>([&] { s[scan].update().parallel(r); },
                                          {"update 0 of Func scan", "parallelize", "dependence"}));
    EXPECT_TRUE(throws_with<CompileError>([&] { s[scan].update().vectorize(r); },
                                          {"update 0 of Func scan", "vectorize", "dependence"}));
}

TEST(ScheduleErrors, ParallelizingASumOverItsRVar) {
    BufferParam in(Float(32), 2, "in");
    Var i("i");
    RDom k(0, 8, "k");
    Func total("total");
    total(i) = 0.0f;
    total(i) += in(i, k);
    Schedule s;
    s[total].update().parallel(i);  // fine: distinct i never interact
    // Parallel tasks would race on total(i); the lanes of a vector combine
    // their values first (a vector reduction).
    EXPECT_TRUE(throws_with<CompileError>([&] { s[total].update().parallel(k); },
                                          {"Func total", "'k.x'", "parallelize"}));
    s[total].update().vectorize(k);
    EXPECT_NO_THROW(Pipeline(total).compile(s));
}

TEST(ScheduleErrors, VectorizingAnRVarOfAnUpdateThatIsNotAReduction) {
    // Every lane updates one element, but not by an associative operator of
    // the element and a value: the lanes cannot be combined.
    BufferParam in(Float(32), 2, "in");
    Var i("i");
    RDom k(0, 8, "k");
    Func decay("decay");
    decay(i) = 0.0f;
    decay(i) = decay(i) * 0.5f + in(i, k);
    Schedule s;
    s[decay].update().vectorize(k);
    EXPECT_TRUE(throws_with<CompileError>([&] { Pipeline(decay).compile(s); },
                                          {"Cannot vectorize the loop over decay.s1.k.x",
                                           "not an associative operator", "+, *, min, max"}));
    // A Tuple element updated from another's old value is no reduction of
    // its own either, whichever of the two is stored first.
    for (bool first_reads_second : {false, true}) {
        Func pair = loom_test::tuple_element_reading_the_other(in, i, k, first_reads_second);
        Schedule t;
        t[pair].update().vectorize(k, 4);
        EXPECT_TRUE(throws_with<CompileError>(
            [&] { Pipeline(pair).compile(t); },
            {"Cannot vectorize the loop over pair.s1.k", "not an associative operator"}));
    }
    // The error names the way that gives each lane a partial of its own.
    EXPECT_TRUE(throws_with<CompileError>([&] { Pipeline(decay).compile(s); },
                                          {"split_k", "ChunkLayout::Interleaved", "vectorize(c)"}));
    // An argmax written as a Tuple update stores a select of the index's
    // old value, no operator of it, but keeps a point: each lane keeps its
    // own (Schedule.VectorizingAnUpdateThatKeepsAPoint).
    Func top("top");
    top(i) = Tuple(0, type_min(Float(32)));
    Expr beats = in(i, k) > top(i)[1];
    top(i) = Tuple(select(beats, Expr(k), top(i)[0]), select(beats, in(i, k), top(i)[1]));
    Schedule a;
    a[top].update().vectorize(k, 4);
    EXPECT_NO_THROW(Pipeline(top).compile(a));
    // A histogram's lanes may write different elements, or the same one.
    Func hist("hist");
    RDom r(0, 16, "r");
    hist(i) = 0;
    hist(cast<int>(in(0, r))) += 1;
    Schedule h;
    EXPECT_TRUE(throws_with<CompileError>([&] { h[hist].update().vectorize(r); },
                                          {"Func hist", "vectorize", "dependence"}));
}

TEST(ScheduleErrors, ReorderingRVarsChangesMeaning) {
    BufferParam in(Float(32), 2, "in");
    Var x("x");
    RDom r({{0, 4}, {0, 5}}, "r");
    Func f("f");
    f(x) = 0.0f;
    f(x) = f(x) * 0.5f + in(r.x, r.y);
    Schedule s;
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { s[f].update().reorder(r.y, r.x); },
        {"update 0 of Func f", "RVars must keep their relative order: the loops r.x, r.y"}));
    // A difference commutes only with the point on the left: here each
    // step negates what came before.
    Func alternating("alternating");
    alternating(x) = 0.0f;
    alternating(x) = in(r.x, r.y) - alternating(x);
    Schedule negated;
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { negated[alternating].update().reorder(r.y, r.x); },
        {"update 0 of Func alternating", "relative order", "+ - * min max && or || (a sum)"}));
    // The parts of one RVar swapped visit it out of order too: a scan then
    // read points it had not computed yet.
    Var y("y");
    RDom k(1, 99, "k");
    RVar ko("ko"), ki("ki");
    Func scan("scan");
    scan(y, x) = in(y, x);
    scan(y, k) = scan(y, k - 1) + in(y, k);
    Schedule split;
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { split[scan].update().split(k, ko, ki, 8).reorder(ki, ko); },
        {"update 0 of Func scan", "RVars must keep their relative order: the loops ko, ki"}));
    // Parallel loops too: the loop along the scan carries its dependence.
    Schedule parallel;
    EXPECT_TRUE(throws_with<CompileError>([&] { parallel[scan].update().parallel(k); },
                                          {"cannot parallelize loop 'k.x'", "dependence"}));
    // So does a where() that reads the Func at another point.
    RDom w(1, 99, "w");
    Func doubled("doubled");
    doubled(x) = in(0, x);
    w.where(doubled(w - 1) > 0.0f);
    doubled(w) = doubled(w) * 2.0f;
    Schedule guarded;
    EXPECT_TRUE(throws_with<CompileError>([&] { guarded[doubled].update().parallel(w); },
                                          {"cannot parallelize loop 'w.x'", "dependence"}));
}

TEST(ScheduleErrors, InliningAFuncWithUpdates) {
    Var x("x");
    RDom r(0, 4, "r");
    Func f("f");
    f(x) = 0;
    f(x) += r;
    Schedule s;
    EXPECT_TRUE(
        throws_with<CompileError>([&] { s[f].compute_inline(); },
                                  {"Func f", "update definitions", "cannot be computed inline"}));
}

TEST(ScheduleErrors, UsedOutsideItsComputeLoop) {
    TwoStage p;
    Func h("h");
    h(p.y, p.x) = p.g(p.y, p.x) + p.f(p.y, p.x);
    Schedule s;
    // f is computed inside g's loop, but h reads it too.
    s[p.g].compute_root();
    s[p.f].compute_at(p.g, p.x);
    p.in.set(random_buffer<float>({4, 9}));
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { Pipeline(h).compile(s); }, {"Func f", "used outside the loop where it is computed"}));
}

TEST(ScheduleErrors, VectorizeNeedsConstantFactor) {
    TwoStage p;
    Param<int> n("n");
    Schedule s;
    EXPECT_TRUE(throws_with<CompileError>([&] { s[p.g].vectorize(p.x, n); },
                                          {"Func g", "constant factor"}));
}

TEST(RuntimeErrors, MissingInput) {
    BufferParam in(Float(32), 1, "never_bound");
    Var x("x");
    Func f("f");
    f(x) = in(x);
    EXPECT_TRUE(
        throws_with<RuntimeError>([&] { Pipeline(f).realize({4}); }, {"never_bound", "no value"}));
}

TEST(RuntimeErrors, WrongTypeAndRank) {
    BufferParam in(Float(32), 2, "img");
    Var y("y"), x("x");
    Func f("f");
    f(y, x) = in(y, x);
    CompiledPipeline c = Pipeline(f).compile();
    RawBuffer out(Float(32), {3, 3});
    EXPECT_TRUE(throws_with<RuntimeError>(
        [&] {
            c(Buffer<int32_t>({3, 3}), out);
        },
        {"img", "int32", "float32"}));
    EXPECT_TRUE(throws_with<RuntimeError>([&] { c(Buffer<float>({9}), out); },
                                          {"img", "1 dimensions", "expects 2"}));
    EXPECT_TRUE(throws_with<RuntimeError>([&] { c(out); }, {"takes 2 arguments"}));
}

TEST(RuntimeErrors, InputTooSmallIsCaughtBeforeAccess) {
    BufferParam in(Float(32), 1, "src");
    Var x("x");
    Func f("f");
    f(x) = in(x) + in(x + 2);
    in.set(random_buffer<float>({10}));
    EXPECT_TRUE(throws_with<RuntimeError>([&] { Pipeline(f).realize({9}); },
                                          {"Input buffer src", "[0, 10]", "covers only [0, 9]"}));
}

TEST(RuntimeErrors, OutputTooSmallForShiftInwards) {
    BufferParam in(Float(32), 1, "src");
    Var x("x"), xo("xo"), xi("xi");
    Func f("f");
    f(x) = in(x);
    // The input covers the shifted reads; the 5-wide output cannot hold the
    // 8-wide shifted iteration.
    Buffer<float> src = random_buffer<float>({100});
    src.set_min({-50});
    in.set(src);
    Schedule s;
    s[f].split(x, xo, xi, 8, TailStrategy::ShiftInwards);
    EXPECT_TRUE(throws_with<RuntimeError>([&] { Pipeline(f).realize({5}, s); },
                                          {"Output buffer f", "written"}));
}

TEST(RuntimeErrors, NullDataPointer) {
    BufferParam in(Float(32), 1, "src");
    Var x("x");
    Func f("f");
    f(x) = in(x);
    CompiledPipeline c = Pipeline(f).compile();
    // Either wrapping a null pointer or calling with it must be refused.
    EXPECT_TRUE(throws_with<RuntimeError>(
        [&] { c(RawBuffer::wrap(Float(32), nullptr, {4}, {}, "src"), RawBuffer(Float(32), {4})); },
        {"src", "null"}));
}

TEST(ScheduleErrors, CyclicDefinitions) {
    Var x("x");
    Func f("f"), g("g");
    f(x) = cast<float>(x);
    g(x) = f(x) + 1.0f;
    f(x) += g(x);  // f -> g -> f
    EXPECT_TRUE(throws_with<CompileError>([&] { Pipeline(f).compile(); }, {"cycl"}));
}

TEST(RuntimeErrors, AllocationSizeOverflow) {
    Var y("y"), x("x");
    Func f("f"), g("g");
    f(y, x) = y + x;
    // g reads f over a 300 x 12 million region: more than 2^31 elements.
    g(x) = f(x, x * 40000);
    Schedule s;
    s[f].compute_root();
    EXPECT_TRUE(throws_with<RuntimeError>([&] { Pipeline(g).realize({300}, s); },
                                          {"Func f", "needs storage of", "elements"}));
}

TEST(RuntimeErrors, StridedInnermostNeedsOptIn) {
    BufferParam in(Float(32), 2, "grid");
    Var y("y"), x("x");
    Func f("f");
    f(y, x) = in(y, x) + 1.0f;
    Buffer<float> data({5, 7});
    RawBuffer transposed = data.transposed({1, 0});
    CompiledPipeline c = Pipeline(f).compile();
    EXPECT_TRUE(throws_with<RuntimeError>(
        [&] {
            c(transposed, RawBuffer(Float(32), {7, 5}));
        },
        {"Buffer grid", "innermost dimension 1", "allow_strided_innermost"}));
    // With the opt-in, the same view works.
    in.allow_strided_innermost();
    RawBuffer out(Float(32), {7, 5});
    Pipeline(f).compile()(transposed, out);
    EXPECT_EQ(Buffer<float>(out)(3, 2), data(2, 3) + 1.0f);
}

// An empty view holds no element to read: its innermost stride is not
// checked (NumPy gives zero-size arrays any strides), and the call makes
// an empty output.
TEST(RuntimeErrors, EmptyViewsNeedNoDenseInnermost) {
    BufferParam in(Float(32), 2, "grid");
    Var y("y"), x("x");
    Func f("f");
    f(y, x) = in(y, x) + 1.0f;
    CompiledPipeline c = Pipeline(f).compile();
    Buffer<float> none({0, 7});
    RawBuffer out(Float(32), {7, 0});
    EXPECT_NO_THROW(c(none.transposed({1, 0}), out));
    // A view with elements still needs its innermost dimension dense.
    Buffer<float> data({5, 7});
    EXPECT_TRUE(throws_with<RuntimeError>(
        [&] {
            c(data.transposed({1, 0}), RawBuffer(Float(32), {7, 5}));
        },
        {"Buffer grid", "innermost dimension 1"}));
}

TEST(ScheduleErrors, BoundMistakes) {
    TwoStage p;
    Var z("z");
    RDom r(0, 4, "r");
    Func h("h");
    h(p.x) = 0.0f;
    h(p.x) += p.in(r, p.x);
    Schedule sch;
    EXPECT_TRUE(throws_with<CompileError>([&] { sch[p.f].bound(z, 0, 4); },
                                          {"bound names 'z'", "not one of the Vars of f (y, x)"}));
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { sch[h].update().bound(p.x, 0, 4); },
        {"update 0 of Func h", "bound applies to the Func h as a whole; call it on sch[h]"}));
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { sch[p.f].bound_extent(p.x, 0); },
        {"the extent of bound_extent(x, ...) is 0", "it must be positive"}));
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { sch[p.f].bound(p.x, p.y, 4); },
        {"the min of bound(x, ...) uses y", "Use constants and Params only"}));
    EXPECT_TRUE(throws_with<CompileError>([&] { sch[p.f].bound(p.x, 0, 2.5f); },
                                          {"the extent of bound(x, ...) must be an integer"}));
    // Inlined, a Func has no region to bound.
    Schedule inlined;
    inlined[p.f].bound(p.x, 0, 8);
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { Pipeline(p.g).compile(inlined); },
        {"Func f is bounded in x", "computed inline", "compute_root or compute_at"}));
}

TEST(ScheduleErrors, ReadingPastABoundIsRefusedAtRunTime) {
    // g reads f at x + 1: bounding f to g's own columns leaves one short.
    TwoStage p;
    Schedule sch;
    Param<int> width("width");
    sch[p.f].compute_root().bound(p.x, 0, width);
    CompiledPipeline compiled = Pipeline(p.g).compile(sch);
    Buffer<float> in = random_buffer<float>({4, 11}), out({4, 10});
    EXPECT_TRUE(throws_with<RuntimeError>(
        [&] { compiled(in, 10, out); },
        {"Func f is bounded in x to [0, 9] (bound), but the pipeline reads it over [0, 10] there.",
         "Widen the bound"}));
    compiled(in, 11, out);
    EXPECT_EQ(out(3, 9), in(3, 9) * 2.0f + in(3, 10) * 2.0f);

    // Per tile of 4 columns, f covers 5 (the tile and the next column).
    Schedule tiles;
    Var xo("xo"), xi("xi");
    tiles[p.g].split(p.x, xo, xi, 4);
    tiles[p.f].compute_at(p.g, xo).bound_extent(p.x, 4);
    Buffer<float> roomy = random_buffer<float>({4, 16});
    EXPECT_TRUE(throws_with<RuntimeError>([&] { Pipeline(p.g).compile(tiles)(roomy, out); },
                                          {"Func f is bounded in x to [0, 3] (bound_extent), but "
                                           "the pipeline reads it over [0, 4]"}));

    // A bounded copy of an input (Schedule::in) is named by its input, the
    // buffer the caller passes: here g reads a column past the 10 copied.
    Schedule staged;
    staged.in(p.in, {p.y, p.x}).compute_root().bound(p.x, 0, width);
    EXPECT_TRUE(throws_with<RuntimeError>(
        [&] { Pipeline(p.g).compile(staged)(in, 10, out); },
        {"The copy of input in that Schedule::in makes (in_in) is bounded in x to [0, 9] "
         "(bound), but the pipeline reads in over [0, 10] there (dimension 1): check the sizes "
         "of in and of the outputs, or widen the bound."}));

    // An output bounded to 3 columns takes exactly 3.
    Schedule output;
    output[p.g].bound(p.x, 0, 3).unroll(p.x);
    CompiledPipeline three = Pipeline(p.g).compile(output);
    Buffer<float> wide({4, 4}), narrow({4, 2});
    EXPECT_TRUE(throws_with<RuntimeError>(
        [&] { three(in, wide); },
        {"Output buffer g covers [0, 3] in dimension 1, but the schedule bounds g in x to [0, 2] "
         "(bound). Pass a buffer with exactly that range there."}));
    EXPECT_TRUE(throws_with<RuntimeError>(
        [&] { three(in, narrow); },
        {"Output buffer g is written over [0, 2] in dimension 1", "covers only [0, 1]"}));
}
