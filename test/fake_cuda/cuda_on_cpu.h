// What Loom's generated CUDA C++ needs to compile and run on the CPU: the
// stand-in driver (fake_cuda_driver.cpp) prepends this header to a kernel
// module's source, compiles it with the host's C++ compiler and runs each
// launch here, so that GPU pipelines run, and are checked against the
// interpreter, on a machine without a GPU.
//
// A block's threads are fibers (ucontext) on one OS thread. Each runs until
// it reaches __syncthreads, a warp shuffle or its end; a barrier lets its
// threads go on once every thread it waits for has arrived. Blocks run one
// after another, so `__shared__` variables are plain statics and the
// dynamic shared memory one array. Besides running the kernels this checks
// what a GPU leaves undefined and a test should hear about: a barrier that
// some of the block's threads never reach (a __syncthreads under a
// thread-dependent condition), and a kernel's __trap. Dynamic shared memory
// starts each block filled with 0xff bytes (NaN floats), so that reading it
// before writing it shows, and a write past the size the launch asked for
// fails the launch, as it faults on a GPU.
//
// Between two barriers a GPU's threads run in no defined order, and a
// kernel whose result depends on that order has a race (a missing
// barrier). The stand-in runs them in one order, lowest thread first, or,
// when the launch asks, highest first, and its blocks the same way: a race
// gives different results in the two orders, and the tests that run both
// compare each with the interpreter.
#pragma once

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>

#include <type_traits>
#include <utility>

#define __global__
#define __device__
#define __host__
#define __launch_bounds__(...)
// One block runs at a time: its shared variables are statics. The driver
// turns the source's `extern __shared__` (the dynamic shared memory) into a
// plain `extern`, which names loom_shared_memory below.
#define __shared__ static
// CUDA's uint2, uint3, uint4 and dim3, and __align__ and __forceinline__
// for the host's compiler (the CUDA headers keep the macros above).
#include <vector_types.h>
#ifndef __restrict__
#define __restrict__ __restrict
#endif
// A module with float16 or bfloat16 (the driver defines LOOM_CPU_HALF):
// included here, before threadIdx and the others become names of ours.
#ifdef LOOM_CPU_HALF
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

/** The dynamic shared memory (227 KB, an sm_90 block's most). */
alignas(16) unsigned char loom_shared_memory[227 * 1024];

