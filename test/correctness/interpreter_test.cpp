// The reference interpreter against plain C++ loops, on fresh random inputs.
// The interpreter is the oracle for every compiled schedule, so these tests
// insist on exact agreement wherever C++ can compute the same thing the same
// way (float32 rounding after each operation, wrapping integers).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <limits>

#include "lang/Interpreter.h"
#include "test_util.h"

using namespace loom;
using loom_test::buffers_match;
using loom_test::random_buffer;
using loom_test::rng;
using loom_test::throws_with;

namespace {

int random_int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng()); }

// Floor division and modulo as Loom defines them.
int64_t floor_div(int64_t a, int64_t b) {
    if (b == 0) return 0;
    int64_t q = a / b, r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) q--;
    return q;
}
int64_t floor_mod(int64_t a, int64_t b) {
    if (b == 0) return 0;
    int64_t r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}

}  // namespace

TEST(Interpreter, PointwiseFloat) {
    int h = random_int(3, 17), w = random_int(3, 17);
    BufferParam in(Float(32), 2, "in");
    Buffer<float> ib = random_buffer<float>({h, w}, -4, 4);
    in.set(ib);
    Var y("y"), x("x");
    Func f("f");
    f(y, x) = in(y, x) * 2.5f + sqrt(abs(in(y, x))) - min(in(y, x), 0.5f) / 3.0f +
              exp(in(y, x) * 0.1f) + select(in(y, x) > 0, 1.0f, -1.0f);
    Buffer<float> out(interpret(f, {h, w}));
    Buffer<float> expected({h, w});
    expected.fill([&](const std::vector<int> &c) {
        float a = ib(c[0], c[1]);
        return a * 2.5f + std::sqrt(std::fabs(a)) - std::min(a, 0.5f) / 3.0f + std::exp(a * 0.1f) +
               (a > 0 ? 1.0f : -1.0f);
    });
    EXPECT_TRUE(buffers_match(out, expected));
}

TEST(Interpreter, PureVarsAndCoordinates) {
    Var y("y"), x("x");
    Func f("f");
    f(y, x) = y * 100 + x;
    Buffer<int> out(interpret(f, {5, 7}));
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 7; j++) EXPECT_EQ(out(i, j), i * 100 + j);
}

TEST(Interpreter, TypePromotionAndWrapping) {
    int n = random_int(5, 40);
    BufferParam a8(UInt(8), 1, "a8"), s16(Int(16), 1, "s16"), i8(Int(8), 1, "i8");
    Buffer<uint8_t> ab = random_buffer<uint8_t>({n}, 0, 256);
    Buffer<int16_t> sb = random_buffer<int16_t>({n}, -32768, 32768);
    Buffer<int8_t> ib = random_buffer<int8_t>({n}, -128, 128);
    a8.set(ab);
    s16.set(sb);
    i8.set(ib);
    Var x("x");
    Func u("u"), w("w"), m("m"), fl("fl");
    u(x) = a8(x) + 200;                         // uint8, wraps
    w(x) = s16(x) * a8(x);                      // int16 (uint8 widens to int16), wraps
    m(x) = i8(x) + a8(x);                       // int8 meets uint8: uint8
    fl(x) = cast<float>(a8(x)) * 0.5f + i8(x);  // int8 converts to float32
    EXPECT_EQ(u.type(), UInt(8));
    EXPECT_EQ(w.type(), Int(16));
    EXPECT_EQ(m.type(), UInt(8));
    EXPECT_EQ(fl.type(), Float(32));
    Buffer<uint8_t> ub(interpret(u, {n}));
    Buffer<int16_t> wb(interpret(w, {n}));
    Buffer<uint8_t> mb(interpret(m, {n}));
    Buffer<float> fb(interpret(fl, {n}));
    for (int i = 0; i < n; i++) {
        EXPECT_EQ(ub(i), static_cast<uint8_t>(ab(i) + 200));
        EXPECT_EQ(wb(i), static_cast<int16_t>(sb(i) * ab(i)));
        EXPECT_EQ(mb(i), static_cast<uint8_t>(static_cast<uint8_t>(ib(i)) + ab(i)));
        EXPECT_EQ(fb(i), ab(i) * 0.5f + static_cast<float>(ib(i)));
    }
}

