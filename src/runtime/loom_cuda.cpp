// The CUDA side of the runtime: the driver (libcuda.so.1, loaded with dlopen
// on first use), device memory of buffers with dirty tracking, the module
// cache and kernel launches: the CUDA implementation of the device
// interface (loom_device.cpp), through which compiled code reaches them.
// Neither libloom nor an AOT library links the driver, so both load and run
// on machines without a GPU; a GPU pipeline there fails at its first use
// with a message saying why. Every failed driver call becomes a Loom error
// that names the call (and the kernel or buffer it was for).
//
// The driver API is declared here with the few types it needs, so that
// building Loom needs no CUDA headers. Like the rest of the runtime this file
// is also compiled for AOT libraries: plain C++ with no C++ runtime.
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "loom_runtime_internal.h"

namespace {

typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef unsigned long long CUdeviceptr;

const int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
const int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
const int CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;
const int CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2;
const CUresult CUDA_ERROR_STUB_LIBRARY = 34;

struct Driver {
    void *handle;
    const char *missing;  // the first entry point the library lacks
    CUresult (*cuInit)(unsigned);
    CUresult (*cuDeviceGetCount)(int *);
    CUresult (*cuDeviceGet)(CUdevice *, int);
    CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
    CUresult (*cuGetErrorName)(CUresult, const char **);
    CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*cuCtxGetCurrent)(CUcontext *);
    CUresult (*cuCtxSetCurrent)(CUcontext);
    CUresult (*cuCtxSynchronize)(void);
    CUresult (*cuStreamSynchronize)(CUstream);
    CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
    CUresult (*cuMemFree)(CUdeviceptr);
    CUresult (*cuMemGetAddressRange)(CUdeviceptr *, size_t *, CUdeviceptr);
    CUresult (*cuPointerGetAttribute)(void *, int, CUdeviceptr);
    CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
    CUresult (*cuMemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
    CUresult (*cuModuleLoadData)(CUmodule *, const void *);
    CUresult (*cuModuleUnload)(CUmodule);
    CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*cuFuncSetAttribute)(CUfunction, int, int);
    CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                               unsigned, unsigned, CUstream, void **, void **);
    CUresult init_result;  // of cuInit(0), if the library loaded
};

Driver driver;
pthread_once_t driver_once = PTHREAD_ONCE_INIT;
// Guards the primary context and the module states.
pthread_mutex_t state_mutex = PTHREAD_MUTEX_INITIALIZER;
CUcontext primary_context = nullptr;
// The stream this thread's GPU work goes on (loom_cuda_set_stream); null is
// the legacy default stream, which waits for every blocking stream.
thread_local CUstream current_stream = nullptr;

/** Waits for this thread's stream, or for the whole context when it has
 * none; the driver call's result, and its name for an error. */
CUresult wait_for_gpu(const char **call) {
    if (current_stream) {
        *call = "cuStreamSynchronize";
        return driver.cuStreamSynchronize(current_stream);
    }
    *call = "cuCtxSynchronize";
    return driver.cuCtxSynchronize();
}

template <typename F> bool bind(F *f, const char *name) {
    *f = reinterpret_cast<F>(dlsym(driver.handle, name));
    if (*f == nullptr && driver.missing == nullptr) driver.missing = name;
    return *f != nullptr;
}

