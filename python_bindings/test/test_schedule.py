"""Every CPU scheduling directive from Python changes how, never what: each
schedule's result equals the reference interpreter's."""
import numpy as np
import pytest

import loom


def blur():
    a = loom.BufferParam(loom.Float(32), 2, "a")
    y, x = loom.Var("y"), loom.Var("x")
    bx, by = loom.Func("bx"), loom.Func("by")
    bx[y, x] = a[y, x] + a[y, x + 1] * 2.0 + a[y, x + 2]
    by[y, x] = bx[y, x] - bx[y + 1, x] * 0.5 + bx[y + 2, x]
    return a, bx, by, y, x


V = {n: loom.Var(n) for n in ("yo", "yi", "xo", "xi", "t", "c")}


SCHEDULES = {
    "split_reorder": lambda s, bx, by, y, x: s[by].split(x, V["xo"], V["xi"], 8)
        .reorder(V["xi"], y, V["xo"]),
    "tile_vectorize_parallel": lambda s, bx, by, y, x: s[by]
        .tile(y, x, V["yo"], V["xo"], V["yi"], V["xi"], 4, 16).vectorize(V["xi"], 8)
        .parallel(V["yo"]),
    "fuse_parallel": lambda s, bx, by, y, x: s[by].fuse(y, x, V["t"]).parallel(V["t"], 64),
    "unroll_rename_serial": lambda s, bx, by, y, x: s[by].split(x, V["xo"], V["xi"], 4)
        .unroll(V["xi"]).rename(V["xo"], V["c"]).serial(y),
    "compute_root": lambda s, bx, by, y, x: s[bx].compute_root().vectorize(x, 4),
    "compute_at_store_root": lambda s, bx, by, y, x: (s[by].split(y, V["yo"], V["yi"], 4),
                                                      s[bx].compute_at(by, V["yi"]).store_root()),
    "store_at": lambda s, bx, by, y, x: (s[by].split(y, V["yo"], V["yi"], 4),
                                         s[bx].compute_at(by, V["yi"]).store_at(by, V["yo"])),
    "heap_and_shift_inwards": lambda s, bx, by, y, x: (
        s[bx].compute_root().store_in(loom.MemoryType.Heap),
        s[by].vectorize(x, 8, loom.TailStrategy.ShiftInwards)),
    "inline_round_up": lambda s, bx, by, y, x: (
        s[bx].compute_inline(), s[by].split(x, V["xo"], V["xi"], 5, tail=loom.TailStrategy.GuardWithIf)),
}


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_schedule_matches_interpreter(rng, name):
    a, bx, by, y, x = blur()
    v = rng.standard_normal((23, 41)).astype(np.float32)
    a.set(loom.Buffer(v))
    ref = np.asarray(loom.interpret(by, [21, 39]))
    s = loom.Schedule()
    SCHEDULES[name](s, bx, by, y, x)
    got = loom.Pipeline(by).compile(s)(v, np.empty((21, 39), np.float32)) or None
    out = np.empty((21, 39), np.float32)
    loom.Pipeline(by).compile(s)(v, out)
    np.testing.assert_allclose(out, ref, rtol=1e-6, atol=1e-6)
    assert got is None
    assert "by" in s[by].dump()


def test_bound_and_update_stages(rng):
    a = loom.BufferParam(loom.Float(32), 2, "a")
    y, c = loom.Var("y"), loom.Var("c")
    r = loom.RDom(0, a.dim(1).extent(), name="r")
    f = loom.Func("f")
    f[y, c] = 0.0
    f[y, c] += a[y, r] * loom.cast(loom.Float(32), c + 1)
    s = loom.Schedule()
    s[f].bound(c, 0, 3).vectorize(c)
    ro, ri = loom.RVar("ro"), loom.RVar("ri")
    s[f].update(0).split(r, ro, ri, 4).unroll(c)
    v = rng.standard_normal((9, 14)).astype(np.float32)
    out = loom.Pipeline(f).compile(s, output_shape=(9, 3))(v)
    np.testing.assert_allclose(out, v.astype(np.float64).sum(1, keepdims=True) * np.arange(1, 4),
                               rtol=1e-5, atol=1e-5)
    with pytest.raises(loom.RuntimeError, match="f"):
        loom.Pipeline(f).compile(s)(v, np.empty((9, 4), np.float32))   # not exactly [0, 3)
    g = loom.Func("g")
    g[y, c] = a[y, c] + 1.0
    s2 = loom.Schedule()
    s2[g].bound_extent(c, 8)
    s2.in_(a, [loom.Var("iy"), loom.Var("ic")]).compute_root()
    out = np.empty((9, 8), np.float32)
    loom.Pipeline(g).compile(s2)(v[:, :8].copy(), out)
    np.testing.assert_array_equal(out, v[:, :8] + 1)
    with pytest.raises(loom.CompileError):
        s3 = loom.Schedule()
        s3[f].update(0).parallel(r)   # r carries the update's dependence


