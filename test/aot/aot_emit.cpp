// Compiles the AOT test pipelines to static libraries and headers, at build
// time: aot_emit <output directory>. The test (aot_test.cpp) links the
// libraries without libloom.
#include <cstdio>
#include <string>

#include "aot_pipelines.h"

using namespace loom;
using namespace loom_test;

int main(int argc, char **argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s <output directory>\n", argv[0]);
        return 2;
    }
    std::string dir = argv[1];
    try {
        AotBlur blur;
        blur.pipeline().compile_to_static_library(dir + "/aot_blur", "aot_blur", blur.schedule,
                                                  Target("host"));
        // The same pipeline again, for an explicit older target and under
        // another name: linked into the same test, the two libraries' runtimes
        // and internal symbols must not clash.
        blur.pipeline().compile_to_static_library(dir + "/aot_blur_sse41", "aot_blur_sse41",
                                                  blur.schedule, Target("x86-64-linux-sse41"));
        AotHalf half;
        half.pipeline().compile_to_static_library(dir + "/aot_half", "aot_half", half.schedule);
        AotReduce reduce;
        reduce.pipeline().compile_to_static_library(dir + "/aot_reduce", "aot_reduce",
                                                    reduce.schedule);
        AotGpuScale gpu;
        gpu.pipeline().compile_to_static_library(dir + "/aot_gpu_scale", "aot_gpu_scale",
                                                 gpu.schedule, Target("host-cuda-sm_90"));
    } catch (const std::exception &e) {
        std::fprintf(stderr, "aot_emit: %s\n", e.what());
        return 1;
    }
    return 0;
}
