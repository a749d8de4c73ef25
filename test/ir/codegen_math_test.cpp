// Math intrinsics in generated code against the C library, scalar and vector.
#include <cmath>
#include <limits>
#include <random>

#include "codegen_test_util.h"

using namespace cgtest;

namespace {

// out[i] = f(in[i]) for float32 (scalar loop, or 8-wide vectors).
std::vector<float> run_unary_f32(Expr (*f)(Expr), const std::vector<float> &in, int lanes,
                                 const Target &t = Target("host")) {
    Stmt s;
    if (lanes == 1) {
        s = elementwise("out", [&](Expr x) { return f(load(Float(32), "in", x)); });
    } else {
        Expr r = Ramp::make(var("v") * i32(lanes), i32(1), lanes);
        s = loop("v", i32(0), Div::make(var("out.extent.0"), i32(lanes)),
                 store("out", f(load(Float(32, lanes), "in", r)), r));
    }
    auto m =
        compile("unary", {buffer_arg("in", Float(32), 1), buffer_arg("out", Float(32), 1)}, s, t);
    int n = static_cast<int>(in.size());
    std::vector<float> inc = in, out(n);
    Buf bi(inc.data(), Float(32), {n}), bo(out.data(), Float(32), {n});
    EXPECT_EQ(run(m, {bi.arg(), bo.arg()}), 0);
    return out;
}

std::vector<float> sample(float lo, float hi, int n, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> d(lo, hi);
    std::vector<float> v;
    for (int i = 0; i < n; i++) v.push_back(d(rng));
    return v;
}

double rel_err(float got, double want) {
    if (want == 0) return std::fabs(got);
    return std::fabs(got - want) / std::fabs(want);
}

}  // namespace

TEST(CodeGenMath, ExpF32IsAccurateEverywhere) {
    std::vector<float> in = sample(-87.f, 88.7f, 20000, 1);
    for (float v : sample(-2.f, 2.f, 4000, 2)) in.push_back(v);
    for (float v :
         {0.f, -0.f, 1.f, -1.f, 88.72f, 88.7228f, 89.f, 100.f, -87.3f, -100.f, -104.f, -200.f,
          std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
          std::numeric_limits<float>::quiet_NaN(), 1e-20f, -1e-20f, 0.5f})
        in.push_back(v);
    // Lane counts that fit AVX-512's 4/8/16-lane scaling instruction and some
    // that must be padded (3) or cut into pieces (24, 32).
    while (in.size() % 96) in.push_back(0.f);
    for (int lanes : {1, 3, 4, 8, 16, 24, 32}) {
        for (const char *ts : {"host", "x86-64-linux"}) {
            std::vector<float> out =
                run_unary_f32([](Expr x) { return exp(x); }, in, lanes, Target(ts));
            double worst = 0;
            for (size_t k = 0; k < in.size(); k++) {
                double want = std::exp(static_cast<double>(in[k]));
                if (std::isnan(in[k])) {
                    EXPECT_TRUE(std::isnan(out[k]));
                } else if (want > std::numeric_limits<float>::max()) {
                    EXPECT_EQ(out[k], std::numeric_limits<float>::infinity()) << in[k];
                } else if (want < std::numeric_limits<float>::min()) {
                    // Subnormal or zero result: absolute error below the smallest normal.
                    EXPECT_LE(std::fabs(out[k] - want),
                              2 * std::numeric_limits<float>::min() * 1.2e-7 + 1.5e-45)
                        << in[k];
                } else {
                    worst = std::max(worst, rel_err(out[k], want));
                }
            }
            EXPECT_LE(worst, 2e-7) << "lanes " << lanes << " target " << ts;
        }
    }
}

TEST(CodeGenMath, UnaryFunctionsMatchLibm) {
    struct Case {
        const char *name;
        Expr (*f)(Expr);
        double (*ref)(double);
        float lo, hi;
        double tol;  // relative, or absolute near zero
    };
    std::vector<Case> cases = {
        {"log", [](Expr x) { return log(x); }, [](double x) { return std::log(x); }, 1e-3f, 1e5f,
         2e-7},
        {"sqrt", [](Expr x) { return sqrt(x); }, [](double x) { return std::sqrt(x); }, 0.f, 1e6f,
         1e-7},
        {"rsqrt", [](Expr x) { return rsqrt(x); }, [](double x) { return 1 / std::sqrt(x); }, 1e-3f,
         1e6f, 2e-7},
        {"tanh", [](Expr x) { return tanh(x); }, [](double x) { return std::tanh(x); }, -10.f, 10.f,
         2e-7},
        {"sin", [](Expr x) { return sin(x); }, [](double x) { return std::sin(x); }, -10.f, 10.f,
         2e-7},
        {"cos", [](Expr x) { return cos(x); }, [](double x) { return std::cos(x); }, -10.f, 10.f,
         2e-7},
        {"erf", [](Expr x) { return erf(x); }, [](double x) { return std::erf(x); }, -4.f, 4.f,
         2e-7},
        {"floor", [](Expr x) { return floor(x); }, [](double x) { return std::floor(x); }, -100.f,
         100.f, 0},
        {"ceil", [](Expr x) { return ceil(x); }, [](double x) { return std::ceil(x); }, -100.f,
         100.f, 0},
        {"round", [](Expr x) { return round(x); }, [](double x) { return std::nearbyint(x); },
         -100.f, 100.f, 0},
    };
    std::vector<float> ties = {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 3.5f, 4.5f};
    for (const Case &c : cases) {
        std::vector<float> in = sample(c.lo, c.hi, 2048, 5);
        if (std::string(c.name) == "round") in.insert(in.end(), ties.begin(), ties.end());
        while (in.size() % 8) in.push_back(c.lo);
        for (int lanes : {1, 8}) {
            std::vector<float> out = run_unary_f32(c.f, in, lanes);
            for (size_t k = 0; k < in.size(); k++) {
                double want = c.ref(in[k]);
                // Compare with the correctly rounded float result.
                float wf = static_cast<float>(want);
                if (c.tol == 0) {
                    ASSERT_EQ(out[k], wf) << c.name << "(" << in[k] << ") lanes " << lanes;
                } else {
                    double err = std::fabs(out[k] - want);
                    ASSERT_LE(err, c.tol * std::max(1e-3, std::fabs(want)) + 1e-30)
                        << c.name << "(" << in[k] << ") = " << out[k] << " want " << want
                        << " lanes " << lanes;
                }
            }
        }
    }
}

