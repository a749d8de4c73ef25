// The GPU schedules of plain attention (schedules/flash_attention.h,
// flash_attention_gpu: per key, and over key tiles staged in shared memory;
// flash_decoding_gpu: the keys in pieces, a thread per piece and query)
// on the GPU, against the float64 reference, for every attention variant
// and input type, at sizes that leave partial blocks and a partial tile.
// Label gpu: reported as skipped without a GPU.
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "../../apps/tests/attention_test_util.h"
#include "../../schedules/flash_attention.h"
#include "gpu_test_pipelines.h"
#include "loom/loom.h"

using namespace loom;
using namespace attention_test;
using loom_test::no_gpu_reason;

namespace {

const int window = 19;  // sliding window only

using Param = std::tuple<Variant, int /*index in all_types*/, int /*key_tile*/>;

std::string param_name(const ::testing::TestParamInfo<Param> &info) {
    const auto [var, type_index, key_tile] = info.param;
    return std::string(attention::variant_name(var)) + "_" + type_name(all_types[type_index]) +
           (key_tile ? "_tiles_of_" + std::to_string(key_tile) : "");
}

class GpuAttention : public ::testing::TestWithParam<Param> {};

/** Two heads of keys and values per batch (one for grouped-query), four of
 * queries, head dimension 32. */
VariantShape shape(Variant var, int queries, int keys) {
    VariantShape sh;
    sh.batch = 2;
    sh.q_heads = 4;
    sh.kv_heads = attention::parts_of(var).grouped ? 2 : 4;
    sh.seq_q = queries;
    sh.seq_k = keys;
    sh.head_dim = 32;
    return sh;
}

/** Runs `compiled` on fresh random inputs of shape `sh`, left in `in` with
 * their float64 reference; `trace` describes them. */
std::vector<double> run_on_fresh_inputs(const CompiledPipeline &compiled, AttentionVariant &app,
                                        Variant var, Type t, const VariantShape &sh, Inputs *in,
                                        std::string *trace) {
    const float scale = default_scale(var, sh.head_dim);
    const unsigned seed = fresh_seed();
    *trace = describe(var, t, sh, scale, window, seed);
    *in = make_inputs(var, t, sh, scale, window, Values::Uniform, seed);
    bind(app, *in);
    return realize(compiled, *in);
}

/** Runs `compiled` on fresh random inputs of shape `sh` and compares with
 * the float64 reference. */
void expect_matches_reference(const CompiledPipeline &compiled, AttentionVariant &app, Variant var,
                              Type t, const VariantShape &sh) {
    Inputs in;
    std::string trace;
    std::vector<double> got = run_on_fresh_inputs(compiled, app, var, t, sh, &in, &trace);
    SCOPED_TRACE(trace);
    EXPECT_TRUE(close_to(got, in.ref, t, sh)) << "GPU vs the float64 reference";
    EXPECT_GT(max_abs(in.ref), 0.05);
}

/** With no keys (an empty cache), every output is exactly 0, and no kernel
 * reads the empty key and value buffers. */
void expect_zero_without_keys(const CompiledPipeline &compiled, AttentionVariant &app, Variant var,
                              Type t, VariantShape sh) {
    sh.seq_k = 0;
    Inputs in;
    std::string trace;
    std::vector<double> got = run_on_fresh_inputs(compiled, app, var, t, sh, &in, &trace);
    SCOPED_TRACE(trace);
    ASSERT_EQ(got.size(), size_t(sh.batch) * sh.q_heads * sh.seq_q * sh.head_dim);
    int nonzero = 0;
    for (double v : got) nonzero += v != 0;
    EXPECT_EQ(nonzero, 0) << "outputs that are not exactly 0";
}

}  // namespace

