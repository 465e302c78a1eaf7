"""A ``jg.checkpointed`` loop inside another loop or region runs on the binomial schedule
too: the outer forward sweep tapes its entry state and runs it without a tape; each outer
trip's reverse restores that state, reruns the loop's forward sweep (keeping snapshots in
the same number of slots) and reverses it step by step.

Checked against the same function over plain ranges (equal to round-off) for T from 0 to
9 and snapshots 1, 2, 3 and T, against central differences, and under ``jg.hvp``."""

from __future__ import annotations

import math

import numpy as np
import pytest
from gradcheck import check_grad
from test_checkpointed import _same

import jitgrad as jg


def heat_epochs(u0, a, T, k):
    """In-place state; the outer body changes it between epochs and reads it."""
    u = u0.copy()
    n = u.shape[0]
    s = 0.0
    for e in range(3):
        for t in jg.checkpointed(range(T), snapshots=k):
            for i in range(1, n - 1):
                u[i] = u[i] + a * (u[i - 1] - 2.0 * u[i] + u[i + 1])
        s = s + np.sum(u * u) * (e + 1)
        u[0] = u[0] * 0.5 + a
    return s


def buffers_epochs(u0, a, T, k):
    """Two buffers swapped each step; a coefficient the outer body rebinds."""
    u = u0.copy()
    v = np.zeros_like(u0)
    n = u.shape[0]
    c = a
    for e in range(2):
        for t in jg.checkpointed(range(T), snapshots=k):
            v[0] = u[0]
            v[n - 1] = u[n - 1]
            for i in range(1, n - 1):
                v[i] = u[i] + c * (u[i - 1] - 2.0 * u[i] + u[i + 1])
            u, v = v, u
        c = c * 0.7 + np.sum(u) * 0.01
    return np.sum(u * u) + 0.5 * np.sum(v) + c


def scalars_in_while(x, T, k):
    """Scalar state, the outer loop a while; the trip count changes per outer trip."""
    y = x[0]
    acc = 0.0
    m = 0
    while m < 3:
        for t in jg.checkpointed(range(T + m), snapshots=k):
            y = y * 0.9 + math.sin(y * x[1]) * 0.1
            acc += y * t * 0.01
        y = y + x[1] * 0.1
        m += 1
    return acc + y


def _region(u, a, T, k):
    s = 0.0
    for t in jg.checkpointed(range(T), snapshots=k):
        u = np.tanh(u * a) + 0.1
        s = s + np.sum(u) * 0.1
    return s + np.sum(u * u)


def in_a_region(x, a, T, k):
    """A checkpointed loop inside a jg.checkpoint region (rebound array state)."""
    u = x * 1.0
    r = jg.checkpoint(_region, u, a, T, k)
    return r + np.sum(u)


# --- the same over plain ranges ---


def heat_epochs_plain(u0, a, T, k):
    u = u0.copy()
    n = u.shape[0]
    s = 0.0
    for e in range(3):
        for t in range(T):
            for i in range(1, n - 1):
                u[i] = u[i] + a * (u[i - 1] - 2.0 * u[i] + u[i + 1])
        s = s + np.sum(u * u) * (e + 1)
        u[0] = u[0] * 0.5 + a
    return s


def buffers_epochs_plain(u0, a, T, k):
    u = u0.copy()
    v = np.zeros_like(u0)
    n = u.shape[0]
    c = a
    for e in range(2):
        for t in range(T):
            v[0] = u[0]
            v[n - 1] = u[n - 1]
            for i in range(1, n - 1):
                v[i] = u[i] + c * (u[i - 1] - 2.0 * u[i] + u[i + 1])
            u, v = v, u
        c = c * 0.7 + np.sum(u) * 0.01
    return np.sum(u * u) + 0.5 * np.sum(v) + c


def scalars_in_while_plain(x, T, k):
    y = x[0]
    acc = 0.0
    m = 0
    while m < 3:
        for t in range(T + m):
            y = y * 0.9 + math.sin(y * x[1]) * 0.1
            acc += y * t * 0.01
        y = y + x[1] * 0.1
        m += 1
    return acc + y


def _region_plain(u, a, T, k):
    s = 0.0
    for t in range(T):
        u = np.tanh(u * a) + 0.1
        s = s + np.sum(u) * 0.1
    return s + np.sum(u * u)


def in_a_region_plain(x, a, T, k):
    u = x * 1.0
    r = jg.checkpoint(_region_plain, u, a, T, k)
    return r + np.sum(u)


U0 = np.sin(np.linspace(0.0, 3.0, 7))
X2 = np.array([0.7, 1.3])
#: (checkpointed, plain, args without T and k, wrt)
CASES = {
    "heat_epochs": (heat_epochs, heat_epochs_plain, (U0, 0.2), (0, 1)),
    "buffers_epochs": (buffers_epochs, buffers_epochs_plain, (U0, 0.2), (0, 1)),
    "scalars_in_while": (scalars_in_while, scalars_in_while_plain, (X2,), 0),
    "in_a_region": (in_a_region, in_a_region_plain, (np.array([0.3, -0.2, 0.5]), 0.8), (0, 1)),
}


