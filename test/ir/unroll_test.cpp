// Tests of unroll_loops: copies of the body with the loop variable replaced by
// constants, errors for extents that are not constant, and same results.
#include <gtest/gtest.h>

#include "lower/UnrollLoops.h"
#include "loom/Error.h"
#include "loom/IROperator.h"
#include "loop_ir_eval.h"

using namespace loom;
using namespace loom::internal;
using loom_test::collect_nodes;
using loom_test::LoopIREval;

namespace {

Expr var(const std::string &n) { return Variable::make(Int(32), n); }
Stmt store(const std::string &buf, Expr value, Expr idx) {
    return Store::make(buf, std::move(value), std::move(idx), Expr());
}
Expr load(const std::string &buf, Expr idx) { return Load::make(Int(32), buf, idx, Expr()); }

std::vector<double> run(const Stmt &s, const std::string &out, int size,
                        std::map<std::string, int64_t> scalars = {}) {
    LoopIREval e;
    e.buffers[out] = std::vector<double>(size, 0);
    for (const auto &kv : scalars) e.set_var(kv.first, kv.second);
    e.run(s);
    return e.buffers[out];
}

TEST(UnrollLoops, ConstantExtent) {
    Expr x = var("f.s0.x");
    Stmt s = For::make("f.s0.x", 2, 4, ForType::Unrolled, store("out", x * 10, x));
    Stmt u = unroll_loops(s);
    EXPECT_TRUE(collect_nodes<For>(u).empty());
    auto stores = collect_nodes<Store>(u);
    ASSERT_EQ(stores.size(), 4u);
    for (int i = 0; i < 4; i++) EXPECT_TRUE(is_const(stores[i]->index, 2 + i));
    EXPECT_EQ(run(s, "out", 8), run(u, "out", 8));
}

TEST(UnrollLoops, SymbolicMinAndNesting) {
    // for y (serial): unrolled x in [m, m + 3): unrolled c in [0, 2):
    //   out[y * 8 + (x - m) * 2 + c] = x + c
    Expr x = var("x"), y = var("y"), c = var("c"), m = var("m");
    Stmt inner =
        For::make("c", 0, 2, ForType::Unrolled, store("out", x + c, y * 8 + (x - m) * 2 + c));
    Stmt s = For::make("y", 0, 2, ForType::Serial, For::make("x", m, 3, ForType::Unrolled, inner));
    Stmt u = unroll_loops(s);
    auto loops = collect_nodes<For>(u);
    ASSERT_EQ(loops.size(), 1u);
    EXPECT_EQ(loops[0]->name, "y");
    EXPECT_EQ(collect_nodes<Store>(u).size(), 6u);
    EXPECT_EQ(run(s, "out", 16, {{"m", 5}}), run(u, "out", 16, {{"m", 5}}));
}

TEST(UnrollLoops, ZeroExtentIsANoOp) {
    Expr x = var("x");
    Stmt u = unroll_loops(For::make("x", 0, 0, ForType::Unrolled, store("out", x, x)));
    EXPECT_TRUE(collect_nodes<Store>(u).empty());
}

TEST(UnrollLoops, NonConstantExtentIsAnError) {
    Expr x = var("h.s0.x"), n = var("n");
    Stmt s = For::make("h.s0.x", 0, n, ForType::Unrolled, store("out", x, x));
    try {
        unroll_loops(s);
        FAIL() << "expected a CompileError";
    } catch (const CompileError &e) {
        std::string msg = e.what();
        EXPECT_NE(msg.find("h.s0.x"), std::string::npos) << msg;
        EXPECT_NE(msg.find("constant extent"), std::string::npos) << msg;
    }
}

TEST(UnrollLoops, ConstantUpperBoundIsGuarded) {
    // for xo: unrolled xi in [0, min(4, n - xo * 4)): out[xo * 4 + xi] = 1
    Expr xo = var("xo"), xi = var("xi"), n = var("n");
    Stmt s = For::make("xo", 0, (n + 3) / 4, ForType::Serial,
                       For::make("xi", 0, min(4, n - xo * 4), ForType::Unrolled,
                                 store("out", load("out", xo * 4 + xi) + 1, xo * 4 + xi)));
    Stmt u = unroll_loops(s);
    EXPECT_EQ(collect_nodes<IfThenElse>(u).size(), 4u);
    for (int n_val : {1, 4, 6, 9}) {
        EXPECT_EQ(run(s, "out", n_val, {{"n", n_val}}), run(u, "out", n_val, {{"n", n_val}}));
    }
}

TEST(UnrollLoops, UntouchedWithoutUnrolledLoops) {
    Expr x = var("x");
    Stmt s = For::make("x", 0, 4, ForType::Serial, store("out", x, x));
    EXPECT_TRUE(unroll_loops(s).same_as(s));
}

}  // namespace
