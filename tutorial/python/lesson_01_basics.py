"""Lesson 1: the basics.

A Loom program has two parts. The *algorithm* says what is computed, as
Funcs defined over integer Vars. The *schedule* says how: loop order,
tiling, vector and parallel loops, where intermediate results live. This
lesson only writes an algorithm and runs it with the default schedule.

Run it with the package on the path:
    PYTHONPATH=build/python_bindings python3 tutorial/python/lesson_01_basics.py
"""
import sys

import numpy as np

import loom


def main():
    rng = np.random.default_rng()

    # A Var is a dimension of a Func's domain: an abstract integer index.
    y, x = loom.Var("y"), loom.Var("x")

    # A Func maps coordinates to values. This one defines, for every (y, x),
    # the value y * 10 + x. Nothing is computed yet: this only records the
    # definition. Python writes f(y, x) = ... of C++ as f[y, x] = ...
    # Index order is NumPy's: the LAST Var is the innermost one, contiguous
    # in memory and the innermost loop by default.
    gradient = loom.Func("gradient")
    gradient[y, x] = y * 10 + x

    # realize() compiles the Func for this machine (through LLVM) and
    # evaluates it over [0, 3) x [0, 4), returning a loom.Buffer. np.asarray
    # views the Buffer's memory as a NumPy array, without a copy.
    result = np.asarray(gradient.realize([3, 4]))
    want = np.arange(3)[:, None] * 10 + np.arange(4)[None, :]
    if result.dtype != np.int32 or not np.array_equal(result, want):
        print(f"gradient is\n{result}\nexpected\n{want}")
        return 1

    # The Func is defined everywhere, not just over [0, 3) x [0, 4): the
    # output's size is chosen when it is computed. Any size will do.
    rows, cols = int(rng.integers(5, 40)), int(rng.integers(5, 40))
    big = np.asarray(gradient.realize([rows, cols]))
    if not np.array_equal(big, np.arange(rows)[:, None] * 10 + np.arange(cols)[None, :]):
        print(f"gradient over {rows} x {cols} is wrong")
        return 1

    # Exprs carry types. Integer literals are int32, float literals float32
    # (when mixed with float32 values). A Python number takes the type of
    # the Expr it meets, as a C++ literal does: x * 2.0 with the int x is
    # the int x * 2. So cast the Var first, then mix in floats. Integer
    # division rounds toward negative infinity, like Python's //.
    halves = loom.Func("halves")
    halves[x] = loom.cast(loom.Float(32), x) / 2.0 + (x - 5) / 2  # (x - 5) / 2 is floor division
    h = np.asarray(halves.realize([4]))
    # x = 0: 0/2 + floor(-5/2) = 0 + (-3) = -3.
    if h.dtype != np.float32 or h[0] != -3.0:
        print(f"halves(0) = {h[0]}, expected -3")
        return 1
    n = np.arange(4)
    if not np.array_equal(h, n / 2.0 + (n - 5) // 2):
        print(f"halves is {h}, expected {n / 2.0 + (n - 5) // 2}")
        return 1

    # Inputs are BufferParams: a buffer of a fixed element type and rank,
    # whose size is known only when the pipeline runs. Pipeline.compile()
    # makes a kernel, called with NumPy arrays (or PyTorch tensors): the
    # inputs, then optionally the outputs. Given only the inputs it
    # allocates the output; output_shape=0 says "the shape of input 0".
    a = loom.BufferParam(loom.Float(32), 2, "a")
    brighter = loom.Func("brighter")
    brighter[y, x] = a[y, x] * 1.5 + loom.cast(loom.Float(32), y - x)
    kernel = loom.Pipeline(brighter).compile(output_shape=0)
    image = rng.standard_normal((17, 23)).astype(np.float32)  # odd sizes, on purpose
    out = kernel(image)
    # Check against the same formula in float64 NumPy.
    ref = image.astype(np.float64) * 1.5 + (np.arange(17)[:, None] - np.arange(23)[None, :])
    if out.shape != image.shape or not np.allclose(out, ref, rtol=1e-6, atol=1e-6):
        print(f"brighter differs from NumPy by {np.abs(out - ref).max()}")
        return 1

    # Passing the output writes into it instead.
    written = np.empty_like(image)
    kernel(image, written)
    if not np.array_equal(written, out):
        print("writing into a given output gave a different result")
        return 1

    print("Lesson 1 passed.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
