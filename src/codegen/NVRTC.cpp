#include "codegen/NVRTC.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>

#include "loom/Error.h"

namespace loom {
namespace internal {

namespace {

// The few NVRTC entry points Loom uses, with the C API's types spelled out
// (nvrtc.h is not needed to build Loom).
using nvrtcResult = int;
using nvrtcProgram = struct _nvrtcProgram *;

struct NVRTCLibrary {
    void *handle = nullptr;
    std::string tried;  // the names tried, for the error message
    const char *(*GetErrorString)(nvrtcResult) = nullptr;
    nvrtcResult (*Version)(int *, int *) = nullptr;
    nvrtcResult (*CreateProgram)(nvrtcProgram *, const char *, const char *, int,
                                 const char *const *, const char *const *) = nullptr;
    nvrtcResult (*DestroyProgram)(nvrtcProgram *) = nullptr;
    nvrtcResult (*CompileProgram)(nvrtcProgram, int, const char *const *) = nullptr;
    nvrtcResult (*GetProgramLogSize)(nvrtcProgram, size_t *) = nullptr;
    nvrtcResult (*GetProgramLog)(nvrtcProgram, char *) = nullptr;
    nvrtcResult (*GetPTXSize)(nvrtcProgram, size_t *) = nullptr;
    nvrtcResult (*GetPTX)(nvrtcProgram, char *) = nullptr;
    nvrtcResult (*GetCUBINSize)(nvrtcProgram, size_t *) = nullptr;
    nvrtcResult (*GetCUBIN)(nvrtcProgram, char *) = nullptr;

    template <typename F> bool bind(F &f, const char *name) {
        f = reinterpret_cast<F>(dlsym(handle, name));
        return f != nullptr;
    }

    /** The CUDA toolkit's include directory (for cuda_fp16.h), or "". */
    std::string include_dir;

    static bool has_fp16_header(const std::string &dir) {
        return !dir.empty() && access((dir + "/cuda_fp16.h").c_str(), R_OK) == 0;
    }
    void find_include_dir() {
        std::vector<std::string> dirs;
        if (const char *p = std::getenv("LOOM_CUDA_INCLUDE")) dirs.push_back(p);
        for (const char *env : {"CUDA_HOME", "CUDA_PATH"}) {
            if (const char *root = std::getenv(env)) dirs.push_back(std::string(root) + "/include");
        }
        // Next to the library that was loaded: <toolkit>/lib64/../include.
        Dl_info info;
        if (dladdr(reinterpret_cast<void *>(CreateProgram), &info) && info.dli_fname) {
            std::string lib = info.dli_fname;
            size_t slash = lib.rfind('/');
            if (slash != std::string::npos) dirs.push_back(lib.substr(0, slash) + "/../include");
        }
        dirs.push_back("/usr/local/cuda/include");
        for (const std::string &d : dirs) {
            if (has_fp16_header(d)) {
                include_dir = d;
                return;
            }
        }
    }