@pytest.mark.parametrize("jit", [False, True], ids=["nojit", "jit"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_equals_the_plain_loops(name, jit):
    f, g, args, wrt = CASES[name]
    ck, plain = jg.value_and_grad(f, wrt=wrt, jit=jit), jg.value_and_grad(g, wrt=wrt, jit=jit)
    for T in (0, 1, 2, 5, 9):
        for k in sorted({1, 2, 3, max(T, 1)}):
            before = [a.copy() for a in args if isinstance(a, np.ndarray)]
            v1, d1 = ck(*args, T, k)
            v2, d2 = plain(*args, T, k)
            assert v1 == pytest.approx(v2, rel=1e-12, abs=1e-14), (T, k)
            _same(d1, d2)
            for a, b in zip([a for a in args if isinstance(a, np.ndarray)], before,
                            strict=True):
                np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("jit", [False, True], ids=["nojit", "jit"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_finite_differences(name, jit):
    f, _, args, wrt = CASES[name]
    check_grad(f, (*args, 6, 2), wrt=wrt, jit=jit, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("name", sorted(CASES))
def test_binomial_schedule_not_segments(name):
    f, _, args, wrt = CASES[name]
    src = jg.grad(f, wrt=wrt, jit=False).source(*args, 6, 2)
    assert "revolve_split(" in src and "binomial schedule (revolve)" in src
    assert "_seg" not in src


@pytest.mark.parametrize("name", sorted(CASES))
def test_hvp(name):
    """Forward over the reverse code (jit=False): equal to the plain loops' hvp."""
    f, g, args, wrt = CASES[name]
    wrts = wrt if isinstance(wrt, tuple) else (wrt,)
    v = tuple(np.cos(np.arange(np.size(args[w])) + 1.0).reshape(np.shape(args[w]))
              if np.ndim(args[w]) else 0.6 for w in wrts)
    v = v if isinstance(wrt, tuple) else v[0]
    for k in (1, 2, 6):
        _same(jg.hvp(f, (*args, 6, k), v, wrt=wrt, jit=False),
              jg.hvp(g, (*args, 6, k), v, wrt=wrt, jit=False))


# --- slots: allocated once per call, kept between calls ---------------------------------


def _entry(d, args, name):
    """This thread's kept workspace entry ``name`` of ``d``'s gradient-only code (found
    where the generated code unpacks ``_ws``)."""
    src = d._generated(args).unit.sources["grad_only"]
    taken = next(line for line in src.splitlines() if line.endswith(" = _ws"))
    names = [n.strip() for n in taken.split("=")[0].split(",")]
    return d._last.compiled.pool.__dict__["grad_only"][names.index(name)]


@pytest.mark.parametrize("jit", [False, True], ids=["nojit", "jit"])
def test_slots_are_allocated_once_per_call_and_kept(jit):
    """No slot storage is made per outer trip: the loop grows storage taken from the
    workspace (reused by the outer trips, the reverse reruns and the next call); every call,
    at changing sizes, against central differences."""
    d = jg.differentiate(heat_epochs, wrt=(0, 1), jit=jit)
    src = d.source(U0, 0.2, 6, 2)
    assert "np.zeros(_slots" not in src and "array_slots(u, _slots)" not in src
    assert src.count("_at = tape_reserve(_at, 0, _slots)") == 2  # forward, reverse rerun
    assert src.count("_snaps_u = array_slots(u, _slots, _ws_slots_u)") == 2
    rng = np.random.default_rng(11)
    prev = None
    for n, T, k in ((7, 6, 2), (7, 6, 2), (5, 4, 2), (12, 9, 3), (7, 6, 2)):
        u0 = rng.uniform(-1.0, 1.0, n)
        check_grad(heat_epochs, (u0, 0.2, T, k), wrt=(0, 1), jit=jit, rtol=1e-5, atol=1e-7,
                   shared=True)
        du, da = d.grad(u0, 0.2, T, k)
        want = jg.grad(heat_epochs_plain, wrt=(0, 1), jit=jit)(u0, 0.2, T, k)
        _same((du, da), want)
        store = _entry(d, (u0, 0.2, T, k), "_ws_slots_u")
        assert store.shape[0] >= k * n
        if prev is not None and n * k <= prev.shape[0]:
            assert store.ctypes.data == prev.ctypes.data, "the same storage, not a new one"
        prev = store


@pytest.mark.parametrize("jit", [False, True], ids=["nojit", "jit"])
def test_scalar_and_swapped_state_slots_are_kept(jit):
    for name, sizes in (("scalars_in_while", ((6, 2), (6, 2), (9, 3), (3, 1))),
                        ("buffers_epochs", ((6, 2), (6, 2), (4, 3), (8, 8)))):
        f, g, args, wrt = CASES[name]
        d = jg.differentiate(f, wrt=wrt, jit=jit)
        plain = jg.grad(g, wrt=wrt, jit=jit)
        for T, k in sizes:
            _same(d.grad(*args, T, k), plain(*args, T, k))
        check_grad(f, (*args, T, k), wrt=wrt, jit=jit, rtol=1e-5, atol=1e-7)
        src = d.source(*args, 6, 2)
        assert "np.zeros(_slots" not in src and "np.empty(_slots" not in src


def test_array_slots_fall_back_to_new_memory():
    """``array_slots`` with storage of another dtype, or too small, or none, makes a new
    buffer; with room it views the storage."""
    from jitgrad.kernels.revolve import array_slots

    x = np.ones((2, 3))
    store = np.empty(20)
    view = array_slots(x, 3, store)
    assert view.shape == (3, 2, 3) and np.shares_memory(view, store)
    for other in (np.empty(20, np.float32), np.empty(5), None):
        out = array_slots(x, 3, other)
        assert out.shape == (3, 2, 3) and (other is None or not np.shares_memory(out, other))
