// The attention variants of apps/attention/variants.h scheduled with the
// fused templates of schedules/flash_attention.h:
//
// - "rolling": flash_attention (rolling_update(o, r)): per task of
//   query_block queries, one pass over the keys in tiles of key_tile, the
//   running max, sum and weighted sum repaired per tile;
// - "splitkK": flash_decoding (split_k(o, r, K)) with K chunks of the keys
//   computed in parallel, each one rolling pass in tiles of key_tile, then
//   combined with the derived repairs; K in {1, 2, 7, 16};
// - "tiles": flash_attention with the head dimension fixed, one tile program
//   per tile of queries rolling the chain over key tiles (register-blocked
//   dots, vector reductions of the rows), reading the keys transposed at
//   root; "tiles_unstaged" (fp32 matrix only) transposes each key tile in
//   the program instead;
// - "tiles_splitk7": flash_decoding with the head dimension fixed, split_k
//   over tile programs: 7 chunks of the key tiles (some empty), each chunk
//   and tile of queries one program storing its partials, then the combine.
//
// Each compiled output is compared with BOTH the float64 reference of
// variants_reference.h and the reference interpreter (loom::interpret, which
// evaluates the unscheduled algorithm; for speed on batch 0 and its first two
// heads, four for grouped-query attention), for prefill (Lq == Lk) and decode
// (Lq == 1). The sizes are multiples of none of the split factors: Lk = 53
// (prefill) and 131 (decode), query_block 16, key_tile 16 (rolling) and 12
// (split_k), vector 8 and head_dim 20; so there are ragged query blocks, key
// tiles, chunks and vectors, chunks shorter than a key tile, and empty
// chunks (K = 16 over 53 keys: 14 chunks of at most 4 keys, then 2 empty).
//
// Bounds, with a the Loom output and b the reference value (the float64
// reference is computed from the same inputs, already rounded to the input
// type):
// - float32: |a - b| / (1 + |b|) <= 1e-5, relative for large values and
//   absolute near 0. The fp32 scores and accumulations over <= 131 keys and
//   20 head dimensions, the inline exp and the repairs (one multiply by
//   exp(m_old - m_new) per tile or chunk) measure ~1e-7 (~1e-6 with the soft
//   cap's tanh), so 1e-5 leaves a wide margin while catching any wrong
//   repair, mask, bias, head or tile edge.
// - float16 / bfloat16 inputs and outputs, fp32 accumulation: as in
//   attention_variants_test.cpp, one ulp of the output type (2^-10 |b| or
//   2^-7 |b|; rounding costs at most half of it) plus 1e-5 (1 + |b|).
// - Large scores (~1e4), next to -inf masks: integer q and k with scale 4,
//   so that the fp32 scores are exact (ALiBi's too: 4 heads make its slopes
//   powers of two) and the same bounds hold. Without the running max the
//   exps overflow to inf / NaN.
// - Fully masked rows (a sliding window of 0; the first Lq - Lk rows when
//   Lq > Lk under a causal mask) must be exactly 0 (variants.h defines
//   them so), and a window of one key exactly v at the query's own position:
//   then every key tile (and every split_k chunk) before the one holding
//   that key is fully masked, with a running max of -inf, which the fused
//   code must not turn into NaN.
// The worst |a - b| / (1 + |b|) of each configuration is printed
// ("[  fused   ]" lines). Each assertion was checked to fail under a
// mutation: a wrong scale for the float64 reference, for the compiled
// pipeline or for the interpreter alone, a window off by one, a causal
// kernel compiled as global, a single output element off by 3e-5, small v,
// small scores, and a pipeline that writes nothing (outputs start as NaN).
//
// Inputs are random with a fresh std::random_device seed, printed with every
// failure; set LOOM_TEST_SEED to replay one. Every test compiles its own
// pipeline (about 0.35 s with rolling_update, 0.6 s with split_k) and shares
// it only between its own runs; the file takes about 50 s of CPU.
#include <gtest/gtest.h>

#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "../../schedules/flash_attention.h"
#include "attention_test_util.h"

using namespace loom;
using namespace attention_test;

