// Causal attention: the query at position p sees the keys j <= p.
#pragma once

#include "chain.h"

namespace attention {

inline void define_causal(AttentionFuncs &a) {
    define_chain(a, AttentionFuncs::masked(a.j <= a.query_pos(), a.dot(a.h) * a.scale), a.h);
}

}  // namespace attention
