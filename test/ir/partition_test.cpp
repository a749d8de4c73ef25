// Tests of partition_loops: guarded loops split into a clean steady state and
// guarded prologue/epilogue, checked for structure and, through a small
// loop-IR interpreter, for computing what the original loop computes.
#include <gtest/gtest.h>

#include "ir/IRPrinter.h"
#include "lower/PartitionLoops.h"
#include "lower/VectorizeLoops.h"
#include "loom/IROperator.h"
#include "loop_ir_eval.h"

using namespace loom;
using namespace loom::internal;
using loom_test::any_node;
using loom_test::collect_nodes;
using loom_test::LoopIREval;

namespace {

// likely(e), built directly.
Expr likely_(const Expr &e) { return Call::make(e.type(), Call::likely, {e}, Call::PureIntrinsic); }

Expr var(const std::string &n) { return Variable::make(Int(32), n); }
Stmt store(const std::string &buf, Expr value, Expr idx) {
    return Store::make(buf, std::move(value), std::move(idx), Expr());
}
Expr load(const std::string &buf, Expr idx) { return Load::make(Int(32), buf, idx, Expr()); }

bool has_likely_(const Stmt &s) {
    struct V : IRVisitor {
        bool found = false;
        using IRVisitor::visit;
        void visit(const Call *op) override {
            if (op->is_intrinsic(Call::likely)) found = true;
            IRVisitor::visit(op);
        }
    } v;
    s.accept(&v);
    return v.found;
}

// The loops over `name`, in program order.
std::vector<const For *> loops_named(const Stmt &s, const std::string &name) {
    std::vector<const For *> out;
    for (const For *f : collect_nodes<For>(s)) {
        if (f->name == name) out.push_back(f);
    }
    return out;
}

void expect_same(const Stmt &a, const Stmt &b, std::map<std::string, std::vector<double>> bufs,
                 std::map<std::string, int64_t> scalars) {
    LoopIREval ea, eb;
    ea.buffers = eb.buffers = bufs;
    for (const auto &kv : scalars) {
        ea.set_var(kv.first, kv.second);
        eb.set_var(kv.first, kv.second);
    }
    ea.run(a);
    ASSERT_NO_THROW(eb.run(b)) << b;
    for (const auto &kv : bufs) EXPECT_EQ(ea.buffers[kv.first], eb.buffers[kv.first]) << b;
}

// Work every iteration does whatever the guards say (work[0] += 1): an
// effect outside the guard, so the loop cannot simply be trimmed to the
// iterations where the guard holds, and must be partitioned.
Stmt with_unguarded_work(const Stmt &guarded) {
    return Block::make(store("work", load("work", 0) + 1, 0), guarded);
}

// for xo in [0, (n + 7) / 8): for xi in [0, 8) (of type t):
//   [work[0] += 1]
//   if (likely_(xo * 8 + xi < n)) out[xo * 8 + xi] = in[xo * 8 + xi] * 2
Stmt split_tail(ForType inner_type, bool unguarded_work = true) {
    Expr xo = var("xo"), xi = var("xi"), n = var("n");
    Expr idx = xo * 8 + xi;
    Stmt guarded = IfThenElse::make(likely_(idx < n), store("out", load("in", idx) * 2, idx));
    if (unguarded_work) guarded = with_unguarded_work(guarded);
    return For::make("xo", 0, (n + 7) / 8, ForType::Serial,
                     For::make("xi", 0, 8, inner_type, guarded));
}

TEST(PartitionLoops, SplitTailGetsSteadyStateAndEpilogue) {
    Stmt s = split_tail(ForType::Serial);
    Stmt p = partition_loops(s);
    auto outer = loops_named(p, "xo");
    ASSERT_EQ(outer.size(), 2u) << p;  // steady state, epilogue
    EXPECT_FALSE(any_node(outer[0]->body, [](const Stmt &n) { return n.as<IfThenElse>(); }))
        << "the steady state has no guard:\n"
        << p;
    EXPECT_FALSE(has_likely_(outer[0]->body));
    EXPECT_TRUE(any_node(outer[1]->body, [](const Stmt &n) { return n.as<IfThenElse>(); }))
        << "the epilogue keeps its guard:\n"
        << p;
    // The interpreter checks bounds: a steady state that ran too far would
    // read or write past the end of the buffers.
    for (int n : {0, 1, 7, 8, 9, 16, 23}) {
        expect_same(
            s, p,
            {{"in", std::vector<double>(n, 3)}, {"out", std::vector<double>(n, 0)}, {"work", {0}}},
            {{"n", n}});
    }
}

TEST(PartitionLoops, GuardOfEveryEffectTrimsTheLoop) {
    // Without the unguarded work, iterations where the guard fails do
    // nothing: the inner loop runs only where it holds (no epilogue copy),
    // the guard disappears, and the outer loop has nothing to partition.
    Stmt s = split_tail(ForType::Serial, /*unguarded_work=*/false);
    Stmt p = partition_loops(s);
    EXPECT_EQ(loops_named(p, "xo").size(), 1u) << p;
    EXPECT_EQ(loops_named(p, "xi").size(), 1u) << p;
    EXPECT_FALSE(has_likely_(p)) << p;
    EXPECT_FALSE(any_node(p, [](const Stmt &n) { return n.as<IfThenElse>(); })) << p;
    for (int n : {0, 1, 7, 8, 9, 16, 23}) {
        expect_same(s, p, {{"in", std::vector<double>(n, 3)}, {"out", std::vector<double>(n, 0)}},
                    {{"n", n}});
    }
}

TEST(PartitionLoops, ScratchWorkInsideTheIterationDoesNotPreventTrimming) {
    // A producer computed inside each iteration (into memory allocated
    // there), consumed under the guard, as compute_at inside a GuardWithIf
    // split gives: its work is wasted where the guard fails, so the loop is
    // trimmed.
    Expr x = var("x"), n = var("n");
    Stmt produce = store("tmp", load("in", Min::make(x, n - 1)) + 1, 0);
    Stmt consume = IfThenElse::make(likely_(x < n), store("out", load("tmp", 0) * 3, x));
    Stmt body = Allocate::make("tmp", Int(32), MemoryType::Auto, {Expr(1)}, const_true(),
                               Block::make(produce, consume));
    Stmt s = For::make("x", 0, (n + 3) / 4 * 4, ForType::Parallel, body);
    Stmt p = partition_loops(s);
    auto loops = loops_named(p, "x");
    ASSERT_EQ(loops.size(), 1u) << p;
    EXPECT_EQ(loops[0]->for_type, ForType::Parallel);
    EXPECT_FALSE(has_likely_(p)) << p;
    for (int n : {1, 4, 6, 9}) {
        expect_same(s, p, {{"in", std::vector<double>(n, 3)}, {"out", std::vector<double>(n, 0)}},
                    {{"n", n}});
    }
}

TEST(PartitionLoops, ThenVectorizeGivesCleanSteadyState) {
    Stmt s = split_tail(ForType::Vectorized, /*unguarded_work=*/false);
    Stmt v = vectorize_loops(partition_loops(s), Target("host"));
    auto loops = loops_named(v, "xo");
    ASSERT_EQ(loops.size(), 2u) << v;  // steady state, epilogue
    auto steady = collect_nodes<Store>(loops[0]->body);
    ASSERT_EQ(steady.size(), 1u) << v;
    EXPECT_TRUE(is_const_one(steady[0]->predicate)) << "steady state: an unmasked store\n" << v;
    EXPECT_TRUE(collect_nodes<IfThenElse>(loops[0]->body).empty()) << v;
    // The epilogue's vector is dense when all its lanes are in (n a
    // multiple of 8), masked otherwise.
    auto epilogue = collect_nodes<Store>(loops[1]->body);
    ASSERT_EQ(epilogue.size(), 2u) << v;
    EXPECT_TRUE(is_const_one(epilogue[0]->predicate)) << v;
    EXPECT_FALSE(is_const(epilogue[1]->predicate)) << "epilogue: a masked store\n" << v;
    for (int n : {0, 3, 8, 21}) {
        expect_same(s, v, {{"in", std::vector<double>(n, 3)}, {"out", std::vector<double>(n, 0)}},
                    {{"n", n}});
    }
}

TEST(PartitionLoops, LowerBoundGivesPrologue) {
    // for x in [0, 20): out[x] = select(likely_(x >= m), in[x], -1)
    Expr x = var("x"), m = var("m");
    Stmt s = For::make("x", 0, 20, ForType::Serial,
                       store("out", select(likely_(x >= m), load("in", x), -1), x));
    Stmt p = partition_loops(s);
    auto loops = loops_named(p, "x");
    ASSERT_EQ(loops.size(), 2u) << p;  // prologue, steady state
    EXPECT_FALSE(any_node(loops[1]->body, [](const Stmt &n) {
        const Store *st = n.as<Store>();
        return st && st->value.as<Select>();
    })) << p;
    for (int mv : {-5, 0, 3, 19, 20, 30}) {
        expect_same(s, p, {{"in", std::vector<double>(20, 4)}, {"out", std::vector<double>(20, 0)}},
                    {{"m", mv}});
    }
}

TEST(PartitionLoops, BothBoundsAndLets) {
    // for x in [lo, lo + 30): let i = x - 2 in
    //   [work[0] += 1]
    //   if (likely_(i >= 0 && i < n)) out[i] = x
    // Partitioned in three with the work, trimmed at both ends without it.
    Expr x = var("x"), i = var("i"), n = var("n"), lo = var("lo");
    for (bool work : {true, false}) {
        Stmt guarded = IfThenElse::make(likely_(i >= 0 && i < n), store("out", x, i));
        Stmt body = LetStmt::make("i", x - 2, work ? with_unguarded_work(guarded) : guarded);
        Stmt s = For::make("x", lo, 30, ForType::Parallel, body);
        Stmt p = partition_loops(s);
        auto loops = loops_named(p, "x");
        ASSERT_EQ(loops.size(), work ? 3u : 1u) << p;
        for (const For *f : loops) EXPECT_EQ(f->for_type, ForType::Parallel);
        EXPECT_FALSE(any_node(loops[work ? 1 : 0]->body, [](const Stmt &st) {
            return st.as<IfThenElse>();
        })) << p;
        for (int lov : {-10, 0, 5}) {
            for (int nv : {0, 4, 12, 40}) {
                expect_same(s, p, {{"out", std::vector<double>(nv, 0)}, {"work", {0}}},
                            {{"n", nv}, {"lo", lov}});
            }
        }
    }
}

TEST(PartitionLoops, ConjunctOfAnotherLoopIsKept) {
    // for y: for x: if (likely_(x < w && y < h)) out[y * 8 + x] = 1
    // Partitioning x solves x < w; y < h stays (as likely) for the y loop.
    Expr x = var("x"), y = var("y"), w = var("w"), h = var("h");
    Stmt inner = For::make(
        "x", 0, 8, ForType::Serial,
        with_unguarded_work(IfThenElse::make(likely_(x < w && y < h), store("out", 1, y * 8 + x))));
    Stmt s = For::make("y", 0, 8, ForType::Serial, inner);
    Stmt p = partition_loops(s);
    EXPECT_GE(loops_named(p, "x").size(), 2u) << p;
    EXPECT_GE(loops_named(p, "y").size(), 2u) << p;
    for (int wv : {0, 3, 8}) {
        for (int hv : {0, 5, 9}) {
            expect_same(s, p, {{"out", std::vector<double>(64, 0)}, {"work", {0}}},
                        {{"w", wv}, {"h", hv}});
        }
    }
}

TEST(PartitionLoops, OnlyTheSteadyStateIsPartitionedFurther) {
    // Two guarded splits, as a 2-D tiling with GuardWithIf gives:
    //   for yo: for yi: for xo: for xi:
    //     if (likely_(yo*4 + yi < h && xo*4 + xi < w)) out[...] = 1
    // Partitioning yo removes y's guard from its steady state, where xo is
    // then partitioned on x's guard. The epilogue of yo keeps the original
    // nest: partitioning its inner loops too would copy the whole nest once
    // more per guarded level, for iterations that rarely run.
    Expr yo = var("yo"), yi = var("yi"), xo = var("xo"), xi = var("xi");
    Expr w = var("w"), h = var("h");
    Expr y = yo * 4 + yi, x = xo * 4 + xi;
    Stmt body =
        with_unguarded_work(IfThenElse::make(likely_(y < h && x < w), store("out", 1, y * 16 + x)));
    Stmt s = For::make("xi", 0, 4, ForType::Serial, body);
    s = For::make("xo", 0, (w + 3) / 4, ForType::Serial, s);
    s = For::make("yi", 0, 4, ForType::Serial, s);
    s = For::make("yo", 0, (h + 3) / 4, ForType::Serial, s);
    Stmt p = partition_loops(s);
    EXPECT_EQ(loops_named(p, "yo").size(), 2u) << p;  // steady state, epilogue
    EXPECT_EQ(loops_named(p, "xo").size(), 3u) << p;  // 2 in yo's steady state, 1 after
    for (int wv : {0, 3, 8, 13, 16}) {
        for (int hv : {0, 5, 12, 16}) {
            expect_same(s, p, {{"out", std::vector<double>(256, 0)}, {"work", {0}}},
                        {{"w", wv}, {"h", hv}});
        }
    }
}

TEST(PartitionLoops, UnsolvableConditionLeavesLoopAlone) {
    Expr x = var("x"), n = var("n");
    Stmt s = For::make("x", 0, 10, ForType::Serial,
                       IfThenElse::make(likely_(x * x < n), store("out", x, x)));
    EXPECT_TRUE(partition_loops(s).same_as(s));
    Stmt no_likely =
        For::make("x", 0, 10, ForType::Serial, IfThenElse::make(x < n, store("out", x, x)));
    EXPECT_TRUE(partition_loops(no_likely).same_as(no_likely));
}

TEST(PartitionLoops, ConditionOnLoadedValueIsNotHoisted) {
    // likely_(x < lim[0]) where the loop itself writes lim: not solvable.
    Expr x = var("x");
    Stmt s = For::make("x", 0, 10, ForType::Serial,
                       IfThenElse::make(likely_(x < load("lim", 0)), store("lim", x, 0)));
    EXPECT_TRUE(partition_loops(s).same_as(s));
}

}  // namespace

