// Reading and setting one of the two 16-bit floats a 32-bit register packs
// (the low half first, as mma.sync and ldmatrix pack them): how tile
// kernels address the elements of f16/bf16 fragments.
template <typename T> __device__ __forceinline__ T loom_tile_get(unsigned w, int h);
template <> __device__ __forceinline__ __half loom_tile_get<__half>(unsigned w, int h) {
    __half_raw r;
    r.x = (unsigned short)(h ? w >> 16 : w & 0xffffu);
    return __half(r);
}
template <>
__device__ __forceinline__ __nv_bfloat16 loom_tile_get<__nv_bfloat16>(unsigned w, int h) {
    __nv_bfloat16_raw r;
    r.x = (unsigned short)(h ? w >> 16 : w & 0xffffu);
    return __nv_bfloat16(r);
}
__device__ __forceinline__ unsigned loom_tile_set(unsigned w, int h, __half x) {
    const unsigned bits = __half_raw(x).x;
    return h ? (w & 0xffffu) | (bits << 16) : (w & 0xffff0000u) | bits;
}
__device__ __forceinline__ unsigned loom_tile_set(unsigned w, int h, __nv_bfloat16 x) {
    const unsigned bits = __nv_bfloat16_raw(x).x;
    return h ? (w & 0xffffu) | (bits << 16) : (w & 0xffff0000u) | bits;
}
