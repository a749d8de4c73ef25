#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "fake_cuda.h"
#include "run_on_cpu.h"

namespace {

typedef int CUresult;
const CUresult kInvalidValue = 1, kOutOfMemory = 2, kNoDevice = 100, kInvalidImage = 200,
               kNoBinaryForGpu = 209, kInvalidPtx = 218, kNotFound = 500, kIllegalAddress = 700,
               kLaunchFailed = 719;

struct Function {
    std::string name;
    fake_cuda::CpuKernel cpu = nullptr;
    // A launch may ask for this much dynamic shared memory; more needs
    // cuFuncSetAttribute first, as on a GPU.
    int max_dynamic_shared = 48 * 1024;
};

struct Module {
    std::string image;    // the cubin or PTX, to find kernels in
    void *cpu = nullptr;  // or the source compiled for the CPU
    // Its functions' handles, one per name, as on a GPU: they live as long
    // as the module (cuModuleUnload frees them).
    std::map<std::string, std::unique_ptr<Function>> functions;
};

bool env_flag(const char *name) {
    const char *value = getenv(name);
    return value && *value && strcmp(value, "0") != 0;
}

bool run_kernels_by_default() { return env_flag("LOOM_FAKE_CUDA_RUN_KERNELS"); }

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
    bool run_kernels = run_kernels_by_default();
    // A kernel's fault, reported by the next wait as a GPU's would be.
    CUresult pending_error = 0;
    std::string kernel_error;
};

/** One kernel runs on the CPU at a time (a module's block state is global). */
std::mutex cpu_run_mutex;

/** Never destroyed: Loom unloads cached pipelines' modules at exit, which
 * may be after this library's static destructors ran. */
State &state() {
    static State *s = new State();
    return *s;
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

size_t page_size() {
    static const size_t size = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    return size;
}

/** An allocation's pages: its bytes (rounded up to 16, as CUDA aligns
 * allocations) end where a guard page begins. */
struct Mapping {
    unsigned long long base;
    size_t length, data_bytes;
};

Mapping mapping_of(unsigned long long p, size_t bytes) {
    Mapping m;
    m.data_bytes = (bytes + 15) / 16 * 16;
    const size_t data_pages = (m.data_bytes + page_size() - 1) / page_size();
    m.length = (data_pages + 1) * page_size();
    m.base = p ? p + m.data_bytes - data_pages * page_size() : 0;
    return m;
}

/** The bytes of an allocation's pages that are not its data (before it,
 * and after it up to the guard page: CUDA's rounding to 16 bytes leaves no
 * fault there) hold this; a kernel that writes them wrote out of bounds. */
const unsigned char kCanary = 0x5A;

/** Where a kernel wrote outside an allocation, within its pages: a
 * description of the first such allocation, or "" if none. (Out-of-bounds
 * reads there are not seen; farther ones fault at the guard page.) */
std::string writes_outside_allocations() {
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    for (const auto &a : s.allocations) {
        const Mapping m = mapping_of(a.first, a.second);
        const unsigned char *base = reinterpret_cast<const unsigned char *>(m.base);
        const unsigned char *data = reinterpret_cast<const unsigned char *>(a.first);
        const unsigned char *end = data + m.data_bytes;
        size_t before = 0, after = 0;
        for (const unsigned char *q = base; q < data; q++) {
            if (*q != kCanary) before = std::max<size_t>(before, data - q);
        }
        for (const unsigned char *q = data + a.second; q < end; q++) {
            if (*q != kCanary) after = q - (data + a.second) + 1;
        }
        if (before == 0 && after == 0) continue;
        char what[200];
        snprintf(what, sizeof(what),
                 "wrote %zu bytes %s a device allocation of %zu bytes at 0x%llx",
                 before ? before : after, before ? "before the start of" : "past the end of",
                 a.second, a.first);
        // Reported once.
        memset(const_cast<unsigned char *>(base), kCanary, data - base);
        memset(const_cast<unsigned char *>(data + a.second), kCanary, end - (data + a.second));
        return what;
    }
    return "";
}

CUresult take_pending_error() {
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    CUresult r = s.pending_error;
    s.pending_error = 0;
    return r;
}

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
    s.run_kernels = run_kernels_by_default();
    s.pending_error = 0;
    s.kernel_error.clear();
}

void fake_cuda_run_kernels(int run) {
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    s.run_kernels = run != 0;
}

const char *fake_cuda_kernel_error(void) {
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    return s.kernel_error.c_str();
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
    case 719: *name = "CUDA_ERROR_LAUNCH_FAILED"; return 0;
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
    if (CUresult r = take_pending_error()) return r;
    return current_context ? 0 : kInvalidValue;
}

CUresult cuStreamSynchronize(void *) {
    ENTER("cuStreamSynchronize");
    if (CUresult r = take_pending_error()) return r;
    return current_context ? 0 : kInvalidValue;
}

