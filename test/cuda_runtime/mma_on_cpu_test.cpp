// The tensor-core instruction families (src/codegen/cuda/mma.cuh,
// ldmatrix.cuh, cp_async.cuh) on the stand-in driver, which runs mma.sync
// and ldmatrix as warp-collective steps with the PTX ISA's fragment layouts
// and lands cp.async copies only when their group is waited for: a warp's
// 16 x 16 by 16 x 8 product in f16 and bf16 against a float64 reference,
// the same staged through shared memory, a planted fragment-layout mistake
// and a missing wait seen to be caught, a partial warp refused, and the
// same source through NVRTC for sm_80 and sm_90a issuing the instructions.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "codegen/CudaSources.h"
#include "codegen/NVRTC.h"
#include "driver_api.h"
#include "fake_cuda.h"
#include "loom/loom.h"

namespace {

/** Kernels written by hand as the tile layer will emit them: each lane
 * gathers its fragments of A (16 x 16, row-major halves) and B (16 x 8,
 * row-major, k x n) by the PTX ISA's layout, the warp multiplies, each
 * lane scatters its accumulator registers into D (16 x 8 floats).
 * `swapped` gathers A with registers 1 and 2 exchanged: a layout mistake. */
const char *kMmaKernels = R"(
template <bool swapped>
__device__ void loom_test_mma(const unsigned short *A, const unsigned short *B, float *D, bool bf16) {
    const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    unsigned a[4], b[2];
    for (int j = 0; j < 4; j++) {
        const int jj = swapped && (j == 1 || j == 2) ? 3 - j : j;
        unsigned w = 0;
        for (int h = 0; h < 2; h++) {
            const int i = 2 * jj + h;
            const int r = g + 8 * (i / 2 % 2), k = 2 * t + i % 2 + 8 * (i / 4);
            w |= unsigned(A[r * 16 + k]) << (16 * h);
        }
        a[j] = w;
    }
    for (int j = 0; j < 2; j++) {
        unsigned w = 0;
        for (int h = 0; h < 2; h++) {
            const int i = 2 * j + h;
            const int k = 2 * t + i % 2 + 8 * (i / 2), n = g;
            w |= unsigned(B[k * 8 + n]) << (16 * h);
        }
        b[j] = w;
    }
    float c[4] = {0.5f, 0.5f, 0.5f, 0.5f}, d[4];
    if (bf16) loom_mma_m16n8k16_bf16(d, a, b, c);
    else loom_mma_m16n8k16_f16(d, a, b, c);
    for (int i = 0; i < 4; i++) D[(g + 8 * (i / 2)) * 8 + 2 * t + i % 2] = d[i];
}
extern "C" __global__ void __launch_bounds__(32) mma_f16(const unsigned short *A, const unsigned short *B, float *D) {
    loom_test_mma<false>(A, B, D, false);
}
extern "C" __global__ void __launch_bounds__(32) mma_bf16(const unsigned short *A, const unsigned short *B, float *D) {
    loom_test_mma<false>(A, B, D, true);
}
// A and B staged into shared memory with cp.async, read into fragments
// with ldmatrix (A: x4; B: x2.trans, its rows being k), multiplied. Without
// the wait, the copies have not landed when ldmatrix reads.
extern "C" __global__ void __launch_bounds__(32) staged_mma(const unsigned short *A, const unsigned short *B, float *D, int wait) {
    extern __shared__ __align__(16) unsigned char loom_shared_memory[];
    unsigned short *As = reinterpret_cast<unsigned short *>(loom_shared_memory);
    unsigned short *Bs = As + 16 * 16;
    const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    loom_cp_async_16(As + lane * 8, A + lane * 8, 16);
    if (lane < 16) loom_cp_async_16(Bs + lane * 8, B + lane * 8, 16);
    loom_cp_async_commit();
    if (wait) loom_cp_async_wait<0>();
    __syncthreads();
    unsigned a[4], b[2];
    const int j = lane / 8, r = lane % 8;
    loom_ldmatrix_x4(a, As + ((j % 2) * 8 + r) * 16 + (j / 2) * 8);
    loom_ldmatrix_x2_trans(b, Bs + (lane % 16) * 8);
    float c[4] = {0.5f, 0.5f, 0.5f, 0.5f}, d[4];
    loom_mma_m16n8k16_f16(d, a, b, c);
    for (int i = 0; i < 4; i++) D[(g + 8 * (i / 2)) * 8 + 2 * t + i % 2] = d[i];
}
extern "C" __global__ void __launch_bounds__(32) mma_f16_swapped(const unsigned short *A, const unsigned short *B, float *D) {
    loom_test_mma<true>(A, B, D, false);
}
)";