TEST_P(GpuAttention, MatchesReference) {
    const std::string why = no_gpu_reason();
    if (!why.empty()) GTEST_SKIP() << "no GPU to run on: " << why;
    const auto [var, type_index, key_tile] = GetParam();
    const Type t = all_types[type_index];
    // 77 queries: one full block of 64 and a partial one; the keys are not
    // a multiple of anything (nine tiles of 8 and a partial one); grouped-query has 2 query heads
    // per key head.
    const VariantShape sh = shape(var, 77, 77);
    AttentionVariant app(var, t);
    app.fix_head_dim(sh.head_dim);
    Schedule sch;
    schedules::FlashAttentionGpuOptions opt;
    opt.head_dim = sh.head_dim;
    opt.key_tile = key_tile;
    schedules::flash_attention_gpu(sch, app.chain(), opt);
    CompiledPipeline compiled = Pipeline(app.out).compile(sch, Target("host-cuda"));
    expect_matches_reference(compiled, app, var, t, sh);
    expect_zero_without_keys(compiled, app, var, t, sh);
}

namespace {

using DecodingParam =
    std::tuple<Variant, int /*index in all_types*/, bool /*probabilities_per_tile*/>;

std::string decoding_name(const ::testing::TestParamInfo<DecodingParam> &info) {
    const auto [var, type_index, per_tile] = info.param;
    return std::string(attention::variant_name(var)) + "_" + type_name(all_types[type_index]) +
           (per_tile ? "_probabilities_per_tile" : "");
}

class GpuDecoding : public ::testing::TestWithParam<DecodingParam> {};

}  // namespace

TEST_P(GpuDecoding, MatchesReference) {
    const std::string why = no_gpu_reason();
    if (!why.empty()) GTEST_SKIP() << "no GPU to run on: " << why;
    const auto [var, type_index, per_tile] = GetParam();
    const Type t = all_types[type_index];
    // flash_decoding_gpu with small pieces: 77 keys in 8 pieces of 12 (three
    // tiles of 4; the seventh piece has two, the last none), two blocks of 4
    // pieces; 3 keys (one piece of one tile, seven empty ones). One query,
    // and 5 (two blocks of 2 queries and a partial one). No keys at all.
    AttentionVariant app(var, t);
    app.fix_head_dim(32);
    Schedule sch;
    schedules::FlashDecodingGpuOptions opt;
    opt.head_dim = 32;
    opt.chunks = 8;
    opt.chunks_per_block = 4;
    opt.queries_per_block = 2;
    opt.key_tile = 4;
    opt.probabilities_per_tile = per_tile;
    schedules::flash_decoding_gpu(sch, app.chain(), opt);
    CompiledPipeline compiled = Pipeline(app.out).compile(sch, Target("host-cuda"));
    for (int keys : {77, 3}) {
        for (int queries : {1, 5})
            expect_matches_reference(compiled, app, var, t, shape(var, queries, keys));
    }
    expect_zero_without_keys(compiled, app, var, t, shape(var, 5, 0));
}

// Every variant in float16, and the other types on global attention (each
// case costs an NVRTC compile of the kernels).
INSTANTIATE_TEST_SUITE_P(Variants, GpuDecoding,
                         ::testing::Combine(::testing::ValuesIn(attention::all_variants),
                                            ::testing::Values(1), ::testing::Values(false, true)),
                         decoding_name);
INSTANTIATE_TEST_SUITE_P(Types, GpuDecoding,
                         ::testing::Combine(::testing::Values(Variant::Global),
                                            ::testing::Values(0, 2), ::testing::Values(false)),
                         decoding_name);

INSTANTIATE_TEST_SUITE_P(All, GpuAttention,
                         ::testing::Combine(::testing::ValuesIn(attention::all_variants),
                                            ::testing::Values(0, 1, 2), ::testing::Values(0, 8)),
                         param_name);

namespace {

using TensorCoreParam = std::tuple<Variant, int /*index in all_types*/, int /*head dim*/>;

std::string tensor_core_name(const ::testing::TestParamInfo<TensorCoreParam> &info) {
    const auto [var, type_index, head_dim] = info.param;
    return std::string(attention::variant_name(var)) + "_" + type_name(all_types[type_index]) +
           "_d" + std::to_string(head_dim);
}

class GpuTensorCoreAttention : public ::testing::TestWithParam<TensorCoreParam> {};

}  // namespace

