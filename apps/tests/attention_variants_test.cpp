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

#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "attention_test_util.h"

using namespace loom;
using namespace attention_test;

namespace {

VariantShape make_shape(Variant var, Mode mode, int kv_heads = 2) {
    VariantShape sh;
    sh.batch = 2;
    sh.q_heads = 8;
    sh.kv_heads = attention::parts_of(var).grouped ? kv_heads : sh.q_heads;
    sh.head_dim = 24;
    sh.seq_k = mode == Mode::Prefill ? 37 : 53;
    sh.seq_q = mode == Mode::Prefill ? 37 : 1;
    return sh;
}

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
struct RunResult : Inputs {
    std::vector<double> compiled, interpreted;
};

RunResult run(Variant var, Type t, const VariantShape &sh, float scale, int window, Values values,
              unsigned seed, bool interpret_too) {
    RunResult r;
    static_cast<Inputs &>(r) = make_inputs(var, t, sh, scale, window, values, seed);
    Kernel &kn = kernel(var, t);
    bind(*kn.app, r);
    r.compiled = realize(kn.compiled, r);
    if (interpret_too) r.interpreted = interpret_batch0(*kn.app, r);
    return r;
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
INSTANTIATE_TEST_SUITE_P(Composite, AttentionVariants,
                         ::testing::Combine(::testing::ValuesIn(attention::composite_variants),
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
