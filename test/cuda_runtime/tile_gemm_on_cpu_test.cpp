// A tile program translated to CUDA (src/tile/TileCodeGen_CUDA) and run on
// the stand-in driver: a GEMM's warp blocks, f16 and bf16 in, an f32 or an
// f16 (cast epilogue) result, at sizes that are no multiple of the 16 x 8 x
// 16 tiles, against float64; and the same kernel through NVRTC for sm_80,
// whose machine code multiplies on tensor cores.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "codegen/NVRTC.h"
#include "driver_api.h"
#include "fake_cuda.h"
#include "loom/loom.h"
#include "sass.h"
#include "tile/TileCodeGen_CUDA.h"
#include "tile/TileInterpreter.h"
#include "tile_programs.h"

namespace {

using namespace loom_test;

struct Case {
    Type in;
    bool f16_out;  // C in f16 through a cast epilogue, else the f32 accumulator
};

class TileGemmOnCpu : public ::testing::TestWithParam<Case>, public StandInSession {
  protected:
    void SetUp() override { start_session(); }
    void TearDown() override { end_session(); }
};

std::string kernel_source(const Case &c) {
    const Type out = c.f16_out ? Float(16) : Float(32);
    Expr epilogue = c.f16_out ? cast(Float(16), Variable::make(Float(32), "_0")) : Expr();
    TileProgram p = gemm_program(c.in, epilogue);
    return tile_module_source(
        {tile_program_to_cuda(p, {{"A", c.in, false}, {"B", c.in, false}, {"C", out, true}})});
}

uint16_t to_bits(float f, Type t) {
    return t == BFloat(16) ? bfloat16_t(f).bits : float16_t(f).bits;
}
float from_bits(uint16_t h, Type t) {
    return t == BFloat(16) ? float(bfloat16_t::from_bits(h)) : float(float16_t::from_bits(h));
}

}  // namespace

