#include <gtest/gtest.h>

#include "ir/IREquality.h"
#include "ir/IRPrinter.h"
#include "ir/Substitute.h"
#include "loom/IROperator.h"

using namespace loom;
using namespace loom::internal;

namespace {

Expr var(const char *n, Type t = Int(32)) { return Variable::make(t, n); }

TEST(IRPrinter, Exprs) {
    Expr x = var("x"), y = var("y");
    EXPECT_EQ(to_string(x + y * 3), "(x + (y * 3))");
    EXPECT_EQ(to_string(min(x, y)), "min(x, y)");
    EXPECT_EQ(to_string(cast<float>(x)), "float32(x)");
    EXPECT_EQ(to_string(Broadcast::make(x, 8)), "x8(x)");
    EXPECT_EQ(to_string(Ramp::make(x, 1, 4)), "ramp(x, 1, 4)");
    EXPECT_EQ(to_string(Let::make("t", x + 1, var("t") * 2)), "(let t = (x + 1) in (t * 2))");
    EXPECT_EQ(to_string(Load::make(Float(32), "buf", x, Expr())), "buf[x]");
    EXPECT_EQ(to_string(select(x < y, x, y)), "select((x < y), x, y)");
    EXPECT_EQ(to_string(Expr(1.5f)), "1.5f");
    EXPECT_EQ(to_string(Expr(2.0)), "2.0");
    EXPECT_EQ(to_string(Expr(true)), "true");
    EXPECT_EQ(to_string(make_const(UInt(8), 7)), "(uint8)7");
    EXPECT_EQ(to_string(Call::make(Float(32), "f", {x, y}, Call::Func)), "f(x, y)");
}

TEST(IRPrinter, Stmts) {
    Expr x = var("f.s0.x"), n = var("n");
    Stmt store = Store::make("buf", cast<float>(x), x, Expr());
    Stmt loop = For::make("f.s0.x", 0, n, ForType::Parallel, store);
    Stmt alloc = Allocate::make("buf", Float(32), MemoryType::Auto, {16, n}, Expr(), loop);
    std::string s = to_string(alloc);
    EXPECT_EQ(s,
              "allocate buf[float32 * 16 * n]\n"
              "parallel (f.s0.x, 0, n) {\n"
              "  buf[f.s0.x] = float32(f.s0.x)\n"
              "}\n");
    Stmt ite = IfThenElse::make(x < 3, Provide::make("f", {x}, {x, n}), Evaluate::make(0));
    EXPECT_EQ(to_string(ite),
              "if ((f.s0.x < 3)) {\n"
              "  f(f.s0.x, n) = f.s0.x\n"
              "} else {\n"
              "  0\n"
              "}\n");
    Stmt let =
        LetStmt::make("t", n * 2, ProducerConsumer::make_produce("f", Evaluate::make(var("t"))));
    EXPECT_EQ(to_string(let), "let t = (n * 2)\nproduce f {\n  t\n}\n");
}

TEST(IREquality, Basic) {
    Expr x = var("x"), y = var("y");
    EXPECT_TRUE(equal(x + y, var("x") + var("y")));
    EXPECT_FALSE(equal(x + y, y + x));
    EXPECT_FALSE(equal(x, var("x", Int(64))));
    EXPECT_TRUE(less(x + y, y + x) != less(y + x, x + y));
    EXPECT_FALSE(less(x + y, x + y));
    EXPECT_FALSE(equal(Expr(0.0f), Expr(-0.0f)));
}

TEST(Substitute, RespectsShadowing) {
    Expr x = var("x"), y = var("y");
    Expr e = x + Let::make("x", y, x * 2);
    Expr r = substitute("x", Expr(5), e);
    EXPECT_TRUE(equal(r, Expr(5) + Let::make("x", y, x * 2)));
    EXPECT_TRUE(expr_uses_var(e, "x"));
    EXPECT_FALSE(expr_uses_var(Let::make("x", y, x * 2), "x"));
    EXPECT_TRUE(expr_uses_var(Let::make("x", y, x * 2), "y"));
    EXPECT_TRUE(equal(substitute(x + 1, y, (x + 1) * (x + 1)), y * y));
    EXPECT_TRUE(equal(substitute_in_all_lets(Let::make("t", x + 1, var("t") * var("t"))),
                      (x + 1) * (x + 1)));
}

}  // namespace

TEST(IROperator, MakeConstOfUnsignedLiteral) {
    // 0x80000000u once matched several overloads equally well.
    loom::Expr e = loom::internal::make_const(loom::UInt(32), 0x80000000u);
    const uint64_t *v = loom::internal::as_const_uint(e);
    ASSERT_NE(v, nullptr);
    EXPECT_EQ(*v, 0x80000000ull);
}
