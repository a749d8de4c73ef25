// Every app of apps/, compiled ahead of time by its generator into a static
// library (apps/CMakeLists.txt), called through the generated C ABI with
// buffer descriptors built by hand, and compared with its plain C++
// reference. Nothing here includes Loom's headers or links libloom: only the
// generated headers and the loom-free *_reference.h, as a user shipping the
// libraries would. Sizes are not multiples of the tiles the libraries were
// generated with (apps/CMakeLists.txt), so every tail runs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "../attention/attention_reference.h"
#include "../blur/blur_reference.h"
#include "../elementwise/elementwise_reference.h"
#include "../gemm/gemm_reference.h"
#include "../layernorm/layernorm_reference.h"
#include "../rmsnorm/rmsnorm_reference.h"
#include "../softmax/softmax_reference.h"
#include "aot_descriptor.h"
#include "app_attention_decode_f32.h"
#include "app_attention_f16.h"
#include "app_attention_f32.h"
#include "app_attention_flash_f32.h"
#include "app_blur.h"
#include "app_gemm.h"
#include "app_layernorm.h"
#include "app_layernorm_one_pass.h"
#include "app_rmsnorm.h"
#include "app_silu_chain.h"
#include "app_softmax.h"

namespace {

const loom_type_t kFloat32 = {loom_type_float, 32, 1};
const loom_type_t kFloat16 = {loom_type_float, 16, 1};

std::vector<float> random_vector(size_t n, float lo, float hi, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(n);
    for (float &x : v) x = dist(rng);
    return v;
}

// Max |a - b| / (1 + |b|): absolute near zero, relative for large values.
double max_error(const std::vector<float> &a, const std::vector<float> &b) {
    EXPECT_EQ(a.size(), b.size());
    double worst = 0;
    for (size_t n = 0; n < a.size() && n < b.size(); n++) {
        double d = std::abs(double(a[n]) - b[n]) / (1 + std::abs(double(b[n])));
        if (!(d <= worst)) worst = d;  // NaN-sticky
    }
    return worst;
}

// IEEE binary16 by hand (round to nearest even), so that the test needs no
// compiler support for _Float16.
uint16_t to_half(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const int32_t e = static_cast<int32_t>((x >> 23) & 0xff);
    uint32_t mant = x & 0x7fffffu;
    if (e == 0xff) return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0));
    const int32_t he = e - 127 + 15;
    if (he >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
    if (he <= 0) {  // subnormal half, or zero
        if (he < -10) return static_cast<uint16_t>(sign);
        mant |= 0x800000u;
        const int shift = 14 - he;
        uint32_t h = mant >> shift;
        const uint32_t rem = mant & ((1u << shift) - 1), halfway = 1u << (shift - 1);
        if (rem > halfway || (rem == halfway && (h & 1))) h++;
        return static_cast<uint16_t>(sign | h);
    }
    uint32_t h = (static_cast<uint32_t>(he) << 10) | (mant >> 13);
    const uint32_t rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) h++;  // may carry into the exponent: fine
    return static_cast<uint16_t>(sign | h);
}

float from_half(uint16_t h) {
    const uint32_t sign = (h & 0x8000u) << 16, e = (h >> 10) & 0x1f, mant = h & 0x3ffu;
    if (e == 0) {
        float v = std::ldexp(static_cast<float>(mant), -24);
        return sign ? -v : v;
    }
    uint32_t x =
        e == 31 ? sign | 0x7f800000u | (mant << 13) : sign | ((e + 112) << 23) | (mant << 13);
    float f;
    std::memcpy(&f, &x, 4);
    return f;
}

std::string last_error() {
    const char *m = loom_last_error_message();
    return m ? m : "(no message)";
}

}  // namespace

TEST(AppsAot, Blur) {
    const int rows = 45, cols = 301;  // the library's tiles are 16 x 128
    std::vector<float> in = random_vector(size_t(rows + 2) * (cols + 2), 0, 1, 1);
    std::vector<float> out(size_t(rows) * cols), ref(out.size());
    Descriptor din(in.data(), kFloat32, {rows + 2, cols + 2}),
        dout(out.data(), kFloat32, {rows, cols});
    ASSERT_EQ(app_blur(din.raw(), dout.raw()), 0) << last_error();
    blur::reference(in.data(), cols + 2, ref.data(), rows, cols);
    EXPECT_LE(max_error(out, ref), 1e-6);
}

TEST(AppsAot, Gemm) {
    // The schedule shifts its 32 x 32 tiles inwards: M, N >= 32.
    const int M = 70, N = 50, K = 45;
    std::vector<float> a = random_vector(size_t(M) * K, -1, 1, 2);
    std::vector<float> b = random_vector(size_t(K) * N, -1, 1, 3);
    std::vector<float> c(size_t(M) * N), ref(c.size());
    Descriptor da(a.data(), kFloat32, {M, K}), db(b.data(), kFloat32, {K, N}),
        dc(c.data(), kFloat32, {M, N});
    ASSERT_EQ(app_gemm(da.raw(), db.raw(), dc.raw()), 0) << last_error();
    gemm::reference(a.data(), b.data(), ref.data(), M, N, K);
    EXPECT_LE(max_error(c, ref), 1e-5);
}