TEST(Interpreter, CastsAndBool) {
    int n = 64;
    BufferParam in(Float(32), 1, "in");
    Buffer<float> ib = random_buffer<float>({n}, -300, 300);
    ib(0) = -2.7f;
    ib(1) = 2.7f;
    ib(2) = 0.0f;
    in.set(ib);
    Var x("x");
    Func t("t"), u8("u8"), b("b"), d("d");
    t(x) = cast<int>(in(x));                  // truncates toward zero
    u8(x) = cast<uint8_t>(cast<int>(in(x)));  // wraps
    b(x) = cast<bool>(cast<int>(in(x)));
    d(x) = cast<double>(in(x)) / 3.0;
    Buffer<int> tb(interpret(t, {n}));
    Buffer<uint8_t> ub(interpret(u8, {n}));
    Buffer<bool> bb(interpret(b, {n}));
    Buffer<double> db(interpret(d, {n}));
    for (int i = 0; i < n; i++) {
        EXPECT_EQ(tb(i), static_cast<int>(ib(i)));
        EXPECT_EQ(ub(i), static_cast<uint8_t>(static_cast<int>(ib(i))));
        EXPECT_EQ(bb(i), static_cast<int>(ib(i)) != 0);
        EXPECT_EQ(db(i), static_cast<double>(ib(i)) / 3.0);
    }
}

TEST(Interpreter, FloorDivMod) {
    int n = 200;
    BufferParam a(Int(32), 1, "a"), b(Int(32), 1, "b");
    Buffer<int> ab = random_buffer<int>({n}, -50, 50), bb = random_buffer<int>({n}, -7, 8);
    bb(0) = 0;
    ab(1) = -7;
    bb(1) = 2;
    a.set(ab);
    b.set(bb);
    Var x("x");
    Func q("q"), r("r"), fq("fq"), fm("fm");
    q(x) = a(x) / b(x);
    r(x) = a(x) % b(x);
    fq(x) = cast<float>(a(x)) / 4.0f;
    fm(x) = cast<float>(a(x)) % 3.0f;
    Buffer<int> qb(interpret(q, {n})), rb(interpret(r, {n}));
    Buffer<float> fqb(interpret(fq, {n})), fmb(interpret(fm, {n}));
    EXPECT_EQ(qb(1), -4);
    EXPECT_EQ(rb(1), 1);
    EXPECT_EQ(qb(0), 0);
    EXPECT_EQ(rb(0), 0);
    for (int i = 0; i < n; i++) {
        EXPECT_EQ(qb(i), floor_div(ab(i), bb(i))) << ab(i) << " / " << bb(i);
        EXPECT_EQ(rb(i), floor_mod(ab(i), bb(i))) << ab(i) << " % " << bb(i);
        float fa = static_cast<float>(ab(i));
        EXPECT_EQ(fqb(i), fa / 4.0f);
        EXPECT_EQ(fmb(i), fa - 3.0f * std::floor(fa / 3.0f));
    }
}

TEST(Interpreter, Blur3x3) {
    int h = random_int(4, 30), w = random_int(4, 30);
    BufferParam in(Float(32), 2, "in");
    Buffer<float> ib = random_buffer<float>({h + 2, w + 2});
    in.set(ib);
    Var y("y"), x("x");
    Func bx("bx"), by("by");
    bx(y, x) = (in(y, x) + in(y, x + 1) + in(y, x + 2)) / 3.0f;
    by(y, x) = (bx(y, x) + bx(y + 1, x) + bx(y + 2, x)) / 3.0f;
    Buffer<float> out(interpret(by, {h, w}));
    Buffer<float> expected({h, w});
    expected.fill([&](const std::vector<int> &c) {
        auto bxf = [&](int i, int j) { return (ib(i, j) + ib(i, j + 1) + ib(i, j + 2)) / 3.0f; };
        int i = c[0], j = c[1];
        return (bxf(i, j) + bxf(i + 1, j) + bxf(i + 2, j)) / 3.0f;
    });
    EXPECT_TRUE(buffers_match(out, expected));
}

