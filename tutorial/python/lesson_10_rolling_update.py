"""Lesson 10: from softmax to FlashAttention with rolling_update.

Attention is a chain of reductions over the keys: a row max m, a sum of
exponentials l, and a weighted sum o of the values, where l and o read the
FINAL value of m. Written plainly, that is three passes over the keys.
FlashAttention computes all three in ONE pass: it keeps running values and
rescales l and o whenever the running max grows.

In Loom you keep writing the plain chain. The schedule directive
rolling_update(o, r) asks for the one-pass version; the compiler finds the
chain, DERIVES the rescaling (the "repair"), proves it correct, and
refuses chains where no repair exists. This lesson walks from a plain
softmax to FlashAttention's loop structure.
"""
import re
import sys

import numpy as np

import loom

failures = []


def fail(message):
    print(message)
    failures.append(message)


def check(what, got, interpreted, expected):
    """Compares a result with the reference interpreter's and with NumPy's
    float64 computation, and reports the largest difference."""
    got = np.asarray(got, dtype=np.float64)
    interpreted = np.asarray(interpreted, dtype=np.float64)
    tol = 1e-5 * (1 + np.abs(expected))
    bad = ~((np.abs(got - interpreted) <= tol) & (np.abs(got - expected) <= tol))
    if got.shape != expected.shape:
        return fail(f"  {what}: shape {got.shape}, expected {expected.shape}")
    if bad.any():
        y, x = np.argwhere(bad)[0]
        return fail(f"  {what}: ({y}, {x}) is {got[y, x]}; the interpreter says "
                    f"{interpreted[y, x]}, NumPy says {expected[y, x]}")
    print(f"  {what} matches (largest difference from NumPy: {np.abs(got - expected).max():.1e})")


def print_log(kernel):
    for line in kernel.compile_log():
        print(f"  log: {line}")


