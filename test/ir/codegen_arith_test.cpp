// Arithmetic semantics of generated code: floor division and modulo (with
// zero and overflowing divisors), min/max, comparisons, casts between every
// kind of type including float16 and bfloat16, bitwise ops.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "codegen_test_util.h"

using namespace cgtest;

namespace {

// Floor division / modulo with b == 0 -> 0, for any integer width.
int64_t ref_div(int64_t a, int64_t b) { return div_imp(a, b); }
int64_t ref_mod(int64_t a, int64_t b) { return mod_imp(a, b); }

std::vector<int32_t> interesting_ints() {
    std::vector<int32_t> v = {0,
                              1,
                              -1,
                              2,
                              -2,
                              3,
                              -3,
                              7,
                              -7,
                              8,
                              -8,
                              13,
                              -13,
                              100,
                              -100,
                              1 << 20,
                              -(1 << 20),
                              INT32_MAX,
                              INT32_MIN,
                              INT32_MAX - 1,
                              INT32_MIN + 1};
    std::mt19937 rng(1);
    for (int i = 0; i < 40; i++) v.push_back(static_cast<int32_t>(rng()));
    return v;
}

}  // namespace

TEST(CodeGenArith, FloorDivModInt32ScalarAndVector) {
    // q[i] = a[i] / b[i], r[i] = a[i] % b[i]: scalar loop over i and an
    // 8-wide vector loop, checked against the C reference.
    std::vector<int32_t> vals = interesting_ints();
    std::vector<int32_t> a, b;
    for (int32_t x : vals)
        for (int32_t y : vals) {
            a.push_back(x);
            b.push_back(y);
        }
    while (a.size() % 8) {
        a.push_back(5);
        b.push_back(0);
    }
    int n = static_cast<int>(a.size());
    Expr i = var("i");
    Stmt scalar =
        loop("i", i32(0), i32(n),
             Block::make(store("q", Div::make(load(Int(32), "a", i), load(Int(32), "b", i)), i),
                         store("r", Mod::make(load(Int(32), "a", i), load(Int(32), "b", i)), i)));
    Expr r8 = Ramp::make(var("v") * i32(8), i32(1), 8);
    Stmt vec =
        loop("v", i32(0), i32(n / 8),
             Block::make(
                 store("qv", Div::make(load(Int(32, 8), "a", r8), load(Int(32, 8), "b", r8)), r8),
                 store("rv", Mod::make(load(Int(32, 8), "a", r8), load(Int(32, 8), "b", r8)), r8)));
    auto m = compile(
        "divmod",
        {buffer_arg("a", Int(32), 1), buffer_arg("b", Int(32), 1), buffer_arg("q", Int(32), 1),
         buffer_arg("r", Int(32), 1), buffer_arg("qv", Int(32), 1), buffer_arg("rv", Int(32), 1)},
        Block::make(scalar, vec));
    std::vector<int32_t> q(n), r(n), qv(n), rv(n);
    Buf ba(a.data(), Int(32), {n}), bb(b.data(), Int(32), {n}), bq(q.data(), Int(32), {n}),
        br(r.data(), Int(32), {n}), bqv(qv.data(), Int(32), {n}), brv(rv.data(), Int(32), {n});
    ASSERT_EQ(run(m, {ba.arg(), bb.arg(), bq.arg(), br.arg(), bqv.arg(), brv.arg()}), 0);
    for (int k = 0; k < n; k++) {
        int32_t wq = static_cast<int32_t>(ref_div(a[k], b[k]));
        int32_t wr = static_cast<int32_t>(ref_mod(a[k], b[k]));
        ASSERT_EQ(q[k], wq) << a[k] << " / " << b[k];
        ASSERT_EQ(r[k], wr) << a[k] << " % " << b[k];
        ASSERT_EQ(qv[k], wq) << a[k] << " / " << b[k];
        ASSERT_EQ(rv[k], wr) << a[k] << " % " << b[k];
    }
}