void load_driver() {
    // LOOM_CUDA_DRIVER names another driver library (a test double, or a
    // driver outside the library path).
    const char *path = getenv("LOOM_CUDA_DRIVER");
    driver.handle = dlopen(path && *path ? path : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!driver.handle) return;
    bool ok = bind(&driver.cuInit, "cuInit");
    ok &= bind(&driver.cuDeviceGetCount, "cuDeviceGetCount");
    ok &= bind(&driver.cuDeviceGet, "cuDeviceGet");
    ok &= bind(&driver.cuDeviceGetAttribute, "cuDeviceGetAttribute");
    ok &= bind(&driver.cuGetErrorName, "cuGetErrorName");
    ok &= bind(&driver.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    ok &= bind(&driver.cuCtxGetCurrent, "cuCtxGetCurrent");
    ok &= bind(&driver.cuCtxSetCurrent, "cuCtxSetCurrent");
    ok &= bind(&driver.cuCtxSynchronize, "cuCtxSynchronize");
    ok &= bind(&driver.cuStreamSynchronize, "cuStreamSynchronize");
    ok &= bind(&driver.cuMemAlloc, "cuMemAlloc_v2");
    ok &= bind(&driver.cuMemFree, "cuMemFree_v2");
    ok &= bind(&driver.cuMemGetAddressRange, "cuMemGetAddressRange_v2");
    ok &= bind(&driver.cuPointerGetAttribute, "cuPointerGetAttribute");
    ok &= bind(&driver.cuMemcpyHtoD, "cuMemcpyHtoD_v2");
    ok &= bind(&driver.cuMemcpyDtoH, "cuMemcpyDtoH_v2");
    ok &= bind(&driver.cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
    ok &= bind(&driver.cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
    ok &= bind(&driver.cuModuleLoadData, "cuModuleLoadData");
    ok &= bind(&driver.cuModuleUnload, "cuModuleUnload");
    ok &= bind(&driver.cuModuleGetFunction, "cuModuleGetFunction");
    ok &= bind(&driver.cuFuncSetAttribute, "cuFuncSetAttribute");
    ok &= bind(&driver.cuLaunchKernel, "cuLaunchKernel");
    if (!ok) return;
    driver.init_result = driver.cuInit(0);
}

const char *error_name(CUresult r) {
    const char *name = nullptr;
    if (driver.cuGetErrorName == nullptr || driver.cuGetErrorName(r, &name) != 0) name = nullptr;
    return name ? name : "unknown error";
}

/** Starts "CUDA: <call> failed: <error name> (<code>)"; the caller may
 * append what it was for, then ends the message. */
void begin_driver_error(const char *call, CUresult r) {
    loom_error_begin();
    loom_error_append_string("CUDA: ");
    loom_error_append_string(call);
    loom_error_append_string(" failed: ");
    loom_error_append_string(error_name(r));
    loom_error_append_string(" (");
    loom_error_append_int(r);
    loom_error_append_string(")");
    if (r == CUDA_ERROR_STUB_LIBRARY) {
        loom_error_append_string("; the libcuda.so.1 found is the toolkit's stub, not a driver");
    }
}

int32_t driver_error(const char *call, CUresult r, const char *what = nullptr,
                     const char *name = nullptr) {
    begin_driver_error(call, r);
    if (what) {
        loom_error_append_string(" ");
        loom_error_append_string(what);
    }
    if (name) {
        loom_error_append_string(" ");
        loom_error_append_string(name);
    }
    return loom_error_end();
}

int32_t plain_error(const char *a, const char *b = nullptr, const char *c = nullptr) {
    loom_error_begin();
    loom_error_append_string(a);
    if (b) loom_error_append_string(b);
    if (c) loom_error_append_string(c);
    return loom_error_end();
}

/** Loads the driver and initializes it once; 0 or a reported error. */
int32_t ready() {
    pthread_once(&driver_once, load_driver);
    if (!driver.handle) {
        return plain_error(
            "CUDA: the driver library libcuda.so.1 could not be loaded (no NVIDIA driver on "
            "this machine, or it is not on the library path). GPU pipelines need one.");
    }
    if (driver.missing) {
        return plain_error("CUDA: the driver library has no entry point ", driver.missing,
                           "; the NVIDIA driver is too old for Loom (it needs CUDA 12 or newer).");
    }
    if (driver.init_result != 0) return driver_error("cuInit", driver.init_result);
    return 0;
}

/** Makes sure this thread has a current context: the caller's own (set by
 * the application, e.g. PyTorch's), or else the primary context of GPU 0,
 * which every later call then shares. */
int32_t ensure_context() {
    int32_t err = ready();
    if (err) return err;
    CUcontext current = nullptr;
    CUresult r = driver.cuCtxGetCurrent(&current);
    if (r != 0) return driver_error("cuCtxGetCurrent", r);
    if (current) return 0;
    pthread_mutex_lock(&state_mutex);
    if (!primary_context) {
        int count = 0;
        r = driver.cuDeviceGetCount(&count);
        if (r == 0 && count == 0) {
            pthread_mutex_unlock(&state_mutex);
            return plain_error("CUDA: the driver sees no GPU on this machine.");
        }
        CUdevice dev = 0;
        if (r == 0) r = driver.cuDeviceGet(&dev, 0);
        if (r == 0) r = driver.cuDevicePrimaryCtxRetain(&primary_context, dev);
        if (r != 0) {
            primary_context = nullptr;
            pthread_mutex_unlock(&state_mutex);
            return driver_error("cuDevicePrimaryCtxRetain", r, "for GPU 0");
        }
    }
    CUcontext ctx = primary_context;
    pthread_mutex_unlock(&state_mutex);
    r = driver.cuCtxSetCurrent(ctx);
    if (r != 0) return driver_error("cuCtxSetCurrent", r);
    return 0;
}

// ---- Buffers ----

int64_t element_bytes(const loom_buffer_t *b) {
    int64_t bytes = (b->type.bits + 7) / 8;
    return bytes * (b->type.lanes ? b->type.lanes : 1);
}

/** The elements a buffer spans: the offsets (from its host pointer) of its
 * lowest and highest elements. False when it holds no element. */
bool span_of(const loom_buffer_t *b, int64_t *lo, int64_t *hi) {
    *lo = *hi = 0;
    if (b->dimensions > 0 && b->dim == nullptr) return false;
    for (int d = 0; d < b->dimensions; d++) {
        int64_t extent = b->dim[d].extent, stride = b->dim[d].stride;
        if (extent <= 0) return false;
        int64_t reach = (extent - 1) * stride;
        if (reach < 0) *lo += reach;
        else *hi += reach;
    }
    return true;
}

/** Copies the elements of b (and only those: a view's neighbours in the
 * same memory stay untouched) between host and device, in runs of
 * contiguous elements. */
int32_t copy_elements(loom_buffer_t *b, bool to_device, const char *name) {
    int64_t lo, hi;
    if (!span_of(b, &lo, &hi)) return 0;
    const int64_t elem = element_bytes(b);
    // Dimensions by increasing |stride|; the leading ones that tile memory
    // densely merge into one run.
    int n = 0;
    int64_t extents[64], strides[64];
    for (int d = 0; d < b->dimensions && n < 64; d++) {
        if (b->dim[d].extent == 1) continue;
        int64_t s = b->dim[d].stride, e = b->dim[d].extent;
        int k = n++;
        while (k > 0 && llabs(strides[k - 1]) > llabs(s)) {
            strides[k] = strides[k - 1];
            extents[k] = extents[k - 1];
            k--;
        }
        strides[k] = s;
        extents[k] = e;
    }
    int64_t run = 1;
    int first = 0;
    while (first < n && strides[first] == run) run *= extents[first++];
    int64_t index[64] = {0};
    while (true) {
        int64_t offset = 0;
        for (int k = first; k < n; k++) offset += index[k] * strides[k];
        uint8_t *host = b->host + offset * elem;
        CUdeviceptr dev = static_cast<CUdeviceptr>(b->device + offset * elem);
        size_t bytes = static_cast<size_t>(run * elem);
        // On a stream of the caller's, the copies are ordered after the
        // work already on it (a kernel writing this buffer, say).
        CUresult r;
        const char *call;
        if (current_stream) {
            call = to_device ? "cuMemcpyHtoDAsync" : "cuMemcpyDtoHAsync";
            r = to_device ? driver.cuMemcpyHtoDAsync(dev, host, bytes, current_stream)
                          : driver.cuMemcpyDtoHAsync(host, dev, bytes, current_stream);
        } else {
            call = to_device ? "cuMemcpyHtoD" : "cuMemcpyDtoH";
            r = to_device ? driver.cuMemcpyHtoD(dev, host, bytes)
                          : driver.cuMemcpyDtoH(host, dev, bytes);
        }
        if (r != 0) {
            return driver_error(call, r, to_device ? "copying to the GPU" : "copying to the host",
                                name);
        }
        int k = first;
        while (k < n && ++index[k] == extents[k]) index[k++] = 0;
        if (k < n) continue;
        // A copy is done when the call returns, as on the default stream:
        // the host may read what it wrote, or change what it read (pinned
        // memory is read by the copy engine while the call is long gone).
        if (current_stream) {
            r = driver.cuStreamSynchronize(current_stream);
            if (r != 0) {
                return driver_error("cuStreamSynchronize", r,
                                    to_device ? "copying to the GPU" : "copying to the host", name);
            }
        }
        return 0;
    }
}

/** Starts an error about a buffer: "CUDA: buffer <name>", or "CUDA: the
 * buffer" for one the caller passed without a name; the caller appends the
 * rest and ends it. */
void begin_buffer_error(const char *name) {
    loom_error_begin();
    loom_error_append_string(name ? "CUDA: buffer " : "CUDA: the buffer");
    if (name) loom_error_append_string(name);
}

/** "CUDA: buffer <name><what>". */
int32_t buffer_error(const char *name, const char *what) {
    begin_buffer_error(name);
    loom_error_append_string(what);
    return loom_error_end();
}

/** A buffer marked as changed on the GPU with no GPU memory would lose
 * what its caller thinks the GPU holds: reported, not guessed at. */
int32_t check_dirty_has_device(const loom_buffer_t *b, const char *name) {
    if (b->device || !(b->flags & loom_buffer_device_dirty)) return 0;
    return buffer_error(name,
                        " is marked as changed on the GPU (loom_buffer_device_dirty), but has no "
                        "GPU memory (its device field is 0). Set device to its GPU address, or "
                        "clear the flag.");
}

/** Whether both ends of the span of a buffer's caller-given GPU memory lie
 * in memory the driver knows (allocated or mapped by CUDA, on the GPU or
 * pinned on the host). A host pointer in the device field, freed memory, or
 * extents that run past the end of the allocation would otherwise fault in
 * a kernel, and leave the context unusable. Each end is asked about on its
 * own: memory mapped piecewise (cuMemMap, as PyTorch's expandable segments
 * do) is one tensor over several allocations. A span that runs into a
 * neighbouring allocation is not seen. */
int32_t check_device_memory(const loom_buffer_t *b, const char *name) {
    int64_t lo, hi;
    if (!span_of(b, &lo, &hi)) return 0;
    const int64_t elem = element_bytes(b);
    const CUdeviceptr first = static_cast<CUdeviceptr>(b->device + lo * elem),
                      last = static_cast<CUdeviceptr>(b->device + (hi + 1) * elem - 1);
    const CUdeviceptr ends[2] = {first, last};
    for (CUdeviceptr p : ends) {
        unsigned memory_type = 0;
        CUresult r =
            driver.cuPointerGetAttribute(&memory_type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p);
        if (r == 0) continue;
        begin_buffer_error(name);
        if (p == first) {
            loom_error_append_string(
                "'s device address is not memory the CUDA driver allocated or mapped "
                "(cuPointerGetAttribute: ");
            loom_error_append_string(error_name(r));
            loom_error_append_string(
                "): host memory, freed memory, or no address at all. Set its device field to "
                "GPU memory (cudaMalloc, a CUDA tensor's data), or pass host memory in its host "
                "field with device 0.");
        } else {
            loom_error_append_string(" starts in GPU memory, but its last byte, ");
            loom_error_append_int(static_cast<int64_t>(last - first));
            loom_error_append_string(
                " bytes further, is not in memory the CUDA driver allocated or mapped "
                "(cuPointerGetAttribute: ");
            loom_error_append_string(error_name(r));
            loom_error_append_string(
                "). Its extents or strides describe more memory than its device address points "
                "into.");
        }
        return loom_error_end();
    }
    return 0;
}

/** Gives b device memory for its span, if it has none. */
int32_t device_malloc(loom_buffer_t *b, const char *name) {
    if (b->device) return 0;
    if (int32_t err = check_dirty_has_device(b, name)) return err;
    int32_t err = ensure_context();
    if (err) return err;
    int64_t lo, hi;
    if (!span_of(b, &lo, &hi)) lo = hi = 0;
    const int64_t elem = element_bytes(b);
    CUdeviceptr base = 0;
    CUresult r = driver.cuMemAlloc(&base, static_cast<size_t>((hi - lo + 1) * elem));
    if (r != 0) return driver_error("cuMemAlloc", r, name ? "for buffer" : nullptr, name);
    b->device = static_cast<uint64_t>(base - lo * elem);
    b->flags |= loom_buffer_device_owned;
    b->flags &= ~static_cast<uint64_t>(loom_buffer_device_dirty);
    // The device copy is not the host's yet.
    if (b->host) b->flags |= loom_buffer_host_dirty;
    return 0;
}

int32_t to_host(loom_buffer_t *b, const char *name) {
    if (int32_t err = check_dirty_has_device(b, name)) return err;
    if (!(b->flags & loom_buffer_device_dirty)) return 0;
    if (!b->host) {
        return buffer_error(name,
                            " was written on the GPU, and is read on the host, but it has no host "
                            "memory. Give it host memory, or read it only in GPU kernels.");
    }
    int32_t err = ensure_context();
    if (!err) err = copy_elements(b, false, name);
    if (err) return err;
    b->flags &= ~static_cast<uint64_t>(loom_buffer_device_dirty);
    return 0;
}

int32_t to_device(loom_buffer_t *b, const char *name) {
    int32_t err = device_malloc(b, name);
    if (err) return err;
    if (!(b->flags & loom_buffer_host_dirty) || !b->host) return 0;
    if (b->flags & loom_buffer_device_dirty) {
        return buffer_error(name,
                            " was changed both on the host and on the GPU; Loom cannot tell which "
                            "copy holds the data. Copy one way (loom_copy_to_host / "
                            "loom_copy_to_device) before changing the other.");
    }
    err = ensure_context();
    if (!err) err = copy_elements(b, true, name);
    if (err) return err;
    b->flags &= ~static_cast<uint64_t>(loom_buffer_host_dirty);
    return 0;
}

// ---- Modules ----

// One pipeline's module in one context. A compiled pipeline keeps a pointer
// to the first; the kernels it launches are looked up once each.
struct LoadedModule {
    CUcontext ctx;
    CUmodule module;
    int num_functions;
    const char *names[32];
    CUfunction functions[32];
    LoadedModule *next;
};

/** The module of `state` for the current context, loaded on first use from
 * the cubin or, when the driver cannot load it (another GPU or an older
 * driver), from the PTX, or else from the CUDA C++ source when there is
 * one (a driver that compiles source). Called with state_mutex held. */
int32_t module_for(void **state, const uint8_t *cubin, uint64_t cubin_size, const char *ptx,
                   const char *source, const char *kernel, LoadedModule **out) {
    CUcontext ctx = nullptr;
    CUresult r = driver.cuCtxGetCurrent(&ctx);
    if (r != 0) return driver_error("cuCtxGetCurrent", r);
    for (LoadedModule *m = static_cast<LoadedModule *>(*state); m; m = m->next) {
        if (m->ctx == ctx) {
            *out = m;
            return 0;
        }
    }
    CUmodule module = nullptr;
    r = cubin_size ? driver.cuModuleLoadData(&module, cubin) : 1;
    if (r != 0) {
        CUresult from_ptx = driver.cuModuleLoadData(&module, ptx);
        if (from_ptx != 0 && source && driver.cuModuleLoadData(&module, source) == 0) from_ptx = 0;
        if (from_ptx != 0) {
            begin_driver_error("cuModuleLoadData", from_ptx);
            loom_error_append_string(" loading the PTX of kernel ");
            loom_error_append_string(kernel);
            loom_error_append_string(" (the cubin was refused: ");
            loom_error_append_string(error_name(r));
            loom_error_append_string("). Compile for this GPU's capability, or update the driver.");
            return loom_error_end();
        }
    }
    LoadedModule *m = static_cast<LoadedModule *>(calloc(1, sizeof(LoadedModule)));
    if (!m) {
        driver.cuModuleUnload(module);
        return plain_error("CUDA: out of host memory loading the module of kernel ", kernel);
    }
    m->ctx = ctx;
    m->module = module;
    m->next = static_cast<LoadedModule *>(*state);
    *state = m;
    *out = m;
    return 0;
}

int32_t function_for(LoadedModule *m, const char *kernel, CUfunction *out) {
    for (int i = 0; i < m->num_functions; i++) {
        if (m->names[i] == kernel || strcmp(m->names[i], kernel) == 0) {
            *out = m->functions[i];
            return 0;
        }
    }
    CUfunction f = nullptr;
    CUresult r = driver.cuModuleGetFunction(&f, m->module, kernel);
    if (r != 0) return driver_error("cuModuleGetFunction", r, "for kernel", kernel);
    if (m->num_functions < 32) {
        m->names[m->num_functions] = kernel;
        m->functions[m->num_functions++] = f;
    }
    *out = f;
    return 0;
}

}  // namespace

LOOM_RUNTIME_EXPORT int32_t loom_cuda_device_capability(int32_t device, int32_t *capability) {
    int32_t err = ready();
    if (err) return err;
    int count = 0;
    CUresult r = driver.cuDeviceGetCount(&count);
    if (r != 0) return driver_error("cuDeviceGetCount", r);
    if (device < 0 || device >= count) {
        loom_error_begin();
        loom_error_append_string("CUDA: there is no GPU number ");
        loom_error_append_int(device);
        loom_error_append_string("; the driver sees ");
        loom_error_append_int(count);
        loom_error_append_string(".");
        return loom_error_end();
    }
    CUdevice dev = 0;
    r = driver.cuDeviceGet(&dev, device);
    if (r != 0) return driver_error("cuDeviceGet", r);
    int major = 0, minor = 0;
    r = driver.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
    if (r != 0) return driver_error("cuDeviceGetAttribute", r);
    r = driver.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
    if (r != 0) return driver_error("cuDeviceGetAttribute", r);
    *capability = major * 10 + minor;
    return 0;
}

// ---- Buffers: the public calls ----

LOOM_RUNTIME_EXPORT int32_t loom_copy_to_host(loom_buffer_t *b) {
    return b ? to_host(b, nullptr) : 0;
}

LOOM_RUNTIME_EXPORT int32_t loom_copy_to_device(loom_buffer_t *b) {
    return b ? to_device(b, nullptr) : 0;
}

LOOM_RUNTIME_EXPORT int32_t loom_device_malloc(loom_buffer_t *b) {
    return b ? device_malloc(b, nullptr) : 0;
}

LOOM_RUNTIME_EXPORT int32_t loom_device_free(loom_buffer_t *b) {
    if (!b || !b->device) return 0;
    const uint64_t clear = loom_buffer_device_owned | loom_buffer_device_dirty;
    if (b->flags & loom_buffer_device_owned) {
        int32_t err = ensure_context();
        if (err) return err;
        CUdeviceptr base = 0;
        size_t size = 0;
        CUresult r = driver.cuMemGetAddressRange(&base, &size, static_cast<CUdeviceptr>(b->device));
        if (r != 0) return driver_error("cuMemGetAddressRange", r, "freeing a buffer's GPU memory");
        r = driver.cuMemFree(base);
        if (r != 0) return driver_error("cuMemFree", r, "freeing a buffer's GPU memory");
    }
    b->device = 0;
    b->flags &= ~clear;
    b->flags &= ~static_cast<uint64_t>(loom_buffer_host_dirty);
    return 0;
}

LOOM_RUNTIME_EXPORT int32_t loom_device_sync(void) {
    int32_t err = ensure_context();
    if (err) return err;
    const char *call;
    CUresult r = wait_for_gpu(&call);
    return r ? driver_error(call, r) : 0;
}

LOOM_RUNTIME_EXPORT void loom_cuda_set_stream(void *stream) {
    current_stream = static_cast<CUstream>(stream);
}

LOOM_RUNTIME_EXPORT void *loom_cuda_stream(void) { return current_stream; }

// ---- Called by compiled pipelines ----

LOOM_RUNTIME_EXPORT int32_t loom_cuda_buffer_for_host(loom_buffer_t *b, const char *name) {
    if (!b || (b->dimensions > 0 && !b->dim)) return 0;  // the argument checks report it
    return to_host(b, name);
}

LOOM_RUNTIME_EXPORT int32_t loom_cuda_buffer_for_kernel(loom_buffer_t *b, int32_t read,
                                                        int32_t written, const char *name,
                                                        uint64_t *device) {
    if (b->device && !(b->flags & loom_buffer_device_owned)) {
        int32_t err = ensure_context();
        if (!err) err = check_device_memory(b, name);
        if (err) return err;
    }
    int32_t err = read ? to_device(b, name) : device_malloc(b, name);
    if (err) return err;
    if (written) {
        // Every element of an output is computed, so what the host had is
        // stale from here on.
        b->flags |= loom_buffer_device_dirty;
        b->flags &= ~static_cast<uint64_t>(loom_buffer_host_dirty);
    }
    *device = b->device;
    return 0;
}

LOOM_RUNTIME_EXPORT int32_t loom_cuda_malloc(uint64_t bytes, const char *name, uint64_t *device) {
    int32_t err = ensure_context();
    if (err) return err;
    CUdeviceptr p = 0;
    CUresult r = driver.cuMemAlloc(&p, bytes ? bytes : 1);
    if (r != 0) return driver_error("cuMemAlloc", r, "for", name);
    *device = static_cast<uint64_t>(p);
    return 0;
}

LOOM_RUNTIME_EXPORT void loom_cuda_free(uint64_t device) {
    if (device && ensure_context() == 0) driver.cuMemFree(static_cast<CUdeviceptr>(device));
}

LOOM_RUNTIME_EXPORT int32_t loom_cuda_launch(void **module_state, const uint8_t *cubin,
                                             uint64_t cubin_size, const char *ptx,
                                             const char *source, const char *kernel, int32_t grid_x,
                                             int32_t grid_y, int32_t grid_z, int32_t block_x,
                                             int32_t block_y, int32_t block_z, int32_t shared_bytes,
                                             void **args) {
    if (grid_x <= 0 || grid_y <= 0 || grid_z <= 0) return 0;  // nothing to compute
    if (grid_y > 65535 || grid_z > 65535) {
        loom_error_begin();
        loom_error_append_string("CUDA: kernel ");
        loom_error_append_string(kernel);
        loom_error_append_string(" needs a grid of ");
        loom_error_append_int(grid_x);
        loom_error_append_string(" x ");
        loom_error_append_int(grid_y);
        loom_error_append_string(" x ");
        loom_error_append_int(grid_z);
        loom_error_append_string(
            " blocks; y and z are limited to 65535. Put the longest loop on gpu_blocks' x.");
        return loom_error_end();
    }
    int32_t err = ensure_context();
    if (err) return err;
    pthread_mutex_lock(&state_mutex);
    LoadedModule *m = nullptr;
    CUfunction f = nullptr;
    err = module_for(module_state, cubin, cubin_size, ptx, source, kernel, &m);
    if (!err) err = function_for(m, kernel, &f);
    pthread_mutex_unlock(&state_mutex);
    if (err) return err;
    if (shared_bytes > 48 * 1024) {
        CUresult r = driver.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                               shared_bytes);
        if (r != 0) {
            begin_driver_error("cuFuncSetAttribute", r);
            loom_error_append_string(": kernel ");
            loom_error_append_string(kernel);
            loom_error_append_string(" needs ");
            loom_error_append_int(shared_bytes);
            loom_error_append_string(
                " bytes of shared memory per block, more than this GPU allows (227 KiB on "
                "sm_90, 163 KiB on sm_80). With a Func in shared memory sized at launch (e.g. a "
                "whole row), these arguments are too large for the schedule: stage less per "
                "block.");
            return loom_error_end();
        }
    }
    CUresult r =
        driver.cuLaunchKernel(f, grid_x, grid_y, grid_z, block_x, block_y, block_z,
                              static_cast<unsigned>(shared_bytes), current_stream, args, nullptr);
    if (r != 0) return driver_error("cuLaunchKernel", r, "for kernel", kernel);
    return 0;
}

LOOM_RUNTIME_EXPORT int32_t loom_cuda_finish(const char *pipeline, const char *kernels) {
    const char *call;
    CUresult r = wait_for_gpu(&call);
    if (r == 0) return 0;
    begin_driver_error(call, r);
    loom_error_append_string(" after the kernels of pipeline ");
    loom_error_append_string(pipeline);
    loom_error_append_string(" (");
    loom_error_append_string(kernels);
    loom_error_append_string(
        ") ran: one of them faulted, or a check inside it failed. Run it "
        "under compute-sanitizer to find which.");
    return loom_error_end();
}

LOOM_RUNTIME_EXPORT void loom_cuda_release_module(void **module_state) {
    if (!module_state) return;
    pthread_mutex_lock(&state_mutex);
    LoadedModule *m = static_cast<LoadedModule *>(*module_state);
    *module_state = nullptr;
    pthread_mutex_unlock(&state_mutex);
    while (m) {
        LoadedModule *next = m->next;
        if (driver.cuModuleUnload) driver.cuModuleUnload(m->module);
        free(m);
        m = next;
    }
}

namespace {

int32_t cuda_deallocate(uint64_t device) {
    loom_cuda_free(device);
    return 0;
}

// In loom_device_api_t's order.
const loom_device_api_t cuda_api = {
    loom_cuda_buffer_for_host, loom_cuda_buffer_for_kernel,
    loom_cuda_malloc,          cuda_deallocate,
    loom_cuda_launch,          loom_cuda_finish,
    loom_cuda_release_module,
};

}  // namespace

LOOM_RUNTIME_EXPORT const loom_device_api_t *loom_cuda_device_api(void) { return &cuda_api; }
