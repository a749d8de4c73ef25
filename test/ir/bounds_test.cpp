#include <gtest/gtest.h>

#include "arith/Bounds.h"
#include "ir/IREquality.h"
#include "ir/IRPrinter.h"
#include "arith/Simplify.h"
#include "ir/Substitute.h"
#include "loom/IROperator.h"

using namespace loom;
using namespace loom::internal;

namespace {

Expr var(const char *n, Type t = Int(32)) { return Variable::make(t, n); }

std::string str(const Interval &i) {
    std::string s = "[";
    s += i.min.defined() ? to_string(i.min) : "-inf";
    s += ", ";
    s += i.max.defined() ? to_string(i.max) : "+inf";
    return s + "]";
}

#define EXPECT_BOUNDS(e, scope, lo, hi)                                                            \
    do {                                                                                           \
        Interval i_ = bounds_of_expr_in_scope(e, scope);                                           \
        Expr lo_ = (lo), hi_ = (hi);                                                               \
        bool ok_ = (lo_.defined() ? i_.min.defined() && equal(i_.min, lo_) : !i_.min.defined()) && \
                   (hi_.defined() ? i_.max.defined() && equal(i_.max, hi_) : !i_.max.defined());   \
        EXPECT_TRUE(ok_) << "bounds of " << (e) << " = " << str(i_);                               \
    } while (0)

TEST(Bounds, Arithmetic) {
    Expr x = var("x"), y = var("y"), n = var("n");
    Scope<Interval> s;
    s.push("x", Interval(Expr(0), Expr(10)));
    s.push("y", Interval(Expr(-5), Expr(5)));
    EXPECT_BOUNDS(x + y, s, Expr(-5), Expr(15));
    EXPECT_BOUNDS(x - y, s, Expr(-5), Expr(15));
    EXPECT_BOUNDS(x * 3, s, Expr(0), Expr(30));
    EXPECT_BOUNDS(x * -3, s, Expr(-30), Expr(0));
    EXPECT_BOUNDS(x * y, s, Expr(-50), Expr(50));
    EXPECT_BOUNDS(x / 3, s, Expr(0), Expr(3));
    EXPECT_BOUNDS(y / 2, s, Expr(-3), Expr(2));
    EXPECT_BOUNDS(y / -2, s, Expr(-3), Expr(2));
    EXPECT_BOUNDS(y % 4, s, Expr(0), Expr(3));
    EXPECT_BOUNDS(x % 16, s, Expr(0), Expr(10));
    EXPECT_BOUNDS(y % -4, s, Expr(-3), Expr(0));
    EXPECT_BOUNDS(min(x, y), s, Expr(-5), Expr(5));
    EXPECT_BOUNDS(max(x, y), s, Expr(0), Expr(10));
    EXPECT_BOUNDS(select(x < 3, y, x), s, Expr(-5), Expr(10));
    EXPECT_BOUNDS(x + n, s, n, n + 10);
    EXPECT_BOUNDS(Let::make("t", x * 2, var("t") + 1), s, Expr(1), Expr(21));
    EXPECT_BOUNDS(make_intrinsic(Int(32), Call::likely, {x}), s, Expr(0), Expr(10));
    EXPECT_BOUNDS(abs(y), s, Expr(0), Expr(5));
    // Unbounded variables.
    Expr z = var("z");
    Scope<Interval> s2;
    s2.push("z", Interval(Expr(0), Expr()));
    EXPECT_BOUNDS(z * 2 + 1, s2, Expr(1), Expr());
    EXPECT_BOUNDS(z % 8, s2, Expr(0), Expr(7));
    EXPECT_BOUNDS(min(z, 5), s2, Expr(0), Expr(5));
    EXPECT_BOUNDS(z * y, s2, Expr(), Expr());
}

TEST(Bounds, Symbolic) {
    Expr x = var("x"), n = var("n"), m = var("m");
    Scope<Interval> s;
    s.push("x", Interval(Expr(0), n - 1));
    EXPECT_BOUNDS(x, s, Expr(0), n + (-1));
    EXPECT_BOUNDS(x * 2 + 1, s, Expr(1), n * 2 + (-1));
    EXPECT_BOUNDS(n - x, s, Expr(1), n);
    EXPECT_BOUNDS(min(x, m), s, min(m, 0), min(n + (-1), m));
}

TEST(Bounds, ConstantUpperBounds) {
    // The extent of a 64-row tile clamped to [m, n] at the edge of the
    // data, with x = m + 64 * io: at most 64 whatever the symbols.
    Expr io = var("io"), m = var("m"), n = var("n");
    Expr x = m + io * 64;
    auto clamp = [&](Expr e) { return min(max(e, m), n); };
    Expr hi = clamp(min(x, n) + 63), lo = clamp(min(x, n + 63));
    int64_t bound = 0;
    Scope<Interval> none;
    ASSERT_TRUE(constant_upper_bound(hi - lo + 1, none, &bound));
    EXPECT_EQ(bound, 64);
    ASSERT_TRUE(constant_upper_bound(max(hi - lo, -1) + 1, none, &bound));
    EXPECT_EQ(bound, 64);
    // A key tile shifted inwards at the end of the keys.
    Expr ro = var("ro"), k = var("k");
    ASSERT_TRUE(constant_upper_bound(min(ro * 8, k - 8) - min(ro * 8, k - 1) + 8, none, &bound));
    EXPECT_EQ(bound, 8);
    // From the shape alone, and from the ranges in scope.
    ASSERT_TRUE(constant_upper_bound(min(n, 5) * 3 / 2, none, &bound));
    EXPECT_EQ(bound, 7);
    Scope<Interval> s;
    s.push("io", Interval(Expr(0), Expr(3)));
    ASSERT_TRUE(constant_upper_bound(io * 16 - 1, s, &bound));
    EXPECT_EQ(bound, 47);
    // Scaled: the extent of a loop fused with a constant one, which the
    // simplifier writes as a difference of products.
    ASSERT_TRUE(
        constant_upper_bound((min(ro * 8, k - 8) + 8 - min(ro * 8, k - 1)) * 16, none, &bound));
    EXPECT_EQ(bound, 128);
    // A range in scope also simplifies: with ro below (k + 7) / 8, the min
    // that a tile's region takes with the last tile is ro itself.
    Scope<Interval> tiles;
    tiles.push("ro", Interval(Expr(0), (k + 7) / 8 - 1));
    Expr first = min(min(ro, (k + 7) / 8 - 1) * 8, k - 1);
    ASSERT_TRUE(constant_upper_bound(min(ro * 8, k - 8) + 8 - first, tiles, &bound));
    EXPECT_EQ(bound, 8);
    EXPECT_FALSE(constant_upper_bound(min(ro * 8, k - 8) + 8 - first, none, &bound));
    // A min deeper in a sum takes the rest of the sum inside, where the
    // terms cancel: min(x, m + n - 64) - x is at most 0.
    ASSERT_TRUE(constant_upper_bound(min(x, m + n - 64) - m - io * 64 + 64, none, &bound));
    EXPECT_EQ(bound, 64);
    ASSERT_TRUE(constant_upper_bound(Expr(70) - max(io * 2, x + 1) + x, none, &bound));
    EXPECT_EQ(bound, 69);
    // The first tile's rows in a block loop that covers n rows from m: with
    // io's range in scope, the tile's start is below the end of the data,
    // and the clamped extent simplifies into such a sum.
    Scope<Interval> rows;
    rows.push("io", Interval(Expr(0), (n + 63) / 64 - 1));
    Expr last = m + n - 1;
    auto clamp_rows = [&](Expr e) { return min(max(e, m), last); };
    Expr row_lo = clamp_rows(min(x, last + 63)), row_hi = clamp_rows(min(x, last) + 63);
    ASSERT_TRUE(constant_upper_bound(row_hi - row_lo + 1, rows, &bound));
    EXPECT_EQ(bound, 64);
    // The same rows in vectors of 4: the loop over the vectors has
    // (extent + 3) / 4 iterations, and in scope the extent simplifies into
    // a quotient whose min must take the terms outside it, -io * 16 + 16.
    ASSERT_TRUE(constant_upper_bound((row_hi - row_lo + 4) / 4, rows, &bound));
    EXPECT_EQ(bound, 16);
    ASSERT_TRUE(constant_upper_bound((min(x, last - 63) - m + 3) / 4 - io * 16 + 16, none, &bound));
    EXPECT_EQ(bound, 16);
    // None: n is unbounded.
    EXPECT_FALSE(constant_upper_bound(n - m, none, &bound));
    EXPECT_FALSE(constant_upper_bound(max(n, 3), none, &bound));
}

TEST(Bounds, TypesAndCasts) {
    Expr x = var("x"), y = var("y");
    Scope<Interval> s;
    s.push("x", Interval(Expr(0), Expr(100)));
    s.push("y", Interval(Expr(0), Expr(1000)));
    EXPECT_BOUNDS(Cast::make(UInt(8), x), s, make_const(UInt(8), 0), make_const(UInt(8), 100));
    // Not provably in range: the type's full range.
    EXPECT_BOUNDS(Cast::make(UInt(8), y), s, make_const(UInt(8), 0), make_const(UInt(8), 255));
    EXPECT_BOUNDS(Cast::make(Int(8), y), s, make_const(Int(8), -128), make_const(Int(8), 127));
    EXPECT_BOUNDS(Cast::make(Int(64), x), s, make_const(Int(64), 0), make_const(Int(64), 100));
    Expr ld = Load::make(UInt(8), "buf", x, Expr());
    EXPECT_BOUNDS(ld, s, make_const(UInt(8), 0), make_const(UInt(8), 255));
    EXPECT_BOUNDS(Cast::make(Int(32), ld) * 2, s, Expr(0), Expr(510));
    Expr f = Call::make(Float(32), "f", {x}, Call::Func);
    EXPECT_BOUNDS(f, s, Expr(), Expr());
    Expr b = Call::make(Bool(), "g", {x}, Call::Func);
    EXPECT_BOUNDS(b, s, const_false(), const_true());
    // uint8 arithmetic wraps: x + 200 for x in [0, 100] can overflow.
    Expr u = var("u", UInt(8));
    Scope<Interval> su;
    su.push("u", Interval(make_const(UInt(8), 0), make_const(UInt(8), 100)));
    EXPECT_BOUNDS(u + make_const(UInt(8), 200), su, make_const(UInt(8), 0),
                  make_const(UInt(8), 255));
    EXPECT_BOUNDS(u + make_const(UInt(8), 100), su, make_const(UInt(8), 100),
                  make_const(UInt(8), 200));
}

TEST(Bounds, Vectors) {
    Expr x = var("x");
    Scope<Interval> s;
    s.push("x", Interval(Expr(0), Expr(10)));
    EXPECT_BOUNDS(Ramp::make(x * 4, 1, 4), s, Expr(0), Expr(43));
    EXPECT_BOUNDS(Ramp::make(x, -2, 4), s, Expr(-6), Expr(10));
    EXPECT_BOUNDS(Broadcast::make(x + 1, 8), s, Expr(1), Expr(11));
}

TEST(Bounds, BoxesRequired) {
    Expr x = var("f.s0.x"), y = var("f.s0.y"), n = var("n");
    Expr call_g = Call::make(Float(32), "g", {x + 1, y * 2}, Call::Func);
    Expr call_in = Call::make(Float(32), "input", {x - 1}, Call::Image);
    Stmt body = Provide::make("f", {call_g + call_in}, {x, y});
    Stmt loops = For::make("f.s0.y", 0, 4, ForType::Serial,
                           For::make("f.s0.x", 2, n, ForType::Serial, body));
    auto req = boxes_required(loops);
    ASSERT_EQ(req.count("g"), 1u);
    ASSERT_EQ(req.count("input"), 1u);
    EXPECT_EQ(req.count("f"), 0u);
    const Box &g = req["g"];
    ASSERT_EQ(g.size(), 2u);
    EXPECT_TRUE(equal(g[0].min, Expr(3))) << g[0].min;
    EXPECT_TRUE(equal(g[0].max, n + 2)) << g[0].max;
    EXPECT_TRUE(equal(g[1].min, Expr(0)));
    EXPECT_TRUE(equal(g[1].max, Expr(6)));
    EXPECT_TRUE(equal(req["input"][0].min, Expr(1)));
    auto prov = boxes_provided(loops);
    ASSERT_EQ(prov.count("f"), 1u);
    EXPECT_TRUE(equal(prov["f"][0].min, Expr(2)));
    EXPECT_TRUE(equal(prov["f"][0].max, n + 1)) << prov["f"][0].max;
    auto all = boxes_touched(loops);
    EXPECT_EQ(all.size(), 3u);

    // Two reads of the same Func merge into their union.
    Expr two = Call::make(Float(32), "g", {x}, Call::Func) +
               Call::make(Float(32), "g", {x + 10}, Call::Func);
    Scope<Interval> s;
    s.push("f.s0.x", Interval(Expr(0), Expr(5)));
    auto r2 = boxes_required(two, s);
    EXPECT_TRUE(equal(r2["g"][0].min, Expr(0)));
    EXPECT_TRUE(equal(r2["g"][0].max, Expr(15)));

    // Lets and if conditions narrow.
    Stmt guarded = For::make(
        "f.s0.x", 0, 100, ForType::Serial,
        IfThenElse::make(x < 10, LetStmt::make("t", x * 2,
                                               Evaluate::make(Call::make(Float(32), "h", {var("t")},
                                                                         Call::Func)))));
    auto r3 = boxes_required(guarded);
    EXPECT_TRUE(equal(r3["h"][0].min, Expr(0)));
    EXPECT_TRUE(equal(r3["h"][0].max, Expr(18))) << r3["h"][0].max;
}

/** Whether the condition `used`, with the given variables set, simplifies
 * to true (1), false (0), or neither (-1). */
int truth_at(const Expr &used, const std::map<std::string, int> &values) {
    Expr e = used;
    for (const auto &[name, v] : values) e = substitute(name, Expr(v), e);
    e = simplify(e);
    return is_const_one(e) ? 1 : is_const_zero(e) ? 0 : -1;
}

TEST(Bounds, BoxesRequiredWithConditions) {
    // Over zero keys, a read clamped to n - 1 still has a region, [-1, -1];
    // the condition says that it is not touched.
    Expr r = var("r"), n = var("n"), c = var("c"), last = var("last");
    auto read = [](const char *f, Expr i) {
        return Evaluate::make(Call::make(Float(32), f, {std::move(i)}, Call::Image));
    };
    Stmt keys = For::make("r", 0, n, ForType::Serial, read("k", min(r, n - 1)));
    auto boxes = boxes_required_with_conditions(keys);
    ASSERT_EQ(boxes.count("k"), 1u);
    const Box &k = boxes["k"];
    ASSERT_TRUE(k.used.defined());
    EXPECT_EQ(truth_at(k.used, {{"n", 0}}), 0) << k.used;
    EXPECT_EQ(truth_at(k.used, {{"n", 5}}), 1) << k.used;
    // The plain analysis leaves it undefined (always touched).
    EXPECT_FALSE(boxes_required(keys)["k"].used.defined());

    // A step of a chunk past the last tile: the branch can be taken only if
    // the chunk's first tile exists.
    Stmt steps = For::make("t", 0, 4, ForType::Serial,
                           IfThenElse::make(c * 4 + var("t") <= last, read("v", var("t"))));
    Box v = boxes_required_with_conditions(steps)["v"];
    ASSERT_TRUE(v.used.defined());
    EXPECT_EQ(truth_at(v.used, {{"c", 1}, {"last", 4}}), 1) << v.used;
    EXPECT_EQ(truth_at(v.used, {{"c", 2}, {"last", 4}}), 0) << v.used;
    // ... and in the else branch, only if some step is past it.
    Stmt past = For::make(
        "t", 0, 4, ForType::Serial,
        IfThenElse::make(c * 4 + var("t") <= last, Evaluate::make(Expr(0)), read("v", var("t"))));
    Box w = boxes_required_with_conditions(past)["v"];
    ASSERT_TRUE(w.used.defined());
    EXPECT_EQ(truth_at(w.used, {{"c", 0}, {"last", 4}}), 0) << w.used;
    EXPECT_EQ(truth_at(w.used, {{"c", 1}, {"last", 4}}), 1) << w.used;
    // A condition free of the loops is kept as it is, disjunctions too.
    Stmt flagged = For::make("t", 0, 4, ForType::Serial,
                             IfThenElse::make(n < 3 || c == 7, read("v", var("t"))));
    Box f = boxes_required_with_conditions(flagged)["v"];
    ASSERT_TRUE(f.used.defined());
    EXPECT_EQ(truth_at(f.used, {{"n", 2}, {"c", 0}}), 1) << f.used;
    EXPECT_EQ(truth_at(f.used, {{"n", 4}, {"c", 7}}), 1) << f.used;
    EXPECT_EQ(truth_at(f.used, {{"n", 4}, {"c", 0}}), 0) << f.used;

    // A loop of constant extent, or a condition that reads memory, tells
    // nothing; a region touched unconditionally somewhere is always touched.
    Expr flag = Load::make(Int(32), "flags", r, const_true());
    Stmt loaded = For::make("r", 0, 8, ForType::Serial, IfThenElse::make(flag > 0, read("g", r)));
    EXPECT_FALSE(boxes_required_with_conditions(loaded)["g"].used.defined());
    Stmt both = Block::make(keys, read("k", Expr(0)));
    EXPECT_FALSE(boxes_required_with_conditions(both)["k"].used.defined());
}

TEST(Bounds, GuardedValues) {
    // guarded_value(e, m): a let used only where e <= m. Over a range, the
    // low end is e's own (iterations past the limit touch nothing, however
    // small the limit); the high end is capped at the limit.
    Expr x = var("x"), n = var("n"), m = var("m");
    Expr guarded = Call::make(Int(32), guarded_value, {x * 4, m}, Call::PureIntrinsic);
    Scope<Interval> s;
    s.push("x", Interval(Expr(0), n));
    EXPECT_BOUNDS(guarded, s, Expr(0), simplify(min(n * 4, m)));
    // At a single point it is min(e, m): a region computed per iteration
    // keeps its size.
    Expr point = Call::make(Int(32), guarded_value, {n + 3, m}, Call::PureIntrinsic);
    EXPECT_BOUNDS(point, Scope<Interval>(), min(n + 3, m), min(n + 3, m));
    // With no bound on the limit, the value's own range.
    Scope<Interval> open;
    open.push("x", Interval(Expr(0), n));
    open.push("m", Interval(Expr(2), Expr()));
    EXPECT_BOUNDS(guarded, open, Expr(0), n * 4);
}

TEST(Bounds, BoxUnion) {
    Box a(1), b(1);
    a[0] = Interval(Expr(0), Expr(4));
    b[0] = Interval(Expr(2), Expr(9));
    Box u = box_union(a, b);
    EXPECT_TRUE(equal(u[0].min, Expr(0)));
    EXPECT_TRUE(equal(u[0].max, Expr(9)));
    Box c(1);
    c[0] = Interval(Expr(-3), Expr());
    Box v = box_union(a, c);
    EXPECT_TRUE(equal(v[0].min, Expr(-3)));
    EXPECT_FALSE(v[0].max.defined());
}

}  // namespace
