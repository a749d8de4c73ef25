// Grouped-query (causal) attention: Hq query heads share Hkv key/value
// heads, G = Hq / Hkv query heads per key/value head; query head h reads
// key/value head h / G.
#pragma once

#include "causal.h"
#include "chain.h"

namespace attention {

/** The key/value head that query head h reads. */
inline loom::Expr grouped_key_head(const AttentionFuncs &a) {
    using namespace loom;
    // The max changes nothing for Hq = G * Hkv; it tells bounds inference
    // that G is positive, so that k and v are read over [0, (Hq - 1) / G]
    // (for a divisor of unknown sign it can only say [-(Hq - 1), Hq - 1]).
    Expr group = max(a.q.dim(1).extent() / a.k.dim(1).extent(), 1);
    return a.h / group;
}

inline void define_grouped_query(AttentionFuncs &a) {
    const loom::Expr hk = grouped_key_head(a);
    define_chain(a, AttentionFuncs::masked(causal_mask(a), a.dot(hk) * a.scale), hk);
}

}  // namespace attention
