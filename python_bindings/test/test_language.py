"""The language from Python: operators with C++'s semantics, math functions,
definitions, reductions, tuples, RDom predicates, and the errors of misuse."""
import numpy as np
import pytest

import loom


def run(f, *inputs, shape):
    return np.asarray(loom.Pipeline(f).compile(output_shape=shape)(*inputs))


def test_integer_operators_follow_cpp_semantics(rng):
    a = loom.BufferParam(loom.Int(32), 1, "a")
    b = loom.BufferParam(loom.Int(32), 1, "b")
    x = loom.Var("x")
    n = 37
    av = rng.integers(-100, 100, n).astype(np.int32)
    bv = rng.integers(-9, 9, n).astype(np.int32)
    bv[bv == 0] = 3
    cases = {
        "div": (a[x] / b[x], av // bv),           # Loom's / on ints rounds down, as Python's //
        "floordiv": (a[x] // b[x], av // bv),
        "mod": (a[x] % b[x], np.mod(av, bv)),     # the divisor's sign
        "add": (a[x] + 3 * b[x], av + 3 * bv),
        "neg": (-a[x] - 1, -av - 1),
        "and": (a[x] & 0x0F, av & 0x0F),
        "or": (a[x] | b[x], av | bv),
        "xor": (a[x] ^ b[x], av ^ bv),
        "invert": (~a[x], ~av),
        "shift": ((a[x] & 0xFF) << 2, (av & 0xFF) << 2),
        "min": (loom.min(a[x], b[x]), np.minimum(av, bv)),
        "clamp": (loom.clamp(a[x], -5, 5), np.clip(av, -5, 5)),
        "abs": (abs(a[x]), np.abs(av)),
        "reflected": (100 - a[x], 100 - av),
    }
    for name, (e, want) in cases.items():
        f = loom.Func("f_" + name)
        f[x] = e
        got = run(f, av, bv, shape=(n,)) if name not in ("neg", "and", "invert", "shift",
                                                         "clamp", "abs", "reflected") \
            else run(f, av, shape=(n,))
        np.testing.assert_array_equal(got, want, err_msg=name)


def test_comparisons_and_logic_make_bools(rng):
    a = loom.BufferParam(loom.Float(32), 1, "a")
    x = loom.Var("x")
    v = rng.standard_normal(29).astype(np.float32)
    f = loom.Func("f")
    f[x] = loom.select((a[x] > 0.5) | (a[x] <= -0.5) & ~(a[x] == -1.0), 1, 0)
    want = np.where((v > 0.5) | ((v <= -0.5) & ~(v == -1.0)), 1, 0)
    np.testing.assert_array_equal(run(f, v, shape=(29,)), want)
    g = loom.Func("g")
    g[x] = a[x] != a[x]
    assert g.type == loom.Bool()
    assert run(g, v, shape=(29,)).dtype == np.bool_


def test_promotion_of_python_numbers():
    x = loom.Var("x")
    h = loom.cast(loom.Float(16), x)
    assert (h * 0.5).type == loom.Float(16)       # a literal adapts to the Expr's type
    assert (x + 1).type == loom.Int(32)
    assert (x * 2.0).type == loom.Int(32)         # C++'s rule: 2.0 becomes the int 2
    assert (loom.cast(loom.UInt(8), x) + 3).type == loom.UInt(8)
    assert (x + loom.cast(loom.Float(32), x)).type == loom.Float(32)
    assert (loom.Expr(2**40)).type == loom.Int(64)
    assert (loom.Expr(0.5)).type == loom.Float(32)
    assert (loom.Expr(True)).type == loom.Bool()
    assert (2 ** x).type == loom.Float(32)
    assert (loom.cast("float32", x) // 2).type == loom.Float(32)
    with pytest.raises(loom.CompileError, match="does not fit in uint8"):
        loom.cast(loom.UInt(8), x) + 300


def test_math_functions_against_float64(rng):
    a = loom.BufferParam(loom.Float(32), 2, "a")
    y, x = loom.Var("y"), loom.Var("x")
    v = rng.uniform(0.1, 2.0, (5, 13)).astype(np.float32)
    fns = {
        "exp": (loom.exp, np.exp), "log": (loom.log, np.log), "sqrt": (loom.sqrt, np.sqrt),
        "rsqrt": (loom.rsqrt, lambda t: 1 / np.sqrt(t)), "tanh": (loom.tanh, np.tanh),
        "sin": (loom.sin, np.sin), "cos": (loom.cos, np.cos), "floor": (loom.floor, np.floor),
        "ceil": (loom.ceil, np.ceil), "round": (loom.round, np.round),
        "erf": (loom.erf, None),
    }
    import math
    for name, (lf, nf) in fns.items():
        f = loom.Func(name)
        f[y, x] = lf(a[y, x] * 3.0)
        got = run(f, v, shape=v.shape)
        arg = v.astype(np.float64) * 3
        want = np.vectorize(math.erf)(arg) if nf is None else nf(arg)
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6, err_msg=name)
    p = loom.Func("p")
    p[y, x] = a[y, x] ** 1.5 + loom.pow(2.0, a[y, x])
    np.testing.assert_allclose(run(p, v, shape=v.shape),
                               v.astype(np.float64) ** 1.5 + 2.0 ** v.astype(np.float64),
                               rtol=2e-6)


def test_reductions_tuples_and_predicates(rng):
    a = loom.BufferParam(loom.Float(32), 2, "a")
    y = loom.Var("y")
    n, m = 7, 23
    v = rng.standard_normal((n, m)).astype(np.float32)
    r = loom.RDom(0, a.dim(1).extent(), name="r")
    s, mx, mn, pr = loom.Func("s"), loom.Func("mx"), loom.Func("mn"), loom.Func("pr")
    s[y] = loom.sum(a[y, r])
    mx[y] = loom.maximum(a[y, r])
    mn[y] = loom.minimum(a[y, r])
    pr[y] = loom.product(1.0 + 0.01 * a[y, r])
    np.testing.assert_allclose(run(s, v, shape=(n,)), v.astype(np.float64).sum(1), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(run(mx, v, shape=(n,)), v.max(1))
    np.testing.assert_array_equal(run(mn, v, shape=(n,)), v.min(1))
    np.testing.assert_allclose(run(pr, v, shape=(n,)), np.prod(1 + 0.01 * v.astype(np.float64), 1), rtol=1e-5)

    am = loom.Func("am")
    am[y] = loom.argmax(a[y, r])
    assert am.outputs() == 2
    idx, val = loom.Pipeline(am).compile(output_shape=(n,))(v)
    np.testing.assert_array_equal(np.asarray(idx), v.argmax(1))
    np.testing.assert_array_equal(np.asarray(val), v.max(1))

    # An update definition over an RDom with a predicate: the sum of the
    # positive elements at even columns.
    q = loom.RDom([(0, m)], name="q")
    q.where((a[y, q] > 0) & (q % 2 == 0))
    pos = loom.Func("pos")
    pos[y] = 0.0
    pos[y] += a[y, q]
    want = np.where((v > 0) & (np.arange(m) % 2 == 0), v.astype(np.float64), 0).sum(1)
    np.testing.assert_allclose(run(pos, v, shape=(n,)), want, rtol=1e-5, atol=1e-6)

    # A Tuple-valued Func, and its elements read elsewhere.
    t = loom.Func("t")
    x = loom.Var("x")
    t[y, x] = (a[y, x] * 2.0, a[y, x] + 1.0)
    u = loom.Func("u")
    u[y, x] = t[y, x][0] - t[y, x][1]
    np.testing.assert_allclose(run(u, v, shape=v.shape), v * 2 - (v + 1), rtol=1e-6)


def test_interpreter_agrees_with_compiled_code(rng):
    a = loom.BufferParam(loom.Float(32), 2, "a")
    y, x = loom.Var("y"), loom.Var("x")
    f = loom.Func("f")
    f[y, x] = loom.select(x % 3 == 0, a[y, x] * a[y, x], -a[y, x]) + loom.cast(loom.Float(32), y)
    v = rng.standard_normal((6, 11)).astype(np.float32)
    a.set(loom.Buffer(v))
    ref = np.asarray(loom.interpret(f, [6, 11]))
    sch = loom.Schedule()
    yo, yi = loom.Var("yo"), loom.Var("yi")
    sch[f].split(y, yo, yi, 4).vectorize(x, 8).parallel(yo)
    np.testing.assert_array_equal(np.asarray(loom.Pipeline(f).realize([6, 11], sch)), ref)
    np.testing.assert_array_equal(np.asarray(f.realize([6, 11])), ref)


def test_misuse_is_a_clear_python_error():
    a = loom.BufferParam(loom.Float(32), 2, "a")
    x, y = loom.Var("x"), loom.Var("y")
    f = loom.Func("f")
    f[y, x] = a[y, x]
    with pytest.raises(ValueError, match="BufferParam a has 2 dimensions but is indexed with 1"):
        a[x]
    with pytest.raises(ValueError, match="Func f has 2 dimensions but is indexed with 3"):
        f[x, y, x]
    with pytest.raises(TypeError, match="Coordinate 1 of BufferParam a is a float32"):
        a[x, 1.5]
    with pytest.raises(TypeError, match="must be an Expr, Var, RVar"):
        f[y, x] + "text"
    with pytest.raises(TypeError, match="no truth value"):
        if x > 1:
            pass
    with pytest.raises(TypeError):
        loom.Schedule()[f].split(x, loom.Var("xo"), loom.Var("xi"), 4, bogus=1)
    with pytest.raises(TypeError, match="split's factor must be an integer"):
        loom.Schedule()[f].split(x, loom.Var("xo"), loom.Var("xi"), 2.5)
    with pytest.raises(TypeError, match="type name"):
        loom.BufferParam("float33", 1)
    with pytest.raises(loom.CompileError) as e:
        g = loom.Func("g")
        g[x] = loom.Var("zz")
        loom.Pipeline(g).compile()
    assert isinstance(e.value, loom.Error)
    with pytest.raises(IndexError, match="RDom .* has 1 dimensions; index 3 is out of range"):
        loom.RDom(0, 4)[3]
    with pytest.raises(TypeError, match="odd number"):
        loom.select(x > 0, 1)
