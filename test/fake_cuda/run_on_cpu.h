// The stand-in driver's way of running kernels: a module's CUDA C++ source
// (Loom's JIT passes it when the driver refuses the cubin and the PTX) is
// compiled for the CPU with cuda_on_cpu.h, and each launch runs there.
#pragma once

#include <string>

namespace fake_cuda {

/** A launch's shape, as loom_cpu::Shape in cuda_on_cpu.h. */
struct LaunchShape {
    unsigned grid[3], block[3], shared_bytes;
    unsigned reversed;  // run the threads and the blocks highest first
};

/** A kernel compiled for the CPU: 0 when the launch ran, else 1 with a
 * message in `error`. */
typedef int (*CpuKernel)(const LaunchShape *shape, void **args, char *error, int error_size);

/** Whether `image` is Loom's generated CUDA C++ (not a cubin or PTX). */
bool is_loom_cuda_source(const char *image);

/** Compiles `source` for the CPU and loads it: a handle for find_kernel,
 * or null with the compiler's messages in *error. Compiled modules are
 * kept in a cache directory, by a hash of what went into them. */
void *load_for_cpu(const char *source, std::string *error);

/** The CPU entry of `kernel` in a module from load_for_cpu, or null. */
CpuKernel find_kernel(void *module, const char *kernel);

}  // namespace fake_cuda