TEST(CodeGenArith, FloorDivModByConstants) {
    std::vector<int32_t> vals = interesting_ints();
    for (int32_t c : {1, 2, 4, 8, 1024, 3, 7, 10, 1000, -1, -2, -3, -8, 0, INT32_MIN}) {
        Expr i = var("i");
        Stmt s = loop("i", i32(0), var("a.extent.0"),
                      Block::make(store("q", Div::make(load(Int(32), "a", i), i32(c)), i),
                                  store("r", Mod::make(load(Int(32), "a", i), i32(c)), i)));
        Expr r8 = Ramp::make(i32(0), i32(1), 8);
        s = Block::make(
            s,
            Block::make(
                store("qv", Div::make(load(Int(32, 8), "a", r8), Broadcast::make(i32(c), 8)), r8),
                store("rv", Mod::make(load(Int(32, 8), "a", r8), Broadcast::make(i32(c), 8)), r8)));
        auto m = compile(
            "divconst",
            {buffer_arg("a", Int(32), 1), buffer_arg("q", Int(32), 1), buffer_arg("r", Int(32), 1),
             buffer_arg("qv", Int(32), 1), buffer_arg("rv", Int(32), 1)},
            s);
        int n = static_cast<int>(vals.size());
        std::vector<int32_t> q(n), r(n), qv(8), rv(8);
        Buf ba(vals.data(), Int(32), {n}), bq(q.data(), Int(32), {n}), br(r.data(), Int(32), {n}),
            bqv(qv.data(), Int(32), {8}), brv(rv.data(), Int(32), {8});
        ASSERT_EQ(run(m, {ba.arg(), bq.arg(), br.arg(), bqv.arg(), brv.arg()}), 0);
        for (int k = 0; k < n; k++) {
            ASSERT_EQ(q[k], static_cast<int32_t>(ref_div(vals[k], c))) << vals[k] << " / " << c;
            ASSERT_EQ(r[k], static_cast<int32_t>(ref_mod(vals[k], c))) << vals[k] << " % " << c;
            if (k < 8) {
                ASSERT_EQ(qv[k], q[k]) << vals[k] << " / " << c;
                ASSERT_EQ(rv[k], r[k]) << vals[k] << " % " << c;
            }
        }
    }
}

TEST(CodeGenArith, DivModOtherIntTypes) {
    // uint8, int16, uint32, int64 against the reference (unsigned: plain
    // division, zero divisor -> 0).
    for (Type t : {UInt(8), Int(16), UInt(32), Int(64), Int(8)}) {
        Expr i = var("i");
        Expr a = load(t, "a", i), b = load(t, "b", i);
        Stmt s = loop("i", i32(0), var("a.extent.0"),
                      Block::make(store("q", Div::make(a, b), i), store("r", Mod::make(a, b), i)));
        auto m = compile("divmod_t",
                         {buffer_arg("a", t, 1), buffer_arg("b", t, 1), buffer_arg("q", t, 1),
                          buffer_arg("r", t, 1)},
                         s);
        std::mt19937_64 rng(7);
        const int n = 500;
        std::vector<int64_t> av(n), bv(n), qv(n),
            rv(n);  // 8 bytes each; only the low bytes are used
        std::vector<uint8_t> ab(n * 8), bb(n * 8), qb(n * 8), rb(n * 8);
        int bytes = t.bytes();
        auto get = [&](const std::vector<uint8_t> &buf, int k) -> int64_t {
            uint64_t u = 0;
            std::memcpy(&u, &buf[k * bytes], bytes);
            if (t.is_int() && bytes < 8) {
                int sh = 64 - 8 * bytes;
                return static_cast<int64_t>(u << sh) >> sh;
            }
            return static_cast<int64_t>(u);
        };
        for (int k = 0; k < n; k++) {
            uint64_t x = rng(), y = rng();
            if (k % 5 == 0) y = 0;
            if (k % 7 == 0) y = ~uint64_t(0);  // -1
            if (k % 11 == 0) y = 3;
            if (k % 13 == 0) x = uint64_t(1) << (8 * bytes - 1);  // INT_MIN
            std::memcpy(&ab[k * bytes], &x, bytes);
            std::memcpy(&bb[k * bytes], &y, bytes);
        }
        Buf ba(ab.data(), t, {n}), bbb(bb.data(), t, {n}), bq(qb.data(), t, {n}),
            br(rb.data(), t, {n});
        ASSERT_EQ(run(m, {ba.arg(), bbb.arg(), bq.arg(), br.arg()}), 0);
        for (int k = 0; k < n; k++) {
            int64_t x = get(ab, k), y = get(bb, k);
            int64_t wq, wr;
            if (t.is_uint()) {
                uint64_t ux = static_cast<uint64_t>(x), uy = static_cast<uint64_t>(y);
                wq = uy == 0 ? 0 : static_cast<int64_t>(ux / uy);
                wr = uy == 0 ? 0 : static_cast<int64_t>(ux % uy);
            } else {
                wq = ref_div(x, y);
                wr = ref_mod(x, y);
                if (bytes < 8) {  // INT_MIN / -1 wraps in the narrow type
                    int sh = 64 - 8 * bytes;
                    wq = static_cast<int64_t>(static_cast<uint64_t>(wq) << sh) >> sh;
                }
            }
            ASSERT_EQ(get(qb, k), wq) << type_to_string(t) << " " << x << " / " << y;
            ASSERT_EQ(get(rb, k), wr) << type_to_string(t) << " " << x << " % " << y;
        }
    }
}

