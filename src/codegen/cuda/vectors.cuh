// The widest word (16, 8 or 4 bytes) that divides a vector of N T's.
template <typename T, int N> struct loom_word {
    static constexpr int bytes = (sizeof(T) * N) % 16 == 0 ? 16
                                 : (sizeof(T) * N) % 8 == 0 ? 8
                                 : (sizeof(T) * N) % 4 == 0 ? 4 : 0;
};
template <int B> struct loom_word_type;
template <> struct loom_word_type<16> { typedef uint4 type; };
template <> struct loom_word_type<8> { typedef uint2 type; };
template <> struct loom_word_type<4> { typedef unsigned int type; };
// Aligned as its word, so that it moves to and from memory in words.
template <typename T, int N>
struct alignas(loom_word<T, N>::bytes > int(alignof(T)) ? loom_word<T, N>::bytes : alignof(T))
    loom_vec { T v[N]; };
template <typename F, typename A, int N, typename... B>
__device__ __forceinline__ auto loom_map(F f, const loom_vec<A, N> &a, const loom_vec<B, N> &...b) {
    loom_vec<decltype(f(a.v[0], b.v[0]...)), N> r;
#pragma unroll
    for (int i = 0; i < N; i++) r.v[i] = f(a.v[i], b.v[i]...);
    return r;
}
template <int N, typename T> __device__ __forceinline__ loom_vec<T, N> loom_broadcast(T x) {
    loom_vec<T, N> r;
#pragma unroll
    for (int i = 0; i < N; i++) r.v[i] = x;
    return r;
}
template <int N, typename T, int M>
__device__ __forceinline__ loom_vec<T, N> loom_broadcast(const loom_vec<T, M> &x) {
    loom_vec<T, N> r;
#pragma unroll
    for (int i = 0; i < N; i++) r.v[i] = x.v[i % M];
    return r;
}
template <int N, typename T> __device__ __forceinline__ loom_vec<T, N> loom_ramp(T base, T stride) {
    loom_vec<T, N> r;
#pragma unroll
    for (int i = 0; i < N; i++) r.v[i] = T(base + T(i) * stride);
    return r;
}
template <int N, typename T, int M>
__device__ __forceinline__ loom_vec<T, N> loom_ramp(const loom_vec<T, M> &base,
                                                    const loom_vec<T, M> &stride) {
    loom_vec<T, N> r;
#pragma unroll
    for (int i = 0; i < N; i++) r.v[i] = T(base.v[i % M] + T(i / M) * stride.v[i % M]);
    return r;
}
// Output lane j combines input lanes [j * N / M, (j + 1) * N / M).
template <int M, typename F, typename T, int N>
__device__ __forceinline__ loom_vec<T, M> loom_vreduce(F f, const loom_vec<T, N> &a) {
    loom_vec<T, M> r;
#pragma unroll
    for (int j = 0; j < M; j++) {
        r.v[j] = a.v[j * (N / M)];
#pragma unroll
        for (int k = 1; k < N / M; k++) r.v[j] = f(r.v[j], a.v[j * (N / M) + k]);
    }
    return r;
}
template <typename F, typename T, int N>
__device__ __forceinline__ T loom_vreduce_all(F f, const loom_vec<T, N> &a) {
    return loom_vreduce<1>(f, a).v[0];
}
// Moves N T's between memory and a vector's registers in whole words when
// the memory side is aligned to one (the registers always are): Aligned when
// the compiler proved it, else tested here. ReadOnly: src is a buffer the
// kernel only reads, loaded through the read-only data cache (__ldg), which
// the compiler never infers for words built by reinterpreting lanes.
// (A run on a CPU, which takes misaligned words that a GPU faults on,
// defines LOOM_CHECK_ALIGNED to check what the compiler proved.)
#ifndef LOOM_CHECK_ALIGNED
#define LOOM_CHECK_ALIGNED(address, bytes) ((void)0)
#endif
template <typename T, int N, bool ReadOnly = false, bool Aligned = false>
__device__ __forceinline__ void loom_move(T *dst, const T *src, const T *memory) {
    constexpr int W = loom_word<T, N>::bytes;
    constexpr bool in_words = W > int(sizeof(T));
    if constexpr (in_words) {
        typedef typename loom_word_type<W>::type word;
        if constexpr (Aligned) LOOM_CHECK_ALIGNED(memory, W);
        if (Aligned || (reinterpret_cast<unsigned long long>(memory) & (W - 1)) == 0) {
            const word *from = reinterpret_cast<const word *>(src);
#pragma unroll
            for (int k = 0; k < int(sizeof(T)) * N / W; k++)
                reinterpret_cast<word *>(dst)[k] = ReadOnly ? loom_load_readonly(from + k) : from[k];
            return;
        }
    }
    if constexpr (!(in_words && Aligned)) {
#pragma unroll
        for (int k = 0; k < N; k++) dst[k] = ReadOnly ? loom_load_readonly(src + k) : src[k];
    }
}
// Whether p[i] starts on a multiple of W bytes (in integers: i may be past
// p's allocation). A loop whose vectors all move in whole words from such
// a start tests it once and then moves them untested.
template <int W, typename T> __device__ __forceinline__ bool loom_is_aligned(const T *p, long long i) {
    return ((reinterpret_cast<unsigned long long>(p) + (unsigned long long)i * sizeof(T)) &
            (W - 1)) == 0;
}
template <typename T, int N, bool Aligned = false>
__device__ __forceinline__ loom_vec<T, N> loom_load_dense(const T *p, long long i) {
    loom_vec<T, N> r;
    loom_move<T, N, false, Aligned>(r.v, p + i, p + i);
    return r;
}
// Loads from a buffer the kernel only reads (a const __restrict__
// parameter) go through the read-only data cache.
template <typename T, int N, bool Aligned = false>
__device__ __forceinline__ loom_vec<T, N> loom_load_dense_readonly(const T *p, long long i) {
    loom_vec<T, N> r;
    loom_move<T, N, true, Aligned>(r.v, p + i, p + i);
    return r;
}
// Stores to global memory move whole 16- and 8-byte words through inline
// PTX: the compiler splits a word store built from lanes back into lanes.
// (Compiled for anything but a GPU, the source moves words in C++.)
template <typename T, int N, bool Aligned = false>
__device__ __forceinline__ void loom_store_dense_global(T *p, long long i,
                                                        const loom_vec<T, N> &x) {
    T *a = p + i;
#if defined(__CUDA_ARCH__)
    constexpr int W = loom_word<T, N>::bytes;
    constexpr bool in_wide_words = W >= 8 && W > int(sizeof(T));
    if constexpr (in_wide_words) {
        if (Aligned || (reinterpret_cast<unsigned long long>(a) & (W - 1)) == 0) {
            const unsigned *w = reinterpret_cast<const unsigned *>(x.v);
            const size_t g = __cvta_generic_to_global(a);
#pragma unroll
            for (int k = 0; k < int(sizeof(T)) * N / W; k++) {
                if constexpr (W == 16) {
                    asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(g + 16 * k),
                                 "r"(w[4 * k]), "r"(w[4 * k + 1]), "r"(w[4 * k + 2]),
                                 "r"(w[4 * k + 3])
                                 : "memory");
                } else {
                    asm volatile("st.global.v2.b32 [%0], {%1, %2};" ::"l"(g + 8 * k),
                                 "r"(w[2 * k]), "r"(w[2 * k + 1])
                                 : "memory");
                }
            }
            return;
        }
    }
    if constexpr (!(in_wide_words && Aligned)) loom_move<T, N, false, Aligned>(a, x.v, a);
