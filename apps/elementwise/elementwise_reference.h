// The plain C++ reference of elementwise.h, apart from it so that code
// linking only a generated library can check against it without Loom's headers.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace elementwise {

inline void reference(const float *in, float *out, size_t count) {
    for (size_t i = 0; i < count; i++) {
        const double x = in[i];
        const double y = x / (1.0 + std::exp(-x)) * 1.5 + 0.25;
        out[i] = static_cast<float>(std::min(3.0, std::max(-3.0, y)));
    }
}

}  // namespace elementwise