namespace loom_cpu {

constexpr int kMaxThreads = 1024;
constexpr size_t kStackBytes = 256 * 1024;
constexpr size_t kMaxSharedBytes = sizeof(loom_shared_memory);
/** Past the shared memory a launch asks for, this much is filled with a
 * pattern that each block must leave as it found it: a GPU faults on a
 * write past the launch's size, which the stand-in's one big array would
 * otherwise take silently. */
constexpr size_t kSharedGuardBytes = 4096;
constexpr unsigned char kSharedGuardPattern = 0xa5;

enum class ThreadState { Runnable, AtBlockBarrier, AtWarpBarrier, Done };

/** A cp.async copy issued and not yet landed. */
struct PendingCopy {
    void *dst;
    int size;  // 16 or 4 bytes
    unsigned char bytes[16];
    int group;  // the commit group it belongs to (-1: not yet committed)
};
constexpr int kMaxPendingCopies = 512;

struct Thread {
    ucontext_t context;
    uint3 index;
    int linear;
    ThreadState state;
    // This thread's cp.async copies in flight, and its groups committed.
    PendingCopy pending[kMaxPendingCopies];
    int pending_count;
    int groups_committed;
    unsigned warp_mask;  // of the warp barrier it waits at
};

struct Block {
    void (*body)(void *);
    void *body_arg;
    Thread threads[kMaxThreads];
    int count = 0;
    ucontext_t scheduler;
    char *stacks = nullptr;
    // Each lane's value in a shuffle, up to 8 bytes.
    unsigned char slots[kMaxThreads][8];
    // Each lane's fragments in an mma.sync: a, b (packed halves) and c.
    struct MmaFragments {
        uint32_t a[4], b[2];
        float c[4];
    } mma[kMaxThreads];
    const char *error = nullptr;
    char message[512];
};

inline Block *block = nullptr;
inline Thread *current = nullptr;
inline uint3 block_index, block_dim, grid_dim;

inline void yield() {
    Thread *self = current;
    swapcontext(&self->context, &block->scheduler);
}

inline void fail(const char *what) {
    if (!block->error) {
        snprintf(block->message, sizeof(block->message),
                 "%s (thread (%u, %u, %u) of block (%u, %u, %u))", what, current->index.x,
                 current->index.y, current->index.z, block_index.x, block_index.y, block_index.z);
        block->error = block->message;
    }
    current->state = ThreadState::Done;
    yield();  // never resumed
}

/** A GPU faults on a word whose address is not a multiple of its size,
 * where a CPU takes it: the generated code's words at addresses it proved
 * aligned (LOOM_CHECK_ALIGNED) are checked here. */
inline void check_aligned(const void *address, int bytes) {
    if (reinterpret_cast<uintptr_t>(address) % static_cast<uintptr_t>(bytes) == 0) return;
    char what[160];
    snprintf(what, sizeof(what),
             "misaligned address: a %d-byte word at %p, which the compiler proved aligned", bytes,
             address);
    fail(what);
}

inline void sync_block() {
    current->state = ThreadState::AtBlockBarrier;
    yield();
}

/** Waits until every lane of `mask` in this thread's warp has arrived. */
inline void sync_warp(unsigned mask) {
    const int lane = current->linear & 31;
    if (!(mask & (1u << lane))) fail("a warp operation whose mask leaves out the calling lane");
    current->state = ThreadState::AtWarpBarrier;
    current->warp_mask = mask;
    yield();
}

/** A warp shuffle: each lane in `mask` offers v and takes the value of
 * lane `source` of its warp (its own v for a source past the warp or the
 * block). */
template <typename T> T shuffle_from(unsigned mask, T v, int source) {
    static_assert(sizeof(T) <= 8, "shuffles move up to 8 bytes");
    const int lane = current->linear & 31;
    memcpy(block->slots[current->linear], &v, sizeof(T));
    sync_warp(mask);
    T r = v;
    const int from = current->linear - lane + source;
    if (source < 32 && from < block->count) memcpy(&r, block->slots[from], sizeof(T));
    sync_warp(mask);  // before a later shuffle overwrites the slots
    return r;
}

/** A half (f16, or bf16 when `bf16`) as a float. */
inline float half_bits_to_float(uint16_t h, bool bf16) {
    if (bf16) {
        uint32_t w = uint32_t(h) << 16;
        float f;
        memcpy(&f, &w, 4);
        return f;
    }
    const uint32_t sign = uint32_t(h >> 15) << 31, exponent = (h >> 10) & 31, mantissa = h & 1023;
    float f;
    if (exponent == 0) {
        f = ldexpf(float(mantissa), -24);  // subnormal (or zero)
    } else if (exponent == 31) {
        f = mantissa ? NAN : INFINITY;
    } else {
        f = ldexpf(float(mantissa | 1024), int(exponent) - 25);
    }
    uint32_t w;
    memcpy(&w, &f, 4);
    w |= sign;
    memcpy(&f, &w, 4);
    return f;
}

/** mma.sync.aligned.m16n8k16.row.col.f32 with f16 (or bf16) operands, as
 * the warp's 32 lanes execute it together: each deposits its fragments,
 * the warp meets, and each computes its own accumulator registers from
 * everyone's fragments, read through the PTX ISA's layouts
 * (src/codegen/cuda/mma.cuh). A lane laying out its fragments wrongly
 * makes other lanes' results wrong, as on a GPU. */
inline void mma_m16n8k16(float *d, const uint32_t *a, const uint32_t *b, const float *c,
                         bool bf16) {
    const int lane = current->linear & 31, base = current->linear - lane;
    if (base + 32 > block->count) fail("mma.sync needs every lane of a whole warp");
    Block::MmaFragments &mine = block->mma[current->linear];
    memcpy(mine.a, a, sizeof(mine.a));
    memcpy(mine.b, b, sizeof(mine.b));
    memcpy(mine.c, c, sizeof(mine.c));
    sync_warp(0xffffffffu);
    auto half = [&](uint32_t word, int i) {
        return half_bits_to_float(uint16_t(i % 2 ? word >> 16 : word & 0xffff), bf16);
    };
    auto A = [&](int r, int k) {
        const int i = k % 2 + 2 * (r / 8) + 4 * (k / 8);
        return half(block->mma[base + (r % 8) * 4 + (k % 8) / 2].a[i / 2], i);
    };
    auto B = [&](int k, int n) {
        const int i = k % 2 + 2 * (k / 8);
        return half(block->mma[base + n * 4 + (k % 8) / 2].b[i / 2], i);
    };
    const int g = lane / 4, t = lane % 4;
    float out[4];
    for (int i = 0; i < 4; i++) {
        const int r = g + 8 * (i / 2), n = 2 * t + i % 2;
        float acc = mine.c[i];
        for (int k = 0; k < 16; k++) acc += A(r, k) * B(k, n);
        out[i] = acc;
    }
    sync_warp(0xffffffffu);  // before a later mma overwrites the fragments
    memcpy(d, out, sizeof(out));
}

/** ldmatrix.sync.aligned.m8n8.x{count}[.trans].b16, as the warp executes
 * it together: each lane deposits its row address, the warp meets, and
 * each lane reads its registers from the rows the others gave
 * (src/codegen/cuda/ldmatrix.cuh). */
inline void ldmatrix(uint32_t *r, int count, bool trans, const void *row) {
    const int lane = current->linear & 31, base = current->linear - lane;
    if (base + 32 > block->count) fail("ldmatrix needs every lane of a whole warp");
    const unsigned char *lo = loom_shared_memory, *hi = loom_shared_memory + kMaxSharedBytes;
    const unsigned char *p = static_cast<const unsigned char *>(row);
    if (lane < 8 * count && (p < lo || p + 16 > hi || (p - lo) % 16 != 0)) {
        fail("ldmatrix: a row address that is not 16-byte aligned shared memory");
    }
    memcpy(block->slots[current->linear], &row, sizeof(row));
    sync_warp(0xffffffffu);
    auto element = [&](int matrix, int r8, int c8) {
        const void *address;
        memcpy(&address, block->slots[base + 8 * matrix + r8], sizeof(address));
        uint16_t v;
        memcpy(&v, static_cast<const unsigned char *>(address) + 2 * c8, 2);
        return uint32_t(v);
    };
    const int g = lane / 4, t = lane % 4;
    for (int j = 0; j < count; j++) {
        r[j] = trans ? element(j, 2 * t, g) | element(j, 2 * t + 1, g) << 16
                     : element(j, g, 2 * t) | element(j, g, 2 * t + 1) << 16;
    }
    sync_warp(0xffffffffu);  // before a later shuffle overwrites the slots
}

/** cp.async of `size` bytes (16 or 4): they are read now (the source must
 * not change before the wait, on a GPU either) and land in shared memory
 * only when their group is waited for (src/codegen/cuda/cp_async.cuh).
 * Both addresses must be multiples of the size: a GPU fails the kernel
 * with a misaligned address otherwise, and so does this. */
inline void cp_async(void *dst, const void *src, int size, int bytes) {
    const unsigned char *lo = loom_shared_memory, *hi = loom_shared_memory + kMaxSharedBytes;
    const unsigned char *d = static_cast<const unsigned char *>(dst);
    if (size != 16 && size != 4) fail("cp.async: a copy of other than 16 or 4 bytes");
    if (d < lo || d + size > hi || (d - lo) % size != 0) {
        fail(size == 16 ? "cp.async: a destination that is not 16-byte aligned shared memory"
                        : "cp.async: a destination that is not 4-byte aligned shared memory");
    }
    if (reinterpret_cast<uintptr_t>(src) % static_cast<uintptr_t>(size) != 0) {
        char what[160];
        snprintf(what, sizeof(what),
                 "misaligned address: a %d-byte cp.async from global memory at %p", size, src);
        fail(what);
    }
    if (bytes < 0 || bytes > size) fail("cp.async: a source size outside [0, the copy's size]");
    if (current->pending_count == kMaxPendingCopies) fail("cp.async: too many copies in flight");
    PendingCopy &c = current->pending[current->pending_count++];
    c.dst = dst;
    c.size = size;
    memset(c.bytes, 0, 16);
    if (bytes > 0) memcpy(c.bytes, src, bytes);
    c.group = -1;
}

inline void cp_async_commit() {
    for (int i = 0; i < current->pending_count; i++) {
        if (current->pending[i].group < 0) current->pending[i].group = current->groups_committed;
    }
    current->groups_committed++;
}

/** Lands every copy of this thread's groups but the newest `n`; copies not
 * committed yet form no group and stay in flight. */
inline void cp_async_wait(int n) {
    const int landed_before = current->groups_committed - n;
    int kept = 0;
    for (int i = 0; i < current->pending_count; i++) {
        PendingCopy &c = current->pending[i];
        if (c.group >= 0 && c.group < landed_before) {
            memcpy(c.dst, c.bytes, c.size);
        } else {
            current->pending[kept++] = c;
        }
    }
    current->pending_count = kept;
}

template <typename T> T shuffle_down(unsigned mask, T v, int offset) {
    return shuffle_from(mask, v, (current->linear & 31) + offset);
}

template <typename T> T shuffle_xor(unsigned mask, T v, int lane_mask) {
    return shuffle_from(mask, v, ((current->linear & 31) ^ lane_mask) & 31);
}

template <typename T> T shuffle_idx(unsigned mask, T v, int source_lane) {
    if (!(mask & (1u << (source_lane & 31))))
        fail("a shuffle that reads a lane its mask leaves out");
    return shuffle_from(mask, v, source_lane & 31);
}

inline void thread_main() {
    block->body(block->body_arg);
    current->state = ThreadState::Done;
}

/** Lets the threads waiting at a barrier go on when all it waits for have
 * arrived; false when none can (the block is stuck), with block->error. */
inline bool release_barriers() {
    bool released = false;
    for (int w = 0; w * 32 < block->count; w++) {
        Thread *warp = &block->threads[w * 32];
        const int lanes = block->count - w * 32 < 32 ? block->count - w * 32 : 32;
        for (int l = 0; l < lanes; l++) {
            if (warp[l].state != ThreadState::AtWarpBarrier) continue;
            const unsigned mask = warp[l].warp_mask;
            bool all = true;
            for (int m = 0; m < 32 && all; m++)
                if (mask & (1u << m))
                    all = m < lanes && warp[m].state == ThreadState::AtWarpBarrier &&
                          warp[m].warp_mask == mask;
            if (!all) continue;
            for (int m = 0; m < lanes; m++)
                if (mask & (1u << m)) warp[m].state = ThreadState::Runnable;
            released = true;
        }
    }
    if (released) return true;
    int waiting = 0, done = 0;
    for (int t = 0; t < block->count; t++) {
        waiting += block->threads[t].state == ThreadState::AtBlockBarrier;
        done += block->threads[t].state == ThreadState::Done;
    }
    if (waiting == block->count) {
        for (int t = 0; t < block->count; t++) block->threads[t].state = ThreadState::Runnable;
        return true;
    }
    snprintf(block->message, sizeof(block->message),
             "block (%u, %u, %u) is stuck: %d of its %d threads wait at __syncthreads, %d have "
             "returned and %d wait in a warp shuffle whose lanes do not all arrive. A barrier "
             "must be reached by every thread of the block",
             block_index.x, block_index.y, block_index.z, waiting, block->count, done,
             block->count - waiting - done);
    block->error = block->message;
    return false;
}

/** Runs one block of body's threads, between barriers lowest first, or
 * highest first if `reversed`; false with block->error on a fault. */
inline bool run_block(bool reversed) {
    for (int t = 0; t < block->count; t++) {
        Thread &th = block->threads[t];
        th.linear = t;
        th.index = {t % block_dim.x, (t / block_dim.x) % block_dim.y,
                    t / (block_dim.x * block_dim.y)};
        th.state = ThreadState::Runnable;
        th.pending_count = 0;
        th.groups_committed = 0;
        getcontext(&th.context);
        th.context.uc_stack.ss_sp = block->stacks + t * kStackBytes;
        th.context.uc_stack.ss_size = kStackBytes;
        th.context.uc_link = &block->scheduler;
        makecontext(&th.context, thread_main, 0);
    }
    for (;;) {
        bool any_left = false;
        for (int k = 0; k < block->count; k++) {
            Thread &th = block->threads[reversed ? block->count - 1 - k : k];
            if (th.state != ThreadState::Runnable) continue;
            current = &th;
            swapcontext(&block->scheduler, &th.context);
            if (block->error) return false;
        }
        for (int t = 0; t < block->count; t++)
            any_left |= block->threads[t].state != ThreadState::Done;
        if (!any_left) return true;
        if (!release_barriers()) return false;
    }
}

/** As fake_cuda::LaunchShape in run_on_cpu.h. */
struct Shape {
    unsigned grid[3], block[3], shared_bytes;
    unsigned reversed;  // run the threads and the blocks highest first
};

/** Runs the grid of `body` (one call per thread); 0, or 1 with `error`. */
inline int run_grid(void (*body)(void *), void *arg, const Shape &shape, char *error,
                    int error_size) {
    static Block the_block;
    block = &the_block;
    block->body = body;
    block->body_arg = arg;
    block->error = nullptr;
    block_dim = {shape.block[0], shape.block[1], shape.block[2]};
    grid_dim = {shape.grid[0], shape.grid[1], shape.grid[2]};
    block->count = static_cast<int>(block_dim.x * block_dim.y * block_dim.z);
    if (block->count > kMaxThreads || shape.shared_bytes > kMaxSharedBytes) {
        snprintf(error, error_size, "a block of %d threads and %u bytes of shared memory",
                 block->count, shape.shared_bytes);
        return 1;
    }
    if (!block->stacks) {
        void *m = mmap(nullptr, kMaxThreads * kStackBytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED) {
            snprintf(error, error_size, "no memory for the threads' stacks");
            return 1;
        }
        block->stacks = static_cast<char *>(m);
    }
    const unsigned gx = grid_dim.x, gy = grid_dim.y, gz = grid_dim.z;
    const size_t guard = kMaxSharedBytes - shape.shared_bytes < kSharedGuardBytes
                             ? kMaxSharedBytes - shape.shared_bytes
                             : kSharedGuardBytes;
    for (unsigned z = 0; z < gz; z++) {
        for (unsigned y = 0; y < gy; y++) {
            for (unsigned x = 0; x < gx; x++) {
                block_index =
                    shape.reversed ? uint3{gx - 1 - x, gy - 1 - y, gz - 1 - z} : uint3{x, y, z};
                memset(loom_shared_memory, 0xff, shape.shared_bytes);
                memset(loom_shared_memory + shape.shared_bytes, kSharedGuardPattern, guard);
                if (!run_block(shape.reversed != 0)) {
                    snprintf(error, error_size, "%s", block->error);
                    return 1;
                }
                for (size_t i = 0; i < guard; i++) {
                    if (loom_shared_memory[shape.shared_bytes + i] != kSharedGuardPattern) {
                        snprintf(error, error_size,
                                 "block (%u, %u, %u) wrote shared memory at byte %zu, past the "
                                 "%u bytes its launch asked for",
                                 block_index.x, block_index.y, block_index.z,
                                 shape.shared_bytes + i, shape.shared_bytes);
                        return 1;
                    }
                }
            }
        }
    }
    return 0;
}

/** Calls kernel k with the launch's arguments (each a pointer to the
 * argument's value, as cuLaunchKernel takes them). */
template <typename... A, size_t... I>
void call_with(void (*k)(A...), void **args, std::index_sequence<I...>) {
    k(*static_cast<std::remove_cv_t<std::remove_reference_t<A>> *>(args[I])...);
}

template <typename... A> struct Call {
    void (*kernel)(A...);
    void **args;
    static void body(void *self) {
        Call *c = static_cast<Call *>(self);
        call_with(c->kernel, c->args, std::index_sequence_for<A...>{});
    }
};

template <typename... A>
int launch(void (*kernel)(A...), const Shape &shape, void **args, char *error, int error_size) {
    Call<A...> call{kernel, args};
    return run_grid(&Call<A...>::body, &call, shape, error, error_size);
}

template <typename To, typename From> To bit_cast(From f) {
    static_assert(sizeof(To) == sizeof(From), "bit casts keep the size");
    To t;
    memcpy(&t, &f, sizeof(To));
    return t;
}

}  // namespace loom_cpu