def test_tile_program_on_the_cpu(rng):
    # The tensor-core schedule of a matrix product also runs on the CPU,
    # where the tile program becomes loops; its sums keep the k order, so
    # it equals the interpreter's result.
    A, B = loom.BufferParam(loom.Float(16), 2, "A"), loom.BufferParam(loom.Float(16), 2, "B")
    i, j, io, jo = (loom.Var(n) for n in ("i", "j", "io", "jo"))
    r = loom.RDom(0, A.dim(1).extent(), name="r")
    acc, C = loom.Func("acc"), loom.Func("C")
    acc[i, j] = 0.0
    acc[i, j] += loom.cast(loom.Float(32), A[i, r]) * loom.cast(loom.Float(32), B[r, j])
    C[i, j] = acc[i, j] * 2.0
    s = loom.Schedule()
    s[C].tile_program(i, j, io, jo, 16, 32, warps=(1, 2), k_tile=16, stages=2)
    s[acc].compute_at(C, jo).update().tensorize("mma.m16n8k16")
    a = rng.standard_normal((21, 50)).astype(np.float16)
    b = rng.standard_normal((50, 35)).astype(np.float16)
    A.set(loom.Buffer(a))
    B.set(loom.Buffer(b))
    ref = np.asarray(loom.interpret(C, [21, 35]))
    got = loom.Pipeline(C).compile(s, output_shape=(21, 35))(a, b)
    np.testing.assert_array_equal(got, ref)
    with pytest.raises(loom.CompileError, match="no tensor instruction"):
        s[acc].update().tensorize("wmma")


def test_tile_program_groups_rows(rng):
    # Row i multiplies matrix B[i // 3]: group_rows gives each program the
    # three rows of one group, so that B's tile is read once for them.
    A, B = loom.BufferParam(loom.Float(32), 2, "A"), loom.BufferParam(loom.Float(32), 3, "B")
    i, j, io, jo = (loom.Var(n) for n in ("i", "j", "io", "jo"))
    r = loom.RDom(0, A.dim(1).extent(), name="r")
    acc, C = loom.Func("acc"), loom.Func("C")
    acc[i, j] = 0.0
    acc[i, j] += A[i, r] * B[i // 3, r, j]
    C[i, j] = acc[i, j]
    s = loom.Schedule()
    s[C].tile_program(i, j, io, jo, 8, 16, warps=(1, 1), k_tile=8, group_rows=True)
    s[acc].compute_at(C, jo)
    a = rng.standard_normal((13, 20)).astype(np.float32)
    b = rng.standard_normal((5, 20, 9)).astype(np.float32)
    got = loom.Pipeline(C).compile(s, output_shape=(13, 9))(a, b)
    want = np.stack([a[n] @ b[n // 3] for n in range(13)])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    # A product whose other operand does not read the rows has no groups.
    acc2, C2 = loom.Func("acc2"), loom.Func("C2")
    acc2[i, j] = 0.0
    acc2[i, j] += A[i, r] * B[0, r, j]
    C2[i, j] = acc2[i, j]
    s2 = loom.Schedule()
    s2[C2].tile_program(i, j, io, jo, 8, 16, warps=(1, 1), k_tile=8, group_rows=True)
    s2[acc2].compute_at(C2, jo)
    with pytest.raises(loom.CompileError, match="nothing to group them by"):
        loom.Pipeline(C2).compile(s2, output_shape=(13, 9))
