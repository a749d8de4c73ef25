// ALiBi (causal): a linear bias by distance, slope_h * (p - j) with
// slope_h = 2^(-8 (h + 1) / H), subtracted from the scores before the
// softmax.
#pragma once

#include "chain.h"

namespace attention {

inline void define_alibi(AttentionFuncs &a) {
    using namespace loom;
    Expr heads = a.q.dim(1).extent();
    Expr slope = pow(2.0f, -8.0f * cast<float>(a.h + 1) / cast<float>(heads));
    Expr score = a.dot(a.h) * a.scale - slope * cast<float>(a.query_pos() - a.j);
    define_chain(a, AttentionFuncs::masked(a.j <= a.query_pos(), score), a.h);
}

}  // namespace attention
