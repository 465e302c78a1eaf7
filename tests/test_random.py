"""Random draws (``np.random.*``, ``random.*``) in differentiated code: every run of a step
draws what the function drew.

A ``jg.checkpointed`` loop recomputes steps from snapshots: the snapshots hold the random
generators' state too (``kernels/rng.py``), so a Monte Carlo path gives the same delta
and vega as the plain ``range`` loop, in both modes (compiled code draws from Numba's
generators, which ``np.random.seed`` in an njit function seeds).  The same holds for a
checkpointed loop inside an outer loop or a ``jg.checkpoint`` region, for ``jg.hvp``, for
the pullback of ``vjp`` (run later, from the generators' state of the value) and for
``jacfwd``/``hessian`` columns; a gradient call leaves the generators where the function
does.
"""

from __future__ import annotations

import math
import random

import numba
import numpy as np
import pytest
from gradcheck import numeric_grad

import jitgrad as jg

STRIKE = 1.0


@numba.njit
def _seed_compiled(s):
    np.random.seed(s)
    random.seed(s)


def seed(s: int) -> None:
    """Seed NumPy's and ``random``'s generators and Numba's (separate ones, seeded from
    compiled code)."""
    np.random.seed(s)
    random.seed(s)
    _seed_compiled(s)


def seeded(fn, s, *args, **kw):
    seed(s)
    return fn(*args, **kw)


def gbm(S0, sigma, T, k):
    """A GBM path by Euler steps under a checkpointed loop; a call's payoff."""
    dt = 1.0 / T
    S = S0
    for t in jg.checkpointed(range(T), snapshots=k):  # noqa: B007
        z = np.random.standard_normal()
        S = S + 0.03 * S * dt + sigma * S * math.sqrt(dt) * z
    return max(S - STRIKE, 0.0)


def gbm_default(S0, sigma, T, k):
    """The same with the default number of snapshots (about sqrt(2 T))."""
    dt = 1.0 / T
    S = S0
    for t in jg.checkpointed(range(T), snapshots=None):  # noqa: B007
        z = np.random.standard_normal()
        S = S + 0.03 * S * dt + sigma * S * math.sqrt(dt) * z
    return max(S - STRIKE, 0.0)


def gbm_plain(S0, sigma, T, k):
    dt = 1.0 / T
    S = S0
    for t in range(T):  # noqa: B007
        z = np.random.standard_normal()
        S = S + 0.03 * S * dt + sigma * S * math.sqrt(dt) * z
    return max(S - STRIKE, 0.0)


def _next_draw(jit: bool) -> float:
    return _draw_compiled() if jit else np.random.standard_normal()


@numba.njit
def _draw_compiled():
    return np.random.standard_normal()


SEED = 32
ARGS = (1.05, 0.25)


@pytest.mark.parametrize("jit", [False, True], ids=["nojit", "jit"])
@pytest.mark.parametrize("k", [1, 2, None, 32])
def test_monte_carlo_path_delta_vega(jit, k):
    """T = 5,000 (500 for snapshots=1 without jit: 1.2 million untaped Python steps)."""
    T = 500 if (k == 1 and not jit) else 5000
    f = gbm_default if k is None else gbm
    kk = 0 if k is None else k
    plain = jg.differentiate(gbm_plain, wrt=(0, 1), jit=jit)
    d = jg.differentiate(f, wrt=(0, 1), jit=jit)
    vp, gp = seeded(plain.value_and_grad, SEED, *ARGS, T, kk)
    v, (delta, vega) = seeded(d.value_and_grad, SEED, *ARGS, T, kk)
    after = _next_draw(jit)  # a gradient call advances the generator as the function does
    np.testing.assert_allclose((delta, vega), gp, rtol=1e-9, atol=1e-12)
    value = seeded(d, SEED, *ARGS, T, kk)
    assert v == value
    assert vp == value
    assert _next_draw(jit) == after
    assert value > 0.05  # away from the payoff's kink: differences are smooth there
    for i, g in ((0, delta), (1, vega)):
        fd = numeric_grad(lambda *a: seeded(d, SEED, *a), (*ARGS, T, kk), i)
        np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-7)


def nested(x, T, k):
    """A checkpointed loop with draws inside an outer loop (and ``random``'s between)."""
    y = x
    acc = 0.0
    for e in range(3):  # noqa: B007
        for t in jg.checkpointed(range(T), snapshots=k):  # noqa: B007
            y = y * 0.95 + 0.1 * math.sin(y) * np.random.normal(1.0, 0.5)
            acc += y * 0.01
        y = y + 0.05 * random.random()
    return acc + y * y


