// Grouped-query (causal) attention: Hq query heads share Hkv key/value
// heads, G = Hq / Hkv query heads per key/value head; query head h reads
// key/value head h / G.
#pragma once

#include "chain.h"

namespace attention {

inline void define_grouped_query(AttentionFuncs &a) {
    using namespace loom;
    // The max changes nothing for Hq = G * Hkv; it tells bounds inference
    // that G is positive, so that k and v are read over [0, (Hq - 1) / G]
    // (for a divisor of unknown sign it can only say [-(Hq - 1), Hq - 1]).
    Expr group = max(a.q.dim(1).extent() / a.k.dim(1).extent(), 1);
    Expr hk = a.h / group;
    define_chain(a, AttentionFuncs::masked(a.j <= a.query_pos(), a.dot(hk) * a.scale), hk);
}

}  // namespace attention
