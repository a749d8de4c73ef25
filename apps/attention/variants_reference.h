// The attention variants of variants.h as a float64 plain C++ reference,
// apart from it (no Loom headers) so that code linking only a generated
// library can check against it. The enum of the variants and their
// constants live here, shared by both.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

namespace attention {

/** The attention variants. All but Global are causal. The last two
 * compose the plain ones (Neptune's soft-capping and windowed operators). */
enum class Variant {
    Global,            // no mask
    Causal,            // key j visible from query position p when j <= p
    ALiBi,             // causal; score -= slope_h * (p - j), slope_h = 2^(-8 (h + 1) / H)
    SoftCap,           // causal; score = soft_cap * tanh(score / soft_cap)
    SlidingWindow,     // causal and j > p - window
    GroupedQuery,      // causal; query head h reads key/value head h / (Hq / Hkv)
    SoftCapGQA,        // SoftCap and GroupedQuery
    WindowSoftCapGQA,  // SlidingWindow, SoftCap and GroupedQuery
};

/** The plain variants. */
inline constexpr Variant all_variants[] = {Variant::Global,        Variant::Causal,
                                           Variant::ALiBi,         Variant::SoftCap,
                                           Variant::SlidingWindow, Variant::GroupedQuery};
/** The variants composed of plain ones. */
inline constexpr Variant composite_variants[] = {Variant::SoftCapGQA, Variant::WindowSoftCapGQA};

/** What a variant is made of: its mask, its changes to the scores, and
 * whether query heads share key/value heads. */
struct VariantParts {
    bool causal = false, window = false, alibi = false, soft_cap = false, grouped = false;
};

inline constexpr VariantParts parts_of(Variant v) {
    VariantParts p;
    p.causal = v != Variant::Global;
    p.window = v == Variant::SlidingWindow || v == Variant::WindowSoftCapGQA;
    p.alibi = v == Variant::ALiBi;
    p.soft_cap =
        v == Variant::SoftCap || v == Variant::SoftCapGQA || v == Variant::WindowSoftCapGQA;
    p.grouped =
        v == Variant::GroupedQuery || v == Variant::SoftCapGQA || v == Variant::WindowSoftCapGQA;
    return p;
}

/** A short name, usable in test names: "global", "causal", "alibi",
 * "softcap", "sliding_window", "gqa". */
inline const char *variant_name(Variant v) {
    switch (v) {
    case Variant::Global: return "global";
    case Variant::Causal: return "causal";
    case Variant::ALiBi: return "alibi";
    case Variant::SoftCap: return "softcap";
    case Variant::SlidingWindow: return "sliding_window";
    case Variant::GroupedQuery: return "gqa";
    case Variant::SoftCapGQA: return "softcap_gqa";
    case Variant::WindowSoftCapGQA: return "window_softcap_gqa";
    }
    return "unknown";
}

/** The cap of Variant::SoftCap (Gemma 2's attention logit cap). */
inline constexpr float soft_cap = 50.0f;

/** The sizes of one attention call. q and out are [batch, q_heads, seq_q,
 * head_dim], k and v [batch, kv_heads, seq_k, head_dim]; kv_heads equals
 * q_heads except for Variant::GroupedQuery, where it divides it. */
struct VariantShape {
    int batch = 1, q_heads = 1, kv_heads = 1, seq_q = 1, seq_k = 1, head_dim = 1;
};

/** The value of `variant` in double, from float inputs (fp16 and bf16
 * inputs converted to float first), all dense with the last index
 * innermost. `window` is used by Variant::SlidingWindow only. The query at
 * index i has position i + seq_k - seq_q. A query with every key masked
 * gives 0 (the definition of variants.h). */
inline void variant_reference(Variant variant, const float *q, const float *k, const float *v,
                              float scale, int window, double *out, const VariantShape &shape) {
    const size_t D = static_cast<size_t>(shape.head_dim);
    const int Hq = shape.q_heads, Hkv = shape.kv_heads;
    const int group = Hkv > 0 ? Hq / Hkv : 1;
    const double inf = std::numeric_limits<double>::infinity();
    std::vector<double> sc(static_cast<size_t>(shape.seq_k));
    for (int b = 0; b < shape.batch; b++) {
        for (int h = 0; h < Hq; h++) {
            const int hk = h / group;
            const size_t q_base = (static_cast<size_t>(b) * Hq + h) * shape.seq_q * D;
            const size_t kv_base = (static_cast<size_t>(b) * Hkv + hk) * shape.seq_k * D;
            const double slope = std::pow(2.0, -8.0 * (h + 1) / Hq);
            for (int i = 0; i < shape.seq_q; i++) {
                const long pos = static_cast<long>(i) + shape.seq_k - shape.seq_q;
                double mx = -inf;
                for (int j = 0; j < shape.seq_k; j++) {
                    double acc = 0;
                    for (size_t e = 0; e < D; e++) {
                        acc += double(q[q_base + i * D + e]) * double(k[kv_base + j * D + e]);
                    }
                    double x = acc * scale;
                    const VariantParts parts = parts_of(variant);
                    if (parts.alibi) x -= slope * double(pos - j);
                    if (parts.soft_cap) x = soft_cap * std::tanh(x / soft_cap);
                    bool allowed = !parts.causal || j <= pos;
                    if (parts.window) allowed = allowed && j > pos - window;
                    sc[j] = allowed ? x : -inf;
                    mx = std::max(mx, sc[j]);
                }
                double *ob = out + q_base + i * D;
                if (mx == -inf) {  // fully masked: defined as 0
                    std::fill(ob, ob + D, 0.0);
                    continue;
                }
                double l = 0;
                for (int j = 0; j < shape.seq_k; j++) l += (sc[j] = std::exp(sc[j] - mx));
                for (size_t dd = 0; dd < D; dd++) {
                    double acc = 0;
                    for (int j = 0; j < shape.seq_k; j++) acc += sc[j] * v[kv_base + j * D + dd];
                    ob[dd] = acc / l;
                }
            }
        }
    }
}

}  // namespace attention
