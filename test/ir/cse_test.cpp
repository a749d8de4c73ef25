#include <gtest/gtest.h>

#include "arith/CSE.h"
#include "ir/IREquality.h"
#include "ir/IRPrinter.h"
#include "ir/IRVisitor.h"
#include "arith/Simplify.h"
#include "ir/Substitute.h"
#include "loom/IROperator.h"

using namespace loom;
using namespace loom::internal;

namespace {

Expr var(const char *n, Type t = Int(32)) { return Variable::make(t, n); }

int count_lets(const Expr &e) {
    struct C : IRVisitor {
        int n = 0;
        void visit(const Let *op) override {
            n++;
            IRVisitor::visit(op);
        }
    } c;
    e.accept(&c);
    return c.n;
}

TEST(CSE, LiftsRepeatedSubexpressions) {
    Expr x = var("x"), y = var("y");
    Expr e = (x * y + 3) * (x * y + 3) + (x * y);
    Expr c = common_subexpression_elimination(e);
    // x*y and x*y + 3 are both repeated.
    EXPECT_EQ(count_lets(c), 2) << c;
    EXPECT_TRUE(equal(substitute_in_all_lets(c), e)) << c;
    Expr t0 = var("t0"), t1 = var("t1");
    EXPECT_TRUE(equal(c, Let::make("t0", x * y, Let::make("t1", t0 + 3, t1 * t1 + t0)))) << c;
}

TEST(CSE, LeavesTrivialAndImpureAlone) {
    Expr x = var("x");
    Expr e = (x + 1) - (x + 1) * 0 + x;  // only x + 1 repeats
    Expr c = common_subexpression_elimination(e);
    EXPECT_EQ(count_lets(c), 1) << c;
    Expr r = x + 1;
    EXPECT_EQ(count_lets(common_subexpression_elimination(r + Expr(1))), 0);
    // Impure calls are never merged: both evaluations must stay.
    Expr call = Call::make(Int(32), "side_effect", {x}, Call::Intrinsic);
    Expr twice = call + call;
    Expr ct = common_subexpression_elimination(twice);
    EXPECT_TRUE(equal(ct, twice)) << ct;
    // Loads are not hoisted (they may be guarded by a select).
    Expr ld = Load::make(Int(32), "buf", x * 2, Expr());
    Expr g = select(x < 10, ld, 0) + select(x < 10, ld, 1);
    Expr cg = common_subexpression_elimination(g);
    EXPECT_TRUE(equal(substitute_in_all_lets(cg), g));
    EXPECT_TRUE(expr_uses_var(cg, "x"));
}

TEST(CSE, RespectsExistingLetsAndNames) {
    Expr x = var("x"), t0 = var("t0");
    // A variable already named t0 must not be captured.
    Expr e = (x * t0 + 1) * (x * t0 + 1);
    Expr c = common_subexpression_elimination(e);
    EXPECT_TRUE(equal(substitute_in_all_lets(c), e)) << c;
    const Let *l = c.as<Let>();
    ASSERT_TRUE(l);
    EXPECT_NE(l->name, "t0");
    // Inside a Let body, repeated terms using the let var are lifted inside.
    Expr inner = Let::make("a", x + 1, (var("a") * 3) * (var("a") * 3));
    Expr ci = common_subexpression_elimination(inner);
    EXPECT_TRUE(equal(substitute_in_all_lets(ci), substitute_in_all_lets(inner))) << ci;
    EXPECT_EQ(count_lets(ci), 2) << ci;
}

TEST(CSE, Stmts) {
    Expr x = var("x");
    Stmt s = For::make("x", 0, 10, ForType::Serial,
                       Store::make("buf", (x * x + 1) * (x * x + 1), x, Expr()));
    Stmt c = common_subexpression_elimination(s);
    const For *f = c.as<For>();
    ASSERT_TRUE(f);
    const Store *st = f->body.as<Store>();
    ASSERT_TRUE(st);
    // x*x is only used inside the lifted x*x + 1: one let.
    EXPECT_EQ(count_lets(st->value), 1) << c;
    EXPECT_TRUE(equal(substitute_in_all_lets(st->value), (x * x + 1) * (x * x + 1)));
}

}  // namespace
