// rolling_update and split_k mistakes: chains with no repair, directives on
// Funcs that are not reductions, schedules the fused loops cannot honour.
// Each must be a CompileError that names the culprit.
#include <gtest/gtest.h>

#include <limits>

#include "test_util.h"

using namespace loom;
using loom_test::random_buffer;
using loom_test::throws_with;

namespace {

/** Rows of x with a max m over r; each test defines l and out. */
struct Rows {
    BufferParam x{Float(32), 2, "x"};
    Var i{"i"};
    RDom r;
    Func m{"m"}, l{"l"}, out{"out"};
    Rows() : r(0, x.dim(1).extent(), "r") {
        x.set(random_buffer<float>({3, 9}));
        m(i) = maximum(x(i, r));
    }
    void compile(const Schedule &sch) { Pipeline(out).compile(sch); }
};

/** The softmax-weighted average of v's rows, o(i, d), with m and l over r:
 * a chain whose leader has a Var (d) the other members lack. */
struct WeightedAverage {
    BufferParam x{Float(32), 2, "x"}, v{Float(32), 2, "v"};
    Var i{"i"}, j{"j"}, d{"d"};
    RDom r{0, x.dim(1).extent(), "r"};
    Func m{"m"}, p{"p"}, l{"l"}, o{"o"}, out{"out"};
    WeightedAverage() {
        m(i) = maximum(x(i, r));
        p(i, j) = exp(x(i, j) - m(i));
        l(i) = sum(p(i, r));
        o(i, d) = sum(p(i, r) * v(r, d));
        out(i, d) = o(i, d) / l(i);
    }
};

}  // namespace

TEST(FusionErrors, NoRepairForSine) {
    Rows a;
    a.l(a.i) = sum(sin(a.x(a.i, a.r) - a.m(a.i)));
    a.out(a.i) = a.l(a.i);
    Schedule sch;
    sch.rolling_update(a.l, a.r);
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { a.compile(sch); }, {"rolling_update(l, r.x)", "cannot repair reduction l",
                                  "producer m", "no repair h(t, r, r') exists", "sin_f32"}));
    // The same chain computes fine without the directive.
    EXPECT_NO_THROW(a.compile(Schedule()));
}

TEST(FusionErrors, ProductOfTermsReadingTheProducer) {
    // (Sums of (x - m)^2 are repaired by carrying running sums; see
    // ReductionFusion.SinglePassVariance. A product of such terms is not.)
    Rows a;
    Func pr("pr");
    pr(a.i) = product(a.x(a.i, a.r) - a.m(a.i));
    a.out(a.i) = pr(a.i);
    Schedule sch;
    sch.split_k(pr, a.r, 2, Var("c"));
    EXPECT_TRUE(throws_with<CompileError>([&] { a.compile(sch); },
                                          {"split_k(pr, r.x)", "cannot repair reduction pr",
                                           "products of terms that read a running producer"}));
}

TEST(FusionErrors, NotAReduction) {
    Rows a;
    Func plain("plain");
    plain(a.i) = a.x(a.i, 0) * 2.0f;
    Schedule sch;
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { sch.rolling_update(plain, a.r); },
        {"rolling_update(plain, r.x)", "not a reduction over", "inline reduction"}));
}

TEST(FusionErrors, WrongRVar) {
    Rows a;
    RDom other(0, 4, "other");
    a.l(a.i) = sum(exp(a.x(a.i, a.r) - a.m(a.i)));
    Schedule sch;
    EXPECT_TRUE(throws_with<CompileError>([&] { sch.rolling_update(a.l, other); },
                                          {"rolling_update(l, other.x)", "not a reduction over"}));
}

TEST(FusionErrors, NoChainToFuse) {
    Rows a;
    a.l(a.i) = sum(a.x(a.i, a.r));  // reads no other reduction over r
    a.out(a.i) = a.l(a.i) + a.m(a.i);
    Schedule sch;
    sch.rolling_update(a.l, a.r);
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { a.compile(sch); },
        {"rolling_update(l, r.x)", "reads no other reduction", "no chain to fuse"}));
}

