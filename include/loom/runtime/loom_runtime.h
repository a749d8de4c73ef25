/* The C ABI shared by Loom's compiled pipelines (JIT and AOT) and its runtime.
 * Plain C so that AOT libraries can be called from any language. */
#ifndef LOOM_RUNTIME_H
#define LOOM_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Type codes, equal to loom::Type::Code and to DLPack's DLDataTypeCode
 * where they overlap (int 0, uint 1, float 2, bfloat 4). */
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

/** Error codes returned by compiled pipelines. */
enum {
    loom_success = 0,
    loom_error_generic = -1,
    loom_error_out_of_memory = -2,
};

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

/** IEEE half precision conversions, rounding to nearest even. */
float loom_half_to_float(uint16_t h);
uint16_t loom_float_to_half(float f);

/** Number of threads the pool uses (LOOM_NUM_THREADS, default: hardware). */
int32_t loom_num_threads(void);

#ifdef __cplusplus
}
#endif

#endif
