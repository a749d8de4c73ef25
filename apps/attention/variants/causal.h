// Causal attention: the query at position p sees the keys j <= p.
#pragma once

#include "chain.h"

namespace attention {

/** The causal mask: key j is visible from the query's position. */
inline loom::Expr causal_mask(const AttentionFuncs &a) { return a.j <= a.query_pos(); }

inline void define_causal(AttentionFuncs &a) {
    define_chain(a, AttentionFuncs::masked(causal_mask(a), a.dot(a.h) * a.scale), a.h);
}

}  // namespace attention
