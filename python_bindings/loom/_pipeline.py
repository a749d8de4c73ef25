"""Calling compiled pipelines from Python: kernel(q, k, v, out), or
out = kernel(q, k, v) with the output allocated, with NumPy arrays, PyTorch
tensors (CPU or CUDA) and loom.Buffers."""
from . import _loom
from ._buffers import as_buffer, is_torch_tensor, numpy_dtype, torch_dtype

_OUTPUT = _loom.Argument.Kind.OutputBuffer


def _compile(self, schedule=None, target=None, output_shape=None):
    """Compiles (or fetches from the cache) machine code for this pipeline,
    schedule and target ('host' by default; 'host-cuda' for a GPU).

    output_shape says how to allocate the outputs when the kernel is called
    with its inputs alone: a tuple of ints, the index of the input buffer
    whose shape the outputs take, or a function of the inputs returning a
    shape (or one shape per output)."""
    kernel = self._compile(schedule, target)
    kernel.output_shape = output_shape
    return kernel


def _shapes(kernel, output_shape, inputs, buffer_inputs, n_outputs):
    if output_shape is None:
        output_shape = getattr(kernel, "output_shape", None)
    if output_shape is None:
        names = ", ".join(a.name for a in kernel.arguments() if a.kind == _OUTPUT)
        raise TypeError(f"The kernel was called with its inputs only, so it must allocate its "
                        f"output ({names}), but it does not know its shape: pass the output too, "
                        f"or give output_shape= to the call or to compile() (a tuple, the index "
                        f"of an input whose shape it has, or a function of the inputs)")
    if callable(output_shape):
        shape = output_shape(*inputs)
    elif isinstance(output_shape, int):
        if not 0 <= output_shape < len(buffer_inputs):
            raise ValueError(f"output_shape={output_shape} names input buffer {output_shape}, "
                             f"but the kernel has {len(buffer_inputs)} input buffers")
        shape = tuple(buffer_inputs[output_shape].shape)
    else:
        shape = output_shape
    shape = tuple(shape)
    if shape and all(isinstance(s, (tuple, list)) for s in shape):
        if len(shape) != n_outputs:
            raise ValueError(f"output_shape gives {len(shape)} shapes for {n_outputs} outputs")
        return [tuple(int(e) for e in s) for s in shape]
    return [tuple(int(e) for e in shape)] * n_outputs


def _allocate(formal, shape, like):
    if any(is_torch_tensor(x) for x in like):
        import torch
        device = next(x.device for x in like if is_torch_tensor(x))
        return torch.empty(shape, dtype=torch_dtype(formal.type), device=device)
    if any(type(x).__module__ == "numpy" for x in like):
        import numpy as np
        return np.empty(shape, dtype=numpy_dtype(formal.type))
    return _loom.Buffer(formal.type, list(shape))


def _device_of(x):
    if isinstance(x, _loom.Buffer):
        return "cpu" if not x.has_device_memory() or x.owner is None else _device_of(x.owner)
    if hasattr(x, "__dlpack_device__"):
        kind, index = x.__dlpack_device__()
        return f"cuda:{index}" if int(kind) == 2 else "cpu"
    return "cpu"


def _call(self, *args, output_shape=None, **kwargs):
    """Runs the kernel: kernel(inputs..., outputs...) writes the outputs;
    kernel(inputs...) allocates them (see compile's output_shape) and
    returns them, as arrays of the inputs' kind (torch tensors on their
    device, NumPy arrays, or loom.Buffers). Arguments may be given by name."""
    formal = self.arguments()
    names = [a.name for a in formal]
    args = list(args)
    for name, value in kwargs.items():
        if name not in names:
            raise TypeError(f"The kernel has no argument '{name}'; its arguments are "
                            f"{', '.join(names)}")
        i = names.index(name)
        if i < len(args):
            raise TypeError(f"Argument '{name}' was given twice")
        while len(args) < i:
            raise TypeError(f"Argument '{name}' was given by name, but "
                            f"'{names[len(args)]}' before it was not given")
        args.append(value)
    n_in = sum(1 for a in formal if a.kind != _OUTPUT)
    n_out = len(formal) - n_in
    if len(args) not in (n_in, len(formal)):
        raise TypeError(f"The kernel takes its {n_in} inputs ({', '.join(names[:n_in])}), "
                        f"optionally followed by its {n_out} outputs "
                        f"({', '.join(names[n_in:])}); {len(args)} arguments were given")
    allocated = len(args) == n_in
    inputs = args[:n_in]
    if allocated:
        buffer_inputs = [x for x, a in zip(inputs, formal) if a.kind != _loom.Argument.Kind.InputScalar]
        shapes = _shapes(self, output_shape, inputs, buffer_inputs, n_out)
        args += [_allocate(a, s, inputs) for a, s in zip(formal[n_in:], shapes)]
    devices = {_device_of(x) for x in args if not isinstance(x, (int, float, bool))}
    cuda = sorted(d for d in devices if d.startswith("cuda"))
    if cuda and not self.uses_gpu():
        raise ValueError(f"The kernel was compiled for the CPU, but was given tensors on "
                         f"{cuda[0]}: compile it for a GPU target (target='host-cuda', with GPU "
                         f"loops in the schedule) or pass CPU tensors")
    if len(cuda) > 1:
        raise ValueError(f"The kernel was given tensors on several GPUs ({', '.join(cuda)})")
    values = []
    for i, (x, a) in enumerate(zip(args, formal)):
        if a.kind == _loom.Argument.Kind.InputScalar:
            values.append(x)
        else:
            values.append(as_buffer(x, f"Argument {i} ({a.name})"))
    if cuda:
        _call_on_torch_stream(self, values, cuda[0])
    else:
        self._call(values)
        if self.uses_gpu():
            # Host arrays given to a GPU kernel: their data went to the GPU
            # and back; make the outputs' host memory current.
            for b in values[n_in:]:
                b.copy_to_host()
    if not allocated:
        return None
    outs = args[n_in:]
    return outs[0] if len(outs) == 1 else tuple(outs)


def _call_on_torch_stream(kernel, values, device):
    import torch
    stream = torch.cuda.current_stream(torch.device(device)).cuda_stream
    previous = _loom._cuda_stream()
    _loom._set_cuda_stream(stream)
    try:
        with torch.cuda.device(torch.device(device)):
            kernel._call(values)
    finally:
        _loom._set_cuda_stream(previous)


_loom.Pipeline.compile = _compile
_loom.CompiledPipeline.__call__ = _call