CUresult cuMemAlloc_v2(unsigned long long *p, size_t bytes) {
    ENTER("cuMemAlloc_v2");
    if (!current_context || bytes == 0) return kInvalidValue;
    const Mapping m = mapping_of(0, bytes);
    void *base =
        mmap(nullptr, m.length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) return kOutOfMemory;
    // The page after the allocation faults: a kernel run on the CPU that
    // overruns it stops there.
    char *end = static_cast<char *>(base) + m.length - page_size();
    mprotect(end, page_size(), PROT_NONE);
    char *data = end - m.data_bytes;
    // Garbage, as fresh device memory would hold, between canaries.
    memset(base, kCanary, data - static_cast<char *>(base));
    memset(data, 0xA5, bytes);
    memset(data + bytes, kCanary, m.data_bytes - bytes);
    *p = reinterpret_cast<unsigned long long>(data);
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
    const Mapping m = mapping_of(p, it->second);
    munmap(reinterpret_cast<void *>(m.base), m.length);
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

/** Only the memory type (2) is known; memory in an allocation is device
 * memory (2), any other address is not CUDA's (CUDA_ERROR_INVALID_VALUE). */
CUresult cuPointerGetAttribute(void *data, int attribute, unsigned long long p) {
    ENTER("cuPointerGetAttribute");
    if (attribute != 2 || !inside_allocation(p, 1)) return kInvalidValue;
    *static_cast<unsigned *>(data) = 2;
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
    const bool source = !elf && fake_cuda::is_loom_cuda_source(bytes);
    bool run;
    {
        std::lock_guard<std::mutex> lock(state().mutex);
        run = state().run_kernels;
    }
    // Running kernels, it loads source only (a driver for another GPU);
    // otherwise it refuses source, as a real driver does.
    if (run && !source) return elf ? kNoBinaryForGpu : kInvalidPtx;
    if (!run && source) return kInvalidImage;
    if (elf && state().refuse_cubin) return kNoBinaryForGpu;
    Module *m = new Module();
    if (source) {
        std::string error;
        m->cpu = fake_cuda::load_for_cpu(bytes, &error);
        if (!m->cpu) {
            fprintf(stderr, "fake CUDA driver: %s\n", error.c_str());
            std::lock_guard<std::mutex> lock(state().mutex);
            state().kernel_error = error;
            delete m;
            return kInvalidImage;
        }
    } else if (elf) {
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
    Module *m = static_cast<Module *>(module);
    std::unique_ptr<Function> &f = m->functions[name];
    if (!f) {
        fake_cuda::CpuKernel cpu = nullptr;
        if (m->cpu) {
            cpu = fake_cuda::find_kernel(m->cpu, name);
        }
        if (m->cpu ? !cpu : m->image.find(name) == std::string::npos) {
            m->functions.erase(name);
            return kNotFound;
        }
        f.reset(new Function{name, cpu});
    }
    *function = f.get();
    return 0;
}

CUresult cuFuncSetAttribute(void *function, int attribute, int value) {
    ENTER("cuFuncSetAttribute");
    if (attribute == 8) {  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        // The dynamic shared memory an sm_90 block may have at most.
        if (!function || value < 0 || value > 227 * 1024) return kInvalidValue;
        static_cast<Function *>(function)->max_dynamic_shared = value;
    }
    return 0;
}

CUresult cuLaunchKernel(void *function, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned shared, void *stream, void **args,
                        void **extra) {
    ENTER("cuLaunchKernel");
    if (!current_context || !function || gx == 0 || gy == 0 || gz == 0 || bx * by * bz > 1024 ||
        shared > static_cast<unsigned>(static_cast<Function *>(function)->max_dynamic_shared)) {
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
    const Function *f = static_cast<Function *>(function);
    if (hook) hook(f->name.c_str(), grid, block, shared, args, user);
    if (f->cpu) {
        // Read at each launch, so that a test can run a kernel in both orders.
        const unsigned reversed = env_flag("LOOM_FAKE_CUDA_REVERSED");
        const fake_cuda::LaunchShape shape = {{gx, gy, gz}, {bx, by, bz}, shared, reversed};
        char error[1024] = "";
        int failed;
        {
            std::lock_guard<std::mutex> run(cpu_run_mutex);
            failed = f->cpu(&shape, args, error, sizeof(error));
        }
        std::string outside;
        if (!failed) outside = writes_outside_allocations();
        if (!outside.empty()) {
            const std::string message = "kernel " + f->name + ": " + outside;
            fprintf(stderr, "fake CUDA driver: %s\n", message.c_str());
            std::lock_guard<std::mutex> lock(s.mutex);
            s.pending_error = kIllegalAddress;
            s.kernel_error = message;
        }
        if (failed) {
            const std::string message = "kernel " + f->name + ": " + error;
            fprintf(stderr, "fake CUDA driver: %s\n", message.c_str());
            std::lock_guard<std::mutex> lock(s.mutex);
            s.pending_error = kLaunchFailed;
            s.kernel_error = message;
        }
    }
    return 0;
}

}  // extern "C"
