#!/usr/bin/env python3
"""Loom's attention from Python next to PyTorch, in the same run, written
with the bindings alone (no ctypes, no AOT library): the causal variant of
apps/attention scheduled by loom.schedules' templates, JIT-compiled, called
with PyTorch tensors, checked against torch's scaled_dot_product_attention
and timed against it.

    python3 python_bindings/bench/torch_attention_compare.py [--device cuda|cpu] [--quick]
        [--seqs 1024,4096] [--heads 16] [--kv-heads 4] [--head-dim 64] [--reps N]

On a GPU (CUDA tensors, PyTorch's stream, CUDA events): prefill with
flash_attention_gpu (CUDA cores, the baseline the tile layer is to beat)
and decode (one query) with flash_decoding_gpu, both fp16 inputs, against
SDPA with its default backend; TFLOP/s for prefill, GB/s of K and V read
for decode. On the CPU: flash_attention with the head dimension fixed (a
tile program per 128 queries) and flash_decoding with it fixed too (split_k
over tile programs of one query and a key head's query heads), in fp32 on the same
threads as torch, each Loom run and torch run alternating so that noise
from the rest of the machine hits both alike (medians of --reps). Every
kernel is first checked at sizes that are no multiple of any tile; --quick
stops there. --variants picks causal and/or global prefill. --kv-heads
makes decode grouped-query (the grouped-query variant, torch with
enable_gqa): the CPU template's programs then hold the query heads of one
key head. Exits 77
(skipped) without PyTorch or the GPU asked for.
"""
import argparse
import os
import sys
import time

SKIPPED = 77


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--seqs", default="1024,4096")
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--kv-heads", type=int, default=0,
                    help="key/value heads of decode (grouped-query); 0: --heads")
    ap.add_argument("--head-dim", type=int, default=64)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--variants", default="causal", help="prefill variants: causal,global")
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("PyTorch is not installed: skipped")
        return SKIPPED
    if args.device == "cuda" and not torch.cuda.is_available():
        print("no CUDA device: skipped")
        return SKIPPED
    import loom
    from loom import attention, schedules

    gpu = args.device == "cuda"
    D = args.head_dim
    dtype = torch.float16 if gpu else torch.float32
    ltype = loom.Float(16) if gpu else loom.Float(32)
    target = "host-cuda" if gpu else loom.Target.host().with_feature(loom.Target.Feature.FastMath)
    if not gpu:
        torch.set_num_threads(os.cpu_count() or 1)

    kv_heads = args.kv_heads or args.heads
    if args.heads % kv_heads:
        print(f"--kv-heads {kv_heads} does not divide --heads {args.heads}", file=sys.stderr)
        return 2
    grouped = kv_heads != args.heads

    def kernel(decode, causal=True):
        variant = attention.Variant.Causal if causal else attention.Variant.Global
        if decode and grouped:
            variant = attention.Variant.GroupedQuery  # causal, k and v at h // G
        a = attention.AttentionVariant(variant, ltype)
        sch = loom.Schedule()
        if gpu:
            a.fix_head_dim(D)
            if decode:
                schedules.flash_decoding_gpu(sch, a.chain(), head_dim=D, chunks=64, key_tile=16)
            else:
                schedules.flash_attention_gpu(sch, a.chain(), head_dim=D, queries_per_block=64)
        elif decode:
            a.fix_head_dim(D)
            schedules.flash_decoding(sch, a.chain(), chunks=os.cpu_count() or 1, head_dim=D)
        else:
            a.fix_head_dim(D)
            schedules.flash_attention(sch, a.chain(), head_dim=D)
        t0 = time.perf_counter()
        k = loom.Pipeline(a.out).compile(sch, target, output_shape=0)
        return k, time.perf_counter() - t0

    def timed(fn):
        fn()
        if gpu:
            torch.cuda.synchronize()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(args.reps):
                fn()
            end.record()
            torch.cuda.synchronize()
            return start.elapsed_time(end) / 1e3 / args.reps
        t0 = time.perf_counter()
        for _ in range(args.reps):
            fn()
        return (time.perf_counter() - t0) / args.reps

    def timed_pair(a, b):
        """Medians of a and b on the CPU, run alternately."""
        if gpu:
            return timed(a), timed(b)
        a(), b()
        ta, tb = [], []
        for _ in range(args.reps):
            for fn, ts in ((a, ta), (b, tb)):
                t0 = time.perf_counter()
                fn()
                ts.append(time.perf_counter() - t0)
        return sorted(ta)[len(ta) // 2], sorted(tb)[len(tb) // 2]

    sdpa = torch.nn.functional.scaled_dot_product_attention
    failed = False
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    for v in variants:
        if v not in ("causal", "global"):
            print(f"--variants: unknown variant '{v}' (causal, global)", file=sys.stderr)
            return 2
    cases = [(False, v == "causal") for v in variants] + [(True, True)]
    for decode, causal in cases:
        gqa = decode and grouped
        name = (f"decode {args.heads} query heads over {kv_heads}" if gqa else "decode "
                ) if decode else f"prefill {'causal' if causal else 'global'}"
        k, seconds = kernel(decode, causal)
        print(f"{name}: compiled in {seconds:.2f} s")
        # Check at odd sizes (decode grouped: 9 query heads over 3).
        lq, lk = (1, 333) if decode else (157, 157)
        q = torch.randn(1, 9 if gqa else 3, lq, D, dtype=dtype, device=args.device)
        kk, v = (torch.randn(1, 3, lk, D, dtype=dtype, device=args.device) for _ in range(2))
        scale = 1.0 / D ** 0.5
        got = k(q, kk, v, scale)
        # Decode: the one query is the last position, which sees every key.
        want = sdpa(q.float(), kk.float(), v.float(), is_causal=causal and not decode, scale=scale,
                    enable_gqa=gqa)
        err = (got.float() - want).abs().max().item()
        tol = 2e-3 if gpu else 1e-4
        print(f"  check {lq}x{lk}: max |loom - sdpa| {err:.1e} ({'ok' if err <= tol else 'WRONG'})")
        failed |= err > tol
        if args.quick:
            continue
        for seq in (int(s) for s in args.seqs.split(",")):
            lq = 1 if decode else seq
            q = torch.randn(1, args.heads, lq, D, dtype=dtype, device=args.device)
            kk, v = (torch.randn(1, kv_heads if gqa else args.heads, seq, D, dtype=dtype,
                                 device=args.device) for _ in range(2))
            out = torch.empty_like(q)
            t_loom, t_torch = timed_pair(
                lambda: k(q, kk, v, scale, out),
                lambda: sdpa(q, kk, v, is_causal=causal and not decode, scale=scale,
                             enable_gqa=gqa))
            if decode:
                gbs = lambda t: 2 * kk.numel() * kk.element_size() / t / 1e9
                print(f"  seq {seq:6d}: Loom {gbs(t_loom):8.1f} GB/s   torch {gbs(t_torch):8.1f} GB/s"
                      f"   torch / Loom time {t_torch / t_loom:.2f}")
            else:
                flops = 4 * args.heads * lq * seq * D / (2 if causal else 1)
                tf = lambda t: flops / t / 1e12
                print(f"  seq {seq:6d}: Loom {tf(t_loom):7.2f} TFLOP/s   torch {tf(t_torch):7.2f} "
                      f"TFLOP/s   torch / Loom time {t_torch / t_loom:.2f}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
