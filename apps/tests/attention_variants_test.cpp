// The attention variants of apps/attention/variants.h, each evaluated by the
// reference interpreter and compiled with its materialized schedule, against
// the float64 reference of variants_reference.h, in float32, float16 and
// bfloat16, for prefill (Lq == Lk) and decode (Lq == 1), on sizes that are
// multiples of neither the query block (16) nor the vector width (8).
//
// Tolerances, with a the Loom output and b the float64 reference (computed
// from the same inputs, already rounded to the input type):
// - float32 output: |a - b| / (1 + |b|) <= 1e-5 (relative for large values,
//   absolute near 0). The fp32 score and accumulation error over <= 53 keys
//   and 24 head dimensions, plus ~1e-7 from the inline exp, measure ~1e-7
//   (~1e-6 with the soft cap's tanh), so 1e-5 leaves room for a fused
//   schedule's rescaling while still catching any wrong mask, bias or head
//   (each such mutation of variants.h was checked to fail).
// - Large scores (~1e4) use integer q and k and a power-of-two scale, so the
//   fp32 scores are exact and the same tolerances hold.
// - float16 / bfloat16 output: the result is rounded once to the output
//   type, which costs at most half an ulp, 2^-11 |b| (fp16) or 2^-8 |b|
//   (bf16), on top of the fp32 error. We allow one ulp, 2^-10 |b| or
//   2^-7 |b|, plus 1e-5 (1 + |b|) for the fp32 computation.
// - Fully masked rows must be exactly 0, and exact cases (a window of one
//   key) exactly the value read.
//
// Inputs are random with a fresh std::random_device seed, printed with every
// failure; set LOOM_TEST_SEED to replay one. Each variant and type is
// compiled once per process (about 0.25 s each); the interpreter computes
// batch 0 only, which keeps the file at a few seconds.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "../attention/variants.h"

using namespace loom;

namespace attention {
// Test parameters print as their names.
void PrintTo(Variant v, std::ostream *os) { *os << variant_name(v); }
}  // namespace attention

using attention::AttentionVariant;
using attention::Variant;
using attention::VariantShape;