def main():
    rng = np.random.default_rng()

    # Seven queries q(i, e) attend to fifty keys k(j, e) (vectors of eight),
    # averaging the values v(j, d) (vectors of five). 50 keys are not a
    # multiple of the tile size used later, nor 7 queries of the query
    # block, on purpose.
    N, L, E, D = 7, 50, 8, 5
    q = loom.BufferParam(loom.Float(32), 2, "q")
    k = loom.BufferParam(loom.Float(32), 2, "k")
    v = loom.BufferParam(loom.Float(32), 2, "v")
    i, j, d = loom.Var("i"), loom.Var("j"), loom.Var("d")
    e = loom.RDom(0, q.dim(1).extent(), name="e")
    r = loom.RDom(0, k.dim(0).extent(), name="r")  # over the keys

    # The scores, and the row softmax written the textbook way: subtract the
    # row max (so that exp cannot overflow), exponentiate, normalize.
    s, m, p, l, softmax = (loom.Func(n) for n in ("s", "m", "p", "l", "softmax"))
    s[i, j] = loom.sum(q[i, e] * k[j, e]) * 0.5
    m[i] = loom.maximum(s[i, r])
    p[i, j] = loom.exp(s[i, j] - m[i])
    l[i] = loom.sum(p[i, r])
    softmax[i, j] = p[i, j] / l[i]

    # Attention's output is the softmax-weighted average of the values.
    # Dividing by l once at the end, instead of once per term, is the usual
    # arrangement: o sums the unnormalized weights p.
    o, out = loom.Func("o"), loom.Func("out")
    o[i, d] = loom.sum(p[i, r] * v[r, d])
    out[i, d] = o[i, d] / l[i]

    # Random inputs. The kernels take them as arguments; the reference
    # interpreter reads them from the BufferParams, bound with set().
    Q = rng.standard_normal((N, E)).astype(np.float32)
    K = (2 * rng.standard_normal((L, E))).astype(np.float32)
    V = rng.standard_normal((L, D)).astype(np.float32)
    q.set(loom.Buffer(Q))
    k.set(loom.Buffer(K))
    v.set(loom.Buffer(V))

    # The same in NumPy (in float64), for checking: the softmax weights of
    # each row over its first `seen` keys, and the weighted average.
    scores = (Q.astype(np.float64) @ K.astype(np.float64).T) * 0.5

    def weights_of(row, seen):
        w = np.exp(scores[row, :seen] - scores[row, :seen].max())
        return w / w.sum()

    want_softmax = np.stack([weights_of(y, L) for y in range(N)])
    want_out = want_softmax @ V.astype(np.float64)
    out_shape = lambda q, k, v: (q.shape[0], v.shape[1])  # noqa: E731

    # ---- 1. The plain chain with an ordinary schedule.
    # compute_root on each reduction gives the textbook three passes over
    # the keys per row: one for m, one for l, one for o. The scores are
    # stored whole: N x L floats.
    print("1. softmax and attention, one pass per reduction")
    sm = loom.Pipeline(softmax).compile(output_shape=lambda q, k: (q.shape[0], k.shape[0]))
    check("softmax", sm(Q, K), loom.interpret(softmax, [N, L]), want_softmax)

    attention = loom.Pipeline(out)
    reference = np.asarray(loom.interpret(out, [N, D]))
    plain = loom.Schedule()
    for f in (s, m, l, o):
        plain[f].compute_root()
    print(attention.print_loop_nest(plain))
    check("attention, plain", attention.compile(plain, output_shape=out_shape)(Q, K, V),
          reference, want_out)

    # ---- 2. One pass: rolling_update(o, r).
    # Fusing m, l and o into one loop over r means that at key j only the
    # RUNNING max m_j is known. Every term of o was added as
    #   g(m, c) = exp(s - m) * v
    # with whatever m was then. When the max moves from m to m', the partial
    # sum t must be repaired by some h(t, m, m'). Two properties make a
    # repair exact, and the compiler proves both before using it:
    #   (1) it fixes one term:      h(g(m, c), m, m') = g(m', c)
    #   (2) it distributes over +:  h(t1 + t2, m, m') = h(t1) + h(t2)
    # (1) says a term added against an old max becomes the term against the
    # new max; (2) says one h applied to a partial SUM does that for every
    # term in it at once. For softmax, h(t) = t * exp(m - m'):
    # exp(s - m) * exp(m - m') = exp(s - m'), and a product distributes over
    # a sum. The same repair keeps l right. The division out = o / l runs
    # after the loop, on the final values.
    print("\n2. rolling_update(o, r): one pass, repaired at every key")
    one_pass = loom.Schedule()
    one_pass.rolling_update(o, r)
    one_pass[o].compute_root()  # s stays inline: the log shows its sum, sum$0
    fused = attention.compile(one_pass, output_shape=out_shape)
    print_log(fused)
    print(attention.print_loop_nest(one_pass))
    check("attention, rolling_update", fused(Q, K, V), reference, want_out)

    # The log names the derived repair; it is the FlashAttention rescaling.
    log = "\n".join(fused.compile_log())
    # Each repair line reads "repair h(t, m, m') = ... (<kind> repair, <proof>)".
    repairs = sorted(set(re.findall(r"repair (h\(t, m, m'\) = .*?) \(\w+ repair", log)))
    for repair in repairs:
        print(f"  the derived repair: {repair}")
    if "h(t, m, m') = t * exp" not in log or "proved symbolically" not in log:
        fail("expected the rescaling repair, proved symbolically")

    # ---- 3. FlashAttention: tiles of keys, blocks of queries.
    # Split r into tiles of 16 keys. Per tile the compiler makes m_tile, the
    # running max after the tile (m's value, then the tile's scores); then
    # l_tile and o_tile, the running l and o after the tile: each starts
    # from the running value repaired once to the new max, and adds the
    # tile's terms taken against it, as FlashAttention-2 does. The step then
    # copies them back into m, l and o. p reads m, so inside the loop it
    # reads that running max: the log says so. The scores and probabilities
    # are computed per tile with compute_at(o, ro), so no Func is ever
    # stored over all the keys.
    #
    # Add blocks of queries, and this is FlashAttention's structure: for
    # each block of queries (io), loop over the key tiles (ro); per tile,
    # compute the block's scores against the tile (a small matrix product),
    # their max and exponentials, then rescale the block's running l and o
    # and accumulate the tile into them. reorder(ro, i) puts the queries of
    # the block inside the tile loop, so one tile of scores serves the block.
    print("\n3. FlashAttention: blocks of 4 queries, tiles of 16 keys")
    io, ii = loom.Var("io"), loom.Var("ii")
    ro, ri = loom.RVar("ro"), loom.RVar("ri")
    flash = loom.Schedule()
    flash[out].split(i, io, ii, 4)
    flash.rolling_update(o, r).split(r, ro, ri, 16).reorder(ro, i)
    flash[o].compute_at(out, io)
    flash[s].compute_at(o, ro)
    flash[p].compute_at(o, ro)
    tiled = attention.compile(flash, output_shape=out_shape)
    print_log(tiled)
    print(attention.print_loop_nest(flash))
    check("attention, FlashAttention tiles", tiled(Q, K, V), reference, want_out)

    # The lowered statement starts with the same log, as comments. Inside
    # the tile loop, l_tile starts from l rescaled by exp(m - m_tile) (a
    # select skips the rescaling while the max has not moved, or m is still
    # -inf), the tile's exponentials are added to it only if m_tile is not
    # -inf (every score so far masked: there is nothing to add, and
    # exp(-inf + inf) would be NaN), one test per tile; then m and l take
    # the tile's values (o likewise).
    print("\nfrom the lowered statement:")
    stmt = attention.compile_to_lowered_stmt(flash)
    for line in tiled.compile_log():
        if "repair h(" in line and "// " + line not in stmt:
            fail("the lowered statement does not start with the log")
    shown = 0
    for line in stmt.splitlines():
        line = line.strip()
        if not line:
            continue
        l_tile = line.startswith("l_tile[")
        test = "if ((m_tile[" in line
        step = (line.startswith("m[") and "m_tile[" in line) or \
            (line.startswith("l[") and "l_tile[" in line)
        if l_tile or test or step:
            print(f"  {line}")
            shown += 1
    if shown < 4:
        fail("expected l_tile's start, its test and sum, and the steps of m and l")

    # ---- 3b. A mask: tiles with nothing in them are skipped.
    # Causal attention lets query i see only the keys up to its position;
    # the others get the score -inf, the identity of max, so exp(-inf - m)
    # adds 0 to l and o. Here query i sits at position 8 i. With tiles of 16
    # keys and blocks of 2 queries, the first block sees only tile 0: the
    # other tiles change nothing for it. The compiler finds the mask in the
    # max's terms, checks that every reduction of the chain adds its
    # identity outside it, and then tests once per tile whether the mask can
    # hold for some key of the tile and some query of the block; where it
    # cannot, the whole tile (scores, probabilities, repairs) is skipped.
    print("\n3b. a causal mask: empty tiles are skipped")
    cs, cm, cp, cl, co, cout = (loom.Func(n) for n in ("cs", "cm", "cp", "cl", "co", "cout"))
    cs[i, j] = loom.select(j <= i * 8, s[i, j], -float("inf"))
    cm[i] = loom.maximum(cs[i, r])
    cp[i, j] = loom.exp(cs[i, j] - cm[i])
    cl[i] = loom.sum(cp[i, r])
    co[i, d] = loom.sum(cp[i, r] * v[r, d])
    cout[i, d] = co[i, d] / cl[i]
    causal = loom.Schedule()
    causal[cout].split(i, io, ii, 2)
    causal.rolling_update(co, r).split(r, ro, ri, 16).reorder(ro, i)
    causal[co].compute_at(cout, io)
    causal[cs].compute_at(co, ro)
    causal[cp].compute_at(co, ro)
    causal_attention = loom.Pipeline(cout)
    masked = causal_attention.compile(causal, output_shape=out_shape)
    for line in masked.compile_log():
        if "skipped" in line:
            print(f"  log: {line}")
    want_causal = np.stack([weights_of(y, min(L, 8 * y + 1)) @ V[:min(L, 8 * y + 1)]
                            for y in range(N)])  # keys 0 .. 8 y
    check("causal attention, empty tiles skipped", masked(Q, K, V),
          loom.interpret(cout, [N, D]), want_causal)
    # In the lowered statement the test sits right inside the tile loop:
    # the tile's first key must not be past the block's last query.
    in_tile_loop = False
    for line in causal_attention.compile_to_lowered_stmt(causal).splitlines():
        if "for (co.s1.ro" in line:
            in_tile_loop = True
        if in_tile_loop and "if (" in line:
            print(f"  {line.strip()}")
            break
    else:
        fail("expected a test inside the tile loop")

    # ---- 4. A chain the compiler refuses.
    # Not every dependent reduction can be repaired. Here each term is
    # sin(s - m): when m moves, how much a term changes depends on s itself,
    # so no h(t, m, m') that sees only the partial sum t can fix it. The
    # compiler says which reduction, which producer and why, when compiling.
    print("\n4. a chain with no repair")
    wavy, wavy_out = loom.Func("wavy"), loom.Func("wavy_out")
    wavy[i] = loom.sum(loom.sin(s[i, r] - m[i]))
    wavy_out[i] = wavy[i] * 2.0
    refused = loom.Schedule()
    refused.rolling_update(wavy, r)
    try:
        loom.Pipeline(wavy_out).compile(refused)
        fail("expected a loom.CompileError")
    except loom.CompileError as err:
        print(f"  caught: {err}")
    # Without the directive it is an ordinary two-pass computation.
    wavy_plain = loom.Pipeline(wavy_out).compile(output_shape=lambda q, k: (q.shape[0],))(Q, K)
    wavy_want = 2 * np.sin(scores - scores.max(axis=1, keepdims=True)).sum(axis=1)
    wavy_ref = np.asarray(loom.interpret(wavy_out, [N]))
    if not (np.allclose(wavy_plain, wavy_ref, rtol=1e-4, atol=1e-4) and
            np.allclose(wavy_plain, wavy_want, rtol=1e-4, atol=1e-4)):
        fail(f"wavy is {wavy_plain}; the interpreter says {wavy_ref}, NumPy says {wavy_want}")

    # ---- 5. The packaged template on the attention variants.
    # loom.attention holds the variants of apps/attention written as this
    # plain chain (causal, ALiBi, soft-capping, windows, grouped-query, and
    # compositions of them), and loom.schedules.flash_attention schedules
    # any of them. With head_dim (the inputs fix it) it makes each block of
    # 128 queries one tile program: the scores' product and P V as
    # register-blocked matrix products, the rows' max and sum as vector
    # reductions, the same derived repairs.
    print("\n5. flash_attention / flash_decoding(head_dim=...) on a variant: tile programs")
    from loom import attention, schedules
    a = attention.AttentionVariant(attention.Variant.Causal, loom.Float(32))
    a.fix_head_dim(32)
    tiled = loom.Schedule()
    schedules.flash_attention(tiled, a.chain(), head_dim=32)
    kernel = loom.Pipeline(a.out).compile(tiled, output_shape=0)
    q, k, v = (rng.standard_normal((1, 2, 150, 32)).astype(np.float32) for _ in range(3))
    got = kernel(q, k, v, 0.2)

    def softmax_attention(q, k, v, causal=False):
        """float64 attention with scale 0.2 (causal: key j <= query i)."""
        sc = np.einsum("bhid,bhjd->bhij", q.astype(np.float64), k.astype(np.float64)) * 0.2
        if causal:
            sc = np.where(np.tril(np.ones(sc.shape[-2:], dtype=bool)), sc, -np.inf)
        pr = np.exp(sc - sc.max(-1, keepdims=True))
        return np.einsum("bhij,bhjd->bhid", pr / pr.sum(-1, keepdims=True), v.astype(np.float64))

    err = np.abs(got - softmax_attention(q, k, v, causal=True)).max()
    print(f"  causal, 2 heads of 150 x 32: largest difference from float64 {err:.1e}")
    if not err < 1e-5:
        fail("the tile program disagrees with the float64 softmax")
    # Decode (one query over many keys) splits the keys instead:
    # flash_decoding with head_dim is split_k over tile programs, one per
    # chunk of the keys storing its partial max, sum and weighted sum,
    # combined with the same derived repairs.
    decoding = loom.Schedule()
    schedules.flash_decoding(decoding, a.chain(), head_dim=32, chunks=4)
    decoder = loom.Pipeline(a.out).compile(decoding, output_shape=0)
    for line in decoder.compile_log():
        if "each chunk rolled" in line:
            print(f"  log: {line}")
    q1 = rng.standard_normal((1, 2, 1, 32)).astype(np.float32)
    k1, v1 = (rng.standard_normal((1, 2, 500, 32)).astype(np.float32) for _ in range(2))
    # The one query is the last position: it sees every key.
    err = np.abs(decoder(q1, k1, v1, 0.2) - softmax_attention(q1, k1, v1)).max()
    print(f"  decode, 1 query over 500 keys in 4 chunks: largest difference {err:.1e}")
    if not err < 1e-5:
        fail("split_k over tile programs disagrees with the float64 softmax")
    # Grouped-query attention: query head h reads key head h // G. The
    # decode template's programs hold the query heads of one key head in
    # their rows, so each chunk of a key head's keys is read once for all
    # of them; the compiler finds G from k's index, the template does not
    # know the variant.
    g = attention.AttentionVariant(attention.Variant.GroupedQuery, loom.Float(32))
    g.fix_head_dim(32)
    grouped = loom.Schedule()
    schedules.flash_decoding(grouped, g.chain(), head_dim=32, chunks=4)
    grouped_decoder = loom.Pipeline(g.out).compile(grouped, output_shape=0)
    q8 = rng.standard_normal((1, 8, 1, 32)).astype(np.float32)
    k2, v2 = (rng.standard_normal((1, 2, 300, 32)).astype(np.float32) for _ in range(2))
    kg, vg = np.repeat(k2, 4, axis=1), np.repeat(v2, 4, axis=1)  # head h reads h // 4
    err = np.abs(grouped_decoder(q8, k2, v2, 0.2) - softmax_attention(q8, kg, vg)).max()
    print(f"  grouped-query decode, 8 query heads over 2 key heads: largest difference {err:.1e}")
    if not err < 1e-5:
        fail("grouped rows disagree with the float64 softmax")

    if failures:
        return 1
    print("Lesson 10 passed.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