TEST(CodeGenArith, FloatDivModMinMaxAndComparisons) {
    Expr i = var("i");
    Expr a = load(Float(32), "a", i), b = load(Float(32), "b", i);
    Stmt s = loop("i", i32(0), var("a.extent.0"),
                  Block::make({store("div", Div::make(a, b), i), store("mod", Mod::make(a, b), i),
                               store("mn", Min::make(a, b), i), store("mx", Max::make(a, b), i),
                               store("cmp",
                                     Cast::make(Int(32), EQ::make(a, b)) +
                                         Cast::make(Int(32), NE::make(a, b)) * i32(2) +
                                         Cast::make(Int(32), LT::make(a, b)) * i32(4) +
                                         Cast::make(Int(32), LE::make(a, b)) * i32(8) +
                                         Cast::make(Int(32), GT::make(a, b)) * i32(16) +
                                         Cast::make(Int(32), GE::make(a, b)) * i32(32),
                                     i)}));
    auto m = compile("floatops",
                     {buffer_arg("a", Float(32), 1), buffer_arg("b", Float(32), 1),
                      buffer_arg("div", Float(32), 1), buffer_arg("mod", Float(32), 1),
                      buffer_arg("mn", Float(32), 1), buffer_arg("mx", Float(32), 1),
                      buffer_arg("cmp", Int(32), 1)},
                     s);
    float nan = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> av = {7.5f, -7.5f, 7.5f, -7.5f, 1, 0, nan, 2, nan, -0.0f, 3};
    std::vector<float> bv = {2, 2, -2, -2, 1, 0, 2, nan, nan, 0.0f, 3};
    int n = static_cast<int>(av.size());
    std::vector<float> dv(n), mv(n), mnv(n), mxv(n);
    std::vector<int> cv(n);
    Buf b0(av.data(), Float(32), {n}), b1(bv.data(), Float(32), {n}), b2(dv.data(), Float(32), {n}),
        b3(mv.data(), Float(32), {n}), b4(mnv.data(), Float(32), {n}),
        b5(mxv.data(), Float(32), {n}), b6(cv.data(), Int(32), {n});
    ASSERT_EQ(run(m, {b0.arg(), b1.arg(), b2.arg(), b3.arg(), b4.arg(), b5.arg(), b6.arg()}), 0);
    for (int k = 0; k < n; k++) {
        float x = av[k], y = bv[k];
        float wd = x / y;
        float wm = x - y * std::floor(x / y);
        if (std::isnan(wd)) EXPECT_TRUE(std::isnan(dv[k]));
        else EXPECT_EQ(dv[k], wd);
        if (std::isnan(wm)) EXPECT_TRUE(std::isnan(mv[k]));
        else EXPECT_EQ(mv[k], wm) << x << " mod " << y;
        // Documented NaN rule: C's fmin / fmax (a NaN operand is ignored).
        float wmn = std::fmin(x, y), wmx = std::fmax(x, y);
        if (std::isnan(wmn)) EXPECT_TRUE(std::isnan(mnv[k]));
        else EXPECT_EQ(mnv[k], wmn);
        if (std::isnan(wmx)) EXPECT_TRUE(std::isnan(mxv[k]));
        else EXPECT_EQ(mxv[k], wmx);
        int wc =
            (x == y) + (x != y) * 2 + (x < y) * 4 + (x <= y) * 8 + (x > y) * 16 + (x >= y) * 32;
        EXPECT_EQ(cv[k], wc) << x << " vs " << y;
    }
    EXPECT_EQ(mv[0], 1.5f);
    EXPECT_EQ(mv[1], 0.5f);
    EXPECT_EQ(mv[2], -0.5f);
}

