// Tile programs translated to CUDA (src/tile/TileCodeGen_CUDA) and run on
// the stand-in driver: a GEMM's warp blocks (one warp, one 16 x 8 x 16
// fragment), and a block of warps' tiles with a multistage cp.async
// pipeline (several warps, several fragments each, transposed B, an
// epilogue reading a bias row, a residual and a scalar), f16 and bf16 in,
// f32, f16 or bf16 out, at sizes that are no multiple of the tiles, with
// rows and starts that 16-byte cp.async cannot take (4-byte copies or
// element by element instead), in both thread orders, against float64 and
// to the bit against the interpreter; epilogues of math intrinsics (GELU);
// planted pipeline mistakes caught; a misaligned cp.async failing its
// launch on the stand-in; and the kernels through NVRTC for sm_80 and
// sm_90a, whose machine code multiplies on tensor cores without spilling.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "codegen/CudaSources.h"
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
        {tile_program_to_cuda(p, {{"A", c.in}, {"B", c.in}, {"C", out, 2, true}}).source});
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
    interpret_tile_program(gemm_program(c.in, epilogue),
                           {{"A", c.in, a.data(), {sa, 1}},
                            {"B", c.in, b.data(), {sb, 1}},
                            {"C", out_type, meant.data(), {sc, 1}}},
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

// ---- A block of warps' GEMM tile with a multistage pipeline
// (gemm_program(GemmTiling)): several warps, several mma fragments each,
// operands through a ring of swizzled shared slots filled by cp.async,
// ragged sizes, transposed B, and an epilogue that reads a bias row, a
// residual and a scalar.

namespace {

struct BlockCase {
    std::string name;
    GemmTiling tiling;
    int M, N, K;
    /** Rows of A and B padded to 8 elements (16-byte chunks aligned), else
     * as long as their data (a K of 77: rows at odd addresses). */
    bool padded = true;
    /** A and B this many bytes past an aligned allocation. */
    int offset = 0;
};

// gtest names a failing case by this.
void PrintTo(const BlockCase &c, std::ostream *os) { *os << c.name; }

int round_up(int x, int m) { return (x + m - 1) / m * m; }

/** GELU, tanh's approximation, in float64. */
double gelu_reference(double x) {
    return 0.5 * x * (1 + std::tanh(0.7978845608 * (x + 0.044715 * x * x * x)));
}

/** A problem's host data: A, B (K x N, or N x K when transposed), the
 * bias row and the residual, rows padded with NaNs that no masked access
 * may read. Rows of A and B are padded to 8 elements, so that cp.async's
 * 16-byte chunks are aligned, unless `padded` is false (then the kernel
 * copies by 4-byte cp.async or element by element); A and B start
 * `offset` bytes into their allocations. C's and R's strides are odd on
 * purpose. */
struct Problem {
    GemmTiling g;
    int M, N, K, sa, sb, sc, sr;
    int offset = 0;
    float alpha = 0.75f;
    /** The epilogue is gelu(acc + bias) (see gelu_epilogue), else alpha *
     * acc + bias + R when the tiling has one. */
    bool gelu = false;
    std::vector<uint16_t> a, b, r;
    std::vector<float> bias;

    Problem(const GemmTiling &tiling, int m, int n, int k, uint32_t seed, bool padded = true,
            int offset_bytes = 0)
        : g(tiling), M(m), N(n), K(k), offset(offset_bytes) {
        std::mt19937 rng(seed);
        std::normal_distribution<float> normal;
        const int pad = padded ? 8 : 1;
        sa = g.a_transposed ? round_up(M, pad) : round_up(K, pad);
        sb = g.b_transposed ? round_up(K, pad) : round_up(N, pad);
        sc = N + 3;
        sr = N + 1;
        a.assign(size_t(g.a_transposed ? K : M) * sa, 0xffff);
        b.assign(size_t(g.b_transposed ? N : K) * sb, 0xffff);
        r.assign(size_t(M) * sr, 0xffff);
        for (int i = 0; i < M; i++)
            for (int kk = 0; kk < K; kk++) a[a_index(i, kk)] = to_bits(normal(rng), g.in);
        for (int kk = 0; kk < K; kk++)
            for (int j = 0; j < N; j++) b[b_index(kk, j)] = to_bits(normal(rng), g.in);
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) r[i * sr + j] = to_bits(normal(rng), g.out);
        for (int j = 0; j < N; j++) bias.push_back(normal(rng));
    }
    size_t a_index(int i, int kk) const {
        return g.a_transposed ? size_t(kk) * sa + i : size_t(i) * sa + kk;
    }
    size_t b_index(int kk, int j) const {
        return g.b_transposed ? size_t(j) * sb + kk : size_t(kk) * sb + j;
    }
    size_t out_bytes() const { return g.out.bytes(); }
    std::vector<int> grid() const { return {(M + g.bm - 1) / g.bm, (N + g.bn - 1) / g.bn}; }
    TileProgram program() const { return gemm_program(g); }
    std::vector<TileBuffer> buffers() const {
        std::vector<TileBuffer> bs = {{"A", g.in}, {"B", g.in}, {"C", g.out, 2, true}};
        if (g.bias) bs.push_back({"bias", Float(32), 1});
        if (g.residual) bs.push_back({"R", g.out});
        return bs;
    }
    double out_value(const std::vector<unsigned char> &c, int i, int j) const {
        const unsigned char *p = &c[(size_t(i) * sc + j) * out_bytes()];
        if (g.out == Float(32)) {
            float v;
            memcpy(&v, p, 4);
            return v;
        }
        uint16_t h;
        memcpy(&h, p, 2);
        return from_bits(h, g.out);
    }
    /** The largest error against float64, relative to the sum of the
     * magnitudes of the terms (NaN: infinite). */
    double worst_error(const std::vector<unsigned char> &c) const {
        double worst = 0;
        for (int i = 0; i < M; i++) {
            for (int j = 0; j < N; j++) {
                double want = 0, scale = 0;
                for (int kk = 0; kk < K; kk++) {
                    const double t = double(from_bits(a[a_index(i, kk)], g.in)) *
                                     double(from_bits(b[b_index(kk, j)], g.in));
                    want += t;
                    scale += std::fabs(t);
                }
                if (gelu) {
                    const double x = want + bias[j];
                    want = gelu_reference(x);
                    scale += std::fabs(bias[j]);
                } else if (g.epilogue.defined()) {  // alpha * acc + bias + R, as the tests build it
                    const double res = from_bits(r[i * sr + j], g.out);
                    want = alpha * want + bias[j] + res;
                    scale = alpha * scale + std::fabs(bias[j]) + std::fabs(res);
                }
                const double e = std::fabs(out_value(c, i, j) - want) / (scale + 1e-30);
                worst = std::isnan(e) ? INFINITY : std::max(worst, e);
            }
        }
        return worst;
    }
    /** C as the interpreter computes it. */
    std::vector<unsigned char> meant() const {
        std::vector<unsigned char> c(size_t(M) * sc * out_bytes(), 0);
        std::vector<TileHostBuffer> bs = {
            {"A", g.in, const_cast<uint16_t *>(a.data()), {sa, 1}},
            {"B", g.in, const_cast<uint16_t *>(b.data()), {sb, 1}},
            {"C", g.out, c.data(), {sc, 1}},
            {"bias", Float(32), const_cast<float *>(bias.data()), {1}},
            {"R", g.out, const_cast<uint16_t *>(r.data()), {sr, 1}}};
        interpret_tile_program(program(), bs,
                               {{"M", M}, {"N", N}, {"K", K}, {"epilogue.alpha", alpha}}, grid());
        return c;
    }
};

/** The epilogue alpha * acc + bias + R, in C's type. */
Expr bias_residual_epilogue(Type out) {
    const Expr acc = Variable::make(Float(32), "_0"), bias = Variable::make(Float(32), "_1");
    const Expr res = cast(Float(32), Variable::make(out, "_2"));
    return cast(out, Variable::make(Float(32), "epilogue.alpha") * acc + bias + res);
}

class TileBlockGemmOnCpu : public ::testing::TestWithParam<BlockCase>, public StandInSession {
  protected:
    void SetUp() override { start_session(); }
    void TearDown() override { end_session(); }

    /** C computed by the kernel on the stand-in; empty, with `error`, if
     * the launch failed. */
    std::vector<unsigned char> run(const Problem &pr, std::string *error) {
        TileProgram p = pr.program();
        const TileKernelSource k = tile_program_to_cuda(p, pr.buffers());
        const std::string source = tile_module_source({k.source});
        void *module = nullptr, *f = nullptr;
        if (cuModuleLoadData(&module, source.c_str()) != 0 ||
            cuModuleGetFunction(&f, module, "gemm_block") != 0) {
            *error = std::string("no module: ") + fake_cuda_kernel_error() + "\n" + source;
            return {};
        }
        const size_t c_bytes = size_t(pr.M) * pr.sc * pr.out_bytes();
        // A and B `offset` bytes into their allocations.
        auto shifted = [&](const std::vector<uint16_t> &v) {
            std::vector<unsigned char> bytes(pr.offset + v.size() * 2, 0xff);
            memcpy(bytes.data() + pr.offset, v.data(), v.size() * 2);
            return device(bytes.data(), bytes.size()) + pr.offset;
        };
        std::map<std::string, unsigned long long> pointers = {
            {"A", shifted(pr.a)},
            {"B", shifted(pr.b)},
            {"C", device(nullptr, c_bytes)},
            {"bias", device(pr.bias.data(), pr.bias.size() * 4)},
            {"R", device(pr.r.data(), pr.r.size() * 2)}};
        const std::map<std::string, int> ints = {{"A.stride.0", pr.sa},
                                                 {"B.stride.0", pr.sb},
                                                 {"C.stride.0", pr.sc},
                                                 {"R.stride.0", pr.sr},
                                                 {"M", pr.M},
                                                 {"N", pr.N},
                                                 {"K", pr.K}};
        // Each parameter's value, by its name, as cuLaunchKernel takes them.
        std::vector<std::array<unsigned char, 8>> values(k.params.size());
        std::vector<void *> args;
        for (size_t i = 0; i < k.params.size(); i++) {
            const TileKernelParam &param = k.params[i];
            if (param.is_buffer) {
                memcpy(values[i].data(), &pointers.at(param.name), 8);
            } else if (param.type == Float(32)) {
                EXPECT_EQ(param.name, "epilogue.alpha");
                memcpy(values[i].data(), &pr.alpha, 4);
            } else {
                memcpy(values[i].data(), &ints.at(param.name), 4);
            }
            args.push_back(values[i].data());
        }
        if (k.shared_bytes > 48 * 1024) {
            EXPECT_EQ(
                cuFuncSetAttribute(f, 8 /* MAX_DYNAMIC_SHARED_SIZE_BYTES */, int(k.shared_bytes)),
                0);
        }
        const std::vector<int> grid = pr.grid();
        if (cuLaunchKernel(f, grid[0], grid[1], 1, k.threads, 1, 1, unsigned(k.shared_bytes),
                           nullptr, args.data(), nullptr) != 0 ||
            cuCtxSynchronize() != 0) {
            *error = fake_cuda_kernel_error();
            return {};
        }
        std::vector<unsigned char> c(c_bytes);
        EXPECT_EQ(cuMemcpyDtoH_v2(c.data(), pointers.at("C"), c.size()), 0);
        return c;
    }
};

}  // namespace

