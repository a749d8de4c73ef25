"""The schedule templates and attention variants from Python, and an
attention written in Python scheduled by loom.schedules.flash_attention."""
import numpy as np
import pytest

import loom
from loom import attention, schedules


def reference(q, k, v, scale, causal):
    s = np.einsum("bhid,bhjd->bhij", q.astype(np.float64), k.astype(np.float64)) * scale
    if causal:
        lq, lk = s.shape[2], s.shape[3]
        allowed = np.arange(lk)[None, :] <= np.arange(lq)[:, None] + lk - lq
        s = np.where(allowed, s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return np.einsum("bhij,bhjd->bhid", p / p.sum(-1, keepdims=True), v.astype(np.float64))


@pytest.mark.parametrize("variant", [attention.Variant.Global, attention.Variant.Causal])
def test_variant_with_flash_attention_template(rng, variant):
    a = attention.AttentionVariant(variant, loom.Float(32))
    sch = loom.Schedule()
    schedules.flash_attention(sch, a.chain(), query_block=8, key_tile=32)
    k = loom.Pipeline(a.out).compile(sch, output_shape=0)
    shape = (1, 2, 75, 16)
    q, kk, v = (rng.standard_normal(shape).astype(np.float32) for _ in range(3))
    out = k(q, kk, v, 0.25)
    np.testing.assert_allclose(out, reference(q, kk, v, 0.25, variant == attention.Variant.Causal),
                               rtol=1e-4, atol=1e-5)
    assert [x.name for x in k.arguments()] == ["q", "k", "v", "scale", "out"]
    assert any("rolling_update" in line for line in k.compile_log())


@pytest.mark.parametrize("variant", [attention.Variant.Global, attention.Variant.Causal])
def test_flash_attention_as_a_tile_program(rng, variant):
    """head_dim makes flash_attention one tile program per tile of queries."""
    a = attention.AttentionVariant(variant, loom.Float(32))
    a.fix_head_dim(24)
    sch = loom.Schedule()
    schedules.flash_attention(sch, a.chain(), head_dim=24, tile_queries=16, key_tile=16)
    k = loom.Pipeline(a.out).compile(sch, output_shape=0)
    shape = (2, 2, 53, 24)
    q, kk, v = (rng.standard_normal(shape).astype(np.float32) for _ in range(3))
    np.testing.assert_allclose(k(q, kk, v, 0.3),
                               reference(q, kk, v, 0.3, variant == attention.Variant.Causal),
                               rtol=1e-4, atol=1e-5)
    assert "tile_row" in k.lowered_stmt
    with pytest.raises(loom.RuntimeError, match="exactly 24"):
        k(q[..., :16].copy(), kk[..., :16].copy(), v[..., :16].copy(), 0.3)


def test_flash_decoding_template(rng):
    a = attention.AttentionVariant(attention.Variant.Causal, "float32")
    sch = loom.Schedule()
    schedules.flash_decoding(sch, a.chain(), chunks=4, key_tile=16)
    k = loom.Pipeline(a.out).compile(sch, output_shape=0)
    q = rng.standard_normal((1, 3, 1, 16)).astype(np.float32)
    kk, v = (rng.standard_normal((1, 3, 203, 16)).astype(np.float32) for _ in range(2))
    np.testing.assert_allclose(k(q, kk, v, 0.3), reference(q, kk, v, 0.3, True),
                               rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("variant", [attention.Variant.Global, attention.Variant.Causal])
def test_flash_decoding_as_tile_programs(rng, variant):
    """head_dim makes each chunk of flash_decoding a tile program (split_k
    over tile programs), its partials combined with the derived repairs."""
    a = attention.AttentionVariant(variant, loom.Float(32))
    a.fix_head_dim(24)
    sch = loom.Schedule()
    schedules.flash_decoding(sch, a.chain(), chunks=5, key_tile=16, head_dim=24, tile_queries=4)
    k = loom.Pipeline(a.out).compile(sch, output_shape=0)
    assert any("each chunk rolled by the tile program" in line for line in k.compile_log())
    causal = variant == attention.Variant.Causal
    for queries, keys in ((1, 203), (3, 37), (2, 0)):
        q = rng.standard_normal((2, 3, queries, 24)).astype(np.float32)
        kk, v = (rng.standard_normal((2, 3, keys, 24)).astype(np.float32) for _ in range(2))
        got = k(q, kk, v, 0.3)
        if keys == 0:
            assert not got.any()
            continue
        np.testing.assert_allclose(got, reference(q, kk, v, 0.3, causal), rtol=1e-4, atol=1e-5)


def test_python_attention_scheduled_by_the_template(rng):
    """An attention algorithm written in Python, scheduled by the C++ template."""
    qb = loom.BufferParam(loom.Float(32), 4, "q")
    kb = loom.BufferParam(loom.Float(32), 4, "k")
    vb = loom.BufferParam(loom.Float(32), 4, "v")
    b, h, i, j, d = (loom.Var(n) for n in "bhijd")
    e = loom.RDom(0, qb.dim(3).extent(), name="e")
    r = loom.RDom(0, kb.dim(2).extent(), name="r")
    s, m, p, l, o, out = (loom.Func(n) for n in ("s", "m", "p", "l", "o", "out"))
    s[b, h, i, j] = loom.sum(qb[b, h, i, e] * kb[b, h, j, e]) * 0.125
    m[b, h, i] = loom.maximum(s[b, h, i, r])
    p[b, h, i, j] = loom.exp(s[b, h, i, j] - m[b, h, i])
    l[b, h, i] = loom.sum(p[b, h, i, r])
    o[b, h, i, d] = loom.sum(p[b, h, i, r] * vb[b, h, r, d])
    out[b, h, i, d] = o[b, h, i, d] / l[b, h, i]
    chain = schedules.AttentionChain(s=s, p=p, o=o, out=out, b=b, h=h, i=i, j=j, d=d, r=r)
    sch = loom.Schedule()
    schedules.flash_attention(sch, chain, query_block=4, key_tile=16, vector=4)
    k = loom.Pipeline(out).compile(sch, output_shape=0)
    q, kk, v = (rng.standard_normal((2, 1, 37, 8)).astype(np.float32) for _ in range(3))
    np.testing.assert_allclose(k(q, kk, v), reference(q, kk, v, 0.125, False), rtol=1e-4, atol=1e-5)
    with pytest.raises(TypeError, match="unexpected option 'query_blok'"):
        schedules.flash_attention(loom.Schedule(), chain, query_blok=4)
    # The tile-program forms compute the scores' product as a dot: they need
    # it named (the chain's qk), and say so.
    for template in (schedules.flash_attention, schedules.flash_decoding):
        with pytest.raises(loom.CompileError, match="the chain has no qk.*head_dim 0 for loops"):
            template(loom.Schedule(), chain, head_dim=8)
    with pytest.raises(loom.CompileError, match="flash_decoding_tensor_cores: the chain has no qk"):
        schedules.flash_decoding_tensor_cores(loom.Schedule(), chain, head_dim=8)