namespace {

enum class Mode { Prefill, Decode };
void PrintTo(Mode m, std::ostream *os) { *os << (m == Mode::Prefill ? "prefill" : "decode"); }

unsigned fresh_seed() {
    if (const char *s = std::getenv("LOOM_TEST_SEED"))
        return unsigned(std::strtoul(s, nullptr, 10));
    return std::random_device{}();
}

std::string type_name(Type t) {
    if (t == Float(32)) return "fp32";
    if (t == Float(16)) return "fp16";
    return "bf16";
}

/** A buffer of type t holding `vals`, which are rounded to t in place so that
 * the reference sees exactly what Loom reads. */
RawBuffer to_buffer(Type t, const std::vector<int> &shape, std::vector<float> &vals) {
    RawBuffer b(t, shape);
    for (size_t n = 0; n < vals.size(); n++) {
        if (t == Float(32)) {
            reinterpret_cast<float *>(b.host())[n] = vals[n];
        } else if (t == Float(16)) {
            float16_t x(vals[n]);
            reinterpret_cast<float16_t *>(b.host())[n] = x;
            vals[n] = static_cast<float>(x);
        } else {
            bfloat16_t x(vals[n]);
            reinterpret_cast<bfloat16_t *>(b.host())[n] = x;
            vals[n] = static_cast<float>(x);
        }
    }
    return b;
}

std::vector<double> to_doubles(const RawBuffer &b) {
    std::vector<double> r(size_t(b.number_of_elements()));
    for (size_t n = 0; n < r.size(); n++) {
        if (b.type() == Float(32)) r[n] = reinterpret_cast<const float *>(b.host())[n];
        else if (b.type() == Float(16))
            r[n] = static_cast<float>(reinterpret_cast<const float16_t *>(b.host())[n]);
        else r[n] = static_cast<float>(reinterpret_cast<const bfloat16_t *>(b.host())[n]);
    }
    return r;
}

/** The allowed |a - b| for output type t and reference value b. */
double tolerance(Type t, double b) {
    double accumulation = 1e-5 * (1 + std::abs(b));
    if (t == Float(32)) return accumulation;
    double ulp = t == Float(16) ? std::ldexp(1.0, -10) : std::ldexp(1.0, -7);
    return ulp * std::abs(b) + accumulation;
}

/** Every element of `got` within tolerance of the same element of `want`
 * (NaN fails); `got` may be shorter (the interpreter's batch 0). */
::testing::AssertionResult close_to(const std::vector<double> &got, const std::vector<double> &want,
                                    Type t, const VariantShape &sh) {
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
           << ", float64 reference " << want[at] << ", error " << std::abs(got[at] - want[at])
           << " > tolerance " << tolerance(t, want[at]);
}

VariantShape make_shape(Variant var, Mode mode, int kv_heads = 2) {
    VariantShape sh;
    sh.batch = 2;
    sh.q_heads = 8;
    sh.kv_heads = var == Variant::GroupedQuery ? kv_heads : sh.q_heads;
    sh.head_dim = 24;
    sh.seq_k = mode == Mode::Prefill ? 37 : 53;
    sh.seq_q = mode == Mode::Prefill ? 37 : 1;
    return sh;
}

/** How the inputs are drawn. */
enum class Values {
    Uniform,   // q, k, v uniform in [-1, 1]
    Integers,  // q, k integers in [-32, 32] (exact in every input type, and so
               // are their fp32 dot products); v uniform in [-1, 1]
};

/** One variant compiled for one input type, kept for the whole test
 * program: compiling is what costs, the sizes are run-time values. */
struct Kernel {
    std::unique_ptr<AttentionVariant> app;
    CompiledPipeline compiled;
};

Kernel &kernel(Variant var, Type t) {
    static std::map<std::pair<int, std::string>, Kernel> cache;
    auto key = std::make_pair(int(var), type_name(t));
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
    Kernel k;
    k.app = std::make_unique<AttentionVariant>(var, t);
    k.compiled = Pipeline(k.app->out).compile(k.app->materialized_schedule());
    return cache.emplace(key, std::move(k)).first->second;
}

/** One run: inputs, the float64 reference, the compiled output and (when
 * asked) the interpreter's. The interpreter computes batch 0 only (all heads
 * and rows), the first 1 / batch of the output, to keep the test fast. */
struct RunResult {
    VariantShape shape;
    std::vector<float> q, k, v;
    std::vector<double> ref, compiled, interpreted;
    double max_abs_score = 0;  // of the raw scores (scale * q.k), from the float inputs
};

RunResult run(Variant var, Type t, const VariantShape &sh, float scale, int window, Values values,
              unsigned seed, bool interpret_too) {
    RunResult r;
    r.shape = sh;
    std::mt19937 rng(seed);
    const std::vector<int> q_shape = {sh.batch, sh.q_heads, sh.seq_q, sh.head_dim},
                           kv_shape = {sh.batch, sh.kv_heads, sh.seq_k, sh.head_dim},
                           out_shape = q_shape;
    auto draw = [&](std::vector<float> &x, size_t n, bool integer) {
        x.resize(n);
        std::uniform_real_distribution<float> u(-1, 1);
        std::uniform_int_distribution<int> z(-32, 32);
        for (float &e : x) e = integer ? float(z(rng)) : u(rng);
    };
    const bool ints = values == Values::Integers;
    draw(r.q, size_t(sh.batch) * sh.q_heads * sh.seq_q * sh.head_dim, ints);
    draw(r.k, size_t(sh.batch) * sh.kv_heads * sh.seq_k * sh.head_dim, ints);
    draw(r.v, size_t(sh.batch) * sh.kv_heads * sh.seq_k * sh.head_dim, false);

    Kernel &kn = kernel(var, t);
    AttentionVariant &app = *kn.app;
    app.q.set(to_buffer(t, q_shape, r.q));
    app.k.set(to_buffer(t, kv_shape, r.k));
    app.v.set(to_buffer(t, kv_shape, r.v));
    app.scale.set(scale);
    app.window.set(window);

    r.ref.resize(r.q.size());
    attention::variant_reference(var, r.q.data(), r.k.data(), r.v.data(), scale, window,
                                 r.ref.data(), sh);
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
                    for (size_t e = 0; e < D; e++) acc += double(r.q[qo + e]) * r.k[ko + e];
                    r.max_abs_score = std::max(r.max_abs_score, std::abs(acc * scale));
                }