TEST(AppsAot, GemmTooSmallIsAnError) {
    // Below the tile size the shifted tiles would read before the start of
    // the buffers; the library must refuse instead.
    const int M = 20, N = 50, K = 8;
    std::vector<float> a(size_t(M) * K, 1), b(size_t(K) * N, 1), c(size_t(M) * N, -7);
    Descriptor da(a.data(), kFloat32, {M, K}), db(b.data(), kFloat32, {K, N}),
        dc(c.data(), kFloat32, {M, N});
    EXPECT_NE(app_gemm(da.raw(), db.raw(), dc.raw()), 0);
    EXPECT_NE(last_error(), "(no message)");
}

TEST(AppsAot, Softmax) {
    const int R = 13, C = 100;  // 8 rows per task, 16-wide vectors
    std::vector<float> in = random_vector(size_t(R) * C, -20, 20, 4);
    std::vector<float> out(in.size()), ref(in.size());
    Descriptor din(in.data(), kFloat32, {R, C}), dout(out.data(), kFloat32, {R, C});
    ASSERT_EQ(app_softmax(din.raw(), dout.raw()), 0) << last_error();
    softmax::reference(in.data(), ref.data(), R, C);
    EXPECT_LE(max_error(out, ref), 1e-6);
}

TEST(AppsAot, LayerNorm) {
    const int R = 13, C = 100;
    const float eps = 1e-3f;  // not the generator's default: eps is an argument
    // Far from zero on purpose: the two-pass variance must not cancel.
    std::vector<float> in = random_vector(size_t(R) * C, 90, 110, 5);
    std::vector<float> gamma = random_vector(C, 0.5f, 1.5f, 6), beta = random_vector(C, -1, 1, 7);
    std::vector<float> out(in.size()), ref(in.size());
    Descriptor din(in.data(), kFloat32, {R, C}), dg(gamma.data(), kFloat32, {C}),
        db(beta.data(), kFloat32, {C}), dout(out.data(), kFloat32, {R, C});
    ASSERT_EQ(app_layernorm(din.raw(), dg.raw(), db.raw(), eps, dout.raw()), 0) << last_error();
    layernorm::reference(in.data(), gamma.data(), beta.data(), eps, ref.data(), R, C);
    EXPECT_LE(max_error(out, ref), 1e-4);
    // Its statistics in one pass (generator param one_pass=true).
    std::fill(out.begin(), out.end(), 0.0f);
    ASSERT_EQ(app_layernorm_one_pass(din.raw(), dg.raw(), db.raw(), eps, dout.raw()), 0)
        << last_error();
    EXPECT_LE(max_error(out, ref), 1e-4);
}

TEST(AppsAot, RmsNorm) {
    const int R = 13, C = 100;
    const float eps = 1e-4f;
    std::vector<float> in = random_vector(size_t(R) * C, -3, 3, 11);
    std::vector<float> weight = random_vector(C, 0.5f, 1.5f, 12);
    std::vector<float> out(in.size()), ref(in.size());
    Descriptor din(in.data(), kFloat32, {R, C}), dw(weight.data(), kFloat32, {C}),
        dout(out.data(), kFloat32, {R, C});
    ASSERT_EQ(app_rmsnorm(din.raw(), dw.raw(), eps, dout.raw()), 0) << last_error();
    rmsnorm::reference(in.data(), weight.data(), eps, ref.data(), R, C);
    EXPECT_LE(max_error(out, ref), 1e-5);
}

TEST(AppsAot, SiluChain) {
    const int R = 13, C = 100;
    std::vector<float> in = random_vector(size_t(R) * C, -6, 6, 13);
    std::vector<float> out(in.size()), ref(in.size());
    Descriptor din(in.data(), kFloat32, {R, C}), dout(out.data(), kFloat32, {R, C});
    ASSERT_EQ(app_silu_chain(din.raw(), dout.raw()), 0) << last_error();
    elementwise::reference(in.data(), ref.data(), in.size());
    EXPECT_LE(max_error(out, ref), 1e-6);
}

namespace {

// Sizes for both attention tests: 37 queries (16 per block), 29 keys, a
// head_dim of 20 (8-wide vectors), so that no loop divides evenly.
constexpr int kB = 2, kH = 3, kSq = 37, kSk = 29, kD = 20;

}  // namespace

