// The CUDA driver entry points the stand-in's tests call directly
// (test/fake_cuda implements them), and a session with it.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdlib>
#include <string>
#include <vector>

#include "fake_cuda.h"

extern "C" {
int cuInit(unsigned);
int cuDevicePrimaryCtxRetain(void **ctx, int dev);
int cuCtxSetCurrent(void *ctx);
int cuCtxSynchronize(void);
int cuMemAlloc_v2(unsigned long long *p, size_t bytes);
int cuMemFree_v2(unsigned long long p);
int cuMemcpyDtoH_v2(void *dst, unsigned long long src, size_t bytes);
int cuMemcpyHtoD_v2(unsigned long long dst, const void *src, size_t bytes);
int cuModuleLoadData(void **module, const void *image);
int cuModuleGetFunction(void **function, void *module, const char *name);
int cuFuncSetAttribute(void *function, int attribute, int value);
int cuLaunchKernel(void *function, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                   unsigned bz, unsigned shared, void *stream, void **args, void **extra);
}

/** A test's session with the stand-in driver running kernels on the CPU: a
 * current context, and the device memory it allocated freed at the end.
 * Fixtures derive from it and ::testing::Test (or TestWithParam). */
class StandInSession {
  protected:
    std::vector<unsigned long long> allocations;

    void start_session() {
        fake_cuda_reset(1, 90);
        fake_cuda_run_kernels(1);
        void *ctx = nullptr;
        ASSERT_EQ(cuInit(0), 0);
        ASSERT_EQ(cuDevicePrimaryCtxRetain(&ctx, 0), 0);
        ASSERT_EQ(cuCtxSetCurrent(ctx), 0);
    }
    void end_session() {
        for (unsigned long long p : allocations) cuMemFree_v2(p);
        allocations.clear();
        fake_cuda_reset(1, 90);
    }
    /** `bytes` of device memory, holding a copy of `host` if given. */
    unsigned long long device(const void *host, size_t bytes) {
        unsigned long long p = 0;
        EXPECT_EQ(cuMemAlloc_v2(&p, bytes), 0);
        if (host) EXPECT_EQ(cuMemcpyHtoD_v2(p, host, bytes), 0);
        allocations.push_back(p);
        return p;
    }
};

/** Sets LOOM_FAKE_CUDA_REVERSED for the scope (the stand-in reads it at
 * each launch), then restores it. */
struct ThreadOrder {
    std::string before;
    bool was_set;
    explicit ThreadOrder(bool reversed) {
        const char *v = getenv("LOOM_FAKE_CUDA_REVERSED");
        was_set = v != nullptr;
        if (v) before = v;
        setenv("LOOM_FAKE_CUDA_REVERSED", reversed ? "1" : "0", 1);
    }
    ~ThreadOrder() {
        if (was_set) setenv("LOOM_FAKE_CUDA_REVERSED", before.c_str(), 1);
        else unsetenv("LOOM_FAKE_CUDA_REVERSED");
    }
};
