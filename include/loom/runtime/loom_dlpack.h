/* Conversions between loom_buffer_t and DLPack's DLTensor (DLPack >= 0.6).
 *
 * If DLPack's own header is available (<dlpack/dlpack.h>, Debian's
 * libdlpack-dev) or was included before this one, its definitions are used.
 * Otherwise this header defines the DLPack types it needs with DLPack's ABI
 * and DLPack's include guard, so a dlpack.h included *after* this header is
 * skipped: include dlpack.h first if you need more of it.
 *
 * Both functions are part of the Loom runtime: in libloom and in every static
 * library made by compile_to_static_library. Neither copies element data. */
#ifndef LOOM_DLPACK_H
#define LOOM_DLPACK_H

#ifndef LOOM_RUNTIME_H /* also defined by every header Loom generates */
#include "loom_runtime.h"
#endif

#if !defined(DLPACK_DLPACK_H_) && !defined(LOOM_NO_SYSTEM_DLPACK) && defined(__has_include)
#if __has_include(<dlpack/dlpack.h>)
#include <dlpack/dlpack.h>
#endif
#endif

#ifndef DLPACK_DLPACK_H_
#define DLPACK_DLPACK_H_
#define LOOM_DEFINES_DLPACK 1

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    kDLCPU = 1,
    kDLCUDA = 2,
    kDLCUDAHost = 3,
    kDLOpenCL = 4,
    kDLVulkan = 7,
    kDLMetal = 8,
    kDLVPI = 9,
    kDLROCM = 10,
    kDLROCMHost = 11,
    kDLExtDev = 12,
    kDLCUDAManaged = 13,
    kDLOneAPI = 14,
} DLDeviceType;

typedef struct {
    DLDeviceType device_type;
    int32_t device_id;
} DLDevice;

typedef enum {
    kDLInt = 0,
    kDLUInt = 1,
    kDLFloat = 2,
    kDLOpaqueHandle = 3,
    kDLBfloat = 4,
    kDLComplex = 5,
    kDLBool = 6,
} DLDataTypeCode;

typedef struct {
    uint8_t code;
    uint8_t bits;
    uint16_t lanes;
} DLDataType;

typedef struct {
    void *data;
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape;
    int64_t *strides; /* in elements; NULL means compact row-major */
    uint64_t byte_offset;
} DLTensor;

typedef struct DLManagedTensor {
    DLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;

#ifdef __cplusplus
}
#endif

#endif /* DLPACK_DLPACK_H_ */

#ifdef __cplusplus
extern "C" {
#endif

/** Describes the memory of `t` as a loom_buffer_t, without copying: `out`
 * gets the data pointer (data + byte_offset), the element type, and one
 * loom_dimension_t per tensor dimension (min 0, extent = shape, stride =
 * strides or the compact row-major strides), stored in dims_storage, which
 * must hold max_dims entries and outlive `out`. DLPack's dimension order is
 * Loom's (dimension 0 outermost).
 *
 * A kDLCPU tensor's data becomes `host`. A kDLCUDA tensor's becomes
 * `device`, with no host memory and loom_buffer_device_dirty set: GPU
 * kernels read and write it in place, a CPU stage that reads it is refused
 * with an error, and loom_device_free leaves the memory to its owner. The
 * tensor must be on the GPU whose context is current on the calling thread
 * (PyTorch makes its current device's context current), or on GPU 0 when
 * none is.
 *
 * Returns loom_success, or loom_error_unsupported (with a message for
 * loom_last_error_message()) for a null argument, a device other than
 * kDLCPU or kDLCUDA, more than max_dims dimensions, a shape or stride outside int32,
 * a data type Loom has no buffer type for (complex, vector lanes, odd bit
 * widths), or a byte offset or data pointer not aligned to the element size.
 * DLPack's bool (kDLBool, 8 bits) becomes Loom's bool (uint, 1 bit). */
int loom_buffer_from_dltensor(const DLTensor *t, loom_buffer_t *out, loom_dimension_t *dims_storage,
                              int max_dims);

/** Describes `b` as a DLTensor without copying: on kDLCPU with the host
 * pointer as data when the host copy is current, on kDLCUDA (device_id 0)
 * with the GPU pointer when the buffer has no host memory or its GPU copy
 * is newer (loom_buffer_device_dirty). data is the element at the buffer's
 * mins (DLPack has no mins), byte_offset 0, shape and strides (in
 * elements) written to shape_storage and strides_storage, which must hold
 * max_dims entries and outlive `out`. Returns loom_success, or
 * loom_error_unsupported for a null argument, a buffer changed both on the
 * host and on the GPU, or more than max_dims dimensions. */
int loom_buffer_to_dltensor(const loom_buffer_t *b, DLTensor *out, int64_t *shape_storage,
                            int64_t *strides_storage, int max_dims);

#ifdef __cplusplus
}
#endif

#endif /* LOOM_DLPACK_H */