TEST(Interpreter, MatmulWithRDomSum) {
    int m = random_int(1, 12), k = random_int(1, 20), n = random_int(1, 12);
    BufferParam A(Float(32), 2, "A"), B(Float(32), 2, "B");
    Buffer<float> ab = random_buffer<float>({m, k}), bb = random_buffer<float>({k, n});
    A.set(ab);
    B.set(bb);
    Var i("i"), j("j");
    RDom r(0, A.dim(1).extent(), "r");
    Func C("C");
    C(i, j) = sum(A(i, r) * B(r, j));
    Buffer<float> out(interpret(C, {m, n}));
    Buffer<float> expected({m, n});
    expected.fill([&](const std::vector<int> &c) {
        float acc = 0;
        for (int t = 0; t < k; t++) acc = acc + ab(c[0], t) * bb(t, c[1]);
        return acc;
    });
    EXPECT_TRUE(buffers_match(out, expected));
}

TEST(Interpreter, ExplicitUpdateMatmul) {
    int m = random_int(1, 9), k = random_int(1, 9), n = random_int(1, 9);
    BufferParam A(Int(32), 2, "A"), B(Int(32), 2, "B");
    Buffer<int> ab = random_buffer<int>({m, k}, -9, 9), bb = random_buffer<int>({k, n}, -9, 9);
    A.set(ab);
    B.set(bb);
    Var i("i"), j("j");
    RDom r(0, k, "r");
    Func C("C");
    C(i, j) = 0;
    C(i, j) += A(i, r) * B(r, j);
    Buffer<int> out(interpret(C, {m, n}));
    for (int a = 0; a < m; a++)
        for (int b = 0; b < n; b++) {
            int acc = 0;
            for (int t = 0; t < k; t++) acc += ab(a, t) * bb(t, b);
            EXPECT_EQ(out(a, b), acc);
        }
}

TEST(Interpreter, Histogram) {
    int n = random_int(50, 500);
    BufferParam in(UInt(8), 1, "in");
    Buffer<uint8_t> ib = random_buffer<uint8_t>({n}, 0, 256);
    in.set(ib);
    RDom r(0, in.dim(0).extent(), "r");
    Func hist("hist");
    hist(in(r)) += 1;
    EXPECT_EQ(hist.type(), Int(32));
    Buffer<int> out(interpret(hist, {256}));
    std::vector<int> expected(256, 0);
    for (int i = 0; i < n; i++) expected[ib(i)]++;
    for (int v = 0; v < 256; v++) EXPECT_EQ(out(v), expected[v]) << "bin " << v;

    // A consumer reading the histogram point by point sees the same values,
    // including points no update touches.
    Var x("x");
    Func twice("twice");
    twice(x) = hist(x - 10) * 2;
    Buffer<int> tb(interpret(twice, {300}));
    for (int v = 0; v < 300; v++) {
        int bin = v - 10;
        EXPECT_EQ(tb(v), bin >= 0 && bin < 256 ? 2 * expected[bin] : 0);
    }
}

TEST(Interpreter, PrefixSumScan) {
    int n = random_int(2, 100);
    BufferParam in(Int(32), 1, "in");
    Buffer<int> ib = random_buffer<int>({n}, -100, 100);
    in.set(ib);
    Var x("x");
    RDom r(1, n - 1, "r");
    Func f("f");
    f(x) = in(x);
    f(r) = f(r - 1) + in(r);
    Buffer<int> out(interpret(f, {n}));
    int acc = 0;
    for (int i = 0; i < n; i++) {
        acc += ib(i);
        EXPECT_EQ(out(i), acc) << "at " << i;
    }

    // Starting at 0 reads f(-1), which keeps its pure definition (0).
    Func g("g");
    RDom s(0, n, "s");
    g(x) = 0;
    g(s) = g(s - 1) + in(s);
    Buffer<int> gb(interpret(g, {n}));
    acc = 0;
    for (int i = 0; i < n; i++) {
        acc += ib(i);
        EXPECT_EQ(gb(i), acc);
    }
}

