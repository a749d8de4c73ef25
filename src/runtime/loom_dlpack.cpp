// DLPack conversions (see loom/runtime/loom_dlpack.h). Part of the runtime so
// that AOT libraries can take tensors from Python frameworks without libloom.
#include "loom/runtime/loom_dlpack.h"

#include <stdint.h>

#include "loom_runtime_internal.h"

namespace {

int refuse(const char *what, const char *detail = nullptr, int64_t value = 0) {
    loom_error_begin();
    loom_error_append_string(what);
    if (detail) {
        loom_error_append_string(detail);
        loom_error_append_int(value);
    }
    loom_error_append_string(".");
    loom_error_end();
    return loom_error_unsupported;
}

bool fits_int32(int64_t v) { return v >= INT32_MIN && v <= INT32_MAX; }

}  // namespace

LOOM_RUNTIME_EXPORT int loom_buffer_from_dltensor(const DLTensor *t, loom_buffer_t *out,
                                                  loom_dimension_t *dims_storage, int max_dims) {
    if (!t || !out) return refuse("loom_buffer_from_dltensor: null tensor or output buffer");
    const bool on_gpu = t->device.device_type == kDLCUDA;
    if (t->device.device_type != kDLCPU && !on_gpu) {
        return refuse(
            "loom_buffer_from_dltensor: the tensor is neither in CPU memory (kDLCPU = 1) nor "
            "in CUDA device memory (kDLCUDA = 2)",
            "; its device type is ", t->device.device_type);
    }
    if (t->ndim < 0 || t->ndim > max_dims) {
        return refuse(
            "loom_buffer_from_dltensor: the tensor has more dimensions than the "
            "storage passed for them, or a negative count",
            "; ndim = ", t->ndim);
    }
    if (t->ndim > 0 && (!dims_storage || !t->shape)) {
        return refuse("loom_buffer_from_dltensor: null shape or dimension storage");
    }
    loom_type_t type;
    type.code = t->dtype.code;
    type.bits = t->dtype.bits;
    type.lanes = t->dtype.lanes;
    int bytes = t->dtype.bits / 8;
    bool bits_ok = false;
    switch (t->dtype.code) {
    case kDLInt:
    case kDLUInt:
        bits_ok =
            t->dtype.bits == 8 || t->dtype.bits == 16 || t->dtype.bits == 32 || t->dtype.bits == 64;
        break;
    case kDLFloat:
        bits_ok = t->dtype.bits == 16 || t->dtype.bits == 32 || t->dtype.bits == 64;
        break;
    case kDLBfloat: bits_ok = t->dtype.bits == 16; break;
    case kDLBool:
        bits_ok = t->dtype.bits == 8;
        type.code = loom_type_uint;
        type.bits = 1;
        break;
    default:
        return refuse("loom_buffer_from_dltensor: Loom has no buffer type for DLPack type code",
                      " ", t->dtype.code);
    }
    if (!bits_ok) {
        return refuse(
            "loom_buffer_from_dltensor: Loom has no buffer type for this DLPack type "
            "code with this many bits",
            "; bits = ", t->dtype.bits);
    }
    if (t->dtype.lanes != 1) {
        return refuse("loom_buffer_from_dltensor: vector element types are not supported",
                      "; lanes = ", t->dtype.lanes);
    }
    if (t->byte_offset % static_cast<uint64_t>(bytes) != 0 ||
        (reinterpret_cast<uintptr_t>(t->data) + t->byte_offset) % static_cast<uint64_t>(bytes)) {
        return refuse(
            "loom_buffer_from_dltensor: the data pointer plus byte_offset is not a "
            "multiple of the element size",
            "; byte_offset = ", static_cast<int64_t>(t->byte_offset));
    }
    int64_t compact = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        int64_t extent = t->shape[d];
        int64_t stride = t->strides ? t->strides[d] : compact;
        if (extent < 0 || !fits_int32(extent)) {
            return refuse("loom_buffer_from_dltensor: a dimension's size does not fit in int32",
                          "; size = ", extent);
        }
        if (!fits_int32(stride)) {
            return refuse("loom_buffer_from_dltensor: a dimension's stride does not fit in int32",
                          "; stride = ", stride);
        }
        dims_storage[d].min = 0;
        dims_storage[d].extent = static_cast<int32_t>(extent);
        dims_storage[d].stride = static_cast<int32_t>(stride);
        dims_storage[d].flags = 0;
        // At most 2^62 here: the next dimension's stride check refuses it.
        compact *= extent > 0 ? extent : 1;
    }
    uint8_t *data = static_cast<uint8_t *>(t->data) + t->byte_offset;
    out->device_interface = nullptr;
    if (on_gpu) {
        // The GPU memory is the data and there is no host copy: kernels
        // read and write it in place; a CPU stage that reads it is refused
        // at run time (loom_cuda_buffer_for_host). Not device_owned, so
        // loom_device_free leaves the memory to its owner.
        out->device = reinterpret_cast<uint64_t>(data);
        out->host = nullptr;
        out->flags = loom_buffer_device_dirty;
    } else {
        out->device = 0;
        out->host = data;
        out->flags = 0;
    }
    out->type = type;
    out->dimensions = t->ndim;
    out->dim = t->ndim > 0 ? dims_storage : nullptr;
    out->padding = nullptr;
    return loom_success;
}

