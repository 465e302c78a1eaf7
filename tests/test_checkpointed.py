"""``for t in jg.checkpointed(range(T), snapshots=k)``: the loop's reverse sweep keeps k
snapshots of the loop-carried state and reruns each segment with its tape.

Every case is checked against the same loop over a plain ``range`` (the gradient must
agree to round-off) for T from 0 to a few hundred and snapshots from 1 to T, in both
modes, and a few against central finite differences; plus what it refuses, and
``jg.checkpoint`` regions that write arrays from outside them."""

from __future__ import annotations

import math

import numpy as np
import pytest
from gradcheck import check_grad

import jitgrad as jg
from jitgrad.errors import TransformError


def lorenz(p, T, k):
    x, y, z = 1.0, 1.0, 1.0
    s, r, b = p[0], p[1], p[2]
    dt = 0.002
    acc = 0.0
    for t in jg.checkpointed(range(T), snapshots=k):
        dx = s * (y - x)
        dy = x * (r - z) - y
        dz = x * y - b * z
        x = x + dt * dx
        y = y + dt * dy
        z = z + dt * dz
        acc += x * x * 1e-3
    return acc + z


def lorenz_plain(p, T, k):
    x, y, z = 1.0, 1.0, 1.0
    s, r, b = p[0], p[1], p[2]
    dt = 0.002
    acc = 0.0
    for t in range(T):
        dx = s * (y - x)
        dy = x * (r - z) - y
        dz = x * y - b * z
        x = x + dt * dx
        y = y + dt * dy
        z = z + dt * dz
        acc += x * x * 1e-3
    return acc + z


def heat_inplace(u0, a, T, k):
    u = u0.copy()
    n = u.shape[0]
    for t in jg.checkpointed(range(T), snapshots=k):
        for i in range(1, n - 1):
            u[i] = u[i] + a * (u[i - 1] - 2.0 * u[i] + u[i + 1])
    return np.sum(u * u)


def heat_inplace_plain(u0, a, T, k):
    u = u0.copy()
    n = u.shape[0]
    for t in range(T):
        for i in range(1, n - 1):
            u[i] = u[i] + a * (u[i - 1] - 2.0 * u[i] + u[i + 1])
    return np.sum(u * u)


def heat_buffers(u0, a, T, k):
    u = u0.copy()
    v = np.zeros_like(u0)
    n = u.shape[0]
    for t in jg.checkpointed(range(T), snapshots=k):
        v[0] = u[0]
        v[n - 1] = u[n - 1]
        for i in range(1, n - 1):
            v[i] = u[i] + a * (u[i - 1] - 2.0 * u[i] + u[i + 1])
        u, v = v, u
    return np.sum(u * u) + 0.5 * np.sum(v)


def heat_buffers_plain(u0, a, T, k):
    u = u0.copy()
    v = np.zeros_like(u0)
    n = u.shape[0]
    for t in range(T):
        v[0] = u[0]
        v[n - 1] = u[n - 1]
        for i in range(1, n - 1):
            v[i] = u[i] + a * (u[i - 1] - 2.0 * u[i] + u[i + 1])
        u, v = v, u
    return np.sum(u * u) + 0.5 * np.sum(v)


def inner_while(x, T, k):
    s = 0.0
    y = x[0]
    for t in jg.checkpointed(range(1, T + 1), snapshots=k):
        m = 0
        while m < t % 3 + 1:  # trip count varies per step: counted, kept per segment
            y = y * 0.9 + math.sin(y * x[1]) * 0.1
            m += 1
        s = s + y * t
    return s


def inner_while_plain(x, T, k):
    s = 0.0
    y = x[0]
    for t in range(1, T + 1):
        m = 0
        while m < t % 3 + 1:
            y = y * 0.9 + math.sin(y * x[1]) * 0.1
            m += 1
        s = s + y * t
    return s


def sqrt_default(x, T, k):
    y = x[0]
    acc = 0.0
    for t in jg.checkpointed(range(2, 2 * T + 2, 2)):  # snapshots=None: about sqrt(T)
        y = y + 0.01 * math.sin(y * x[1]) * t
        acc += y * x[1]
    return acc


def sqrt_default_plain(x, T, k):
    y = x[0]
    acc = 0.0
    for t in range(2, 2 * T + 2, 2):
        y = y + 0.01 * math.sin(y * x[1]) * t
        acc += y * x[1]
    return acc


P = np.array([10.0, 28.0, 8.0 / 3.0])
U0 = np.sin(np.linspace(0.0, 3.0, 9))
X2 = np.array([0.7, 1.3])

#: (checkpointed, plain, args without T and k, wrt)
CASES = {
    "lorenz": (lorenz, lorenz_plain, (P,), 0),
    "heat_inplace": (heat_inplace, heat_inplace_plain, (U0, 0.2), (0, 1)),
    "heat_buffers": (heat_buffers, heat_buffers_plain, (U0, 0.2), (0, 1)),
    "inner_while": (inner_while, inner_while_plain, (X2,), 0),
    "sqrt_default": (sqrt_default, sqrt_default_plain, (X2,), 0),
}

#: (T, snapshots): no step, one, fewer snapshots than steps, as many, more, uneven segments
SCHEDULES = [(0, 3), (1, 1), (2, 1), (7, 3), (12, 12), (12, 40), (40, 1), (41, 6), (300, 17)]


def _same(a, b):
    for ga, gb in zip(a if isinstance(a, tuple) else (a,), b if isinstance(b, tuple) else (b,),
                      strict=True):
        np.testing.assert_allclose(ga, gb, rtol=1e-11, atol=1e-13)


