// Tests of align_vector_accesses: what it proves about the first lane of
// vector loads and stores, through lets and with facts about symbols, and
// what it must not claim; and of invariant_alignments, which finds the
// accesses of a loop that one test before it can stand for.
#include <gtest/gtest.h>

#include "lower/AlignVectorAccesses.h"
#include "ir/IREquality.h"
#include "ir/IRPrinter.h"
#include "ir/IRVisitor.h"
#include "arith/InvariantAlignment.h"
#include "loom/IROperator.h"

using namespace loom;
using namespace loom::internal;

namespace {

Expr var(const std::string &n) { return Variable::make(Int(32), n); }

/** The alignment recorded on the (single) vector store to `buf` in s. */
ModulusRemainder store_alignment(const Stmt &s, const std::string &buf) {
    struct Find : IRVisitor {
        std::string buf;
        ModulusRemainder found{-1, -1};
        using IRVisitor::visit;
        void visit(const Store *op) override {
            if (op->name == buf) found = op->alignment;
            IRVisitor::visit(op);
        }
    } find;
    find.buf = buf;
    s.accept(&find);
    EXPECT_NE(find.found.modulus, -1) << "no store to " << buf;
    return find.found;
}

/** out[ramp(index, 1, 4)] = in[ramp(index, 1, 4)] inside `wrap`. */
Stmt copy_four(const Expr &index) {
    Expr ramp = Ramp::make(index, 1, 4);
    return Store::make("out", Load::make(Float(32).with_lanes(4), "in", ramp, Expr()), ramp,
                       Expr());
}

}  // namespace

TEST(AlignVectorAccesses, SeesThroughLetsThatCancel) {
    // c = m + co * 8 + ci * 4, stored at c - m: a multiple of 4 whatever m is.
    Stmt s = copy_four(var("c") - var("m"));
    s = LetStmt::make("c", var("base") + var("ci") * 4, s);
    s = LetStmt::make("base", var("m") + var("co") * 8, s);
    s = For::make("ci", 0, 16, ForType::Serial, s);
    s = For::make("co", 0, var("n"), ForType::Serial, s);
    Stmt aligned = align_vector_accesses(s, Scope<ModulusRemainder>());
    ModulusRemainder a = store_alignment(aligned, "out");
    EXPECT_EQ(a.modulus, 4);
    EXPECT_EQ(a.remainder, 0);
    // The load has the same index.
    struct Loads : IRVisitor {
        ModulusRemainder seen;
        using IRVisitor::visit;
        void visit(const Load *op) override { seen = op->alignment; }
    } loads;
    aligned.accept(&loads);
    EXPECT_EQ(loads.seen.modulus, 4);
    // Without the cancelling m, nothing is known.
    Stmt t = LetStmt::make("c", var("m") + var("ci") * 4, copy_four(var("c")));
    EXPECT_EQ(store_alignment(align_vector_accesses(t, Scope<ModulusRemainder>()), "out").modulus,
              1);
}

TEST(AlignVectorAccesses, UsesFactsAboutStrides) {
    // Row y of a matrix: y * stride + x4 * 4.
    Expr index = var("y") * var("in.stride.0") + var("x4") * 4 + 2;
    Stmt s = copy_four(index);
    EXPECT_EQ(store_alignment(align_vector_accesses(s, Scope<ModulusRemainder>()), "out").modulus,
              1);
    Scope<ModulusRemainder> facts;
    facts.push("in.stride.0", ModulusRemainder(8, 0));
    ModulusRemainder a = store_alignment(align_vector_accesses(s, facts), "out");
    EXPECT_EQ(a.modulus, 4);
    EXPECT_EQ(a.remainder, 2);
}

TEST(AlignVectorAccesses, ALoopOrALetOfUnknownValueHidesAnOuterLet) {
    // c is 8 * k outside, but the loop's own c (any integer) is what the
    // store uses.
    Stmt inner = For::make("c", 0, 10, ForType::Serial, copy_four(var("c") * 2));
    Stmt s = LetStmt::make("c", var("k") * 8, inner);
    ModulusRemainder a =
        store_alignment(align_vector_accesses(s, Scope<ModulusRemainder>()), "out");
    EXPECT_EQ(a.modulus, 2);
    // So does an inner let: c * 4 with the inner c (nothing known of a
    // float's conversion) is a multiple of 4, not the outer c's 12k + 4.
    Stmt hidden =
        LetStmt::make("c", cast(Int(32), Variable::make(Float(32), "f")), copy_four(var("c") * 4));
    s = LetStmt::make("c", var("k") * 3 + 1, hidden);
    a = store_alignment(align_vector_accesses(s, Scope<ModulusRemainder>()), "out");
    EXPECT_EQ(a.modulus, 4);
    EXPECT_EQ(a.remainder, 0);
}

