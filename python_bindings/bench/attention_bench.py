#!/usr/bin/env python3
"""FlashAttention on tensor cores (issue 46): Loom's attention variants,
called through the bindings on CUDA tensors, next to PyTorch's SDPA with a
named backend and FlexAttention, all timed in the same run.

    python3 python_bindings/bench/attention_bench.py [--suite default|neptune] [--quick]
        [--budget SECONDS] [--seqs 1024,...,16384] [--head-dims 64,128] [--dtypes fp16,bf16]
        [--variants global,causal,...] [--decode-keys 8192,32768,131072] [--reps N]
    python3 python_bindings/bench/attention_bench.py --self-check     # on the CPU, no GPU

The default suite has two tables. Prefill: Loom's tile program on mma.sync
tensor cores (loom.schedules.flash_attention_tensor_cores, "Loom-TC") and
its CUDA-core baseline (flash_attention_gpu, "Loom-CC", up to
--baseline-max-seq, 8192), against SDPA under sdpa_kernel(FLASH_ATTENTION),
(CUDNN_ATTENTION) and (EFFICIENT_ATTENTION), and against FlexAttention
(torch.compile'd flex_attention with the variant's score_mod, and a
block_mask for masked variants), in TFLOP/s: 4 B Hq D flops per visible
query-key pair (about half the pairs for causal, the pairs inside the
window for the sliding window), and the ratio Loom-TC / each peer (above 1
Loom is faster). Batch x heads x seq is about --tokens. Decode (one query
per head): Loom's flash_decoding_tensor_cores (split_k over tile programs,
"Loom-TCd", pieces chosen to fill the GPU) and flash_decoding_gpu (CUDA
cores, split_k into 64 and 256 pieces), the best against the same peers, in GB/s of K and V read, and as a fraction of a
device-to-device copy (dst.copy_(src) of 1 GiB) measured in the same run.
--suite neptune times Neptune's ten operators (fp16, head dim 128, 8192
tokens): prefill global, causal, GQA, ALiBi, soft-capping, windowed;
decode causal, GQA, ALiBi, soft-capping. The composite operators
(soft-capping = causal + GQA + cap 50, windowed = window 4096 + GQA + cap
50) are Loom's composite variants (SoftCapGQA, WindowSoftCapGQA), which the
same templates schedule unchanged. Neptune's sizes are fixed: --seqs, --head-dims, --dtypes,
--variants and --decode-keys apply to the default suite only.

Every implementation is first checked against a float32 PyTorch reference
written from apps/attention/variants_reference.h (77 x 77 prefill, 1 x 333
decode, 2 or 4 heads): a wrong one prints WRONG, is not timed, and makes
the script exit 1 at the end. A peer that refuses a case prints n/a and
why. Times are medians of per-call CUDA events after warm-up. --budget
stops starting new rows once that many seconds have passed (prefill gets
about two thirds of it) and lists what it skipped; rows run in the order
of --variants, then head dims, then sizes, so the first ones matter most.
--quick is fp16 at seq 8192 and decode at 32768 keys, causal and global
first. Loom's tensor-core JIT compile time (lowering + NVRTC; target < 2 s)
is printed with its check, and the summary lists the rows below issue 46's
targets (prefill: Loom-TC >= 1.0x SDPA-flash for global and causal, >= 0.9x
FlexAttention for the others; decode: >= 0.8 of the copy from 32k keys).

--self-check runs on the CPU: for every variant and operator it checks that
the FlexAttention score_mod / mask_mod and the SDPA call used here,
applied to an explicit score matrix and through eager flex_attention and
SDPA, give the reference's result, and that Loom's own CPU kernel of each
single variant (schedules.flash_attention, float32) agrees, at Lq = Lk,
Lq = 1 and Lq < Lk. Exits 77 (skipped) without PyTorch, or without CUDA
unless --self-check.
"""
import argparse
import math
import statistics
import sys
import time
import warnings
from dataclasses import dataclass

SKIPPED = 77
SOFT_CAP = 50.0  # attention::soft_cap (variants_reference.h); checked against loom's value


class NotAvailable(Exception):
    """A peer that cannot compute a case: printed as n/a with the reason."""


# ---------------------------------------------------------------------------
# The operators' math, in the terms of apps/attention/variants_reference.h:
# the query at index i has position p = i + Lk - Lq; causal keeps the keys
# j <= p; the sliding window also needs j > p - window; ALiBi subtracts
# slope_h * (p - j) with slope_h = 2^(-8 (h + 1) / Hq) from the scaled score;
# soft-capping maps the scaled score x to cap * tanh(x / cap); grouped-query
# query head h reads key/value head h / (Hq / Hkv). A fully masked row is 0.


@dataclass(frozen=True)
class Spec:
    name: str
    causal: bool = True
    alibi: bool = False
    cap: float = 0.0  # soft cap, 0: none
    windowed: bool = False
    gqa: bool = False  # fewer key/value heads than query heads
    loom: str = ""  # the attention.Variant computing it; "": none

    def __post_init__(self):
        # No variant combines the two, so their order is not defined here.
        assert not (self.alibi and self.cap), "ALiBi with soft-capping is not defined"
        assert self.causal or not self.windowed, "Loom's sliding window is causal"


