"""Reversed loops skipped where their only cotangent is zero (``backend/zero_skip.py``).

Each workload has a loop of the adjoint sweep whose cotangent is exactly zero on some
trips: the distance loop of a centroid that is not the nearest (argmin/``min``), a
branch not taken, a seed multiplied by zero.  Each checks the value and every gradient
element against central differences in both ``jit`` modes, and where the guard must (or
must not) appear in the generated source; a loop that pops a tape is never skipped.
"""

from __future__ import annotations

import ast
import math

import numpy as np
import pytest
from gradcheck import check_grad, check_hvp

import jitgrad as jg
from jitgrad.kernels import helpers
from jitgrad.transpiler.backend.zero_skip import is_zero, skippable

JITS = [True, False]


def kmeans_cost(points, centroids):
    n, d = points.shape
    cost = 0.0
    for i in range(n):
        closest = np.inf
        for j in range(centroids.shape[0]):
            dist = 0.0
            for c in range(d):
                diff = points[i, c] - centroids[j, c]
                dist += diff * diff
            if dist < closest:
                closest = dist
        cost += closest
    return cost


def nearest_min(x, w):
    """The selected value by ``min``: only the smallest product passes a cotangent."""
    s = 0.0
    for i in range(x.shape[0]):
        best = np.inf
        for j in range(w.shape[0]):
            t = 0.0
            for k in range(3):
                t += math.sin(x[i] * w[j] + k)
            best = min(best, t)
        s += best * best
    return s


def branch_taken(x, w):
    """``t`` reaches the sum only where ``x[i] > 0``: elsewhere its loop's adjoint is idle."""
    s = 0.0
    for i in range(x.shape[0]):
        t = 0.0
        for j in range(w.shape[0]):
            t += w[j] * math.cos(x[i] * j)
        if x[i] > 0.0:
            s += t * t
    return s


def zero_weights(x, a):
    """The cotangent of ``t`` is ``a[i]``: zero on the trips with a zero weight."""
    s = 0.0
    for i in range(a.shape[0]):
        t = 0.0
        for j in range(x.shape[0]):
            t += math.sin(x[j] * (i + 1))
        s += a[i] * t
    return s


def popped(x, a):
    """The inner loop rebinds ``y`` (taped): its adjoint pops the tape once per trip, and
    is skipped with the tape's cursor stepped over all its trips."""
    s = 0.0
    for i in range(a.shape[0]):
        y = x[i]
        for _ in range(3):
            y = math.sin(y) * x[i]
        s += a[i] * y
    return s


def popped_under_if(x, a):
    """The pops are under an ``if`` in the adjoint's loop: it is never skipped."""
    s = 0.0
    for i in range(a.shape[0]):
        y = x[i]
        for _ in range(3):
            if y > 0.1:
                y = math.sin(y) * x[i]
        s += a[i] * y
    return s


def _guards(f, *args, wrt=0, jit=True) -> list[str]:
    src = jg.differentiate(f, wrt=wrt, jit=jit).source(*args)
    return [line.strip() for line in src.splitlines()
            if line.strip().startswith("if ") and line.strip().endswith("!= 0.0:")]


def _kmeans_args(seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(7, 3)), rng.normal(size=(4, 3))


@pytest.mark.parametrize("jit", JITS)
def test_kmeans_gradients_and_guard(jit):
    points, centroids = _kmeans_args()
    check_grad(kmeans_cost, (points, centroids), wrt=(0, 1), jit=jit)
    assert _guards(kmeans_cost, points, centroids, wrt=1, jit=jit) == ["if ddist != 0.0:"]


def kmeans_strided(points, centroids, w):
    """k-means over every other centroid and coordinate (reversed loops without the
    ``SWEEP`` note of their own) with a whole-array chain in the loop over points (under
    ``jit=True`` an element loop, in that loop's copy)."""
    n, d = points.shape
    cost = 0.0
    for i in range(n):
        closest = np.inf
        for j in range(0, centroids.shape[0], 2):
            dist = 0.0
            for c in range(0, d, 2):
                diff = points[i, c] - centroids[j, c]
                dist += diff * diff
            if dist < closest:
                closest = dist
        u = w * points[i, 0] + w
        v = u * 2.0 - w
        cost += closest + np.sum(v)
    return cost