TEST_P(TileGemmOnCpu, MatchesFloat64AtRaggedSizes) {
    const Case c = GetParam();
    const std::string source = kernel_source(c);
    void *module = nullptr;
    ASSERT_EQ(cuModuleLoadData(&module, source.c_str()), 0) << fake_cuda_kernel_error() << "\n"
                                                            << source;
    void *f = nullptr;
    ASSERT_EQ(cuModuleGetFunction(&f, module, "gemm"), 0);
    std::mt19937 rng(std::random_device{}());
    std::normal_distribution<float> normal;
    // Strides padded to 8 elements: each row's 16-byte chunks are aligned,
    // as cp.async needs; the extents are not multiples of the tiles.
    const int M = 37, N = 13, K = 45, sa = 48, sb = 16, sc = 16;
    std::vector<uint16_t> a(M * sa, 0xffff), b(K * sb, 0xffff);  // NaN padding: never read
    for (int i = 0; i < M; i++)
        for (int k = 0; k < K; k++) a[i * sa + k] = to_bits(normal(rng), c.in);
    for (int k = 0; k < K; k++)
        for (int j = 0; j < N; j++) b[k * sb + j] = to_bits(normal(rng), c.in);
    const size_t out_bytes = c.f16_out ? 2 : 4;
    unsigned long long A = device(a.data(), a.size() * 2), B = device(b.data(), b.size() * 2),
                       C = device(nullptr, M * sc * out_bytes);
    int stride_a = sa, stride_b = sb, stride_c = sc, m = M, n = N, k = K;
    // Parameters: buffers, their strides, then the scalars by name (K, M, N).
    void *args[] = {&A, &B, &C, &stride_a, &stride_b, &stride_c, &k, &m, &n};
    const unsigned shared = (16 * 16 + 16 * 8) * 2;
    ASSERT_EQ(
        cuLaunchKernel(f, (M + 15) / 16, (N + 7) / 8, 1, 32, 1, 1, shared, nullptr, args, nullptr),
        0);
    ASSERT_EQ(cuCtxSynchronize(), 0) << fake_cuda_kernel_error();
    std::vector<unsigned char> out(M * sc * out_bytes);
    ASSERT_EQ(cuMemcpyDtoH_v2(out.data(), C, out.size()), 0);
    double worst = 0;
    for (int i = 0; i < M; i++) {
        for (int j = 0; j < N; j++) {
            double want = 0, scale = 0;
            for (int kk = 0; kk < K; kk++) {
                const double t = double(from_bits(a[i * sa + kk], c.in)) *
                                 double(from_bits(b[kk * sb + j], c.in));
                want += t;
                scale += std::fabs(t);
            }
            double got;
            if (c.f16_out) {
                uint16_t h;
                memcpy(&h, &out[(i * sc + j) * 2], 2);
                got = float(float16_t::from_bits(h));
            } else {
                float v;
                memcpy(&v, &out[(i * sc + j) * 4], 4);
                got = v;
            }
            const double e = std::fabs(got - want) / (scale + 1e-30);
            worst = std::isnan(e) ? INFINITY : std::max(worst, e);
        }
    }
    // f32 accumulation of exact products; an f16 result adds its rounding.
    EXPECT_LT(worst, c.f16_out ? 2e-3 : 1e-5) << source;
    // The translation keeps the program's meaning: the host interpreter
    // accumulates in the same order and type, so every element agrees to the bit.
    std::vector<unsigned char> meant(out.size(), 0);
    const Type out_type = c.f16_out ? Float(16) : Float(32);
    Expr epilogue = c.f16_out ? cast(Float(16), Variable::make(Float(32), "_0")) : Expr();
    interpret_tile_program(
        gemm_program(c.in, epilogue),
        {{"A", c.in, a.data(), sa}, {"B", c.in, b.data(), sb}, {"C", out_type, meant.data(), sc}},
        {{"M", M}, {"N", N}, {"K", K}}, {(M + 15) / 16, (N + 7) / 8});
    for (int i = 0; i < M; i++) {
        EXPECT_EQ(memcmp(&out[i * sc * out_bytes], &meant[i * sc * out_bytes], N * out_bytes), 0)
            << "row " << i << " differs from the interpreter's";
    }
}

INSTANTIATE_TEST_SUITE_P(All, TileGemmOnCpu,
                         ::testing::Values(Case{Float(16), false}, Case{BFloat(16), false},
                                           Case{Float(16), true}),
                         [](const auto &info) {
                             return std::string(info.param.in == Float(16) ? "f16" : "bf16") +
                                    (info.param.f16_out ? "_to_f16" : "_to_f32");
                         });

TEST(TileGemmThroughNvrtc, CompilesForSm80WithTensorCores) {
    std::string why;
    if (!internal::nvrtc_available(&why)) GTEST_SKIP() << why;
    internal::CudaBinary bin = internal::compile_cuda(kernel_source({Float(16), true}), "tile_gemm",
                                                      "sm_80", {"--ptxas-options=-v"});
    for (const char *instruction :
         {"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "ldmatrix.sync.aligned.m8n8.x4",
          "ldmatrix.sync.aligned.m8n8.x2.trans", "cp.async.cg.shared.global"}) {
        EXPECT_NE(bin.ptx.find(instruction), std::string::npos) << instruction;
    }
    // ptxas: no spills, no stack.
    EXPECT_NE(bin.log.find("0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads"),
              std::string::npos)
        << bin.log;
    const std::string nvdisasm = find_nvdisasm();
    if (nvdisasm.empty()) GTEST_SKIP() << "no nvdisasm (pip install nvidia-cuda-nvdisasm)";
    const std::string sass = sass_of(bin.cubin, nvdisasm);
    for (const char *op : {"HMMA.16816.F32", "LDSM.16.M88.4", "LDSM.16.MT88.2", "LDGSTS"}) {
        EXPECT_NE(sass.find(op), std::string::npos) << "no " << op;
    }
}
