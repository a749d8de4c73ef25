// Soft-capped (causal) attention: the scores pass through
// cap * tanh(score / cap) before the softmax (Gemma 2; cap 50).
#pragma once

#include "../variants_reference.h"
#include "chain.h"

namespace attention {

inline void define_softcap(AttentionFuncs &a) {
    using namespace loom;
    Expr score = soft_cap * tanh(a.dot(a.h) * a.scale / soft_cap);
    define_chain(a, AttentionFuncs::masked(a.j <= a.query_pos(), score), a.h);
}

}  // namespace attention