TEST_P(TileBlockGemmOnCpu, MatchesFloat64AndTheInterpreterInBothThreadOrders) {
    const BlockCase &bc = GetParam();
    const Problem pr(bc.tiling, bc.M, bc.N, bc.K, 2024, bc.padded, bc.offset);
    const std::vector<unsigned char> meant = pr.meant();
    EXPECT_LT(pr.worst_error(meant), pr.g.out == Float(32) ? 1e-5 : 2e-3) << "the interpreter";
    for (bool reversed : {false, true}) {
        SCOPED_TRACE(reversed ? "threads highest first" : "threads lowest first");
        const ThreadOrder order(reversed);
        std::string error;
        const std::vector<unsigned char> c = run(pr, &error);
        ASSERT_FALSE(c.empty()) << error;
        // f32 accumulation of exact products; an f16 or bf16 result adds
        // its rounding.
        EXPECT_LT(pr.worst_error(c), pr.g.out == Float(32)   ? 1e-5
                                     : pr.g.out == Float(16) ? 2e-3
                                                             : 1e-2);
        // The same sums in the same order: every element to the bit.
        int differing = 0;
        for (int i = 0; i < pr.M; i++) {
            const size_t row = size_t(i) * pr.sc * pr.out_bytes();
            differing += memcmp(&c[row], &meant[row], pr.N * pr.out_bytes()) != 0;
        }
        EXPECT_EQ(differing, 0) << "rows differing from the interpreter's";
    }
}

