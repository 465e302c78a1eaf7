"""Scratch arrays refilled in the adjoint instead of stored (``modes/policy.py``,
``ReadPolicy.refill``, preconditions 9 to 12): an array a loop fills whole in the first part
of each trip, from values the adjoint still has and cheaply, is filled again at the start
of the trip's adjoint rather than copied to a tape once per trip.  Where a precondition
fails it is stored as before (``ReadPolicy.kept``) or its elements taped.  Every case is
checked against central differences, compiled and not, and through ``hvp``.
"""

import numpy as np
import pytest
from gradcheck import check_grad, check_hvp
from test_pass_decisions import assert_tapes_balanced, sweeps
from test_tape_invariant import KEPT, scratch_exp, scratch_rows

import jitgrad as jg

REFILLED = "refilled t at the start of each trip's adjoint"


def centred(x, mu):
    """GradBench gmm's shape: a centred point per (point, centre) pair, read twice."""
    n, d = x.shape
    k = mu.shape[0]
    xc = np.empty(d)
    out = 0.0
    for i in range(n):
        for ik in range(k):
            for j in range(d):
                xc[j] = x[i, j] - mu[ik, j]
            for a in range(d):
                for b in range(a, d):
                    out += xc[a] * xc[b] * mu[ik, b]
    return out


def partial_fill(a, x):
    """Not refilled: ``t[0]`` is not set in the trip (it keeps an earlier trip's value)."""
    n, m = a.shape
    t = np.zeros(m)
    out = 0.0
    for i in range(n):
        for j in range(1, m):
            t[j] = a[i, j] * x[j] + t[0]
        t[0] = t[0] + a[i, 0]
        for p in range(m):
            for q in range(m):
                out += t[q] * t[p] * x[p]
    return out


def reads_the_sum(a, x):
    """Not refilled: the fill reads ``out``, which the trip changes after it."""
    n, m = a.shape
    t = np.empty(m)
    out = 0.0
    for i in range(n):
        for j in range(m):
            t[j] = a[i, j] * x[j] + 0.1 * out
        for p in range(m):
            for q in range(m):
                out += t[q] * t[p] * x[p]
    return out


def reads_written(a, x):
    """Not refilled: the fill reads ``w``, which the loop writes."""
    n, m = a.shape
    t = np.empty(m)
    w = x.copy()
    out = 0.0
    for i in range(n):
        for j in range(m):
            t[j] = a[i, j] * w[j]
        for p in range(m):
            for q in range(m):
                out += t[q] * t[p] * x[p]
        w[i % m] = out * 0.01
    return out


def reads_outer_scalar(a, x):
    """The fill reads ``c``, bound in the loop around: it holds the last trip's value by the
    time the adjoint runs, so it is not refilled (unless the adjoint restores it)."""
    n, m = a.shape
    t = np.empty(m)
    out = 0.0
    for i in range(n):
        c = x[i % m] * 2.0
        for r in range(2):
            for j in range(m):
                t[j] = a[i, j] * c + r
            for p in range(m):
                for q in range(m):
                    out += t[q] * t[p] * x[p]
    return out


def matrix_fill(a, x):
    """Not refilled: a 2-D scratch array (only 1-D fills are recognised)."""
    n, m = a.shape
    t = np.empty((2, m))
    out = 0.0
    for i in range(n):
        for j in range(m):
            t[0, j] = a[i, j] * x[j]
            t[1, j] = a[i, j] + x[j]
        for p in range(m):
            for q in range(m):
                out += t[0, q] * t[1, p] * x[p]
    return out


def _rng(k):
    return np.random.default_rng(k)


CASES = {
    "scratch_rows": (scratch_rows, (_rng(12).normal(size=(3, 4)), _rng(13).normal(size=4))),
    "centred": (centred, (_rng(1).normal(size=(3, 4)), _rng(2).normal(size=(2, 4)))),
    "scratch_exp": (scratch_exp, (_rng(3).normal(size=(3, 4)) * 0.3,
                                  _rng(4).normal(size=4))),
    "partial_fill": (partial_fill, (_rng(5).normal(size=(3, 4)), _rng(6).normal(size=4))),
    "reads_the_sum": (reads_the_sum, (_rng(7).normal(size=(3, 4)) * 0.3,
                                      _rng(8).normal(size=4))),
    "reads_outer_scalar": (reads_outer_scalar, (_rng(11).normal(size=(3, 4)),
                                                _rng(12).normal(size=4))),
    "matrix_fill": (matrix_fill, (_rng(13).normal(size=(3, 4)), _rng(14).normal(size=4))),
    "reads_written": (reads_written, (_rng(9).normal(size=(3, 4)), _rng(10).normal(size=4))),
}


def _source(case):
    f, args = CASES[case]
    return jg.grad(f, wrt=(0, 1), jit=False).source(*args)


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("case", sorted(CASES))
def test_gradients(case, jit):
    f, args = CASES[case]
    check_grad(f, args, wrt=(0, 1), jit=jit)


@pytest.mark.parametrize("case", sorted(CASES))
def test_hvp(case):
    f, args = CASES[case]
    check_hvp(f, args, (0, 1))


@pytest.mark.parametrize("case", sorted(CASES))
def test_tapes_balanced(case):
    f, args = CASES[case]
    assert_tapes_balanced(sweeps(f, *args, wrt=(0, 1)))


@pytest.mark.parametrize("case", ["scratch_rows", "centred"])
def test_refilled_not_stored(case):
    """Filled again in the adjoint: no copy of it, nothing pushed per element."""
    src = _source(case)
    assert "refilled " in src and KEPT not in src, src
    assert ".append(" not in src and "tape_put" not in src, src


@pytest.mark.parametrize("case", ["scratch_exp"])
def test_costly_fill_is_kept(case):
    src = _source(case)
    assert KEPT in src and "refilled" not in src, src


@pytest.mark.parametrize("case", ["partial_fill", "reads_the_sum", "reads_written",
                                  "reads_outer_scalar", "matrix_fill"])
def test_not_refilled(case):
    """A precondition fails: the array's values are stored, not filled again."""
    src = _source(case)
    assert "refilled" not in src, src