TEST(CodeGenArith, FastMathMinMaxReductionAndNaNSafety) {
    // Under fast_math, float min/max may assume no NaN (so that LLVM's loop
    // vectorizer, with llvm_loop_opt, can vectorize a max reduction; so can
    // Loom's own, for a reduction scheduled vectorized): with NaN inputs their result is
    // unspecified. Without NaN it is exact; with NaN, whatever flows from it
    // into an integer (a comparison, a cast) is some fixed value, so clamped
    // indices stay in bounds and nothing crashes.
    Target fm = Target("host").with_feature(Target::FastMath).with_feature(Target::LLVMLoopOpt);
    float inf = std::numeric_limits<float>::infinity();
    float nan = std::numeric_limits<float>::quiet_NaN();

    // m[0] = max over i of a[i]; m[1] = min over i of a[i].
    Expr i = var("i");
    Expr a = load(Float(32), "a", i);
    Stmt red = Block::make(
        {store("m", f32(-inf), i32(0)), store("m", f32(inf), i32(1)),
         loop("i", i32(0), var("a.extent.0"),
              Block::make(store("m", Max::make(load(Float(32), "m", i32(0)), a), i32(0)),
                          store("m", Min::make(load(Float(32), "m", i32(1)), a), i32(1))))});
    auto mr = compile("fm_minmax", {buffer_arg("a", Float(32), 1), buffer_arg("m", Float(32), 1)},
                      red, fm);
    // The point of the relaxation: LLVM turns both into vector reductions.
    EXPECT_NE(mr->llvm_ir().find("llvm.vector.reduce.fmax"), std::string::npos) << mr->llvm_ir();
    EXPECT_NE(mr->llvm_ir().find("llvm.vector.reduce.fmin"), std::string::npos) << mr->llvm_ir();
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> dist(-100.f, 100.f);
    for (int n : {1, 7, 64, 1000, 1003}) {
        std::vector<float> av(n), mv(2);
        for (float &v : av) v = dist(rng);
        Buf b0(av.data(), Float(32), {n}), b1(mv.data(), Float(32), {2});
        ASSERT_EQ(run(mr, {b0.arg(), b1.arg()}), 0);
        float wmax = -inf, wmin = inf;
        for (float v : av) {
            wmax = std::max(wmax, v);
            wmin = std::min(wmin, v);
        }
        EXPECT_EQ(mv[0], wmax) << n;
        EXPECT_EQ(mv[1], wmin) << n;
    }

    // Indices derived from max(a, b): through a float-to-int cast, a
    // comparison, and a cast to bool; each clamped or selected into [0, 3].
    Expr b = load(Float(32), "b", i);
    Expr mx = Max::make(a, b);
    Expr clamped = Min::make(Max::make(Cast::make(Int(32), mx), i32(0)), i32(3));
    Expr by_cmp = Select::make(GT::make(mx, f32(1)), i32(3), i32(0));
    Expr by_bool = Select::make(Cast::make(Bool(), mx), i32(2), i32(1));
    Stmt idx = loop("i", i32(0), var("a.extent.0"),
                    Block::make({store("o1", load(Int(32), "lut", clamped), i),
                                 store("o2", load(Int(32), "lut", by_cmp), i),
                                 store("o3", load(Int(32), "lut", by_bool), i)}));
    auto mi = compile("fm_index",
                      {buffer_arg("a", Float(32), 1), buffer_arg("b", Float(32), 1),
                       buffer_arg("lut", Int(32), 1), buffer_arg("o1", Int(32), 1),
                       buffer_arg("o2", Int(32), 1), buffer_arg("o3", Int(32), 1)},
                      idx, fm);
    EXPECT_NE(mi->llvm_ir().find("freeze"), std::string::npos) << mi->llvm_ir();
    std::vector<float> av = {nan, 2.5f, nan, -1.f, 0.f, nan, 7.f, 1.f};
    std::vector<float> bv = {nan, nan, 3.f, -2.f, nan, -inf, 1.f, 1.f};
    int n = static_cast<int>(av.size());
    std::vector<int> lut = {10, 11, 12, 13}, o1(n), o2(n), o3(n);
    Buf b0(av.data(), Float(32), {n}), b1(bv.data(), Float(32), {n}), b2(lut.data(), Int(32), {4}),
        b3(o1.data(), Int(32), {n}), b4(o2.data(), Int(32), {n}), b5(o3.data(), Int(32), {n});
    ASSERT_EQ(run(mi, {b0.arg(), b1.arg(), b2.arg(), b3.arg(), b4.arg(), b5.arg()}), 0);
    for (int k = 0; k < n; k++) {
        EXPECT_GE(o1[k], 10) << k;
        EXPECT_LE(o1[k], 13) << k;
        EXPECT_TRUE(o2[k] == 10 || o2[k] == 13) << k;
        EXPECT_TRUE(o3[k] == 11 || o3[k] == 12) << k;
        if (!std::isnan(av[k]) && !std::isnan(bv[k])) {
            float w = std::max(av[k], bv[k]);
            EXPECT_EQ(o1[k], lut[std::min(std::max(static_cast<int>(w), 0), 3)]) << k;
            EXPECT_EQ(o2[k], w > 1 ? 13 : 10) << k;
            EXPECT_EQ(o3[k], w != 0 ? 12 : 11) << k;
        }
    }
}

TEST(CodeGenArith, IntMinMaxUnsignedCompareAndBitwise) {
    Expr i = var("i");
    Expr a = load(UInt(32), "a", i), b = load(UInt(32), "b", i);
    Expr sa = Reinterpret::make(Int(32), a), sb = Reinterpret::make(Int(32), b);
    Stmt s =
        loop("i", i32(0), var("a.extent.0"),
             Block::make({store("umin", Min::make(a, b), i), store("smin", Min::make(sa, sb), i),
                          store("smax", Max::make(sa, sb), i),
                          store("ult", Cast::make(Int(32), LT::make(a, b)), i),
                          store("and", a & b, i), store("or", a | b, i), store("xor", a ^ b, i),
                          store("not", ~a, i), store("shl", a << (b & make_const(UInt(32), 31)), i),
                          store("lshr", a >> (b & make_const(UInt(32), 31)), i),
                          store("ashr", sa >> (sb & i32(31)), i), store("abs", abs(sa), i)}));
    std::vector<std::string> outs = {"umin", "smin", "smax", "ult",  "and",  "or",
                                     "xor",  "not",  "shl",  "lshr", "ashr", "abs"};
    std::vector<LoweredArgument> args = {buffer_arg("a", UInt(32), 1),
                                         buffer_arg("b", UInt(32), 1)};
    for (auto &o : outs) args.push_back(buffer_arg(o, UInt(32), 1));
    auto m = compile("intops", args, s);
    std::vector<uint32_t> av = {0, 1, 5, 0xffffffffu, 0x80000000u, 123456789u, 7};
    std::vector<uint32_t> bv = {1, 0, 5, 1, 3, 0x80000001u, 35};
    int n = static_cast<int>(av.size());
    std::vector<std::vector<uint32_t>> res(outs.size(), std::vector<uint32_t>(n));
    std::vector<Buf> bufs;
    bufs.emplace_back(av.data(), UInt(32), std::vector<int>{n});
    bufs.emplace_back(bv.data(), UInt(32), std::vector<int>{n});
    for (auto &r : res) bufs.emplace_back(r.data(), UInt(32), std::vector<int>{n});
    std::vector<void *> argv;
    for (auto &b : bufs) argv.push_back(b.arg());
    ASSERT_EQ(run(m, argv), 0);
    for (int k = 0; k < n; k++) {
        uint32_t x = av[k], y = bv[k];
        int32_t sx = static_cast<int32_t>(x), sy = static_cast<int32_t>(y);
        EXPECT_EQ(res[0][k], std::min(x, y));
        EXPECT_EQ(static_cast<int32_t>(res[1][k]), std::min(sx, sy));
        EXPECT_EQ(static_cast<int32_t>(res[2][k]), std::max(sx, sy));
        EXPECT_EQ(res[3][k], x < y ? 1u : 0u);
        EXPECT_EQ(res[4][k], x & y);
        EXPECT_EQ(res[5][k], x | y);
        EXPECT_EQ(res[6][k], x ^ y);
        EXPECT_EQ(res[7][k], ~x);
        EXPECT_EQ(res[8][k], x << (y & 31));
        EXPECT_EQ(res[9][k], x >> (y & 31));
        EXPECT_EQ(static_cast<int32_t>(res[10][k]), sx >> (sy & 31));
        EXPECT_EQ(static_cast<int32_t>(res[11][k]), sx == INT32_MIN ? INT32_MIN : std::abs(sx));
    }
}

