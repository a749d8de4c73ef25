// The tensor-core GEMM libraries (apps/gemm/tensor_core_gemm_generator.cpp),
// compiled ahead of time for sm_80 and called through their C ABI with host
// buffers, which the runtime copies to the GPU (loom_copy_to_host brings
// the output back, as the C ABI has a caller do). Built with the
// target feature cuda_source, they also carry their kernels' CUDA C++, so
// that the tests' stand-in driver (test/fake_cuda, chosen by
// LOOM_CUDA_DRIVER in apps/CMakeLists.txt) runs them on the CPU where there
// is no GPU. Sizes are no multiples of the tiles, and the rows of A are an
// odd number of halves (not 16-byte aligned).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "aot_descriptor.h"
#include "app_gemm_tc.h"
#include "app_gemm_tc_bias_residual.h"

namespace {

const loom_type_t kFloat32 = {loom_type_float, 32, 1};
const loom_type_t kFloat16 = {loom_type_float, 16, 1};
const loom_type_t kBFloat16 = {loom_type_bfloat, 16, 1};

uint16_t to_bfloat16(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1)) >> 16);
}
float from_bfloat16(uint16_t h) {
    const uint32_t x = uint32_t(h) << 16;
    float f;
    std::memcpy(&f, &x, 4);
    return f;
}

/** n random 16-bit values (half or bfloat16) and what they hold as floats. */
std::vector<uint16_t> random_16bit(size_t n, bool bf16, std::vector<float> *values, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-1, 1);
    std::vector<uint16_t> h(n);
    values->resize(n);
    for (size_t i = 0; i < n; i++) {
        const float f = dist(rng);
        h[i] = bf16 ? to_bfloat16(f) : loom_float_to_half(f);
        (*values)[i] = bf16 ? from_bfloat16(h[i]) : loom_half_to_float(h[i]);
    }
    return h;
}

/** LOOM_TEST_GPU_ON_CPU names the stand-in driver (apps/CMakeLists.txt):
 * the libraries' runtime loads it, and it runs their kernels' source. */
const bool stand_in = [] {
    const char *driver = std::getenv("LOOM_TEST_GPU_ON_CPU");
    if (!driver || !*driver) return false;
    setenv("LOOM_CUDA_DRIVER", driver, 1);
    setenv("LOOM_FAKE_CUDA_RUN_KERNELS", "1", 1);
    return true;
}();

/** Why there is no GPU to run on ("" when there is one, or the stand-in). */
std::string no_gpu() {
    int32_t capability = 0;
    if (stand_in || loom_cuda_device_capability(0, &capability) == 0) return "";
    return loom_last_error_message();
}

std::string last_error() {
    const char *m = loom_last_error_message();
    return m ? m : "(no message)";
}

/** The output back on the host, then every buffer's GPU memory freed. */
void finish(loom_buffer_t *out, std::initializer_list<loom_buffer_t *> all) {
    EXPECT_EQ(loom_copy_to_host(out), 0) << last_error();
    for (loom_buffer_t *b : all) EXPECT_EQ(loom_device_free(b), 0) << last_error();
}

}  // namespace

TEST(AppsGpuAot, TensorCoreGemm) {
    if (!no_gpu().empty()) GTEST_SKIP() << no_gpu();
    const int M = 150, N = 97, K = 77;
    std::vector<float> af, bf;
    std::vector<uint16_t> a = random_16bit(size_t(M) * K, false, &af, 1);
    std::vector<uint16_t> b = random_16bit(size_t(K) * N, false, &bf, 2);
    std::vector<float> c(size_t(M) * N);
    Descriptor da(a.data(), kFloat16, {M, K}), db(b.data(), kFloat16, {K, N}),
        dc(c.data(), kFloat32, {M, N});
    ASSERT_EQ(app_gemm_tc(da.raw(), db.raw(), dc.raw()), 0) << last_error();
    finish(dc.raw(), {da.raw(), db.raw(), dc.raw()});
    int bad = 0;
    for (int i = 0; i < M; i++) {
        for (int j = 0; j < N; j++) {
            double want = 0, mag = 0;
            for (int r = 0; r < K; r++) {
                want += double(af[size_t(i) * K + r]) * bf[size_t(r) * N + j];
                mag += std::fabs(double(af[size_t(i) * K + r]) * bf[size_t(r) * N + j]);
            }
            if (!(std::fabs(c[size_t(i) * N + j] - want) <= 1e-5 * (1 + mag)) && bad++ < 5) {
                ADD_FAILURE() << "C(" << i << ", " << j << ") = " << c[size_t(i) * N + j]
                              << ", want " << want;
            }
        }
    }
    EXPECT_EQ(bad, 0);
}

TEST(AppsGpuAot, TensorCoreGemmWithBiasAndResidualInBFloat16) {
    if (!no_gpu().empty()) GTEST_SKIP() << no_gpu();
    // B column-major (given as its transpose, N x K); C = A B + bias + R,
    // all bfloat16 but the bias.
    const int M = 70, N = 45, K = 100;
    std::vector<float> af, btf, rf;
    std::vector<uint16_t> a = random_16bit(size_t(M) * K, true, &af, 3);
    std::vector<uint16_t> bt = random_16bit(size_t(N) * K, true, &btf, 4);
    std::vector<uint16_t> r = random_16bit(size_t(M) * N, true, &rf, 5);
    std::vector<float> bias(N);
    for (int j = 0; j < N; j++) bias[j] = 0.25f * float(j % 7) - 0.75f;
    std::vector<uint16_t> c(size_t(M) * N);
    Descriptor da(a.data(), kBFloat16, {M, K}), db(bt.data(), kBFloat16, {N, K}),
        dbias(bias.data(), kFloat32, {N}), dr(r.data(), kBFloat16, {M, N}),
        dc(c.data(), kBFloat16, {M, N});
    ASSERT_EQ(app_gemm_tc_bias_residual(da.raw(), db.raw(), dbias.raw(), dr.raw(), dc.raw()), 0)
        << last_error();
    finish(dc.raw(), {da.raw(), db.raw(), dbias.raw(), dr.raw(), dc.raw()});
    int bad = 0;
    for (int i = 0; i < M; i++) {
        for (int j = 0; j < N; j++) {
            double want = bias[j] + rf[size_t(i) * N + j], mag = 0;
            for (int k = 0; k < K; k++) {
                const double p = double(af[size_t(i) * K + k]) * btf[size_t(j) * K + k];
                want += p;
                mag += std::fabs(p);
            }
            // One bfloat16 rounding of the result, plus float32 sums.
            const double got = from_bfloat16(c[size_t(i) * N + j]);
            if (!(std::fabs(got - want) <= std::fabs(want) / 128 + 1e-5 * (1 + mag)) && bad++ < 5) {
                ADD_FAILURE() << "C(" << i << ", " << j << ") = " << got << ", want " << want;
            }
        }
    }
    EXPECT_EQ(bad, 0);
}

TEST(AppsGpuAot, WrongElementTypeIsAnError) {
    std::vector<float> a(16 * 16), b(16 * 16), c(16 * 16);
    Descriptor da(a.data(), kFloat32, {16, 16}), db(b.data(), kFloat16, {16, 16}),
        dc(c.data(), kFloat32, {16, 16});
    EXPECT_NE(app_gemm_tc(da.raw(), db.raw(), dc.raw()), 0);
    EXPECT_NE(last_error().find("float16"), std::string::npos) << last_error();
}