    RawBuffer out(t, out_shape);
    kn.compiled.realize({out});
    r.compiled = to_doubles(out);
    if (interpret_too) {
        r.interpreted = to_doubles(interpret(app.out, {1, sh.q_heads, sh.seq_q, sh.head_dim}));
    }
    return r;
}

std::string describe(Variant var, Type t, const VariantShape &sh, float scale, int window,
                     unsigned seed) {
    std::ostringstream os;
    os << attention::variant_name(var) << " " << type_name(t) << " [B " << sh.batch << ", Hq "
       << sh.q_heads << ", Hkv " << sh.kv_heads << ", Lq " << sh.seq_q << ", Lk " << sh.seq_k
       << ", D " << sh.head_dim << "] scale " << scale << " window " << window
       << "; replay with LOOM_TEST_SEED=" << seed;
    return os.str();
}

const Type all_types[] = {Float(32), Float(16), BFloat(16)};

float default_scale(Variant var, int head_dim) {
    float s = 1.0f / std::sqrt(float(head_dim));
    // Scores of a few tens, so that the cap of 50 bends them noticeably.
    return var == Variant::SoftCap ? 16 * s : s;
}

const int default_window = 11;  // smaller than both Lk (37, 53): early keys masked

// ---------------------------------------------------------------- the matrix

using MatrixParam = std::tuple<Variant, int /*type index*/, Mode>;

class AttentionVariants : public ::testing::TestWithParam<MatrixParam> {};

TEST_P(AttentionVariants, MatchReference) {
    const auto [var, type_index, mode] = GetParam();
    const Type t = all_types[type_index];
    const VariantShape sh = make_shape(var, mode);
    const float scale = default_scale(var, sh.head_dim);
    const unsigned seed = fresh_seed();
    SCOPED_TRACE(describe(var, t, sh, scale, default_window, seed));
    RunResult r = run(var, t, sh, scale, default_window, Values::Uniform, seed, true);
    EXPECT_TRUE(close_to(r.compiled, r.ref, t, sh)) << "compiled (materialized schedule)";
    EXPECT_TRUE(close_to(r.interpreted, r.ref, t, sh)) << "interpreter";
    // The outputs are not trivially 0: a masked-out kernel would fail here.
    double norm = 0;
    for (double x : r.ref) norm = std::max(norm, std::abs(x));
    EXPECT_GT(norm, 0.05);
}

std::string matrix_name(const ::testing::TestParamInfo<MatrixParam> &info) {
    const auto [var, type_index, mode] = info.param;
    return std::string(attention::variant_name(var)) + "_" + type_name(all_types[type_index]) +
           (mode == Mode::Prefill ? "_prefill" : "_decode");
}

INSTANTIATE_TEST_SUITE_P(All, AttentionVariants,
                         ::testing::Combine(::testing::ValuesIn(attention::all_variants),
                                            ::testing::Values(0, 1, 2),
                                            ::testing::Values(Mode::Prefill, Mode::Decode)),
                         matrix_name);

// ------------------------------------------------------ numerical stress cases

