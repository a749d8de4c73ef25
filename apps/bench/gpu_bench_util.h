// What the GPU benchmarks share: the few CUDA driver calls their peers and
// timers need, loaded the way Loom's runtime loads the driver, and a timer.
#pragma once

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include <loom/runtime/loom_runtime.h>

namespace loom_bench {

/** The few driver calls the benchmarks need (the context, a copy, a sync,
 * device attributes), loaded as Loom's runtime loads them. */
struct Driver {
    using CUresult = int;
    CUresult (*init)(unsigned) = nullptr;
    CUresult (*device_get)(int *, int) = nullptr;
    CUresult (*primary_ctx_retain)(void **, int) = nullptr;
    CUresult (*ctx_set_current)(void *) = nullptr;
    CUresult (*memcpy_dtod)(uint64_t, uint64_t, size_t) = nullptr;
    CUresult (*ctx_synchronize)() = nullptr;
    CUresult (*device_get_attribute)(int *, int, int) = nullptr;
    std::string error;

    Driver() {
        // The driver Loom's runtime loads (LOOM_CUDA_DRIVER may name another).
        const char *name = std::getenv("LOOM_CUDA_DRIVER");
        if (!name || !*name) name = "libcuda.so.1";
        void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
        if (!lib) {
            error = std::string(name) + " is not loadable (no NVIDIA driver)";
            return;
        }
        auto sym = [&](auto &fn, const char *name) {
            fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
            if (!fn && error.empty()) error = std::string("the driver lacks ") + name;
        };
        sym(init, "cuInit");
        sym(device_get, "cuDeviceGet");
        sym(primary_ctx_retain, "cuDevicePrimaryCtxRetain");
        sym(ctx_set_current, "cuCtxSetCurrent");
        sym(memcpy_dtod, "cuMemcpyDtoD_v2");
        sym(ctx_synchronize, "cuCtxSynchronize");
        sym(device_get_attribute, "cuDeviceGetAttribute");
        if (!error.empty()) return;
        int device = 0;
        void *ctx = nullptr;
        // The primary context, current on this thread: Loom then uses it too.
        if (init(0) != 0 || device_get(&device, 0) != 0 || primary_ctx_retain(&ctx, device) != 0 ||
            ctx_set_current(ctx) != 0) {
            error = "no usable GPU (cuInit, cuDeviceGet or the primary context failed)";
        }
    }
};

/** Seconds per call of f, the best of `reps` timings of `inner` calls. */
inline double seconds_per_call(const std::function<void()> &f, const Driver &cu, int reps,
                               int inner) {
    f();  // warm: module load, first copies
    cu.ctx_synchronize();
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < inner; i++) f();
        cu.ctx_synchronize();
        auto t1 = std::chrono::steady_clock::now();
        best = std::min(best, std::chrono::duration<double>(t1 - t0).count() / inner);
    }
    return best;
}

/** Runs a benchmark's body and turns an exception it throws (a Loom
 * CompileError or RuntimeError: a kernel the GPU refuses, say) into a
 * message naming the benchmark and exit status 1, instead of terminate. */
template <typename Body> int report_errors(const char *bench, Body body) {
    try {
        return body();
    } catch (const std::exception &e) {
        std::fflush(stdout);
        std::fprintf(stderr, "%s: %s\n", bench, e.what());
        return 1;
    }
}

/** The command line every GPU benchmark takes: [--quick] [--reps N] [--rows N]
 * [--cols N] [--only 'NAME|...']. */
struct Options {
    bool quick = false;  // the correctness checks only
    int reps = 5;        // timings per kernel; the best is reported
    /** --only 'A|B': the kernels whose names contain A or B (names have
     * commas, not bars); none: all. */
    std::vector<std::string> only;
    /** --rows N: the matrices timed have N rows (0: the benchmark's own). */
    int rows = 0;
    /** --cols N: and N columns (0: the benchmark's own). */
    int cols = 0;
    Options(int argc, char **argv) {
        for (int i = 1; i < argc; i++) {
            if (!std::strcmp(argv[i], "--quick")) {
                quick = true;
            } else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) {
                reps = std::atoi(argv[++i]);
            } else if ((!std::strcmp(argv[i], "--rows") || !std::strcmp(argv[i], "--cols")) &&
                       i + 1 < argc) {
                int &n = !std::strcmp(argv[i], "--rows") ? rows : cols;
                n = std::atoi(argv[i + 1]);
                if (n < 1) {
                    std::fprintf(stderr, "%s needs a positive number, not '%s'\n", argv[i],
                                 argv[i + 1]);
                    std::exit(2);
                }
                i++;
            } else if (!std::strcmp(argv[i], "--only") && i + 1 < argc) {
                std::string list = argv[++i];
                for (size_t start = 0; start <= list.size();) {
                    size_t bar = std::min(list.find('|', start), list.size());
                    if (bar > start) only.push_back(list.substr(start, bar - start));
                    start = bar + 1;
                }
            } else {
                std::fprintf(stderr,
                             "unknown argument '%s'; the arguments are --quick, --reps N, --rows "
                             "N, --cols N and --only 'NAME[|NAME...]'\n",
                             argv[i]);
                std::exit(2);
            }
        }
    }
    /** Whether --only keeps the kernel called `name`. */
    bool selects(const std::string &name) const {
        if (only.empty()) return true;
        for (const std::string &part : only) {
            if (name.find(part) != std::string::npos) return true;
        }
        return false;
    }
};

/** The GPU's capability (e.g. 90), or 0 after printing why there is no GPU
 * to run on: the caller then exits with 77, CTest's "skipped". */
inline int gpu_capability_or_skip(const Driver &cu) {
    int32_t capability = 0;
    if (!cu.error.empty() || loom_cuda_device_capability(0, &capability) != 0) {
        std::printf("skipped: %s\n",
                    cu.error.empty() ? loom_last_error_message() : cu.error.c_str());
        return 0;
    }
    return capability;
}

}  // namespace loom_bench