namespace {

GemmTiling tiling(Type in, Type out, int bm, int bn, int bk, int wm, int wn, int stages) {
    GemmTiling g;
    g.in = in;
    g.out = out;
    g.bm = bm, g.bn = bn, g.bk = bk;
    g.warps_m = wm, g.warps_n = wn;
    g.stages = stages;
    return g;
}

std::vector<BlockCase> block_cases() {
    std::vector<BlockCase> cases = {
        {"f16_64x64x32_2x2w_3s_to_f32", tiling(Float(16), Float(32), 64, 64, 32, 2, 2, 3), 150, 97,
         77},
        {"bf16_64x64x32_2x2w_3s_to_bf16", tiling(BFloat(16), BFloat(16), 64, 64, 32, 2, 2, 3), 150,
         97, 77},
        {"f16_128x128x32_2x2w_3s_to_f16", tiling(Float(16), Float(16), 128, 128, 32, 2, 2, 3), 130,
         75, 70},
        {"bf16_64x32x32_4x1w_2s_to_f32", tiling(BFloat(16), Float(32), 64, 32, 32, 4, 1, 2), 70, 41,
         100},
        // One 16 x 8 fragment per warp: B by ldmatrix .x2.
        {"f16_32x16x16_2x2w_4s_to_f32", tiling(Float(16), Float(32), 32, 16, 16, 2, 2, 4), 45, 29,
         50},
    };
    GemmTiling t = tiling(Float(16), Float(32), 64, 64, 32, 2, 2, 3);
    t.b_transposed = true;  // into a row-major slot: element by element
    cases.push_back({"f16_transposed_b_by_elements", t, 150, 97, 77});
    t = tiling(BFloat(16), Float(32), 64, 64, 32, 2, 2, 3);
    t.b_transposed = t.b_shared_transposed = true;  // chunks along k, ldmatrix without .trans
    cases.push_back({"bf16_transposed_b_by_chunks", t, 150, 97, 77});
    t = tiling(Float(16), Float(32), 32, 16, 16, 2, 2, 2);
    t.b_transposed = t.b_shared_transposed = true;  // .x2 without .trans
    cases.push_back({"f16_transposed_b_by_chunks_one_fragment", t, 45, 29, 50});
    t = tiling(BFloat(16), Float(32), 64, 64, 32, 2, 2, 3);
    t.a_transposed = true;  // chunks along m, ldmatrix .x4.trans for A
    cases.push_back({"bf16_transposed_a_by_chunks", t, 150, 97, 77});
    t = tiling(Float(16), Float(32), 32, 16, 16, 2, 2, 2);
    t.a_transposed = t.b_transposed = t.b_shared_transposed = true;
    cases.push_back({"f16_both_transposed_one_fragment", t, 45, 29, 50});
    t = tiling(Float(16), Float(16), 64, 64, 32, 2, 2, 3);
    t.bias = t.residual = true;
    t.epilogue = bias_residual_epilogue(Float(16));
    cases.push_back({"f16_epilogue_alpha_bias_residual_to_f16", t, 150, 97, 77});
    // Rows and starts that 16-byte chunks cannot take (cp.async's source
    // must be aligned to its size; the stand-in fails a launch that is
    // not): each copy checks at run time and takes 4-byte cp.async or
    // plain loads instead. K = 77, N = 97: odd row strides (element by
    // element).
    cases.push_back({"f16_unpadded_odd_rows_by_elements",
                     tiling(Float(16), Float(32), 64, 64, 32, 2, 2, 3), 150, 97, 77, false});
    cases.push_back({"f16_128x128x32_unpadded_odd_rows_by_elements",
                     tiling(Float(16), Float(16), 128, 128, 32, 2, 2, 3), 130, 75, 77, false});
    // K = 90, N = 98: even strides, no multiple of 8 (4-byte cp.async).
    cases.push_back({"bf16_unpadded_even_rows_by_4_byte_copies",
                     tiling(BFloat(16), BFloat(16), 64, 64, 32, 2, 2, 3), 150, 98, 90, false});
    // A and B 2 bytes past an aligned start (element by element), or 4
    // (4-byte cp.async).
    cases.push_back({"f16_start_offset_2_bytes_by_elements",
                     tiling(Float(16), Float(32), 64, 64, 32, 2, 2, 3), 150, 97, 77, true, 2});
    cases.push_back({"bf16_start_offset_4_bytes_by_4_byte_copies",
                     tiling(BFloat(16), Float(32), 64, 32, 32, 4, 1, 2), 70, 41, 100, true, 4});
    t = tiling(BFloat(16), Float(32), 64, 64, 32, 2, 2, 3);
    t.b_transposed = t.b_shared_transposed = true;  // B's rows (k) of 77 elements
    cases.push_back({"bf16_transposed_b_by_chunks_unpadded_odd_rows", t, 150, 97, 77, false});
    t = tiling(BFloat(16), Float(32), 64, 64, 32, 2, 2, 3);
    t.a_transposed = true;  // A's rows (m) of 150 elements
    cases.push_back({"bf16_transposed_a_by_chunks_unpadded_even_rows", t, 150, 97, 90, false});
    // K long enough that the main loop's first steps copy whole tiles
    // (unmasked cp.async, decided before the loop), the last ones masked;
    // blocks wholly inside M and N and blocks at their edges; K a multiple
    // of the tile or not.
    cases.push_back({"f16_128x128x32_long_k_unmasked_steps",
                     tiling(Float(16), Float(32), 128, 128, 32, 2, 2, 3), 200, 150, 300});
    cases.push_back({"f16_64x64x32_k_a_multiple_of_the_tile",
                     tiling(Float(16), Float(16), 64, 64, 32, 2, 2, 3), 128, 192, 256});
    cases.push_back({"bf16_64x32x32_4x1w_2s_long_k",
                     tiling(BFloat(16), BFloat(16), 64, 32, 32, 4, 1, 2), 130, 70, 260});
    cases.push_back({"f16_32x16x16_2x2w_4s_long_k",
                     tiling(Float(16), Float(32), 32, 16, 16, 2, 2, 4), 45, 29, 200});
    t = tiling(BFloat(16), Float(32), 64, 64, 32, 2, 2, 3);
    t.a_transposed = true;
    cases.push_back({"bf16_transposed_a_by_chunks_long_k", t, 150, 97, 200});
    t = tiling(Float(16), Float(32), 64, 64, 32, 2, 2, 3);
    t.b_transposed = t.b_shared_transposed = true;
    cases.push_back({"f16_transposed_b_by_chunks_long_k", t, 150, 97, 200});
    t = tiling(Float(16), Float(16), 64, 64, 32, 2, 2, 3);
    t.bias = t.residual = true;
    t.epilogue = bias_residual_epilogue(Float(16));
    cases.push_back({"f16_epilogue_long_k", t, 150, 97, 250});
    // The same long K with rows that 16-byte chunks cannot take: the
    // versioned loop's other side.
    cases.push_back({"bf16_long_k_unpadded_even_rows_by_4_byte_copies",
                     tiling(BFloat(16), BFloat(16), 64, 64, 32, 2, 2, 3), 150, 98, 250, false});
    return cases;
}

}  // namespace

