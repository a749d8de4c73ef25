template <typename T>
__device__ __forceinline__ T loom_shfl_down(unsigned mask, T v, int offset) {
    return __shfl_down_sync(mask, v, offset);
}
template <typename T>
__device__ __forceinline__ T loom_shfl_xor(unsigned mask, T v, int lane_mask) {
    return __shfl_xor_sync(mask, v, lane_mask);
}
template <typename T>
__device__ __forceinline__ T loom_shfl_idx(unsigned mask, T v, int lane) {
    return __shfl_sync(mask, v, lane);
}
// Shuffles move 32-bit words or wider: narrower values travel as ints.
#define LOOM_SHFL_THROUGH_INT(T)                                                     \
    __device__ __forceinline__ T loom_shfl_down(unsigned mask, T v, int offset) {    \
        return (T)__shfl_down_sync(mask, (int)v, offset);                            \
    }                                                                                \
    __device__ __forceinline__ T loom_shfl_xor(unsigned mask, T v, int lane_mask) {  \
        return (T)__shfl_xor_sync(mask, (int)v, lane_mask);                          \
    }                                                                                \
    __device__ __forceinline__ T loom_shfl_idx(unsigned mask, T v, int lane) {       \
        return (T)__shfl_sync(mask, (int)v, lane);                                   \
    }