namespace {

/** The tensor-core template compiled for `app` at head_dim. */
CompiledPipeline compile_tensor_cores(AttentionVariant &app, int head_dim) {
    app.fix_head_dim(head_dim);
    Schedule sch;
    schedules::FlashAttentionTensorCoreOptions opt;
    opt.head_dim = head_dim;
    schedules::flash_attention_tensor_cores(sch, app.chain(), opt);
    return Pipeline(app.out).compile(sch, Target("host-cuda"));
}

/** A shape for the tensor-core template's tests: batch 1, two query heads
 * (grouped-query: both on one key/value head). */
VariantShape tensor_core_shape(Variant var, int queries, int keys, int head_dim) {
    VariantShape sh = shape(var, queries, keys);
    sh.head_dim = head_dim;
    sh.batch = 1;
    sh.q_heads = 2;
    sh.kv_heads = attention::parts_of(var).grouped ? 1 : 2;
    return sh;
}

/** Checks `got` against the reference of `in` with the template's bound
 * (the reference tolerance plus P's rounding: a step of t times max |v|). */
void expect_within_tensor_core_bound(const std::vector<double> &got, const Inputs &in, Type t) {
    ASSERT_EQ(got.size(), in.ref.size());
    const double step = t == BFloat(16) ? std::ldexp(1.0, -8) : std::ldexp(1.0, -11);
    double v_max = 0;
    for (float x : in.v) v_max = std::max(v_max, double(std::fabs(x)));
    int bad = 0;
    for (size_t n = 0; n < got.size() && bad < 5; n++) {
        const double bound = tolerance(t, in.ref[n]) + step * v_max;
        if (!(std::fabs(got[n] - in.ref[n]) <= bound)) {
            ADD_FAILURE() << "element " << n << ": " << got[n] << ", the reference " << in.ref[n]
                          << " (bound " << bound << ")";
            bad++;
        }
    }
}

}  // namespace

// Every variant on tensor cores through the one template
// (flash_attention_tensor_cores), which does not know which variant it
// schedules. The error bound: the reference's tolerance in the input type,
// plus P rounded to it before P V, at most a step of the type (2^-11
// f16, 2^-8 bf16) of each weight times |v|, so of max |v| in all.
TEST_P(GpuTensorCoreAttention, MatchesReference) {
    const std::string why = no_gpu_reason();
    if (!why.empty()) GTEST_SKIP() << "no GPU to run on: " << why;
    const auto [var, type_index, head_dim] = GetParam();
    const Type t = all_types[type_index];
    AttentionVariant app(var, t);
    CompiledPipeline compiled = compile_tensor_cores(app, head_dim);
    // Prefill: two query tiles (one partial) over two key tiles (one
    // partial), two heads (grouped-query: both on one key head). Decode:
    // one query over the keys of a partial tile past three whole ones.
    for (Mode mode : {Mode::Prefill, Mode::Decode}) {
        const VariantShape sh = mode == Mode::Prefill ? tensor_core_shape(var, 77, 77, head_dim)
                                                      : tensor_core_shape(var, 1, 211, head_dim);
        Inputs in;
        std::string trace;
        std::vector<double> got = run_on_fresh_inputs(compiled, app, var, t, sh, &in, &trace);
        SCOPED_TRACE(std::string(mode_name(mode)) + ", " + trace);
        expect_within_tensor_core_bound(got, in, t);
        EXPECT_GT(max_abs(in.ref), 0.05);
    }
}

INSTANTIATE_TEST_SUITE_P(Variants, GpuTensorCoreAttention,
                         ::testing::Combine(::testing::ValuesIn(attention::all_variants),
                                            ::testing::Values(1), ::testing::Values(64, 128)),
                         tensor_core_name);
// Neptune's composite operators (fp16, head dim 128), unchanged template.
INSTANTIATE_TEST_SUITE_P(Composite, GpuTensorCoreAttention,
                         ::testing::Combine(::testing::ValuesIn(attention::composite_variants),
                                            ::testing::Values(1), ::testing::Values(128)),
                         tensor_core_name);
// bf16: every variant at head dims 64 and 128.
INSTANTIATE_TEST_SUITE_P(Types, GpuTensorCoreAttention,
                         ::testing::Combine(::testing::ValuesIn(attention::all_variants),
                                            ::testing::Values(2), ::testing::Values(64)),
                         tensor_core_name);
INSTANTIATE_TEST_SUITE_P(TypesD128, GpuTensorCoreAttention,
                         ::testing::Combine(::testing::ValuesIn(attention::all_variants),
                                            ::testing::Values(2), ::testing::Values(128)),
                         tensor_core_name);

