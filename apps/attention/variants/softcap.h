// Soft-capped (causal) attention: the scores pass through
// cap * tanh(score / cap) before the softmax (Gemma 2; cap 50).
#pragma once

#include "../variants_reference.h"
#include "causal.h"
#include "chain.h"

namespace attention {

/** `score` through the soft cap. */
inline loom::Expr soft_capped(const loom::Expr &score) {
    return soft_cap * loom::tanh(score / soft_cap);
}

inline void define_softcap(AttentionFuncs &a) {
    define_chain(a, AttentionFuncs::masked(causal_mask(a), soft_capped(a.dot(a.h) * a.scale)), a.h);
}

}  // namespace attention