namespace {

TEST(PartitionLoops, SplitTailByTwoKeepsOnlyTheFirstHalf) {
    // An RVar split by 2 with the inner loop unrolled, as GEMM's k:
    //   for ko in [0, (n + 1) / 2):
    //     let k = ko * 2 in if (likely_(k < n)) acc[0] += in[k]
    //     let k = ko * 2 + 1 in if (likely_(k < n)) acc[0] += in[k]
    // The steady state holds both halves unguarded; the epilogue (one
    // iteration, when n is odd) fails the second half's condition, so it
    // keeps only the first half, as Halide's does.
    Expr ko = var("ko"), k = var("k"), n = var("n");
    auto half = [&](int j) {
        return LetStmt::make(
            "k", ko * 2 + j,
            IfThenElse::make(likely_(k < n), store("acc", load("acc", 0) + load("in", k), 0)));
    };
    Stmt s = For::make("ko", 0, (n + 1) / 2, ForType::Serial, Block::make(half(0), half(1)));
    Stmt p = partition_loops(s);
    auto loops = loops_named(p, "ko");
    ASSERT_EQ(loops.size(), 2u) << p;
    EXPECT_EQ(collect_nodes<Store>(loops[0]->body).size(), 2u) << p;
    EXPECT_EQ(collect_nodes<Store>(loops[1]->body).size(), 1u) << p;
    for (int nv : {0, 1, 2, 5, 8, 11}) {
        expect_same(s, p, {{"in", std::vector<double>(nv, 2)}, {"acc", {0}}}, {{"n", nv}});
    }
}

}  // namespace

