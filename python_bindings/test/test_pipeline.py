"""Compiling and calling pipelines: arrays and tensors in, outputs written
or allocated, scalars, schedules, the compile log, lowered code, and argument
errors that leave the outputs untouched."""
import numpy as np
import pytest
import loom

try:
    import torch
except ImportError:  # the tests that need it are skipped
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="needs PyTorch")


def scaled_rows():
    a = loom.BufferParam(loom.Float(32), 2, "a")
    scale = loom.Param(loom.Float(32), "scale")
    y, x = loom.Var("y"), loom.Var("x")
    f = loom.Func("f")
    f[y, x] = a[y, x] * scale + loom.cast(loom.Float(32), x)
    return f, a, scale, y, x


def test_call_forms(rng):
    f, a, scale, y, x = scaled_rows()
    sch = loom.Schedule()
    sch[f].vectorize(x, 8).parallel(y)
    k = loom.Pipeline(f).compile(sch)
    names = [(arg.name, arg.kind) for arg in k.arguments()]
    assert names == [("a", loom.Argument.Kind.InputBuffer), ("scale", loom.Argument.Kind.InputScalar),
                     ("f", loom.Argument.Kind.OutputBuffer)]
    v = rng.standard_normal((7, 19)).astype(np.float32)
    want = v * np.float32(1.5) + np.arange(19, dtype=np.float32)
    out = np.empty_like(v)
    assert k(v, 1.5, out) is None
    np.testing.assert_allclose(out, want, rtol=1e-6)
    np.testing.assert_allclose(k(v, 1.5, output_shape=(7, 19)), want, rtol=1e-6)
    np.testing.assert_allclose(k(v, 1.5, output_shape=0), want, rtol=1e-6)
    np.testing.assert_allclose(k(v, scale=1.5, output_shape=lambda a, s: a.shape), want, rtol=1e-6)
    if torch is not None:
        t = k(torch.from_numpy(v), 1.5, output_shape=0)
        assert isinstance(t, torch.Tensor) and t.dtype == torch.float32
        np.testing.assert_allclose(t.numpy(), want, rtol=1e-6)
    b = k(loom.Buffer(v), 1.5, output_shape=0)
    assert isinstance(b, loom.Buffer)
    np.testing.assert_allclose(np.asarray(b), want, rtol=1e-6)
    # Bound inputs, as C++'s realize.
    a.set(loom.Buffer(v))
    scale.set(1.5)
    assert scale.get() == 1.5
    np.testing.assert_allclose(np.asarray(loom.Pipeline(f).realize([7, 19], sch)), want, rtol=1e-6)


def test_argument_errors_write_nothing(rng):
    f, *_ = scaled_rows()
    k = loom.Pipeline(f).compile(output_shape=0)
    v = rng.standard_normal((4, 5)).astype(np.float32)
    out = np.full((4, 5), 7.0, np.float32)
    with pytest.raises(loom.RuntimeError, match="element type float64, but the pipeline expects float32"):
        k(v.astype(np.float64), 1.0, out)
    with pytest.raises(loom.RuntimeError, match="dimensions"):
        k(v[0], 1.0, out)
    with pytest.raises(loom.RuntimeError, match="f"):
        k(v, 1.0, np.zeros((4, 5), np.float16))
    with pytest.raises(TypeError, match="takes an int|takes a number"):
        k(v, "1.0", out)
    with pytest.raises(TypeError, match="inputs"):
        k(v)
    with pytest.raises(TypeError, match="no argument 'bogus'"):
        k(v, 1.0, bogus=out)
    with pytest.raises(TypeError, match="does not know its shape"):
        loom.Pipeline(f).compile()(v, 1.0)
    np.testing.assert_array_equal(out, 7.0)
    # An input too small for the region the output needs.
    a = loom.BufferParam(loom.Float(32), 1, "a")
    x = loom.Var("x")
    g = loom.Func("g")
    g[x] = a[x] + a[x + 2]
    kg = loom.Pipeline(g).compile()
    small = np.zeros(5, np.float32)
    out = np.full(5, 3.0, np.float32)
    with pytest.raises(loom.RuntimeError, match="a"):
        kg(small, out)
    np.testing.assert_array_equal(out, 3.0)


