"""loom.Buffer and arrays: no copies either way, strides kept, every type
both sides have."""
import numpy as np
import pytest
import loom

try:
    import torch
except ImportError:  # the tests that need it are skipped
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="needs PyTorch")

NUMPY_TYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
               "float16", "float32", "float64"]
TORCH_TYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
               "float16", "bfloat16",
               "float32", "float64"]


def random_array(rng, dtype, shape):
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.startswith(("int", "uint")):
        return rng.integers(0, 100, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("dtype", NUMPY_TYPES)
def test_numpy_round_trip_shares_memory(rng, dtype):
    a = random_array(rng, dtype, (5, 7))
    b = loom.Buffer(a)
    assert str(b.type) == dtype and b.shape == (5, 7) and b.strides == (7, 1)
    back = np.from_dlpack(b)
    np.testing.assert_array_equal(back, a)
    assert np.shares_memory(back, a)
    b[2, 3] = a[0, 0].item()          # written through Loom, seen by NumPy
    assert a[2, 3] == a[0, 0]


@needs_torch
@pytest.mark.parametrize("dtype", TORCH_TYPES)
def test_torch_round_trip_shares_memory(rng, dtype):
    t = torch.from_numpy(random_array(rng, "float32" if dtype == "bfloat16" else dtype, (3, 9)))
    t = t.to(getattr(torch, dtype))
    b = loom.Buffer(t)
    assert str(b.type) == dtype
    back = torch.from_dlpack(b)
    assert torch.equal(back, t)
    assert back.data_ptr() == t.data_ptr()


def test_bfloat16_with_numpy_through_ml_dtypes(rng):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    a = rng.standard_normal(11).astype(ml_dtypes.bfloat16)
    b = loom.Buffer(a)
    assert b.type == loom.BFloat(16)
    n = b.numpy()
    assert n.dtype == ml_dtypes.bfloat16 and np.shares_memory(n, a)
    np.testing.assert_array_equal(n.astype(np.float32), a.astype(np.float32))


def test_views_keep_their_strides(rng):
    a = rng.standard_normal((6, 10)).astype(np.float32)
    v = a[1:5, ::3]
    b = loom.Buffer(v)
    assert b.shape == (4, 4) and b.strides == (10, 3)
    np.testing.assert_array_equal(np.asarray(b), v)
    if torch is not None:
        t = torch.from_numpy(a).t()
        bt = loom.Buffer(t)
        assert bt.strides == (1, 10)
        assert torch.equal(torch.from_dlpack(bt), t)


def test_a_kernel_reads_strided_views(rng):
    a = loom.BufferParam(loom.Float(32), 2, "a").allow_strided_innermost()
    y, x = loom.Var("y"), loom.Var("x")
    f = loom.Func("f")
    f[y, x] = a[y, x] * 2.0
    k = loom.Pipeline(f).compile(output_shape=0)
    base = rng.standard_normal((9, 13)).astype(np.float32)
    for view in (base[::2, 1::3], base.T, base[3:, :5]):
        np.testing.assert_array_equal(k(view), view * 2)
    out = np.zeros((18, 13), np.float32)[::2]   # rows apart: a strided output
    k(base, out)
    np.testing.assert_array_equal(out, base * 2)
    with pytest.raises(loom.RuntimeError, match="contiguous"):
        k(base, np.zeros((13, 9), np.float32).T)


def test_empty_arrays_give_empty_outputs():
    """A zero-size array has no element to read, whatever strides NumPy
    gives it: the pipeline runs no iteration and returns an empty array."""
    y, x = loom.Var("y"), loom.Var("x")
    a = loom.BufferParam(loom.Float(32), 2, "a")
    f = loom.Func("f")
    f[y, x] = a[y, x] + 1.0
    k = loom.Pipeline(f).compile(output_shape=0)
    for shape in ((3, 0), (0, 5), (0, 0)):
        got = k(np.zeros(shape, np.float32))
        assert got.shape == shape and got.dtype == np.float32
    np.testing.assert_array_equal(k(np.ones((2, 3), np.float32)), np.full((2, 3), 2, np.float32))


def test_own_buffers_and_element_access():
    b = loom.Buffer(loom.Int(16), [3, 4], name="b")
    assert b.name == "b" and b.type == loom.Int(16) and b.shape == (3, 4)
    assert np.asarray(b).sum() == 0
    b[1, 2] = -7
    assert b[1, 2] == -7 and np.asarray(b)[1, 2] == -7
    c = b.cropped(1, 1, 2)
    assert c.shape == (3, 2) and c.dim_min(1) == 1 and c[1, 2] == -7
    with pytest.raises(IndexError, match="outside"):
        b[3, 0]
    with pytest.raises(ValueError, match="cannot hold 70000"):
        b[0, 0] = 70000
    with pytest.raises(TypeError, match="not .*str"):
        loom.Buffer("not an array")
    with pytest.raises(ValueError, match="no Loom counterpart"):
        loom.Buffer(np.zeros(3, np.complex64))