    NVRTCLibrary() {
        std::vector<std::string> names;
        if (const char *p = std::getenv("LOOM_NVRTC_PATH")) names.push_back(p);
        for (const char *n : {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"}) {
            names.push_back(n);
        }
        for (const char *env : {"CUDA_HOME", "CUDA_PATH"}) {
            if (const char *root = std::getenv(env)) {
                names.push_back(std::string(root) + "/lib64/libnvrtc.so");
            }
        }
        names.push_back("/usr/local/cuda/lib64/libnvrtc.so");
        for (const std::string &n : names) {
            tried += (tried.empty() ? "" : ", ") + n;
            handle = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL);
            if (handle) break;
        }
        if (!handle) return;
        bool ok = bind(GetErrorString, "nvrtcGetErrorString") && bind(Version, "nvrtcVersion") &&
                  bind(CreateProgram, "nvrtcCreateProgram") &&
                  bind(DestroyProgram, "nvrtcDestroyProgram") &&
                  bind(CompileProgram, "nvrtcCompileProgram") &&
                  bind(GetProgramLogSize, "nvrtcGetProgramLogSize") &&
                  bind(GetProgramLog, "nvrtcGetProgramLog") &&
                  bind(GetPTXSize, "nvrtcGetPTXSize") && bind(GetPTX, "nvrtcGetPTX") &&
                  bind(GetCUBINSize, "nvrtcGetCUBINSize") && bind(GetCUBIN, "nvrtcGetCUBIN");
        if (!ok) {
            tried += " (found, but it lacks nvrtcGetCUBIN: NVRTC 11.1 or newer is needed)";
            dlclose(handle);
            handle = nullptr;
            return;
        }
        find_include_dir();
    }
};

const NVRTCLibrary &library() {
    static const NVRTCLibrary lib;
    return lib;
}

const NVRTCLibrary &loaded_library() {
    const NVRTCLibrary &lib = library();
    user_assert(lib.handle != nullptr)
        << "Compiling for the GPU needs NVRTC (libnvrtc.so from the CUDA toolkit), which "
        << "could not be loaded; tried " << lib.tried
        << ". Install the CUDA toolkit, or set LOOM_NVRTC_PATH to libnvrtc.so.";
    return lib;
}

}  // namespace

bool nvrtc_available(std::string *why) {
    const NVRTCLibrary &lib = library();
    if (!lib.handle && why) *why = "tried " + lib.tried;
    return lib.handle != nullptr;
}

int nvrtc_version() {
    const NVRTCLibrary &lib = library();
    int major = 0, minor = 0;
    if (!lib.handle || lib.Version(&major, &minor) != 0) return 0;
    return major * 1000 + minor * 10;
}

CudaBinary compile_cuda(const std::string &source, const std::string &name, const std::string &arch,
                        const std::vector<std::string> &extra_options) {
    const NVRTCLibrary &lib = loaded_library();
    auto check = [&](nvrtcResult r, const char *call) {
        user_assert(r == 0) << "NVRTC failed in " << call << " for " << name << ": "
                            << lib.GetErrorString(r) << ".";
    };
    nvrtcProgram prog = nullptr;
    check(lib.CreateProgram(&prog, source.c_str(), (name + ".cu").c_str(), 0, nullptr, nullptr),
          "nvrtcCreateProgram");
    // Destroys the program however this function is left.
    struct Guard {
        const NVRTCLibrary &lib;
        nvrtcProgram &p;
        ~Guard() { lib.DestroyProgram(&p); }
    } guard{lib, prog};

    // sm_XX gives a cubin (SASS) for that architecture and its PTX.
    std::string arch_option = "--gpu-architecture=" + arch;
    std::string include_option = "-I" + lib.include_dir;
    std::vector<const char *> options = {arch_option.c_str(), "--std=c++17", "-default-device"};
    if (!lib.include_dir.empty()) options.push_back(include_option.c_str());
    for (const std::string &o : extra_options) options.push_back(o.c_str());
    nvrtcResult compiled =
        lib.CompileProgram(prog, static_cast<int>(options.size()), options.data());
    CudaBinary out;
    size_t log_size = 0;
    check(lib.GetProgramLogSize(prog, &log_size), "nvrtcGetProgramLogSize");
    if (log_size > 1) {
        out.log.resize(log_size);
        check(lib.GetProgramLog(prog, &out.log[0]), "nvrtcGetProgramLog");
        out.log.resize(log_size - 1);  // the terminating NUL
    }
    user_assert(compiled == 0) << "NVRTC could not compile the CUDA C++ of " << name << " for "
                               << arch << " (" << lib.GetErrorString(compiled) << "):\n"
                               << out.log
                               << (lib.include_dir.empty()
                                       ? "(The CUDA toolkit's include directory, which has "
                                         "cuda_fp16.h, was not found: set LOOM_CUDA_INCLUDE.)"
                                       : "");
    size_t size = 0;
    check(lib.GetPTXSize(prog, &size), "nvrtcGetPTXSize");
    out.ptx.resize(size);
    check(lib.GetPTX(prog, &out.ptx[0]), "nvrtcGetPTX");
    if (!out.ptx.empty() && out.ptx.back() == '\0') out.ptx.pop_back();
    check(lib.GetCUBINSize(prog, &size), "nvrtcGetCUBINSize");
    out.cubin.resize(size);
    if (size) check(lib.GetCUBIN(prog, out.cubin.data()), "nvrtcGetCUBIN");
    return out;
}

}  // namespace internal
}  // namespace loom
