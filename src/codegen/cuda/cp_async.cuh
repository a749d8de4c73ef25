// cp.async (sm_80 and later): each thread copies 16 (or 4) bytes from
// global to shared memory without waiting for them; `bytes` of them come
// from global memory and the rest are zeros (a tile's ragged edge: 0 reads
// nothing). Both addresses must be aligned to the copy's size (a GPU
// faults with a misaligned address otherwise). Copies issued since the
// last commit form a group; wait<N> returns when at most N of this
// thread's groups are still in flight, and a barrier then makes every
// thread's landed copies visible to the block. A copy that is never waited
// for has not landed.
__device__ __forceinline__ void loom_cp_async_16(void *dst, const void *src, int bytes) {
#if defined(__CUDA_ARCH__)
    const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(bytes));
#else
    loom_cpu::cp_async(dst, src, 16, bytes);
#endif
}
// 16 bytes, all from global memory (no zero fill: a chunk known to be
// inside the tile's bounds), which spares the size's arithmetic.
__device__ __forceinline__ void loom_cp_async_16_full(void *dst, const void *src) {
#if defined(__CUDA_ARCH__)
    const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(src));
#else
    loom_cpu::cp_async(dst, src, 16, 16);
#endif
}
// 4 bytes, through L1 (.cg takes 16-byte copies only).
__device__ __forceinline__ void loom_cp_async_4(void *dst, const void *src, int bytes) {
#if defined(__CUDA_ARCH__)
    const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(d), "l"(src), "r"(bytes));
#else
    loom_cpu::cp_async(dst, src, 4, bytes);
#endif
}
__device__ __forceinline__ void loom_cp_async_commit() {
#if defined(__CUDA_ARCH__)
    asm volatile("cp.async.commit_group;\n" ::);
#else
    loom_cpu::cp_async_commit();
#endif
}
template <int N> __device__ __forceinline__ void loom_cp_async_wait() {
#if defined(__CUDA_ARCH__)
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
#else
    loom_cpu::cp_async_wait(N);
#endif
}
