// ldmatrix.sync.aligned.m8n8 (sm_75 and later): the warp loads 8 x 8
// matrices of 16-bit elements from shared memory into mma fragments. For
// x4 (x2), lanes 8j to 8j + 7 give the addresses of rows 0 to 7 of matrix
// j; lane l then holds, in register j, the two elements of row l / 4 at
// columns 2 (l % 4) and 2 (l % 4) + 1 of matrix j (the lower in the low
// half), or with .trans those of column l / 4 at rows 2 (l % 4) and
// 2 (l % 4) + 1. Every lane of the warp must execute it.
__device__ __forceinline__ void loom_ldmatrix_x4(unsigned *r, const void *row) {
#if defined(__CUDA_ARCH__)
    const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(row));
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a));
#else
    loom_cpu::ldmatrix(r, 4, false, row);
#endif
}
__device__ __forceinline__ void loom_ldmatrix_x4_trans(unsigned *r, const void *row) {
#if defined(__CUDA_ARCH__)
    const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(row));
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a));
#else
    loom_cpu::ldmatrix(r, 4, true, row);
#endif
}
__device__ __forceinline__ void loom_ldmatrix_x2(unsigned *r, const void *row) {
#if defined(__CUDA_ARCH__)
    const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(row));
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
                 : "=r"(r[0]), "=r"(r[1])
                 : "r"(a));
#else
    loom_cpu::ldmatrix(r, 2, false, row);
#endif
}
__device__ __forceinline__ void loom_ldmatrix_x2_trans(unsigned *r, const void *row) {
#if defined(__CUDA_ARCH__)
    const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(row));
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
                 : "=r"(r[0]), "=r"(r[1])
                 : "r"(a));
#else
    loom_cpu::ldmatrix(r, 2, true, row);
#endif
}