TEST(FusionErrors, RollingUpdateFromTheChainsFirstReduction) {
    // m reads no other reduction, but l reads it: rolling_update(m) would
    // roll l's chain from the wrong end. (split_k of m alone is rfactor,
    // l then reads its result: SplitK.ALoneReductionIsSplitAsRfactor.)
    Rows a;
    a.l(a.i) = sum(exp(a.x(a.i, a.r) - a.m(a.i)));
    a.out(a.i) = a.l(a.i);
    Schedule rolled;
    rolled.rolling_update(a.m, a.r);
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { a.compile(rolled); },
        {"rolling_update(m, r.x): m reads no other reduction over r.x, but l reads it",
         "the chain ends at l", "Give the directive to it instead"}));
}

TEST(FusionErrors, DependentMustStartAtIdentity) {
    Rows a;
    a.l(a.i) = 1.0f;
    a.l(a.i) += exp(a.x(a.i, a.r) - a.m(a.i));
    a.out(a.i) = a.l(a.i);
    Schedule sch;
    sch.rolling_update(a.l, a.r);
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { a.compile(sch); }, {"rolling_update(l, r.x)", "must start at the identity", "1.0f"}));
}

TEST(FusionErrors, ProducerReadElsewhere) {
    Rows a;
    a.l(a.i) = sum(exp(a.x(a.i, a.r) - a.m(a.i + 1)));
    a.out(a.i) = a.l(a.i);
    Schedule sch;
    sch.rolling_update(a.l, a.r);
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { a.compile(sch); }, {"rolling_update(l, r.x)", "reads the reduction m", "own Vars"}));
}

TEST(FusionErrors, TileLoopMustBeSerial) {
    Rows a;
    a.l(a.i) = sum(exp(a.x(a.i, a.r) - a.m(a.i)));
    a.out(a.i) = a.l(a.i);
    Schedule sch;
    RVar ro("ro"), ri("ri");
    sch.rolling_update(a.l, a.r).split(a.r, ro, ri, 4).unroll(ri);
    sch[a.l].compute_root();
    EXPECT_NO_THROW(a.compile(sch));
    Schedule bad;
    // The update's loop over r carries a dependence, so it cannot be
    // parallel even before fusion; the directive's stage says so.
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { bad.rolling_update(a.l, a.r).split(a.r, ro, ri, 4).parallel(ro); },
        {"cannot parallelize", "ro", "carries a dependence"}));
}

TEST(FusionErrors, SplitKArguments) {
    Rows a;
    a.l(a.i) = sum(exp(a.x(a.i, a.r) - a.m(a.i)));
    Schedule sch;
    EXPECT_TRUE(throws_with<CompileError>([&] { sch.split_k(a.l, a.r, 0, Var("c")); },
                                          {"split_k(l, r.x)", "chunks is 0", "positive"}));
    EXPECT_TRUE(throws_with<CompileError>([&] { sch.split_k(a.l, a.r, 4, a.i); },
                                          {"split_k(l, r.x)", "chunk Var 'i'", "fresh Var"}));
    sch.split_k(a.l, a.r, 4, Var("c"));
    EXPECT_TRUE(throws_with<CompileError>([&] { sch.rolling_update(a.l, a.r); },
                                          {"rolling_update(l, r.x)", "already has a split_k"}));
}

