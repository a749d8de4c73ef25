// A stand-in for the CUDA driver (libcuda.so.1) that runs without a GPU, for
// testing Loom's CUDA runtime: device memory is host memory, copies are
// memcpy, and a launch calls a hook set by the test instead of running the
// kernel. Every entry point counts its calls and can be told to fail.
// Loom's runtime loads it through LOOM_CUDA_DRIVER.
#pragma once

#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>

extern "C" {

/** Forgets the calls, failures and hook; `devices` GPUs of `capability`. */
void fake_cuda_reset(int devices, int capability);
/** Calls of a driver entry point (e.g. "cuMemcpyHtoD_v2") since the reset. */
int fake_cuda_calls(const char *entry);
/** The next call of `entry` returns `error` (a CUresult); called twice,
 * the next two calls fail, and so on. */
void fake_cuda_fail_next(const char *entry, int error);
/** Whether cuModuleLoadData refuses cubins (ELF images), as a driver for
 * another GPU would; it then loads PTX only. */
void fake_cuda_refuse_cubin(int refuse);
/** Live device allocations and their bytes. */
int fake_cuda_live_allocations(void);
/** Whether [p, p + bytes) lies inside one live device allocation. */
int fake_cuda_is_device_memory(unsigned long long p, size_t bytes);

/** The stream (CUstream) of the last launch or asynchronous copy; null
 * for the legacy default stream. */
void *fake_cuda_last_stream(void);

typedef void (*fake_cuda_launch_hook_t)(const char *kernel, const unsigned grid[3],
                                        const unsigned block[3], unsigned shared_bytes, void **args,
                                        void *user);
/** Called by every cuLaunchKernel, with its arguments, in place of a GPU. */
void fake_cuda_set_launch_hook(fake_cuda_launch_hook_t hook, void *user);
}

/** Points Loom's runtime (LOOM_CUDA_DRIVER) at this stand-in, which the test
 * links, so that both use one instance of it. True once done; a test file
 * runs it at start-up: `const bool selected = fake_cuda_select();`. */
inline bool fake_cuda_select() {
    Dl_info info;
    if (!dladdr(reinterpret_cast<void *>(&fake_cuda_reset), &info) || !info.dli_fname) return false;
    return setenv("LOOM_CUDA_DRIVER", info.dli_fname, 1) == 0;
}
