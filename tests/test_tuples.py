"""Tuples and namedtuples of arrays and scalars (issue 30 item 2): as arguments, with
gradients, tangents, Hessian-vector products and Jacobian blocks returned in the same
structure; built, unpacked and indexed inside the function; returned as outputs.  Every
input element against central differences, values of every entry point, both modes."""

from __future__ import annotations

import sys
from collections import namedtuple

import numpy as np
import pytest

import jitgrad as jg

Params = namedtuple("Params", ["W", "b"])
RNG = np.random.default_rng(3)
W0 = RNG.standard_normal(3)
B0 = 0.3
X0 = RNG.standard_normal((5, 3))
Y0 = RNG.standard_normal(5)


def predict(p, X):
    W, b = p
    return np.tanh(X @ W + b)


def loss(p, X, y):
    """The parameters a tuple, unpacked inside a helper."""
    r = predict(p, X) - y
    return np.sum(r * r) + 0.1 * np.sum(p[1] * p[1] * X[:, 0])


def loss_fields(p, X):
    """A namedtuple's fields, constant and negative indices, len."""
    r = np.tanh(X @ p.W + p[-1])
    return np.sum(r * r) * len(p) + p.b * np.sum(p[0])


def l2(p, X):
    """A loop over a tuple argument's entries (unrolled)."""
    reg = 0.0
    for w in p:
        reg += np.sum(w * w)
    return reg + np.sum(X @ p[0])


def loss_nested(q, X):
    """A nested tuple ((W, b), s): unpacked in two steps and indexed twice."""
    wb, s = q
    W, b = wb
    inner = q[0]
    return s * np.sum((X @ W + inner[1]) ** 2) + q[0][1] * s


def loss_nested_target(q, X):
    """A nested target unpacking a nested tuple argument at once."""
    (W, b), s = q
    return s * np.sum(np.tanh(X @ W + b))


def concat_entries(q, X):
    """A tuple of the entries (a literal once split) passed to NumPy."""
    (W, b), s = q
    return np.sum(np.concatenate(q[0]) ** 2) * s + np.sum(X @ W)


def nested_target_of_whole(q, i):
    (W, b), s = q
    return np.sum(q[i][0]) * s


def step(state, dt, k):
    x, v = state
    return (x + dt * v, v - dt * k * x)


def oscillator(x0, v0, k):
    """A local tuple carried through a loop by a helper taking and returning it."""
    state = (x0, v0)
    for _ in range(6):
        state = step(state, 0.1, k)
    x, v = state
    return np.sum(x * x) + np.sum(v * np.sin(x))


def rotate(x, v):
    """A local tuple rebuilt from its own entries, then returned (a tuple output)."""
    s = (x, v)
    for _ in range(3):
        s = (s[1] * 1.5 + s[0] * 0.5, np.sin(s[0]))
    return s


def whole(p, X):
    return np.sum(np.concatenate(p) * X[0])


# --- finite differences, in the arguments' structure -----------------------------------


def _leaves(v):
    return [e for x in v for e in _leaves(x)] if isinstance(v, tuple) else [v]


def _rebuild(like, it):
    if isinstance(like, tuple):
        vals = [_rebuild(e, it) for e in like]
        return like._make(vals) if hasattr(like, "_make") else tuple(vals)
    return next(it)


def numeric(f, args, i, dy=None, h=1e-6):
    """d<dy, f(args)>/d args[i] by central differences, in args[i]'s structure."""
    leaves = [np.array(v, dtype=float) for v in _leaves(args[i])]

    def at(k, j, step):
        ls = [v.copy() for v in leaves]
        ls[k].flat[j] += step
        ls = [v if np.ndim(a) else float(v) for v, a in zip(ls, _leaves(args[i]), strict=True)]
        new = list(args)
        new[i] = _rebuild(args[i], iter(ls))
        out = f(*new)
        outs = out if isinstance(out, tuple) else (out,)
        dys = dy if isinstance(out, tuple) else (1.0 if dy is None else dy,)
        return sum(np.sum(np.asarray(o) * d) for o, d in zip(outs, dys, strict=True))

    grads = []
    for k, v in enumerate(leaves):
        g = np.array([(at(k, j, h) - at(k, j, -h)) / (2 * h) for j in range(v.size)])
        grads.append(g.reshape(v.shape) if v.ndim else float(g[0]))
    return _rebuild(args[i], iter(grads))