// Scores of magnitude up to ~1e4: integer q and k with scale 4, so that the
// fp32 scores are exact and the fp32 tolerance still holds. A softmax that
// does not subtract the maximum overflows to inf/NaN here.
TEST(AttentionVariantsStress, LargeScores) {
    for (Variant var : attention::all_variants) {
        for (Type t : all_types) {
            for (Mode mode : {Mode::Prefill, Mode::Decode}) {
                const VariantShape sh = make_shape(var, mode);
                const float scale = 4.0f;
                const unsigned seed = fresh_seed();
                SCOPED_TRACE(describe(var, t, sh, scale, default_window, seed));
                // The interpreter on decode only (prefill: see the matrix).
                const bool interp = mode == Mode::Decode;
                RunResult r =
                    run(var, t, sh, scale, default_window, Values::Integers, seed, interp);
                EXPECT_GT(r.max_abs_score, 5e3);
                EXPECT_TRUE(close_to(r.compiled, r.ref, t, sh)) << "compiled";
                if (interp) EXPECT_TRUE(close_to(r.interpreted, r.ref, t, sh)) << "interpreter";
            }
        }
    }
}

// A window of one key: each query sees only itself, so p = 1, l = 1 and the
// output is exactly v at the query's position (in every input type, as v is
// read and written in the same type). The keys before it, which include
// whole vector-width tiles for the later rows, are all masked.
TEST(AttentionVariantsStress, WindowOfOne) {
    for (Type t : all_types) {
        for (Mode mode : {Mode::Prefill, Mode::Decode}) {
            const VariantShape sh = make_shape(Variant::SlidingWindow, mode);
            const unsigned seed = fresh_seed();
            SCOPED_TRACE(describe(Variant::SlidingWindow, t, sh, 1.0f, 1, seed));
            RunResult r =
                run(Variant::SlidingWindow, t, sh, 1.0f, 1, Values::Uniform, seed, t == Float(32));
            const size_t D = size_t(sh.head_dim);
            int bad = 0;
            for (int bh = 0; bh < sh.batch * sh.q_heads; bh++) {
                for (int i = 0; i < sh.seq_q; i++) {
                    const int pos = i + sh.seq_k - sh.seq_q;
                    for (size_t d = 0; d < D; d++) {
                        const size_t o = (size_t(bh) * sh.seq_q + i) * D + d;
                        const double want = r.v[(size_t(bh) * sh.seq_k + pos) * D + d];
                        if (r.compiled[o] != want) bad++;
                        if (o < r.interpreted.size() && r.interpreted[o] != want) bad++;
                        EXPECT_EQ(r.ref[o], want);
                    }
                }
            }
            EXPECT_EQ(bad, 0) << "outputs that differ from v at the query's own position";
        }
    }
}

// A window of 0 masks every key of every row: the output is exactly 0
// everywhere (the definition of a fully masked row), with large scores too.
TEST(AttentionVariantsStress, FullyMaskedWindowZero) {
    for (Type t : all_types) {
        for (Mode mode : {Mode::Prefill, Mode::Decode}) {
            const VariantShape sh = make_shape(Variant::SlidingWindow, mode);
            const unsigned seed = fresh_seed();
            SCOPED_TRACE(describe(Variant::SlidingWindow, t, sh, 4.0f, 0, seed));
            RunResult r =
                run(Variant::SlidingWindow, t, sh, 4.0f, 0, Values::Integers, seed, t == Float(32));
            int nonzero = 0;
            for (size_t n = 0; n < r.ref.size(); n++) {
                if (r.compiled[n] != 0) nonzero++;
                if (n < r.interpreted.size() && r.interpreted[n] != 0) nonzero++;
                if (r.ref[n] != 0) nonzero++;
            }
            EXPECT_EQ(nonzero, 0) << "outputs of fully masked rows that are not exactly 0";
        }
    }
}