@pytest.mark.parametrize("jit", JITS)
def test_guard_under_a_loop_with_element_loops(jit):
    """The distance loop is guarded because it is in a reversed loop (the one over points):
    that loop's copy with an element loop in its body keeps its notes (under jit=True the
    guard was missing: the copy had lost ``SWEEP``)."""
    points, centroids = _kmeans_args(3)
    points = np.hstack([points, points[:, :1]])
    centroids = np.hstack([centroids, centroids[:, :1]])
    args = (points, centroids, np.linspace(0.1, 0.5, 3))
    check_grad(kmeans_strided, args, wrt=(0, 1, 2), jit=jit)
    src = jg.differentiate(kmeans_strided, wrt=(0, 1, 2), jit=jit).source(*args)
    assert ("one loop over the elements of w" in src) == jit, src
    assert _guards(kmeans_strided, *args, wrt=(0, 1, 2), jit=jit) == ["if ddist != 0.0:"], src


@pytest.mark.parametrize("jit", JITS)
def test_min_selection(jit):
    rng = np.random.default_rng(1)
    x, w = rng.uniform(-1, 1, 5), rng.uniform(-1, 1, 4)
    check_grad(nearest_min, (x, w), wrt=(0, 1), jit=jit)
    assert _guards(nearest_min, x, w, wrt=(0, 1), jit=jit) == ["if dt != 0.0:"]


@pytest.mark.parametrize("jit", JITS)
def test_branch_not_taken(jit):
    x = np.array([0.3, -0.4, 0.8, -0.1, 0.5])
    w = np.array([0.5, -1.0, 0.25])
    check_grad(branch_taken, (x, w), wrt=(0, 1), jit=jit)
    assert _guards(branch_taken, x, w, wrt=(0, 1), jit=jit) == ["if dt != 0.0:"]


@pytest.mark.parametrize("jit", JITS)
def test_zero_weights(jit):
    x = np.array([0.3, -0.7, 1.1])
    a = np.array([1.0, 0.0, -2.0, 0.0])
    check_grad(zero_weights, (x, a), wrt=(0, 1), jit=jit)
    assert _guards(zero_weights, x, a, wrt=(0, 1), jit=jit) == ["if dt != 0.0:"]
    check_hvp(zero_weights, (x, a), wrt=(0, 1))  # second order differentiates the IR


@pytest.mark.parametrize("jit", JITS)
def test_popping_loop_steps_its_cursor(jit):
    x = np.array([0.3, -0.7, 1.1, 0.4])
    a = np.array([1.0, 0.0, -2.0, 0.0])
    check_grad(popped, (x, a), wrt=(0, 1), jit=jit)
    src = jg.differentiate(popped, wrt=(0, 1), jit=jit).source(x, a)
    assert _guards(popped, x, a, wrt=(0, 1), jit=jit) == ["if dy != 0.0:"]
    assert "n -= len(range(" in src


@pytest.mark.parametrize("jit", JITS)
def test_popping_under_if_runs(jit):
    x = np.array([0.3, -0.7, 1.1, 0.05])
    a = np.array([1.0, 0.0, -2.0, 0.0])
    check_grad(popped_under_if, (x, a), wrt=(0, 1), jit=jit)
    assert _guards(popped_under_if, x, a, wrt=(0, 1), jit=jit) == []


