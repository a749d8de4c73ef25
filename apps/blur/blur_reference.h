// The plain C++ reference of blur.h, apart from it so that code linking
// only the generated library (apps/tests/apps_aot_test.cpp) can check
// against it without Loom's headers or libloom.
#pragma once

#include <cstddef>

namespace blur {

/** The plain C++ reference. */
inline void reference(const float *in, int in_cols, float *out, int rows, int cols) {
    for (int yy = 0; yy < rows; yy++) {
        for (int xx = 0; xx < cols; xx++) {
            float acc = 0;
            for (int dy = 0; dy < 3; dy++) {
                const float *row = in + static_cast<size_t>(yy + dy) * in_cols + xx;
                acc += (row[0] + row[1] + row[2]) / 3.0f;
            }
            out[static_cast<size_t>(yy) * cols + xx] = acc / 3.0f;
        }
    }
}

}  // namespace blur