def nested_plain(x, T, k):
    y = x
    acc = 0.0
    for e in range(3):  # noqa: B007
        for t in range(T):  # noqa: B007
            y = y * 0.95 + 0.1 * math.sin(y) * np.random.normal(1.0, 0.5)
            acc += y * 0.01
        y = y + 0.05 * random.random()
    return acc + y * y


def _walk(u, T, k):
    s = 0.0
    for t in jg.checkpointed(range(T), snapshots=k):  # noqa: B007
        u = np.tanh(u * (1.0 + 0.1 * np.random.standard_normal(u.shape[0])))
        s = s + np.sum(u) * 0.1
    return s + np.sum(u * u)


def region(x, T, k):
    """A checkpointed loop drawing arrays inside a jg.checkpoint region, after a draw."""
    u = x * np.random.uniform(0.5, 1.5)
    r = jg.checkpoint(_walk, u, T, k)
    return r + np.sum(u)


def _walk_plain(u, T, k):
    s = 0.0
    for t in range(T):  # noqa: B007
        u = np.tanh(u * (1.0 + 0.1 * np.random.standard_normal(u.shape[0])))
        s = s + np.sum(u) * 0.1
    return s + np.sum(u * u)


def region_plain(x, T, k):
    u = x * np.random.uniform(0.5, 1.5)
    r = _walk_plain(u, T, k)
    return r + np.sum(u)


X3 = np.array([0.3, -0.2, 0.5])
CASES = {"nested": (nested, nested_plain, 0.4), "region": (region, region_plain, X3)}


