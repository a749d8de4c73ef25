"""The flagship demo from Python: causal attention written once as a plain
algorithm (apps/attention), scheduled by the FlashAttention template, which
rolling_update turns into one pass over key tiles with derived repairs;
timed against the materialized schedule and, when PyTorch is installed,
against torch's scaled_dot_product_attention on the same inputs, in the
same process and on the same number of threads.

    python -m loom.demo [--seq 4096] [--heads 4] [--head-dim 64] [--global] [--quick]
"""
import argparse
import os
import time

import numpy as np

import loom
from loom import attention, schedules


def median_seconds(fn, reps):
    fn()  # warm up
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def reference_rows(q, k, v, scale, causal, rows):
    """float64 attention for a few query rows of head 0."""
    s = (q[0, 0, rows].astype(np.float64) @ k[0, 0].astype(np.float64).T) * scale
    if causal:
        s = np.where(np.arange(k.shape[2])[None, :] <= np.array(rows)[:, None], s, -np.inf)
    p = np.exp(s - s.max(1, keepdims=True))
    return (p / p.sum(1, keepdims=True)) @ v[0, 0].astype(np.float64)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seq", type=int, default=4096)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--head-dim", type=int, default=64)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--global", dest="is_global", action="store_true", help="no causal mask")
    ap.add_argument("--quick", action="store_true", help="a small problem, for tests")
    args = ap.parse_args(argv)
    if args.quick:
        args.seq, args.heads, args.reps = 300, 2, 2
    causal = not args.is_global
    variant = attention.Variant.Global if args.is_global else attention.Variant.Causal
    threads = os.cpu_count() or 1
    target = loom.Target.host().with_feature(loom.Target.Feature.FastMath) \
        .with_feature(loom.Target.Feature.LLVMLoopOpt)
    vector = 16 if target.has_feature(loom.Target.Feature.AVX512) else 8
    shape = (1, args.heads, args.seq, args.head_dim)
    print(f"Loom attention demo (Python): {attention.variant_name(variant)}, fp32, {shape}, "
          f"{threads} threads\n")

    a = attention.AttentionVariant(variant, loom.Float(32))
    fused_sch = loom.Schedule()
    schedules.flash_attention(fused_sch, a.chain(), query_block=16, key_tile=64, vector=vector)
    fused = loom.Pipeline(a.out).compile(fused_sch, target, output_shape=0)
    materialized = loom.Pipeline(a.out).compile(a.materialized_schedule(16, vector), target,
                                                output_shape=0)
    print("what rolling_update derived (compile_log):")
    for line in fused.compile_log():
        print("  " + (line if len(line) < 160 else line[:157] + "..."))

    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal(shape).astype(np.float32) for _ in range(3))
    scale = 1.0 / np.sqrt(args.head_dim)
    out_f, out_m = np.empty_like(q), np.empty_like(q)
    fused(q, k, v, scale, out_f)
    materialized(q, k, v, scale, out_m)
    rows = sorted({0, 1, args.seq // 3, args.seq - 1})
    err = np.abs(out_f[0, 0, rows] - reference_rows(q, k, v, scale, causal, rows)).max()
    diff = np.abs(out_f - out_m).max()
    print(f"\ncheck: fused vs float64 (rows {rows} of head 0): {err:.1e}; fused vs materialized, "
          f"every element: {diff:.1e}")
    if err > 1e-4 or diff > 1e-4:
        raise SystemExit("the fused result is wrong")

    t_m = median_seconds(lambda: materialized(q, k, v, scale, out_m), args.reps)
    t_f = median_seconds(lambda: fused(q, k, v, scale, out_f), args.reps)
    print(f"\ntime, median of {args.reps}:")
    print(f"  Loom, materialized                       {t_m * 1e3:8.1f} ms")
    print(f"  Loom, fused (flash_attention template)   {t_f * 1e3:8.1f} ms")
    try:
        import torch
    except ImportError:
        torch = None
    if torch is None:
        print("  PyTorch: not installed (pip install torch) - no comparison")
    else:
        torch.set_num_threads(threads)
        tq, tk, tv = (torch.from_numpy(x) for x in (q, k, v))
        sdpa = torch.nn.functional.scaled_dot_product_attention
        with torch.no_grad():
            t_t = median_seconds(lambda: sdpa(tq, tk, tv, is_causal=causal, scale=scale), args.reps)
            d = (sdpa(tq, tk, tv, is_causal=causal, scale=scale).numpy() - out_f).__abs__().max()
        print(f"  PyTorch {torch.__version__} sdpa, {threads} threads  {t_t * 1e3:8.1f} ms   "
              f"(max |diff| from Loom's {d:.1e})")
    print(f"  fused / materialized time: {t_f / t_m:.2f}")
    if torch is not None:
        print(f"  fused / PyTorch time:      {t_f / t_t:.2f}")
    score_bytes = args.heads * args.seq * args.seq * 4
    print(f"\nmemory: the full score matrix would be {score_bytes / 2**20:.1f} MiB; the fused "
          f"schedule keeps tiles of 16 queries x 64 keys per thread "
          f"({3 * 16 * 64 * 4 // 1024} KiB), at any sequence length")


if __name__ == "__main__":
    main()