TEST(Interpreter, ScanAlongOneDimension) {
    int h = random_int(1, 8), w = random_int(2, 20);
    BufferParam in(Float(32), 2, "in");
    Buffer<float> ib = random_buffer<float>({h, w});
    in.set(ib);
    Var y("y"), x("x");
    RDom r(1, w - 1, "r");
    Func f("f");
    f(y, x) = in(y, x);
    f(y, r) = f(y, r - 1) * 0.5f + f(y, r);
    Buffer<float> out(interpret(f, {h, w}));
    Buffer<float> expected({h, w});
    for (int i = 0; i < h; i++) {
        float acc = ib(i, 0);
        expected(i, 0) = acc;
        for (int j = 1; j < w; j++) {
            acc = acc * 0.5f + ib(i, j);
            expected(i, j) = acc;
        }
    }
    EXPECT_TRUE(buffers_match(out, expected));
}

TEST(Interpreter, RDomWhereTriangle) {
    int n = random_int(2, 20);
    BufferParam in(Float(32), 2, "in");
    Buffer<float> ib = random_buffer<float>({n, n});
    in.set(ib);
    RDom r({{0, n}, {0, n}}, "r");
    r.where(r.y <= r.x);
    Func total("total");
    total() = 0.0f;
    total() += in(r.x, r.y);
    Buffer<float> out(interpret(total, {}));
    float acc = 0;
    for (int a = 0; a < n; a++)
        for (int b = 0; b <= a; b++) acc = acc + ib(a, b);
    EXPECT_EQ(Buffer<float>(out)(), acc);
}

TEST(Interpreter, CausalSumWithPureVarInWhere) {
    int n = random_int(2, 40);
    BufferParam in(Int(32), 1, "in");
    Buffer<int> ib = random_buffer<int>({n}, -10, 10);
    in.set(ib);
    Var i("i");
    RDom r(0, n, "r");
    r.where(r <= i);
    Func prefix("prefix");
    prefix(i) = sum(in(r));
    Buffer<int> out(interpret(prefix, {n}));
    int acc = 0;
    for (int k = 0; k < n; k++) {
        acc += ib(k);
        EXPECT_EQ(out(k), acc);
    }
}

TEST(Interpreter, WhereReadsTheFuncItself) {
    // Each point doubles when its left neighbour, as updated so far, is
    // positive. The first condition reads f(0), which no update writes or
    // otherwise reads: the interpreter's box must hold it too.
    int n = random_int(2, 60);
    BufferParam in(Int(32), 1, "in");
    Buffer<int> ib = random_buffer<int>({n}, -10, 10);
    in.set(ib);
    Var x("x");
    RDom r(1, n - 1, "r");
    Func f("f");
    f(x) = in(x);
    r.where(f(r - 1) > 0);
    f(r) = f(r) * 2;
    Buffer<int> out(interpret(f, {n}));
    std::vector<int> expected(ib.data(), ib.data() + n);
    for (int i = 1; i < n; i++) {
        if (expected[i - 1] > 0) expected[i] *= 2;
    }
    for (int i = 0; i < n; i++) EXPECT_EQ(out(i), expected[i]) << "at " << i;
}

