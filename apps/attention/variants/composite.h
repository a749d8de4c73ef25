// Variants composed of the plain ones, as Neptune's operators are: the
// soft cap on grouped-query attention (causal), and a sliding window on
// that. Each piece is the plain variant's own (causal_mask, window_mask,
// soft_capped, grouped_key_head); the chain and every schedule template
// are the same as for the plain variants.
#pragma once

#include "chain.h"
#include "gqa.h"
#include "sliding_window.h"
#include "softcap.h"

namespace attention {

inline void define_softcap_gqa(AttentionFuncs &a) {
    const loom::Expr hk = grouped_key_head(a);
    define_chain(a, AttentionFuncs::masked(causal_mask(a), soft_capped(a.dot(hk) * a.scale)), hk);
}

inline void define_window_softcap_gqa(AttentionFuncs &a) {
    const loom::Expr hk = grouped_key_head(a);
    define_chain(a, AttentionFuncs::masked(window_mask(a), soft_capped(a.dot(hk) * a.scale)), hk);
}

}  // namespace attention
