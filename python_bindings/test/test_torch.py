"""Loom kernels with PyTorch: custom ops (eager and inside torch.compile),
tensors in and out, and CUDA tensors on PyTorch's stream (with a GPU)."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
import loom  # noqa: E402
import loom.torch  # noqa: E402,F401


def rms_norm():
    x = loom.BufferParam(loom.Float(32), 2, "x")
    w = loom.BufferParam(loom.Float(32), 1, "w")
    eps = loom.Param(loom.Float(32), "eps")
    row, col = loom.Var("row"), loom.Var("col")
    r = loom.RDom(0, x.dim(1).extent(), name="r")
    ms, out = loom.Func("ms"), loom.Func("out")
    ms[row] = loom.sum(x[row, r] * x[row, r]) / loom.cast(loom.Float(32), x.dim(1).extent())
    out[row, col] = x[row, col] * loom.rsqrt(ms[row] + eps) * w[col]
    sch = loom.Schedule()
    sch[out].vectorize(col, 8).parallel(row)
    sch[ms].compute_at(out, row)
    return loom.Pipeline(out).compile(sch, output_shape=0)


def reference(x, w, eps):
    x64 = x.double()
    return (x64 * torch.rsqrt((x64 * x64).mean(1, keepdim=True) + eps) * w.double()).float()


def test_custom_op_eager_and_compiled():
    op = loom.torch.custom_op("rms_norm_test", rms_norm(), output_shape=lambda x, w, eps: x.shape)
    x, w = torch.randn(13, 37), torch.randn(37)
    torch.testing.assert_close(op(x, w, 1e-5), reference(x, w, 1e-5), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(torch.ops.loom.rms_norm_test(x, w, 1e-5), reference(x, w, 1e-5),
                               rtol=1e-5, atol=1e-5)
    xt = torch.randn(37, 13).t()        # a transposed view is copied, not refused
    torch.testing.assert_close(op(xt, w, 1e-5), reference(xt, w, 1e-5), rtol=1e-5, atol=1e-5)

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(37, 37)
            self.w = torch.nn.Parameter(torch.randn(37))

        def forward(self, t, norm):
            return torch.relu(self.lin(norm(t, self.w, 1e-5)))

    block = Block().eval()
    with torch.no_grad():
        want = block(x, lambda t, w, e: reference(t, w, e))
        eager = block(x, op)
        compiled = torch.compile(block, fullgraph=True)(x, op)   # no graph break
    torch.testing.assert_close(eager, want, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(compiled, want, rtol=1e-4, atol=1e-4)


def test_custom_op_errors():
    k = rms_norm()
    with pytest.raises(TypeError, match="compiled pipeline"):
        loom.torch.custom_op("bad", object())
    op = loom.torch.custom_op("rms_norm_errors", k)   # output_shape from compile()
    with pytest.raises(loom.RuntimeError, match="element type float64"):
        op(torch.randn(3, 4, dtype=torch.float64), torch.randn(4), 1e-5)


def test_tensor_dtypes_round_trip_through_a_kernel():
    for dtype, ltype in ((torch.float16, loom.Float(16)), (torch.bfloat16, loom.BFloat(16)),
                         (torch.int8, loom.Int(8)), (torch.uint8, loom.UInt(8)),
                         (torch.int64, loom.Int(64)), (torch.bool, loom.Bool())):
        a = loom.BufferParam(ltype, 1, "a")
        x = loom.Var("x")
        f = loom.Func("copy")
        f[x] = a[x]
        t = (torch.arange(11) % 2 == 0) if dtype == torch.bool else torch.arange(11).to(dtype)
        out = loom.Pipeline(f).compile(output_shape=0)(t)
        assert out.dtype == dtype and torch.equal(out, t), dtype


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_tensors_run_on_torch_stream():
    a = loom.BufferParam(loom.Float(32), 1, "a")
    x, xo, xi = loom.Var("x"), loom.Var("xo"), loom.Var("xi")
    f = loom.Func("f")
    f[x] = a[x] * 3.0
    sch = loom.Schedule()
    sch[f].gpu_tile(x, xo, xi, 128)
    k = loom.Pipeline(f).compile(sch, "host-cuda", output_shape=0)
    t = torch.randn(1000, device="cuda")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        out = k(t)
    s.synchronize()
    assert out.device == t.device
    torch.testing.assert_close(out, t * 3)
    cpu = torch.randn(77)          # host tensors: copied to the GPU and back
    torch.testing.assert_close(k(cpu), cpu * 3)
