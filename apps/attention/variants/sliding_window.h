// Sliding-window (causal) attention: the query at position p sees the keys
// (p - window, p]. A window of 0 masks every key (the row is then 0).
#pragma once

#include "causal.h"
#include "chain.h"

namespace attention {

/** The window's mask: causal, and no further back than `window` keys. */
inline loom::Expr window_mask(const AttentionFuncs &a) {
    return causal_mask(a) && a.j > a.query_pos() - a.window;
}

inline void define_sliding_window(AttentionFuncs &a) {
    define_chain(a, AttentionFuncs::masked(window_mask(a), a.dot(a.h) * a.scale), a.h);
}

}  // namespace attention