namespace {

/** How a test schedules the chain: 0 is rolling_update (flash_attention),
 * K > 0 split_k with K chunks (flash_decoding). */
using Fusion = int;
const Fusion rolling = 0, tiles = -1, tiles_unstaged = -2, tiles_split = -3;
const int tiles_split_chunks = 7;

const int query_block = 16, vector_width = 8;
const int rolling_key_tile = 16, split_key_tile = 12;

std::string fusion_name(Fusion f) {
    return f == rolling          ? "rolling"
           : f == tiles          ? "tiles"
           : f == tiles_unstaged ? "tiles_unstaged"
           : f == tiles_split    ? "tiles_splitk" + std::to_string(tiles_split_chunks)
                                 : "splitk" + std::to_string(f);
}

VariantShape make_shape(Variant var, Mode mode) {
    VariantShape sh;
    sh.batch = 2;
    // 4 heads: the ALiBi slopes 2^(-8 (h + 1) / 4) are powers of two, so
    // that the biased integer scores of LargeScores stay exact in fp32 (with
    // 6 heads they are not, and fp32 ALiBi itself, materialized or fused,
    // is off by ~3e-5 at scores of 1e4). Grouped-query: 3 query heads per
    // key/value head.
    const bool grouped = attention::parts_of(var).grouped;
    sh.q_heads = grouped ? 6 : 4;
    sh.kv_heads = grouped ? 2 : sh.q_heads;
    sh.head_dim = 20;
    sh.seq_k = mode == Mode::Prefill ? 53 : 131;
    sh.seq_q = mode == Mode::Prefill ? 53 : 1;
    return sh;
}

// Longer than a key tile (16 or 12), so that a window spans two or three
// tiles, and much shorter than Lk, so that the early key tiles (and split_k
// chunks) of the later rows are fully masked.
const int default_window = 19;

/** One variant compiled for one input type with one fused schedule. */
struct Kernel {
    std::unique_ptr<AttentionVariant> app;
    CompiledPipeline compiled;
};

Kernel compile_fused(Variant var, Type t, Fusion fusion) {
    Kernel k;
    k.app = std::make_unique<AttentionVariant>(var, t);
    AttentionVariant &a = *k.app;
    if (fusion < 0) a.fix_head_dim(make_shape(var, Mode::Prefill).head_dim);
    const schedules::AttentionChain chain = a.chain();
    Schedule sch;
    if (fusion == tiles_split) {
        schedules::FlashDecodingOptions opt;
        opt.chunks = tiles_split_chunks;
        opt.key_tile = rolling_key_tile;
        opt.head_dim = make_shape(var, Mode::Prefill).head_dim;
        opt.tile_queries = query_block;
        schedules::flash_decoding(sch, chain, opt);
    } else if (fusion < 0) {
        schedules::FlashAttentionOptions opt;
        opt.stage_keys = fusion == tiles;
        opt.head_dim = make_shape(var, Mode::Prefill).head_dim;
        opt.tile_queries = query_block;
        opt.key_tile = rolling_key_tile;
        schedules::flash_attention(sch, chain, opt);
    } else if (fusion == rolling) {
        schedules::flash_attention(
            sch, chain,
            schedules::FlashAttentionOptions{query_block, rolling_key_tile, vector_width});
    } else {
        schedules::flash_decoding(
            sch, chain, schedules::FlashDecodingOptions{fusion, split_key_tile, vector_width});
    }
    k.compiled = Pipeline(k.app->out).compile(sch);
    return k;
}

/** One run of a compiled kernel: its output, and the interpreter's on
 * batch 0 and its first two heads (four for grouped-query attention: two
 * key/value heads) with the same prefix of the compiled output. */
struct Outputs {
    std::vector<double> compiled, interpreted, compiled_prefix;
};

Outputs run(Kernel &kn, Inputs &in) {
    Outputs r;
    bind(*kn.app, in);
    r.compiled = realize(kn.compiled, in);
    const int heads = attention::parts_of(kn.app->variant).grouped ? 4 : 2;
    r.interpreted = interpret_batch0(*kn.app, in, heads);
    r.compiled_prefix.assign(r.compiled.begin(), r.compiled.begin() + r.interpreted.size());
    return r;
}

/** Prints the worst errors of one configuration. */
void report(const std::string &config, const Outputs &r, const Inputs &in) {
    std::printf("[  fused   ] %-42s max |a-b|/(1+|b|) vs float64 %.2e, vs interpreter %.2e\n",
                config.c_str(), max_rel_error(r.compiled, in.ref),
                max_rel_error(r.compiled_prefix, r.interpreted));
    std::fflush(stdout);
}

/** Compiles, or fails the test with the compiler's message. */
#define COMPILE_OR_FAIL(kernel, var, t, fusion)                                              \
    Kernel kernel;                                                                           \
    try {                                                                                    \
        kernel = compile_fused(var, t, fusion);                                              \
    } catch (const std::exception &e) {                                                      \
        FAIL() << "compiling " << attention::variant_name(var) << " " << type_name(t) << " " \
               << fusion_name(fusion) << " threw: " << e.what();                             \
    }

// ---------------------------------------------------------------- the matrix

/** Checks one run of `kn` on fresh uniform inputs of `mode`'s shape against
 * the float64 reference and the interpreter, and prints the worst errors. */
void check_uniform(Kernel &kn, Variant var, Type t, Fusion fusion, Mode mode,
                   const std::string &config) {
    const VariantShape sh = make_shape(var, mode);
    const float scale = default_scale(var, sh.head_dim);
    const unsigned seed = fresh_seed();
    SCOPED_TRACE(describe(var, t, sh, scale, default_window, seed) + ", " + fusion_name(fusion));
    Inputs in = make_inputs(var, t, sh, scale, default_window, Values::Uniform, seed);
    Outputs r = run(kn, in);
    report(config, r, in);
    EXPECT_TRUE(close_to(r.compiled, in.ref, t, sh)) << "compiled vs the float64 reference";
    EXPECT_TRUE(close_to(r.compiled_prefix, r.interpreted, t, sh)) << "compiled vs the interpreter";
    EXPECT_TRUE(close_to(r.interpreted, in.ref, t, sh)) << "interpreter vs the float64 reference";
    // The outputs are not trivially 0: a masked-out kernel would fail here.
    EXPECT_GT(max_abs(in.ref), 0.05);
}

// fp32: every variant, schedule and mode, each its own test (and compile).
using Fp32Param = std::tuple<Variant, Fusion, Mode>;

std::string fp32_name(const ::testing::TestParamInfo<Fp32Param> &info) {
    const auto [var, fusion, mode] = info.param;
    return std::string(attention::variant_name(var)) + "_" + fusion_name(fusion) + "_" +
           mode_name(mode);
}

class FusedAttentionFp32 : public ::testing::TestWithParam<Fp32Param> {};

TEST_P(FusedAttentionFp32, MatchReference) {
    const auto [var, fusion, mode] = GetParam();
    COMPILE_OR_FAIL(kn, var, Float(32), fusion);
    check_uniform(kn, var, Float(32), fusion, mode, "fp32 " + fp32_name({GetParam(), 0}));
}

INSTANTIATE_TEST_SUITE_P(All, FusedAttentionFp32,
                         ::testing::Combine(::testing::ValuesIn(attention::all_variants),
                                            ::testing::Values(rolling, 1, 2, 7, 16, tiles,
                                                              tiles_unstaged, tiles_split),
                                            ::testing::Values(Mode::Prefill, Mode::Decode)),
                         fp32_name);
// The composite variants, through the same templates unchanged.
INSTANTIATE_TEST_SUITE_P(Composite, FusedAttentionFp32,
                         ::testing::Combine(::testing::ValuesIn(attention::composite_variants),
                                            ::testing::Values(rolling, 7, tiles, tiles_split),
                                            ::testing::Values(Mode::Prefill, Mode::Decode)),
                         fp32_name);

// fp16 and bf16 inputs and outputs (fp32 accumulation): every variant, with
// rolling_update and with split_k over 7 chunks; one compile per test, run
// on both prefill and decode.
using LowPrecisionParam = std::tuple<Variant, int /*index in all_types*/, Fusion>;

std::string low_precision_name(const ::testing::TestParamInfo<LowPrecisionParam> &info) {
    const auto [var, type_index, fusion] = info.param;
    return std::string(attention::variant_name(var)) + "_" + type_name(all_types[type_index]) +
           "_" + fusion_name(fusion);
}

class FusedAttentionLowPrecision : public ::testing::TestWithParam<LowPrecisionParam> {};

TEST_P(FusedAttentionLowPrecision, MatchReference) {
    const auto [var, type_index, fusion] = GetParam();
    const Type t = all_types[type_index];
    COMPILE_OR_FAIL(kn, var, t, fusion);
    for (Mode mode : {Mode::Prefill, Mode::Decode}) {
        check_uniform(kn, var, t, fusion, mode,
                      low_precision_name({GetParam(), 0}) + "_" + mode_name(mode));
    }
}

INSTANTIATE_TEST_SUITE_P(All, FusedAttentionLowPrecision,
                         ::testing::Combine(::testing::ValuesIn(attention::all_variants),
                                            ::testing::Values(1, 2),
                                            ::testing::Values(rolling, 7, tiles, tiles_split)),
                         low_precision_name);

// ------------------------------------------------------ numerical stress cases

// Each stress test compiles one kernel (fp32) and runs it on prefill and
// decode shapes (the sizes are run-time values).

using StressParam = std::tuple<Variant, Fusion>;

std::string stress_name(const ::testing::TestParamInfo<StressParam> &info) {
    const auto [var, fusion] = info.param;
    return std::string(attention::variant_name(var)) + "_" + fusion_name(fusion);
}

std::string config_name(const char *test, Variant var, Fusion fusion, const char *what) {
    return std::string(test) + " " + attention::variant_name(var) + " " + fusion_name(fusion) +
           " " + what;
}

// Scores of magnitude up to ~1e4: integer q and k with scale 4 (exact fp32
// scores). Masked keys (-inf) sit next to scores of +-1e4.
class FusedAttentionLargeScores : public ::testing::TestWithParam<StressParam> {};

TEST_P(FusedAttentionLargeScores, MatchReference) {
    const auto [var, fusion] = GetParam();
    const Type t = Float(32);
    const float scale = 4.0f;
    COMPILE_OR_FAIL(kn, var, t, fusion);
    for (Mode mode : {Mode::Prefill, Mode::Decode}) {
        const VariantShape sh = make_shape(var, mode);
        const unsigned seed = fresh_seed();
        SCOPED_TRACE(describe(var, t, sh, scale, default_window, seed) + ", " +
                     fusion_name(fusion));
        Inputs in = make_inputs(var, t, sh, scale, default_window, Values::Integers, seed);
        Outputs r = run(kn, in);
        report(config_name("large", var, fusion, mode_name(mode)), r, in);
        EXPECT_GT(in.max_abs_score, 5e3);
        EXPECT_TRUE(close_to(r.compiled, in.ref, t, sh)) << "compiled vs the float64 reference";
        EXPECT_TRUE(close_to(r.compiled_prefix, r.interpreted, t, sh))
            << "compiled vs the interpreter";
    }
}

INSTANTIATE_TEST_SUITE_P(All, FusedAttentionLargeScores,
                         ::testing::Combine(::testing::ValuesIn(attention::all_variants),
                                            ::testing::Values(rolling, 16, tiles, tiles_split)),
                         stress_name);

// More queries than keys (Lq = 53 > Lk = 30): query i has position
// i + Lk - Lq, so under a causal mask the first 23 rows see no key at all and
// must be exactly 0, while the others match the references.
class FusedAttentionSomeRowsMasked : public ::testing::TestWithParam<StressParam> {};

TEST_P(FusedAttentionSomeRowsMasked, ExactlyZero) {
    const auto [var, fusion] = GetParam();
    const Type t = Float(32);
    COMPILE_OR_FAIL(kn, var, t, fusion);
    VariantShape sh = make_shape(var, Mode::Prefill);
    sh.seq_k = 30;
    const float scale = default_scale(var, sh.head_dim);
    const unsigned seed = fresh_seed();
    SCOPED_TRACE(describe(var, t, sh, scale, default_window, seed) + ", " + fusion_name(fusion));
    Inputs in = make_inputs(var, t, sh, scale, default_window, Values::Uniform, seed);
    Outputs r = run(kn, in);
    report(config_name("lq>lk", var, fusion, "prefill"), r, in);
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
    EXPECT_TRUE(close_to(r.compiled, in.ref, t, sh)) << "compiled vs the float64 reference";
    EXPECT_TRUE(close_to(r.compiled_prefix, r.interpreted, t, sh)) << "compiled vs the interpreter";
}

INSTANTIATE_TEST_SUITE_P(
    All, FusedAttentionSomeRowsMasked,
    ::testing::Combine(::testing::Values(Variant::Causal, Variant::ALiBi, Variant::SoftCap,
                                         Variant::SlidingWindow, Variant::GroupedQuery),
                       ::testing::Values(rolling, 16, tiles, tiles_split)),
    stress_name);

// No keys at all (an empty cache): every output is exactly 0, as the
// interpreter gives. The fused loops then run no times, and no step of them
// may read the keys or values, whose buffers are empty.
class FusedAttentionNoKeys : public ::testing::TestWithParam<StressParam> {};

TEST_P(FusedAttentionNoKeys, ExactlyZero) {
    const auto [var, fusion] = GetParam();
    const Type t = Float(32);
    COMPILE_OR_FAIL(kn, var, t, fusion);
    for (Mode mode : {Mode::Prefill, Mode::Decode}) {
        VariantShape sh = make_shape(var, mode);
        sh.seq_k = 0;
        const float scale = default_scale(var, sh.head_dim);
        const unsigned seed = fresh_seed();
        SCOPED_TRACE(describe(var, t, sh, scale, default_window, seed) + ", " +
                     fusion_name(fusion));
        Inputs in = make_inputs(var, t, sh, scale, default_window, Values::Uniform, seed);
        Outputs r = run(kn, in);
        ASSERT_EQ(r.compiled.size(), size_t(sh.batch) * sh.q_heads * sh.seq_q * sh.head_dim);
        int nonzero = 0;
        for (double v : r.compiled) nonzero += v != 0;
        for (double v : r.interpreted) nonzero += v != 0;
        EXPECT_EQ(nonzero, 0) << "outputs that are not exactly 0";
    }
}

INSTANTIATE_TEST_SUITE_P(All, FusedAttentionNoKeys,
                         ::testing::Combine(::testing::ValuesIn(attention::all_variants),
                                            ::testing::Values(rolling, 3, 16, tiles, tiles_split)),
                         stress_name);

// Sliding windows of one key and of none, with large scores.
class FusedAttentionWindowOfOne : public ::testing::TestWithParam<Fusion> {};
class FusedAttentionWindowOfZero : public ::testing::TestWithParam<Fusion> {};

std::string window_name(const ::testing::TestParamInfo<Fusion> &info) {
    return fusion_name(info.param);
}

/** One run of the sliding-window variant with window `window`, integer
 * values and large scores, reported under `label`. */
struct WindowRun {
    VariantShape sh;
    Inputs in;
    Outputs r;
    std::string what;  // for SCOPED_TRACE
};
WindowRun run_window(Kernel &kn, Fusion fusion, int window, Mode mode, const char *label) {
    const Variant var = Variant::SlidingWindow;
    const Type t = Float(32);
    WindowRun w;
    w.sh = make_shape(var, mode);
    const unsigned seed = fresh_seed();
    w.what = describe(var, t, w.sh, 4.0f, window, seed) + ", " + fusion_name(fusion);
    w.in = make_inputs(var, t, w.sh, 4.0f, window, Values::Integers, seed);
    w.r = run(kn, w.in);
    report(config_name(label, var, fusion, mode_name(mode)), w.r, w.in);
    return w;
}

// A window of one key: each query sees only itself, so p = 1, l = 1 and the
// output is exactly v at the query's position. Every key tile (and chunk)
// before the one holding that key is fully masked.
TEST_P(FusedAttentionWindowOfOne, ExactlyV) {
    const Fusion fusion = GetParam();
    const Variant var = Variant::SlidingWindow;
    const Type t = Float(32);
    COMPILE_OR_FAIL(kn, var, t, fusion);
    for (Mode mode : {Mode::Prefill, Mode::Decode}) {
        const WindowRun w = run_window(kn, fusion, 1, mode, "window=1");
        SCOPED_TRACE(w.what);
        const VariantShape &sh = w.sh;
        const Inputs &in = w.in;
        const Outputs &r = w.r;
        EXPECT_GT(in.max_abs_score, 5e3);  // the masked keys' scores are large
        const size_t D = size_t(sh.head_dim);
        int bad = 0;
        for (int bh = 0; bh < sh.batch * sh.q_heads; bh++) {
            for (int i = 0; i < sh.seq_q; i++) {
                const int pos = i + sh.seq_k - sh.seq_q;
                for (size_t d = 0; d < D; d++) {
                    const size_t o = (size_t(bh) * sh.seq_q + i) * D + d;
                    const double want = in.v[(size_t(bh) * sh.seq_k + pos) * D + d];
                    if (r.compiled[o] != want) bad++;
                    if (o < r.interpreted.size() && r.interpreted[o] != want) bad++;
                    if (in.ref[o] != want) bad++;
                }
            }
        }
        EXPECT_EQ(bad, 0) << "outputs that differ from v at the query's own position";
        EXPECT_TRUE(close_to(r.compiled, in.ref, t, sh)) << "compiled vs the float64 reference";
    }
}

// A window of 0 masks every key of every row: the output is exactly 0
// everywhere (the definition of a fully masked row).
TEST_P(FusedAttentionWindowOfZero, ExactlyZero) {
    const Fusion fusion = GetParam();
    const Variant var = Variant::SlidingWindow;
    const Type t = Float(32);
    COMPILE_OR_FAIL(kn, var, t, fusion);
    for (Mode mode : {Mode::Prefill, Mode::Decode}) {
        const WindowRun w = run_window(kn, fusion, 0, mode, "window=0");
        SCOPED_TRACE(w.what);
        const Inputs &in = w.in;
        const Outputs &r = w.r;
        int nonzero = 0;
        for (size_t n = 0; n < in.ref.size(); n++) {
            if (r.compiled[n] != 0) nonzero++;
            if (n < r.interpreted.size() && r.interpreted[n] != 0) nonzero++;
            if (in.ref[n] != 0) nonzero++;
        }
        EXPECT_EQ(nonzero, 0) << "outputs of fully masked rows that are not exactly 0";
    }
}

// A window wider than two key tiles and a tile of queries: key tiles wholly
// inside it for every row of a tile program run without the mask (and the
// windowed composite too), between tiles at its two edges that test it.
class FusedAttentionWideWindow : public ::testing::TestWithParam<Fusion> {};

TEST_P(FusedAttentionWideWindow, MatchReference) {
    const Fusion fusion = GetParam();
    for (Variant var : {Variant::SlidingWindow, Variant::WindowSoftCapGQA}) {
        COMPILE_OR_FAIL(kn, var, Float(32), fusion);
        for (Mode mode : {Mode::Prefill, Mode::Decode}) {
            const VariantShape sh = make_shape(var, mode);
            const float scale = default_scale(var, sh.head_dim);
            const int window = 45;
            const unsigned seed = fresh_seed();
            SCOPED_TRACE(describe(var, Float(32), sh, scale, window, seed) + ", " +
                         fusion_name(fusion));
            Inputs in = make_inputs(var, Float(32), sh, scale, window, Values::Uniform, seed);
            Outputs r = run(kn, in);
            report(config_name("window=45", var, fusion, mode_name(mode)), r, in);
            EXPECT_TRUE(close_to(r.compiled, in.ref, Float(32), sh))
                << "compiled vs the float64 reference";
            EXPECT_TRUE(close_to(r.compiled_prefix, r.interpreted, Float(32), sh))
                << "compiled vs the interpreter";
        }
    }
}

INSTANTIATE_TEST_SUITE_P(All, FusedAttentionWideWindow,
                         ::testing::Values(rolling, tiles, tiles_split), window_name);
INSTANTIATE_TEST_SUITE_P(All, FusedAttentionWindowOfOne,
                         ::testing::Values(rolling, 1, 2, 7, 16, tiles, tiles_split), window_name);
INSTANTIATE_TEST_SUITE_P(All, FusedAttentionWindowOfZero,
                         ::testing::Values(rolling, 16, tiles, tiles_split), window_name);

}  // namespace

