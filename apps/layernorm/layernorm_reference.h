// The plain C++ reference of layernorm.h, apart from it so that code linking
// only the generated library (apps/tests/apps_aot_test.cpp) can check
// against it without Loom's headers or libloom.
#pragma once

#include <cmath>
#include <cstddef>

namespace layernorm {

/** The plain C++ reference (double accumulation). */
inline void reference(const float *in, const float *gamma, const float *beta, float eps, float *out,
                      int rows, int cols) {
    for (int rr = 0; rr < rows; rr++) {
        const float *x = in + static_cast<size_t>(rr) * cols;
        double s = 0, sq = 0;
        for (int cc = 0; cc < cols; cc++) s += x[cc];
        double m = s / cols;
        for (int cc = 0; cc < cols; cc++) sq += (x[cc] - m) * (x[cc] - m);
        double inv = 1.0 / std::sqrt(sq / cols + eps);
        for (int cc = 0; cc < cols; cc++)
            out[static_cast<size_t>(rr) * cols + cc] =
                static_cast<float>((x[cc] - m) * inv * gamma[cc] + beta[cc]);
    }
}

}  // namespace layernorm
