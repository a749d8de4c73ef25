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

#include <algorithm>
#include <optional>
#include <string>

namespace loom {
namespace schedules {

/** The Funcs, Vars and RDom of an attention algorithm that the templates
 * schedule. m and l are found by the compiler: they are o's chain. */
struct AttentionChain {
    Func s, p, o, out;
    Var b, h, i, j, d;
    RVar r;
    /** Optional: the keys as read by s, with the key Var innermost
     * (kt(b, h, c, j) = k(b, h, j, c)). When given, flash_attention can
     * store them transposed (FlashAttentionOptions::stage_keys), so that
     * the scores, vectorized along the keys, read contiguous vectors
     * instead of gathering one key per lane. */
    Func kt = Func();
    /** Optional: the scores' dot products as a reduction over the head
     * dimension e, qk(b, h, i, j) += q(b, h, i, e) * kt(b, h, e, j). When
     * given, flash_attention computes each tile of it with the head
     * dimension outermost, then the keys, then the queries: a vector of
     * keys is loaded once per head-dimension index and serves the whole
     * query block, and every query-key pair of the tile is an independent
     * accumulator (query_block x key_tile floats, in L1), where an inline
     * sum is one dependent chain of FMAs per vector of scores. */
    Func qk = Func();
    RVar e = RVar();
    /** Optional: the queries as read by qk, qf(b, h, i, c) = q(b, h, i, c)
     * (in float32). flash_attention_gpu keeps each thread's row of it in
     * registers. */
    Func qf = Func();
    Var c = Var();  // qf's last (head-dimension) Var
    /** Optional: the keys and values as the algorithm reads them,
     * k(b, h', j, c) and v(b, h', j, d). flash_attention_gpu with a
     * key_tile reads each tile of them in vectors of 16 bytes of their
     * type, into kt and vf in shared memory. */
    std::optional<BufferParam> k = std::nullopt, v = std::nullopt;
    /** Optional: the values as o reads them, in float32: vf(b, h', j, d) =
     * v(b, h', j, d). flash_attention_gpu with a key_tile stages each tile
     * of it, and of kt, in shared memory. */
    Func vf = Func();
};

struct FlashAttentionOptions {
    int query_block = 16;  // queries per parallel task
    int key_tile = 64;     // keys per rolling step
    int vector = 8;        // vector width (floats)
    /** With AttentionChain::kt: store the keys transposed once, at root (a
     * copy the size of k), so that every task reads its key tiles as
     * contiguous vectors. Pays off when many queries share the keys
     * (prefill); for one query (decode) it is a whole extra pass over k. */
    bool stage_keys = true;
    /** The head dimension, when the inputs fix it (fix_head_dim), and the
     * chain has qk: the template then schedules one tile program per
     * tile_queries queries of one head, with the whole head in one tile
     * (query_block and vector do not apply; stage_keys does: the program
     * then loads each key tile from kt as contiguous vectors instead of
     * transposing it). 0: loops. */
    int head_dim = 0;
    /** Queries per tile program: 128 measured 5-20% faster than 64 at 1k-4k
     * tokens (the key and value tiles serve twice the rows). */
    int tile_queries = 128;
};

/** The tile-program templates compute the scores' product as a dot: they
 * need it as a named reduction. */
inline void require_qk(const AttentionChain &a, const std::string &what, const std::string &how,
                       bool loops_otherwise) {
    if (a.qk.defined()) return;
    throw CompileError(what +
                       ": the chain has no qk, the scores' product as a named reduction, which "
                       "the tile program " +
                       how + ". Pass it in the AttentionChain (AttentionFuncs::dot makes it)" +
                       (loops_otherwise ? ", or leave head_dim 0 for loops." : "."));
}

/** The width of a tile holding a whole head: a power of two. */
inline int head_tile_width(int head_dim) {
    int width = 1;
    while (width < head_dim) width *= 2;
    return width;
}

/** The tile-program form of flash_attention on the CPU: per tile_queries
 * queries of one head, one pass over the keys in tiles of key_tile; the
 * scores' product and P V are register-blocked dots, the rows' maximum
 * and sum vector reductions, the repairs the derived factors, and the
 * query tiles run in parallel. */
inline void flash_attention_tile_program(Schedule &sch, const AttentionChain &a,
                                         const FlashAttentionOptions &opt) {
    require_qk(a, "flash_attention with head_dim set", "computes as a dot", true);
    // Tiles are powers of two: a head of 80 is one tile of 128, masked.
    const int width = head_tile_width(opt.head_dim);
    Var io("io"), dout("dout");
    sch[a.out].tile_program(a.i, a.d, io, dout, opt.tile_queries, width,
                            TileOptions().warps(1, 1).reduction_tile(width));
    RVar ro("ro"), ri("ri");
    sch.rolling_update(a.o, a.r).split(a.r, ro, ri, opt.key_tile);
    sch[a.o].compute_at(a.out, dout);
    sch[a.qk].compute_at(a.out, dout);
    if (a.kt.defined() && opt.stage_keys) {
        sch[a.kt].compute_root().parallel(a.h).vectorize(a.j, 16);
    }
}

/** FlashAttention for prefill: tasks of `query_block` queries of one head
 * in parallel; per task ONE pass over the keys in tiles of `key_tile`. For
 * each tile the scores and probabilities of the whole query block are
 * computed (vectorized along the keys), then each query's running max, sum
 * and weighted sum are repaired and accumulated. No Func is stored over the
 * whole key range of a query block: memory is O(query_block * key_tile) per
 * task, plus, with stage_keys, one transposed copy of the keys. Key tiles
 * that the variant's mask leaves empty for the whole block (causal: above
 * the diagonal) are skipped by the compiler. */
inline void flash_attention(Schedule &sch, const AttentionChain &a,
                            const FlashAttentionOptions &opt = {}) {
    if (opt.head_dim > 0) return flash_attention_tile_program(sch, a, opt);
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
    if (a.kt.defined() && opt.stage_keys) {
        sch[a.kt].compute_root().parallel(a.h).vectorize(a.j, opt.vector);
    }
    if (a.qk.defined()) {
        sch[a.qk].compute_at(a.o, ro).vectorize(a.j, opt.vector);
        sch[a.qk].update().reorder(a.e, a.j, a.i).vectorize(a.j, opt.vector);
    }
    sch[a.s].compute_at(a.o, ro).vectorize(a.j, opt.vector);
    sch[a.p].compute_at(a.o, ro).vectorize(a.j, opt.vector);
}

struct FlashDecodingOptions {
    int chunks = 16;    // pieces of the key range computed in parallel
    int key_tile = 64;  // keys per rolling step within a piece
    int vector = 8;
    /** As FlashAttentionOptions::head_dim: with the head dimension fixed and
     * the chain's qk, each piece is a tile program (vector does not apply).
     * 0: loops. */
    int head_dim = 0;
    /** With head_dim: the rows of each program, at one query, are the query
     * heads that read one key/value head (grouped-query attention's group of
     * G, found by the compiler; one head elsewhere), so that the group reads
     * its piece of the keys once. Rows past the group are idle and not
     * computed; a larger group takes several programs. */
    int tile_queries = 8;
};

/** The tile-program form of flash_decoding: per piece of the keys, query
 * and group of query heads (those reading one key/value head), one tile
 * program rolling the chain over its key tiles (as
 * flash_attention_tile_program does over all of them), storing the piece's
 * partial max, sum and weighted sum; the pieces and groups run in parallel,
 * then the combine. */
inline void flash_decoding_tile_program(Schedule &sch, const AttentionChain &a,
                                        const FlashDecodingOptions &opt) {
    require_qk(a, "flash_decoding with head_dim set", "computes as a dot", true);
    const int width = head_tile_width(opt.head_dim);
    Var chunk("chunk"), ho("ho"), dout("dout");
    RVar ro("ro"), ri("ri");
    Stage partial = sch.split_k(a.o, a.r, opt.chunks, chunk);
    partial
        .tile_program(a.h, a.d, ho, dout, opt.tile_queries, width,
                      TileOptions().warps(1, 1).reduction_tile(width).group_rows())
        .split(a.r, ro, ri, opt.key_tile)
        .compute_root();
    sch[a.qk].compute_at(partial, dout);
    sch[a.o].compute_root();
}

/** FlashDecoding for short queries over long key ranges (decode: one
 * query): the keys are split into `chunks` pieces computed in parallel,
 * each ONE rolling pass like flash_attention's, and the pieces' partial
 * max, sum and weighted sum are combined with the derived repairs. */
inline void flash_decoding(Schedule &sch, const AttentionChain &a,
                           const FlashDecodingOptions &opt = {}) {
    if (opt.head_dim > 0) return flash_decoding_tile_program(sch, a, opt);
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

struct FlashAttentionGpuOptions {
    int queries_per_block = 64;  // threads per block, one query each
    /** The head dimension the kernel is compiled for: the extent that q, k
     * and v fix with dim(3).set_extent(head_dim). */
    int head_dim = 64;
    /** 0: each thread reads every key and value from global memory (one
     * broadcast per warp). N > 0: the keys are rolled over in tiles of N;
     * the block copies each tile of k and v into shared memory once, as
     * float32 (kt and vf; coalesced, in 16-byte vectors: the tile's keys
     * and each row's vectors are one loop over the block's threads), and
     * every thread reads it from there (needs AttentionChain::k, v, kt and
     * vf). */
    int key_tile = 0;
    /** key_tile 0 only. 0: each thread's dot product q.k runs over the head
     * dimension one element at a time. N > 1 (dividing head_dim): it reads
     * each key row in vectors of N and sums each vector's lanes before
     * adding them up, which reassociates the sum. Worth it where the rows
     * are promised aligned (AttentionVariant::promise_aligned_heads): the
     * vectors are then single 16-byte loads with no test of the address. */
    int qk_vector = 0;
};

/** FlashAttention on a GPU without tensor cores, the baseline for the tile
 * programs: blocks of `queries_per_block` queries of one head, one query
 * per thread. Each thread makes ONE pass over the keys with its running
 * max, sum and weighted sum (rolling_update, per key) in registers, and its
 * query row (qf) in registers too; the keys and values it reads are the same
 * for every thread of a warp, so each load is one broadcast.
 *
 * Per-thread arrays need constant sizes: q, k and v must fix their head
 * dimension to opt.head_dim (dim(3).set_extent), and the output's head
 * dimension must be at least that (it is computed in pieces of
 * opt.head_dim, the last shifted inwards). */
inline void flash_attention_gpu(Schedule &sch, const AttentionChain &a,
                                const FlashAttentionGpuOptions &opt = {}) {
    Var io("io"), ii("ii"), dout("dout"), di("di");
    if (opt.key_tile <= 0) {
        sch[a.out]
            .split(a.i, io, ii, opt.queries_per_block)
            .split(a.d, dout, di, opt.head_dim, TailStrategy::ShiftInwards)
            .gpu_blocks(io, a.h, a.b)
            .gpu_threads(ii)
            .unroll(di);
        // Unrolled, so that the per-thread arrays are indexed by constants
        // and stay in registers. o's update reads each value row in
        // vectors of 8 (16 bytes of fp16), where unrolled scalar loads stay
        // one load per element (the compiler cannot tell they are aligned).
        int lanes = 8;
        while (lanes > 1 && opt.head_dim % lanes != 0) lanes /= 2;
        Var dv("dv"), dl("dl");
        sch.rolling_update(a.o, a.r).split(a.d, dv, dl, lanes).unroll(dv).vectorize(dl);
        sch[a.o].compute_at(a.out, dout);
        if (a.qf.defined()) sch[a.qf].compute_at(a.out, dout).unroll(a.c);
        if (a.qk.defined()) {
            if (opt.qk_vector > 1) {
                if (opt.head_dim % opt.qk_vector != 0) {
                    throw CompileError("flash_attention_gpu: qk_vector " +
                                       std::to_string(opt.qk_vector) +
                                       " does not divide head_dim " + std::to_string(opt.head_dim) +
                                       "; pick a divisor (8 or 4), or 0 for no vectors.");
                }
                RVar ev("ev"), el("el");
                sch[a.qk].update().split(a.e, ev, el, opt.qk_vector).unroll(ev).vectorize(el);
            } else {
                sch[a.qk].update().unroll(a.e);
            }
        }
        return;
    }
    if (opt.qk_vector > 1) {
        throw CompileError(
            "flash_attention_gpu: qk_vector applies to key_tile 0 only (with key "
            "tiles, the dot product reads the tile's keys from shared memory, "
            "one key per register); set qk_vector to 0 or key_tile to 0.");
    }
    if (!a.k || !a.v || !a.kt.defined() || !a.vf.defined()) {
        throw CompileError("flash_attention_gpu: key_tile " + std::to_string(opt.key_tile) +
                           " copies tiles of the keys and values into shared memory, as float32, "
                           "so the AttentionChain must name the inputs and the Funcs that read "
                           "them: set its k, v, kt and vf.");
    }
    // The block's loop over key tiles runs outside its threads: o (and the
    // chain's m and l), and each thread's query row qf, are computed at the
    // block level, each thread owning its query's row, in registers.
    RVar ro("ro"), ri("ri");
    sch[a.out]
        .split(a.i, io, ii, opt.queries_per_block, TailStrategy::GuardWithIf)
        .split(a.d, dout, di, opt.head_dim, TailStrategy::ShiftInwards)
        .reorder(io, dout, ii, di)
        .gpu_blocks(io, a.h, a.b)
        .gpu_threads(ii)
        .unroll(di);
    sch.rolling_update(a.o, a.r)
        .split(a.r, ro, ri, opt.key_tile)
        .reorder(ro, a.i, ri, a.d)
        .gpu_threads(a.i)
        .unroll(ri)
        .unroll(a.d);
    sch[a.o].compute_at(a.out, dout).store_in(MemoryType::Register);
    if (a.qf.defined()) {
        sch[a.qf]
            .compute_at(a.out, dout)
            .gpu_threads(a.i)
            .unroll(a.c)
            .store_in(MemoryType::Register);
    }
    if (a.qk.defined()) {
        sch[a.qk].unroll(a.j);
        sch[a.qk].update().reorder(a.e, a.j).unroll(a.e).unroll(a.j);
    }
    // The tile's probabilities, once per thread and key: l's and o's tile
    // partials both read them (inlined, o's would recompute each one for
    // every element of the head dimension).
    sch[a.p].compute_at(a.o, a.i).unroll(a.j);
    // Per tile, the block's threads copy the keys and values into shared
    // memory, converted to float32 there once per block (kt and vf), not
    // by each thread at each use. Every thread reads the same element at a
    // time (a broadcast), in 16-byte vectors: kt's tile is stored with the
    // keys innermost, as qk's loop over the tile's keys reads it, and vf's
    // with the head dimension innermost, as o's update reads it. The copy
    // reads k and v coalesced: the tile's keys and each row's vectors are
    // one loop over the threads, each thread moving one vector of the
    // input (16 bytes) per pass, so neighbouring threads read neighbouring
    // words of the tile (a tile of whole rows is contiguous in k and v).
    Var vo("vo"), vi("vi"), t("t"), to("to"), ti("ti");
    struct Staged {
        Func f;
        Var head_dim;  // kt's c, vf's d
        const BufferParam &input;
    };
    for (const Staged &st : {Staged{a.kt, a.c, *a.k}, Staged{a.vf, a.d, *a.v}}) {
        // 16 bytes of the input, or fewer lanes where the head dimension
        // needs them to divide it (no ragged vector at the end of a row).
        int lanes = std::max(1, 16 / st.input.type().bytes());
        while (lanes > 1 && opt.head_dim % lanes != 0) lanes /= 2;
        sch[st.f]
            .compute_at(a.o, ro)
            .split(st.head_dim, vo, vi, lanes)
            .reorder(a.j, vo, vi)
            .fuse(a.j, vo, t)
            .split(t, to, ti, opt.queries_per_block, TailStrategy::GuardWithIf)
            .vectorize(vi)
            .gpu_threads(ti)
            .store_in(MemoryType::Shared);
    }
}

struct FlashDecodingGpuOptions {
    /** Pieces of the key range, each rolled by one thread. */
    int chunks = 64;
    /** Threads per block over the pieces; more pieces take more blocks. */
    int chunks_per_block = 64;
    /** Queries per block, one per thread row (decoding has one). */
    int queries_per_block = 1;
    /** Keys per rolling step of a piece: each thread keeps the tile's
     * running max, sum and weighted sum in registers, and updates its
     * piece's partials in device memory once per tile. */
    int key_tile = 16;
    /** As FlashAttentionGpuOptions::head_dim: q, k and v must fix it. */
    int head_dim = 64;
    /** Compute each tile's probabilities once, into a per-thread array of
     * key_tile floats that the tile partials of l and o both read: one
     * exponential per key instead of two, for a second array in local
     * memory beside the scores. */
    bool probabilities_per_tile = false;
};

/** FlashDecoding on a GPU without tensor cores: for few queries over many
 * keys, where a thread per query (flash_attention_gpu) leaves the GPU
 * idle. The keys are cut into `chunks` pieces (split_k); a thread per piece
 * and query rolls its piece over tiles of key_tile keys, in blocks of
 * chunks_per_block pieces by queries_per_block queries of one head (the
 * batch and heads fused, on blockIdx.x). The partial max, sum and
 * weighted sum of every piece go to device memory, and each thread of the
 * output's kernel combines its query's pieces with the derived repairs.
 *
 * Per-thread arrays need constant sizes: q, k and v must fix their head
 * dimension to opt.head_dim, and the template fixes the output's to it
 * (as Halide's Func::bound would): the partials cover the output's whole
 * head dimension, one register array per thread. */
inline void flash_decoding_gpu(Schedule &sch, const AttentionChain &a,
                               const FlashDecodingGpuOptions &opt = {}) {
    Var chunk("chunk"), co("co"), ci("ci"), io("io"), ii("ii"), bh("bh");
    Var dout("dout"), di("di"), dv("dv"), dl("dl");
    RVar ro("ro"), ri("ri");
    int lanes = 8;
    while (lanes > 1 && opt.head_dim % lanes != 0) lanes /= 2;
    a.out.output_buffer().dim(3).set_extent(opt.head_dim);
    Stage partial = sch.split_k(a.o, a.r, opt.chunks, chunk);
    partial.split(a.r, ro, ri, opt.key_tile)
        .split(a.i, io, ii, opt.queries_per_block, TailStrategy::GuardWithIf)
        .split(chunk, co, ci, opt.chunks_per_block, TailStrategy::GuardWithIf)
        .fuse(a.b, a.h, bh)
        .reorder(co, io, bh, ii, ci, ro, ri, a.d)
        .gpu_blocks(bh, io, co)
        .gpu_threads(ci, ii)
        .split(a.d, dv, dl, lanes)
        .unroll(dv)
        .vectorize(dl)
        .compute_root();
    // Each thread's query row in registers. The tile's scores, which the
    // tile partials of m, l and o each read, are an array per thread
    // indexed by the key, in local memory (cached in L1): unrolling the
    // tile to keep them in registers too makes NVRTC take over a minute.
    if (a.qf.defined()) sch[a.qf].compute_at(partial, ci).unroll(a.c);
    if (a.qk.defined()) sch[a.qk].update().reorder(a.e, a.j).unroll(a.e);
    if (opt.probabilities_per_tile) sch[a.p].compute_at(partial, ro);
    // The combine: a thread per query, its pieces folded in registers.
    sch[a.out]
        .split(a.i, io, ii, opt.queries_per_block, TailStrategy::GuardWithIf)
        .split(a.d, dout, di, opt.head_dim, TailStrategy::ShiftInwards)
        .gpu_blocks(io, a.h, a.b)
        .gpu_threads(ii)
        .unroll(di);
    sch[a.o].compute_at(a.out, dout).unroll(a.d);
}

struct FlashAttentionTensorCoreOptions {
    /** The head dimension: the output's tiles are query_tile x head_dim,
     * whole rows of it (q, k and v fix it with dim(3).set_extent). */
    int head_dim = 64;
    int query_tile = 64;  // queries per block
    /** Keys per rolling step; 0: 64, or 32 from head dim 128 on (the
     * scores' and the output's accumulators then fit the registers). */
    int key_tile = 0;
    int warps = 4;   // along the queries: each warp query_tile / warps rows
    int stages = 2;  // cp.async stages of the key and value tiles
};

/** FlashAttention on tensor cores, one tile program per query_tile queries
 * of one head (the batch and the heads share the grid's third dimension):
 * one pass over the keys in tiles of key_tile. The program computes, per
 * tile, the scores' product Q K^T on mma.sync (qk, tensorized exactly),
 * the rows' maximum and sum in the accumulator's registers, and P V on
 * mma.sync with P rounded to the values' type in registers
 * (TensorizeRounding::RoundOperands); the running values are repaired by
 * the factors the compiler derives for the variant's chain. Needs
 * AttentionChain::qk (the scores' product as a named reduction). */
inline void flash_attention_tensor_cores(Schedule &sch, const AttentionChain &a,
                                         const FlashAttentionTensorCoreOptions &opt = {}) {
    require_qk(a, "flash_attention_tensor_cores", "computes on tensor cores", false);
    Var io("io"), dout("dout");
    sch[a.out].tile_program(
        a.i, a.d, io, dout, opt.query_tile, opt.head_dim,
        TileOptions().warps(opt.warps, 1).reduction_tile(opt.head_dim).pipeline_stages(opt.stages));
    RVar ro("ro"), ri("ri");
    const int key_tile = opt.key_tile > 0 ? opt.key_tile : opt.head_dim >= 128 ? 32 : 64;
    sch.rolling_update(a.o, a.r)
        .split(a.r, ro, ri, key_tile)
        .tensorize("mma.m16n8k16", TensorizeRounding::RoundOperands);
    sch[a.o].compute_at(a.out, dout);
    sch[a.qk].compute_at(a.out, dout).update().tensorize("mma.m16n8k16");
}

struct FlashDecodingTensorCoreOptions {
    /** The head dimension (q, k and v fix it with dim(3).set_extent). */
    int head_dim = 128;
    /** Pieces of the key range, each rolled by its own blocks: enough
     * blocks to fill the GPU (pieces x batch x heads). */
    int chunks = 32;
    /** Rows per block: 16, one mma row block. The rows are the query heads
     * that read one key/value head (grouped-query attention's group of G;
     * one head otherwise), at one query: a group's key and value tiles are
     * loaded once for its G heads. Rows past the group are padding; a group
     * of more than query_tile heads takes several blocks. */
    int query_tile = 16;
    /** Keys per rolling step; 0: 64, or 32 from head dim 128 on (as
     * FlashAttentionTensorCoreOptions: the accumulators fit the registers). */
    int key_tile = 0;
    int stages = 2;  // cp.async stages of the key and value tiles
};

/** FlashDecoding on tensor cores: split_k over tile programs. The keys are
 * cut into `chunks` pieces; each piece of each query and group of query
 * heads (those reading one key/value head, which the compiler finds from
 * how k and v are read: the template does not know the variant) is a tile
 * program (one warp) whose rows are the group's heads. It rolls its key
 * tiles as flash_attention_tensor_cores does, Q K^T and P V on mma.sync,
 * and stores the piece's partial max, sum and weighted sum. A second kernel combines
 * the pieces with the derived repairs, a block per query and a thread per
 * element of the head: the template fixes the output's head dimension to
 * head_dim (as flash_decoding_gpu does). */
inline void flash_decoding_tensor_cores(Schedule &sch, const AttentionChain &a,
                                        const FlashDecodingTensorCoreOptions &opt = {}) {
    require_qk(a, "flash_decoding_tensor_cores", "computes on tensor cores", false);
    Var chunk("chunk"), ho("ho"), dout("dout");
    RVar ro("ro"), ri("ri");
    a.out.output_buffer().dim(3).set_extent(opt.head_dim);
    Stage partial = sch.split_k(a.o, a.r, opt.chunks, chunk);
    partial
        .tile_program(a.h, a.d, ho, dout, opt.query_tile, opt.head_dim,
                      TileOptions()
                          .warps(std::max(1, opt.query_tile / 16), 1)
                          .reduction_tile(opt.head_dim)
                          .pipeline_stages(opt.stages)
                          .group_rows())
        .split(a.r, ro, ri,
               opt.key_tile > 0      ? opt.key_tile
               : opt.head_dim >= 128 ? 32
                                     : 64)
        .tensorize("mma.m16n8k16", TensorizeRounding::RoundOperands)
        .compute_root();
    sch[a.qk].compute_at(partial, dout).update().tensorize("mma.m16n8k16");
    // The combine: a block per query, a thread per element of its head.
    sch[a.out].gpu_blocks(a.i, a.h, a.b).gpu_threads(a.d);
    sch[a.o].compute_at(a.out, a.d);
}

}  // namespace schedules
}  // namespace loom
