"""Lesson 3: reductions and update definitions.

A Func may have update definitions after its pure definition. An update
can use a reduction domain (RDom): a box of points visited in order, the
last dimension innermost. This is how sums, histograms and scans are
written.
"""
import sys

import numpy as np

import loom


def main():
    rng = np.random.default_rng()
    a = loom.BufferParam(loom.Float(32), 2, "a")
    b = loom.BufferParam(loom.Float(32), 2, "b")
    i, j = loom.Var("i"), loom.Var("j")

    # Matrix product: C(i, j) = sum_k a(i, k) * b(k, j). The pure definition
    # sets every point to zero; the update then visits every k in order. The
    # RDom's extent is a's second extent, known only when the kernel runs.
    k = loom.RDom(0, a.dim(1).extent(), name="k")
    c = loom.Func("c")
    c[i, j] = 0.0
    c[i, j] += a[i, k] * b[k, j]

    # The output is as tall as a and as wide as b: output_shape may be a
    # function of the inputs.
    matmul = loom.Pipeline(c).compile(output_shape=lambda a, b: (a.shape[0], b.shape[1]))
    A = rng.standard_normal((13, 29)).astype(np.float32)
    B = rng.standard_normal((29, 7)).astype(np.float32)
    C = matmul(A, B)
    want = A.astype(np.float64) @ B.astype(np.float64)
    if C.shape != want.shape or not np.allclose(C, want, rtol=1e-5, atol=1e-5):
        print(f"c differs from NumPy's float64 product by {np.abs(C - want).max()}")
        return 1

    # The same thing with an inline reduction: sum() makes the anonymous
    # Func with its pure and update definitions for you. It runs the same
    # loop in the same order, so the results agree exactly.
    c2 = loom.Func("c2")
    c2[i, j] = loom.sum(a[i, k] * b[k, j])
    C2 = np.empty_like(C)
    loom.Pipeline(c2).compile()(A, B, C2)
    if not np.array_equal(C2, C):
        print("sum() disagrees with the explicit update")
        return 1

    # An update may write at computed coordinates: a histogram. RDom.where
    # restricts the domain to the points where a condition holds. The written
    # coordinate is clamped so that Loom can tell which part of `hist` the
    # update may touch (an index loaded from a buffer has no bounds of its
    # own).
    values = loom.BufferParam(loom.Int(32), 1, "values")
    r = loom.RDom(0, values.dim(0).extent(), name="r")
    r.where(values[r] >= 0)
    bin_ = loom.Var("bin")
    hist = loom.Func("hist")
    hist[bin_] = 0
    hist[loom.clamp(values[r], 0, 3)] += 1
    histogram = loom.Pipeline(hist).compile(output_shape=(4,))

    # The C++ lesson's eight values first: bins 0 -> 1, 1 -> 3, 2 -> 1,
    # 3 -> 2 (5 is clamped to 3; -2 is skipped).
    h = histogram(np.array([0, 1, 1, 5, -2, 2, 3, 1], np.int32))
    if list(h) != [1, 3, 1, 2]:
        print(f"histogram is wrong: {list(h)}")
        return 1
    # Then many random ones, counted by NumPy.
    vals = rng.integers(-3, 7, 1001).astype(np.int32)
    h = histogram(vals)
    kept = np.clip(vals[vals >= 0], 0, 3)
    want_h = np.bincount(kept, minlength=4)
    if not np.array_equal(h, want_h):
        print(f"histogram is {list(h)}, NumPy counts {list(want_h)}")
        return 1

    # A reduction is a loop, so it need not be commutative: this update
    # reads the value its own previous iteration wrote, a running sum
    # (a scan). Point 0 is the pure definition; the RDom starts at 1.
    x = loom.Var("x")
    s = loom.RDom(1, a.dim(1).extent() - 1, name="s")
    scan = loom.Func("scan")
    scan[i, x] = a[i, x]
    scan[i, s] = scan[i, s - 1] + a[i, s]
    S = loom.Pipeline(scan).compile(output_shape=0)(A)
    want_s = np.cumsum(A.astype(np.float64), axis=1)
    if not np.allclose(S, want_s, rtol=1e-5, atol=1e-5):
        print(f"the scan differs from np.cumsum by {np.abs(S - want_s).max()}")
        return 1

    print("Lesson 3 passed.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
