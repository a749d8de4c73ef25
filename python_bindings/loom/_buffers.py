"""Conversions between loom.Buffer and NumPy arrays / PyTorch tensors, and
the dtypes of each side."""
from . import _loom

_NUMPY_NAMES = {"bool": "bool", "int8": "int8", "int16": "int16", "int32": "int32",
                "int64": "int64", "uint8": "uint8", "uint16": "uint16", "uint32": "uint32",
                "uint64": "uint64", "float16": "float16", "float32": "float32",
                "float64": "float64"}


def numpy_dtype(t):
    """The NumPy dtype of a loom.Type (bfloat16 through ml_dtypes)."""
    import numpy as np
    name = str(t)
    if name == "bfloat16":
        try:
            import ml_dtypes
        except ImportError as e:
            raise TypeError("NumPy has no bfloat16: install ml_dtypes (pip install ml_dtypes) "
                            "to read bfloat16 buffers as NumPy arrays") from e
        return np.dtype(ml_dtypes.bfloat16)
    if name not in _NUMPY_NAMES:
        raise TypeError(f"NumPy has no dtype for the Loom type {name}")
    return np.dtype(_NUMPY_NAMES[name])


def torch_dtype(t):
    """The PyTorch dtype of a loom.Type."""
    import torch
    name = str(t)
    unsigned = {"uint16": "uint16", "uint32": "uint32", "uint64": "uint64"}
    if name in unsigned and not hasattr(torch, unsigned[name]):
        raise TypeError(f"this PyTorch has no {name} tensors")
    return getattr(torch, name)


def _buffer_numpy(self):
    """The buffer as a NumPy array sharing its memory (host memory only)."""
    import numpy as np
    if str(self.type) == "bfloat16":
        return np.from_dlpack(self._as_ndarray(raw_bits=True)).view(numpy_dtype(self.type))
    return np.from_dlpack(self)


def _buffer_array(self, dtype=None, copy=None):
    a = _buffer_numpy(self)
    if dtype is not None:
        a = a.astype(dtype, copy=False)
    return a.copy() if copy else a


def _buffer_torch(self):
    """The buffer as a PyTorch tensor sharing its memory."""
    import torch
    return torch.from_dlpack(self)


_loom.Buffer.numpy = _buffer_numpy
_loom.Buffer.__array__ = _buffer_array
_loom.Buffer.torch = _buffer_torch


def is_torch_tensor(x):
    t = type(x)
    return t.__module__.startswith("torch") and t.__name__ in ("Tensor", "Parameter", "FakeTensor")


def as_buffer(x, role):
    """x as a loom.Buffer: a Buffer, or an array wrapped without a copy."""
    if isinstance(x, _loom.Buffer):
        return x
    if is_torch_tensor(x) and x.requires_grad:
        x = x.detach()
    try:
        return _loom.Buffer(x)
    except TypeError as e:
        raise TypeError(f"{role}: {e}") from None
