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
 * is at host + sum_k (c_k - dim[k].min) * dim[k].stride elements. */
typedef struct loom_buffer_t {
    uint64_t device;
    const void *device_interface;
    uint8_t *host;
    uint64_t flags;
    loom_type_t type;
    int32_t dimensions;
    loom_dimension_t *dim;
    void *padding;
} loom_buffer_t;

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
