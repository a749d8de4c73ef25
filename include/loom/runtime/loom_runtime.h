/* The C ABI shared by Loom's compiled pipelines (JIT and AOT) and its runtime.
 * Plain C so that AOT libraries can be called from any language. Loom's
 * docs/aot.md documents it; every header Loom generates carries this file. */
#ifndef LOOM_RUNTIME_H
#define LOOM_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Type codes, equal to loom::Type::Code and to DLPack's DLDataTypeCode
 * (int 0, uint 1, float 2, opaque handle 3, bfloat 4). bool is uint with
 * 1 bit, stored as one byte per element. */
typedef enum loom_type_code_t {
    loom_type_int = 0,
    loom_type_uint = 1,
    loom_type_float = 2,
    loom_type_bfloat = 4,
    loom_type_handle = 3
} loom_type_code_t;

typedef struct loom_type_t {
    uint8_t code; /* a loom_type_code_t */
    uint8_t bits;
    uint16_t lanes;
} loom_type_t;

/** One dimension of a buffer. Index order is NumPy's: dim[0] is the
 * outermost dimension, dim[dimensions - 1] the innermost. Strides are in
 * elements, not bytes. */
typedef struct loom_dimension_t {
    int32_t min, extent, stride;
    uint32_t flags;
} loom_dimension_t;

/** A strided view of memory. The element at coordinates (c_0, ..., c_n-1)
 * is at host + sum_k (c_k - dim[k].min) * dim[k].stride elements.
 *
 * `device` is the GPU address of the same element as `host`, with the same
 * strides, or 0 when the buffer has no GPU memory. `flags` (loom_buffer_flags_t)
 * say which copy is newer. A buffer may have only GPU memory (host null);
 * GPU pipelines accept it wherever only their kernels touch it. */
typedef struct loom_buffer_t {
    uint64_t device;
    const void *device_interface; /* reserved; null */
    uint8_t *host;
    uint64_t flags;
    loom_type_t type;
    int32_t dimensions;
    loom_dimension_t *dim;
    void *padding;
} loom_buffer_t;

/** Bits of loom_buffer_t.flags. Compiled pipelines keep them: a kernel's
 * output becomes device-dirty, an output written on the CPU host-dirty (if
 * it has GPU memory), and each side copies from the other when that one is
 * dirty before reading. Code that writes `host` directly sets host_dirty. */
typedef enum loom_buffer_flags_t {
    loom_buffer_host_dirty = 1,   /* the host copy is newer than the GPU's */
    loom_buffer_device_dirty = 2, /* the GPU copy is newer than the host's */
    loom_buffer_device_owned = 4  /* Loom allocated `device`; loom_device_free frees it */
} loom_buffer_flags_t;

/** Error codes returned by compiled pipelines and runtime functions. Every
 * failure also leaves a message for loom_last_error_message(). A failed
 * argument check (null, type, rank, size or stride of a buffer) and any other
 * failed assertion return loom_error_generic. */
enum {
    loom_success = 0,
    loom_error_generic = -1,
    loom_error_out_of_memory = -2,
    /** A DLPack conversion was refused (device, dtype, size or alignment). */
    loom_error_unsupported = -3,
};

/* ---- Metadata of an AOT-compiled pipeline (<fn_name>_metadata()). ---- */

typedef enum loom_argument_kind_t {
    loom_argument_input_buffer = 0,
    loom_argument_input_scalar = 1,
    loom_argument_output_buffer = 2
} loom_argument_kind_t;

/** One argument of a pipeline, in call order. */
typedef struct loom_argument_t {
    const char *name;
    int32_t kind;       /* a loom_argument_kind_t */
    int32_t dimensions; /* 0 for scalars */
    loom_type_t type;   /* element type of a buffer, or the scalar's type */
} loom_argument_t;

#define LOOM_FILTER_METADATA_VERSION 1

typedef struct loom_filter_metadata_t {
    int32_t version; /* LOOM_FILTER_METADATA_VERSION */
    int32_t num_arguments;
    const loom_argument_t *arguments;
    const char *target; /* the target string it was compiled for */
    const char *name;   /* the C name of the pipeline function */
} loom_filter_metadata_t;

/* ---- Runtime services called by compiled code. ---- */

/** Begins, extends and ends the error message of a failing pipeline. The
 * message is kept per thread; loom_last_error_message() returns it. */
void loom_error_begin(void);
void loom_error_append_string(const char *s);
void loom_error_append_int(int64_t v);
void loom_error_append_float(double v);
int32_t loom_error_end(void);
const char *loom_last_error_message(void);

/** Optional hook: called with each error message as it is reported. */
typedef void (*loom_error_handler_t)(const char *message);
void loom_set_error_handler(loom_error_handler_t handler);

/** Heap memory for allocations that do not fit on the stack: 64-byte aligned. */
void *loom_malloc(size_t bytes);
void loom_free(void *ptr);

/** Runs task(i, closure) for i in [min, min + extent) on the thread pool and
 * waits for all of them. Returns the first non-zero task result, or 0. */
typedef int32_t (*loom_task_t)(int32_t i, uint8_t *closure);
int32_t loom_do_par_for(loom_task_t task, int32_t min, int32_t extent, uint8_t *closure);

/** The compute capability (major * 10 + minor, e.g. 90) of GPU `device`,
 * through the CUDA driver, which is loaded on first use. Returns 0, or an
 * error code with a message: no driver, no such device, a failed driver
 * call (named). */
int32_t loom_cuda_device_capability(int32_t device, int32_t *capability);

