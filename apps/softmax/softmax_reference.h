// The plain C++ reference of softmax.h, apart from it so that code linking
// only the generated library (apps/tests/apps_aot_test.cpp) can check
// against it without Loom's headers or libloom.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

namespace softmax {

/** The plain C++ reference. */
inline void reference(const float *in, float *out, int rows, int cols) {
    for (int rr = 0; rr < rows; rr++) {
        const float *x = in + static_cast<size_t>(rr) * cols;
        float *y = out + static_cast<size_t>(rr) * cols;
        float m = -std::numeric_limits<float>::infinity();
        for (int cc = 0; cc < cols; cc++) m = std::max(m, x[cc]);
        double s = 0;
        for (int cc = 0; cc < cols; cc++) s += std::exp(static_cast<double>(x[cc] - m));
        for (int cc = 0; cc < cols; cc++)
            y[cc] = static_cast<float>(std::exp(static_cast<double>(x[cc] - m)) / s);
    }
}

}  // namespace softmax