namespace {

// Runs out[i] = cast<to>(in[i]) over raw bytes.
template <typename From, typename To>
std::vector<To> run_cast(Type from, Type to, const std::vector<From> &in,
                         const Target &t = Target("host"), int lanes = 1) {
    Stmt s;
    if (lanes == 1) {
        s = elementwise("out", [&](Expr x) { return Cast::make(to, load(from, "in", x)); });
    } else {
        Expr r = Ramp::make(var("v") * i32(lanes), i32(1), lanes);
        s = loop("v", i32(0), Div::make(var("out.extent.0"), i32(lanes)),
                 store("out",
                       Cast::make(to.with_lanes(lanes), load(from.with_lanes(lanes), "in", r)), r));
    }
    auto m = compile("cast", {buffer_arg("in", from, 1), buffer_arg("out", to, 1)}, s, t);
    int n = static_cast<int>(in.size());
    std::vector<From> inc = in;
    std::vector<To> out(n);
    Buf bi(inc.data(), from, {n}), bo(out.data(), to, {n});
    EXPECT_EQ(run(m, {bi.arg(), bo.arg()}), 0);
    return out;
}

}  // namespace

TEST(CodeGenArith, IntAndFloatCasts) {
    std::vector<float> f = {0.f,  1.5f,  -1.5f, 2.99f, -2.99f, 100.7f, -128.0f, 127.9f,
                            1e9f, -0.4f, 0.f,   3.f,   5.f,    6.f,    7.f,     8.f};
    auto to_i32 = run_cast<float, int32_t>(Float(32), Int(32), f);
    for (size_t k = 0; k < f.size(); k++) EXPECT_EQ(to_i32[k], static_cast<int32_t>(f[k])) << f[k];
    auto to_i32v = run_cast<float, int32_t>(Float(32), Int(32), f, Target("host"), 8);
    EXPECT_EQ(to_i32v, to_i32);
    auto to_bool = run_cast<float, uint8_t>(Float(32), Bool(), f);
    for (size_t k = 0; k < f.size(); k++) EXPECT_EQ(to_bool[k], f[k] != 0 ? 1 : 0);
    std::vector<int32_t> iv = {0,         1, -1, 255, 256, -129, 70000, INT32_MIN,
                               INT32_MAX, 3, 4,  5,   6,   7,    8,     9};
    auto to_u8 = run_cast<int32_t, uint8_t>(Int(32), UInt(8), iv);
    auto to_i16 = run_cast<int32_t, int16_t>(Int(32), Int(16), iv);
    auto to_f = run_cast<int32_t, float>(Int(32), Float(32), iv);
    auto to_d = run_cast<int32_t, double>(Int(32), Float(64), iv);
    auto to_i64 = run_cast<int32_t, int64_t>(Int(32), Int(64), iv);
    auto to_b = run_cast<int32_t, uint8_t>(Int(32), Bool(), iv);
    for (size_t k = 0; k < iv.size(); k++) {
        EXPECT_EQ(to_u8[k], static_cast<uint8_t>(iv[k]));
        EXPECT_EQ(to_i16[k], static_cast<int16_t>(iv[k]));
        EXPECT_EQ(to_f[k], static_cast<float>(iv[k]));
        EXPECT_EQ(to_d[k], static_cast<double>(iv[k]));
        EXPECT_EQ(to_i64[k], static_cast<int64_t>(iv[k]));
        EXPECT_EQ(to_b[k], iv[k] != 0 ? 1 : 0);
    }
    std::vector<uint8_t> u = {0, 1, 127, 128, 200, 255, 3, 4};
    auto u_to_i32 = run_cast<uint8_t, int32_t>(UInt(8), Int(32), u);
    auto u_to_f = run_cast<uint8_t, float>(UInt(8), Float(32), u, Target("host"), 8);
    std::vector<int8_t> s8 = {0, 1, -1, 127, -128, -5, 3, 4};
    auto s_to_u32 = run_cast<int8_t, uint32_t>(Int(8), UInt(32), s8);
    for (size_t k = 0; k < u.size(); k++) {
        EXPECT_EQ(u_to_i32[k], u[k]);
        EXPECT_EQ(u_to_f[k], u[k]);
        EXPECT_EQ(s_to_u32[k], static_cast<uint32_t>(s8[k]));
    }
    std::vector<double> dv = {1.0 / 3, -2.5, 1e300, 7.99, -7.99, 0, 1, 2};
    auto d_to_f = run_cast<double, float>(Float(64), Float(32), dv);
    auto d_to_i =
        run_cast<double, int32_t>(Float(64), Int(32), {1.0 / 3, -2.5, 1e3, 7.99, -7.99, 0, 1, 2});
    for (size_t k = 0; k < dv.size(); k++) EXPECT_EQ(d_to_f[k], static_cast<float>(dv[k]));
    EXPECT_EQ(d_to_i[3], 7);
    EXPECT_EQ(d_to_i[4], -7);
}

