// Tile programs from the schedule (tile_program, tensorize) run end to end:
// a matrix product written as the plain algorithm, scheduled as a
// tensor-core tile program, compiled through lowering and NVRTC and run
// (on a GPU, and in every test run on the stand-in driver), against a
// float64 reference at sizes that are no multiple of the tiles.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "classifier_head.h"
#include "gpu_test_pipelines.h"
#include "loom/loom.h"
#include "rolled_attention.h"
#include "test_util.h"

using namespace loom;
using loom_test::no_gpu_reason;
using loom_test::random_buffer;

namespace {

const Target kGpu("host-cuda");

/** C(i, j) = sum over k of float(A(i, k)) * float(B(k, j)), A M x K and B
 * K x N of type `in` (or B given transposed, as an N x K buffer), then an
 * epilogue on the accumulator. */
struct Gemm {
    enum Epilogue { None, BiasRelu, Residual, CastToInput, BiasGelu };
    Type in;
    bool b_transposed;
    Epilogue epilogue;
    BufferParam A, B, bias, residual;
    Var i{"i"}, j{"j"}, io{"io"}, jo{"jo"};
    RDom k;
    Func prod{"prod"}, C{"C"};

    Gemm(Type in, bool b_transposed, Epilogue epilogue)
        : in(in),
          b_transposed(b_transposed),
          epilogue(epilogue),
          A(in, 2, "A"),
          B(in, 2, "B"),
          bias(Float(32), 1, "bias"),
          residual(Float(32), 2, "residual"),
          k(0, A.dim(1).extent(), "k") {
        prod(i, j) = 0.0f;
        Expr b = b_transposed ? B(j, k) : B(k, j);
        prod(i, j) += cast<float>(A(i, k)) * cast<float>(b);
        switch (epilogue) {
        case None: C(i, j) = prod(i, j); break;
        case BiasRelu: C(i, j) = max(prod(i, j) + bias(j), 0.0f); break;
        case Residual: C(i, j) = prod(i, j) * 0.5f + residual(i, j); break;
        case CastToInput: C(i, j) = cast(in, prod(i, j)); break;
        case BiasGelu: {
            Expr x = prod(i, j) + bias(j);
            C(i, j) = 0.5f * x * (1.0f + tanh(0.7978845608f * (x + 0.044715f * x * x * x)));
            break;
        }
        }
    }

    Schedule schedule(int rows, int cols, TileOptions options) {
        Schedule sch;
        sch[C].tile_program(i, j, io, jo, rows, cols, options);
        sch[prod].compute_at(C, jo).update().tensorize("mma.m16n8k16");
        return sch;
    }
};

template <typename T> double value(const Buffer<T> &b, int x, int y) {
    return double(float(b(x, y)));
}

struct Case {
    Type in;
    bool b_transposed;
    Gemm::Epilogue epilogue;
    int M, N, K, rows, cols, warps_m, warps_n, k_tile, stages;
};

std::string name_of(const ::testing::TestParamInfo<Case> &info) {
    const Case &c = info.param;
    const char *epilogues[] = {"acc", "bias_relu", "residual", "cast", "bias_gelu"};
    return std::string(c.in == BFloat(16) ? "bf16" : "f16") + (c.b_transposed ? "_bt_" : "_") +
           epilogues[c.epilogue] + "_" + std::to_string(c.rows) + "x" + std::to_string(c.cols) +
           "x" + std::to_string(c.k_tile) + "_w" + std::to_string(c.warps_m) +
           std::to_string(c.warps_n) + "_s" + std::to_string(c.stages);
}

class TileGemm : public ::testing::TestWithParam<Case> {};

template <typename T> void run_case(const Case &c) {
    Gemm g(c.in, c.b_transposed, c.epilogue);
    Buffer<T> a = random_buffer<T>({c.M, c.K}, -1, 1, "A");
    Buffer<T> b = c.b_transposed ? random_buffer<T>({c.N, c.K}, -1, 1, "B")
                                 : random_buffer<T>({c.K, c.N}, -1, 1, "B");
    Buffer<float> bias = random_buffer<float>({c.N}, -1, 1, "bias");
    Buffer<float> residual = random_buffer<float>({c.M, c.N}, -1, 1, "residual");
    g.A.set(a);
    g.B.set(b);
    g.bias.set(bias);
    g.residual.set(residual);
    Schedule sch = g.schedule(c.rows, c.cols,
                              TileOptions()
                                  .warps(c.warps_m, c.warps_n)
                                  .reduction_tile(c.k_tile)
                                  .pipeline_stages(c.stages));
    const bool cast_out = c.epilogue == Gemm::CastToInput;
    RawBuffer out = Pipeline(g.C).realize({c.M, c.N}, sch, kGpu);
    int bad = 0;
    for (int x = 0; x < c.M; x++) {
        for (int y = 0; y < c.N; y++) {
            double acc = 0, mag = 0;
            for (int r = 0; r < c.K; r++) {
                const double p =
                    value(a, x, r) * (c.b_transposed ? value(b, y, r) : value(b, r, y));
                acc += p;
                mag += std::fabs(p);
            }
            double want = acc;
            if (c.epilogue == Gemm::BiasRelu) want = std::max(acc + double(bias(y)), 0.0);
            if (c.epilogue == Gemm::Residual) want = acc * 0.5 + double(residual(x, y));
            if (c.epilogue == Gemm::BiasGelu) {
                const double v = acc + double(bias(y));
                want = 0.5 * v * (1 + std::tanh(0.7978845608 * (v + 0.044715 * v * v * v)));
            }
            double got;
            if (cast_out) {
                got = double(float(Buffer<T>(out)(x, y)));
            } else {
                got = double(Buffer<float>(out)(x, y));
            }
            // f32 accumulation in another order; the cast rounds once more.
            const double tol =
                1e-5 * (mag + 1) +
                (cast_out ? std::fabs(want) * (c.in == BFloat(16) ? 1.0 / 128 : 1.0 / 1024) : 0);
            if (!(std::fabs(got - want) <= tol) && bad++ < 5) {
                ADD_FAILURE() << "C(" << x << ", " << y << ") = " << got << ", want " << want;
            }
        }
    }
    EXPECT_EQ(bad, 0);
}

}  // namespace