INSTANTIATE_TEST_SUITE_P(All, TileBlockGemmOnCpu, ::testing::ValuesIn(block_cases()),
                         [](const auto &info) { return info.param.name; });

TEST_F(TileBlockGemmOnCpu, APlantedPipelineMistakeIsCaught) {
    // Without the wait the step's copies have not landed when ldmatrix
    // reads the slot (the stand-in's shared memory starts as NaNs); read
    // from the wrong slot, the product takes the wrong tiles of K. The
    // copies of rows of 90 elements (4-byte cp.async) are in flight until
    // waited for as well.
    for (int mistake = 0; mistake < 3; mistake++) {
        GemmTiling g = tiling(Float(16), Float(32), 64, 64, 32, 2, 2, 3);
        (mistake == 1 ? g.plant_wrong_slot : g.plant_missing_wait) = true;
        SCOPED_TRACE(mistake == 0   ? "missing wait"
                     : mistake == 1 ? "wrong slot"
                                    : "missing wait, 4-byte copies");
        const Problem pr =
            mistake == 2 ? Problem(g, 150, 98, 90, 7, false) : Problem(g, 150, 97, 77, 7);
        std::string error;
        const std::vector<unsigned char> c = run(pr, &error);
        ASSERT_FALSE(c.empty()) << error;
        EXPECT_GT(pr.worst_error(c), 1e-2);
    }
}

