"""Lesson 14: from a plain matrix product to a tensor-core tile program.

The product is written as in lesson 3, a sum over k. On a GPU it runs fast
as one block per tile of the output, whose warps multiply 16 x 8 x 16
pieces on tensor cores (mma.sync), the operands staged through shared
memory by asynchronous copies (cp.async) and read into the instruction's
registers with ldmatrix. Two directives ask for it:

  tile_program(i, j, io, jo, rows, cols, warps=..., k_tile=..., stages=...)
      the Func becomes a block-level tile program, one block per tile; the
      Funcs computed at jo (here the accumulator) join it
  tensorize("mma.m16n8k16")
      the accumulator's update runs on that instruction; the compiler checks
      that it computes what the instruction computes

Nothing here needs a GPU: the tile program is printed, the CUDA generated,
and the same schedule runs on the CPU, where the program becomes loops.
"""
import sys

import numpy as np

import loom


def main():
    rng = np.random.default_rng()
    A, B = loom.BufferParam(loom.Float(16), 2, "A"), loom.BufferParam(loom.Float(16), 2, "B")
    bias = loom.BufferParam(loom.Float(32), 1, "bias")
    i, j, io, jo = (loom.Var(n) for n in ("i", "j", "io", "jo"))
    k = loom.RDom(0, A.dim(1).extent(), name="k")
    acc, C = loom.Func("acc"), loom.Func("C")
    f32 = loom.Float(32)
    acc[i, j] = 0.0
    acc[i, j] += loom.cast(f32, A[i, k]) * loom.cast(f32, B[k, j])
    # Whatever follows the sum runs on the accumulator's registers before
    # the store: here a bias and a ReLU.
    C[i, j] = loom.max(acc[i, j] + bias[j], 0.0)

    sch = loom.Schedule()
    sch[C].tile_program(i, j, io, jo, 64, 64, warps=(2, 2), k_tile=32, stages=3)
    sch[acc].compute_at(C, jo).update().tensorize("mma.m16n8k16")

    # The tile program in the lowered statement: every value with its type
    # and layout, the operands in swizzled shared memory (3 slots), the dot
    # on mma fragments, the epilogue's map where the accumulator is.
    stmt = loom.Pipeline(C).compile_to_lowered_stmt(sch, "host-cuda-sm_80")
    start = stmt.find("    tile_program")
    if start < 0:
        print("no tile program in the lowered statement")
        return 1
    print(stmt[start:stmt.find("\n  }", start)])
    for what in ("dot.mma.m16n8k16", "async_copy", "#mma_accumulator", "#swizzled"):
        if what not in stmt:
            print(f"expected {what} in the tile program")
            return 1

    # The CUDA: the instructions as inline PTX.
    cuda = loom.Pipeline(C).compile_to_cuda(sch, "host-cuda-sm_80")
    for what in ("mma.sync.aligned.m16n8k16", "ldmatrix.sync.aligned", "cp.async"):
        if what not in cuda:
            print(f"expected {what} in the CUDA")
            return 1
        print("the CUDA issues", what)

    # tensorize checks what the update computes: float32 operands are not
    # what mma.m16n8k16 multiplies.
    A32 = loom.BufferParam(f32, 2, "A32")
    acc32, C32 = loom.Func("acc32"), loom.Func("C32")
    acc32[i, j] = 0.0
    acc32[i, j] += A32[i, k] * A32[k, j]
    C32[i, j] = acc32[i, j]
    s32 = loom.Schedule()
    s32[C32].tile_program(i, j, io, jo, 64, 64)
    s32[acc32].compute_at(C32, jo).update().tensorize("mma.m16n8k16")
    try:
        loom.Pipeline(C32).compile_to_lowered_stmt(s32, "host-cuda-sm_80")
        print("expected tensorize to refuse float32 operands")
        return 1
    except loom.CompileError as e:
        print("refused:", str(e).splitlines()[0][:120], "...")

    # The same schedule on the CPU: sizes need not be multiples of the tiles.
    a = rng.standard_normal((100, 70)).astype(np.float16)
    b = rng.standard_normal((70, 90)).astype(np.float16)
    bv = rng.standard_normal(90).astype(np.float32)
    want = np.maximum(a.astype(np.float64) @ b.astype(np.float64) + bv, 0)
    got = loom.Pipeline(C).compile(sch, output_shape=(100, 90))(a, b, bv)
    if not np.allclose(got, want, rtol=1e-4, atol=1e-4):
        print("the CPU's product differs from float64")
        return 1

    # A softmax along each row of the product, in the same program: the
    # rows' maxima and sums are Funcs of i alone, reduced over the columns.
    # In the program they are 1-D tiles reduced where the accumulator's
    # registers hold the row (quads of lanes by shuffles), broadcast back.
    col = loom.RDom(0, 90, name="col")
    rmax, e, rsum, P = (loom.Func(n) for n in ("rmax", "e", "rsum", "P"))
    rmax[i] = float("-inf")
    rmax[i] = loom.max(rmax[i], acc[i, col])
    e[i, j] = loom.exp(acc[i, j] - rmax[i])
    rsum[i] = 0.0
    rsum[i] += e[i, col]
    P[i, j] = e[i, j] / rsum[i]
    soft = loom.Schedule()
    soft[P].tile_program(i, j, io, jo, 32, 128, warps=(1, 2), k_tile=32)
    for f in (acc, rmax, e, rsum):
        soft[f].compute_at(P, jo)
    soft[acc].update().tensorize("mma.m16n8k16")
    stmt = loom.Pipeline(P).compile_to_lowered_stmt(soft, "host-cuda-sm_80")
    for line in stmt.splitlines():
        if "reduce." in line or "= broadcast" in line:
            print(line.strip())
    logits = a.astype(np.float64) @ b.astype(np.float64)
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    got = loom.Pipeline(P).compile(soft, output_shape=(100, 90))(a, b)
    if not np.allclose(got, probs, rtol=1e-4, atol=1e-6):
        print("the CPU's softmax differs from float64")
        return 1
    print("the row softmax equals float64's")
    print("Lesson 14 passed.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