TEST_P(TileGemm, MatchesFloat64AtRaggedSizes) {
    REQUIRE_GPU();
    const Case c = GetParam();
    if (c.in == BFloat(16)) {
        run_case<bfloat16_t>(c);
    } else {
        run_case<float16_t>(c);
    }
}

INSTANTIATE_TEST_SUITE_P(
    Schedules, TileGemm,
    ::testing::Values(Case{Float(16), false, Gemm::None, 75, 53, 90, 32, 32, 2, 2, 32, 3},
                      Case{BFloat(16), false, Gemm::None, 75, 53, 90, 32, 32, 2, 2, 32, 3},
                      Case{Float(16), false, Gemm::BiasRelu, 70, 41, 50, 64, 32, 2, 1, 16, 2},
                      Case{BFloat(16), false, Gemm::Residual, 37, 61, 45, 32, 64, 1, 2, 32, 1},
                      Case{Float(16), false, Gemm::CastToInput, 33, 47, 70, 32, 32, 1, 1, 32, 4},
                      Case{BFloat(16), true, Gemm::None, 45, 38, 77, 32, 32, 2, 2, 32, 3},
                      Case{BFloat(16), false, Gemm::BiasGelu, 66, 70, 48, 64, 64, 2, 2, 16, 3}),
    name_of);

// A softmax along each row of a product, in the same tile program: the
// rows' maxima and sums reduced inside the accumulator's layout (each
// quad's lanes by shuffles, warps side by side through shared memory),
// broadcast back from the same registers, no layout conversion.
TEST(TileGemm, RowSoftmaxOfAProductInOneProgram) {
    REQUIRE_GPU();
    const int M = 45, classes = 61, K = 40;
    for (auto [warps_m, warps_n] : {std::pair{2, 2}, std::pair{1, 4}}) {
        SCOPED_TRACE(std::to_string(warps_m) + " x " + std::to_string(warps_n) + " warps");
        loom_test::ClassifierHead h(Float(16), classes);
        Buffer<float16_t> x = random_buffer<float16_t>({M, K}, -1, 1, "X");
        Buffer<float16_t> w = random_buffer<float16_t>({K, classes}, -1, 1, "W");
        h.X.set(x);
        h.W.set(w);
        Schedule sch = h.schedule(32, 64, warps_m, warps_n, true);
        const std::string lowered = Pipeline(h.prob).compile_to_lowered_stmt(sch, kGpu);
        EXPECT_NE(lowered.find("reduce.max"), std::string::npos) << lowered;
        EXPECT_NE(lowered.find("slice(mma_accumulator)"), std::string::npos) << lowered;
        EXPECT_EQ(lowered.find("convert_layout %rmax"), std::string::npos) << lowered;
        Buffer<float> out(Pipeline(h.prob).realize({M, classes}, sch, kGpu));
        int bad = 0;
        for (int r = 0; r < M; r++) {
            std::vector<double> logit(classes);
            double mx = -INFINITY, sum = 0;
            for (int c = 0; c < classes; c++) {
                for (int q = 0; q < K; q++) logit[c] += value(x, r, q) * value(w, q, c);
                mx = std::max(mx, logit[c]);
            }
            for (int c = 0; c < classes; c++) sum += std::exp(logit[c] - mx);
            for (int c = 0; c < classes; c++) {
                const double want = std::exp(logit[c] - mx) / sum;
                if (!(std::fabs(out(r, c) - want) <= 1e-5 * want + 1e-7) && bad++ < 5) {
                    ADD_FAILURE() << "prob(" << r << ", " << c << ") = " << out(r, c) << ", want "
                                  << want;
                }
            }
        }
        EXPECT_EQ(bad, 0);
    }
}