namespace {

// Each thread copies 8 halves of src + shift into shared memory by
// cp.async of 16 bytes (or 4 of 4), then writes them to dst.
const char *kCopyKernels = R"(
extern "C" __global__ void __launch_bounds__(32) copy_16(const unsigned short *src, unsigned short *dst, int shift) {
    extern __shared__ __align__(16) unsigned char loom_shared_memory[];
    unsigned short *s = reinterpret_cast<unsigned short *>(loom_shared_memory);
    loom_cp_async_16(s + threadIdx.x * 8, src + shift + threadIdx.x * 8, 16);
    loom_cp_async_commit();
    loom_cp_async_wait<0>();
    __syncthreads();
    for (int i = 0; i < 8; i++) dst[threadIdx.x * 8 + i] = s[threadIdx.x * 8 + i];
}
extern "C" __global__ void __launch_bounds__(32) copy_4(const unsigned short *src, unsigned short *dst, int shift) {
    extern __shared__ __align__(16) unsigned char loom_shared_memory[];
    unsigned short *s = reinterpret_cast<unsigned short *>(loom_shared_memory);
    for (int i = 0; i < 4; i++) {
        loom_cp_async_4(s + threadIdx.x * 8 + 2 * i, src + shift + threadIdx.x * 8 + 2 * i, 4);
    }
    loom_cp_async_commit();
    loom_cp_async_wait<0>();
    __syncthreads();
    for (int i = 0; i < 8; i++) dst[threadIdx.x * 8 + i] = s[threadIdx.x * 8 + i];
}
)";

class CpAsyncOnCpu : public ::testing::Test, public StandInSession {
  protected:
    void SetUp() override { start_session(); }
    void TearDown() override { end_session(); }
};

}  // namespace

