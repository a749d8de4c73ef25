// The plain C++ reference of gemm.h, apart from it so that code linking
// only the generated library (apps/tests/apps_aot_test.cpp) can check
// against it without Loom's headers or libloom.
#pragma once

#include <cstddef>

namespace gemm {

/** The plain C++ reference (i-k-j order, so it is not too slow). */
inline void reference(const float *a, const float *b, float *c, int m, int n, int kk) {
    for (int ii = 0; ii < m; ii++) {
        float *row = c + static_cast<size_t>(ii) * n;
        for (int jj = 0; jj < n; jj++) row[jj] = 0;
        for (int r = 0; r < kk; r++) {
            float av = a[static_cast<size_t>(ii) * kk + r];
            const float *brow = b + static_cast<size_t>(r) * n;
            for (int jj = 0; jj < n; jj++) row[jj] += av * brow[jj];
        }
    }
}

}  // namespace gemm
