// Helpers shared by the attention tests (attention_variants_test.cpp,
// attention_fused_test.cpp): seeds, inputs in every element type, the
// float64 reference, and the tolerances with which an output is compared
// to it. Each test file decides how its pipelines are scheduled, compiled
// and shared.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <ostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "../attention/variants.h"

namespace attention {
// Test parameters print as their names.
inline void PrintTo(Variant v, std::ostream *os) { *os << variant_name(v); }
}  // namespace attention

namespace attention_test {

using attention::AttentionVariant;
using attention::Variant;
using attention::VariantShape;

enum class Mode { Prefill, Decode };
inline void PrintTo(Mode m, std::ostream *os) {
    *os << (m == Mode::Prefill ? "prefill" : "decode");
}
inline const char *mode_name(Mode m) { return m == Mode::Prefill ? "prefill" : "decode"; }

/** A fresh random seed, or LOOM_TEST_SEED when set (to replay a failure). */
inline unsigned fresh_seed() {
    if (const char *s = std::getenv("LOOM_TEST_SEED"))
        return unsigned(std::strtoul(s, nullptr, 10));
    return std::random_device{}();
}

inline std::string type_name(loom::Type t) {
    if (t == loom::Float(32)) return "fp32";
    if (t == loom::Float(16)) return "fp16";
    return "bf16";
}

/** float32, float16, bfloat16: test parameters index this. */
inline const loom::Type all_types[] = {loom::Float(32), loom::Float(16), loom::BFloat(16)};

/** Rounds `vals` to type t in place (a no-op for float32). */
inline void round_to(loom::Type t, std::vector<float> &vals) {
    if (t == loom::Float(16)) {
        for (float &x : vals) x = static_cast<float>(loom::float16_t(x));
    } else if (t == loom::BFloat(16)) {
        for (float &x : vals) x = static_cast<float>(loom::bfloat16_t(x));
    }
}

/** A buffer of type t holding `vals`, which are rounded to t in place so that
 * the reference sees exactly what Loom reads. */
inline loom::RawBuffer to_buffer(loom::Type t, const std::vector<int> &shape,
                                 std::vector<float> &vals) {
    round_to(t, vals);
    loom::RawBuffer b(t, shape);
    for (size_t n = 0; n < vals.size(); n++) {
        if (t == loom::Float(32)) {
            reinterpret_cast<float *>(b.host())[n] = vals[n];
        } else if (t == loom::Float(16)) {
            reinterpret_cast<loom::float16_t *>(b.host())[n] = loom::float16_t(vals[n]);
        } else {
            reinterpret_cast<loom::bfloat16_t *>(b.host())[n] = loom::bfloat16_t(vals[n]);
        }
    }
    return b;
}

inline std::vector<double> to_doubles(const loom::RawBuffer &b) {
    std::vector<double> r(size_t(b.number_of_elements()));
    for (size_t n = 0; n < r.size(); n++) {
        if (b.type() == loom::Float(32)) r[n] = reinterpret_cast<const float *>(b.host())[n];
        else if (b.type() == loom::Float(16))
            r[n] = static_cast<float>(reinterpret_cast<const loom::float16_t *>(b.host())[n]);
        else r[n] = static_cast<float>(reinterpret_cast<const loom::bfloat16_t *>(b.host())[n]);
    }
    return r;
}

/** The allowed |a - b| for output type t and reference value b: 1e-5
 * (1 + |b|) for the fp32 computation, plus one ulp of the output type for
 * fp16 (2^-10 |b|) and bf16 (2^-7 |b|). */
inline double tolerance(loom::Type t, double b) {
    double accumulation = 1e-5 * (1 + std::abs(b));
    if (t == loom::Float(32)) return accumulation;
    double ulp = t == loom::Float(16) ? std::ldexp(1.0, -10) : std::ldexp(1.0, -7);
    return ulp * std::abs(b) + accumulation;
}

/** max |got - want| / (1 + |want|) over the elements of `got` (which may be
 * shorter than `want`); NaN if any is NaN, infinity if the sizes do not fit. */
inline double max_rel_error(const std::vector<double> &got, const std::vector<double> &want) {
    if (got.empty() || got.size() > want.size()) return std::numeric_limits<double>::infinity();
    double worst = 0;
    for (size_t n = 0; n < got.size(); n++) {
        double e = std::abs(got[n] - want[n]) / (1 + std::abs(want[n]));
        if (!(e <= worst)) {  // NaN-sticky
            worst = e;
            if (std::isnan(e)) break;
        }
    }
    return worst;
}

/** Every element of `got` within tolerance of the same element of `want`
 * (NaN fails); `got` may be shorter (the interpreter's batch 0). */
inline ::testing::AssertionResult close_to(const std::vector<double> &got,
                                           const std::vector<double> &want, loom::Type t,
                                           const VariantShape &sh) {
    if (got.empty() || got.size() > want.size()) {
        return ::testing::AssertionFailure()
               << "size mismatch: " << got.size() << " values for " << want.size();
    }
    double worst = 0;
    size_t at = 0;
    for (size_t n = 0; n < got.size(); n++) {
        double ratio = std::abs(got[n] - want[n]) / tolerance(t, want[n]);
        if (!(ratio <= worst)) {  // NaN-sticky
            worst = ratio;
            at = n;
            if (std::isnan(ratio)) break;
        }
    }
    if (worst <= 1) return ::testing::AssertionSuccess();
    const size_t D = size_t(sh.head_dim);
    return ::testing::AssertionFailure()
           << "element " << at << " (row " << at / D << ", d " << at % D << "): got " << got[at]
           << ", expected " << want[at] << ", error " << std::abs(got[at] - want[at])
           << " > tolerance " << tolerance(t, want[at]);
}

/** How the inputs are drawn. */
enum class Values {
    Uniform,   // q, k, v uniform in [-1, 1]
    Integers,  // q, k integers in [-32, 32] (exact in every input type, and so
               // are their fp32 dot products); v uniform in [-1, 1]
};

/** The inputs of one run (rounded to the input type) and their float64
 * reference output. */
struct Inputs {
    loom::Type type;
    VariantShape shape;
    float scale = 1;
    int window = 0;
    std::vector<float> q, k, v;
    std::vector<double> ref;
    double max_abs_score = 0;  // of the raw scores (scale * q.k)
};

inline Inputs make_inputs(Variant var, loom::Type t, const VariantShape &sh, float scale,
                          int window, Values values, unsigned seed) {
    Inputs in;
    in.type = t;
    in.shape = sh;
    in.scale = scale;
    in.window = window;
    std::mt19937 rng(seed);
    auto draw = [&](std::vector<float> &x, size_t n, bool integer) {
        x.resize(n);
        std::uniform_real_distribution<float> u(-1, 1);
        std::uniform_int_distribution<int> z(-32, 32);
        for (float &e : x) e = integer ? float(z(rng)) : u(rng);
    };
    const bool ints = values == Values::Integers;
    draw(in.q, size_t(sh.batch) * sh.q_heads * sh.seq_q * sh.head_dim, ints);
    draw(in.k, size_t(sh.batch) * sh.kv_heads * sh.seq_k * sh.head_dim, ints);
    draw(in.v, size_t(sh.batch) * sh.kv_heads * sh.seq_k * sh.head_dim, false);
    // What Loom reads: the reference sees the same rounded values.
    round_to(t, in.q);
    round_to(t, in.k);
    round_to(t, in.v);

    in.ref.resize(in.q.size());
    attention::variant_reference(var, in.q.data(), in.k.data(), in.v.data(), scale, window,
                                 in.ref.data(), sh);
    // The largest |raw score| (before any variant's modification).
    const size_t D = size_t(sh.head_dim);
    const int group = sh.q_heads / sh.kv_heads;
    for (int b = 0; b < sh.batch; b++)
        for (int h = 0; h < sh.q_heads; h++)
            for (int i = 0; i < sh.seq_q; i++)
                for (int j = 0; j < sh.seq_k; j++) {
                    double acc = 0;
                    const size_t qo = ((size_t(b) * sh.q_heads + h) * sh.seq_q + i) * D;
                    const size_t ko = ((size_t(b) * sh.kv_heads + h / group) * sh.seq_k + j) * D;
                    for (size_t e = 0; e < D; e++) acc += double(in.q[qo + e]) * in.k[ko + e];
                    in.max_abs_score = std::max(in.max_abs_score, std::abs(acc * scale));
                }
    return in;
}

/** Binds `in` to the parameters of `app` (whose input type must be in.type). */
inline void bind(AttentionVariant &app, Inputs &in) {
    const VariantShape &sh = in.shape;
    app.q.set(to_buffer(in.type, {sh.batch, sh.q_heads, sh.seq_q, sh.head_dim}, in.q));
    app.k.set(to_buffer(in.type, {sh.batch, sh.kv_heads, sh.seq_k, sh.head_dim}, in.k));
    app.v.set(to_buffer(in.type, {sh.batch, sh.kv_heads, sh.seq_k, sh.head_dim}, in.v));
    app.scale.set(in.scale);
    app.window.set(in.window);
}

/** The output of `compiled` on the inputs bound to its parameters. The
 * output buffer starts as NaN, so that an element the pipeline does not
 * write (e.g. a fully masked row expected to be 0) always fails. */
inline std::vector<double> realize(const loom::CompiledPipeline &compiled, const Inputs &in) {
    const VariantShape &sh = in.shape;
    std::vector<float> nans(size_t(sh.batch) * sh.q_heads * sh.seq_q * sh.head_dim,
                            std::numeric_limits<float>::quiet_NaN());
    loom::RawBuffer out = to_buffer(in.type, {sh.batch, sh.q_heads, sh.seq_q, sh.head_dim}, nans);
    compiled.realize({out});
    return to_doubles(out);
}

/** The reference interpreter's output for batch 0 and its first `heads`
 * heads (all when 0), all rows: a prefix of the output, as the interpreter
 * is slow. */
inline std::vector<double> interpret_batch0(const AttentionVariant &app, const Inputs &in,
                                            int heads = 0) {
    const VariantShape &sh = in.shape;
    if (heads <= 0 || heads > sh.q_heads) heads = sh.q_heads;
    return to_doubles(loom::interpret(app.out, {1, heads, sh.seq_q, sh.head_dim}));
}

inline std::string describe(Variant var, loom::Type t, const VariantShape &sh, float scale,
                            int window, unsigned seed) {
    std::ostringstream os;
    os << attention::variant_name(var) << " " << type_name(t) << " [B " << sh.batch << ", Hq "
       << sh.q_heads << ", Hkv " << sh.kv_heads << ", Lq " << sh.seq_q << ", Lk " << sh.seq_k
       << ", D " << sh.head_dim << "] scale " << scale << " window " << window
       << "; replay with LOOM_TEST_SEED=" << seed;
    return os.str();
}

/** 1 / sqrt(head_dim), or 16 times that for the soft cap (scores of a few
 * tens, so that the cap of 50 bends them noticeably). */
inline float default_scale(Variant var, int head_dim) {
    float s = 1.0f / std::sqrt(float(head_dim));
    return attention::parts_of(var).soft_cap ? 16 * s : s;
}

/** The largest |x| of `values` (to check that an output is not trivially 0). */
inline double max_abs(const std::vector<double> &values) {
    double norm = 0;
    for (double x : values) norm = std::max(norm, std::abs(x));
    return norm;
}

}  // namespace attention_test
