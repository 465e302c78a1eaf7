"""A snapshot before each step (``Binomial.loop(each_step=True)``, chosen by automatic
checkpointing where a step's state is scalars and references to arrays it rebinds, and the
snapshots of every step take at most half the tape): the reverse sweep reruns each step
with its tape right before its adjoint, and, in that trip, reads again the values nothing
in the rest of the trip rebinds (``Analysis.replayed``) instead of taping them.

Every case checks ``value_and_grad`` against the primal and every gradient element against
central differences, in ``jit=True`` and ``jit=False``, and says which schedule ran (the
generated source).  Preconditions that fail keep the binomial schedule or the tape."""

from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg

X0 = np.array([0.3, 0.9, 0.5, 0.2, 0.8, 0.4, 0.6, 0.1])
EACH = "a snapshot before each step"
BINOMIAL = "on the binomial schedule"


@pytest.fixture(autouse=True)
def _small_threshold(monkeypatch):
    monkeypatch.setattr(jg.config, "checkpoint_bytes", 0)
    monkeypatch.setattr(jg.config, "auto_checkpoint", True)


def stage(x, y):
    """z_0 = x_0, z_i = x_i * sin(y_{i-1}): elements of a fresh array read in a loop."""
    n = x.shape[0]
    z = np.empty(n)
    z[0] = x[0]
    for i in range(1, n):
        z[i] = x[i] * np.sin(y[i - 1])
    return z


def midpoint(x, steps):
    """Explicit midpoint steps: the state ``y`` is rebound to a fresh array each step."""
    h = 1.0 / (steps + 1)
    y = x * 0.5
    for _ in range(steps):
        k1 = stage(x, y)
        k2 = stage(x, y + h * k1 / 2.0)
        y = y + h * k2
    return np.sum(y * y)


def midpoint_later(x, steps):
    """As ``midpoint``, and ``h``, read by every step, is rebound after the loop (its
    value before the loop is kept once for the replayed steps)."""
    h = 1.0 / (steps + 1)
    y = x * 0.5
    for _ in range(steps):
        k1 = stage(x, y)
        y = y + h * stage(x, y + h * k1)
    h = 3.0
    return np.sum(y * y) + h * y[0]


def in_place(x, steps):
    """The state is written in place (its elements change): each snapshot copies them,
    so the binomial schedule runs, not a snapshot per step."""
    n = x.shape[0]
    y = x.copy()
    for _ in range(steps):
        z = stage(x, y)
        for i in range(n):
            y[i] = y[i] + 0.1 * z[i]
    return np.sum(y * y)


def _central(f, x, steps, h=1e-6):
    g = np.zeros_like(x)
    for i in range(x.size):
        xp, xm = x.copy(), x.copy()
        xp[i] += h
        xm[i] -= h
        g[i] = (f(xp, steps) - f(xm, steps)) / (2 * h)
    return g


def _check(f, steps, jit, schedule):
    d = jg.differentiate(f, wrt=0, jit=jit)
    val, g = d.value_and_grad(X0, steps)
    assert val == pytest.approx(f(X0, steps), rel=1e-12)
    np.testing.assert_allclose(g, _central(f, X0, steps), rtol=1e-5, atol=1e-7)
    assert schedule in d.source(X0, steps)
    return d


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("f", [midpoint, midpoint_later])
def test_each_step(f, jit):
    d = _check(f, 40, jit, EACH)
    # in the replayed trip the stages' elements are read again: only the reads of the
    # state ``y``, which the trip rebinds at its end, are stored
    plain = jg.differentiate(f, wrt=0, jit=jit, auto_checkpoint=False)
    puts = plain.source(X0, 40).count("tape_put(")
    assert d.source(X0, 40).count("tape_put(") < 2 * puts  # (both branches: tape, each)
    g_plain = plain.grad(X0, 40)
    np.testing.assert_allclose(d.grad(X0, 40), g_plain, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("jit", [True, False])
def test_zero_steps(jit):
    d = jg.differentiate(midpoint, wrt=0, jit=jit)
    np.testing.assert_allclose(d.grad(X0, 0), X0 * 0.5, rtol=1e-12)


@pytest.mark.parametrize("jit", [True, False])
def test_elements_copied_keeps_binomial(jit):
    _check(in_place, 30, jit, BINOMIAL)


@pytest.mark.parametrize("jit", [True, False])
def test_snapshots_too_large_keep_the_tape(monkeypatch, jit):
    """Where the tape is within the threshold, the loop runs with its tape (the branch
    taken where it starts): same gradient."""
    monkeypatch.setattr(jg.config, "checkpoint_bytes", 1 << 30)
    _check(midpoint, 20, jit, EACH)
