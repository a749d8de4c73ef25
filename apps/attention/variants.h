// The attention variants that the flash-attention schedule templates
// (schedules/flash_attention.h) schedule, one plain algorithm per file in
// variants/ (global, causal, alibi, softcap, sliding_window, gqa, and
// composite.h, which composes their pieces): each
// defines its scores s(b, h, i, j) (the variant's modification and mask,
// masks as select(allowed, score, -inf)) and the shared softmax chain of
// variants/chain.h, so that one directive, rolling_update(o, r) or
// split_k(o, r, K), applies to all of them. AttentionVariant picks one by
// its enum (variants_reference.h, with the float64 reference).
//
// Inputs q [batch, Hq, Lq, head_dim], k and v [batch, Hkv, Lk, head_dim], of
// element type float32, float16 or bfloat16; the arithmetic is float32 and
// the output, [batch, Hq, Lq, head_dim], has the input type. The query at
// index i has position i + Lk - Lq (prefill: Lq == Lk; decode: Lq == 1).
// A fully masked row is defined as 0 (variants/chain.h).
#pragma once

#include <limits>

#include <loom/loom.h>

#include "../../schedules/materialized_attention.h"
#include "variants/alibi.h"
#include "variants/causal.h"
#include "variants/chain.h"
#include "variants/composite.h"
#include "variants/global.h"
#include "variants/gqa.h"
#include "variants/sliding_window.h"
#include "variants/softcap.h"
#include "variants_reference.h"

namespace attention {

// Variant, all_variants, variant_name and the constants (soft_cap) are in
// variants_reference.h, shared with the float64 reference.

struct AttentionVariant : AttentionFuncs {
    Variant variant;

    /** A compiled pipeline takes its arguments as q, k, v, scale (and
     * window, for the sliding window): the order they are made in here. */
    AttentionVariant(Variant variant_, loom::Type input_type)
        : AttentionVariant(variant_, Inputs(input_type)) {}
    /** Over parameters made elsewhere, e.g. a generator's Inputs. q, k and v
     * must have the same element type, which is also the output's. */
    AttentionVariant(Variant variant_, loom::BufferParam q_, loom::BufferParam k_,
                     loom::BufferParam v_, loom::Param<float> scale_, loom::Param<int> window_)
        : AttentionFuncs(std::move(q_), std::move(k_), std::move(v_), std::move(scale_),
                         std::move(window_)),
          variant(variant_) {
        define();
    }

    const char *name() const { return variant_name(variant); }

  private:
    /** The inputs, made one after another (a constructor's arguments are
     * evaluated in no fixed order, and parameters are numbered as made). */
    struct Inputs {
        loom::BufferParam q, k, v;
        loom::Param<float> scale;
        loom::Param<int> window;
        explicit Inputs(loom::Type t)
            : q(t, 4, "q"), k(t, 4, "k"), v(t, 4, "v"), scale("scale"), window("window") {}
    };
    AttentionVariant(Variant variant_, Inputs in)
        : AttentionVariant(variant_, in.q, in.k, in.v, in.scale, in.window) {}

    void define() {
        switch (variant) {
        case Variant::Global: define_global(*this); break;
        case Variant::Causal: define_causal(*this); break;
        case Variant::ALiBi: define_alibi(*this); break;
        case Variant::SoftCap: define_softcap(*this); break;
        case Variant::SlidingWindow: define_sliding_window(*this); break;
        case Variant::GroupedQuery: define_grouped_query(*this); break;
        case Variant::SoftCapGQA: define_softcap_gqa(*this); break;
        case Variant::WindowSoftCapGQA: define_window_softcap_gqa(*this); break;
        }
    }

  public:
    /** The Funcs the schedule templates take. */
    loom::schedules::AttentionChain chain() const {
        return {s, p, o, out, b, h, i, j, d, r, kt, qk, e, qf, c, k, v, vf};
    }
    /** Compiles for one head dimension: q, k and v must have exactly
     * `head_dim` elements in dimension 3 (checked at run time). GPU
     * schedules need it, for per-thread arrays of constant size. */
    void fix_head_dim(int head_dim) {
        q.dim(3).set_extent(head_dim);
        k.dim(3).set_extent(head_dim);
        v.dim(3).set_extent(head_dim);
    }
    /** Promises head rows that start on 16-byte words, as contiguous
     * PyTorch tensors and Loom's own buffers of a head dimension that is
     * a multiple of 8 have: q, k, v and the output start on 16 bytes,
     * their strides are multiples of 8 elements, their head dimension
     * counts from 0, and the output's is exactly `head_dim` (call
     * fix_head_dim too). The pipeline checks each promise when it runs.
     * The GPU schedules' vector loads of the rows then move whole words
     * with no test of the address. */
    void promise_aligned_heads(int head_dim) const {
        for (loom::BufferParam b : {q, k, v}) {
            b.set_host_alignment(16);
            for (int d = 0; d < 3; d++) b.dim(d).set_stride_multiple(8);
            b.dim(3).set_min(0);
        }
        loom::OutputBuffer o = out.output_buffer();
        o.set_host_alignment(16);
        for (int d = 0; d < 3; d++) o.dim(d).set_stride_multiple(8);
        o.dim(3).set_min(0);
        o.dim(3).set_extent(head_dim);
    }
    /** The materialized baseline (schedules/materialized_attention.h). */
    void schedule_materialized(loom::Schedule &sch, int query_block = 16, int vector = 8) const {
        loom::schedules::materialized_attention(sch, chain(), m, l, query_block, vector);
    }
    loom::Schedule materialized_schedule(int query_block = 16, int vector = 8) const {
        loom::Schedule sch;
        schedule_materialized(sch, query_block, vector);
        return sch;
    }
};

}  // namespace attention