// split_k over tile programs rolls contiguous chunks; interleaved ones are
// refused by name, and a program must be stored somewhere: at root.
TEST(FusedAttentionErrors, SplitKOverProgramsNeedsContiguousChunksAtRoot) {
    AttentionVariant a(Variant::Causal, Float(32));
    a.fix_head_dim(16);
    const schedules::AttentionChain c = a.chain();
    Var chunk("chunk"), io("io"), dout("dout");
    RVar ro("ro"), ri("ri");
    Schedule sch;
    Stage partial = sch.split_k(c.o, c.r, 4, chunk, ChunkLayout::Interleaved);
    partial.tile_program(c.i, c.d, io, dout, 16, 16).split(c.r, ro, ri, 16).compute_root();
    sch[c.qk].compute_at(partial, dout);
    try {
        Pipeline(a.out).compile_to_lowered_stmt(sch, Target("host"));
        FAIL() << "interleaved chunks in a tile program compiled";
    } catch (const CompileError &e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("split_k(o, r"), std::string::npos) << m;
        EXPECT_NE(m.find("ChunkLayout::Contiguous"), std::string::npos) << m;
    }
    Schedule inline_partial;
    Stage p2 = inline_partial.split_k(c.o, c.r, 4, chunk);
    p2.tile_program(c.i, c.d, io, dout, 16, 16).split(c.r, ro, ri, 16);
    inline_partial[c.qk].compute_at(p2, dout);
    try {
        Pipeline(a.out).compile_to_lowered_stmt(inline_partial, Target("host"));
        FAIL() << "a tile program computed inline compiled";
    } catch (const CompileError &e) {
        EXPECT_NE(std::string(e.what()).find("compute_root()"), std::string::npos) << e.what();
    }
}

