// Heap memory for compiled pipelines: 64-byte aligned (a cache line, and the
// width of an AVX-512 register), so vector loads of an allocation never split
// a line at its start.
//
// Pipelines allocate scratch per tile or per row, thousands of times a run,
// so this is on the hot path. glibc's aligned_alloc goes through its slower
// memalign path; plain malloc with the alignment done here (the original
// pointer kept just below the aligned block) is what Halide's runtime does.
#include <stdint.h>
#include <stdlib.h>

#include "loom_runtime_internal.h"

namespace {
constexpr size_t kAlignment = 64;
// Room for the alignment and for the original pointer in front of the block.
constexpr size_t kOverhead = kAlignment + sizeof(void *);
}  // namespace

LOOM_RUNTIME_EXPORT void *loom_malloc(size_t bytes) {
    // A zero size still yields a unique pointer, so callers can test for
    // null alone.
    if (bytes > SIZE_MAX - kOverhead) return nullptr;  // overflow
    void *base = malloc(bytes + kOverhead);
    if (!base) return nullptr;
    uintptr_t aligned = (reinterpret_cast<uintptr_t>(base) + kOverhead) & ~(kAlignment - 1);
    reinterpret_cast<void **>(aligned)[-1] = base;
    return reinterpret_cast<void *>(aligned);
}

LOOM_RUNTIME_EXPORT void loom_free(void *ptr) {
    if (ptr) free(reinterpret_cast<void **>(ptr)[-1]);
}