/** nvdisasm: $NVDISASM, on the PATH, or from the pip package
 * nvidia-cuda-nvdisasm; empty if none. */
std::string find_nvdisasm() {
    if (const char *p = getenv("NVDISASM"); p && *p) return p;
    const char *probe =
        "command -v nvdisasm 2>/dev/null || python3 -c \"import glob, nvidia; "
        "print((glob.glob(nvidia.__path__[0] + '/cu*/bin/nvdisasm') + [''])[0])\" 2>/dev/null";
    std::string out;
    if (FILE *f = popen(probe, "r")) {
        char buf[512];
        while (fgets(buf, sizeof buf, f)) out += buf;
        pclose(f);
    }
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    return out.substr(0, out.find('\n'));
}

/** The SASS of a cubin, by nvdisasm. */
std::string sass_of(const std::vector<char> &cubin, const std::string &nvdisasm) {
    char path[] = "/tmp/loom_mma_XXXXXX";
    const int fd = mkstemp(path);
    if (fd < 0) return "";
    close(fd);
    std::ofstream(path, std::ios::binary).write(cubin.data(), cubin.size());
    std::string out;
    if (FILE *f = popen((nvdisasm + " " + path + " 2>&1").c_str(), "r")) {
        char buf[4096];
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
        pclose(f);
    }
    unlink(path);
    return out;
}

std::string module_source() {
    return std::string("// Generated by Loom. (by hand: the mma tests)\n") +
           loom::internal::cuda_source("mma") + loom::internal::cuda_source("ldmatrix") +
           loom::internal::cuda_source("cp_async") + kMmaKernels;
}

uint16_t to_half(float f, bool bf16) {
    return bf16 ? loom::bfloat16_t(f).bits : loom::float16_t(f).bits;
}
float from_half(uint16_t h, bool bf16) {
    return bf16 ? float(loom::bfloat16_t::from_bits(h)) : float(loom::float16_t::from_bits(h));
}

class MmaOnCpu : public ::testing::Test, public StandInSession {
  protected:
    void *module = nullptr;
    void SetUp() override {
        start_session();
        const std::string source = module_source();
        ASSERT_EQ(cuModuleLoadData(&module, source.c_str()), 0) << fake_cuda_kernel_error();
    }
    void TearDown() override { end_session(); }
    /** Runs `kernel` with `threads` threads on random A and B; returns the
     * largest error against float64 relative to the sum of |terms|. */
    double max_error(const char *kernel, bool bf16, unsigned threads = 32, int *status = nullptr,
                     int wait = -1) {
        std::mt19937 rng(1234);
        std::normal_distribution<float> normal;
        std::vector<uint16_t> a(16 * 16), b(16 * 8);
        for (auto &x : a) x = to_half(normal(rng), bf16);
        for (auto &x : b) x = to_half(normal(rng), bf16);
        unsigned long long A = device(a.data(), a.size() * 2), B = device(b.data(), b.size() * 2),
                           D = device(nullptr, 16 * 8 * 4);
        void *f = nullptr;
        EXPECT_EQ(cuModuleGetFunction(&f, module, kernel), 0);
        void *args[] = {&A, &B, &D, &wait};
        const unsigned shared = wait >= 0 ? (16 * 16 + 16 * 8) * 2 : 0;
        EXPECT_EQ(cuLaunchKernel(f, 1, 1, 1, threads, 1, 1, shared, nullptr, args, nullptr), 0);
        const int r = cuCtxSynchronize();
        if (status) *status = r;
        if (r != 0) return INFINITY;
        std::vector<float> d(16 * 8);
        EXPECT_EQ(cuMemcpyDtoH_v2(d.data(), D, d.size() * 4), 0);
        double worst = 0;
        for (int m = 0; m < 16; m++) {
            for (int n = 0; n < 8; n++) {
                double want = 0.5, scale = 0.5;
                for (int k = 0; k < 16; k++) {
                    const double term = double(from_half(a[m * 16 + k], bf16)) *
                                        double(from_half(b[k * 8 + n], bf16));
                    want += term;
                    scale += std::fabs(term);
                }
                // A NaN (shared memory's fill, read before a copy landed)
                // is the worst error of all.
                const double e = std::fabs(d[m * 8 + n] - want) / scale;
                worst = std::isnan(e) ? INFINITY : std::max(worst, e);
            }
        }
        return worst;
    }
};

}  // namespace

