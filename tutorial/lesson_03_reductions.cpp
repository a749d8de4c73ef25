// Lesson 3: reductions and update definitions.
//
// A Func may have update definitions after its pure definition. An update
// can use a reduction domain (RDom): a box of points visited in order, the
// last dimension innermost. This is how sums, histograms and scans are
// written.
#include <cmath>
#include <cstdio>

#include <loom/loom.h>

using namespace loom;

int main() {
    BufferParam a(Float(32), 2, "a"), b(Float(32), 2, "b");
    Var i("i"), j("j");

    // Matrix product: C(i, j) = sum_k a(i, k) * b(k, j). The pure definition
    // sets every point to zero; the update then visits every k in order.
    RDom k(0, a.dim(1).extent(), "k");
    Func c("c");
    c(i, j) = 0.0f;
    c(i, j) += a(i, k) * b(k, j);

    Buffer<float> A({3, 5}), B({5, 2});
    A.fill([](const std::vector<int> &p) { return static_cast<float>(p[0] + 2 * p[1]); });
    B.fill([](const std::vector<int> &p) { return static_cast<float>(p[0] - p[1]); });
    a.set(A);
    b.set(B);
    Buffer<float> C(c.realize({3, 2}));
    for (int y = 0; y < 3; y++) {
        for (int x = 0; x < 2; x++) {
            float expected = 0;
            for (int z = 0; z < 5; z++) expected += A(y, z) * B(z, x);
            if (std::abs(C(y, x) - expected) > 1e-4f) {
                std::printf("c(%d, %d) = %f, expected %f\n", y, x, C(y, x), expected);
                return 1;
            }
        }
    }

    // The same thing with an inline reduction: sum() makes the anonymous
    // Func with its pure and update definitions for you.
    Func c2("c2");
    c2(i, j) = sum(a(i, k) * b(k, j));
    Buffer<float> C2(c2.realize({3, 2}));
    if (C2(2, 1) != C(2, 1)) {
        std::printf("sum() disagrees with the explicit update\n");
        return 1;
    }

    // An update may write at computed coordinates: a histogram. RDom::where
    // restricts the domain to the points where a condition holds. The written
    // coordinate is clamped so that Loom can tell which part of `hist` the
    // update may touch (an index loaded from a buffer has no bounds of its own).
    BufferParam values(Int(32), 1, "values");
    RDom r(0, values.dim(0).extent(), "r");
    r.where(values(r) >= 0);
    Var bin("bin");
    Func hist("hist");
    hist(bin) = 0;
    hist(clamp(values(r), 0, 3)) += 1;
    Buffer<int32_t> vals({8});
    int data[8] = {0, 1, 1, 5, -2, 2, 3, 1};
    for (int n = 0; n < 8; n++) vals(n) = data[n];
    values.set(vals);
    Buffer<int32_t> h(hist.realize({4}));
    // bins: 0 -> 1, 1 -> 3, 2 -> 1, 3 -> 2 (5 is clamped to 3; -2 is skipped)
    if (h(0) != 1 || h(1) != 3 || h(2) != 1 || h(3) != 2) {
        std::printf("histogram is wrong: %d %d %d %d\n", h(0), h(1), h(2), h(3));
        return 1;
    }

    std::printf("Lesson 3 passed.\n");
    return 0;
}
