// A stand-in for the CUDA driver (libcuda.so.1) that runs without a GPU, for
// testing Loom's CUDA runtime: device memory is host memory, copies are
// memcpy, and a launch calls a hook set by the test. Every entry point
// counts its calls and can be told to fail. Launches keep a GPU's limits:
// at most 1024 threads a block, and dynamic shared memory past 48 KiB only
// up to what cuFuncSetAttribute allowed the function. Loom's runtime loads
// it through LOOM_CUDA_DRIVER.
//
// Told to run kernels (LOOM_FAKE_CUDA_RUN_KERNELS=1, or
// fake_cuda_run_kernels), it refuses cubins and PTX, as a driver for another
// GPU would, and loads the CUDA C++ source that Loom's JIT code offers next:
// compiled for the CPU with the host's C++ compiler (cuda_on_cpu.h says how
// blocks and threads run), the kernels then run at each launch, so that GPU
// pipelines can be checked against the interpreter without a GPU. A kernel
// that faults (a __trap, a barrier not every thread reaches) makes the next
// wait fail with CUDA_ERROR_LAUNCH_FAILED, and fake_cuda_kernel_error says
// why. Each allocation ends at a page that faults, so an access past its
// end stops the process there. With LOOM_FAKE_CUDA_REVERSED=1 (read at
// each launch) the threads between two barriers, and the blocks, run
// highest first: a kernel with a race computes something else than in the
// default order.
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

/** Whether kernels run on the CPU (see above); the default is
 * LOOM_FAKE_CUDA_RUN_KERNELS, read again by fake_cuda_reset. */
void fake_cuda_run_kernels(int run);
/** Why the last kernel run on the CPU failed, or why its module did not
 * compile; "" when none has. */
const char *fake_cuda_kernel_error(void);

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