def assert_like(got, want, rtol=1e-5, atol=1e-7):
    """Same structure (namedtuple types too) and values."""
    assert type(got) is type(want) or not isinstance(want, tuple), (type(got), type(want))
    if isinstance(want, tuple):
        assert len(got) == len(want)
        for a, b in zip(got, want, strict=True):
            assert_like(a, b, rtol, atol)
    else:
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


# --- both modes: the common entry points, compiled once per module ----------------------


@pytest.fixture(scope="module", params=[False, True], ids=["py", "jit"])
def jit(request):
    return request.param


@pytest.fixture(scope="module")
def dloss(jit):
    return jg.differentiate(loss, wrt=0, jit=jit)


@pytest.mark.parametrize("make", [tuple, Params._make], ids=["tuple", "namedtuple"])
def test_grad_value_and_vjp_of_a_parameter_tuple(dloss, make):
    p = make((W0, B0))
    want = numeric(loss, (p, X0, Y0), 0)
    assert_like(dloss.grad(p, X0, Y0), want)
    value, g = dloss.value_and_grad(p, X0, Y0)
    assert value == pytest.approx(loss(p, X0, Y0), rel=1e-12)
    assert_like(g, want)
    assert_like(jg.grad(loss, wrt=0, jit=dloss.jit)(p, X0, Y0), want)
    value, pullback = dloss.vjp(p, X0, Y0)
    assert value == pytest.approx(loss(p, X0, Y0), rel=1e-12)
    assert_like(pullback(2.0), Params._make(2.0 * v for v in want) if make is not tuple
                else tuple(2.0 * v for v in want))
    value, pullback = jg.vjp(loss, p, X0, Y0, jit=dloss.jit)
    assert_like(pullback(1.0), want)
    t = make((np.array([0.5, -1.0, 2.0]), 0.7))
    value, tan = dloss.jvp((p, X0, Y0), t)
    assert value == pytest.approx(loss(p, X0, Y0), rel=1e-12)
    assert tan == pytest.approx(np.dot(want[0], t[0]) + want[1] * t[1], rel=1e-6)
    np.testing.assert_array_equal(_leaves(p)[0], W0)  # never written


def test_oscillator_local_tuples(jit):
    d = jg.differentiate(oscillator, wrt=(0, 1, 2), jit=jit)
    args = (W0, W0[::-1].copy(), 1.7)
    value, grads = d.value_and_grad(*args)
    assert value == pytest.approx(oscillator(*args), rel=1e-12)
    for i in range(3):
        assert_like(grads[i], numeric(oscillator, args, i))


# --- the other entry points and structures (plain Python mode) --------------------------


def test_wrt_several_with_a_namedtuple_among_them():
    p = Params(W0, B0)
    g = jg.grad(loss, wrt=(0, 1), jit=False)(p, X0, Y0)
    assert_like(g[0], numeric(loss, (p, X0, Y0), 0))
    assert_like(g[1], numeric(loss, (p, X0, Y0), 1))
    g = jg.grad(loss, wrt=1, jit=False)(p, X0, Y0)  # the tuple passed, not differentiated
    assert_like(g, numeric(loss, (p, X0, Y0), 1))


def test_fields_indices_and_len():
    p = Params(W0, B0)
    value, g = jg.value_and_grad(loss_fields, jit=False)(p, X0)
    assert value == pytest.approx(loss_fields(p, X0), rel=1e-12)
    assert_like(g, numeric(loss_fields, (p, X0), 0))


def test_loop_over_a_tuple_argument():
    p = (W0, np.full(3, B0), W0[::-1].copy())
    value, g = jg.value_and_grad(l2, jit=False)(p, X0)
    assert value == pytest.approx(l2(p, X0), rel=1e-12)
    assert_like(g, numeric(l2, (p, X0), 0))


