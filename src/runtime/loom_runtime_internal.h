// Private declarations shared by the runtime's source files.
//
// The runtime is compiled twice: into libloom (for JIT-compiled code) and, with
// LOOM_RUNTIME_AOT defined, into the objects that compile_to_static_library
// puts next to every AOT pipeline. The AOT build must depend on nothing but
// libc, libpthread and libm, so that a C program can link a Loom library with
// no C++ runtime: no exceptions, no RTTI, no operator new, no std::thread,
// no std::string, no function-local statics with dynamic initialization.
#ifndef LOOM_RUNTIME_INTERNAL_H
#define LOOM_RUNTIME_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "loom/runtime/loom_runtime.h"

// Every runtime definition is weak in AOT libraries: two Loom libraries linked
// into one program each carry a copy of the runtime, and the linker keeps one.
// Only definitions carry it: a weak *declaration* would make references weak,
// and weak references do not pull members out of an archive.
#ifdef LOOM_RUNTIME_AOT
#define LOOM_RUNTIME_EXPORT extern "C" __attribute__((weak, visibility("default")))
#else
#define LOOM_RUNTIME_EXPORT extern "C"
#endif

/** The capacity of the per-thread error message buffer, terminator
 * included; longer messages are truncated. */
#define LOOM_ERROR_BUFFER_SIZE 4096

/** Copies this thread's error message into dst (at most size bytes, always
 * terminated) / replaces it with msg. The thread pool uses these to move a
 * worker's message to the thread that started the parallel loop. */
extern "C" void loom_runtime_copy_error_message(char *dst, size_t size);
extern "C" void loom_runtime_set_error_message(const char *msg);
extern "C" uint16_t loom_double_to_half(double d);

/** One GPU API's implementation of the device interface (loom_runtime.h's
 * loom_device_*, which loom_device.cpp forwards here), one entry per call,
 * with the same arguments. */
struct loom_device_api_t {
    int32_t (*buffer_for_host)(loom_buffer_t *b, const char *name);
    int32_t (*buffer_for_kernel)(loom_buffer_t *b, int32_t read, int32_t written, const char *name,
                                 uint64_t *device);
    int32_t (*allocate)(uint64_t bytes, const char *name, uint64_t *device);
    int32_t (*deallocate)(uint64_t device);
    int32_t (*launch)(void **module_state, const uint8_t *binary, uint64_t binary_size,
                      const char *assembly, const char *source, const char *kernel, int32_t grid_x,
                      int32_t grid_y, int32_t grid_z, int32_t block_x, int32_t block_y,
                      int32_t block_z, int32_t shared_bytes, void **args);
    int32_t (*finish)(const char *pipeline, const char *kernels);
    void (*release_module)(void **module_state);
};

/** CUDA's (loom_cuda.cpp). */
extern "C" const loom_device_api_t *loom_cuda_device_api(void);

#endif
