"""Loops whose last taken branch decides their result (``front/last_taken.py``): a running
maximum finds its iteration on copies and assigns once after the loop, so the reverse
sweep keeps no tape of every test.  Each case checks where the rewrite applies (or must
not) in the generated source, and every gradient element against central differences
(or, at ties, the closed form) in both ``jit`` modes."""

from __future__ import annotations

import math

import numba
import numpy as np
import pytest
from gradcheck import check_grad
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_recompute import logsumexp_rows  # the softmax workload's row maximum

import jitgrad as jg

REWRITTEN = "_hit = True"


def running_max(x):
    m = x[0]
    for j in range(1, x.shape[0]):
        if x[j] > m:
            m = x[j]
    return m * m


def last_max(x):
    """``>=``: the last of equal maxima."""
    m = x[0]
    for j in range(1, x.shape[0]):
        if x[j] >= m:
            m = x[j]
    return 3.0 * m


def argmin_value(x, w):
    """An index and a computed value (reading ``w``, a wrt argument) assigned together."""
    best = x[0]
    k = 0
    val = w * x[0]
    for j in range(1, x.shape[0]):
        if x[j] < best:
            best = x[j]
            k = j
            val = w * math.sin(x[j]) + j
    return val * best + k


def last_positive(x):
    """The test does not read the assigned name: no copy needed."""
    last = 0.0
    for j in range(x.shape[0]):
        if x[j] > 0.2:
            last = x[j] * x[j]
    return last + x[0]


def keeps_else(x):
    m = x[0]
    for j in range(1, x.shape[0]):
        if x[j] > m:
            m = x[j]
        else:
            m = m * 0.5
    return m


def reads_itself(x):
    """``s = s + x[j]``: each taken iteration adds, it does not decide alone."""
    s = 0.0
    for j in range(x.shape[0]):
        if x[j] > 0.0:
            s = s + x[j]
    return s


def two_statements(x):
    m = x[0]
    for j in range(1, x.shape[0]):
        t = x[j] * 2.0
        if t > m:
            m = t
    return m


def unbound_before(x):
    """``m`` bound only inside the loop: the copy before it would read an unbound name."""
    for j in range(x.shape[0]):
        if j == 0 or x[j] > m:  # noqa: F821 (bound in the first trip)
            m = x[j]
    return m * 2.0


@numba.njit(parallel=True)
def parallel_rows(z):
    out = 0.0
    for i in numba.prange(z.shape[0]):
        m = z[i, 0]
        for j in range(1, z.shape[1]):
            if z[i, j] > m:
                m = z[i, j]
        out += m * m
    return out


def _src(f, *args, **kw) -> str:
    return jg.differentiate(f, **kw).source(*args)


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("n", [1, 2, 5, 9])
def test_rewritten_gradients(n, jit):
    rng = np.random.default_rng(n)
    x = rng.uniform(-1, 1, n)
    for f in (running_max, last_max, last_positive):
        check_grad(f, (x,), 0, jit=jit)
    check_grad(argmin_value, (x, 0.7), (0, 1), jit=jit)
    z = rng.uniform(-2, 2, (3, n))
    check_grad(logsumexp_rows, (z,), 0, jit=jit)
    check_grad(parallel_rows.py_func if not jit else parallel_rows, (z,), 0, jit=jit)


def test_where_it_applies():
    x = np.ones(4)
    for f in (running_max, last_max, last_positive):
        src = _src(f, x)
        assert REWRITTEN in src and "_tape_c" not in src
    assert REWRITTEN in _src(argmin_value, x, 0.5, wrt=(0, 1))
    src = _src(logsumexp_rows, np.ones((2, 3)))
    assert REWRITTEN in src and "_tape_c" not in src
    assert REWRITTEN in _src(parallel_rows, np.ones((2, 3)))  # the inner loop is serial
    # the copy of m: the loop itself carries no gradient
    assert "if x[j] > _m:" in jg.differentiate(running_max).source(x, stage="last_taken")


@pytest.mark.parametrize("jit", [True, False])
def test_where_it_must_not_apply(jit):
    x = np.random.default_rng(3).uniform(-1, 1, 6)
    for f in (keeps_else, reads_itself, two_statements, unbound_before):
        src = jg.differentiate(f).source(x, stage="last_taken")
        assert REWRITTEN not in src, f.__name__
        if f is not unbound_before or not jit:  # (Numba: m may be undefined)
            check_grad(f, (x,), 0, jit=jit)


def checkpointed_max(x):
    """The user chose this loop's reverse schedule: it stays as written."""
    m = x[0]
    for j in jg.checkpointed(range(1, x.shape[0]), snapshots=2):
        if x[j] > m:
            m = x[j]
    return m * m


@pytest.mark.parametrize("jit", [True, False])
def test_checkpointed_loop_is_left_alone(jit):
    x = np.random.default_rng(4).uniform(-1, 1, 7)
    assert REWRITTEN not in jg.differentiate(checkpointed_max).source(x, stage="last_taken")
    check_grad(checkpointed_max, (x,), 0, jit=jit)


def test_impure_value_is_not_moved():
    def noisy(x):
        m = x[0]
        for j in range(1, x.shape[0]):
            if x[j] > m:
                m = x[j] + np.random.rand()
        return m

    src = jg.differentiate(noisy).source(np.ones(3), stage="last_taken")
    assert REWRITTEN not in src


def test_loop_index_after_the_loop_is_the_last_one():
    """The loop still runs: ``j`` after it is its last value, as in Python."""

    def after(x):
        m = x[0]
        for j in range(1, x.shape[0]):
            if x[j] > m:
                m = x[j]
        return m * j

    x = np.array([0.5, 2.0, 1.0, 0.25])
    for jit in (True, False):
        check_grad(after, (x,), 0, jit=jit)
        assert jg.grad(after, jit=jit)(x)[1] == pytest.approx(3.0)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(vals=st.lists(st.integers(-3, 3), min_size=1, max_size=9))
def test_ties_closed_form(vals):
    """With ties, ``>`` picks the first maximum and ``>=`` the last: the gradient is the
    one-hot vector there (``2 m`` and 3), exactly, in both modes."""
    x = np.array(vals, dtype=float)
    first = int(np.argmax(x))
    last = len(x) - 1 - int(np.argmax(x[::-1]))
    for jit in (True, False):
        g = jg.grad(running_max, jit=jit)(x)
        want = np.zeros_like(x)
        want[first] = 2.0 * x[first]
        np.testing.assert_array_equal(g, want)
        g = jg.grad(last_max, jit=jit)(x)
        want = np.zeros_like(x)
        want[last] = 3.0
        np.testing.assert_array_equal(g, want)