@pytest.mark.parametrize("jit", JITS)
def test_infinite_partial_of_a_skipped_trip(jit):
    """A centroid at infinity is never the nearest: its trips are skipped, and its gradient
    is 0 (as ``guard`` makes a zero cotangent's), not the NaN of ``0 * inf``."""
    points, centroids = _kmeans_args(2)
    centroids[3, 1] = np.inf
    g = jg.grad(kmeans_cost, wrt=1, jit=jit)(points, centroids)
    assert np.all(g[3] == 0.0)
    finite = centroids[:3]
    np.testing.assert_allclose(g[:3], jg.grad(kmeans_cost, wrt=1, jit=jit)(points, finite),
                               rtol=1e-12)
    check_grad(kmeans_cost, (points, finite), wrt=1, jit=jit)


def _loop(src: str) -> ast.stmt:
    return ast.parse(src).body[0]


ENV = {"np": np, "math": math, "range": range, "unbroadcast": helpers.unbroadcast}


@pytest.mark.parametrize("src, ok", [
    ("for c in range(3):\n    _t = dv * w[c]\n    dx[c] += _t", True),
    ("for c in range(3):\n    dx[c] -= unbroadcast(dv * w[c], x)", True),
    ("for c in range(3):\n    dx[c] += w[c]", False),              # not linear in dv
    ("for c in range(3):\n    dx[c] = dv * w[c]", False),          # not an addition
    ("for c in range(3):\n    _n -= 1\n    dx[c] += dv * _tape[_n]", True),  # a pop
    ("for c in range(3):\n    if w[c] > 0:\n        _n -= 1\n    dx[c] += dv", False),
    ("for c in range(3):\n    _n -= 1\n    dx[c] += dv\n    if w[c] > 0:\n        break",
     False),
    ("for c in range(3):\n    dy = dv * w[c]\n    out.append(dy)", False),      # an effect
    ("for c in range(3):\n    dx[c] += dv * np.random.normal()", False),        # a draw
    ("for c in range(3):\n    dv = w[c]\n    dx[c] += dv", False),  # dv rebound
    ("for c in range(3):\n    v = dx[1:]\n    v += 1.0", False),    # through a view
])
def test_preconditions(src, ok):
    loop = _loop(src)
    live = {"dx", "_n", "dv", "out", "w"}
    assert skippable(loop, "dv", live, ENV, lambda n: {n, "dx"} if n == "v" else {n}) is ok


def test_is_zero():
    zero = {"dv"}

    def z(e):
        return is_zero(ast.parse(e, mode="eval").body, zero, ENV)

    assert z("(dv + dv) * x") and z("-dv / y") and z("unbroadcast(dv * a, b)")
    assert z("dv[i] * 2.0") and z("0.0")
    assert not z("x / dv") and not z("dv + 1.0") and not z("f(dv)")


def zero_at_half(x):
    """The cotangent of ``t`` is ``x[i] - 0.5``: zero where ``x[i]`` is 0.5, but not its
    tangent along ``x``; forward mode over the gradient code must run that loop."""
    s = 0.0
    for i in range(x.shape[0]):
        t = 0.0
        for j in range(x.shape[0]):
            t += math.sin(x[j] * (i + 1))
        s += (x[i] - 0.5) * t
    return s


def test_hvp_skips_constant_cotangents():
    """``jg.hvp``: kmeans' ``ddist`` depends on no ``wrt`` argument (its tangent is 0), so
    its loop is skipped in the tangent code too; values against central differences."""
    points, centroids = _kmeans_args()
    check_hvp(kmeans_cost, (points, centroids), wrt=(1,))
    src = jg.differentiate(kmeans_cost, wrt=1).source(points, centroids, mode="hvp")
    assert "ddist != 0.0" in src


@pytest.mark.parametrize("jit", JITS)
def test_hvp_keeps_loops_of_varying_cotangents(jit):
    x = np.array([0.2, 0.5, -0.3, 0.5])
    check_grad(zero_at_half, (x,), jit=jit)
    assert _guards(zero_at_half, x, jit=jit) == ["if dt != 0.0:"]  # the gradient skips
    check_hvp(zero_at_half, (x,), wrt=(0,))
    src = jg.differentiate(zero_at_half).source(x, mode="hvp")
    assert "dt != 0.0" not in src