TEST(Interpreter, InlineReductions) {
    int h = random_int(1, 10), w = random_int(1, 10);
    BufferParam in(Float(32), 2, "in");
    Buffer<float> ib = random_buffer<float>({h, w}, 0.5, 1.5);
    in.set(ib);
    Var y("y");
    RDom r(0, w, "r");
    Func mx("mx"), mn("mn"), pr("pr"), sm("sm");
    mx(y) = maximum(in(y, r));
    mn(y) = minimum(in(y, r));
    pr(y) = product(in(y, r));
    sm(y) = sum(in(y, r) * 2.0f) + 1.0f;
    Buffer<float> mxb(interpret(mx, {h})), mnb(interpret(mn, {h})), prb(interpret(pr, {h})),
        smb(interpret(sm, {h}));
    for (int a = 0; a < h; a++) {
        float ex = -INFINITY, en = INFINITY, ep = 1, es = 0;
        for (int b = 0; b < w; b++) {
            ex = std::max(ex, ib(a, b));
            en = std::min(en, ib(a, b));
            ep = ep * ib(a, b);
            es = es + ib(a, b) * 2.0f;
        }
        EXPECT_EQ(mxb(a), ex);
        EXPECT_EQ(mnb(a), en);
        EXPECT_EQ(prb(a), ep);
        EXPECT_EQ(smb(a), es + 1.0f);
    }
}

TEST(Interpreter, MaximumOfEmptyDomainIsMinusInfinity) {
    Func f("f");
    RDom r(0, 0, "r");
    f() = maximum(cast<float>(r));
    EXPECT_EQ(Buffer<float>(interpret(f, {}))(), -INFINITY);
}

TEST(Interpreter, TupleFuncs) {
    int n = random_int(1, 30);
    BufferParam in(Float(32), 1, "in");
    Buffer<float> ib = random_buffer<float>({n});
    in.set(ib);
    Var x("x");
    Func f("f"), g("g");
    f(x) = Tuple(in(x), cast<int>(in(x)*100.0f));
    g(x) = f(x)[0] * 2.0f + cast<float>(f(x)[1]);
    std::vector<RawBuffer> fb = interpret_tuple(f, {n});
    ASSERT_EQ(fb.size(), 2u);
    Buffer<float> f0(fb[0]);
    Buffer<int> f1(fb[1]);
    Buffer<float> gb(interpret(g, {n}));
    for (int i = 0; i < n; i++) {
        EXPECT_EQ(f0(i), ib(i));
        EXPECT_EQ(f1(i), static_cast<int>(ib(i) * 100.0f));
        EXPECT_EQ(gb(i), ib(i) * 2.0f + static_cast<float>(static_cast<int>(ib(i) * 100.0f)));
    }
}

TEST(Interpreter, TupleUpdateReadsOldValues) {
    // A Tuple update computes every element before storing any: a swap.
    Var x("x");
    Func f("f");
    f(x) = Tuple(x, x * 10);
    f(x) = Tuple(f(x)[1], f(x)[0]);
    std::vector<RawBuffer> b = interpret_tuple(f, {4});
    Buffer<int> b0(b[0]), b1(b[1]);
    for (int i = 0; i < 4; i++) {
        EXPECT_EQ(b0(i), i * 10);
        EXPECT_EQ(b1(i), i);
    }
}

TEST(Interpreter, ArgmaxFirstWins) {
    int h = random_int(2, 8), w = random_int(3, 16);
    BufferParam in(Int(32), 2, "in");
    // Few distinct values, so ties are common.
    Buffer<int> ib = random_buffer<int>({h, w}, 0, 3);
    in.set(ib);
    Var y("y");
    RDom r(0, w, "r");
    Func am("am"), an("an");
    am(y) = argmax(in(y, r));
    an(y) = argmin(in(y, r));
    std::vector<RawBuffer> mb = interpret_tuple(am, {h}), nb = interpret_tuple(an, {h});
    Buffer<int> mi(mb[0]), mv(mb[1]), ni(nb[0]), nv(nb[1]);
    for (int a = 0; a < h; a++) {
        int bi = 0, li = 0;
        for (int b = 1; b < w; b++) {
            if (ib(a, b) > ib(a, bi)) bi = b;
            if (ib(a, b) < ib(a, li)) li = b;
        }
        EXPECT_EQ(mi(a), bi);
        EXPECT_EQ(mv(a), ib(a, bi));
        EXPECT_EQ(ni(a), li);
        EXPECT_EQ(nv(a), ib(a, li));
    }
}