// The tile's coordinates as values: a causal mask and a position bias in
// the epilogue, each block at its own origin.
TEST(TileGemm, CoordinatesAsValuesInTheEpilogue) {
    REQUIRE_GPU();
    BufferParam A(Float(16), 2, "A"), B(Float(16), 2, "B");
    Var i("i"), j("j"), io("io"), jo("jo");
    RDom k(0, A.dim(1).extent(), "k");
    Func prod("prod"), C("C");
    prod(i, j) = 0.0f;
    prod(i, j) += cast<float>(A(i, k)) * cast<float>(B(k, j));
    C(i, j) = select(j <= i, prod(i, j) + cast<float>(i - j) * 0.25f, -1.0f);
    const int M = 75, N = 70, K = 40;
    Buffer<float16_t> a = random_buffer<float16_t>({M, K}, -1, 1, "A");
    Buffer<float16_t> b = random_buffer<float16_t>({K, N}, -1, 1, "B");
    A.set(a);
    B.set(b);
    Schedule sch;
    sch[C].tile_program(i, j, io, jo, 32, 32, TileOptions().warps(2, 2).reduction_tile(16));
    sch[prod].compute_at(C, jo).update().tensorize("mma.m16n8k16");
    Buffer<float> out(Pipeline(C).realize({M, N}, sch, kGpu));
    int bad = 0;
    for (int x = 0; x < M; x++) {
        for (int y = 0; y < N; y++) {
            double want = -1;
            if (y <= x) {
                want = (x - y) * 0.25;
                for (int r = 0; r < K; r++) want += value(a, x, r) * value(b, r, y);
            }
            if (!(std::fabs(out(x, y) - want) <= 1e-4) && bad++ < 5) {
                ADD_FAILURE() << "C(" << x << ", " << y << ") = " << out(x, y) << ", want " << want;
            }
        }
    }
    EXPECT_EQ(bad, 0);
}

// Attention written as the plain chain, rolled by a tile program over
// tiles of keys on tensor cores: the scores' product tensorized exactly,
// the weighted sum of the values with P rounded to the values' type
// (TensorizeRounding::RoundOperands), the repairs derived.
TEST(TileGemm, RolledAttentionChainOnTensorCores) {
    REQUIRE_GPU();
    for (bool causal : {false, true}) {
        SCOPED_TRACE(causal ? "causal" : "global");
        const float scale = 0.125f;
        loom_test::RolledAttention a(Float(16), scale, causal);
        const int Lq = 77, Lk = 150, D = 64;
        Buffer<float16_t> q = random_buffer<float16_t>({Lq, D}, -2, 2, "Q");
        Buffer<float16_t> k = random_buffer<float16_t>({Lk, D}, -2, 2, "K");
        Buffer<float16_t> v = random_buffer<float16_t>({Lk, D}, -1, 1, "V");
        a.Q.set(q);
        a.K.set(k);
        a.V.set(v);
        Schedule sch = a.schedule(
            64, 64, 64, TileOptions().warps(4, 1).reduction_tile(64).pipeline_stages(2), true);
        Func out = a.out;
        const std::string lowered = Pipeline(out).compile_to_lowered_stmt(sch, kGpu);
        // Causal: the key loop stops at the program's diagonal (its extent
        // depends on the tile's row); global: it runs over every key tile.
        const size_t loop = lowered.find("for o_rt in [");
        ASSERT_NE(loop, std::string::npos) << lowered;
        const std::string range = lowered.substr(loop, lowered.find('\n', loop) - loop);
        EXPECT_EQ(range.find("tile_row") != std::string::npos, causal) << range;
        Buffer<float> got(Pipeline(out).realize({Lq, D}, sch, kGpu));
        int bad = 0;
        for (int x = 0; x < Lq; x++) {
            std::vector<double> sc(Lk, -INFINITY);
            double mx = -INFINITY;
            for (int y = 0; y < Lk; y++) {
                if (causal && y > x) continue;
                double dot = 0;
                for (int c = 0; c < D; c++) dot += value(q, x, c) * value(k, y, c);
                sc[y] = dot * scale;
                mx = std::max(mx, sc[y]);
            }
            double sum = 0;
            for (int y = 0; y < Lk; y++) sum += std::exp(sc[y] - mx);
            for (int c = 0; c < D; c++) {
                double want = 0;
                for (int y = 0; y < Lk; y++) want += std::exp(sc[y] - mx) * value(v, y, c);
                want /= sum;
                // P rounded to f16 before P V: 2^-11 of each weight.
                if (!(std::fabs(got(x, c) - want) <= 2e-3) && bad++ < 5) {
                    ADD_FAILURE() << "out(" << x << ", " << c << ") = " << got(x, c) << ", want "
                                  << want << "\n"
                                  << (bad == 1 ? lowered : "");
                }
            }
        }
        EXPECT_EQ(bad, 0);
    }
}