TEST(AppsAot, AttentionFloat32) {
    const float scale = 1.0f / std::sqrt(float(kD));
    std::vector<float> q = random_vector(size_t(kB) * kH * kSq * kD, -1, 1, 8);
    std::vector<float> k = random_vector(size_t(kB) * kH * kSk * kD, -1, 1, 9);
    std::vector<float> v = random_vector(k.size(), -1, 1, 10);
    std::vector<float> out(q.size()), ref(q.size());
    Descriptor dq(q.data(), kFloat32, {kB, kH, kSq, kD}), dk(k.data(), kFloat32, {kB, kH, kSk, kD}),
        dv(v.data(), kFloat32, {kB, kH, kSk, kD}), dout(out.data(), kFloat32, {kB, kH, kSq, kD});
    ASSERT_EQ(app_attention_f32(dq.raw(), dk.raw(), dv.raw(), scale, dout.raw()), 0)
        << last_error();
    attention::reference(q.data(), k.data(), v.data(), scale, ref.data(), kB * kH, kSq, kSk, kD);
    EXPECT_LE(max_error(out, ref), 1e-5);
}

TEST(AppsAot, AttentionFusedSchedules) {
    // The FlashAttention and FlashDecoding libraries: the same C function
    // signature and results as the materialized one, within float32.
    const float scale = 1.0f / std::sqrt(float(kD));
    for (int seq_q : {kSq, 1}) {
        std::vector<float> q = random_vector(size_t(kB) * kH * seq_q * kD, -1, 1, 14);
        std::vector<float> k = random_vector(size_t(kB) * kH * kSk * kD, -1, 1, 15);
        std::vector<float> v = random_vector(k.size(), -1, 1, 16);
        std::vector<float> ref(q.size());
        attention::reference(q.data(), k.data(), v.data(), scale, ref.data(), kB * kH, seq_q, kSk,
                             kD);
        Descriptor dq(q.data(), kFloat32, {kB, kH, seq_q, kD}),
            dk(k.data(), kFloat32, {kB, kH, kSk, kD}), dv(v.data(), kFloat32, {kB, kH, kSk, kD});
        for (auto *fn : {&app_attention_flash_f32, &app_attention_decode_f32}) {
            std::vector<float> out(q.size(), NAN);
            Descriptor dout(out.data(), kFloat32, {kB, kH, seq_q, kD});
            ASSERT_EQ(fn(dq.raw(), dk.raw(), dv.raw(), scale, dout.raw()), 0) << last_error();
            EXPECT_LE(max_error(out, ref), 1e-5)
                << (fn == &app_attention_flash_f32 ? "flash" : "decode") << ", seq_q " << seq_q;
        }
    }
}

TEST(AppsAot, AttentionFloat16) {
    const float scale = 1.0f / std::sqrt(float(kD));
    // Inputs rounded to half once; the reference reads the same values.
    auto halves = [](const std::vector<float> &f, std::vector<float> &rounded) {
        std::vector<uint16_t> h(f.size());
        rounded.resize(f.size());
        for (size_t n = 0; n < f.size(); n++) rounded[n] = from_half(h[n] = to_half(f[n]));
        return h;
    };
    std::vector<float> qf, kf, vf;
    std::vector<uint16_t> q = halves(random_vector(size_t(kB) * kH * kSq * kD, -1, 1, 11), qf);
    std::vector<uint16_t> k = halves(random_vector(size_t(kB) * kH * kSk * kD, -1, 1, 12), kf);
    std::vector<uint16_t> v = halves(random_vector(kf.size(), -1, 1, 13), vf);
    std::vector<uint16_t> out(q.size());
    Descriptor dq(q.data(), kFloat16, {kB, kH, kSq, kD}), dk(k.data(), kFloat16, {kB, kH, kSk, kD}),
        dv(v.data(), kFloat16, {kB, kH, kSk, kD}), dout(out.data(), kFloat16, {kB, kH, kSq, kD});
    ASSERT_EQ(app_attention_f16(dq.raw(), dk.raw(), dv.raw(), scale, dout.raw()), 0)
        << last_error();
    std::vector<float> got(out.size()), ref(out.size());
    for (size_t n = 0; n < out.size(); n++) got[n] = from_half(out[n]);
    attention::reference(qf.data(), kf.data(), vf.data(), scale, ref.data(), kB * kH, kSq, kSk, kD);
    // The output is rounded to half: 2^-11 relative, plus float32 arithmetic.
    EXPECT_LE(max_error(got, ref), 1e-3);
}

TEST(AppsAot, WrongElementTypeIsAnError) {
    // float32 data handed to the float16 library: refused, not misread.
    std::vector<float> q(size_t(kSq) * kD), k(size_t(kSk) * kD), v(k.size()), out(q.size());
    Descriptor dq(q.data(), kFloat32, {1, 1, kSq, kD}), dk(k.data(), kFloat32, {1, 1, kSk, kD}),
        dv(v.data(), kFloat32, {1, 1, kSk, kD}), dout(out.data(), kFloat32, {1, 1, kSq, kD});
    EXPECT_NE(app_attention_f16(dq.raw(), dk.raw(), dv.raw(), 1.0f, dout.raw()), 0);
    EXPECT_NE(last_error().find("float16"), std::string::npos) << last_error();
}
