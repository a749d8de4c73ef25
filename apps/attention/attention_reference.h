// The plain C++ reference of attention.h, apart from it so that code linking
// only the generated library (apps/tests/apps_aot_test.cpp) can check
// against it without Loom's headers or libloom.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

namespace attention {

/** out = softmax(q k^T * scale) v per (batch, head), in double. q is
 * [batch, heads, seq_q, head_dim], k and v [batch, heads, seq_k, head_dim],
 * out [batch, heads, seq_q, head_dim], all dense with the last index
 * innermost; `batch_heads` is batch * heads. */
inline void reference(const float *q, const float *k, const float *v, float scale, float *out,
                      int batch_heads, int seq_q, int seq_k, int head_dim) {
    const size_t D = static_cast<size_t>(head_dim);
    std::vector<double> p(static_cast<size_t>(seq_k));
    for (int bh = 0; bh < batch_heads; bh++) {
        const float *qb = q + static_cast<size_t>(bh) * seq_q * D;
        const float *kb = k + static_cast<size_t>(bh) * seq_k * D;
        const float *vb = v + static_cast<size_t>(bh) * seq_k * D;
        float *ob = out + static_cast<size_t>(bh) * seq_q * D;
        for (int i = 0; i < seq_q; i++) {
            double m = -std::numeric_limits<double>::infinity(), l = 0;
            for (int j = 0; j < seq_k; j++) {
                double acc = 0;
                for (size_t e = 0; e < D; e++) acc += double(qb[i * D + e]) * kb[j * D + e];
                p[j] = acc * scale;
                m = std::max(m, p[j]);
            }
            for (int j = 0; j < seq_k; j++) l += (p[j] = std::exp(p[j] - m));
            for (size_t d = 0; d < D; d++) {
                double acc = 0;
                for (int j = 0; j < seq_k; j++) acc += p[j] * vb[j * D + d];
                ob[i * D + d] = static_cast<float>(acc / l);
            }
        }
    }
}

}  // namespace attention