TEST(AlignVectorAccesses, LetChainsPastTheLimitAreNotCarried) {
    // t0 = 4k, t_i = t_{i-1} + t_{i-1} + 1 = 2^(i+2) k + 2^i - 1: each
    // value's tree doubles. Past the limit the pass stops carrying a value
    // (the name stands for itself), so it neither builds nor simplifies an
    // enormous expression; what it proves from there on is still true:
    // t30 = 2^(30-j) t_j + 2^(30-j) - 1 for the t_j it stopped at.
    Stmt s = copy_four(var("t30"));
    for (int i = 30; i > 0; i--) {
        const std::string prev = "t" + std::to_string(i - 1);
        s = LetStmt::make("t" + std::to_string(i), var(prev) + var(prev) + 1, s);
    }
    s = LetStmt::make("t0", var("k") * 4, s);
    ModulusRemainder a =
        store_alignment(align_vector_accesses(s, Scope<ModulusRemainder>()), "out");
    EXPECT_GE(a.modulus, 2);
    EXPECT_LT(a.modulus, int64_t(1) << 30);
    EXPECT_EQ(a.modulus & (a.modulus - 1), 0) << a.modulus;
    EXPECT_EQ(a.remainder, a.modulus - 1);
    // A short chain is carried whole: t2 = 16k + 3.
    Stmt short_chain = copy_four(var("t2"));
    for (int i = 2; i > 0; i--) {
        const std::string prev = "t" + std::to_string(i - 1);
        short_chain =
            LetStmt::make("t" + std::to_string(i), var(prev) + var(prev) + 1, short_chain);
    }
    short_chain = LetStmt::make("t0", var("k") * 4, short_chain);
    a = store_alignment(align_vector_accesses(short_chain, Scope<ModulusRemainder>()), "out");
    EXPECT_EQ(a.modulus, 16);
    EXPECT_EQ(a.remainder, 3);
}

namespace {

/** invariant_alignments of `loop`, with every vector access tested for
 * 16-byte words (as float4s are without a proof). */
std::vector<InvariantAlignment> tested_alignments(const Stmt &loop) {
    const For *f = loop.as<For>();
    EXPECT_NE(f, nullptr);
    return invariant_alignments(
        f, [](const std::string &, Type t, int lanes, const ModulusRemainder &) {
            return t.bytes() * lanes % 16 == 0 ? 16 : 0;
        });
}

}  // namespace

TEST(InvariantAlignment, TheRowStartStandsForEveryVectorOfTheRow) {
    // in and out at row * stride + co * 8 + ci * 4: whole float4s from the
    // row's start, whatever co and ci are; the start is the invariant index.
    Stmt s = copy_four(var("row") * var("stride") + var("c"));
    s = LetStmt::make("c", var("co") * 8 + var("ci") * 4, s);
    s = For::make("ci", 0, 16, ForType::Serial, s);
    s = For::make("co", 0, var("n"), ForType::Serial, s);
    std::vector<InvariantAlignment> found = tested_alignments(s);
    ASSERT_EQ(found.size(), 2u);
    for (const InvariantAlignment &a : found) {
        EXPECT_EQ(a.word, 16);
        EXPECT_TRUE(equal(a.invariant_index, var("row") * var("stride"))) << a.invariant_index;
    }
    EXPECT_EQ(found[0].buffer, "in");  // the value's load, then the store
    EXPECT_EQ(found[1].buffer, "out");
}

TEST(InvariantAlignment, StepsOfPartWordsAndUnknownStridesFindNothing) {
    // Three floats a step: the vectors' alignment changes along the loop.
    Stmt thirds = For::make("co", 0, var("n"), ForType::Serial, copy_four(var("co") * 3));
    EXPECT_TRUE(tested_alignments(thirds).empty());
    // A step of the row's stride, which may be any number of floats.
    Stmt rows = For::make("y", 0, var("n"), ForType::Serial,
                          copy_four(var("y") * var("stride") + var("x0")));
    EXPECT_TRUE(tested_alignments(rows).empty());
    // The same loop, tested at an inner loop along the row: found there.
    Stmt along = For::make("co", 0, var("m"), ForType::Serial,
                           copy_four(var("y") * var("stride") + var("co") * 4));
    EXPECT_EQ(tested_alignments(along).size(), 2u);
}

TEST(InvariantAlignment, AnIndexThatLoadsIsNotMovedBeforeTheLoop) {
    // start[0] + co * 4: start may be written in the loop, or not be there
    // when the loop runs no times; no test before the loop may read it.
    Expr start = Load::make(Int(32), "start", 0, Expr());
    Stmt s = For::make("co", 0, var("n"), ForType::Serial, copy_four(start + var("co") * 4));
    EXPECT_TRUE(tested_alignments(s).empty());
}

TEST(InvariantAlignment, ASharedIndexWithTwoMeaningsCountsForNeither) {
    // One index node, r + co * 4, under two lets of r: 0 and 1. Each access
    // is aligned with its own r; no single test before the loop covers both.
    Stmt copy = copy_four(var("r") + var("co") * 4);
    Stmt s = Block::make(LetStmt::make("r", 0, copy), LetStmt::make("r", 1, copy));
    s = For::make("co", 0, var("n"), ForType::Serial, s);
    EXPECT_TRUE(tested_alignments(s).empty());
    // Under one meaning, it counts.
    Stmt once = For::make("co", 0, var("n"), ForType::Serial, Block::make(copy, copy));
    EXPECT_EQ(tested_alignments(once).size(), 2u);
}