LOOM_RUNTIME_EXPORT int loom_buffer_to_dltensor(const loom_buffer_t *b, DLTensor *out,
                                                int64_t *shape_storage, int64_t *strides_storage,
                                                int max_dims) {
    if (!b || !out) return refuse("loom_buffer_to_dltensor: null buffer or output tensor");
    // A buffer whose data is on the GPU alone (no host memory, or the GPU
    // copy newer) converts to a kDLCUDA tensor; one whose host copy is
    // current, to a kDLCPU tensor.
    const bool on_gpu = b->device != 0 && (!b->host || (b->flags & loom_buffer_device_dirty) != 0);
    if (b->device_interface != nullptr) {
        return refuse(
            "loom_buffer_to_dltensor: the buffer has a device interface Loom does not know");
    }
    if (on_gpu && b->host && (b->flags & loom_buffer_host_dirty)) {
        return refuse(
            "loom_buffer_to_dltensor: the buffer was changed both on the host and on the GPU; "
            "copy one way (loom_copy_to_host / loom_copy_to_device) first");
    }
    if (b->dimensions < 0 || b->dimensions > max_dims) {
        return refuse(
            "loom_buffer_to_dltensor: the buffer has more dimensions than the "
            "storage passed for them, or a negative count",
            "; dimensions = ", b->dimensions);
    }
    if (b->dimensions > 0 && (!shape_storage || !strides_storage || !b->dim)) {
        return refuse("loom_buffer_to_dltensor: null shape, stride or dimension storage");
    }
    for (int d = 0; d < b->dimensions; d++) {
        shape_storage[d] = b->dim[d].extent;
        strides_storage[d] = b->dim[d].stride;
    }
    out->data = on_gpu ? reinterpret_cast<void *>(static_cast<uintptr_t>(b->device)) : b->host;
    out->device.device_type = on_gpu ? kDLCUDA : kDLCPU;
    out->device.device_id = 0;
    out->ndim = b->dimensions;
    out->dtype.code = b->type.code;
    out->dtype.bits = b->type.bits;
    out->dtype.lanes = b->type.lanes;
    if (b->type.code == loom_type_uint && b->type.bits == 1) {
        out->dtype.code = kDLBool;
        out->dtype.bits = 8;
    }
    out->shape = b->dimensions > 0 ? shape_storage : nullptr;
    out->strides = b->dimensions > 0 ? strides_storage : nullptr;
    out->byte_offset = 0;
    return loom_success;
}
