"""Loom kernels as PyTorch custom operators.

    op = loom.torch.custom_op("scaled_softmax", kernel, output_shape=lambda x, scale: x.shape)
    y = op(x, 0.5)                     # also torch.ops.loom.scaled_softmax(x, 0.5)

registers the compiled pipeline through torch.library, with a fake (meta)
implementation that gives the output's shape, dtype and device, so the op
runs inside torch.compile'd models without graph breaks. Buffer arguments
are Tensors, scalar Params are float, int or bool; the op allocates and
returns the outputs (a tuple when there are several). Input tensors whose
innermost stride is not 1 (transposed views) are made contiguous first.
"""
import inspect

import torch

from . import _loom
from ._buffers import torch_dtype
from ._pipeline import _shapes

_Kind = _loom.Argument.Kind
_SCALAR_TYPES = {"float": float, "int": int, "uint": int, "bool": bool}


def _annotation(arg):
    if arg.kind == _Kind.InputBuffer:
        return torch.Tensor
    t = arg.type
    if t.is_bool():
        return bool
    return float if t.is_float() else int


def custom_op(name, kernel, output_shape=None, *, namespace="loom"):
    """Registers `kernel` (a CompiledPipeline) as torch.ops.<namespace>.<name>
    and returns the op. output_shape is as for compile(): a tuple, the index
    of the input buffer whose shape the outputs take, or a function of the
    inputs (given the op's arguments, fake tensors inside torch.compile)."""
    if not isinstance(kernel, _loom.CompiledPipeline):
        raise TypeError(f"custom_op takes a compiled pipeline (Pipeline.compile()), not "
                        f"{type(kernel).__name__}")
    if not name.isidentifier():
        raise ValueError(f"custom_op: the name '{name}' is not an identifier")
    formal = kernel.arguments()
    inputs = [a for a in formal if a.kind != _Kind.OutputBuffer]
    outputs = [a for a in formal if a.kind == _Kind.OutputBuffer]
    shape_rule = output_shape if output_shape is not None else getattr(kernel, "output_shape", None)
    if shape_rule is None:
        raise TypeError("custom_op needs output_shape= (here or at compile()): the op "
                        "allocates its outputs")
    buffer_positions = [i for i, a in enumerate(inputs) if a.kind == _Kind.InputBuffer]
    returns = torch.Tensor if len(outputs) == 1 else tuple[(torch.Tensor,) * len(outputs)]
    parameters = [inspect.Parameter(a.name, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                    annotation=_annotation(a)) for a in inputs]
    signature = inspect.Signature(parameters, return_annotation=returns)

    def shapes(args):
        buffers = [args[i] for i in buffer_positions]
        return _shapes(kernel, shape_rule, args, buffers, len(outputs))

    def run(*args):
        # Loom reads rows with their innermost stride 1 (BufferParam's
        # default); a transposed view is copied once rather than refused.
        args = [a.contiguous() if isinstance(a, torch.Tensor) and a.dim() and a.stride(-1) != 1
                else a for a in args]
        outs = [torch.empty(s, dtype=torch_dtype(a.type), device=args[buffer_positions[0]].device
                            if buffer_positions else "cpu")
                for a, s in zip(outputs, shapes(args))]
        kernel(*args, *outs)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def fake(*args):
        device = args[buffer_positions[0]].device if buffer_positions else "cpu"
        outs = [torch.empty(s, dtype=torch_dtype(a.type), device=device)
                for a, s in zip(outputs, shapes(args))]
        return outs[0] if len(outs) == 1 else tuple(outs)

    run.__signature__ = fake.__signature__ = signature
    run.__name__ = fake.__name__ = name
    op = torch.library.custom_op(f"{namespace}::{name}", run, mutates_args=())
    op.register_fake(fake)
    return op