#else
    loom_move<T, N, false, Aligned>(a, x.v, a);
#endif
}
template <typename T, int N, bool Aligned = false>
__device__ __forceinline__ void loom_store_dense(T *p, long long i, const loom_vec<T, N> &x) {
    loom_move<T, N, false, Aligned>(p + i, x.v, p + i);
}
// The same accesses where the compiler proved the address a multiple of
// the word (the buffer's start promised or allocated aligned, the index a
// multiple of the vector): no test, no lane-by-lane fallback.
template <typename T, int N>
__device__ __forceinline__ loom_vec<T, N> loom_load_aligned(const T *p, long long i) {
    return loom_load_dense<T, N, true>(p, i);
}
template <typename T, int N>
__device__ __forceinline__ loom_vec<T, N> loom_load_aligned_readonly(const T *p, long long i) {
    return loom_load_dense_readonly<T, N, true>(p, i);
}
template <typename T, int N>
__device__ __forceinline__ void loom_store_aligned_global(T *p, long long i,
                                                          const loom_vec<T, N> &x) {
    loom_store_dense_global<T, N, true>(p, i, x);
}
template <typename T, int N>
__device__ __forceinline__ void loom_store_aligned(T *p, long long i, const loom_vec<T, N> &x) {
    loom_store_dense<T, N, true>(p, i, x);
}
// A thread's own arrays move lane by lane: words reinterpreting their
// elements (and the test of their address) would keep them in local
// memory, where constant indices let them live in registers.
template <typename T, int N>
__device__ __forceinline__ loom_vec<T, N> loom_load_lanes(const T *p, long long i) {
    loom_vec<T, N> r;
#pragma unroll
    for (int k = 0; k < N; k++) r.v[k] = p[i + k];
    return r;
}
template <typename T, int N>
__device__ __forceinline__ void loom_store_lanes(T *p, long long i, const loom_vec<T, N> &x) {
#pragma unroll
    for (int k = 0; k < N; k++) p[i + k] = x.v[k];
}
// Gathers and scatters; masked lanes are neither read nor written.
template <typename T, typename I, int N>
__device__ __forceinline__ loom_vec<T, N> loom_gather(const T *p, const loom_vec<I, N> &i) {
    loom_vec<T, N> r;
#pragma unroll
    for (int k = 0; k < N; k++) r.v[k] = p[i.v[k]];
    return r;
}
template <typename T, typename I, int N>
__device__ __forceinline__ loom_vec<T, N> loom_gather(const T *p, const loom_vec<I, N> &i,
                                                      const loom_vec<bool, N> &m) {
    loom_vec<T, N> r;
#pragma unroll
    for (int k = 0; k < N; k++) r.v[k] = m.v[k] ? p[i.v[k]] : T();
    return r;
}
// The same from a buffer the kernel only reads, lane by lane through the
// read-only data cache.
template <typename T, typename I, int N>
__device__ __forceinline__ loom_vec<T, N> loom_gather_readonly(const T *p,
                                                               const loom_vec<I, N> &i) {
    loom_vec<T, N> r;
#pragma unroll
    for (int k = 0; k < N; k++) r.v[k] = loom_load_readonly(p + i.v[k]);
    return r;
}
template <typename T, typename I, int N>
__device__ __forceinline__ loom_vec<T, N> loom_gather_readonly(const T *p,
                                                               const loom_vec<I, N> &i,
                                                               const loom_vec<bool, N> &m) {
    loom_vec<T, N> r;
#pragma unroll
    for (int k = 0; k < N; k++) r.v[k] = m.v[k] ? loom_load_readonly(p + i.v[k]) : T();
    return r;
}
template <typename T, typename I, int N>
__device__ __forceinline__ void loom_scatter(T *p, const loom_vec<I, N> &i,
                                             const loom_vec<T, N> &x) {
#pragma unroll
    for (int k = 0; k < N; k++) p[i.v[k]] = x.v[k];
}
template <typename T, typename I, int N>
__device__ __forceinline__ void loom_scatter(T *p, const loom_vec<I, N> &i,
                                             const loom_vec<T, N> &x,
                                             const loom_vec<bool, N> &m) {
#pragma unroll
    for (int k = 0; k < N; k++)
        if (m.v[k]) p[i.v[k]] = x.v[k];
}
