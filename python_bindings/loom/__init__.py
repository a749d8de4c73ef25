"""Loom: a Halide-style language and compiler for fast tensor kernels.

Write an algorithm as Funcs over Vars and RDoms, a Schedule that says how to
compute it, and compile the pair for the CPU (LLVM) or an NVIDIA GPU (CUDA):

    import loom, numpy as np
    x = loom.Var("x")
    a = loom.BufferParam(loom.Float(32), 1, "a")
    f = loom.Func("f")
    f[x] = a[x] * 2.0
    kernel = loom.Pipeline(f).compile(output_shape=0)   # the shape of input 0
    print(kernel(np.arange(5, dtype=np.float32)))

The names follow Loom's C++ API (include/loom/); see docs/python.md.
"""
from . import _loom
from ._loom import (  # noqa: F401  (the public API)
    Argument, BFloat, Bool, Buffer, BufferParam, ChunkLayout, CompiledPipeline, CompileError,
    Dimension, Error, Expr, Float, Func, FuncRef, Int, InternalError, MemoryType, OutputBuffer,
    Param, Pipeline, RDom, RVar, RuntimeError, Schedule, Stage, TailStrategy, Target, Tuple,
    Type, UInt, Var, abs, argmax, argmin, cast, ceil, clamp, cos, erf, exp, floor, interpret,
    interpret_into, interpret_tuple, log, max, maximum, min, minimum, pow, product,
    reinterpret, round, rsqrt, emit_kinds, select, sin, sqrt, sum, tanh, type_max, type_min, type_of)
from . import _buffers, _pipeline  # noqa: F401  (Buffer.numpy, kernel(...) calls)
from . import schedules, attention  # noqa: F401
from ._generator import Generator, GeneratorParam, Input, Output  # noqa: F401

__version__ = "0.1.0"


def __getattr__(name):
    # `loom.torch` imports PyTorch, which takes seconds: only when asked for.
    if name == "torch":
        import importlib
        return importlib.import_module(".torch", __name__)
    raise AttributeError(f"module 'loom' has no attribute '{name}'")