TEST(CodeGenArith, Float16AndBFloat16Casts) {
    std::vector<float> f;
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> dist(-70000.f, 70000.f);
    for (int i = 0; i < 200; i++) f.push_back(dist(rng) / static_cast<float>(1 << (i % 20)));
    for (float v :
         {0.f, -0.f, 1.f, 65504.f, 65520.f, 1e-8f, 6e-5f, 3e-7f, 1.0009765625f, 1.00048828125f,
          std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
          std::numeric_limits<float>::quiet_NaN(), 3.0e38f})
        f.push_back(v);
    while (f.size() % 16) f.push_back(0.25f);
    // Run on the host (F16C) and on baseline x86-64 (libcalls), scalar and vector.
    for (const char *ts : {"host", "x86-64-linux"}) {
        for (int lanes : {1, 8}) {
            Target t(ts);
            auto h = run_cast<float, uint16_t>(Float(32), Float(16), f, t, lanes);
            auto bf = run_cast<float, uint16_t>(Float(32), BFloat(16), f, t, lanes);
            for (size_t k = 0; k < f.size(); k++) {
                float16_t wh(f[k]);
                bfloat16_t wb(f[k]);
                if (std::isnan(f[k])) {
                    EXPECT_TRUE(std::isnan(static_cast<float>(float16_t::from_bits(h[k]))));
                    EXPECT_TRUE(std::isnan(static_cast<float>(bfloat16_t::from_bits(bf[k]))));
                    continue;
                }
                EXPECT_EQ(h[k], wh.bits) << ts << " " << f[k];
                EXPECT_EQ(bf[k], wb.bits) << ts << " " << f[k];
            }
            // And back: exact.
            auto hf = run_cast<uint16_t, float>(Float(16), Float(32), h, t, lanes);
            auto bff = run_cast<uint16_t, float>(BFloat(16), Float(32), bf, t, lanes);
            auto hd = run_cast<uint16_t, double>(Float(16), Float(64), h, t, lanes);
            for (size_t k = 0; k < f.size(); k++) {
                float wh = static_cast<float>(float16_t::from_bits(h[k]));
                float wb = static_cast<float>(bfloat16_t::from_bits(bf[k]));
                if (std::isnan(wh)) {
                    EXPECT_TRUE(std::isnan(hf[k]));
                    continue;
                }
                EXPECT_EQ(hf[k], wh);
                EXPECT_EQ(hd[k], static_cast<double>(wh));
                EXPECT_EQ(bff[k], wb);
            }
        }
    }
    // Integers to and from the 16-bit floats.
    std::vector<int32_t> iv = {0, 1, -1, 1000, -2049, 70000, 2050, 33};
    auto i_h = run_cast<int32_t, uint16_t>(Int(32), Float(16), iv);
    auto i_b = run_cast<int32_t, uint16_t>(Int(32), BFloat(16), iv);
    for (size_t k = 0; k < iv.size(); k++) {
        EXPECT_EQ(i_h[k], float16_t(static_cast<float>(iv[k])).bits);
        EXPECT_EQ(i_b[k], bfloat16_t(static_cast<float>(iv[k])).bits);
    }
    auto b_i = run_cast<uint16_t, int32_t>(BFloat(16), Int(32), i_b);
    auto h_i = run_cast<uint16_t, int32_t>(Float(16), Int(32), i_h);
    auto h_b = run_cast<uint16_t, uint16_t>(Float(16), BFloat(16), i_h);
    for (size_t k = 0; k < iv.size(); k++) {
        if (iv[k] != 70000)
            EXPECT_EQ(h_i[k],
                      static_cast<int32_t>(static_cast<float>(float16_t::from_bits(i_h[k]))));
        EXPECT_EQ(b_i[k], static_cast<int32_t>(static_cast<float>(bfloat16_t::from_bits(i_b[k]))));
        EXPECT_EQ(h_b[k], bfloat16_t(static_cast<float>(float16_t::from_bits(i_h[k]))).bits);
    }
}

