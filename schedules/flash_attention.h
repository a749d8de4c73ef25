// Schedule templates for attention written as the plain chain
//
//   s(b, h, i, j) = scores            m(b, h, i)    = maximum(s(b, h, i, r))
//   p(b, h, i, j) = exp(s - m)        l(b, h, i)    = sum(p(b, h, i, r))
//   o(b, h, i, d) = sum(p(b, h, i, r) * v(b, h', r, d))
//   out(b, h, i, d) = o / l (or any epilogue of o and l)
//
// (apps/attention/variants.h: global, causal, ALiBi, soft-capping, sliding
// window, grouped-query). Neither template knows which variant it
// schedules: the masks, biases and caps live in s, and the repairs that make
// the fused loops exact are derived by the compiler.
#pragma once

#include <loom/loom.h>

namespace loom {
namespace schedules {

/** The Funcs, Vars and RDom of an attention algorithm that the templates
 * schedule. m and l are found by the compiler: they are o's chain. */
struct AttentionChain {
    Func s, p, o, out;
    Var b, h, i, j, d;
    RVar r;
    /** Optional: the keys as read by s, with the key Var innermost
     * (kt(b, h, c, j) = k(b, h, j, c)). When given, flash_attention stores
     * each key tile of it transposed, so that the scores, vectorized along
     * the keys, read contiguous vectors instead of gathering one key per
     * lane. */
    Func kt = Func();
};

struct FlashAttentionOptions {
    int query_block = 16;  // queries per parallel task
    int key_tile = 64;     // keys per rolling step
    int vector = 8;        // vector width (floats)
};

/** FlashAttention for prefill: tasks of `query_block` queries of one head
 * in parallel; per task ONE pass over the keys in tiles of `key_tile`. For
 * each tile the scores and probabilities of the whole query block are
 * computed (vectorized along the keys), then each query's running max, sum
 * and weighted sum are repaired and accumulated. No Func is stored over the
 * whole key range: memory is O(query_block * key_tile) per task. */
inline void flash_attention(Schedule &sch, const AttentionChain &a,
                            const FlashAttentionOptions &opt = {}) {
    Var io("io"), ii("ii"), task("task");
    RVar ro("ro"), ri("ri");
    sch[a.out]
        .split(a.i, io, ii, opt.query_block)
        .fuse(a.h, io, task)
        .parallel(task)
        .vectorize(a.d, opt.vector);
    sch.rolling_update(a.o, a.r)
        .split(a.r, ro, ri, opt.key_tile)
        .reorder(ro, a.i)
        .vectorize(a.d, opt.vector);
    sch[a.o].compute_at(a.out, task);
    if (a.kt.defined()) sch[a.kt].compute_root().parallel(a.h).vectorize(a.j, opt.vector);
    sch[a.s].compute_at(a.o, ro).vectorize(a.j, opt.vector);
    sch[a.p].compute_at(a.o, ro).vectorize(a.j, opt.vector);
}

struct FlashDecodingOptions {
    int chunks = 16;    // pieces of the key range computed in parallel
    int key_tile = 64;  // keys per rolling step within a piece
    int vector = 8;
};

/** FlashDecoding for short queries over long key ranges (decode: one
 * query): the keys are split into `chunks` pieces computed in parallel,
 * each ONE rolling pass like flash_attention's, and the pieces' partial
 * max, sum and weighted sum are combined with the derived repairs. */
inline void flash_decoding(Schedule &sch, const AttentionChain &a,
                           const FlashDecodingOptions &opt = {}) {
    Var chunk("chunk");
    RVar ro("ro"), ri("ri");
    Stage partial = sch.split_k(a.o, a.r, opt.chunks, chunk);
    partial.split(a.r, ro, ri, opt.key_tile)
        .parallel(chunk)
        .vectorize(a.d, opt.vector)
        .compute_root();
    sch[a.s].compute_at(partial, ro).vectorize(a.j, opt.vector);
    sch[a.p].compute_at(partial, ro).vectorize(a.j, opt.vector);
    sch[a.o].compute_root();
}

}  // namespace schedules
}  // namespace loom
