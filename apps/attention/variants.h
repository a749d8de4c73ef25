// The attention variants that the flash-attention schedule templates
// schedule, as plain algorithms (no scheduling in the definitions). Every
// variant defines the same chain of Funcs, so that one directive such as
// rolling_update(o, r) or split_k(o, r, K) applies to all of them:
//
//   s(b, h, i, j) = score: sum_e q(b, h, i, e) * k(b, hk, j, e) in float32, times
//                   scale, then the variant's modification, then its mask as
//                   select(allowed, score, -inf)
//   m(b, h, i)    = maximum(s(b, h, i, r))
//   p(b, h, i, j) = exp(s(b, h, i, j) - m(b, h, i))
//   l(b, h, i)    = sum(p(b, h, i, r))
//   o(b, h, i, d) = sum(p(b, h, i, r) * v(b, hk, r, d))
//   out(b, h, i, d) = input_type(select(l(b, h, i) > 0, o(b, h, i, d) / l(b, h, i), 0))
//
// with r over the keys [0, Lk) and hk the key/value head that query head h
// reads (h itself, except for grouped-query attention).
//
// Inputs q [batch, Hq, Lq, head_dim], k and v [batch, Hkv, Lk, head_dim], of
// element type float32, float16 or bfloat16; the arithmetic is float32 and
// the output, [batch, Hq, Lq, head_dim], has the input type.
//
// Positions: the query at index i has absolute position
// query_pos = i + Lk - Lq, so one algorithm covers prefill (Lq == Lk) and
// decode (Lq == 1: the last position, which sees every key under a causal
// mask).
//
// Fully masked rows: a query row whose keys are all masked has no softmax.
// Its result is DEFINED to be 0, as in FlashAttention. In this plain
// algorithm such a row has m = -inf, so p = exp(-inf - -inf) = NaN and
// l = NaN; NaN > 0 is false and the final select gives 0. A fused schedule
// must produce the same 0 (its running l stays 0 or NaN, never > 0).
#pragma once

#include <limits>

#include <loom/loom.h>

#include "variants_reference.h"

namespace attention {

// Variant, all_variants, variant_name and the constants (soft_cap) are in
// variants_reference.h, shared with the float64 reference.

struct AttentionVariant {
    Variant variant;
    // Inputs in [batch, heads, seq, head_dim] order (the last index innermost).
    loom::BufferParam q, k, v;
    loom::Param<float> scale{"scale"};
    /** Variant::SlidingWindow only: query position p sees the keys
     * (p - window, p]. A window of 0 masks every key. Unused (and not an
     * argument of the pipeline) in the other variants. */
    loom::Param<int> window{"window"};
    loom::Var b{"b"}, h{"h"}, i{"i"}, j{"j"}, d{"d"};
    loom::Func s{"s"}, m{"m"}, p{"p"}, l{"l"}, o{"o"}, out{"out"};
    /** The keys every reduction of the chain runs over. */
    loom::RDom r;

    AttentionVariant(Variant variant_, loom::Type input_type)
        : variant(variant_), q(input_type, 4, "q"), k(input_type, 4, "k"), v(input_type, 4, "v") {
        define(input_type);
    }
    /** Over parameters made elsewhere, e.g. a generator's Inputs. q, k and v
     * must have the same element type, which is also the output's. */
    AttentionVariant(Variant variant_, loom::BufferParam q_, loom::BufferParam k_,
                     loom::BufferParam v_, loom::Param<float> scale_, loom::Param<int> window_)
        : variant(variant_),
          q(std::move(q_)),
          k(std::move(k_)),
          v(std::move(v_)),
          scale(std::move(scale_)),
          window(std::move(window_)) {
        define(q.type());
    }

    const char *name() const { return variant_name(variant); }

  private:
    void define(loom::Type input_type) {
        using namespace loom;
        const Expr Lq = q.dim(2).extent(), Lk = k.dim(2).extent();
        const Expr heads = q.dim(1).extent();
        r = RDom(0, Lk, "r");
        RDom e(0, q.dim(3).extent(), "e");

        // The key/value head of query head h.
        Expr hk = h;
        if (variant == Variant::GroupedQuery) {
            // G = Hq / Hkv query heads share one key/value head. The max
            // changes nothing for Hq = G * Hkv; it tells bounds inference
            // that G is positive, so that k and v are read over
            // [0, (Hq - 1) / G] in the head dimension (for a divisor of
            // unknown sign it can only say [-(Hq - 1), Hq - 1]).
            Expr group = max(heads / k.dim(1).extent(), 1);
            hk = h / group;
        }

        Expr query_pos = i + Lk - Lq;
        Expr score = sum(cast<float>(q(b, h, i, e)) * cast<float>(k(b, hk, j, e))) * scale;
        Expr allowed;  // undefined: nothing masked
        switch (variant) {
        case Variant::Global: break;
        case Variant::Causal:
        case Variant::GroupedQuery: allowed = j <= query_pos; break;
        case Variant::ALiBi: {
            // slope_h = 2^(-8 (h + 1) / H); the bias grows with the distance.
            Expr slope = pow(2.0f, -8.0f * cast<float>(h + 1) / cast<float>(heads));
            score = score - slope * cast<float>(query_pos - j);
            allowed = j <= query_pos;
            break;
        }
        case Variant::SoftCap:
            score = soft_cap * tanh(score / soft_cap);
            allowed = j <= query_pos;
            break;
        case Variant::SlidingWindow: allowed = j <= query_pos && j > query_pos - window; break;
        }
        if (allowed.defined()) {
            score = select(allowed, score, -std::numeric_limits<float>::infinity());
        }

        s(b, h, i, j) = score;
        m(b, h, i) = maximum(s(b, h, i, r));
        p(b, h, i, j) = exp(s(b, h, i, j) - m(b, h, i));
        l(b, h, i) = sum(p(b, h, i, r));
        o(b, h, i, d) = sum(p(b, h, i, r) * cast<float>(v(b, hk, r, d)));
        // A fully masked row (l is NaN there, see the top of this file) is 0.
        out(b, h, i, d) =
            cast(input_type, select(l(b, h, i) > 0, o(b, h, i, d) / l(b, h, i), 0.0f));
    }

  public:
    /** The baseline CPU schedule, as Attention::schedule_cpu: blocks of
     * queries in parallel; per block the scores, probabilities and softmax
     * statistics are materialized, vectorized along the key and head
     * dimensions. The fused schedules are compared against this one. */
    void schedule_materialized(loom::Schedule &sch, int query_block = 16, int vector = 8) const {
        using namespace loom;
        Var io("io"), ii("ii"), t("t");
        sch[out].split(i, io, ii, query_block).fuse(h, io, t).parallel(t).vectorize(d, vector);
        sch[s].compute_at(out, t).vectorize(j, vector);
        sch[m].compute_at(out, t);
        sch[p].compute_at(out, t).vectorize(j, vector);
        sch[l].compute_at(out, t);
        sch[o].compute_at(out, t).vectorize(d, vector);
    }
    loom::Schedule materialized_schedule(int query_block = 16, int vector = 8) const {
        loom::Schedule sch;
        schedule_materialized(sch, query_block, vector);
        return sch;
    }
};

}  // namespace attention