@pytest.mark.parametrize("jit", [False, True], ids=["nojit", "jit"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_equals_the_plain_loop(name, jit):
    ck, plain, args, wrt = CASES[name]
    g_ck = jg.value_and_grad(ck, wrt=wrt, jit=jit)
    g_plain = jg.value_and_grad(plain, wrt=wrt, jit=jit)
    for T, k in SCHEDULES:
        before = [a.copy() for a in args if isinstance(a, np.ndarray)]
        v1, d1 = g_ck(*args, T, k)
        v2, d2 = g_plain(*args, T, k)
        assert v1 == pytest.approx(v2, rel=1e-12, abs=1e-14), (T, k)
        _same(d1, d2)
        for a, b in zip([a for a in args if isinstance(a, np.ndarray)], before, strict=True):
            np.testing.assert_array_equal(a, b)  # inputs unchanged
    # the primal (the user's function as Numba or Python runs it) is the plain loop's value
    assert jg.differentiate(ck, wrt=wrt, jit=jit)(*args, 41, 6) == \
        pytest.approx(plain(*args, 41, 6), rel=1e-12)


@pytest.mark.parametrize("jit", [False, True], ids=["nojit", "jit"])
@pytest.mark.parametrize("name", ["lorenz", "heat_buffers", "inner_while"])
def test_finite_differences(name, jit):
    ck, _, args, wrt = CASES[name]
    check_grad(ck, (*args, 23, 5), wrt=wrt, jit=jit, rtol=1e-5, atol=1e-7)


def test_keeps_snapshots_not_a_tape_per_step():
    """The reverse sweep holds the snapshots and one segment's tape at a time: with
    sqrt(T) snapshots the largest tape is about sqrt(T) steps, not T."""
    src = jg.grad(lorenz, jit=False).source(P, 400, 20)
    assert "restore_into" not in src  # scalars only: restored by rebinding
    assert "for _s in range(0, _steps, _seg):" in src
    src = jg.grad(heat_inplace, wrt=(0, 1), jit=False).source(U0, 0.2, 40, 5)
    assert src.count("restore_into(u, _snap") == 1  # the state array, written in place


def _region(u, a):
    for i in range(1, u.shape[0] - 1):
        u[i] = u[i] * a + u[i - 1] * 0.1
    return np.sum(u)


def region_writes_outer(x, a):
    u = x * 2.0
    s = jg.checkpoint(_region, u, a)
    return s + np.sum(u * u)


def region_writes_outer_plain(x, a):
    u = x * 2.0
    s = _region(u, a)
    return s + np.sum(u * u)


@pytest.mark.parametrize("jit", [False, True], ids=["nojit", "jit"])
def test_checkpoint_region_writes_an_array_from_outside(jit):
    """jg.checkpoint(f, u) where f writes u in place: u is snapshot at entry and written back
    before the rerun (this was refused)."""
    x = np.linspace(0.3, 1.4, 6)
    check_grad(region_writes_outer, (x, 0.8), wrt=(0, 1), jit=jit)
    _same(jg.grad(region_writes_outer, wrt=(0, 1), jit=jit)(x, 0.8),
          jg.grad(region_writes_outer_plain, wrt=(0, 1), jit=jit)(x, 0.8))


def breaks_out(x, T):
    s = 0.0
    for t in jg.checkpointed(range(T), snapshots=4):
        s = s + x[0] * t
        if s > 3.0:
            break
    return s


def returns_early(x, T):
    s = 0.0
    for t in jg.checkpointed(range(T), snapshots=4):
        s = s + x[0] * t
        if s > 3.0:
            return s
    return s


def not_a_range(x, T):
    s = 0.0
    for v in jg.checkpointed(x, snapshots=2):
        s = s + v
    return s


@pytest.mark.parametrize("f,words", [(breaks_out, "break"), (returns_early, "break (or return)"),
                                     (not_a_range, "takes a range")])
def test_refusals_name_the_line(f, words):
    with pytest.raises(TransformError) as e:
        jg.grad(f, jit=False)(np.ones(3), 5)
    msg = str(e.value)
    assert words in msg and __file__.rsplit("/", 1)[-1] in msg
    assert e.value.lineno is not None


def test_outside_differentiated_code_it_is_the_range():
    assert jg.checkpointed(range(5), snapshots=2) == range(5)
    assert lorenz(P, 30, 4) == lorenz_plain(P, 30, 4)


@pytest.mark.parametrize("name", ["lorenz", "heat_buffers", "inner_while"])
def test_forward_mode_and_hvp_see_the_plain_loop(name):
    """In forward mode a checkpointed loop is the loop (its regions run once); the
    Hessian-vector product (forward over the reverse code) goes through the segments."""
    ck, plain, args, wrt = CASES[name]
    w = wrt if isinstance(wrt, int) else wrt[0]
    v = np.linspace(0.2, 1.0, np.size(args[w])).reshape(np.shape(args[w]))
    full = (*args, 23, 5)
    y1, t1 = jg.jvp(ck, full, v, wrt=w, jit=False)
    y2, t2 = jg.jvp(plain, full, v, wrt=w, jit=False)
    assert y1 == pytest.approx(y2, rel=1e-12)
    np.testing.assert_allclose(t1, t2, rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(jg.hvp(ck, full, v, wrt=w, jit=False),
                               jg.hvp(plain, full, v, wrt=w, jit=False), rtol=1e-10, atol=1e-12)
