"""GPU pipelines from Python on the stand-in CUDA driver (test/fake_cuda),
which runs the generated CUDA C++ on the CPU: host arrays given to a GPU
pipeline are copied to the "GPU" and the outputs back. Runs in a
subprocess, since the driver is chosen when the first GPU pipeline runs.
LOOM_FAKE_CUDA_DRIVER names it (scripts/test.sh sets it)."""
import os
import subprocess
import sys

import pytest

DRIVER = os.environ.get("LOOM_FAKE_CUDA_DRIVER", "")

SCRIPT = r"""
import numpy as np
import loom
from loom import attention, schedules

rng = np.random.default_rng()
# An elementwise kernel on a grid of blocks, with a Param.
a = loom.BufferParam(loom.Float(32), 2, "a")
g = loom.Param(loom.Float(32), "g")
y, x, xo, xi = loom.Var("y"), loom.Var("x"), loom.Var("xo"), loom.Var("xi")
f = loom.Func("f")
f[y, x] = a[y, x] * g + 1.0
sch = loom.Schedule()
sch[f].gpu_tile(x, xo, xi, 32).gpu_blocks(xo, y)
k = loom.Pipeline(f).compile(sch, "host-cuda-sm_90", output_shape=0)
assert k.uses_gpu()
v = rng.standard_normal((5, 77)).astype(np.float32)
out = np.zeros_like(v)
k(v, 3.0, out)                      # host arrays: copied in and back
np.testing.assert_allclose(out, v * 3 + 1, rtol=1e-6)
np.testing.assert_allclose(k(v, 2.0), v * 2 + 1, rtol=1e-6)

# FlashAttention on CUDA cores, the template scheduling the causal variant.
att = attention.AttentionVariant(attention.Variant.Causal, loom.Float(32))
att.fix_head_dim(16)
sch = loom.Schedule()
schedules.flash_attention_gpu(sch, att.chain(), queries_per_block=32, head_dim=16)
k = loom.Pipeline(att.out).compile(sch, "host-cuda-sm_90", output_shape=0)
q, kk, vv = (rng.standard_normal((1, 2, 45, 16)).astype(np.float32) for _ in range(3))
got = k(q, kk, vv, 0.25)
s = np.einsum("bhid,bhjd->bhij", q.astype(np.float64), kk.astype(np.float64)) * 0.25
s = np.where(np.arange(45)[None, :] <= np.arange(45)[:, None], s, -np.inf)
p = np.exp(s - s.max(-1, keepdims=True))
want = np.einsum("bhij,bhjd->bhid", p / p.sum(-1, keepdims=True), vv.astype(np.float64))
np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)

# A tensor-core matrix product (tile_program + tensorize, the GEMM template)
# with a fused epilogue, at sizes no multiple of the tiles.
A, B = loom.BufferParam(loom.Float(16), 2, "A"), loom.BufferParam(loom.Float(16), 2, "B")
i, j = loom.Var("i"), loom.Var("j")
r = loom.RDom(0, A.dim(1).extent(), name="r")
acc, C = loom.Func("acc"), loom.Func("C")
acc[i, j] = 0.0
acc[i, j] += loom.cast(loom.Float(32), A[i, r]) * loom.cast(loom.Float(32), B[r, j])
C[i, j] = loom.max(acc[i, j], 0.0)
sch = loom.Schedule()
schedules.gemm_tensor_cores(sch, C, acc, i, j, rows=32, cols=32, warps=(2, 2), k_tile=32)
k = loom.Pipeline(C).compile(sch, "host-cuda-sm_80", output_shape=lambda a, b: (a.shape[0], b.shape[1]))
a = rng.standard_normal((37, 70)).astype(np.float16)
b = rng.standard_normal((70, 45)).astype(np.float16)
want = np.maximum(a.astype(np.float64) @ b.astype(np.float64), 0)
np.testing.assert_allclose(k(a, b), want, rtol=1e-4, atol=1e-3)

# FlashAttention on tensor cores: the tile-program template on the causal
# variant in fp16, P rounded to fp16 for P V (a step of 2^-11 per weight).
att = attention.AttentionVariant(attention.Variant.Causal, loom.Float(16))
att.fix_head_dim(64)
sch = loom.Schedule()
schedules.flash_attention_tensor_cores(sch, att.chain(), head_dim=64)
k = loom.Pipeline(att.out).compile(sch, "host-cuda-sm_80", output_shape=0)
q, kk, vv = (rng.uniform(-1, 1, (1, 1, 70, 64)).astype(np.float16) for _ in range(3))
got = k(q, kk, vv, 0.125).astype(np.float64)
s = np.einsum("bhid,bhjd->bhij", q.astype(np.float64), kk.astype(np.float64)) * 0.125
s = np.where(np.arange(70)[None, :] <= np.arange(70)[:, None], s, -np.inf)
p = np.exp(s - s.max(-1, keepdims=True))
want = np.einsum("bhij,bhjd->bhid", p / p.sum(-1, keepdims=True), vv.astype(np.float64))
np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3)

# FlashDecoding on tensor cores: split_k over tile programs, 3 chunks of
# the keys, one query over 150 keys (a partial last tile).
att = attention.AttentionVariant(attention.Variant.Causal, loom.Float(16))
att.fix_head_dim(64)
sch = loom.Schedule()
schedules.flash_decoding_tensor_cores(sch, att.chain(), head_dim=64, chunks=3)
k = loom.Pipeline(att.out).compile(sch, "host-cuda-sm_80", output_shape=0)
q = rng.uniform(-1, 1, (1, 2, 1, 64)).astype(np.float16)
kk, vv = (rng.uniform(-1, 1, (1, 2, 150, 64)).astype(np.float16) for _ in range(2))
got = k(q, kk, vv, 0.125).astype(np.float64)
s = np.einsum("bhid,bhjd->bhij", q.astype(np.float64), kk.astype(np.float64)) * 0.125
p = np.exp(s - s.max(-1, keepdims=True))
want = np.einsum("bhij,bhjd->bhid", p / p.sum(-1, keepdims=True), vv.astype(np.float64))
np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3)
print("ok")
"""


@pytest.mark.skipif(not DRIVER, reason="LOOM_FAKE_CUDA_DRIVER (the stand-in driver) not given")
def test_gpu_pipelines_on_the_stand_in_driver():
    env = dict(os.environ, LOOM_CUDA_DRIVER=DRIVER, LOOM_FAKE_CUDA_RUN_KERNELS="1")
    r = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr
