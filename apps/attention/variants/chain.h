// What every attention variant shares: the softmax chain over the scores.
// Each variant (one file each in this directory) defines only its scores,
// s(b, h, i, j); the rest is written once, here, as plain Funcs:
//
//   m(b, h, i)    = maximum(s(b, h, i, r))
//   p(b, h, i, j) = exp(s(b, h, i, j) - m(b, h, i))
//   l(b, h, i)    = sum(p(b, h, i, r))
//   o(b, h, i, d) = sum(p(b, h, i, r) * v(b, hk, r, d))
//   out(b, h, i, d) = input_type(select(l > 0, o / l, 0))
//
// with r over the keys [0, Lk). A row whose keys are all masked has no
// softmax; its result is DEFINED as 0, as in FlashAttention: in this plain
// chain such a row has m = -inf, p = exp(-inf - -inf) = NaN and l = NaN,
// and NaN > 0 is false, so the select gives 0. (A fused schedule keeps
// l = 0 there, which gives the same 0.) No scheduling here.
#pragma once

#include <limits>
#include <utility>

#include <loom/loom.h>

namespace attention {

/** The inputs and names of one attention algorithm. */
struct AttentionFuncs {
    AttentionFuncs(loom::BufferParam q_, loom::BufferParam k_, loom::BufferParam v_,
                   loom::Param<float> scale_, loom::Param<int> window_)
        : q(std::move(q_)),
          k(std::move(k_)),
          v(std::move(v_)),
          scale(std::move(scale_)),
          window(std::move(window_)) {
        kt(b, h, c, j) = loom::cast<float>(k(b, h, j, c));
        vf(b, h, j, d) = loom::cast<float>(v(b, h, j, d));
        qf(b, h, i, c) = loom::cast<float>(q(b, h, i, c));
    }

    // q [batch, Hq, Lq, head_dim]; k, v [batch, Hkv, Lk, head_dim].
    loom::BufferParam q, k, v;
    loom::Param<float> scale;
    loom::Param<int> window;  // sliding window only
    loom::Var b{"b"}, h{"h"}, i{"i"}, j{"j"}, d{"d"}, c{"c"};
    /** The keys in float32 with the head dimension outermost: kt(b, h, c, j)
     * = k(b, h, j, c). The scores read k through it; it changes no value,
     * and inlined (the default) it is k itself. A schedule that computes it
     * per key tile stores that tile transposed, so that scores vectorized
     * along the keys read contiguous memory. */
    loom::Func kt{"kt"};
    /** The values in float32, vf(b, h, j, d) = v(b, h, j, d), as o reads
     * them. Like kt it changes no value; a GPU schedule staging a tile of
     * it in shared memory converts each value once per block instead of
     * once per thread that reads it. */
    loom::Func vf{"vf"};
    /** The queries in float32, qf(b, h, i, c) = q(b, h, i, c). Like kt it
     * changes no value; a GPU schedule computes it per thread, so that each
     * thread's query row is read once into registers instead of once per
     * key. */
    loom::Func qf{"qf"};
    /** The scores' dot products, q . k over the head dimension in float32:
     * qk(b, h, i, j), a reduction over e (made by dot()). */
    loom::Func qk{"qk"};
    loom::RDom e;
    loom::Func s{"s"}, m{"m"}, p{"p"}, l{"l"}, o{"o"}, out{"out"};
    /** The keys every reduction of the chain runs over. */
    loom::RDom r;

    loom::Expr seq_q() const { return q.dim(2).extent(); }
    loom::Expr seq_k() const { return k.dim(2).extent(); }
    /** The absolute position of query i: prefill (Lq == Lk) and decode
     * (Lq == 1, the last position) alike. */
    loom::Expr query_pos() const { return i + seq_k() - seq_q(); }
    /** q . k over the head dimension for key/value head hk, as qk(b, h, i,
     * j). A named reduction rather than an inline sum, so that a schedule
     * can order its loops (the head dimension outside the keys of a tile). */
    loom::Expr dot(const loom::Expr &hk) {
        using namespace loom;
        e = RDom(0, q.dim(3).extent(), "e");
        qk(b, h, i, j) = 0.0f;
        qk(b, h, i, j) += qf(b, h, i, e) * kt(b, hk, e, j);
        return qk(b, h, i, j);
    }
    static loom::Expr masked(const loom::Expr &allowed, const loom::Expr &score) {
        return loom::select(allowed, score, -std::numeric_limits<float>::infinity());
    }
};

/** Defines s as `score` and the chain after it; the values are read from
 * key/value head `hk`. */
inline void define_chain(AttentionFuncs &a, const loom::Expr &score, const loom::Expr &hk) {
    using namespace loom;
    a.r = RDom(0, a.seq_k(), "r");
    a.s(a.b, a.h, a.i, a.j) = score;
    a.m(a.b, a.h, a.i) = maximum(a.s(a.b, a.h, a.i, a.r));
    a.p(a.b, a.h, a.i, a.j) = exp(a.s(a.b, a.h, a.i, a.j) - a.m(a.b, a.h, a.i));
    a.l(a.b, a.h, a.i) = sum(a.p(a.b, a.h, a.i, a.r));
    a.o(a.b, a.h, a.i, a.d) = sum(a.p(a.b, a.h, a.i, a.r) * a.vf(a.b, hk, a.r, a.d));
    a.out(a.b, a.h, a.i, a.d) =
        cast(a.q.type(),
             select(a.l(a.b, a.h, a.i) > 0, a.o(a.b, a.h, a.i, a.d) / a.l(a.b, a.h, a.i), 0.0f));
}

}  // namespace attention