TEST(CodeGenArith, HalfAndBFloatArithmetic) {
    // c = a * b + a in float16 and in bfloat16: every operation rounds.
    for (const char *ts : {"host", "x86-64-linux"}) {
        for (Type t : {Float(16), BFloat(16)}) {
            Stmt s = elementwise("c", [&](Expr x) {
                Expr a = load(t, "a", x), b = load(t, "b", x);
                return Add::make(Mul::make(a, b), Max::make(a, b));
            });
            auto m = compile("half_arith",
                             {buffer_arg("a", t, 1), buffer_arg("b", t, 1), buffer_arg("c", t, 1)},
                             s, Target(ts));
            std::vector<uint16_t> a, b, c(64);
            auto bits = [&](float v) {
                return t.is_bfloat() ? bfloat16_t(v).bits : float16_t(v).bits;
            };
            auto val = [&](uint16_t u) {
                return t.is_bfloat() ? static_cast<float>(bfloat16_t::from_bits(u))
                                     : static_cast<float>(float16_t::from_bits(u));
            };
            for (int i = 0; i < 64; i++) {
                a.push_back(bits(i * 0.37f - 11));
                b.push_back(bits(3.3f - i * 0.11f));
            }
            Buf ba(a.data(), t, {64}), bb(b.data(), t, {64}), bc(c.data(), t, {64});
            ASSERT_EQ(run(m, {ba.arg(), bb.arg(), bc.arg()}), 0);
            for (int i = 0; i < 64; i++) {
                float x = val(a[i]), y = val(b[i]);
                float prod = val(bits(x * y));
                float want = val(bits(prod + std::max(x, y)));
                EXPECT_EQ(val(c[i]), want) << ts << " " << type_to_string(t) << " " << i;
            }
        }
    }
}

TEST(CodeGenArith, ReinterpretAndSelect) {
    // out_bits[i] = reinterpret<uint32>(in[i]); back[i] = reinterpret<float>(out_bits[i] ^ sign)
    // etc.
    Expr x = var("x");
    Expr bitsv = Reinterpret::make(UInt(32), load(Float(32), "in", x));
    Stmt s = loop(
        "x", i32(0), var("in.extent.0"),
        Block::make(
            store("bits", bitsv, x),
            store("neg",
                  Reinterpret::make(Float(32), bitsv ^ make_const(UInt(32), uint64_t(0x80000000u))),
                  x)));
    s = Block::make(
        s,
        loop("x", i32(0), var("in.extent.0"),
             store("sel", Select::make(GT::make(load(Float(32), "in", x), f32(0)), f32(1), f32(-1)),
                   x)));
    auto m = compile("reinterp",
                     {buffer_arg("in", Float(32), 1), buffer_arg("bits", UInt(32), 1),
                      buffer_arg("neg", Float(32), 1), buffer_arg("sel", Float(32), 1)},
                     s);
    std::vector<float> in = {1.f, -2.5f, 0.f, 3e10f}, neg(4), sel(4);
    std::vector<uint32_t> bits(4);
    Buf b0(in.data(), Float(32), {4}), b1(bits.data(), UInt(32), {4}),
        b2(neg.data(), Float(32), {4}), b3(sel.data(), Float(32), {4});
    ASSERT_EQ(run(m, {b0.arg(), b1.arg(), b2.arg(), b3.arg()}), 0);
    for (int i = 0; i < 4; i++) {
        uint32_t w;
        std::memcpy(&w, &in[i], 4);
        EXPECT_EQ(bits[i], w);
        EXPECT_EQ(neg[i], -in[i]);
        EXPECT_EQ(sel[i], in[i] > 0 ? 1.f : -1.f);
    }
}

