// The device interface (loom_runtime.h's loom_device_*): the only runtime
// calls compiled code makes for its GPU work, which OffloadGPULoops writes
// into a pipeline's IR. Each goes to one GPU API's implementation, so that
// host code generation names no API: CUDA's is the only one, and a second
// (HIP) would be chosen here, by the API a pipeline's module was compiled
// for and the one that owns a buffer's GPU memory (loom_buffer_t's reserved
// device_interface field).
#include "loom_runtime_internal.h"

namespace {

const loom_device_api_t *api() { return loom_cuda_device_api(); }

}  // namespace

LOOM_RUNTIME_EXPORT int32_t loom_device_buffer_for_host(loom_buffer_t *b, const char *name) {
    return api()->buffer_for_host(b, name);
}

LOOM_RUNTIME_EXPORT int32_t loom_device_buffer_for_kernel(loom_buffer_t *b, int32_t read,
                                                          int32_t written, const char *name,
                                                          uint64_t *device) {
    return api()->buffer_for_kernel(b, read, written, name, device);
}

LOOM_RUNTIME_EXPORT int32_t loom_device_allocate(uint64_t bytes, const char *name,
                                                 uint64_t *device) {
    return api()->allocate(bytes, name, device);
}

LOOM_RUNTIME_EXPORT int32_t loom_device_deallocate(uint64_t device) {
    return api()->deallocate(device);
}

LOOM_RUNTIME_EXPORT int32_t loom_device_launch(void **module_state, const uint8_t *binary,
                                               uint64_t binary_size, const char *assembly,
                                               const char *source, const char *kernel,
                                               int32_t grid_x, int32_t grid_y, int32_t grid_z,
                                               int32_t block_x, int32_t block_y, int32_t block_z,
                                               int32_t shared_bytes, void **args) {
    return api()->launch(module_state, binary, binary_size, assembly, source, kernel, grid_x,
                         grid_y, grid_z, block_x, block_y, block_z, shared_bytes, args);
}

LOOM_RUNTIME_EXPORT int32_t loom_device_finish(const char *pipeline, const char *kernels) {
    return api()->finish(pipeline, kernels);
}

LOOM_RUNTIME_EXPORT void loom_device_release_module(void **module_state) {
    api()->release_module(module_state);
}
