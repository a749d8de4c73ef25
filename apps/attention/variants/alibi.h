// ALiBi (causal): a linear bias by distance, slope_h * (p - j) with
// slope_h = 2^(-8 (h + 1) / H), subtracted from the scores before the
// softmax.
#pragma once

#include "causal.h"
#include "chain.h"

namespace attention {

/** `score` with ALiBi's bias by distance subtracted. */
inline loom::Expr alibi_biased(const AttentionFuncs &a, const loom::Expr &score) {
    using namespace loom;
    Expr heads = a.q.dim(1).extent();
    Expr slope = pow(2.0f, -8.0f * cast<float>(a.h + 1) / cast<float>(heads));
    return score - slope * cast<float>(a.query_pos() - a.j);
}

inline void define_alibi(AttentionFuncs &a) {
    define_chain(a, AttentionFuncs::masked(causal_mask(a), alibi_biased(a, a.dot(a.h) * a.scale)),
                 a.h);
}

}  // namespace attention