@pytest.mark.parametrize("jit", [False, True], ids=["nojit", "jit"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_recomputed_regions(name, jit):
    """Checkpointed loops in an outer loop or a region: value, gradient, differences."""
    ck, plain, x = CASES[name]
    d = jg.differentiate(ck, jit=jit)
    dp = jg.differentiate(plain, jit=jit)
    for T, k in ((7, 1), (7, 2), (40, 3)):
        v, g = seeded(d.value_and_grad, SEED, x, T, k)
        after = _next_draw(jit)
        value = seeded(d, SEED, x, T, k)
        assert _next_draw(jit) == after
        assert v == value
        vp, gp = seeded(dp.value_and_grad, SEED, x, T, k)
        np.testing.assert_allclose(vp, value, rtol=1e-12)
        np.testing.assert_allclose(g, gp, rtol=1e-10, atol=1e-12)
        fd = numeric_grad(lambda *a: seeded(d, SEED, *a), (x, T, k), 0)
        np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("jit", [False, True], ids=["nojit", "jit"])
def test_hvp_of_checkpointed_draws(jit):
    """Forward over reverse replays the draws of each recomputed step too."""
    T, k = 30, 2
    h = seeded(jg.hvp, SEED, gbm, (*ARGS, T, k), (1.0, 0.5), wrt=(0, 1), jit=jit)
    hp = seeded(jg.hvp, SEED, gbm_plain, (*ARGS, T, k), (1.0, 0.5), wrt=(0, 1), jit=jit)
    np.testing.assert_allclose(h, hp, rtol=1e-9, atol=1e-12)
    g = jg.grad(gbm_plain, wrt=(0, 1), jit=jit)
    eps = 1e-6
    hi = seeded(g, SEED, ARGS[0] + eps, ARGS[1] + 0.5 * eps, T, k)
    lo = seeded(g, SEED, ARGS[0] - eps, ARGS[1] - 0.5 * eps, T, k)
    np.testing.assert_allclose(h, np.subtract(hi, lo) / (2 * eps), rtol=1e-5, atol=1e-7)


def basket(x, n):
    """Draws in a plain loop (taped) and as an array, for vjp and the Jacobians."""
    w = np.random.standard_normal(x.shape[0])
    s = 0.0
    for i in range(n):  # noqa: B007
        s = s + np.sum(x * w) * np.random.uniform(0.5, 1.5)
    return s * s + np.sum(x * x * w)


@pytest.mark.parametrize("jit", [False, True], ids=["nojit", "jit"])
def test_vjp_pullback_replays_the_values_draws(jit):
    d = jg.differentiate(basket, jit=jit)
    x = np.array([0.4, -0.3, 0.8])
    v, g = seeded(d.value_and_grad, SEED, x, 4)
    seed(SEED)
    value, pullback = d.vjp(x, 4)
    after = _next_draw(jit)
    assert value == v
    np.testing.assert_allclose(pullback(1.0), g, rtol=1e-12)
    np.testing.assert_allclose(pullback(2.0), 2.0 * g, rtol=1e-12)
    seed(SEED)
    d.vjp(x, 4)
    assert _next_draw(jit) == after  # the pullbacks consumed no draws
    fd = numeric_grad(lambda *a: seeded(d, SEED, *a), (x, 4), 0)
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("jit", [False, True], ids=["nojit", "jit"])
def test_jacobian_columns_draw_the_same(jit):
    x = np.array([0.4, -0.3, 0.8])
    g = seeded(jg.grad(basket, jit=jit), SEED, x, 3)
    for jac in (jg.jacfwd, jg.jacrev):
        np.testing.assert_allclose(seeded(jac(basket, jit=jit), SEED, x, 3), g, rtol=1e-10)
    hess = seeded(jg.hessian(basket, jit=jit), SEED, x, 3)
    gr = jg.grad(basket, jit=jit)
    eps = 1e-6
    for j in range(3):
        e = np.zeros(3)
        e[j] = eps
        col = (seeded(gr, SEED, x + e, 3) - seeded(gr, SEED, x - e, 3)) / (2 * eps)
        np.testing.assert_allclose(hess[:, j], col, rtol=1e-5, atol=1e-7)


def test_a_draw_is_stored_never_recomputed():
    """The store-or-recompute decision never draws again (the primitive table's
    ``random`` fact); the generated code says why it stored the draw."""
    src = jg.differentiate(gbm_plain, wrt=(0, 1), jit=False).source(*ARGS, 10, 0)
    assert "np.random.standard_normal draws a random number: never drawn again" in src
    assert src.count("np.random.standard_normal()") == 1


def value_only_draw(x):
    """``a`` serves only the value: the gradient-only code must still draw it."""
    a = np.random.standard_normal(3)
    b = np.random.standard_normal()
    return x * x * b + np.sum(a)


@pytest.mark.parametrize("jit", [False, True], ids=["nojit", "jit"])
def test_grad_and_hvp_keep_draws_only_the_value_reads(jit):
    x = 0.5
    seed(SEED)
    np.random.standard_normal(3)
    b = np.random.standard_normal()
    v, g = seeded(jg.value_and_grad(value_only_draw, jit=jit), SEED, x)
    assert v == seeded(jg.differentiate(value_only_draw, jit=jit), SEED, x)
    np.testing.assert_allclose(g, 2.0 * x * b, rtol=1e-12)
    np.testing.assert_allclose(seeded(jg.grad(value_only_draw, jit=jit), SEED, x), g,
                               rtol=1e-12)
    np.testing.assert_allclose(seeded(jg.hvp, SEED, value_only_draw, (x,), 1.0, jit=jit),
                               2.0 * b, rtol=1e-12)
    t = seeded(jg.jvp, SEED, value_only_draw, (x,), 1.0, jit=jit)
    np.testing.assert_allclose(t, (v, g), rtol=1e-12)


def dead_loop_draws(x, a, T):
    """The first loop's value is bound again before anything reads it, but its draws
    move the generator the second loop draws from (fuzz seed 100711 #1807): dropping or
    moving it as dead code changes the value and the gradient."""
    d = 0.2
    for t in range(T):
        if t % 2 == 0:
            d = 0.7 * d + 0.1 * math.tanh(d * a + 0.3 * np.random.standard_normal())
    d = x[0] * 0.5
    s = 0.2
    for t in jg.checkpointed(range(T), snapshots=3):
        s = 0.9 * s + 0.1 * math.sin(a * x[t % 2] + np.random.uniform(-0.5, 0.5))
    return s * s + d


@pytest.mark.parametrize("jit", [False, True], ids=["nojit", "jit"])
def test_a_dead_loop_that_draws_is_kept(jit):
    x, a, T = np.array([0.4, -0.7]), 0.8, 40
    want = seeded(dead_loop_draws, SEED, x, a, T)
    v, (gx, ga) = seeded(jg.value_and_grad(dead_loop_draws, wrt=(0, 1), jit=jit), SEED,
                         x, a, T)
    assert v == pytest.approx(want, rel=1e-12)

    def plain(x, a):
        return seeded(dead_loop_draws, SEED, x, a, T)

    np.testing.assert_allclose(gx, numeric_grad(plain, (x, a), 0), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(ga, numeric_grad(plain, (x, a), 1), rtol=1e-5, atol=1e-7)
    t = seeded(jg.jvp, SEED, dead_loop_draws, (x, a, T), (np.ones(2), 1.0), wrt=(0, 1),
               jit=jit)
    assert t[0] == pytest.approx(want, rel=1e-12)
    assert t[1] == pytest.approx(np.sum(gx) + ga, rel=1e-9)


@numba.njit(parallel=True)
def parallel_draws(x):
    out = np.zeros(x.shape[0])
    for i in numba.prange(x.shape[0]):
        out[i] = x[i] * np.random.standard_normal()
    return np.sum(out * out)


@numba.njit(parallel=True)
def parallel_array_draw(x):
    z = np.random.standard_normal(x.shape[0])
    return np.sum(x * z)


@numba.njit(parallel=True)
def parallel_draws_before(x):
    """The refusal's hint applied: one draw at a time in a range loop before it."""
    z = np.empty(x.shape[0])
    for i in range(x.shape[0]):
        z[i] = np.random.standard_normal()
    out = np.zeros(x.shape[0])
    for i in numba.prange(x.shape[0]):
        out[i] = x[i] * z[i]
    return np.sum(out * out)


def test_draws_in_a_parallel_prange_loop_are_refused():
    """Per-thread generators that np.random.seed does not seed: no run repeats the draws
    (a prange loop's, an array of draws, which Numba's parfor pass parallelises)."""
    with pytest.raises(jg.TransformError) as e:
        jg.grad(parallel_draws)(np.ones(3))
    assert e.value.lineno == parallel_draws.py_func.__code__.co_firstlineno + 4
    assert "z[i] = np.random.standard_normal()), then use z[i]" in str(e.value)
    with pytest.raises(jg.TransformError, match="as an array under parallel=True"):
        jg.grad(parallel_array_draw)(np.ones(3))
    x = np.array([0.3, -0.7, 1.1, 0.2])
    v, g = seeded(jg.value_and_grad(parallel_draws_before), SEED, x)
    assert v == seeded(parallel_draws_before, SEED, x)
    fd = numeric_grad(lambda a: seeded(parallel_draws_before, SEED, a), (x,), 0)
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-7)


def jitter(x):
    """A primitive of the user's that draws (its rule declares ``random=True``)."""
    return x * (1.0 + 0.1 * np.random.standard_normal())


@jg.grad_rule(jitter, random=True)
def _jitter_rule(x):
    e = 1.0 + 0.1 * np.random.standard_normal()
    y = x * e

    def pullback(dy):
        return (dy * e,)

    return y, pullback


def jittered(x, T, k):
    y = x
    for t in jg.checkpointed(range(T), snapshots=k):  # noqa: B007
        y = math.sin(jitter(y)) + 0.5 * y
    return y * y


def jittered_plain(x, T, k):
    y = x
    for t in range(T):  # noqa: B007
        y = math.sin(jitter(y)) + 0.5 * y
    return y * y


def test_a_rule_that_draws_declares_it():
    """``grad_rule(..., random=True)``: the checkpointed loop replays the rule's draws."""
    v, g = seeded(jg.value_and_grad(jittered, jit=False), SEED, 0.7, 40, 2)
    vp, gp = seeded(jg.value_and_grad(jittered_plain, jit=False), SEED, 0.7, 40, 2)
    assert v == vp == seeded(jittered, SEED, 0.7, 40, 2)
    np.testing.assert_allclose(g, gp, rtol=1e-12)


@numba.njit
def _compiled_noise(n):
    return np.random.standard_normal(n)


def test_eager_checkpoint_replays_compiled_draws():
    """The runtime's ``jg.checkpoint`` replays Numba's generators too (compiled code
    the checkpointed function calls draws from them)."""
    from jitgrad import runtime as rt

    w = rt.param(np.ones(4))
    draws = []

    def noisy(v):
        noise = _compiled_noise(4)
        draws.append(noise)
        return (v * noise).sum()

    seed(SEED)
    y = rt.checkpoint(noisy, w)
    after = _next_draw(True)
    seed(SEED)
    rt.checkpoint(noisy, rt.param(np.ones(4)))
    rt.back(y)
    np.testing.assert_array_equal(draws[0], draws[2])
    np.testing.assert_allclose(w.grad, draws[0])
    assert _next_draw(True) == after  # the recompute consumed no draws