TEST(CodeGenArith, ShiftsAreTotal) {
    // Out-of-range and negative shift amounts, for signed and unsigned
    // operands of two widths: a negative amount shifts the other way, an
    // amount >= the width shifts everything out.
    auto ref = [](int64_t a, int64_t s, bool left, Type t) -> int64_t {
        int bits = t.bits;
        if (s < 0) {
            left = !left;
            s = s < -64 ? 64 : -s;
        }
        uint64_t ua = static_cast<uint64_t>(a);
        if (t.is_uint() && bits < 64) ua &= (uint64_t(1) << bits) - 1;
        uint64_t z;
        if (left) z = s >= 64 ? 0 : ua << s;
        else if (t.is_int()) z = static_cast<uint64_t>(s >= 64 ? (a < 0 ? -1 : 0) : a >> s);
        else z = s >= 64 ? 0 : ua >> s;
        int sh = 64 - bits;
        if (t.is_int()) return static_cast<int64_t>(z << sh) >> sh;
        return static_cast<int64_t>(bits == 64 ? z : z & ((uint64_t(1) << bits) - 1));
    };
    for (Type t : {Int(32), UInt(32), Int(8), UInt(16)}) {
        Expr i = var("i");
        Expr a = load(t, "a", i), b = load(t, "b", i);
        Expr r8 = Ramp::make(i32(0), i32(1), 8);
        Stmt s = loop("i", i32(0), var("a.extent.0"),
                      Block::make({store("l", a << b, i), store("r", a >> b, i),
                                   store("l3", a << make_const(t, 3), i),
                                   store("r3", a >> make_const(t, 3), i)}));
        s = Block::make(
            s, store("lv", load(t.with_lanes(8), "a", r8) << load(t.with_lanes(8), "b", r8), r8));
        auto m = compile("shifts",
                         {buffer_arg("a", t, 1), buffer_arg("b", t, 1), buffer_arg("l", t, 1),
                          buffer_arg("r", t, 1), buffer_arg("l3", t, 1), buffer_arg("r3", t, 1),
                          buffer_arg("lv", t, 1)},
                         s);
        std::vector<int64_t> av, bv;
        for (int64_t x : {1, -1, 5, -100, 77, 0x40})
            for (int64_t y :
                 {0, 1, 3, 7, 8, 15, 16, 31, 32, 33, 100, -1, -3, -8, -31, -32, -40, -128})
                av.push_back(x), bv.push_back(y);
        int n = static_cast<int>(av.size());
        int bytes = t.bytes();
        auto pack = [&](const std::vector<int64_t> &v) {
            std::vector<uint8_t> out(v.size() * bytes);
            for (size_t k = 0; k < v.size(); k++) std::memcpy(&out[k * bytes], &v[k], bytes);
            return out;
        };
        auto get = [&](const std::vector<uint8_t> &buf, int k) -> int64_t {
            uint64_t u = 0;
            std::memcpy(&u, &buf[k * bytes], bytes);
            int sh = 64 - 8 * bytes;
            if (t.is_int()) return static_cast<int64_t>(u << sh) >> sh;
            return static_cast<int64_t>(u);
        };
        std::vector<uint8_t> ab = pack(av), bb = pack(bv), lb(n * bytes), rb(n * bytes),
                             l3(n * bytes), r3(n * bytes), lv(n * bytes);
        Buf b0(ab.data(), t, {n}), b1(bb.data(), t, {n}), b2(lb.data(), t, {n}),
            b3(rb.data(), t, {n}), b4(l3.data(), t, {n}), b5(r3.data(), t, {n}),
            b6(lv.data(), t, {n});
        ASSERT_EQ(run(m, {b0.arg(), b1.arg(), b2.arg(), b3.arg(), b4.arg(), b5.arg(), b6.arg()}),
                  0);
        for (int k = 0; k < n; k++) {
            int64_t x = get(ab, k), y = get(bb, k);
            EXPECT_EQ(get(lb, k), ref(x, y, true, t))
                << type_to_string(t) << " " << x << " << " << y;
            EXPECT_EQ(get(rb, k), ref(x, y, false, t))
                << type_to_string(t) << " " << x << " >> " << y;
            EXPECT_EQ(get(l3, k), ref(x, 3, true, t));
            EXPECT_EQ(get(r3, k), ref(x, 3, false, t));
            if (k < 8)
                EXPECT_EQ(get(lv, k), ref(x, y, true, t))
                    << type_to_string(t) << " " << x << " << " << y;
        }
    }
}

TEST(CodeGenArith, BFloatModRoundsEachStep) {
    // a % b for bfloat16 equals the step-by-step rounded reference.
    Type t = BFloat(16);
    Stmt s = elementwise("c", [&](Expr x) { return Mod::make(load(t, "a", x), load(t, "b", x)); });
    auto m =
        compile("bfmod", {buffer_arg("a", t, 1), buffer_arg("b", t, 1), buffer_arg("c", t, 1)}, s);
    auto r = [](float v) { return static_cast<float>(bfloat16_t(v)); };
    std::vector<uint16_t> a, b, c(200);
    for (int i = 0; i < 200; i++) {
        a.push_back(bfloat16_t(i * 13.37f - 1000).bits);
        b.push_back(bfloat16_t(0.3f + (i % 17) * 0.71f).bits);
    }
    Buf ba(a.data(), t, {200}), bb(b.data(), t, {200}), bc(c.data(), t, {200});
    ASSERT_EQ(run(m, {ba.arg(), bb.arg(), bc.arg()}), 0);
    for (int i = 0; i < 200; i++) {
        float x = static_cast<float>(bfloat16_t::from_bits(a[i])),
              y = static_cast<float>(bfloat16_t::from_bits(b[i]));
        float q = std::floor(r(x / y));
        float want = r(x - r(y * q));
        EXPECT_EQ(static_cast<float>(bfloat16_t::from_bits(c[i])), want) << x << " % " << y;
    }
}
