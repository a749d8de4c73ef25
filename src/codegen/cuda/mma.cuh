// mma.sync.aligned.m16n8k16 (sm_80 and later): one warp multiplies a 16 x 16
// f16 or bf16 tile A by a 16 x 8 tile B (k x n) and adds a 16 x 8 f32 tile
// C. Each lane holds fragments, as the PTX ISA lays them out (and
// src/tile/Layout.h's mma_m16n8k16_*), with g = lane / 4 and t = lane % 4:
// a[j] packs halves 2j and 2j + 1 of A, half i at (g + 8 (i / 2 % 2),
// 2t + i % 2 + 8 (i / 4)); b[j] packs halves 2j and 2j + 1 of B, half i at
// (2t + i % 2 + 8 (i / 2), g); c[i] and d[i] are at (g + 8 (i / 2),
// 2t + i % 2). Every lane of the warp must execute it.
__device__ __forceinline__ void loom_mma_m16n8k16_f16(float *d, const unsigned *a,
                                                      const unsigned *b, const float *c) {
#if defined(__CUDA_ARCH__)
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%10, %11, %12, %13};\n"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]),
          "f"(c[2]), "f"(c[3]));
#else
    loom_cpu::mma_m16n8k16(d, a, b, c, false);
#endif
}
__device__ __forceinline__ void loom_mma_m16n8k16_bf16(float *d, const unsigned *a,
                                                       const unsigned *b, const float *c) {
#if defined(__CUDA_ARCH__)
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%10, %11, %12, %13};\n"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]),
          "f"(c[2]), "f"(c[3]));
#else
    loom_cpu::mma_m16n8k16(d, a, b, c, true);
#endif
}