LOOM_SHFL_THROUGH_INT(bool)
LOOM_SHFL_THROUGH_INT(signed char)
LOOM_SHFL_THROUGH_INT(unsigned char)
LOOM_SHFL_THROUGH_INT(short)
LOOM_SHFL_THROUGH_INT(unsigned short)
// The thread's index in its block of NX x NY x NZ threads.
template <int NX, int NY, int NZ> __device__ __forceinline__ int loom_thread_index() {
    return threadIdx.x + (NY > 1 ? NX * threadIdx.y : 0) + (NZ > 1 ? NX * NY * threadIdx.z : 0);
}
// v combined over each group of G consecutive whole warps (G a power of
// two; every thread of the block calls it), returned to each of the
// group's threads. Each warp combines its threads' values (a butterfly of
// shuffles); the first lane of each stores its warp's total; after one
// barrier, every warp combines its group's totals itself (the same tree)
// and takes its first lane's result, so that the group's threads have the
// same bits. `scratch` holds two halves of `half_bytes` (a T per warp of
// the block): consecutive reductions alternate halves (`parity`), so a
// warp may store the next reduction's total while another still reads
// this one's, and no second barrier is needed: a warp reaches the next
// reduction's barrier only after reading this one's totals. A group of
// one warp needs no shared memory, and __syncwarp stands for the barrier.
template <int NX, int NY, int NZ, int G, typename T, typename F>
__device__ __forceinline__ T loom_whole_warps_reduce(T v, F op, unsigned char *scratch,
                                                     int half_bytes, int &parity) {
    const int tid = loom_thread_index<NX, NY, NZ>(), lane = tid & 31;
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1)
        v = op(v, loom_shfl_xor(0xffffffffu, v, offset));
    if constexpr (G == 1) {
        __syncwarp();
        return loom_shfl_idx(0xffffffffu, v, 0);
    } else {
        parity ^= 1;
        T *const totals = reinterpret_cast<T *>(scratch + parity * half_bytes);
        if (lane == 0) totals[tid >> 5] = v;
        __syncthreads();
        const int first = (tid >> 5) & ~(G - 1);  // the group's first warp
        T total = totals[first + (lane & (G - 1))];
#pragma unroll
        for (int offset = G / 2; offset > 0; offset >>= 1)
            total = op(total, loom_shfl_xor(0xffffffffu, total, offset));
        return loom_shfl_idx(0xffffffffu, total, 0);
    }
}
// v combined over the threads that share this thread's coordinates along
// the dimensions in REDUCED (a mask: x 1, y 2, z 4), returned to each of
// them, in a block of NX x NY x NZ threads (the kernel's constant shape).
// A group that is the x threads of a row, NX dividing 32, is a segment of a
// warp: shuffles alone. A group of whole warps (NX a multiple of 32, a
// power of two of warps): loom_whole_warps_reduce. Otherwise, through
// shared memory (`scratch`: a T per thread, its own room), each thread
// folding its group's values in a fixed order between two barriers.
template <int NX, int NY, int NZ, int REDUCED, typename T, typename F>
__device__ __forceinline__ T loom_group_reduce(T v, F op, unsigned char *scratch, int half_bytes,
                                               int &parity) {
    constexpr int n = NX * NY * NZ;
    constexpr int warps_per_group = NX / 32;
    if constexpr (REDUCED == 1 && NX <= 32 && 32 % NX == 0) {
        const int tid = loom_thread_index<NX, NY, NZ>(), lane = tid & 31;
        const int width = n - (tid - lane) < 32 ? n - (tid - lane) : 32;  // whole segments
        const unsigned mask = n % 32 == 0 || width == 32 ? 0xffffffffu : (1u << width) - 1u;
#pragma unroll
        for (int offset = NX / 2; offset > 0; offset >>= 1)
            v = op(v, loom_shfl_xor(mask, v, offset));
        return v;
    } else if constexpr (REDUCED == 1 && NX % 32 == 0 &&
                         (warps_per_group & (warps_per_group - 1)) == 0) {
        return loom_whole_warps_reduce<NX, NY, NZ, warps_per_group>(v, op, scratch, half_bytes,
                                                                    parity);
    } else {
        const int tid = loom_thread_index<NX, NY, NZ>();
        T *const values = reinterpret_cast<T *>(scratch);
        values[tid] = v;
        __syncthreads();
        const unsigned x0 = (REDUCED & 1) ? 0 : threadIdx.x, x1 = (REDUCED & 1) ? NX : x0 + 1;
        const unsigned y0 = (REDUCED & 2) ? 0 : threadIdx.y, y1 = (REDUCED & 2) ? NY : y0 + 1;
        const unsigned z0 = (REDUCED & 4) ? 0 : threadIdx.z, z1 = (REDUCED & 4) ? NZ : z0 + 1;
        T total = values[x0 + NX * (y0 + NY * z0)];
        for (unsigned z = z0; z < z1; z++)
            for (unsigned y = y0; y < y1; y++)
                for (unsigned x = x0; x < x1; x++)
                    if (x != x0 || y != y0 || z != z0)
                        total = op(total, values[x + NX * (y + NY * z)]);
        __syncthreads();  // before the next reduction writes values
        return total;
    }
}
// The same for the whole block of NX x NY x NZ threads (the kernel's
// constant shape, so that the masks, the warp count and the tests below
// are constants): a power of two of whole warps is one group of
// loom_whole_warps_reduce. A block of another shape (a partial warp, or a
// number of warps that is not a power of two) takes the general path, in
// `scratch` (a T per warp and one more): each warp's total, then the first
// warp combines the totals, and a second barrier hands the result to
// every thread.
template <int NX, int NY, int NZ, typename T, typename F>
__device__ __forceinline__ T loom_block_reduce(T v, F op, unsigned char *scratch, int half_bytes,
                                              int &parity) {
    constexpr int n = NX * NY * NZ, warps = (n + 31) / 32;
    if constexpr (n % 32 == 0 && (warps & (warps - 1)) == 0) {
        return loom_whole_warps_reduce<NX, NY, NZ, warps>(v, op, scratch, half_bytes, parity);
    } else {
        const int tid = loom_thread_index<NX, NY, NZ>(), lane = tid & 31;
        T *const totals = reinterpret_cast<T *>(scratch);
        const int width = n - (tid - lane) < 32 ? n - (tid - lane) : 32;  // threads in this warp
        const unsigned mask = width == 32 ? 0xffffffffu : (1u << width) - 1u;
#pragma unroll
        for (int offset = 16; offset > 0; offset >>= 1) {
            T other = loom_shfl_down(mask, v, offset);
            if (lane + offset < width) v = op(v, other);
        }
        if (lane == 0) totals[tid >> 5] = v;
        __syncthreads();
        if (tid < 32) {
            // With several warps the first one is whole; its lanes past the
            // last total hold a copy of the first, left out by the test.
            T total = totals[tid < warps ? tid : 0];
            constexpr unsigned first = warps > 1 ? 0xffffffffu : (n >= 32 ? 0xffffffffu : (1u << (n % 32)) - 1u);
#pragma unroll
            for (int offset = 16; offset > 0; offset >>= 1) {
                T other = loom_shfl_down(first, total, offset);
                if (tid + offset < warps) total = op(total, other);
            }
            if (tid == 0) totals[warps] = total;
        }
        // (The next reduction writes totals[warps] only after its own
        // barrier, which every thread reaches after reading it here.)
        __syncthreads();
        return totals[warps];
    }
}
