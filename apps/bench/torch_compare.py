#!/usr/bin/env python3
"""Loom's ahead-of-time kernels next to PyTorch eager and torch.compile.

Runs the memory-bound apps of libloom_torch_kernels (row softmax, LayerNorm,
RMSNorm and an elementwise chain, compiled for the CPU and for a GPU) on
PyTorch tensors, which reach Loom through DLPack without a copy, and times
them against PyTorch eager, torch.compile and a plain copy in the same run:

    python3 apps/bench/torch_compare.py --lib build/apps/bench/libloom_torch_kernels.so
        [--device cuda|cpu] [--quick] [--sizes 16384x16384,32768x16384]
        [--reps N] [--no-compile]

Every kernel is first checked against PyTorch eager at a size that is no
multiple of any block; --quick stops there. The GPU kernels come thrice, the
second time with aligned rows promised (loom_<app>_cuda_aligned, generator
param aligned_rows=true): checked at rows of 4096 floats and seen to refuse
rows of 3001, and timed as "Loom, aligned" where the rows are a multiple of
4 floats; and a third time with the target feature fast_math
(loom_<app>_cuda_fast: the GPU's approximate exp, division and square root,
as Triton's kernels use), timed as "Loom, fast"; the row apps a fourth time
unstaged (loom_<app>_cuda_unstaged, generator param stage_rows=false: each
thread reduces its own points of the row, softmax online, and the row is
read twice), timed as "Loom, unstaged"; and a fifth time with each row kept
in its threads' registers (loom_<app>_cuda_registers, generator params
rows_in_registers=true columns=16384: rows of exactly 16384 floats, aligned,
read from device memory once with no shared memory), checked at rows of
16384 and seen to refuse rows of 4096, and timed as "Loom, registers" where
the rows are 16384 floats long. LayerNorm comes once more with its
statistics in one pass over the row (loom_layernorm_<device>_one_pass and,
on the GPU, _one_pass_unstaged: generator param one_pass=true), timed as
"Loom, one_pass". Bandwidth counts the bytes a
kernel must move (its input read once, its output written once), like
apps/bench/gpu_memory_bound_bench. On the GPU everything runs on PyTorch's
current stream (loom_cuda_set_stream) and is timed with CUDA events; on the
CPU with a wall clock. Exits with 77 (skipped) when PyTorch, or the GPU
asked for, is missing.
"""

import argparse
import ctypes
import statistics
import sys
import time

SKIPPED = 77


# ---- The C ABI of include/loom/runtime/loom_runtime.h and loom_dlpack.h ----


class LoomType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class LoomDimension(ctypes.Structure):
    _fields_ = [
        ("min", ctypes.c_int32),
        ("extent", ctypes.c_int32),
        ("stride", ctypes.c_int32),
        ("flags", ctypes.c_uint32),
    ]


class LoomBuffer(ctypes.Structure):
    _fields_ = [
        ("device", ctypes.c_uint64),
        ("device_interface", ctypes.c_void_p),
        ("host", ctypes.c_void_p),
        ("flags", ctypes.c_uint64),
        ("type", LoomType),
        ("dimensions", ctypes.c_int32),
        ("dim", ctypes.POINTER(LoomDimension)),
        ("padding", ctypes.c_void_p),
    ]


class LoomArgument(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("kind", ctypes.c_int32),
        ("dimensions", ctypes.c_int32),
        ("type", LoomType),
    ]


class LoomMetadata(ctypes.Structure):
    _fields_ = [
        ("version", ctypes.c_int32),
        ("num_arguments", ctypes.c_int32),
        ("arguments", ctypes.POINTER(LoomArgument)),
        ("target", ctypes.c_char_p),
        ("name", ctypes.c_char_p),
    ]


ARGUMENT_INPUT_BUFFER, ARGUMENT_INPUT_SCALAR, ARGUMENT_OUTPUT_BUFFER = 0, 1, 2
MAX_DIMS = 8

# Scalar arguments by (type code, bits): float 2, int 0, uint 1.
SCALAR_CTYPES = {
    (2, 32): ctypes.c_float,
    (2, 64): ctypes.c_double,
    (0, 32): ctypes.c_int32,
    (0, 64): ctypes.c_int64,
    (1, 32): ctypes.c_uint32,
}

_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