TEST(Interpreter, Argmax2D) {
    int n = random_int(2, 9);
    BufferParam in(Float(32), 2, "in");
    Buffer<float> ib = random_buffer<float>({n, n});
    in.set(ib);
    RDom r({{0, n}, {0, n}}, "r");
    Func f("f");
    f() = argmax(in(r.x, r.y));
    std::vector<RawBuffer> b = interpret_tuple(f, {});
    int bx = 0, by = 0;
    for (int a = 0; a < n; a++)
        for (int c = 0; c < n; c++)
            if (ib(a, c) > ib(bx, by)) {
                bx = a;
                by = c;
            }
    EXPECT_EQ(Buffer<int>(b[0])(), bx);
    EXPECT_EQ(Buffer<int>(b[1])(), by);
    EXPECT_EQ(Buffer<float>(b[2])(), ib(bx, by));
}

TEST(Interpreter, HalfAndBFloatInputs) {
    int n = random_int(4, 64);
    BufferParam h(Float(16), 1, "h"), bf(BFloat(16), 1, "bf");
    Buffer<float16_t> hb({n});
    Buffer<bfloat16_t> bb({n});
    std::uniform_real_distribution<float> dist(-8, 8);
    for (int i = 0; i < n; i++) {
        hb(i) = float16_t(dist(rng()));
        bb(i) = bfloat16_t(dist(rng()));
    }
    h.set(hb);
    bf.set(bb);
    Var x("x");
    Func widened("widened"), hmul("hmul"), mixed("mixed"), narrowed("narrowed");
    widened(x) = cast<float>(h(x)) * 2.0f + cast<float>(bf(x));
    hmul(x) = h(x) * h(x) + h(x);  // float16 arithmetic
    mixed(x) = h(x) + bf(x);       // float16 meets bfloat16 at float32
    narrowed(x) = cast<bfloat16_t>(cast<float>(h(x)) / 3.0f);
    EXPECT_EQ(hmul.type(), Float(16));
    EXPECT_EQ(mixed.type(), Float(32));
    Buffer<float> wb(interpret(widened, {n})), mb(interpret(mixed, {n}));
    Buffer<float16_t> hmb(interpret(hmul, {n}));
    Buffer<bfloat16_t> nb(interpret(narrowed, {n}));
    for (int i = 0; i < n; i++) {
        float a = static_cast<float>(hb(i)), b = static_cast<float>(bb(i));
        EXPECT_EQ(wb(i), a * 2.0f + b);
        float sq = static_cast<float>(float16_t(a * a));
        EXPECT_EQ(hmb(i).bits, float16_t(sq + a).bits);
        EXPECT_EQ(mb(i), a + b);
        EXPECT_EQ(nb(i).bits, bfloat16_t(a / 3.0f).bits);
    }
}

TEST(Interpreter, ScalarParams) {
    int n = random_int(1, 20);
    Param<float> scale("scale");
    Param<int> offset("offset");
    scale.set(1.5f);
    offset.set(-3);
    Var x("x");
    Func f("f");
    f(x) = cast<float>(x + offset) * scale;
    Buffer<float> out(interpret(f, {n}));
    for (int i = 0; i < n; i++) EXPECT_EQ(out(i), static_cast<float>(i - 3) * 1.5f);
}

TEST(Interpreter, BufferDescriptorInExpressions) {
    int h = random_int(1, 10), w = random_int(1, 10);
    BufferParam in(Float(32), 2, "in");
    Buffer<float> ib = random_buffer<float>({h, w});
    ib.set_min({3, -2});
    in.set(ib);
    Var y("y"), x("x");
    Func f("f"), g("g");
    // Reads the input relative to its own min; the extent is a loop bound.
    f(y, x) = in(y + in.dim(0).min(), x + in.dim(1).min()) + cast<float>(in.dim(1).extent());
    g(y) = cast<float>(in.dim(0).max() + in.dim(1).stride());
    Buffer<float> out(interpret(f, {h, w}));
    for (int a = 0; a < h; a++)
        for (int b = 0; b < w; b++) EXPECT_EQ(out(a, b), ib(a + 3, b - 2) + static_cast<float>(w));
    EXPECT_EQ(Buffer<float>(interpret(g, {1}))(0), static_cast<float>(3 + h - 1 + 1));
}