TEST(FusionErrors, SplitKChunksFromAParamMustBePositive) {
    // A count known only at run time is checked then: with no chunk, the
    // combine would make the identities (zeros), a wrong answer.
    for (ChunkLayout layout : {ChunkLayout::Contiguous, ChunkLayout::Interleaved}) {
        Rows a;
        a.l(a.i) = sum(exp(a.x(a.i, a.r) - a.m(a.i)));
        a.out(a.i) = a.l(a.i);
        Param<int> chunks("chunks");
        Schedule sch;
        sch.split_k(a.l, a.r, chunks, Var("c"), layout).compute_root();
        sch[a.l].compute_root();
        CompiledPipeline p = Pipeline(a.out).compile(sch);
        Buffer<float> out({3}), expected(interpret(a.out, {3}));
        for (int k : {0, -3}) {
            chunks.set(k);
            EXPECT_TRUE(throws_with<RuntimeError>(
                [&] { p.realize({out}); },
                {"split_k(l, r.x)", "number of chunks is " + std::to_string(k), "positive"}));
        }
        chunks.set(4);
        p.realize({out});
        EXPECT_TRUE(loom_test::buffers_match(out, expected, 1e-5, 1e-5));
    }
}

TEST(FusionErrors, MultiDimensionalRDom) {
    BufferParam x(Float(32), 3, "x");
    Var i("i");
    RDom r({{0, x.dim(1).extent()}, {0, x.dim(2).extent()}}, "r");
    Func m("m"), l("l"), out("out");
    m(i) = maximum(x(i, r.x, r.y));
    l(i) = sum(exp(x(i, r.x, r.y) - m(i)));
    out(i) = l(i);
    Schedule sch;
    sch.rolling_update(l, r.x);
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { Pipeline(out).compile(sch); },
        {"rolling_update(l, r.x)", "2 dimensions", "one-dimensional RDom"}));
}

TEST(FusionErrors, NoResetForTermsNearTheMax) {
    // Terms within 1 of the max do not simply vanish when the max moves (a
    // term may still be within 1 of the new max): no reset repair, and no
    // other.
    Rows a;
    a.l(a.i) = sum(select(a.x(a.i, a.r) >= a.m(a.i) - 1.0f, a.x(a.i, a.r), 0.0f));
    a.out(a.i) = a.l(a.i);
    Schedule sch;
    sch.rolling_update(a.l, a.r);
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { a.compile(sch); }, {"cannot repair reduction l", "producer m", "no repair"}));
}

TEST(FusionErrors, DependentThatDoesNotVanishWhereTheMaxIsMasked) {
    // The max reads masked scores, the sum reads x itself: where a row's
    // keys are masked so far, the fused loop has no max to repair against
    // and skips the points, but exp(x - m) is not 0 there.
    Rows a;
    Var j("j");
    Func s("s");
    s(a.i, j) = select(j <= a.i, a.x(a.i, j), -std::numeric_limits<float>::infinity());
    Func m2("m2");
    m2(a.i) = maximum(s(a.i, a.r));
    a.l(a.i) = sum(exp(a.x(a.i, a.r) - m2(a.i)));
    a.out(a.i) = a.l(a.i);
    Schedule sch;
    sch.rolling_update(a.l, a.r);
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { a.compile(sch); },
        {"rolling_update(l, r.x)", "cannot repair reduction l", "producer m2",
         "its terms are not 0.0f where the terms of m2 are -inff (masked)", "would drop them"}));
    // Reading the masked scores instead, the terms vanish and it fuses.
    Func l2("l2"), out2("out2");
    l2(a.i) = sum(exp(s(a.i, a.r) - m2(a.i)));
    out2(a.i) = l2(a.i);
    Schedule ok;
    ok.rolling_update(l2, a.r);
    EXPECT_NO_THROW(Pipeline(out2).compile(ok));
}