namespace {

TEST(PartitionLoops, FactsOnlyFromConditionsSolvedEverywhere) {
    // likely_(i < n) is one call under two lets: i = x (solvable) and
    // i = x * x (not). It is not solved, so the steady state (of x < m) must
    // not assume n > x, and min(x, n - 1) stays as it is.
    Expr x = var("x"), i = var("i"), n = var("n"), m = var("m");
    Expr shared = likely_(i < n);
    Stmt a = LetStmt::make("i", x, IfThenElse::make(shared, store("a", 1, x)));
    Stmt b = LetStmt::make("i", x * x, IfThenElse::make(shared, store("b", 1, x)));
    Stmt c = IfThenElse::make(likely_(x < m), store("c", Min::make(x, n - 1), x));
    Stmt s = For::make("x", 0, 12, ForType::Serial, Block::make({a, b, c}));
    Stmt p = partition_loops(s);
    for (int nv : {0, 3, 20}) {
        for (int mv : {0, 5, 12}) {
            expect_same(s, p,
                        {{"a", std::vector<double>(12, 0)},
                         {"b", std::vector<double>(12, 0)},
                         {"c", std::vector<double>(12, -9)}},
                        {{"n", nv}, {"m", mv}});
        }
    }
}

}  // namespace

namespace {

// A GPU block's loop over tiles of 4 of n keys, around its threads (t),
// the tile's keys unrolled: each thread adds them to its own element of
// acc (as FlashAttention's threads to their running values), or, with
// reduce, to an element every thread shares (a reduction across the
// threads, as a row sum's).
Stmt block_loop_over_tiles(bool reduce) {
    Expr ro = var("f.s1.ro"), t = var("f.s1.t"), n = var("n");
    Expr target = reduce ? Expr(0) : t;
    std::vector<Stmt> body{store("work", load("work", t) + 1, t)};
    for (int ri = 0; ri < 4; ri++) {
        Expr key = ro * 4 + ri;
        body.push_back(IfThenElse::make(
            likely_(key < n),
            store("acc", load("acc", target) + load("in", key) * (t + 1), target)));
    }
    Stmt thread = For::make("f.s1.t", 0, 8, ForType::GPUThread, Block::make(body));
    return For::make("f.s0.block", 0, 1, ForType::GPUBlock,
                     For::make("f.s1.ro", 0, (n + 3) / 4, ForType::Serial, thread));
}

TEST(PartitionLoops, ABlocksLoopOverTilesIsPartitionedUnlessItsThreadsReduce) {
    // Every thread of the block runs the same partition, so the barriers
    // of the tiles' staging still meet: the full tiles run unguarded.
    Stmt s = block_loop_over_tiles(false);
    Stmt p = partition_loops(s);
    auto tiles = loops_named(p, "f.s1.ro");
    ASSERT_EQ(tiles.size(), 2u) << p;
    EXPECT_FALSE(has_likely_(tiles[0]->body)) << p;
    for (int n : {0, 1, 3, 4, 5, 12, 13}) {
        expect_same(s, p,
                    {{"in", std::vector<double>(n, 2)},
                     {"acc", std::vector<double>(8, 0)},
                     {"work", std::vector<double>(8, 0)}},
                    {{"n", n}});
    }
    // Reducing across the threads, each partition would combine the
    // threads' partials after it: the loop is left whole.
    Stmt r = block_loop_over_tiles(true);
    EXPECT_EQ(loops_named(partition_loops(r), "f.s1.ro").size(), 1u);
}

}  // namespace