TEST(Interpreter, MultiOutputInterpretIntoWithMins) {
    int h = random_int(1, 10), w = random_int(1, 10);
    BufferParam in(Int(32), 2, "in");
    Buffer<int> ib = random_buffer<int>({h + 20, w + 20}, -50, 50);
    ib.set_min({-10, -10});
    in.set(ib);
    Var y("y"), x("x");
    Func f("f"), g("g");
    f(y, x) = in(y, x) * 2;
    g(y, x) = Tuple(f(y, x) + 1, cast<float>(in(y - 1, x)));
    Buffer<int> fb({h, w}), g0({h, w});
    Buffer<float> g1({h, w});
    fb.set_min({-5, 4});
    g0.set_min({2, -7});
    g1.set_min({2, -7});
    interpret_into({f, g}, {fb, g0, g1});
    for (int a = 0; a < h; a++)
        for (int b = 0; b < w; b++) {
            EXPECT_EQ(fb(a - 5, b + 4), ib(a - 5, b + 4) * 2);
            EXPECT_EQ(g0(a + 2, b - 7), ib(a + 2, b - 7) * 2 + 1);
            EXPECT_EQ(g1(a + 2, b - 7), static_cast<float>(ib(a + 1, b - 7)));
        }
}

TEST(Interpreter, UpdateWithPureVarAndRVarInOneDimension) {
    // Update 0 writes column r only; update 1 touches every x. The box along x
    // must cover the requested points as well as the RDom's writes.
    int n = random_int(3, 12);
    Var x("x");
    RDom r(2, 3, "r");
    Func f("f");
    f(x) = x;
    f(r) = f(r) * 10;
    f(x) = f(x) + 1;
    Buffer<int> out(interpret(f, {n}));
    for (int i = 0; i < n; i++) EXPECT_EQ(out(i), (i >= 2 && i < 5 ? i * 10 : i) + 1);
}

TEST(Interpreter, FuncWrappingABuffer) {
    Buffer<int> b({3, 4});
    b.fill([](const std::vector<int> &c) { return c[0] * 10 + c[1]; });
    Func in(b);
    Var y("y"), x("x");
    Func f("f");
    f(y, x) = in(y, x) + 1;
    Buffer<int> out(interpret(f, {3, 4}));
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++) EXPECT_EQ(out(i, j), i * 10 + j + 1);
}

TEST(Interpreter, SelectOnlyEvaluatesTheChosenSide) {
    int n = 8;
    BufferParam in(Int(32), 1, "in");
    Buffer<int> ib = random_buffer<int>({n}, 0, 100);
    in.set(ib);
    Var x("x");
    Func f("f");
    // A boundary condition: the out-of-range side is never read.
    f(x) = select(x < n, in(min(x, n - 1)), 0) + select(x >= 0 && x < n, in(x), -1);
    Buffer<int> out(interpret(f, {n + 4}));
    for (int i = 0; i < n + 4; i++) EXPECT_EQ(out(i), i < n ? 2 * ib(i) : -1);
}