class GpuTensorCoreAttentionStress : public ::testing::TestWithParam<Variant> {};

std::string stress_variant_name(const ::testing::TestParamInfo<Variant> &info) {
    return attention::variant_name(info.param);
}

// The template at its numerical edges, fp16, head dim 64: scores of
// magnitude ~1e4 (integer q and k, exact in fp16 and in the fp32 products,
// scale 1) next to -inf masks at tile edges, where a softmax without the
// running max overflows; and more queries than keys (77 over 30), where
// the first 47 rows of a causal mask see no key and must be exactly 0.
TEST_P(GpuTensorCoreAttentionStress, LargeScoresAndRowsWithNoKey) {
    const std::string why = no_gpu_reason();
    if (!why.empty()) GTEST_SKIP() << "no GPU to run on: " << why;
    const Variant var = GetParam();
    const Type t = Float(16);
    AttentionVariant app(var, t);
    CompiledPipeline compiled = compile_tensor_cores(app, 64);
    VariantShape sh = tensor_core_shape(var, 77, 77, 64);
    {
        const unsigned seed = fresh_seed();
        SCOPED_TRACE("large scores, " + describe(var, t, sh, 1.0f, window, seed));
        Inputs in = make_inputs(var, t, sh, 1.0f, window, Values::Integers, seed);
        bind(app, in);
        std::vector<double> got = realize(compiled, in);
        EXPECT_GT(in.max_abs_score, 5e3);
        expect_within_tensor_core_bound(got, in, t);
    }
    if (var == Variant::Global) return;
    sh.seq_k = 30;
    const unsigned seed = fresh_seed();
    SCOPED_TRACE("77 queries over 30 keys, " + describe(var, t, sh, 0.125f, window, seed));
    Inputs in = make_inputs(var, t, sh, 0.125f, window, Values::Uniform, seed);
    bind(app, in);
    std::vector<double> got = realize(compiled, in);
    expect_within_tensor_core_bound(got, in, t);
    const size_t D = size_t(sh.head_dim);
    int nonzero = 0;
    for (int h = 0; h < sh.q_heads; h++) {
        for (int i = 0; i < sh.seq_q - sh.seq_k; i++) {
            for (size_t d = 0; d < D; d++) nonzero += got[(size_t(h) * sh.seq_q + i) * D + d] != 0;
        }
    }
    EXPECT_EQ(nonzero, 0) << "outputs of rows that see no key, which are defined as 0";
}

INSTANTIATE_TEST_SUITE_P(Variants, GpuTensorCoreAttentionStress,
                         ::testing::Values(Variant::Global, Variant::Causal, Variant::SlidingWindow,
                                           Variant::WindowSoftCapGQA),
                         stress_variant_name);

namespace {

class GpuTensorCoreDecoding : public ::testing::TestWithParam<TensorCoreParam> {};

/** The split_k template on tensor cores, with `chunks` pieces of the keys. */
CompiledPipeline compile_decoding_tensor_cores(AttentionVariant &app, int head_dim, int chunks) {
    app.fix_head_dim(head_dim);
    Schedule sch;
    schedules::FlashDecodingTensorCoreOptions opt;
    opt.head_dim = head_dim;
    opt.chunks = chunks;
    schedules::flash_decoding_tensor_cores(sch, app.chain(), opt);
    return Pipeline(app.out).compile(sch, Target("host-cuda"));
}

}  // namespace