def test_nested_tuple_argument():
    q = ((W0, B0), 1.3)
    g = jg.grad(loss_nested, jit=False)(q, X0)
    assert isinstance(g, tuple) and isinstance(g[0], tuple)
    assert_like(g, numeric(loss_nested, (q, X0), 0))
    value, g = jg.value_and_grad(loss_nested_target, jit=False)(q, X0)
    assert value == pytest.approx(loss_nested_target(q, X0), rel=1e-12)
    assert_like(g, numeric(loss_nested_target, (q, X0), 0))
    q2 = ((W0, W0[::-1].copy()), 1.3)
    value, g = jg.value_and_grad(concat_entries, jit=False)(q2, X0)
    assert value == pytest.approx(concat_entries(q2, X0), rel=1e-12)
    assert_like(g, numeric(concat_entries, (q2, X0), 0))


def test_tuple_output_vjp_jacobians():
    x, v = W0, np.cos(W0)
    value, pullback = jg.vjp(rotate, x, v, wrt=(0, 1), jit=False)
    assert_like(value, rotate(x, v))
    dy = (np.array([1.0, -2.0, 0.5]), np.array([0.3, 0.7, -1.1]))
    got = pullback(dy)
    for i in range(2):
        assert_like(got[i], numeric(rotate, (x, v), i, dy=dy))
    jf = jg.jacfwd(rotate, wrt=(0, 1), jit=False)(x, v)
    jr = jg.jacrev(rotate, wrt=(0, 1), jit=False)(x, v)
    for o in range(2):
        for i in range(2):
            cols = [numeric(rotate, (x, v), i, dy=tuple(np.eye(3)[r] * (k == o)
                                                          for k in range(2)))
                    for r in range(3)]
            np.testing.assert_allclose(jf[o][i], np.array(cols), rtol=1e-5, atol=1e-7)
            np.testing.assert_allclose(jr[o][i], np.array(cols), rtol=1e-5, atol=1e-7)


def test_forward_mode_and_hvp_take_structured_tangents():
    p = Params(W0, B0)
    t = Params(np.array([0.5, -1.0, 2.0]), 0.7)
    value, tan = jg.jvp(loss, (p, X0, Y0), t, jit=False)
    assert value == pytest.approx(loss(p, X0, Y0), rel=1e-12)
    g = numeric(loss, (p, X0, Y0), 0)
    assert tan == pytest.approx(np.dot(g.W, t.W) + g.b * t.b, rel=1e-6)
    value, tan2 = jg.differentiate(loss, jit=False).jvp((p, X0, Y0), (t.W, t.b))
    assert tan2 == pytest.approx(tan, rel=1e-12)
    hv = jg.hvp(loss, (p, X0, Y0), t, jit=False)
    assert type(hv) is Params
    h = 1e-5

    def grad_at(s):  # (the gradient itself is checked against differences above)
        q = Params(W0 + s * t.W, B0 + s * t.b)
        return jg.grad(loss, jit=False)(q, X0, Y0)

    gp, gm = grad_at(h), grad_at(-h)
    np.testing.assert_allclose(hv.W, (gp.W - gm.W) / (2 * h), rtol=1e-6, atol=1e-8)
    assert hv.b == pytest.approx((gp.b - gm.b) / (2 * h), rel=1e-6)