class Library:
    """libloom_torch_kernels, loaded with ctypes."""

    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        self.lib.loom_last_error_message.restype = ctypes.c_char_p
        self.lib.loom_buffer_from_dltensor.restype = ctypes.c_int
        self.lib.loom_buffer_from_dltensor.argtypes = [
            ctypes.c_void_p,
            ctypes.POINTER(LoomBuffer),
            ctypes.POINTER(LoomDimension),
            ctypes.c_int,
        ]
        self.lib.loom_cuda_set_stream.restype = None
        self.lib.loom_cuda_set_stream.argtypes = [ctypes.c_void_p]
        self.lib.loom_torch_kernels.restype = ctypes.c_char_p
        self.apps = self.lib.loom_torch_kernels().decode().split(",")

    def error(self):
        message = self.lib.loom_last_error_message()
        return message.decode() if message else "(no message)"

    def kernel(self, app, device, variant=""):
        """The app for the device; variant "aligned", "fast", "unstaged", "registers",
        "one_pass" or "one_pass_unstaged" for the library's other versions of it."""
        return Kernel(self, "loom_%s_%s%s" % (app, device, "_" + variant if variant else ""))

    def has(self, app, device, variant):
        """Whether the library has the variant ("aligned": aligned rows
        promised, generator param aligned_rows=true; "fast": the target
        feature fast_math; "unstaged": generator param stage_rows=false;
        "registers": rows_in_registers=true, rows of REGISTER_COLUMNS;
        "one_pass", "one_pass_unstaged": LayerNorm's statistics in one pass,
        generator param one_pass=true) of the app for the device."""
        return hasattr(self.lib, "loom_%s_%s_%s_argv" % (app, device, variant))


class Kernel:
    """One AOT pipeline: called through its _argv entry point, with the
    arguments its _metadata describes."""

    def __init__(self, library, name):
        self.library = library
        self.name = name
        self.entry = getattr(library.lib, name + "_argv")
        self.entry.restype = ctypes.c_int
        self.entry.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
        metadata_fn = getattr(library.lib, name + "_metadata")
        metadata_fn.restype = ctypes.POINTER(LoomMetadata)
        metadata = metadata_fn().contents
        self.target = metadata.target.decode()
        self.arguments = [metadata.arguments[i] for i in range(metadata.num_arguments)]

    def bind(self, *values):
        """A call with its arguments prepared: tensors become loom buffers
        through DLPack (the tensor's memory, no copy), scalars C values.
        Calling it runs the pipeline and raises with Loom's message if it
        fails. The tensors must outlive it."""
        if len(values) != len(self.arguments):
            names = ", ".join(a.name.decode() for a in self.arguments)
            raise TypeError("%s takes %d arguments (%s), not %d"
                            % (self.name, len(self.arguments), names, len(values)))
        keep = []  # what the C side points into
        pointers = (ctypes.c_void_p * len(values))()
        for i, (argument, value) in enumerate(zip(self.arguments, values)):
            if argument.kind == ARGUMENT_INPUT_SCALAR:
                ctype = SCALAR_CTYPES[(argument.type.code, argument.type.bits)]
                scalar = ctype(value)
                keep.append(scalar)
                pointers[i] = ctypes.addressof(scalar)
            else:
                buffer = self.library_buffer(value, argument)
                keep.append(buffer)
                pointers[i] = ctypes.addressof(buffer[0])
        entry, library, name = self.entry, self.library, self.name

        def call():
            if entry(pointers) != 0:
                raise RuntimeError("%s failed: %s" % (name, library.error()))

        call.keep = keep
        return call

    def library_buffer(self, tensor, argument):
        import torch.utils.dlpack

        capsule = torch.utils.dlpack.to_dlpack(tensor)
        dltensor = _capsule_pointer(capsule, b"dltensor")
        buffer = LoomBuffer()
        dims = (LoomDimension * MAX_DIMS)()
        if self.library.lib.loom_buffer_from_dltensor(dltensor, ctypes.byref(buffer), dims,
                                                      MAX_DIMS) != 0:
            raise RuntimeError("argument %s of %s: %s"
                               % (argument.name.decode(), self.name, self.library.error()))
        return (buffer, dims, capsule, tensor)


# ---- The kernels on the PyTorch side ----


def torch_kernels(torch):
    """Each app as PyTorch would write it, with the arguments both sides
    take: (inputs, scalars) -> output."""
    F = torch.nn.functional

    def rms_norm(x, weight, eps):
        if hasattr(F, "rms_norm"):
            return F.rms_norm(x, (x.shape[-1],), weight, eps)
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight

    return {
        "softmax": lambda x: torch.softmax(x, dim=-1),
        "layernorm": lambda x, gamma, beta, eps: F.layer_norm(x, (x.shape[-1],), gamma, beta,
                                                              eps),
        "rmsnorm": rms_norm,
        "silu_chain": lambda x: torch.clamp(F.silu(x) * 1.5 + 0.25, -3.0, 3.0),
    }


def random_tensor(torch, shape, lo, hi, device, generator):
    t = torch.rand(shape, generator=generator, dtype=torch.float32, device=device)
    return t * (hi - lo) + lo