// Decode on tensor cores (flash_decoding_tensor_cores): split_k over tile
// programs, each piece of the keys one program storing its partial max, sum
// and weighted sum, then the derived combine. 3 pieces over key tiles of 64:
// one query over 211 keys (4 tiles: pieces of 2, 2 and none, the last tile
// partial), 5 queries over 300 keys (a query tile of 16 mostly padding), and
// no keys at all (every piece empty: the output is 0). Same bound as
// prefill's.
TEST_P(GpuTensorCoreDecoding, MatchesReference) {
    const std::string why = no_gpu_reason();
    if (!why.empty()) GTEST_SKIP() << "no GPU to run on: " << why;
    const auto [var, type_index, head_dim] = GetParam();
    const Type t = all_types[type_index];
    AttentionVariant app(var, t);
    CompiledPipeline compiled = compile_decoding_tensor_cores(app, head_dim, 3);
    for (const auto &[queries, keys] : {std::pair{1, 211}, std::pair{5, 300}}) {
        const VariantShape sh = tensor_core_shape(var, queries, keys, head_dim);
        Inputs in;
        std::string trace;
        std::vector<double> got = run_on_fresh_inputs(compiled, app, var, t, sh, &in, &trace);
        SCOPED_TRACE(trace);
        expect_within_tensor_core_bound(got, in, t);
        EXPECT_GT(max_abs(in.ref), 0.05);
    }
    const VariantShape empty = tensor_core_shape(var, 1, 0, head_dim);
    Inputs in;
    std::string trace;
    std::vector<double> got = run_on_fresh_inputs(compiled, app, var, t, empty, &in, &trace);
    SCOPED_TRACE(trace);
    int nonzero = 0;
    for (double v : got) nonzero += v != 0;
    EXPECT_EQ(nonzero, 0) << "outputs without keys, which are defined as 0";
}

INSTANTIATE_TEST_SUITE_P(Variants, GpuTensorCoreDecoding,
                         ::testing::Combine(::testing::ValuesIn(attention::all_variants),
                                            ::testing::Values(1), ::testing::Values(64, 128)),
                         tensor_core_name);
INSTANTIATE_TEST_SUITE_P(Types, GpuTensorCoreDecoding,
                         ::testing::Combine(::testing::ValuesIn(attention::all_variants),
                                            ::testing::Values(2), ::testing::Values(64)),
                         tensor_core_name);
INSTANTIATE_TEST_SUITE_P(TypesD128, GpuTensorCoreDecoding,
                         ::testing::Combine(::testing::ValuesIn(attention::all_variants),
                                            ::testing::Values(2), ::testing::Values(128)),
                         tensor_core_name);
INSTANTIATE_TEST_SUITE_P(Composite, GpuTensorCoreDecoding,
                         ::testing::Combine(::testing::ValuesIn(attention::composite_variants),
                                            ::testing::Values(1), ::testing::Values(128)),
                         tensor_core_name);

// The decode template's programs hold a group of query heads in their rows:
// those reading one key/value head, found from how k and v are read (h / G
// in grouped-query attention, h elsewhere: groups of one). Groups of 3 (one
// tile, 13 rows idle) and 20 (two tiles, the second of 4 rows), 2 batches,
// 1 and 3 queries, on the stand-in against the float64 reference.
TEST(GpuTensorCoreDecodingGroups, QueryHeadsOfAKeyHeadShareATile) {
    const std::string why = no_gpu_reason();
    if (!why.empty()) GTEST_SKIP() << "no GPU to run on: " << why;
    for (Variant var : {Variant::GroupedQuery, Variant::SoftCapGQA, Variant::Causal}) {
        AttentionVariant app(var, Float(16));
        CompiledPipeline compiled = compile_decoding_tensor_cores(app, 64, 2);
        // The group's size is the one k and v are read by: the program
        // scalar row_group, bound to the variant's G (1 without groups).
        const std::string &stmt = compiled.lowered_stmt();
        const bool grouped = attention::parts_of(var).grouped;
        EXPECT_NE(stmt.find(grouped ? "row_group = max(" : "row_group = 1"), std::string::npos)
            << stmt.substr(0, 4000);
        const std::vector<std::pair<int, int>> heads =
            grouped ? std::vector<std::pair<int, int>>{{6, 2}, {20, 1}}
                    : std::vector<std::pair<int, int>>{{3, 3}};
        for (const auto &[q_heads, kv_heads] : heads) {
            for (int queries : {1, 3}) {
                VariantShape sh = tensor_core_shape(var, queries, 211, 64);
                sh.batch = 2;
                sh.q_heads = q_heads;
                sh.kv_heads = kv_heads;
                Inputs in;
                std::string trace;
                std::vector<double> got =
                    run_on_fresh_inputs(compiled, app, var, Float(16), sh, &in, &trace);
                SCOPED_TRACE(trace);
                expect_within_tensor_core_bound(got, in, Float(16));
                EXPECT_GT(max_abs(in.ref), 0.05);
            }
        }
    }
}
