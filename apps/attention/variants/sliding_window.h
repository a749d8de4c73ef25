// Sliding-window (causal) attention: the query at position p sees the keys
// (p - window, p]. A window of 0 masks every key (the row is then 0).
#pragma once

#include "chain.h"

namespace attention {

inline void define_sliding_window(AttentionFuncs &a) {
    loom::Expr p = a.query_pos();
    define_chain(a, AttentionFuncs::masked(a.j <= p && a.j > p - a.window, a.dot(a.h) * a.scale),
                 a.h);
}

}  // namespace attention