TEST_F(CpAsyncOnCpu, AMisalignedGlobalSourceFailsTheLaunch) {
    // A GPU fails a cp.async whose global address is not a multiple of its
    // size (misaligned address); so does the stand-in, so that a kernel
    // that would fault on a GPU fails its tests.
    const std::string source = std::string("// Generated by Loom. (by hand: cp.async)\n") +
                               internal::cuda_source("cp_async") + kCopyKernels;
    void *module = nullptr;
    ASSERT_EQ(cuModuleLoadData(&module, source.c_str()), 0) << fake_cuda_kernel_error();
    std::vector<uint16_t> src(32 * 8 + 8);
    for (size_t i = 0; i < src.size(); i++) src[i] = uint16_t(i * 7 + 1);
    const unsigned long long S = device(src.data(), src.size() * 2), D = device(nullptr, 32 * 16);
    struct Try {
        const char *kernel;
        int shift;  // in halves
        bool fails;
    };
    for (const Try t : {Try{"copy_16", 0, false}, Try{"copy_16", 8, false}, Try{"copy_16", 1, true},
                        Try{"copy_16", 4, true}, Try{"copy_4", 2, false}, Try{"copy_4", 1, true}}) {
        SCOPED_TRACE(std::string(t.kernel) + " from " + std::to_string(2 * t.shift) +
                     " bytes past an aligned start");
        void *f = nullptr;
        ASSERT_EQ(cuModuleGetFunction(&f, module, t.kernel), 0);
        unsigned long long s = S, d = D;
        int shift = t.shift;
        void *args[] = {&s, &d, &shift};
        const int launched = cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 512, nullptr, args, nullptr);
        const int status = launched != 0 ? launched : cuCtxSynchronize();
        if (t.fails) {
            EXPECT_NE(status, 0);
            EXPECT_NE(std::string(fake_cuda_kernel_error()).find("misaligned address"),
                      std::string::npos)
                << fake_cuda_kernel_error();
            continue;
        }
        ASSERT_EQ(status, 0) << fake_cuda_kernel_error();
        std::vector<uint16_t> out(32 * 8);
        ASSERT_EQ(cuMemcpyDtoH_v2(out.data(), D, out.size() * 2), 0);
        EXPECT_EQ(memcmp(out.data(), src.data() + t.shift, out.size() * 2), 0);
    }
}

namespace {

/** GELU (tanh's approximation) of acc + bias(j), in `out`. */
Expr gelu_epilogue(Type out) {
    const Expr x = Variable::make(Float(32), "_0") + Variable::make(Float(32), "_1");
    return cast(out, 0.5f * x * (1.0f + tanh(0.7978845608f * (x + 0.044715f * x * x * x))));
}

}  // namespace

TEST_F(TileBlockGemmOnCpu, GeluEpilogueMatchesFloat64AndTheInterpreter) {
    // A map through tanhf: to bf16, against float64 and the interpreter
    // (whose tanh is the host's: CUDA's tanhf on a GPU may differ in the
    // last place, so up to one bf16 step apart).
    GemmTiling g = tiling(Float(16), BFloat(16), 64, 64, 32, 2, 2, 3);
    g.bias = true;
    g.epilogue = gelu_epilogue(BFloat(16));
    Problem pr(g, 150, 97, 77, 11);
    pr.gelu = true;
    const std::vector<unsigned char> meant = pr.meant();
    EXPECT_LT(pr.worst_error(meant), 1e-2) << "the interpreter";
    for (bool reversed : {false, true}) {
        SCOPED_TRACE(reversed ? "threads highest first" : "threads lowest first");
        const ThreadOrder order(reversed);
        std::string error;
        const std::vector<unsigned char> c = run(pr, &error);
        ASSERT_FALSE(c.empty()) << error;
        EXPECT_LT(pr.worst_error(c), 1e-2);
        int apart = 0;
        for (int i = 0; i < pr.M; i++) {
            for (int j = 0; j < pr.N; j++) {
                const double got = pr.out_value(c, i, j), want = pr.out_value(meant, i, j);
                apart += !(std::fabs(got - want) <= std::fabs(want) / 128 + 1e-30);
            }
        }
        EXPECT_EQ(apart, 0) << "elements more than a bf16 step from the interpreter's";
    }
}

