"""Stored values the same in every trip of a fused loop are computed and pushed in its
first trip only, read back from the tape in the others (``backend/trip_memo.py``)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from gradcheck import check_grad

import jitgrad as jg


def memo(q, x):
    s = 0.0
    for i in range(x.shape[0]):
        t = 0.0
        for j in range(q.shape[0]):
            t += math.exp(q[j]) * x[i]
        s += math.sin(t)
    return s


def memo_view(q, x):
    """A row of a matrix through a view bound in the loop, a bound read off the shape of
    an array made before the loop (the policy recomputes the exponential here)."""
    n, d = x.shape
    xc = np.empty(d)
    s = 0.0
    for i in range(n):
        for k in range(q.shape[0]):
            row = q[k]
            m = xc.shape[0]
            t = 0.0
            for j in range(m):
                c = x[i, j] - row[j]
                t += math.exp(row[j]) * c * c
            s += math.log(1.0 + t)
    return s


def collide(q, x):
    """``memo`` with the names generated code would pick for the flag and the tape."""
    _new_trip = 2.0
    _tape_t2_1 = 0.5
    s = 0.0
    for i in range(x.shape[0]):
        t = 0.0
        for j in range(q.shape[0]):
            t += math.exp(q[j] * _tape_t2_1) * x[i] * _new_trip
        s += math.sin(t)
    return s


def outer(q, x):
    """The outer loop is the fused one, and what is stored depends on its index."""
    s = 0.0
    for t in range(3):
        for i in range(x.shape[0]):
            u = 0.0
            for j in range(q.shape[0]):
                u += math.exp(q[j] * (t + 1.0)) * x[i]
            s += math.sin(u)
    return s


# --- not the same in every trip: stored in every trip, as before -------------------------


def depends_on_trip(q, x):
    s = 0.0
    for i in range(x.shape[0]):
        t = 0.0
        for j in range(q.shape[0]):
            t += math.exp(q[j] * x[i])
        s += math.sin(t)
    return s


def written_in_loop(q, x):
    w = q * 1.0
    s = 0.0
    for i in range(x.shape[0]):
        w[0] = x[i]
        t = 0.0
        for j in range(q.shape[0]):
            t += math.exp(w[j]) * x[i]
        s += math.sin(t)
    return s


def range_varies(q, x):
    s = 0.0
    for i in range(x.shape[0]):
        t = 0.0
        for j in range(min(i % 3, q.shape[0])):
            t += math.exp(q[j]) * x[i]
        s += math.sin(t)
    return s


def branch(q, x):
    s = 0.0
    for i in range(x.shape[0]):
        t = 0.0
        if x[i] > 0.0:
            for j in range(q.shape[0]):
                t += math.exp(q[j]) * x[i]
        s += math.sin(t)
    return s


def bound_per_trip(q, x):
    s = 0.0
    for i in range(x.shape[0]):
        c = x[i] * 0.25
        t = 0.0
        for j in range(q.shape[0]):
            t += math.exp(q[j] + c) * x[i]
        s += math.sin(t)
    return s


MEMO = (memo, collide)
KEPT = (outer, depends_on_trip, written_in_loop, range_varies, branch, bound_per_trip)


def _args(f, n: int = 4, d: int = 3) -> tuple:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(n, d)) if f is memo_view else rng.normal(size=n)
    return rng.normal(size=(2, d) if f is memo_view else d) * 0.5, x


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("f", (*MEMO, memo_view, *KEPT), ids=lambda f: f.__name__)
def test_values_and_gradients(f, jit):
    """Value and every element of both gradients against central differences; again on
    other sizes (one trip, none) from the same compiled function."""
    check_grad(f, _args(f), wrt=(0, 1), jit=jit, rtol=1e-6, atol=1e-8, shared=True)
    g = jg.grad(f, wrt=(0, 1), jit=jit)
    for n, d in ((1, 3), (0, 2), (6, 1), (5, 4)):
        args = _args(f, n, d)
        want = check_grad(f, args, wrt=(0, 1), jit=jit, rtol=1e-6, atol=1e-8, shared=True)
        for a, b in zip(g(*args), want, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("f", MEMO, ids=lambda f: f.__name__)
def test_made_in_the_first_trip(f, jit):
    """The exponential is computed and pushed under the first trip's flag only."""
    src = jg.grad(f, wrt=(0, 1), jit=jit).source(*_args(f))
    assert "the same in every trip: made in the first" in src, src
    flag = "_new_trip2" if f is collide else "_new_trip"
    assert f"if {flag}:" in src and f"{flag} = False" in src, src


@pytest.mark.parametrize("f", KEPT, ids=lambda f: f.__name__)
def test_stored_every_trip(f):
    """A value that may differ between trips, a range or a branch that may: unchanged."""
    src = jg.grad(f, wrt=(0, 1)).source(*_args(f))
    assert "_new_trip" not in src, src