def make_inputs(torch, app, x, generator):
    """The arguments of `app` but its output, in Loom's order, for input x."""
    cols = x.shape[-1]
    if app == "layernorm":
        return [x, random_tensor(torch, (cols,), 0.5, 1.5, x.device, generator),
                random_tensor(torch, (cols,), -1.0, 1.0, x.device, generator), 1e-5]
    if app == "rmsnorm":
        return [x, random_tensor(torch, (cols,), 0.5, 1.5, x.device, generator), 1e-6]
    return [x]


# Loom and PyTorch differ in the order of their float operations (and the
# GPU's exp); these bound the difference for values of the size above.
TOLERANCE = {"rtol": 2e-4, "atol": 2e-5}

# The row length that loom_<app>_cuda_registers is compiled for
# (apps/CMakeLists.txt: generator param columns).
REGISTER_COLUMNS = 16384


def check(torch, library, app, device, rows, cols, generator, variant=""):
    """Loom's kernel against PyTorch eager; the worst error, or raises."""
    x = random_tensor(torch, (rows, cols), -4.0, 4.0, device, generator)
    inputs = make_inputs(torch, app, x, generator)
    expected = torch_kernels(torch)[app](*inputs)
    actual = torch.full_like(expected, float("nan"))
    library.kernel(app, device, variant).bind(*inputs, actual)()
    if device == "cuda":
        torch.cuda.synchronize()
    torch.testing.assert_close(actual, expected, **TOLERANCE,
                               msg=lambda m: "%s (%s, %d x %d): %s" % (app, device, rows, cols, m))
    return (actual - expected).abs().max().item()


# ---- Timing ----


class Timer:
    """Seconds per call of a function, the median of `trials` runs of `reps`
    calls each after a warm-up, with CUDA events on the GPU."""

    def __init__(self, torch, device, reps, trials=5):
        self.torch, self.device, self.reps, self.trials = torch, device, reps, trials

    def __call__(self, fn):
        torch = self.torch
        for _ in range(2):
            fn()
        samples = []
        for _ in range(self.trials):
            if self.device == "cuda":
                start = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                start.record()
                for _ in range(self.reps):
                    fn()
                end.record()
                end.synchronize()
                samples.append(start.elapsed_time(end) / 1e3 / self.reps)
            else:
                begin = time.perf_counter()
                for _ in range(self.reps):
                    fn()
                samples.append((time.perf_counter() - begin) / self.reps)
        return statistics.median(samples)


def benchmark(torch, library, device, rows, cols, timer, compile_too, generator):
    bytes_moved = 2.0 * rows * cols * 4
    x = random_tensor(torch, (rows, cols), -4.0, 4.0, device, generator)
    out = torch.empty_like(x)
    copy = timer(lambda: out.copy_(x))
    print("\n%d x %d float32: %.2f GB moved per call (input read once, output written once)"
          % (rows, cols, bytes_moved / 1e9))
    print("%-11s %-14s %9s %9s %8s %13s" % ("kernel", "by", "ms", "GB/s", "vs copy",
                                            "Loom speed-up"))
    print("%-11s %-14s %9.3f %9.1f %8.2f" % ("copy", "tensor.copy_", copy * 1e3,
                                             bytes_moved / copy / 1e9, 1.0))
    ok = True
    for app, torch_fn in torch_kernels(torch).items():
        inputs = make_inputs(torch, app, x, generator)
        loom_out = torch.empty_like(x)
        loom_call = library.kernel(app, device).bind(*inputs, loom_out)
        rows_of_table = [("Loom (AOT)", timer(loom_call))]
        expected = torch_fn(*inputs)
        outputs = [loom_out]
        for variant in ("aligned", "fast", "unstaged", "registers", "one_pass",
                        "one_pass_unstaged"):
            if not library.has(app, device, variant) or (variant == "aligned" and cols % 4):
                continue
            if variant == "registers" and cols != REGISTER_COLUMNS:
                continue
            variant_out = torch.empty_like(x)
            call = library.kernel(app, device, variant).bind(*inputs, variant_out)
            rows_of_table.append(("Loom, " + variant, timer(call)))
            outputs.append(variant_out)
        for output in outputs:
            try:
                torch.testing.assert_close(output, expected, **TOLERANCE)
            except AssertionError as e:
                print("%s: Loom differs from PyTorch at this size: %s" % (app, e))
                ok = False
        rows_of_table.append(("torch eager", timer(lambda: torch_fn(*inputs))))
        if compile_too:
            try:
                compiled = torch.compile(torch_fn, dynamic=False)
                compiled(*inputs)
                rows_of_table.append(("torch.compile", timer(lambda: compiled(*inputs))))
            except Exception as e:  # a missing compiler, Triton, ...: report, go on
                print("%s: torch.compile failed: %s" % (app, str(e).splitlines()[0]))
        loom_time = rows_of_table[0][1]
        for by, seconds in rows_of_table:
            speed = "" if by.startswith("Loom") else "%.2fx" % (seconds / loom_time)
            print("%-11s %-14s %9.3f %9.1f %8.2f %13s" % (app, by, seconds * 1e3,
                                                       bytes_moved / seconds / 1e9,
                                                       copy / seconds, speed))
    return ok