// More queries than keys (Lq = 37 > Lk = 30): query i has position
// i + Lk - Lq, so under a causal mask the first Lq - Lk rows see no key at
// all and must be exactly 0, while the others match the reference.
TEST(AttentionVariantsStress, SomeRowsFullyMasked) {
    for (Variant var : attention::all_variants) {
        if (var == Variant::Global) continue;  // nothing is masked
        for (Type t : all_types) {
            VariantShape sh = make_shape(var, Mode::Prefill);
            sh.seq_k = 30;
            const float scale = default_scale(var, sh.head_dim);
            const unsigned seed = fresh_seed();
            SCOPED_TRACE(describe(var, t, sh, scale, default_window, seed));
            const bool interp = t == Float(32);
            RunResult r = run(var, t, sh, scale, default_window, Values::Uniform, seed, interp);
            const size_t D = size_t(sh.head_dim);
            const int masked_rows = sh.seq_q - sh.seq_k;
            int nonzero = 0;
            for (int bh = 0; bh < sh.batch * sh.q_heads; bh++) {
                for (int i = 0; i < masked_rows; i++) {
                    for (size_t d = 0; d < D; d++) {
                        const size_t o = (size_t(bh) * sh.seq_q + i) * D + d;
                        if (r.compiled[o] != 0) nonzero++;
                        if (o < r.interpreted.size() && r.interpreted[o] != 0) nonzero++;
                    }
                }
            }
            EXPECT_EQ(nonzero, 0) << "outputs of the fully masked rows that are not exactly 0";
            EXPECT_TRUE(close_to(r.compiled, r.ref, t, sh)) << "compiled";
            if (interp) EXPECT_TRUE(close_to(r.interpreted, r.ref, t, sh)) << "interpreter";
        }
    }
}

// Multi-query attention: one key/value head for all 8 query heads
// (Hq = 8 * Hkv).
TEST(AttentionVariantsStress, MultiQuery) {
    for (Type t : all_types) {
        for (Mode mode : {Mode::Prefill, Mode::Decode}) {
            const VariantShape sh = make_shape(Variant::GroupedQuery, mode, 1);
            const float scale = default_scale(Variant::GroupedQuery, sh.head_dim);
            const unsigned seed = fresh_seed();
            SCOPED_TRACE(describe(Variant::GroupedQuery, t, sh, scale, 0, seed));
            const bool interp = mode == Mode::Decode;
            RunResult r =
                run(Variant::GroupedQuery, t, sh, scale, 0, Values::Uniform, seed, interp);
            EXPECT_TRUE(close_to(r.compiled, r.ref, t, sh)) << "compiled";
            if (interp) EXPECT_TRUE(close_to(r.interpreted, r.ref, t, sh)) << "interpreter";
        }
    }
}

// Decode's only query is at the last position, so a causal mask hides
// nothing: causal and global attention agree on the same inputs, and so does
// a sliding window that covers every key.
TEST(AttentionVariantsStress, DecodeSeesEveryKey) {
    for (Type t : all_types) {
        const VariantShape sh = make_shape(Variant::Causal, Mode::Decode);
        const float scale = default_scale(Variant::Causal, sh.head_dim);
        const unsigned seed = fresh_seed();
        SCOPED_TRACE(describe(Variant::Causal, t, sh, scale, sh.seq_k, seed));
        // The same seed and shape give the same inputs.
        RunResult global = run(Variant::Global, t, sh, scale, 0, Values::Uniform, seed, false);
        RunResult causal = run(Variant::Causal, t, sh, scale, 0, Values::Uniform, seed, false);
        RunResult window =
            run(Variant::SlidingWindow, t, sh, scale, sh.seq_k, Values::Uniform, seed, false);
        ASSERT_EQ(global.q, causal.q);
        EXPECT_EQ(global.ref, causal.ref);
        EXPECT_EQ(global.ref, window.ref);
        EXPECT_TRUE(close_to(causal.compiled, global.ref, t, sh)) << "compiled causal";
        EXPECT_TRUE(close_to(window.compiled, global.ref, t, sh)) << "compiled sliding window";
    }
}

}  // namespace