TEST(CodeGenMath, PowAndFloat64) {
    // out[i] = pow(a[i], b[i]) in float32; d[i] = exp(x) + log(x) + tanh(x) + erf(x) in float64.
    Expr x = var("x");
    Stmt s =
        loop("x", i32(0), var("a.extent.0"),
             Block::make(store("p", pow(load(Float(32), "a", x), load(Float(32), "b", x)), x),
                         store("d",
                               exp(load(Float(64), "e", x)) + log(load(Float(64), "e", x)) +
                                   tanh(load(Float(64), "e", x)) + erf(load(Float(64), "e", x)) +
                                   sqrt(load(Float(64), "e", x)) + round(load(Float(64), "e", x)),
                               x)));
    auto m = compile("pow",
                     {buffer_arg("a", Float(32), 1), buffer_arg("b", Float(32), 1),
                      buffer_arg("p", Float(32), 1), buffer_arg("e", Float(64), 1),
                      buffer_arg("d", Float(64), 1)},
                     s);
    std::vector<float> a = sample(0.01f, 10.f, 256, 9), b = sample(-4.f, 4.f, 256, 10), p(256);
    std::vector<double> e(256), d(256);
    for (int i = 0; i < 256; i++) e[i] = 0.05 + i * 0.1;
    Buf b0(a.data(), Float(32), {256}), b1(b.data(), Float(32), {256}),
        b2(p.data(), Float(32), {256}), b3(e.data(), Float(64), {256}),
        b4(d.data(), Float(64), {256});
    ASSERT_EQ(run(m, {b0.arg(), b1.arg(), b2.arg(), b3.arg(), b4.arg()}), 0);
    for (int i = 0; i < 256; i++) {
        EXPECT_EQ(p[i], std::pow(a[i], b[i]));
        double w = std::exp(e[i]) + std::log(e[i]) + std::tanh(e[i]) + std::erf(e[i]) +
                   std::sqrt(e[i]) + std::nearbyint(e[i]);
        EXPECT_NEAR(d[i], w, 1e-12 * std::fabs(w));
    }
}

TEST(CodeGenMath, LogAndTanhF32EdgeCases) {
    const float inf = std::numeric_limits<float>::infinity(),
                nan = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> in = {0.f,        -0.f, -1.f,   inf,         -inf,
                             nan,        1.f,  1e-40f, 1.4e-45f,    1.17549435e-38f,
                             3.4e38f,    0.5f, 2.f,    0.70710677f, 1.0000001f,
                             0.99999994f};
    std::vector<float> rnd = sample(-30.f, 30.f, 4000, 11);
    for (float v : rnd) in.push_back(std::exp(v) * (v > 0 ? 1.f : 1.f));
    for (int lanes : {1, 8, 16}) {
        std::vector<float> lg = run_unary_f32([](Expr x) { return log(x); }, in, lanes);
        for (size_t k = 0; k < in.size(); k++) {
            double want = std::log(static_cast<double>(in[k]));
            if (std::isnan(want)) {
                EXPECT_TRUE(std::isnan(lg[k])) << in[k];
            } else if (std::isinf(want)) {
                EXPECT_EQ(lg[k], static_cast<float>(want)) << in[k];
            } else {
                EXPECT_LE(std::fabs(lg[k] - want), 1.5e-7 * std::max(std::fabs(want), 1e-6))
                    << in[k] << " " << lanes;
            }
        }
    }
    std::vector<float> tin = {0.f,     -0.f,   inf,     -inf, nan,  1e-30f, -1e-30f, 1e-5f, -3e-4f,
                              0.6249f, 0.625f, -0.625f, 9.f,  10.f, 50.f,   -50.f,   89.f};
    for (float v : sample(-1.f, 1.f, 4000, 12)) tin.push_back(v);
    while (tin.size() % 16) tin.push_back(0.1f);
    for (int lanes : {1, 16}) {
        std::vector<float> th = run_unary_f32([](Expr x) { return tanh(x); }, tin, lanes);
        for (size_t k = 0; k < tin.size(); k++) {
            double want = std::tanh(static_cast<double>(tin[k]));
            if (std::isnan(want)) {
                EXPECT_TRUE(std::isnan(th[k]));
            } else if (want == 0) {
                EXPECT_EQ(th[k], 0.f);
                EXPECT_EQ(std::signbit(th[k]), std::signbit(tin[k]));
            } else {
                EXPECT_LE(std::fabs(th[k] - want), 2e-7 * std::fabs(want)) << tin[k];
            }
        }
    }
}