TEST_F(TileBlockGemmOnCpu, MapsTranslateMathIntrinsicsSelectsAndComparisons) {
    // An epilogue of every math intrinsic (f32 and f64), abs, selects on
    // comparisons joined by &&, || and !, and casts through int32, f16 and
    // bf16, against the interpreter: the same accumulator to the bit, then
    // the host's math here and the stand-in's (the same library), so the
    // results agree up to the last places of the transcendental functions.
    GemmTiling g = tiling(BFloat(16), Float(32), 64, 64, 32, 2, 2, 3);
    g.bias = true;
    const Expr x = Variable::make(Float(32), "_0") + Variable::make(Float(32), "_1");
    const Expr ax = abs(x), xd = cast(Float(64), x);
    Expr e = select(x > 0.0f && !(x >= 3.0f), exp(-ax),
                    select(x < -1.0f || x == 0.5f, log(ax + 1.0f), sqrt(ax) * rsqrt(ax + 1.0f)));
    e += floor(x) + ceil(x) * 0.5f + round(x * 2.0f) * 0.25f + pow(ax + 1.0f, 0.5f);
    e += sin(x) + cos(x) + erf(x) + tanh(x);
    e += cast(Float(32), tanh(xd) * exp(-abs(xd)) + sqrt(abs(xd)) + floor(xd * 3.0) + round(xd) +
                             pow(abs(xd) + 1.0, 1.5));
    e += cast(Float(32), cast(Int(32), x * 4.0f)) * 0.125f +
         cast(Float(32), abs(cast(Int(32), x * -3.0f))) +
         select(x != 0.0f, cast(Float(32), cast(Float(16), x)), 0.0f) -
         cast(Float(32), cast(BFloat(16), x * 0.5f));
    g.epilogue = e;
    const Problem pr(g, 70, 41, 45, 13);
    const std::vector<unsigned char> meant = pr.meant();
    std::string error;
    const std::vector<unsigned char> c = run(pr, &error);
    ASSERT_FALSE(c.empty()) << error;
    double worst = 0;
    int nan = 0;
    for (int i = 0; i < pr.M; i++) {
        for (int j = 0; j < pr.N; j++) {
            const double got = pr.out_value(c, i, j), want = pr.out_value(meant, i, j);
            nan += std::isnan(got) || std::isnan(want);
            worst = std::max(worst, std::fabs(got - want) / (std::fabs(want) + 1));
        }
    }
    EXPECT_EQ(nan, 0);
    EXPECT_LT(worst, 1e-5);
}

TEST(TileBlockGemmThroughNvrtc, FourWarps128x128x32ThreeStagesUseTensorCoresWithoutSpills) {
    std::string why;
    if (!internal::nvrtc_available(&why)) GTEST_SKIP() << why;
    // The plain block, one with the bias and residual epilogue (bf16), one
    // with B transposed into chunks along k.
    std::vector<std::string> kernels;
    GemmTiling g = tiling(Float(16), Float(16), 128, 128, 32, 2, 2, 3);
    std::vector<std::pair<std::string, GemmTiling>> variants = {{"gemm_128", g}};
    g.in = g.out = BFloat(16);
    g.bias = g.residual = true;
    g.epilogue = bias_residual_epilogue(BFloat(16));
    variants.push_back({"gemm_128_epilogue", g});
    g = tiling(Float(16), Float(32), 128, 128, 32, 2, 2, 3);
    g.b_transposed = g.b_shared_transposed = true;
    variants.push_back({"gemm_128_transposed_b", g});
    for (auto &[name, tiling] : variants) {
        TileProgram p = gemm_program(tiling);
        p.name = name;
        std::vector<TileBuffer> buffers = {
            {"A", tiling.in}, {"B", tiling.in}, {"C", tiling.out, 2, true}};
        if (tiling.bias) buffers.push_back({"bias", Float(32), 1});
        if (tiling.residual) buffers.push_back({"R", tiling.out});
        const TileKernelSource k = tile_program_to_cuda(p, buffers);
        EXPECT_EQ(k.threads, 128);
        EXPECT_EQ(k.shared_bytes, 3 * (128 * 32 + 32 * 128) * 2);
        kernels.push_back(k.source);
    }
    const std::string source = tile_module_source(kernels);
    for (const char *arch : {"sm_80", "sm_90a"}) {
        SCOPED_TRACE(arch);
        internal::CudaBinary bin =
            internal::compile_cuda(source, "tile_block_gemm", arch, {"--ptxas-options=-v"});
        for (const char *instruction : {"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
                                        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
                                        "ldmatrix.sync.aligned.m8n8.x4.shared.b16",
                                        "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16",
                                        "cp.async.cg.shared.global", "cp.async.wait_group 1"}) {
            EXPECT_NE(bin.ptx.find(instruction), std::string::npos) << instruction;
        }
        // ptxas, per kernel: no spills, no stack. Its counts of registers
        // go to the test's output.
        std::istringstream log(bin.log);
        for (std::string line; std::getline(log, line);) {
            if (line.find("entry function") != std::string::npos ||
                line.find("Used") != std::string::npos) {
                std::cout << line << "\n";
            }
        }
        size_t clean = 0;
        for (size_t at =
                 bin.log.find("0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads");
             at != std::string::npos;
             at = bin.log.find("0 bytes stack frame, 0 bytes spill stores", at + 1)) {
            clean++;
        }
        EXPECT_EQ(clean, variants.size()) << bin.log;
        const std::string nvdisasm = find_nvdisasm();
        if (nvdisasm.empty()) continue;  // the SASS needs nvdisasm
        const std::string sass = sass_of(bin.cubin, nvdisasm);
        for (const char *op : {"HMMA.16816.F32", "HMMA.16816.F32.BF16", "LDSM.16.M88.4",
                               "LDSM.16.MT88.4", "LDGSTS", "DEPBAR"}) {
            EXPECT_NE(sass.find(op), std::string::npos) << "no " << op;
        }
        EXPECT_EQ(sass.find("STL"), std::string::npos) << "local memory stores (spills)";
    }
}

