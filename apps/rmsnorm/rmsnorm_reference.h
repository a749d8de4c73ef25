// The plain C++ reference of rmsnorm.h, apart from it so that code linking
// only a generated library can check against it without Loom's headers.
#pragma once

#include <cmath>
#include <cstddef>

namespace rmsnorm {

inline void reference(const float *in, const float *weight, float eps, float *out, int rows,
                      int cols) {
    for (int rr = 0; rr < rows; rr++) {
        const float *x = in + static_cast<size_t>(rr) * cols;
        float *y = out + static_cast<size_t>(rr) * cols;
        double s = 0;
        for (int cc = 0; cc < cols; cc++) s += static_cast<double>(x[cc]) * x[cc];
        const double inv = 1.0 / std::sqrt(s / cols + eps);
        for (int cc = 0; cc < cols; cc++) y[cc] = static_cast<float>(x[cc] * inv * weight[cc]);
    }
}

}  // namespace rmsnorm
