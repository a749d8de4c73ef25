// Heap memory for compiled pipelines: 64-byte aligned (a cache line, and the
// width of an AVX-512 register), so vector loads of an allocation never split
// a line at its start.
#include <cstdlib>

#include "loom/runtime/loom_runtime.h"

extern "C" {

void *loom_malloc(size_t bytes) {
    // Round up: aligned_alloc requires a multiple of the alignment, and a zero
    // size still yields a unique pointer, so callers can test for null alone.
    size_t rounded = (bytes + 63) & ~static_cast<size_t>(63);
    if (rounded < bytes) return nullptr;  // overflow
    if (rounded == 0) rounded = 64;
    return std::aligned_alloc(64, rounded);
}

void loom_free(void *ptr) { std::free(ptr); }

}  // extern "C"