// split_k over tile programs with the number of chunks a Param: one
// compiled pipeline run with 1, 3 and 20 chunks (20 over 9 key tiles: most
// chunks empty), and 0 refused with the split_k message.
TEST(FusedAttentionSplitKTiles, ChunksFromAParam) {
    const Variant var = Variant::Causal;
    AttentionVariant a(var, Float(32));
    const VariantShape sh = make_shape(var, Mode::Decode);
    a.fix_head_dim(sh.head_dim);
    const schedules::AttentionChain c = a.chain();
    Param<int> chunks("chunks");
    Var chunk("chunk"), io("io"), dout("dout");
    RVar ro("ro"), ri("ri");
    Schedule sch;
    Stage partial = sch.split_k(c.o, c.r, chunks, chunk);
    partial.tile_program(c.i, c.d, io, dout, 1, 32, TileOptions().warps(1, 1).reduction_tile(32))
        .split(c.r, ro, ri, 16)
        .compute_root();
    sch[c.qk].compute_at(partial, dout);
    sch[c.o].compute_root();
    CompiledPipeline compiled = Pipeline(a.out).compile(sch);
    const float scale = default_scale(var, sh.head_dim);
    for (int n : {1, 3, 20}) {
        chunks.set(n);
        const unsigned seed = fresh_seed();
        SCOPED_TRACE(describe(var, Float(32), sh, scale, default_window, seed) + ", " +
                     std::to_string(n) + " chunks");
        Inputs in = make_inputs(var, Float(32), sh, scale, default_window, Values::Uniform, seed);
        bind(a, in);
        EXPECT_TRUE(close_to(realize(compiled, in), in.ref, Float(32), sh));
    }
    chunks.set(0);
    Inputs in =
        make_inputs(var, Float(32), sh, scale, default_window, Values::Uniform, fresh_seed());
    bind(a, in);
    try {
        realize(compiled, in);
        FAIL() << "0 chunks ran";
    } catch (const std::exception &e) {
        EXPECT_NE(std::string(e.what()).find("the number of chunks is 0"), std::string::npos)
            << e.what();
    }
}