def test_cpu_kernel_refuses_device_tensors():
    f, *_ = scaled_rows()
    k = loom.Pipeline(f).compile(output_shape=0)
    if torch is None or not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    with pytest.raises(ValueError, match="compiled for the CPU"):
        k(torch.zeros(3, 4, device="cuda"), 1.0)


def softmax_chain():
    a = loom.BufferParam(loom.Float(32), 2, "a")
    y, x = loom.Var("y"), loom.Var("x")
    r = loom.RDom(0, a.dim(1).extent(), name="r")
    m, l, out = loom.Func("m"), loom.Func("l"), loom.Func("out")
    m[y] = loom.maximum(a[y, r])
    l[y] = loom.sum(loom.exp(a[y, r] - m[y]))
    out[y, x] = loom.exp(a[y, x] - m[y]) / l[y]
    return a, m, l, out, y, x, r


def test_rolling_update_and_split_k(rng):
    a, m, l, out, y, x, r = softmax_chain()
    v = (rng.standard_normal((5, 301)) * 4).astype(np.float32)
    e = np.exp(v.astype(np.float64) - v.max(1, keepdims=True))
    want = e / e.sum(1, keepdims=True)

    sch = loom.Schedule()
    ro, ri = loom.RVar("ro"), loom.RVar("ri")
    sch.rolling_update(l, r).split(r, ro, ri, 16)
    sch[l].compute_root()
    k = loom.Pipeline(out).compile(sch, output_shape=0)
    np.testing.assert_allclose(k(v), want, rtol=1e-5, atol=1e-7)
    log = "\n".join(k.compile_log())
    assert "repair" in log and "exp" in log

    sch = loom.Schedule()
    chunk = loom.Var("chunk")
    sch.split_k(l, r, 4, chunk).compute_root().parallel(chunk)
    sch[l].compute_root()
    k = loom.Pipeline(out).compile(sch, output_shape=0)
    np.testing.assert_allclose(k(v), want, rtol=1e-5, atol=1e-7)
    assert any("split_k" in line for line in k.compile_log())


def test_compute_at_and_lowered_stmt(rng):
    a = loom.BufferParam(loom.Float(32), 2, "in")
    y, x = loom.Var("y"), loom.Var("x")
    bx, by = loom.Func("blur_x"), loom.Func("blur_y")
    bx[y, x] = (a[y, x] + a[y, x + 1] + a[y, x + 2]) / 3.0
    by[y, x] = (bx[y, x] + bx[y + 1, x] + bx[y + 2, x]) / 3.0
    sch = loom.Schedule()
    yo, xo, yi, xi = (loom.Var(n) for n in ("yo", "xo", "yi", "xi"))
    sch[by].tile(y, x, yo, xo, yi, xi, 8, 16).parallel(yo).vectorize(xi, 8)
    sch[bx].compute_at(by, xo).vectorize(x, 8)
    p = loom.Pipeline(by)
    stmt = p.compile_to_lowered_stmt(sch)
    assert "blur_x" in stmt and "parallel" in stmt
    v = rng.standard_normal((23, 37)).astype(np.float32)
    got = p.compile(sch)(v, np.empty((21, 35), np.float32)) or None
    out = np.empty((21, 35), np.float32)
    p.compile(sch)(v, out)
    d = v.astype(np.float64)
    bxr = (d[:, :-2] + d[:, 1:-1] + d[:, 2:]) / 3
    want = (bxr[:-2] + bxr[1:-1] + bxr[2:]) / 3
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)
    assert got is None


def test_gpu_code_and_targets():
    a = loom.BufferParam(loom.Float(32), 1, "a")
    x, xo, xi = loom.Var("x"), loom.Var("xo"), loom.Var("xi")
    f = loom.Func("f")
    f[x] = a[x] * 2.0
    sch = loom.Schedule()
    sch[f].gpu_tile(x, xo, xi, 128)
    cuda = loom.Pipeline(f).compile_to_cuda(sch, "host-cuda-sm_90")
    assert "__global__" in cuda
    t = loom.Target("host-cuda-sm_90a")
    assert t.has_feature(loom.Target.Feature.CUDA) and t.cuda_arch() == "sm_90a"
    assert loom.Target("x86-64-linux-avx2").vector_bytes() == 32
    with pytest.raises(loom.CompileError):
        loom.Target("not-a-target")
