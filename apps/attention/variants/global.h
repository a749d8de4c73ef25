// Global (non-causal) attention: every query sees every key.
#pragma once

#include "chain.h"

namespace attention {

inline void define_global(AttentionFuncs &a) { define_chain(a, a.dot(a.h) * a.scale, a.h); }

}  // namespace attention
