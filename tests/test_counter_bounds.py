"""An index that counts up or down by a constant once per trip (``idx += 1``, a packed
triangle's position) is checked once before its loop, from its value on entry, not on
every trip (``backend/bounds.py``, ``_Prover.count``)."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from gradcheck import check_grad

import jitgrad as jg


def triangle(w, x):
    """``out[j] += w[idx] * x[i]`` over a packed lower triangle (GradBench gmm's Q x)."""
    d = x.shape[0]
    out = np.zeros(d)
    idx = 0
    for i in range(d):
        for j in range(i + 1, d):
            out[j] += w[idx] * x[i]
            idx += 1
    s = 0.0
    for j in range(d):
        s += math.sin(out[j]) * out[j]
    return s


def down(w, x):
    """A counter stepping down by two, read after its step."""
    n = x.shape[0]
    k = 2 * n + 1
    s = 0.0
    for i in range(n):
        k = k - 2
        s += w[k] * x[i] * w[k - 1]
    return s


def sometimes(w, x):
    """The step under a branch: no counter (checked where it is read)."""
    idx = 0
    s = 0.0
    for i in range(x.shape[0]):
        s += w[idx] * x[i] * x[i]
        if x[i] > 0.0:
            idx += 1
    return s


def outer_step(w, x):
    """A counter the outer loop steps, read in an inner loop that does not: checked before
    the inner loop from its value there (fuzz seed 9502, program 22: it was checked as
    its value at the outer loop's entry plus the trip, and raised)."""
    y = np.zeros(3)
    K = 0
    s = 0.0
    for M in range(3):
        K += 1
        for val in x:
            y[K - 1] = val * w[K]
            s += y[1] * w[M % 2] + math.sin(y[K - 1])
    return s


CASES = {triangle: (10, 5), down: (11, 5), sometimes: (6, 5), outer_step: (4, 5)}


def _args(f) -> tuple:
    nl, nx = CASES[f]
    rng = np.random.default_rng(2)
    return rng.normal(size=nl), rng.normal(size=nx)


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("f", list(CASES), ids=lambda f: f.__name__)
def test_values_and_gradients(f, jit):
    check_grad(f, _args(f), wrt=(0, 1), jit=jit, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f", [triangle, down], ids=lambda f: f.__name__)
def test_checked_once_per_loop(f):
    """No check of the counter inside the loop that steps it (before: one per trip)."""
    src = jg.grad(f, wrt=(0, 1)).source(*_args(f))
    assert "every index is checked explicitly" in src, src
    raises = re.findall(r"raise IndexError\('([^']*)'\)", src)
    assert raises and all("loop over" in r for r in raises if "w[" in r), src


@pytest.mark.parametrize("jit", [True, False])
def test_past_the_end_still_raises(jit):
    """A counter that runs past its array's end raises, checked once or not."""
    g = jg.grad(triangle, wrt=(0, 1), jit=jit)
    w, x = _args(triangle)
    with pytest.raises(IndexError):
        g(w[:9], x)
    gd = jg.grad(down, wrt=(0, 1), jit=jit)
    w, x = _args(down)
    with pytest.raises(IndexError):
        gd(w, np.ones(7))