def test_jacobians_of_a_tuple_argument():
    p = Params(W0, B0)
    jf = jg.jacfwd(predict, jit=False)(p, X0)
    jr = jg.jacrev(predict, jit=False)(p, X0)
    assert type(jf) is Params and type(jr) is Params
    rows = [numeric(predict, (p, X0), 0, dy=np.eye(5)[r]) for r in range(5)]
    for got in (jf, jr):
        np.testing.assert_allclose(got.W, np.array([r.W for r in rows]), rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(got.b, np.array([r.b for r in rows]), rtol=1e-5, atol=1e-7)


def test_structure_is_part_of_the_specialisation():
    d = jg.differentiate(loss, jit=False)
    g1 = d.grad((W0, B0), X0, Y0)
    g2 = d.grad(Params(W0, B0), X0, Y0)
    g3 = d.grad((W0, np.full(5, B0)), X0, Y0)  # b an array now
    assert type(g1) is tuple and type(g2) is Params
    assert_like(g3, numeric(loss, ((W0, np.full(5, B0)), X0, Y0), 0))
    assert len([k for k in d._bridges if k[0] == "tuples"]) == 2  # tuple, Params
    assert "def loss(p_0, p_1, X, y)" in d.source((W0, B0), X0, Y0, stage="tuples")


def test_generated_code_splits_local_tuples():
    src = jg.differentiate(oscillator, jit=False).source(W0, W0, 1.0, stage="tuples")
    assert "state_0, state_1 = (x0, v0)" in src
    assert "state =" not in src


def aux_loss(p, X):
    W, b = p
    r = X @ W + b
    return np.sum(r * r), (r, b)


def test_has_aux_with_a_tuple_argument():
    p = Params(W0, B0)
    g, (r, b) = jg.grad(aux_loss, has_aux=True, jit=False)(p, X0)
    assert_like(g, numeric(lambda p, X: aux_loss(p, X)[0], (p, X0), 0))
    np.testing.assert_allclose(r, X0 @ W0 + B0)
    assert b == B0
    (value, _), g2 = jg.value_and_grad(aux_loss, has_aux=True, jit=False)(p, X0)
    assert value == pytest.approx(aux_loss(p, X0)[0], rel=1e-12)
    assert_like(g2, g)


def test_disk_cache_keys_the_structure(tmp_path, monkeypatch):
    (tmp_path / "tuplecachefn.py").write_text(
        "def f(p, x):\n    a, b = p\n    return a * b * x\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import tuplecachefn

    g = jg.grad(tuplecachefn.f, cache=True, jit=False)
    assert g((2.0, 3.0), 5.0) == (15.0, 10.0)
    assert g.cache_info()["misses"] == 1
    fresh = jg.grad(tuplecachefn.f, cache=True, jit=False)  # a new object: from disk
    assert fresh((2.0, 3.0), 5.0) == (15.0, 10.0)
    assert (fresh.cache_info()["hits"], fresh.cache_info()["misses"]) == (1, 0)
    assert fresh(Params(2.0, 3.0), 5.0) == Params(15.0, 10.0)  # another structure
    assert (fresh.cache_info()["hits"], fresh.cache_info()["misses"]) == (1, 1)
    assert len(fresh.cache_info()["specialisations"]) == 2
    sys.modules.pop("tuplecachefn", None)


def zeros_of(x, shape):
    z = np.zeros(shape)  # a tuple of ints used whole, as before tuples were split
    n, m = shape
    return np.sum((z + x.reshape(n, m)) ** 2) * len(shape)


def test_a_tuple_not_differentiated_may_be_used_whole():
    x = np.arange(6.0) / 3.0
    value, g = jg.value_and_grad(zeros_of, jit=False)(x, (2, 3))
    assert value == pytest.approx(zeros_of(x, (2, 3)), rel=1e-12)
    np.testing.assert_allclose(g, numeric(zeros_of, (x, (2, 3)), 0), rtol=1e-6)


def variable_index(x, i):
    t = (x, 2.0 * x)
    return np.sum(t[i])


# --- refusals -----------------------------------------------------------------------------


def test_refusals():
    with pytest.raises(TypeError, match=r"entry p\[1\] is an integer"):
        jg.grad(loss, jit=False)((W0, 2), X0, Y0)
    with pytest.raises(jg.TransformError, match="tuple argument 'p' is used as a whole"):
        jg.grad(whole, jit=False)((W0, W0), X0)
    with pytest.raises(jg.TransformError, match="nested tuple targets are supported where"):
        jg.grad(nested_target_of_whole, jit=False)(((W0, W0), 1.0), 0)
    with pytest.raises(jg.TransformError, match="the tuple 't' of differentiated values"):
        jg.grad(variable_index, jit=False)(W0, 1)
    with pytest.raises(TypeError, match="argument 0 .'p'. is a tuple, which hessian"):
        jg.hessian(loss, jit=False)((W0, B0), X0, Y0)
    with pytest.raises(ValueError, match="must have its structure"):
        jg.jvp(loss, ((W0, B0), X0, Y0), (np.ones(3),), jit=False)
    with pytest.raises(jg.TransformError, match=r"'.W' is read but it has no fields"):
        jg.grad(loss_fields, jit=False)((W0, B0), X0)  # a plain tuple has no .b
