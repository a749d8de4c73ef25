// Heap memory for compiled pipelines: 64-byte aligned (a cache line, and the
// width of an AVX-512 register), so vector loads of an allocation never split
// a line at its start.
#include <stdlib.h>

#include "loom_runtime_internal.h"

LOOM_RUNTIME_EXPORT void *loom_malloc(size_t bytes) {
    // Round up: aligned_alloc requires a multiple of the alignment, and a zero
    // size still yields a unique pointer, so callers can test for null alone.
    size_t rounded = (bytes + 63) & ~static_cast<size_t>(63);
    if (rounded < bytes) return nullptr;  // overflow
    if (rounded == 0) rounded = 64;
    return aligned_alloc(64, rounded);
}

LOOM_RUNTIME_EXPORT void loom_free(void *ptr) { free(ptr); }