TEST(Interpreter, Attention) {
    const int seq = 64, dh = 16;
    BufferParam q(Float(32), 2, "q"), k(Float(32), 2, "k"), v(Float(32), 2, "v");
    Buffer<float> qb = random_buffer<float>({seq, dh}), kb = random_buffer<float>({seq, dh}),
                  vb = random_buffer<float>({seq, dh});
    q.set(qb);
    k.set(kb);
    v.set(vb);
    Var i("i"), j("j"), d("d");
    RDom r(0, seq, "r"), e(0, dh, "e");
    Func s("s"), m("m"), p("p"), l("l"), o("o"), out("out");
    float scale = 0.25f;
    s(i, j) = sum(q(i, e) * k(j, e)) * scale;
    m(i) = maximum(s(i, r));
    p(i, j) = exp(s(i, j) - m(i));
    l(i) = sum(p(i, r));
    o(i, d) = sum(p(i, r) * v(r, d));
    out(i, d) = o(i, d) / l(i);
    auto t0 = std::chrono::steady_clock::now();
    Buffer<float> ob(interpret(out, {seq, dh}));
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("[loom] interpreted attention %dx%d in %.3f s\n", seq, dh, secs);

    Buffer<float> expected({seq, dh});
    for (int a = 0; a < seq; a++) {
        std::vector<float> sv(seq), pv(seq);
        float mx = -INFINITY;
        for (int b = 0; b < seq; b++) {
            float acc = 0;
            for (int c = 0; c < dh; c++) acc = acc + qb(a, c) * kb(b, c);
            sv[b] = acc * scale;
            mx = std::max(mx, sv[b]);
        }
        float den = 0;
        for (int b = 0; b < seq; b++) {
            pv[b] = std::exp(sv[b] - mx);
            den = den + pv[b];
        }
        for (int c = 0; c < dh; c++) {
            float num = 0;
            for (int b = 0; b < seq; b++) num = num + pv[b] * vb(b, c);
            expected(a, c) = num / den;
        }
    }
    EXPECT_TRUE(buffers_match(ob, expected));
}

TEST(Interpreter, EvaluateExpr) {
    using namespace loom::internal;
    Expr x = Variable::make(Int(8), "x");
    Expr e = evaluate_expr(x * 2, {{"x", Expr(int8_t(100))}});
    ASSERT_NE(as_const_int(e), nullptr);
    EXPECT_EQ(*as_const_int(e), -56);  // wraps at 8 bits
    Expr y = Variable::make(Int(32), "y");
    e = evaluate_expr((y / -2) + (y % 3), {{"y", Expr(-7)}});
    EXPECT_EQ(*as_const_int(e), 3 + 2);
    Expr f = Variable::make(Float(32), "f");
    e = evaluate_expr(f / 3.0f, {{"f", Expr(1.0f)}});
    ASSERT_NE(as_const_float(e), nullptr);
    EXPECT_EQ(*as_const_float(e), static_cast<double>(1.0f / 3.0f));
}

TEST(Interpreter, BitwiseAndWideIntegers) {
    int n = 64;
    BufferParam a(UInt(32), 1, "a"), s(Int(64), 1, "s");
    Buffer<uint32_t> ab({n});
    Buffer<int64_t> sb({n});
    std::uniform_int_distribution<uint32_t> du;
    std::uniform_int_distribution<int64_t> d64;
    for (int i = 0; i < n; i++) {
        ab(i) = du(rng());
        sb(i) = d64(rng());
    }
    a.set(ab);
    s.set(sb);
    Var x("x");
    Func f("f"), g("g"), h("h");
    f(x) = ((a(x) & 0xff00u) | (a(x) >> 3)) ^ ~a(x);
    g(x) = s(x) * 3 + (s(x) >> 5) - (s(x) << 2);
    h(x) = cast<int8_t>(a(x)) >> 1;  // arithmetic shift of a signed value
    Buffer<uint32_t> fb(interpret(f, {n}));
    Buffer<int64_t> gb(interpret(g, {n}));
    Buffer<int8_t> hb(interpret(h, {n}));
    for (int i = 0; i < n; i++) {
        uint32_t v = ab(i);
        EXPECT_EQ(fb(i), ((v & 0xff00u) | (v >> 3)) ^ ~v);
        uint64_t w = static_cast<uint64_t>(sb(i));
        EXPECT_EQ(gb(i),
                  static_cast<int64_t>(w * 3 + static_cast<uint64_t>(sb(i) >> 5) - (w << 2)));
        EXPECT_EQ(hb(i), static_cast<int8_t>(static_cast<int8_t>(v) >> 1));
    }
}
