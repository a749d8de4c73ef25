// The CUDA driver (libcuda.so.1), loaded with dlopen on first use: neither
// libloom nor an AOT library links it, so both load and run on machines
// without a GPU, and a GPU pipeline there fails at its first use with a
// message saying why. Every driver call's failure becomes a Loom error that
// names the call.
//
// The driver API is declared here with the few types it needs, so that
// building Loom needs no CUDA headers.
#include <dlfcn.h>
#include <pthread.h>

#include "loom_runtime_internal.h"

namespace {

typedef int CUresult;
typedef int CUdevice;
const int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
const int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;

struct Driver {
    void *handle;
    CUresult (*cuInit)(unsigned);
    CUresult (*cuDeviceGetCount)(int *);
    CUresult (*cuDeviceGet)(CUdevice *, int);
    CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
    CUresult (*cuGetErrorName)(CUresult, const char **);
    CUresult init_result;  // of cuInit(0), if the library loaded
};

Driver driver;
pthread_once_t driver_once = PTHREAD_ONCE_INIT;

template <typename F> bool bind(F *f, const char *name) {
    *f = reinterpret_cast<F>(dlsym(driver.handle, name));
    return *f != nullptr;
}

void load_driver() {
    driver.handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!driver.handle) return;
    bool ok = bind(&driver.cuInit, "cuInit") &&
              bind(&driver.cuDeviceGetCount, "cuDeviceGetCount") &&
              bind(&driver.cuDeviceGet, "cuDeviceGet") &&
              bind(&driver.cuDeviceGetAttribute, "cuDeviceGetAttribute") &&
              bind(&driver.cuGetErrorName, "cuGetErrorName");
    if (!ok) {
        dlclose(driver.handle);
        driver.handle = nullptr;
        return;
    }
    driver.init_result = driver.cuInit(0);
}

/** Reports a failed driver call: "<call> failed: <error name> (<code>)". */
int32_t driver_error(const char *call, CUresult r) {
    const char *name = nullptr;
    if (driver.cuGetErrorName == nullptr || driver.cuGetErrorName(r, &name) != 0) name = nullptr;
    loom_error_begin();
    loom_error_append_string("CUDA: ");
    loom_error_append_string(call);
    loom_error_append_string(" failed: ");
    loom_error_append_string(name ? name : "unknown error");
    loom_error_append_string(" (");
    loom_error_append_int(r);
    loom_error_append_string(")");
    if (r == 34 /* CUDA_ERROR_STUB_LIBRARY */) {
        loom_error_append_string("; the libcuda.so.1 found is the toolkit's stub, not a driver");
    }
    return loom_error_end();
}

/** Loads the driver and initializes it once; 0 or a reported error. */
int32_t ready() {
    pthread_once(&driver_once, load_driver);
    if (!driver.handle) {
        loom_error_begin();
        loom_error_append_string(
            "CUDA: the driver library libcuda.so.1 could not be loaded (no NVIDIA driver on "
            "this machine, or it is not on the library path). GPU pipelines need one.");
        return loom_error_end();
    }
    if (driver.init_result != 0) return driver_error("cuInit", driver.init_result);
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