def parse_sizes(text):
    sizes = []
    for item in text.split(","):
        rows, cols = item.lower().split("x")
        sizes.append((int(rows), int(cols)))
    return sizes


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lib", required=True, help="path of libloom_torch_kernels.so")
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--quick", action="store_true", help="check correctness only")
    parser.add_argument("--sizes", help="rows x cols to time, comma-separated "
                        "(default: 16384x16384,32768x16384 on the GPU, 2048x4096 on the CPU)")
    parser.add_argument("--reps", type=int, default=10, help="calls per timed trial")
    parser.add_argument("--no-compile", action="store_true", help="leave torch.compile out")
    args = parser.parse_args()

    try:
        import torch
        import torch.utils.dlpack
    except ImportError as e:
        print("skipped: PyTorch is not installed for %s (%s)" % (sys.executable, e))
        return SKIPPED
    if args.device == "cuda" and not torch.cuda.is_available():
        print("skipped: PyTorch sees no GPU")
        return SKIPPED
    library = Library(args.lib)
    if args.device == "cuda":
        torch.cuda.init()
        # Loom's launches and copies go on PyTorch's stream, in order with
        # its kernels; Loom then waits for that stream alone.
        library.lib.loom_cuda_set_stream(torch.cuda.current_stream().cuda_stream)
        where = "%s, %s" % (torch.cuda.get_device_name(), library.kernel("softmax", "cuda").target)
    else:
        where = "CPU, %d threads" % torch.get_num_threads()
    print("Loom AOT kernels vs PyTorch %s (%s)" % (torch.__version__, where))

    seed = int(time.time())
    print("random seed %d" % seed)
    generator = torch.Generator(device=args.device).manual_seed(seed)
    print("correctness against PyTorch eager (rtol %g, atol %g):"
          % (TOLERANCE["rtol"], TOLERANCE["atol"]))
    for app in library.apps:
        for rows, cols in ((37, 3001), (5, 4096)):
            worst = check(torch, library, app, args.device, rows, cols, generator)
            print("  %-11s %5d x %-5d worst absolute difference %.2e" % (app, rows, cols, worst))
        for variant, what in (("fast", "fast_math"), ("unstaged", "unstaged"),
                              ("one_pass", "statistics in one pass"),
                              ("one_pass_unstaged", "one pass, unstaged")):
            if library.has(app, args.device, variant):
                worst = check(torch, library, app, args.device, 37, 3001, generator, variant)
                print("  %-11s %5d x %-5d worst absolute difference %.2e (%s)"
                      % (app, 37, 3001, worst, what))
        if library.has(app, args.device, "aligned"):
            # Rows of a multiple of 4 floats; others are refused, by name.
            worst = check(torch, library, app, args.device, 5, 4096, generator, "aligned")
            print("  %-11s %5d x %-5d worst absolute difference %.2e (aligned rows)"
                  % (app, 5, 4096, worst))
            try:
                check(torch, library, app, args.device, 37, 3001, generator, "aligned")
            except RuntimeError as e:
                if "set_stride_multiple(4)" not in str(e):
                    raise
            else:
                raise AssertionError("%s with aligned rows took rows of 3001 floats" % app)
        if library.has(app, args.device, "registers"):
            # Rows of exactly REGISTER_COLUMNS floats; others are refused.
            worst = check(torch, library, app, args.device, 5, REGISTER_COLUMNS, generator,
                          "registers")
            print("  %-11s %5d x %-5d worst absolute difference %.2e (rows in registers)"
                  % (app, 5, REGISTER_COLUMNS, worst))
            try:
                check(torch, library, app, args.device, 5, 4096, generator, "registers")
            except RuntimeError as e:
                if "set_extent(%d)" % REGISTER_COLUMNS not in str(e):
                    raise
            else:
                raise AssertionError("%s with rows in registers took rows of 4096 floats" % app)
    if args.quick:
        return 0

    if args.sizes:
        sizes = parse_sizes(args.sizes)
    elif args.device == "cuda":
        sizes = [(16384, 16384), (32768, 16384)]
    else:
        sizes = [(2048, 4096)]
    timer = Timer(torch, args.device, args.reps)
    ok = True
    for rows, cols in sizes:
        ok &= benchmark(torch, library, args.device, rows, cols, timer, not args.no_compile,
                        generator)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