VARIANTS = {
    "global": Spec("global", causal=False, loom="Global"),
    "causal": Spec("causal", loom="Causal"),
    "alibi": Spec("alibi", alibi=True, loom="ALiBi"),
    "softcap": Spec("softcap", cap=SOFT_CAP, loom="SoftCap"),
    "sliding_window": Spec("sliding_window", windowed=True, loom="SlidingWindow"),
    "gqa": Spec("gqa", gqa=True, loom="GroupedQuery"),
}
# Neptune's composites: Loom's composite variants (apps/attention/variants/composite.h).
CAPPED_GQA = Spec("softcap+gqa", cap=SOFT_CAP, gqa=True, loom="SoftCapGQA")
CAPPED_WINDOWED_GQA = Spec("window+softcap+gqa", cap=SOFT_CAP, windowed=True, gqa=True,
                           loom="WindowSoftCapGQA")
COMPOSITE_REASON = "composite variant not in apps/attention yet"


@dataclass(frozen=True)
class NeptuneOp:
    label: str
    spec: Spec
    decode: bool
    heads: int
    kv_heads: int
    window: int = 0


NEPTUNE = [
    NeptuneOp("prefill global", VARIANTS["global"], False, 32, 32),
    NeptuneOp("prefill causal", VARIANTS["causal"], False, 32, 32),
    NeptuneOp("prefill GQA", VARIANTS["gqa"], False, 64, 8),
    NeptuneOp("prefill ALiBi", VARIANTS["alibi"], False, 32, 32),
    NeptuneOp("prefill soft-capping", CAPPED_GQA, False, 64, 8),
    NeptuneOp("prefill windowed", CAPPED_WINDOWED_GQA, False, 64, 8, window=4096),
    NeptuneOp("decode causal", VARIANTS["causal"], True, 32, 32),
    NeptuneOp("decode GQA", VARIANTS["gqa"], True, 64, 8),
    NeptuneOp("decode ALiBi", VARIANTS["alibi"], True, 32, 32),
    # The same operator as prefill soft-capping, with one query per head.
    NeptuneOp("decode soft-capping", CAPPED_GQA, True, 64, 8),
]
NEPTUNE_TOKENS = 8192
NEPTUNE_HEAD_DIM = 128


def alibi_slopes(torch, heads, device):
    # float32, as Loom computes them (pow(2.0f, -8.0f * (h + 1) / H)).
    return torch.tensor([2.0 ** (-8.0 * (h + 1) / heads) for h in range(heads)],
                        dtype=torch.float32, device=device)


def reference(torch, spec, q, k, v, scale, window):
    """The operator in q's dtype (float32 or float64 inputs) over the whole
    score matrix: small sizes only. Written from the formulas, not from the
    score_mod / mask_mod below, so that the two can check each other."""
    hq, hkv = q.shape[1], k.shape[1]
    kv_head = torch.arange(hq, device=q.device) // (hq // hkv)
    k, v = k[:, kv_head], v[:, kv_head]
    s = torch.einsum("bhid,bhjd->bhij", q, k) * scale
    lq, lk = q.shape[2], k.shape[2]
    pos = torch.arange(lq, device=q.device)[:, None] + (lk - lq)
    j = torch.arange(lk, device=q.device)[None, :]
    if spec.alibi:
        slope = torch.pow(2.0, -8.0 * (torch.arange(hq, device=q.device, dtype=s.dtype) + 1) / hq)
        s = s - slope[:, None, None] * (pos - j).to(s.dtype)
    if spec.cap:
        s = spec.cap * torch.tanh(s / spec.cap)
    allowed = torch.ones(lq, lk, dtype=torch.bool, device=q.device)
    if spec.causal:
        allowed = j <= pos
    if spec.windowed:
        allowed = allowed & (j > pos - window)
    return softmax_rows_times_v(torch, s.masked_fill(~allowed, float("-inf")), v)


def softmax_rows_times_v(torch, s, v):
    """softmax(s) v, with a row whose scores are all -inf giving 0."""
    m = s.amax(-1, keepdim=True)
    live = m > float("-inf")
    p = torch.exp(s - torch.where(live, m, torch.zeros_like(m)))
    out = (p @ v) / torch.where(live, p.sum(-1, keepdim=True), torch.ones_like(m))
    return torch.where(live, out, torch.zeros_like(out))


def make_score_mod(torch, spec, lq, lk, heads, device):
    """FlexAttention's score_mod for spec (None: the scaled score itself).
    Flex passes the score already multiplied by scale, as Loom's variants
    modify it, and h is the query head."""
    offset = lk - lq  # query i is at position i + offset
    if spec.alibi:
        slopes = alibi_slopes(torch, heads, device)

        def alibi(score, b, h, q_idx, kv_idx):
            return score - slopes[h] * (q_idx + offset - kv_idx)
        return alibi
    if spec.cap:
        # The module's constant, not a captured float: Dynamo may make a
        # captured float symbolic, which flex's score_mod buffers refuse.
        assert spec.cap == SOFT_CAP

        def soft_cap(score, b, h, q_idx, kv_idx):
            return SOFT_CAP * torch.tanh(score / SOFT_CAP)
        return soft_cap
    return None


def make_mask_mod(spec, lq, lk, window):
    """FlexAttention's mask_mod for spec (None: no mask). Positions are
    aligned at the end (bottom right), as Loom's: with Lq = 1 the one query
    is the last position and sees every key."""
    offset = lk - lq
    if spec.windowed:
        def causal_window(b, h, q_idx, kv_idx):
            pos = q_idx + offset
            return (kv_idx <= pos) & (kv_idx > pos - window)
        return causal_window
    if spec.causal:
        def causal(b, h, q_idx, kv_idx):
            return kv_idx <= q_idx + offset
        return causal
    return None