// The main loop of a 128 x 128 x 32 block on 2 x 2 warps (each warp 64 x
// 64: 64 HMMA per step of k) issues little besides its tensor-core,
// ldmatrix and cp.async instructions: the copies' alignment is decided
// before the loop and their masks only at the edges, the slots rotate, and
// the per-thread parts of the addresses are computed once. (It issued ~9
// instructions per HMMA before.)
TEST(TileBlockGemmThroughNvrtc, MainLoopIssuesFewInstructionsBesidesTensorCores) {
    std::string why;
    if (!internal::nvrtc_available(&why)) GTEST_SKIP() << why;
    const std::string nvdisasm = find_nvdisasm();
    if (nvdisasm.empty()) GTEST_SKIP() << "no nvdisasm (pip install nvidia-cuda-nvdisasm)";
    std::vector<std::pair<std::string, GemmTiling>> variants;
    GemmTiling g = tiling(Float(16), Float(16), 128, 128, 32, 2, 2, 3);
    variants.push_back({"gemm_128", g});
    g = tiling(BFloat(16), BFloat(16), 128, 128, 32, 2, 2, 3);
    g.bias = g.residual = true;
    g.epilogue = bias_residual_epilogue(BFloat(16));
    variants.push_back({"gemm_128_epilogue", g});
    g = tiling(Float(16), Float(32), 128, 128, 32, 2, 2, 3);
    g.b_transposed = g.b_shared_transposed = true;
    variants.push_back({"gemm_128_transposed_b", g});
    for (auto &[name, tiling] : variants) {
        SCOPED_TRACE(name);
        TileProgram p = gemm_program(tiling);
        p.name = name;
        std::vector<TileBuffer> buffers = {
            {"A", tiling.in}, {"B", tiling.in}, {"C", tiling.out, 2, true}};
        if (tiling.bias) buffers.push_back({"bias", Float(32), 1});
        if (tiling.residual) buffers.push_back({"R", tiling.out});
        const std::string source = tile_module_source({tile_program_to_cuda(p, buffers).source});
        for (const char *arch : {"sm_80", "sm_90a"}) {
            SCOPED_TRACE(arch);
            const internal::CudaBinary bin = internal::compile_cuda(source, name, arch, {});
            // The fast loop: the shortest with tensor-core instructions.
            std::vector<std::string> fast;
            for (const std::vector<std::string> &loop : sass_loops(sass_of(bin.cubin, nvdisasm))) {
                const bool mma = std::any_of(loop.begin(), loop.end(), [](const std::string &op) {
                    return op.compare(0, 4, "HMMA") == 0;
                });
                if (mma && (fast.empty() || loop.size() < fast.size())) fast = loop;
            }
            std::map<std::string, int> ops;
            for (const std::string &op : fast) ops[op.substr(0, op.find('.'))]++;
            std::printf("[main loop] %s %s: %zu instructions, %d HMMA, %d LDSM, %d LDGSTS\n",
                        name.c_str(), arch, fast.size(), ops["HMMA"], ops["LDSM"], ops["LDGSTS"]);
            EXPECT_EQ(ops["HMMA"], 64);
            EXPECT_EQ(ops["LDSM"], 16);
            EXPECT_EQ(ops["LDGSTS"], 8);
            // 88 of them the work itself; at most ~60 more (it was ~500).
            EXPECT_LT(int(fast.size()), 150);
            // No mask arithmetic of partial chunks, and the thread index
            // read once at most: the general version after the fast loop
            // (each copy choosing its path) keeps it live, and ptxas rereads
            // it per step (one S2R) rather than holding a register.
            EXPECT_LE(ops["S2R"], 1);
            EXPECT_EQ(ops["VIMNMX"] + ops["IMNMX"], 0);
        }
    }
}