#define threadIdx (::loom_cpu::current->index)
#define blockIdx (::loom_cpu::block_index)
#define blockDim (::loom_cpu::block_dim)
#define gridDim (::loom_cpu::grid_dim)

#define LOOM_CHECK_ALIGNED(address, bytes) ::loom_cpu::check_aligned(address, bytes)

inline void __syncthreads() { loom_cpu::sync_block(); }
inline void __syncwarp(unsigned mask = 0xffffffffu) { loom_cpu::sync_warp(mask); }
template <typename T> T __shfl_down_sync(unsigned mask, T v, unsigned offset) {
    return loom_cpu::shuffle_down(mask, v, static_cast<int>(offset));
}
template <typename T> T __shfl_xor_sync(unsigned mask, T v, int lane_mask) {
    return loom_cpu::shuffle_xor(mask, v, lane_mask);
}
template <typename T> T __shfl_sync(unsigned mask, T v, int source_lane) {
    return loom_cpu::shuffle_idx(mask, v, source_lane);
}
[[noreturn]] inline void __trap() {
    loom_cpu::fail("the kernel trapped (__trap)");
    abort();
}

inline float __int_as_float(int x) { return loom_cpu::bit_cast<float>(x); }
inline int __float_as_int(float x) { return loom_cpu::bit_cast<int>(x); }
inline double __longlong_as_double(long long x) { return loom_cpu::bit_cast<double>(x); }
inline long long __double_as_longlong(double x) { return loom_cpu::bit_cast<long long>(x); }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }

/** Defines `int <kernel>_on_cpu(shape, args, error, error_size)`, which the
 * driver calls for a launch of `kernel`. */
#define LOOM_CPU_KERNEL(kernel)                                                            \
    extern "C" int kernel##_on_cpu(const loom_cpu::Shape *shape, void **args, char *error, \
                                   int error_size) {                                       \
        return loom_cpu::launch(&kernel, *shape, args, error, error_size);                 \
    }