def reference_through_mods(torch, spec, q, k, v, scale, window):
    """The result of the score_mod and mask_mod above applied to an
    explicit score matrix, with the index tensors broadcast as flex's vmap
    would give them one by one, and GQA heads repeated as flex does."""
    b_, hq, lq, _ = q.shape
    hkv, lk = k.shape[1], k.shape[2]
    k = k.repeat_interleave(hq // hkv, dim=1)
    v = v.repeat_interleave(hq // hkv, dim=1)
    s = torch.einsum("bhid,bhjd->bhij", q, k) * scale
    dev = q.device
    b = torch.arange(b_, device=dev).view(-1, 1, 1, 1)
    h = torch.arange(hq, device=dev).view(1, -1, 1, 1)
    qi = torch.arange(lq, device=dev).view(1, 1, -1, 1)
    kj = torch.arange(lk, device=dev).view(1, 1, 1, -1)
    score_mod = make_score_mod(torch, spec, lq, lk, hq, dev)
    if score_mod is not None:
        s = score_mod(s, b, h, qi, kj)
    mask_mod = make_mask_mod(spec, lq, lk, window)
    if mask_mod is not None:
        s = s.masked_fill(~mask_mod(b, h, qi, kj).expand_as(s), float("-inf"))
    return softmax_rows_times_v(torch, s, v)


def sdpa_arguments(torch, spec, lq, lk, grouped):
    """Keyword arguments of scaled_dot_product_attention computing spec, or
    NotAvailable. is_causal is SDPA's top-left alignment, which is Loom's
    only where Lq == Lk; with Lq = 1 the query sees every key (no mask)."""
    if spec.alibi or spec.cap:
        raise NotAvailable("a score modification: SDPA would need a materialized bias "
                           "(FlexAttention is the peer)")
    if spec.windowed:
        raise NotAvailable("a sliding window: SDPA would need a materialized mask "
                           "(FlexAttention is the peer)")
    kw = {}
    if grouped:
        kw["enable_gqa"] = True
    if spec.causal and lq == lk:
        kw["is_causal"] = True
    elif spec.causal and lq > 1:
        from torch.nn.attention.bias import causal_lower_right
        kw["attn_mask"] = causal_lower_right(lq, lk)
    return kw


def visible_pairs(spec, lq, lk, window):
    """Query-key pairs the operator's mask keeps (for flop counts)."""
    if not spec.causal:
        return lq * lk
    total = 0
    for pos in range(lk - lq, lk):
        seen = pos + 1
        total += min(seen, window) if spec.windowed else seen
    return total


# ---------------------------------------------------------------------------
# The self-check: the definitions above against each other and Loom's CPU
# kernels, with no GPU.


def self_check(torch):
    import loom
    from loom import attention, schedules
    if abs(float(attention.soft_cap) - SOFT_CAP) > 0:
        print(f"WRONG: this script's soft cap {SOFT_CAP} is not Loom's {attention.soft_cap}")
        return 1
    torch.manual_seed(46)
    flex_eager = None
    try:
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention
        flex_eager = flex_attention
        # Eager flex warns that it is unfused; that is the point here.
        warnings.filterwarnings("ignore", message=".*flex_attention called without torch.compile")
    except ImportError:
        print("FlexAttention is not in this PyTorch: its eager check is left out")
    specs = list(VARIANTS.values()) + [CAPPED_GQA, CAPPED_WINDOWED_GQA]
    batch, heads, dim, window = 2, 4, 16, 19
    shapes = [(77, 77), (1, 77), (13, 77)]
    target = loom.Target.host()
    failed = False
    t0 = time.perf_counter()
    for spec in specs:
        kernel = None
        if spec.loom:
            a = attention.AttentionVariant(getattr(attention.Variant, spec.loom), loom.Float(32))
            sch = loom.Schedule()
            schedules.flash_attention(sch, a.chain())
            kernel = loom.Pipeline(a.out).compile(sch, target, output_shape=0)
        kv_heads = heads // 2 if spec.gqa else heads
        scale = (16.0 if spec.cap else 1.0) / math.sqrt(dim)  # scores that reach the cap
        for lq, lk in shapes:
            q = torch.randn(batch, heads, lq, dim, dtype=torch.float64)
            k = torch.randn(batch, kv_heads, lk, dim, dtype=torch.float64)
            v = torch.randn(batch, kv_heads, lk, dim, dtype=torch.float64)
            want = reference(torch, spec, q, k, v, scale, window)
            errors = {"mods": (reference_through_mods(torch, spec, q, k, v, scale, window) - want)
                      .abs().max().item()}
            q32, k32, v32 = q.float(), k.float(), v.float()
            if flex_eager is not None:
                mask_mod = make_mask_mod(spec, lq, lk, window)
                block_mask = (create_block_mask(mask_mod, None, None, lq, lk, device="cpu")
                              if mask_mod else None)
                got = flex_eager(q32, k32, v32, score_mod=make_score_mod(torch, spec, lq, lk,
                                                                         heads, "cpu"),
                                 block_mask=block_mask, scale=scale, enable_gqa=spec.gqa)
                errors["flex"] = (got.double() - want).abs().max().item()
            try:
                kw = sdpa_arguments(torch, spec, lq, lk, spec.gqa)
                got = torch.nn.functional.scaled_dot_product_attention(q32, k32, v32, scale=scale,
                                                                       **kw)
                errors["sdpa"] = (got.double() - want).abs().max().item()
            except NotAvailable:
                pass
            if kernel is not None:
                extra = [window] if spec.windowed else []
                got = kernel(q32, k32, v32, scale, *extra)
                errors["loom"] = (got.double() - want).abs().max().item()
            # The mods in float64 but ALiBi's slopes in float32, as in flex.
            bounds = {"mods": 1e-6, "flex": 1e-4, "sdpa": 1e-4, "loom": 1e-4}
            bad = [n for n, e in errors.items() if not e <= bounds[n]]
            failed |= bool(bad)
            print(f"{spec.name:19} {lq:3}x{lk}: " +
                  "  ".join(f"{n} {e:.1e}" for n, e in errors.items()) +
                  (f"  WRONG ({', '.join(bad)})" if bad else "  ok"))
    print(f"({time.perf_counter() - t0:.1f} s)")
    print("self-check: " + ("WRONG" if failed else "ok"))
    return 1 if failed else 0


# ---------------------------------------------------------------------------
# The GPU benchmark.


@dataclass
class Case:
    phase: str  # "prefill" or "decode"
    label: str  # the row's name
    spec: Spec
    dtype: str  # "fp16" or "bf16"
    head_dim: int
    batch: int
    heads: int
    kv_heads: int
    seq_q: int
    seq_k: int
    window: int

    def group_key(self):
        # Cases sharing a check: the same kernels at another size.
        return (self.phase, self.spec.name, self.dtype, self.head_dim, self.heads > self.kv_heads)

    def describe(self):
        name = self.label if self.label.startswith(self.phase) else f"{self.phase} {self.label}"
        size = f"seq {self.seq_k}" if self.phase == "prefill" else f"{self.seq_k} keys"
        return f"{name} {self.dtype} d{self.head_dim} {size}"


def parse_list(text, option, convert=int, allowed=None):
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts:
        raise ValueError(f"{option} is empty")
    values = []
    for p in parts:
        try:
            value = convert(p)
        except ValueError:
            raise ValueError(f"{option}: '{p}' is not a valid entry") from None
        if allowed is not None and value not in allowed:
            raise ValueError(f"{option}: '{p}' is not one of {', '.join(map(str, allowed))}")
        if convert is int and value <= 0:
            raise ValueError(f"{option}: '{p}' is not a positive number")
        values.append(value)
    return values


class Bench:
    PEERS = ["SDPA-flash", "SDPA-cuDNN", "SDPA-eff", "Flex"]

    def __init__(self, torch, args):
        import loom
        from loom import attention, schedules
        self.torch, self.args = torch, args
        self.loom, self.attention, self.schedules = loom, attention, schedules
        self.device = torch.device("cuda")
        self.start = time.perf_counter()
        self.failed = []  # what was WRONG or failed in Loom
        self.skipped = []  # rows the budget left out
        self.reasons_shown = set()
        self.kernels = {}  # Loom's compiled kernels, per variant, dtype and options
        self.checks = {}  # group key -> {implementation: None (ok) or "n/a ..." / "WRONG"}
        self.tc_compile_seconds = []
        self.flex = None
        self.need_header = True
        self.copy_gbs = None
        self.targets = []  # (what, ratio or fraction, goal)
        from torch.nn.attention import SDPBackend
        self.sdpa_backends = {"SDPA-flash": SDPBackend.FLASH_ATTENTION,
                              "SDPA-cuDNN": SDPBackend.CUDNN_ATTENTION,
                              "SDPA-eff": SDPBackend.EFFICIENT_ATTENTION}

    # -- budget -----------------------------------------------------------

    def elapsed(self):
        return time.perf_counter() - self.start

    def out_of_time(self, deadline):
        return self.args.budget > 0 and self.elapsed() >= deadline

    # -- the implementations ------------------------------------------------

    def torch_dtype(self, name):
        return {"fp16": self.torch.float16, "bf16": self.torch.bfloat16}[name]

    def loom_kernel(self, case, kind, option=0):
        """Loom's kernel for case: kind "tc" (tensor cores), "cc" (CUDA
        cores) or "decode" (split_k into `option` pieces). Compiled once per
        variant, dtype, head dim and kind; sizes are run-time values."""
        if not case.spec.loom:
            raise NotAvailable(COMPOSITE_REASON)
        key = (case.spec.loom, case.dtype, case.head_dim, kind, option)
        if key not in self.kernels:
            ltype = self.loom.Float(16) if case.dtype == "fp16" else self.loom.BFloat(16)
            a = self.attention.AttentionVariant(getattr(self.attention.Variant, case.spec.loom),
                                                ltype)
            a.fix_head_dim(case.head_dim)
            sch = self.loom.Schedule()
            d = case.head_dim
            if kind == "tc":
                self.schedules.flash_attention_tensor_cores(sch, a.chain(), head_dim=d)
            elif kind == "tcd":
                self.schedules.flash_decoding_tensor_cores(sch, a.chain(), head_dim=d,
                                                           chunks=option)
            elif kind == "cc":
                self.schedules.flash_attention_gpu(sch, a.chain(), head_dim=d,
                                                   queries_per_block=64, key_tile=8)
            else:
                self.schedules.flash_decoding_gpu(sch, a.chain(), head_dim=d, chunks=option,
                                                  key_tile=16)
            t0 = time.perf_counter()
            k = self.loom.Pipeline(a.out).compile(sch, "host-cuda", output_shape=0)
            seconds = time.perf_counter() - t0
            if kind == "tc":
                self.tc_compile_seconds.append(seconds)
            self.kernels[key] = (k, seconds)
        return self.kernels[key]

    def implementations(self, case):
        if case.phase == "prefill":
            names = ["Loom-TC"]
            if (self.args.suite != "neptune" and
                    min(self.args.seqs) <= self.args.baseline_max_seq):
                names.append("Loom-CC")
        else:
            names = ["Loom-TCd", "Loom-64p", "Loom-256p"]
        return names + self.PEERS

    def decode_chunks(self, case):
        """split_k pieces for the tensor-core decode: about four blocks per
        SM over batch x query heads, at least a key tile (64) each."""
        sms = self.torch.cuda.get_device_properties(0).multi_processor_count
        rows = case.batch * case.heads
        return max(1, min(-(-4 * sms // rows), -(-case.seq_k // 64)))

    def prepare(self, name, case, q, k, v, scale):
        """A function running implementation `name` on these tensors and
        the context it runs in, or NotAvailable (a Loom compile error too:
        the caller tells a Loom failure from a composite's n/a)."""
        try:
            return self._prepare(name, case, q, k, v, scale)
        except NotAvailable:
            raise
        except Exception as e:
            raise NotAvailable(short(f"{type(e).__name__}: {e}")) from None

    def _prepare(self, name, case, q, k, v, scale):
        torch = self.torch
        window = case.window
        if name.startswith("Loom"):
            kind = {"Loom-TC": "tc", "Loom-CC": "cc", "Loom-TCd": "tcd"}.get(name, "decode")
            pieces = (int(name[5:-1]) if kind == "decode" else
                      self.decode_chunks(case) if kind == "tcd" else 0)
            kernel, _ = self.loom_kernel(case, kind, pieces)
            out = torch.empty_like(q)
            extra = [window] if case.spec.windowed else []
            return (lambda: kernel(q, k, v, scale, *extra, out) or out), None
        grouped = q.shape[1] != k.shape[1]
        lq, lk = q.shape[2], k.shape[2]
        if name.startswith("SDPA"):
            kw = sdpa_arguments(torch, case.spec, lq, lk, grouped)
            sdpa = torch.nn.functional.scaled_dot_product_attention
            from torch.nn.attention import sdpa_kernel
            backend = self.sdpa_backends[name]
            return (lambda: sdpa(q, k, v, scale=scale, **kw)), (lambda: sdpa_kernel([backend]))
        # FlexAttention, compiled for each new score_mod, mask and shape.
        if self.flex is None:
            try:
                from torch.nn.attention.flex_attention import flex_attention
            except ImportError:
                raise NotAvailable("no torch.nn.attention.flex_attention in this PyTorch") from None
            self.flex = torch.compile(flex_attention, dynamic=False)
        from torch.nn.attention.flex_attention import create_block_mask
        score_mod = make_score_mod(torch, case.spec, lq, lk, q.shape[1], q.device)
        mask_mod = make_mask_mod(case.spec, lq, lk, window)
        block_mask = (create_block_mask(mask_mod, None, None, lq, lk, device=q.device)
                      if mask_mod else None)
        flex = self.flex
        return (lambda: flex(q, k, v, score_mod=score_mod, block_mask=block_mask, scale=scale,
                             enable_gqa=grouped)), None

    def call(self, fn, context):
        """Runs fn once; a refusal becomes NotAvailable with a short reason
        (SDPA says why a backend refused in its warnings)."""
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                if context is None:
                    return fn()
                with context():
                    return fn()
            except NotAvailable:
                raise
            except Exception as e:  # a peer refusing, or a compiler failing
                said = [str(w.message).strip() for w in caught]
                said = [s for s in said if s and "runtime disabled" not in s]
                first = str(e).strip().splitlines()[0] if str(e).strip() else ""
                text = " / ".join([f"{type(e).__name__}: {first}"] + said)
                raise NotAvailable(short(text)) from None

    # -- checks -----------------------------------------------------------

    def check_group(self, case):
        """Checks every implementation of case's group once, at a small
        odd size, against the float32 reference. Prints one line."""
        key = case.group_key()
        if key in self.checks:
            return self.checks[key]
        torch = self.torch
        dt = self.torch_dtype(case.dtype)
        grouped = case.heads > case.kv_heads
        heads, kv_heads = (4, 2) if grouped else (2, 2)
        lq, lk = (77, 77) if case.phase == "prefill" else (1, 333)
        window = 19 if case.phase == "prefill" else 101
        d = case.head_dim
        small = Case(case.phase, case.label, case.spec, case.dtype, d, 1, heads, kv_heads, lq, lk,
                     window)
        gen = torch.Generator(device=self.device).manual_seed(len(self.checks) + 1)
        q = torch.randn(1, heads, lq, d, device=self.device, dtype=dt, generator=gen)
        k = torch.randn(1, kv_heads, lk, d, device=self.device, dtype=dt, generator=gen)
        v = torch.randn(1, kv_heads, lk, d, device=self.device, dtype=dt, generator=gen)
        # Soft-capping: scores large enough to reach the cap.
        scale = (16.0 if case.spec.cap else 1.0) / math.sqrt(d)
        want = reference(torch, case.spec, q.float(), k.float(), v.float(), scale, window)
        # One rounding of the output, P rounded to the input type before P V
        # (each weight off by a step of the type, so the sum by max |v|), sums
        # in float32: twice that.
        eps = 2.0 ** -11 if case.dtype == "fp16" else 2.0 ** -8
        bound = 2 * eps * (1 + want.abs()) + 2 * eps * v.float().abs().max()
        results, parts = {}, []
        for name in self.implementations(case):
            t0 = time.perf_counter()
            try:
                fn, context = self.prepare(name, small, q, k, v, scale)
                got = self.call(fn, context)
                torch.cuda.synchronize()
            except NotAvailable as e:
                results[name] = f"n/a ({e})"
                parts.append(f"{name} n/a")
                if name.startswith("Loom") and str(e) != COMPOSITE_REASON:
                    self.failed.append(f"{case.describe()}: {name} failed: {e}")
                    results[name] = "FAILED"
                    parts[-1] = f"{name} FAILED ({e})"
                continue
            seconds = time.perf_counter() - t0
            err = (got.float() - want).abs()
            worst = (err / bound).max().item()
            ok = worst <= 1.0  # False for NaN
            results[name] = None if ok else "WRONG"
            text = f"{name} {err.max().item():.1e} {'ok' if ok else 'WRONG'}"
            if name == "Loom-TC":
                compile_s = self.loom_kernel(small, "tc")[1]
                text += f" (JIT {compile_s:.2f} s: lowering + NVRTC, target < 2 s)"
            elif name == "Flex":
                text += f" (compile + first call {seconds:.1f} s)"
            parts.append(text)
            if not ok:
                self.failed.append(f"{case.describe()}: {name} WRONG against the reference "
                                   f"({err.max().item():.2e} at {lq}x{lk})")
        title = case.label if case.label.startswith(case.phase) else f"{case.phase} {case.label}"
        print(f"check {title} {case.dtype} d{d}, {heads}/{kv_heads} heads, {lq}x{lk}: " +
              ", ".join(parts))
        for name, r in results.items():
            if r and r.startswith("n/a") and (name, r) not in self.reasons_shown:
                self.reasons_shown.add((name, r))
                print(f"    {name}: {r}")
        self.checks[key] = results
        self.need_header = True
        return results

    # -- timing -----------------------------------------------------------

    def median_seconds(self, fn, context):
        """Median of per-call CUDA event times, after warm-up. The GPU is
        kept busy while the calls are queued, so the host's time per call
        (Python, guards) does not open gaps between them."""
        torch, args = self.torch, self.args
        with (context() if context else _nothing()):
            for _ in range(args.warmup):
                fn()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            fn()
            host = time.perf_counter() - t0
            torch.cuda.synchronize()
            one = time.perf_counter() - t0
            reps = max(3, min(args.reps, int(args.seconds_per_timing / max(one, 1e-6))))
            events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                      for _ in range(reps)]
            sleep = getattr(torch.cuda, "_sleep", None)
            if sleep is not None:
                # About 2e9 cycles a second; sleeping too long costs only time.
                sleep(int(min(0.2, 1.5 * host * reps + 1e-3) * 2e9))
            for start, end in events:
                start.record()
                fn()
                end.record()
            torch.cuda.synchronize()
        return statistics.median(s.elapsed_time(e) for s, e in events) / 1e3

    def copy_bandwidth(self):
        """GB/s of dst.copy_(src) for 1 GiB, reads and writes counted."""
        torch = self.torch
        src = torch.empty(1 << 29, dtype=torch.float16, device=self.device).fill_(1.0)
        dst = torch.empty_like(src)
        t = self.median_seconds(lambda: dst.copy_(src), None)
        return 2 * (1 << 30) / t / 1e9

    # -- rows -------------------------------------------------------------

    def run_case(self, case):
        checks = self.check_group(case)
        torch = self.torch
        dt = self.torch_dtype(case.dtype)
        d = case.head_dim
        shape_q = (case.batch, case.heads, case.seq_q, d)
        shape_kv = (case.batch, case.kv_heads, case.seq_k, d)
        q = torch.randn(shape_q, device=self.device, dtype=dt)
        k = torch.randn(shape_kv, device=self.device, dtype=dt)
        v = torch.randn(shape_kv, device=self.device, dtype=dt)
        scale = 1.0 / math.sqrt(d)
        rates, cells = {}, {}
        if case.phase == "prefill":
            pairs = visible_pairs(case.spec, case.seq_q, case.seq_k, case.window)
            work = 4.0 * case.batch * case.heads * d * pairs / 1e12  # TFLOP
        else:
            keys = min(case.seq_k, case.window) if case.spec.windowed else case.seq_k
            work = 2.0 * case.batch * case.kv_heads * keys * d * q.element_size() / 1e9  # GB
        for name in self.implementations(case):
            status = checks.get(name)
            if name == "Loom-CC" and case.seq_k > self.args.baseline_max_seq:
                cells[name] = "-"
                continue
            if status is not None:
                cells[name] = status.split(" ")[0]
                continue
            try:
                fn, context = self.prepare(name, case, q, k, v, scale)
                self.call(fn, context)  # compiles and loads, and may refuse this size
                try:
                    seconds = self.median_seconds(fn, context)
                except Exception as e:
                    raise NotAvailable(short(f"{type(e).__name__}: {e}")) from None
            except NotAvailable as e:
                cells[name] = "n/a"
                if name.startswith("Loom"):
                    cells[name] = "FAILED"
                    self.failed.append(f"{case.describe()}: {name} failed: {e}")
                reason = f"n/a ({e})"
                if (name, reason) not in self.reasons_shown:
                    self.reasons_shown.add((name, reason))
                    print(f"    {name} at {case.describe()}: {reason}")
                continue
            rates[name] = work / seconds
            cells[name] = f"{rates[name]:.1f}" if rates[name] >= 10 else f"{rates[name]:.3g}"
        del q, k, v
        return rates, cells

    def print_header(self, phase):
        if not self.need_header:
            return
        self.need_header = False
        names = self.implementations(Case(phase, "", VARIANTS["causal"], "fp16", 64, 1, 1, 1, 1,
                                          1, 0))
        copy = f" {'copy':>5}" if phase == "decode" else ""
        ratios = "".join(f" {'/' + p.split('-')[-1]:>7}" for p in self.PEERS)
        print(f"{'operator':22} {'dtype':5} {'D':>3} {'B':>3} {'Hq/Hkv':>6} {'Lk':>6} |" +
              "".join(f" {n:>10}" for n in names) + f" |{copy}{ratios}")

    def print_row(self, case, rates, cells):
        self.print_header(case.phase)
        if case.phase == "prefill":
            loom = rates.get("Loom-TC")
        else:  # the best of the split_k kernels
            loom = max((r for n, r in rates.items() if n.startswith("Loom")), default=None)
        ratios = ""
        for p in self.PEERS:
            r = loom / rates[p] if loom and p in rates else None
            ratios += f" {r:7.2f}" if r else f" {'-':>7}"
        copy = ""
        if case.phase == "decode":
            frac = loom / self.copy_gbs if loom else None
            copy = f" {frac:5.2f}" if frac else f" {'-':>5}"
            if frac and case.seq_k >= 32768:
                self.targets.append((f"{case.describe()}: Loom / copy", frac, 0.8))
        elif loom:
            peer, goal = (("SDPA-flash", 1.0) if case.spec.name in ("global", "causal")
                          else ("Flex", 0.9))
            if peer in rates:
                self.targets.append((f"{case.describe()}: Loom-TC / {peer}", loom / rates[peer],
                                     goal))
        heads = f"{case.heads}/{case.kv_heads}"
        print(f"{case.label:22} {case.dtype:5} {case.head_dim:3} {case.batch:3} {heads:>6} "
              f"{case.seq_k:6} |" +
              "".join(f" {cells.get(n, '-'):>10}" for n in self.implementations(case)) +
              f" |{copy}{ratios}")
        sys.stdout.flush()

    def run(self, cases):
        torch = self.torch
        props = torch.cuda.get_device_properties(0)
        triton = "?"
        try:
            import triton as triton_module
            triton = triton_module.__version__
        except ImportError:
            pass
        print(f"# attention_bench: {props.name}, {props.multi_processor_count} SMs; PyTorch "
              f"{torch.__version__} (CUDA {torch.version.cuda}), Triton {triton}; suite "
              f"{self.args.suite}{', quick' if self.args.quick else ''}; budget "
              f"{f'{self.args.budget:g} s' if self.args.budget > 0 else 'none'}")
        # Raise Dynamo's recompile limit: every flex row is a new score_mod
        # and shape, and past the limit it would fall back to eager flex,
        # which materializes the scores.
        try:
            import torch._dynamo as dynamo
            for name in ("cache_size_limit", "recompile_limit", "accumulated_cache_size_limit",
                         "accumulated_recompile_limit"):
                if hasattr(dynamo.config, name):
                    setattr(dynamo.config, name, 4096)
        except ImportError:
            pass
        prefill = [c for c in cases if c.phase == "prefill"]
        decode = [c for c in cases if c.phase == "decode"]
        share = 0.65 if prefill and decode else 1.0
        for phase, group, deadline in (("prefill", prefill, self.args.budget * share),
                                       ("decode", decode, self.args.budget)):
            if not group:
                continue
            print()
            if self.out_of_time(deadline):
                print(f"## {phase}: skipped, the budget being spent")
                self.skipped += [case.describe() for case in group]
                continue
            if phase == "prefill":
                print("## prefill: TFLOP/s (4 B Hq D flops per visible query-key pair), median of "
                      "per-call CUDA events; last columns: Loom-TC / peer (above 1: Loom faster)")
            else:
                self.copy_gbs = self.copy_bandwidth()
                print(f"## decode (one query per head): GB/s of K and V read; device-to-device "
                      f"copy of 1 GiB: {self.copy_gbs:.0f} GB/s (reads + writes); last columns: "
                      f"the best Loom / copy, and / each peer")
            self.need_header = True
            for n, case in enumerate(group):
                if self.out_of_time(deadline):
                    print(f"(the budget is spent: {len(group) - n} {phase} rows left out, listed "
                          f"at the end)")
                    self.skipped += [c.describe() for c in group[n:]]
                    break
                rates, cells = self.run_case(case)
                self.print_row(case, rates, cells)
        self.summary()
        return 1 if self.failed else 0

    def summary(self):
        print()
        if self.tc_compile_seconds:
            lo, hi = min(self.tc_compile_seconds), max(self.tc_compile_seconds)
            print(f"Loom-TC JIT compile (lowering + NVRTC): {lo:.2f} - {hi:.2f} s over "
                  f"{len(self.tc_compile_seconds)} kernels (target < 2 s"
                  f"{': met' if hi < 2 else ': NOT met'})")
        if self.targets:
            met = [t for t in self.targets if t[1] >= t[2]]
            print(f"issue 46 targets: {len(met)} of {len(self.targets)} rows met")
            for what, value, goal in self.targets:
                if value < goal:
                    print(f"    below: {what} {value:.2f} (target {goal})")
        if self.skipped:
            print(f"skipped, the budget of {self.args.budget:g} s being spent "
                  f"({len(self.skipped)} rows): " + "; ".join(self.skipped))
        print(f"({self.elapsed():.0f} s)")
        for f in self.failed:
            print(f"FAILED: {f}")


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def short(text, limit=200):
    text = " ".join(text.replace("Warning", "warning").split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def fill_batch(tokens, heads, seq, most=None):
    b = max(1, tokens // (heads * seq))
    return min(b, most) if most else b


def default_cases(args):
    cases = []
    names = args.variants
    for dtype in args.dtypes:
        for name in names:
            spec = VARIANTS[name]
            for d in args.head_dims:
                for seq in args.seqs:
                    hkv = args.heads // args.gqa_group if spec.gqa else args.heads
                    cases.append(Case("prefill", name, spec, dtype, d,
                                      fill_batch(args.tokens, args.heads, seq), args.heads, hkv,
                                      seq, seq, seq // 2))
    decode_names = [n for n in names if n != "global"]  # one query: global is causal
    for dtype in args.dtypes:
        for name in decode_names:
            spec = VARIANTS[name]
            for d in args.head_dims:
                for keys in args.decode_keys:
                    hkv = args.heads // args.gqa_group if spec.gqa else args.heads
                    # Enough keys and values to be well past L2 (about 1 GiB
                    # at the defaults).
                    cases.append(Case("decode", name, spec, dtype, d,
                                      fill_batch(args.decode_tokens, hkv, keys, 32), args.heads,
                                      hkv, 1, keys, keys // 2))
    return cases


def neptune_cases(args):
    cases = []
    for op in NEPTUNE:
        seq = NEPTUNE_TOKENS
        if op.decode:
            batch = fill_batch(args.decode_tokens, op.kv_heads, seq, 32)
            cases.append(Case("decode", op.label, op.spec, "fp16", NEPTUNE_HEAD_DIM, batch,
                              op.heads, op.kv_heads, 1, seq, op.window))
        else:
            batch = fill_batch(args.tokens, op.heads, seq, 32)
            cases.append(Case("prefill", op.label, op.spec, "fp16", NEPTUNE_HEAD_DIM, batch,
                              op.heads, op.kv_heads, seq, seq, op.window))
    return cases


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", default="default", choices=["default", "neptune"])
    ap.add_argument("--self-check", action="store_true",
                    help="check the peers' definitions and Loom's CPU kernels on the CPU")
    ap.add_argument("--quick", action="store_true",
                    help="fp16, seq 8192, decode at 32768 keys (causal, gqa): a short run")
    ap.add_argument("--budget", type=float, default=0,
                    help="seconds after which no new row starts (0: no limit)")
    ap.add_argument("--seqs", default="1024,2048,4096,8192,16384")
    ap.add_argument("--head-dims", default="64,128")
    ap.add_argument("--dtypes", default="fp16,bf16")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--decode-keys", default="8192,32768,131072")
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--gqa-group", type=int, default=4, help="query heads per K/V head (gqa)")
    ap.add_argument("--tokens", type=int, default=16384 * 32,
                    help="batch x heads x seq of a prefill row")
    ap.add_argument("--decode-tokens", type=int, default=1 << 21,
                    help="batch x K/V heads x keys of a decode row")
    ap.add_argument("--baseline-max-seq", type=int, default=8192,
                    help="longest seq timed with the CUDA-core baseline (Loom-CC)")
    ap.add_argument("--reps", type=int, default=20, help="most timed calls per measurement")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--seconds-per-timing", type=float, default=0.25)
    args = ap.parse_args(argv)
    try:
        if args.quick:
            defaults = {"--seqs": "8192", "--dtypes": "fp16", "--decode-keys": "32768",
                        "--variants": "causal,global,gqa,alibi,softcap,sliding_window"}
            for option, value in defaults.items():
                attr = option[2:].replace("-", "_")
                if getattr(args, attr) == ap.get_default(attr):
                    setattr(args, attr, value)
            args.reps = min(args.reps, 10)
        args.seqs = parse_list(args.seqs, "--seqs")
        args.decode_keys = parse_list(args.decode_keys, "--decode-keys")
        args.head_dims = parse_list(args.head_dims, "--head-dims")
        for d in args.head_dims:
            if d % 16:
                raise ValueError(f"--head-dims: {d} is no multiple of 16 (the tensor-core tiles)")
        args.dtypes = parse_list(args.dtypes, "--dtypes", str, ["fp16", "bf16"])
        args.variants = parse_list(args.variants, "--variants", str, list(VARIANTS))
        if args.heads <= 0 or args.gqa_group <= 0 or args.heads % args.gqa_group:
            raise ValueError(f"--gqa-group ({args.gqa_group}) must divide --heads ({args.heads})")
        if args.reps < 1 or args.warmup < 0 or args.budget < 0:
            raise ValueError("--reps must be at least 1, --warmup and --budget at least 0")
    except ValueError as e:
        ap.error(str(e))
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        import torch
    except ImportError:
        print("PyTorch is not installed: skipped")
        return SKIPPED
    if args.self_check:
        return self_check(torch)
    if not torch.cuda.is_available():
        print("no CUDA device: skipped")
        return SKIPPED
    cases = neptune_cases(args) if args.suite == "neptune" else default_cases(args)
    if args.suite == "neptune" and args.quick:
        args.reps = min(args.reps, 10)
    return Bench(torch, args).run(cases)


if __name__ == "__main__":
    sys.exit(main())
