"""Views of buffers nothing writes (``analyse._read_only_view``): ``row = a[i]`` of an
argument, or a helper's parameter bound to ``l[ik]``, gets the same view of the base's
adjoint as its adjoint (``drow = da[i]``) instead of a buffer zeroed per trip and added
back.  Checked against central differences in both modes, and on the adjoint's text;
views whose conditions fail (the base written, a fancy index, the view rebound) keep a
buffer of their own.
"""

import numpy as np
import pytest
from gradcheck import check_grad

import jitgrad as jg


def weighted(row, w):
    s = 0.0
    for j in range(row.shape[0]):
        s += row[j] * row[j] * w[j]
    return s


def rows(a, w):
    """A helper's parameter bound to a row of an argument, every trip."""
    s = 0.0
    for i in range(a.shape[0]):
        s += weighted(a[i], w) * np.cos(s * 0.1)
    return s


def cols(a, w):
    """A column view through ``.T``, named by the user."""
    at = a.T
    s = 0.0
    for j in range(at.shape[0]):
        col = at[j]
        for i in range(col.shape[0]):
            s += col[i] * w[i] * col[i]
    return s


def written(a, w):
    """The base is written: no read-only view (the row is copied first)."""
    b = a.copy()
    s = 0.0
    for i in range(b.shape[0]):
        r = b[i]
        s += np.sum(r * w)
        b[i, 0] = s
    return s + np.sum(b)


def fancy(a, w, idx):
    """A fancy index makes a copy: no view."""
    r = a[idx]
    return np.sum(r * r * w[0])


def _rng(k):
    return np.random.default_rng(k)


CASES = {
    "rows": (rows, (_rng(1).normal(size=(4, 3)), _rng(2).normal(size=3)), (0, 1), True),
    "cols": (cols, (_rng(3).normal(size=(3, 4)), _rng(4).normal(size=3)), (0, 1), True),
    "written": (written, (_rng(5).normal(size=(3, 3)), _rng(6).normal(size=3)), (0, 1),
                False),
    "fancy": (fancy, (_rng(7).normal(size=5), _rng(8).normal(size=2), np.array([0, 2, 2])),
              (0, 1), False),
}


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("case", sorted(CASES))
def test_gradients(case, jit):
    f, args, wrt, _ = CASES[case]
    check_grad(f, args, wrt=wrt, jit=jit)


@pytest.mark.parametrize("case", sorted(CASES))
def test_adjoint_is_a_view(case):
    f, args, wrt, view = CASES[case]
    src = jg.grad(f, wrt=wrt, jit=False).source(*args, stage="adjoint")
    if case == "rows":
        assert "= da[i]" in src and "zeros_like(row" not in src, src
    if case == "cols":
        assert "dat = da.T" in src and "dcol = dat[j]" in src, src
    if not view:
        assert "= da[" not in src and "= da.T" not in src, src
