#include <stdlib.h>
#include <string.h>

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "fake_cuda.h"

namespace {

typedef int CUresult;
const CUresult kInvalidValue = 1, kNoDevice = 100, kInvalidImage = 200, kNoBinaryForGpu = 209,
               kNotFound = 500;

struct Module {
    std::string image;  // the cubin or PTX, to find kernels in
};

struct Function {
    std::string name;
};

struct State {
    std::mutex mutex;
    int devices = 1, capability = 90;
    std::map<std::string, int> calls;
    std::map<std::string, std::vector<int>> failures;
    bool refuse_cubin = false;
    std::map<unsigned long long, size_t> allocations;
    fake_cuda_launch_hook_t hook = nullptr;
    void *hook_user = nullptr;
    int context = 0;              // its address is the context
    void *last_stream = nullptr;  // of the last launch or copy
};

State &state() {
    static State s;
    return s;
}

/** Counts the call; returns the failure planned for it, if any. */
CUresult enter(const char *entry) {
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    s.calls[entry]++;
    auto it = s.failures.find(entry);
    if (it == s.failures.end() || it->second.empty()) return 0;
    CUresult r = it->second.front();
    it->second.erase(it->second.begin());
    return r;
}

bool inside_allocation(unsigned long long p, size_t bytes) {
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    auto it = s.allocations.upper_bound(p);
    if (it == s.allocations.begin()) return false;
    --it;
    return p >= it->first && p + bytes <= it->first + it->second;
}

thread_local void *current_context = nullptr;

}  // namespace

#define ENTER(name)                 \
    if (CUresult r = enter(name)) { \
        return r;                   \
    }

