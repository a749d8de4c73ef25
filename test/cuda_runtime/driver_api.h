// The CUDA driver entry points the stand-in's tests call directly
// (test/fake_cuda implements them).
#pragma once

#include <cstddef>

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
