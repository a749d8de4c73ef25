#!/usr/bin/env python3
"""Loom's tensor-core GEMM next to cuBLAS (torch.matmul), in the same run:
the plain algorithm acc(i, j) += float(A(i, k)) * float(B(k, j)) scheduled
by loom.schedules.gemm_tensor_cores (a tile program: mma.sync, ldmatrix,
cp.async), JIT-compiled and called with PyTorch tensors.

    python3 python_bindings/bench/gemm_bench.py [--quick] [--standin]
        [--sizes 1024,2048,4096,8192] [--skinny 16,64] [--dtypes bf16,fp16] [--reps N]

Rows: square sizes and skinny ones (M = 16, 64 with N = K = the largest
size), each dtype; TFLOP/s of Loom and cuBLAS measured with CUDA events on
PyTorch's stream, and their ratio. Then a fused epilogue, C = gelu(A B +
bias), against cuBLAS plus PyTorch's epilogue. Outputs are of the input
type (float32 sums), as torch.matmul's.

Every kernel is first checked against float64 at sizes that are no
multiple of a tile; --quick stops there. --standin runs that check with
NumPy arrays on whatever driver LOOM_CUDA_DRIVER names (the tests' stand-in,
which runs kernels on the CPU), with no PyTorch and no GPU. Exits 77
(skipped) without PyTorch or a GPU, unless --standin.
"""
import argparse
import sys

SKIPPED = 77


def gemm_pipeline(loom, dtype, epilogue, rows, cols):
    """The algorithm and the template's schedule, compiled for the GPU."""
    A = loom.BufferParam(dtype, 2, "A")
    B = loom.BufferParam(dtype, 2, "B")
    bias = loom.BufferParam(loom.Float(32), 1, "bias")
    i, j = loom.Var("i"), loom.Var("j")
    r = loom.RDom(0, A.dim(1).extent(), name="k")
    acc, C = loom.Func("acc"), loom.Func("C")
    f32 = loom.Float(32)
    acc[i, j] = 0.0
    acc[i, j] += loom.cast(f32, A[i, r]) * loom.cast(f32, B[r, j])
    if epilogue:
        x = acc[i, j] + bias[j]
        gelu = 0.5 * x * (1.0 + loom.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))
        C[i, j] = loom.cast(dtype, gelu)
    else:
        C[i, j] = loom.cast(dtype, acc[i, j])
    sch = loom.Schedule()
    loom.schedules.gemm_tensor_cores(sch, C, acc, i, j, rows=rows, cols=cols)
    return loom.Pipeline(C), sch


def tiles_for(m):
    # Skinny products waste most of a 128-row tile.
    return (64, 128) if m <= 64 else (128, 128)


def check_with_numpy(loom, target, dtypes):
    import numpy as np
    rng = np.random.default_rng()
    for name in dtypes:
        np_dtype = {"fp16": np.float16, "bf16": None}[name]
        if np_dtype is None:
            try:
                import ml_dtypes
                np_dtype = ml_dtypes.bfloat16
            except ImportError:
                print("bf16: no ml_dtypes, not checked")
                continue
        ltype = loom.Float(16) if name == "fp16" else loom.BFloat(16)
        for epilogue in (False, True):
            M, N, K = 150, 97, 77
            pipeline, sch = gemm_pipeline(loom, ltype, epilogue, *tiles_for(M))
            k = pipeline.compile(sch, target, output_shape=lambda *a: (M, N))
            a = rng.standard_normal((M, K)).astype(np_dtype)
            b = rng.standard_normal((K, N)).astype(np_dtype)
            bias = rng.standard_normal(N).astype(np.float32)
            want = a.astype(np.float64) @ b.astype(np.float64)
            if epilogue:
                x = want + bias
                want = 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))
                got = k(a, b, bias).astype(np.float64)
            else:
                got = k(a, b).astype(np.float64)
            # One rounding to the output type, and float32 sums.
            tol = 1e-2 if name == "bf16" else 2e-3
            err = np.max(np.abs(got - want) / (1 + np.abs(want)))
            print(f"check {name} {'gelu ' if epilogue else 'plain'} {M}x{N}x{K}: "
                  f"max error {err:.2e}")
            if not err <= tol:
                return False
    return True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--standin", action="store_true")
    ap.add_argument("--sizes", default="1024,2048,4096,8192")
    ap.add_argument("--skinny", default="16,64")
    ap.add_argument("--dtypes", default="bf16,fp16")
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    import loom
    dtypes = args.dtypes.split(",")
    if args.standin:
        ok = check_with_numpy(loom, "host-cuda-sm_80", dtypes)
        return 0 if ok else 1
    try:
        import torch
    except ImportError:
        print("PyTorch is not installed: skipped")
        return SKIPPED
    if not torch.cuda.is_available():
        print("no CUDA device: skipped")
        return SKIPPED
    if not check_with_numpy(loom, "host-cuda", dtypes):
        return 1
    if args.quick:
        return 0

    dev = torch.device("cuda")
    sizes = [int(s) for s in args.sizes.split(",")]
    shapes = [(n, n, n) for n in sizes]
    shapes += [(int(m), sizes[-1], sizes[-1]) for m in args.skinny.split(",") if m]

    def time_ms(fn):
        fn()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        best = float("inf")
        for _ in range(3):
            start.record()
            for _ in range(args.reps):
                fn()
            end.record()
            end.synchronize()
            best = min(best, start.elapsed_time(end) / args.reps)
        return best

    print(f"{'dtype':5} {'M':>6} {'N':>6} {'K':>6} {'what':18} {'Loom TF/s':>10} "
          f"{'cuBLAS TF/s':>12} {'ratio':>6}")
    kernels = {}
    for name in dtypes:
        tdtype = torch.bfloat16 if name == "bf16" else torch.float16
        ltype = loom.BFloat(16) if name == "bf16" else loom.Float(16)
        for (M, N, K) in shapes:
            a = torch.randn(M, K, device=dev, dtype=tdtype)
            b = torch.randn(K, N, device=dev, dtype=tdtype)
            bias = torch.randn(N, device=dev, dtype=torch.float32)
            flops = 2.0 * M * N * K
            for epilogue in (False, True):
                key = (name, epilogue, tiles_for(M))
                if key not in kernels:
                    pipeline, sch = gemm_pipeline(loom, ltype, epilogue, *tiles_for(M))
                    kernels[key] = pipeline.compile(sch, "host-cuda")
                k = kernels[key]
                out = torch.empty(M, N, device=dev, dtype=tdtype)
                if epilogue:
                    bias_t = bias.to(tdtype)
                    loom_ms = time_ms(lambda: k(a, b, bias, out))
                    ref_ms = time_ms(lambda: torch.nn.functional.gelu(
                        torch.matmul(a, b) + bias_t, approximate="tanh"))
                    what = "gelu(AB+bias)"
                else:
                    loom_ms = time_ms(lambda: k(a, b, out))
                    ref_ms = time_ms(lambda: torch.matmul(a, b))
                    what = "AB"
                print(f"{name:5} {M:6} {N:6} {K:6} {what:18} {flops / loom_ms / 1e9:10.1f} "
                      f"{flops / ref_ms / 1e9:12.1f} {ref_ms / loom_ms:6.2f}")
                sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