extern "C" {

void fake_cuda_reset(int devices, int capability) {
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    s.devices = devices;
    s.capability = capability;
    s.calls.clear();
    s.failures.clear();
    s.refuse_cubin = false;
    s.hook = nullptr;
    s.hook_user = nullptr;
    s.last_stream = nullptr;
}

void *fake_cuda_last_stream(void) {
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    return s.last_stream;
}

int fake_cuda_calls(const char *entry) {
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    auto it = s.calls.find(entry);
    return it == s.calls.end() ? 0 : it->second;
}

void fake_cuda_fail_next(const char *entry, int error) {
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    s.failures[entry].push_back(error);
}

void fake_cuda_refuse_cubin(int refuse) {
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    s.refuse_cubin = refuse != 0;
}

int fake_cuda_live_allocations(void) {
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    return static_cast<int>(s.allocations.size());
}

int fake_cuda_is_device_memory(unsigned long long p, size_t bytes) {
    return inside_allocation(p, bytes);
}

void fake_cuda_set_launch_hook(fake_cuda_launch_hook_t hook, void *user) {
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    s.hook = hook;
    s.hook_user = user;
}

// ---- The driver API, as far as Loom uses it ----

CUresult cuInit(unsigned) {
    ENTER("cuInit");
    return 0;
}

CUresult cuGetErrorName(CUresult r, const char **name) {
    switch (r) {
    case 1: *name = "CUDA_ERROR_INVALID_VALUE"; return 0;
    case 2: *name = "CUDA_ERROR_OUT_OF_MEMORY"; return 0;
    case 100: *name = "CUDA_ERROR_NO_DEVICE"; return 0;
    case 200: *name = "CUDA_ERROR_INVALID_IMAGE"; return 0;
    case 209: *name = "CUDA_ERROR_NO_BINARY_FOR_GPU"; return 0;
    case 218: *name = "CUDA_ERROR_INVALID_PTX"; return 0;
    case 500: *name = "CUDA_ERROR_NOT_FOUND"; return 0;
    case 700: *name = "CUDA_ERROR_ILLEGAL_ADDRESS"; return 0;
    case 701: *name = "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"; return 0;
    default: return kInvalidValue;
    }
}

CUresult cuDeviceGetCount(int *count) {
    ENTER("cuDeviceGetCount");
    *count = state().devices;
    return 0;
}

CUresult cuDeviceGet(int *dev, int ordinal) {
    ENTER("cuDeviceGet");
    if (ordinal < 0 || ordinal >= state().devices) return kInvalidValue;
    *dev = ordinal;
    return 0;
}

CUresult cuDeviceGetAttribute(int *value, int attribute, int dev) {
    ENTER("cuDeviceGetAttribute");
    if (dev < 0 || dev >= state().devices) return kInvalidValue;
    if (attribute == 75) *value = state().capability / 10;
    else if (attribute == 76) *value = state().capability % 10;
    else return kInvalidValue;
    return 0;
}

CUresult cuDevicePrimaryCtxRetain(void **ctx, int dev) {
    ENTER("cuDevicePrimaryCtxRetain");
    if (dev < 0 || dev >= state().devices) return kNoDevice;
    *ctx = &state().context;
    return 0;
}

CUresult cuCtxGetCurrent(void **ctx) {
    ENTER("cuCtxGetCurrent");
    *ctx = current_context;
    return 0;
}

CUresult cuCtxSetCurrent(void *ctx) {
    ENTER("cuCtxSetCurrent");
    current_context = ctx;
    return 0;
}

CUresult cuCtxSynchronize(void) {
    ENTER("cuCtxSynchronize");
    return current_context ? 0 : kInvalidValue;
}

CUresult cuStreamSynchronize(void *) {
    ENTER("cuStreamSynchronize");
    return current_context ? 0 : kInvalidValue;
}

CUresult cuMemAlloc_v2(unsigned long long *p, size_t bytes) {
    ENTER("cuMemAlloc_v2");
    if (!current_context || bytes == 0) return kInvalidValue;
    void *m = malloc(bytes);
    // Garbage, as fresh device memory would hold.
    memset(m, 0xA5, bytes);
    *p = reinterpret_cast<unsigned long long>(m);
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    s.allocations[*p] = bytes;
    return 0;
}

CUresult cuMemFree_v2(unsigned long long p) {
    ENTER("cuMemFree_v2");
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    auto it = s.allocations.find(p);
    if (it == s.allocations.end()) return kInvalidValue;  // not an allocation's start
    free(reinterpret_cast<void *>(p));
    s.allocations.erase(it);
    return 0;
}

CUresult cuMemGetAddressRange_v2(unsigned long long *base, size_t *size, unsigned long long p) {
    ENTER("cuMemGetAddressRange_v2");
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    auto it = s.allocations.upper_bound(p);
    if (it == s.allocations.begin()) return kNotFound;
    --it;
    if (p >= it->first + it->second) return kNotFound;
    *base = it->first;
    *size = it->second;
    return 0;
}

CUresult cuMemcpyHtoD_v2(unsigned long long dst, const void *src, size_t bytes) {
    ENTER("cuMemcpyHtoD_v2");
    if (!inside_allocation(dst, bytes)) return kInvalidValue;
    memcpy(reinterpret_cast<void *>(dst), src, bytes);
    return 0;
}

CUresult cuMemcpyDtoD_v2(unsigned long long dst, unsigned long long src, size_t bytes) {
    ENTER("cuMemcpyDtoD_v2");
    if (!inside_allocation(dst, bytes) || !inside_allocation(src, bytes)) return kInvalidValue;
    memmove(reinterpret_cast<void *>(dst), reinterpret_cast<const void *>(src), bytes);
    return 0;
}

CUresult cuMemcpyDtoH_v2(void *dst, unsigned long long src, size_t bytes) {
    ENTER("cuMemcpyDtoH_v2");
    if (!inside_allocation(src, bytes)) return kInvalidValue;
    memcpy(dst, reinterpret_cast<const void *>(src), bytes);
    return 0;
}

// The stand-in's asynchronous copies are done when they return, as if the
// stream were idle.
CUresult cuMemcpyHtoDAsync_v2(unsigned long long dst, const void *src, size_t bytes, void *stream) {
    ENTER("cuMemcpyHtoDAsync_v2");
    if (!inside_allocation(dst, bytes)) return kInvalidValue;
    memcpy(reinterpret_cast<void *>(dst), src, bytes);
    std::lock_guard<std::mutex> lock(state().mutex);
    state().last_stream = stream;
    return 0;
}

CUresult cuMemcpyDtoHAsync_v2(void *dst, unsigned long long src, size_t bytes, void *stream) {
    ENTER("cuMemcpyDtoHAsync_v2");
    if (!inside_allocation(src, bytes)) return kInvalidValue;
    memcpy(dst, reinterpret_cast<const void *>(src), bytes);
    std::lock_guard<std::mutex> lock(state().mutex);
    state().last_stream = stream;
    return 0;
}

CUresult cuModuleLoadData(void **module, const void *image) {
    ENTER("cuModuleLoadData");
    const char *bytes = static_cast<const char *>(image);
    const bool elf = memcmp(bytes,
                            "\x7f"
                            "ELF",
                            4) == 0;
    if (elf && state().refuse_cubin) return kNoBinaryForGpu;
    Module *m = new Module();
    if (elf) {
        // An ELF64 image ends with its section header table (cubins do).
        unsigned long long shoff;
        unsigned short shentsize, shnum;
        memcpy(&shoff, bytes + 0x28, 8);
        memcpy(&shentsize, bytes + 0x3A, 2);
        memcpy(&shnum, bytes + 0x3C, 2);
        m->image.assign(bytes, shoff + static_cast<size_t>(shentsize) * shnum);
    } else {
        if (strstr(bytes, ".entry") == nullptr) {
            delete m;
            return kInvalidImage;
        }
        m->image = bytes;
    }
    *module = m;
    return 0;
}

CUresult cuModuleUnload(void *module) {
    ENTER("cuModuleUnload");
    delete static_cast<Module *>(module);
    return 0;
}

CUresult cuModuleGetFunction(void **function, void *module, const char *name) {
    ENTER("cuModuleGetFunction");
    const std::string &image = static_cast<Module *>(module)->image;
    if (image.find(name) == std::string::npos) return kNotFound;
    *function = new Function{name};  // leaked: modules hold a handful
    return 0;
}

CUresult cuFuncSetAttribute(void *, int, int) {
    ENTER("cuFuncSetAttribute");
    return 0;
}

CUresult cuLaunchKernel(void *function, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned shared, void *stream, void **args,
                        void **extra) {
    ENTER("cuLaunchKernel");
    if (!current_context || gx == 0 || gy == 0 || gz == 0 || bx * by * bz > 1024) {
        return kInvalidValue;
    }
    State &s = state();
    fake_cuda_launch_hook_t hook;
    void *user;
    {
        std::lock_guard<std::mutex> lock(s.mutex);
        hook = s.hook;
        user = s.hook_user;
        s.last_stream = stream;
    }
    const unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
    if (hook)
        hook(static_cast<Function *>(function)->name.c_str(), grid, block, shared, args, user);
    return 0;
}

}  // extern "C"
