// CUDA C++ to PTX and cubin with NVRTC, loaded with dlopen on first use, so
// that neither Loom nor anything it builds links libnvrtc: a machine without
// the CUDA toolkit runs every CPU pipeline and gets a clear error only when
// it compiles for the GPU.
#pragma once

#include <string>
#include <vector>

namespace loom {
namespace internal {

struct CudaBinary {
    std::string ptx;
    std::vector<char> cubin;  // an ELF image for the target's architecture
    std::string log;          // NVRTC's warnings, if any
};

/** Compiles `source` (named `name` in messages) for `arch` ("sm_80",
 * "sm_90a", ...) to PTX and cubin, with NVRTC's `options` besides the
 * architecture (CudaModule::nvrtc_options). Throws a CompileError with
 * NVRTC's log when the source does not compile, and one that says how to
 * install or point to libnvrtc (LOOM_NVRTC_PATH) when it cannot be
 * loaded. */
CudaBinary compile_cuda(const std::string &source, const std::string &name, const std::string &arch,
                        const std::vector<std::string> &options = {});

/** Whether libnvrtc can be loaded; if not, `why` says what was tried. */
bool nvrtc_available(std::string *why = nullptr);

/** NVRTC's version, major * 1000 + minor * 10 (as CUDA_VERSION), or 0. */
int nvrtc_version();

}  // namespace internal
}  // namespace loom