TEST(FusionErrors, DirectivesTheFusedLoopsWouldDrop) {
    // The fused chain runs in the loops of the stage rolling_update (or
    // split_k) returns: a schedule given to a member's own loops, or a
    // placement given to a member other than the one fused, would be
    // ignored, so it is refused with the stage to use instead.
    Rows a;
    a.m = Func("mx");
    a.m(a.i) = -std::numeric_limits<float>::infinity();
    a.m(a.i) = max(a.m(a.i), a.x(a.i, a.r));
    a.l(a.i) = 0.0f;
    a.l(a.i) += exp(a.x(a.i, a.r) - a.m(a.i));
    a.out(a.i) = a.l(a.i);
    Var io("io"), ii("ii"), c("c");
    {
        Schedule sch;
        sch.rolling_update(a.l, a.r);
        sch[a.l].compute_root().vectorize(a.i, 4);
        EXPECT_TRUE(throws_with<CompileError>(
            [&] { a.compile(sch); }, {"rolling_update(l, r.x)", "pure definition of l", "sch[l]",
                                      "Give them to the stage rolling_update returns"}));
    }
    {
        Schedule sch;
        sch.rolling_update(a.l, a.r);
        sch[a.m].compute_root();
        EXPECT_TRUE(throws_with<CompileError>(
            [&] { a.compile(sch); },
            {"mx is fused into l's pass over r.x", "(compute_root())", "place l instead"}));
    }
    {
        Schedule sch;
        sch.rolling_update(a.l, a.r);
        sch[a.m].update().split(a.i, io, ii, 2);
        EXPECT_TRUE(throws_with<CompileError>([&] { a.compile(sch); },
                                              {"mx is fused into l's pass", "sch[mx].update()"}));
    }
    {
        Schedule sch;
        sch.split_k(a.l, a.r, 2, c).compute_root();
        sch[a.l].update().split(a.i, io, ii, 2);
        EXPECT_TRUE(throws_with<CompileError>(
            [&] { a.compile(sch); },
            {"split_k(l, r.x)", "each chunk's rolling pass", "sch[l].update()", "l_partial"}));
    }
    // Without them, each compiles; and split_k's members keep their own
    // placement and loops, which schedule their combines.
    Schedule rolled;
    rolled.rolling_update(a.l, a.r);
    rolled[a.l].compute_root();
    EXPECT_NO_THROW(a.compile(rolled));
    Schedule chunked;
    chunked.split_k(a.l, a.r, 2, c).compute_root();
    chunked[a.l].compute_root().vectorize(a.i, 4);
    chunked[a.m].compute_root().vectorize(a.i, 4);
    EXPECT_NO_THROW(a.compile(chunked));
}

TEST(FusionErrors, FusingARowVarWithAVarOfTheFusedReductionAlone) {
    // The rows may be split, fused and renamed in the fused update; a loop
    // over a row and the leader's own d would be the leader's alone.
    WeightedAverage a;
    Var id("id");
    Schedule sch;
    sch.rolling_update(a.o, a.r).reorder(a.r, a.i, a.d).fuse(a.i, a.d, id);
    sch[a.o].compute_root();
    EXPECT_TRUE(
        throws_with<CompileError>([&] { Pipeline(a.out).compile(sch); },
                                  {"rolling_update(o, r.x): fuse(i, d) joins i",
                                   "with d, which o alone has", "Fuse Vars of one kind only"}));
}