/* ---- GPU memory of buffers (CUDA). Each returns 0 or an error code with
 * a message; without a driver or a GPU they fail with one saying so. ---- */

/** Copies the GPU's data to the host if the GPU's copy is newer. */
int32_t loom_copy_to_host(loom_buffer_t *b);
/** Gives b GPU memory if it has none, and copies the host's data there if
 * the host's copy is newer (or the GPU memory is new). */
int32_t loom_copy_to_device(loom_buffer_t *b);
/** Gives b GPU memory for its elements if it has none (no copy). */
int32_t loom_device_malloc(loom_buffer_t *b);
/** Frees GPU memory that Loom allocated, and forgets any other (whose
 * owner frees it). The host's copy is kept as it is. */
int32_t loom_device_free(loom_buffer_t *b);
/** Waits until every kernel Loom launched has finished (on this thread's
 * stream, when it has one). */
int32_t loom_device_sync(void);

/** Puts this thread's GPU work on `stream` (a CUstream of the current
 * context, e.g. PyTorch's torch.cuda.current_stream().cuda_stream): kernel
 * launches and copies are ordered after the work already on it, a copy
 * returns once it is done, and a pipeline returns once its stream has
 * finished its kernels, without waiting for other streams. Null (the default) is the legacy default
 * stream, and a pipeline then waits for the whole context. The stream is per thread and stays set
 * until changed; the caller keeps it alive while it is set. */
void loom_cuda_set_stream(void *stream);
/** This thread's stream (null: the legacy default stream). */
void *loom_cuda_stream(void);

/* ---- The device interface: every call compiled code makes for its GPU
 * work. Host code names no GPU API; each call goes to the implementation of
 * the API the pipeline's kernels were compiled for (CUDA's, the loom_cuda_*
 * functions below, is the only one so far). Each returns 0 or an error code
 * with a message. ---- */

/** Copies b's GPU data to the host if that is newer, before the CPU reads
 * it. A null or malformed descriptor is left to the argument checks. */
int32_t loom_device_buffer_for_host(loom_buffer_t *b, const char *name);
/** Gives b GPU memory if it has none (its span, with the host's strides),
 * copies the host's data there first if the kernel reads b and the host's
 * copy is newer, and marks b device-dirty if the kernel writes it; *device
 * receives b's GPU address. */
int32_t loom_device_buffer_for_kernel(loom_buffer_t *b, int32_t read, int32_t written,
                                      const char *name, uint64_t *device);
/** GPU memory of `bytes` for an allocation only kernels touch (named in
 * errors), and its release (0 is none; returns 0). */
int32_t loom_device_allocate(uint64_t bytes, const char *name, uint64_t *device);
int32_t loom_device_deallocate(uint64_t device);
/** Launches `kernel` on a grid of blocks. module_state is a pipeline's own
 * pointer (initially null) to its loaded module, loaded on first use in each
 * context from `binary` (a cubin), or else from `assembly` (PTX), or else
 * from `source` when one is given (JIT code gives the CUDA C++, for a driver
 * that compiles source itself, such as the tests' stand-in that runs
 * kernels on the CPU). args[i] points to the value of the kernel's i-th
 * parameter (a GPU address for a buffer). An empty grid launches nothing. */
int32_t loom_device_launch(void **module_state, const uint8_t *binary, uint64_t binary_size,
                           const char *assembly, const char *source, const char *kernel,
                           int32_t grid_x, int32_t grid_y, int32_t grid_z, int32_t block_x,
                           int32_t block_y, int32_t block_z, int32_t shared_bytes, void **args);
/** Waits for the kernels launched, so that a pipeline returns after they
 * have finished; a fault is reported with the pipeline's name and its
 * kernels (a comma-separated list). */
int32_t loom_device_finish(const char *pipeline, const char *kernels);
/** Unloads the modules of a module_state (when the code that owns it goes). */
void loom_device_release_module(void **module_state);

/* The CUDA implementation of the device interface, callable directly too:
 * loom_cuda_X is loom_device_X (loom_cuda_malloc and loom_cuda_free are
 * loom_device_allocate and loom_device_deallocate). */
int32_t loom_cuda_buffer_for_host(loom_buffer_t *b, const char *name);
int32_t loom_cuda_buffer_for_kernel(loom_buffer_t *b, int32_t read, int32_t written,
                                    const char *name, uint64_t *device);
int32_t loom_cuda_malloc(uint64_t bytes, const char *name, uint64_t *device);
void loom_cuda_free(uint64_t device);
int32_t loom_cuda_launch(void **module_state, const uint8_t *cubin, uint64_t cubin_size,
                         const char *ptx, const char *source, const char *kernel, int32_t grid_x,
                         int32_t grid_y, int32_t grid_z, int32_t block_x, int32_t block_y,
                         int32_t block_z, int32_t shared_bytes, void **args);
int32_t loom_cuda_finish(const char *pipeline, const char *kernels);
void loom_cuda_release_module(void **module_state);

/** IEEE half precision conversions, rounding to nearest even. */
float loom_half_to_float(uint16_t h);
uint16_t loom_float_to_half(float f);

/** A type's name as Loom prints it ("float32", "bool", "int8x4"), for error
 * messages. Valid until the next call on the same thread. */
const char *loom_type_name(int32_t code, int32_t bits, int32_t lanes);

/** Number of threads the pool uses (LOOM_NUM_THREADS, default: hardware). */
int32_t loom_num_threads(void);

#ifdef __cplusplus
}
#endif

#endif