TEST_F(MmaOnCpu, WarpProductMatchesFloat64) {
    // f32 accumulation of exact products: a few float32 roundings.
    EXPECT_LT(max_error("mma_f16", false), 1e-6);
    EXPECT_LT(max_error("mma_bf16", true), 1e-6);
}

TEST_F(MmaOnCpu, APlantedFragmentLayoutMistakeIsCaught) {
    EXPECT_GT(max_error("mma_f16_swapped", false), 1e-2);
}

TEST_F(MmaOnCpu, APartialWarpIsRefused) {
    int status = 0;
    max_error("mma_f16", false, 16, &status);
    EXPECT_NE(status, 0);
    EXPECT_NE(std::string(fake_cuda_kernel_error()).find("whole warp"), std::string::npos)
        << fake_cuda_kernel_error();
}

TEST_F(MmaOnCpu, StagedThroughCpAsyncAndLdmatrix) {
    EXPECT_LT(max_error("staged_mma", false, 32, nullptr, 1), 1e-6);
    // A missing wait: ldmatrix reads shared memory the copies have not
    // reached, and the product is wrong.
    EXPECT_GT(max_error("staged_mma", false, 32, nullptr, 0), 1e-2);
}

TEST(MmaThroughNvrtc, IssuesTheInstructionForSm80AndSm90a) {
    std::string why;
    if (!loom::internal::nvrtc_available(&why)) GTEST_SKIP() << why;
    for (const char *arch : {"sm_80", "sm_90a"}) {
        loom::internal::CudaBinary bin =
            loom::internal::compile_cuda(module_source(), "mma_test", arch);
        EXPECT_NE(bin.ptx.find("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"),
                  std::string::npos)
            << arch;
        EXPECT_NE(bin.ptx.find("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"),
                  std::string::npos)
            << arch;
        for (const char *instruction : {"ldmatrix.sync.aligned.m8n8.x4.shared.b16",
                                        "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16",
                                        "cp.async.cg.shared.global", "cp.async.wait_group 0"}) {
            EXPECT_NE(bin.ptx.find(instruction), std::string::npos) << arch << ": " << instruction;
        }
        EXPECT_FALSE(bin.cubin.empty()) << arch;
    }
}

TEST(MmaThroughNvrtc, MachineCodeUsesTensorCoresAndAsyncCopies) {
    std::string why;
    if (!loom::internal::nvrtc_available(&why)) GTEST_SKIP() << why;
    const std::string nvdisasm = find_nvdisasm();
    if (nvdisasm.empty()) GTEST_SKIP() << "no nvdisasm (pip install nvidia-cuda-nvdisasm)";
    for (const char *arch : {"sm_80", "sm_90a"}) {
        const std::string sass = sass_of(
            loom::internal::compile_cuda(module_source(), "mma_test", arch).cubin, nvdisasm);
        // HMMA: the tensor-core multiply; LDSM: ldmatrix; LDGSTS: cp.async.
        for (const char *op : {"HMMA.16816.F32", "HMMA.16816.F32.BF16", "LDSM.16.M88.4",
                               "LDSM.16.MT88.2", "LDGSTS", "LDGDEPBAR", "DEPBAR"}) {
            EXPECT_NE(sass.find(op), std::string::npos) << arch << ": no " << op << " in\n"
                                                        << sass.substr(0, 2000);
        }
    }
}