TEST(FusionErrors, GpuLoopsOnAVarOfTheFusedReductionAlone) {
    // The weighted average o(i, d) rolled with m and l, which have no d:
    // their step runs once per row, outside o's loop over d. With that loop
    // on the GPU's threads, every thread of a row made the step, and l came
    // out eight times too large.
    WeightedAverage a;
    Var io("io"), ii("ii"), dout("dout"), di("di"), c("c");
    const Var &i = a.i, &d = a.d;
    const RDom &r = a.r;
    const Func &o = a.o, &out = a.out;
    const Target gpu("host-cuda-sm_90");
    Schedule rolled;
    rolled[out]
        .split(i, io, ii, 4)
        .split(d, dout, di, 8)
        .reorder(io, dout, ii, di)
        .gpu_blocks(dout, io)
        .gpu_threads(di, ii);
    rolled[o].compute_at(out, dout);
    Schedule threads_over_d = rolled.clone();
    threads_over_d.rolling_update(o, r).gpu_threads(d, i);
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { Pipeline(out).compile_to_cuda(threads_over_d, gpu); },
        {"rolling_update(o, r.x): d is a Var of o alone (m and l have none)",
         "updates them once per point of i", "gpu_threads loop, each of its threads",
         "keep d within each thread"}));
    // split_k's pieces the same way.
    Schedule chunks;
    chunks.split_k(o, r, 4, c)
        .compute_root()
        .split(d, dout, di, 4)
        .gpu_blocks(c, i)
        .gpu_threads(di);
    chunks[o].compute_root().gpu_blocks(i).gpu_threads(d);
    chunks[out].gpu_blocks(i).gpu_threads(d);
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { Pipeline(out).compile_to_cuda(chunks, gpu); },
        {"split_k(o, r.x): d is a Var of o alone", "the loop di", "once per point of c, i"}));
    // A thread per row, d within it, compiles.
    Schedule threads_over_i = rolled.clone();
    threads_over_i.rolling_update(o, r).gpu_threads(i);
    EXPECT_NO_THROW(Pipeline(out).compile_to_cuda(threads_over_i, gpu));
}

TEST(FusionErrors, BoundOnAChainMember) {
    // The chain decides the region its members are computed over.
    BufferParam x(Float(32), 2, "x");
    Var i("i");
    RDom r(0, x.dim(1).extent(), "r");
    Func m("m"), l("l"), out("out");
    m(i) = cast<float>(-1e30f);
    m(i) = max(m(i), x(i, r));
    l(i) = 0.0f;
    l(i) += exp(x(i, r) - m(i));
    out(i) = l(i);
    Schedule sch;
    sch.rolling_update(l, r);
    sch[m].bound(i, 0, 3);
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { Pipeline(out).compile(sch); },
        {"Func m is bounded", "computed in the fused loops of l", "Drop the bound"}));
}

TEST(FusionErrors, NoStateServesEveryDependent) {
    // a needs its state kept about the running mean (about the running sum
    // S, exp(x - S/n) overflows), b about the running sum (about S * N /
    // count, exp(x - S) overflows early on): one producer, no stable form.
    BufferParam x(Float(32), 2, "x");
    Var i("i");
    RDom r(0, x.dim(1).extent(), "r");
    Func s("s"), a("a"), b("b"), out("out");
    Expr n = cast<float>(x.dim(1).extent());
    s(i) = sum(x(i, r));
    a(i) = sum(exp(x(i, r) - s(i) / n));
    b(i) = sum(exp(x(i, r) - s(i)));
    out(i) = a(i) + b(i);
    x.set(random_buffer<float>({3, 9}));
    Schedule sch;
    sch.rolling_update(b, r);
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { Pipeline(out).compile(sch); },
        {"rolling_update(b, r.x): the fused form of reduction", "is numerically unstable",
         "no state serves every dependent of s", "Compute"}));
    EXPECT_NO_THROW(Pipeline(out).compile(Schedule()));
}

TEST(FusionErrors, ErrorsAboutMadeFuncsNameTheirOrigin) {
    // The partials split_k makes are placed by the Stage it returns: placed
    // inside out's loop while the combine is at root, they are refused by a
    // message that says which directive made them and how to place them.
    Rows a;
    a.l(a.i) = sum(exp(a.x(a.i, a.r) - a.m(a.i)));
    a.out(a.i) = a.m(a.i) + log(a.l(a.i));
    Schedule sch;
    sch.split_k(a.l, a.r, 3, Var("c")).compute_at(a.out, a.i);
    sch[a.l].compute_root();
    sch[a.m].compute_root();
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { a.compile(sch); },
        {"_partial (the partial values of", "per chunk, which split_k(l, r.x) makes",
         "placed and looped by the Stage that split_k returns", "sch.split_k(...).compute_root()",
         "is used outside the loop where it is computed"}));
}
