"""Augmented assignments into views of arrays in compiled gradient code
(``backend/view_updates.py``): ``dA[i, :, 1] += g`` is ``_view = dA[i, :, 1]; _view += g``
under ``jit=True`` (Numba compiles no shape-mismatch message per process); elements,
index arrays, plain assignments and ``jit=False`` keep their statements.  Values and
every gradient element against central differences in both modes; a split helper's
gradient (``front/split.py``) is rewritten too."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad
from numba import njit

import jitgrad as jg


def rows(W, x):
    """Each row of ``W`` read whole: its adjoint row written once (``dW[i] = g``)."""
    total = 0.0
    for i in range(W.shape[0]):
        total += np.sum(np.tanh(W[i] * x))
    return total


def slabs(A, v):
    """Strided views with slices around an index: ``dA[i, :, 1] += g``."""
    total = 0.0
    for i in range(A.shape[0]):
        total += np.sum(A[i, :, 1] * v) + np.sum(A[i, 1:, 0] ** 2)
    return total


def shifted(u):
    """Overlapping slices of one array, added into its adjoint: ``du[1:] += g``."""
    return np.sum(u[1:] * u[:-1]) + np.sum(np.sin(u[::2]))


def picked(W, idx):
    """An index array (a copy, not a view) and elements: no view update."""
    s = 0.0
    for k in range(idx.shape[0]):
        s += W[idx[k], 0] * W[idx[k], 1]
    return s + np.sum(np.sin(W[idx]) * W[idx])


@njit
def cell(h, x, b):
    return np.tanh(b[0] * h + b[1] * x)


def chain(h0, xs, b):
    """A pure helper called 4 times (split): its gradient adds into rows of ``db``."""
    h = cell(h0, xs[0], b)
    h = cell(h, xs[1], b)
    h = cell(h, xs[2], b)
    h = cell(h, xs[3], b)
    return np.sum(h * h)


def _cases(rng):
    return [
        (rows, (rng.normal(size=(3, 4)), rng.normal(size=4)), (0, 1)),
        (slabs, (rng.normal(size=(2, 3, 2)), rng.normal(size=3)), (0, 1)),
        (shifted, (rng.normal(size=7),), (0,)),
        (picked, (rng.normal(size=(4, 3)), np.array([0, 2, 2, 3])), (0,)),
        (chain, (rng.normal(size=3), rng.normal(size=(4, 3)), rng.normal(size=(2, 3))),
         (0, 1, 2)),
    ]


CASES = _cases(np.random.default_rng(0))
IDS = [f.__name__ for f, _, _ in CASES]


def _code(src):
    """``src`` without its comment lines (which quote the user's lines)."""
    return "\n".join(ln for ln in src.splitlines() if not ln.lstrip().startswith("#"))


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_against_central_differences(case, jit):
    f, args, wrt = case
    check_grad(f, args, wrt, jit=jit)
    value, _ = jg.value_and_grad(f, wrt=wrt, jit=jit)(*args)
    np.testing.assert_allclose(value, f(*args), rtol=1e-13)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_same_gradients_in_both_modes(case):
    f, args, wrt = case
    on = jg.grad(f, wrt=wrt, jit=True)(*args)
    off = jg.grad(f, wrt=wrt, jit=False)(*args)
    for a, b in zip(on if len(wrt) > 1 else [on], off if len(wrt) > 1 else [off],
                    strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-13)


def _source(f, args, wrt, jit):
    return _code(jg.grad(f, wrt=wrt, jit=jit).source(*args))


def test_views_updated_only_in_compiled_code():
    f, args, wrt = CASES[1]
    on, off = _source(f, args, wrt, True), _source(f, args, wrt, False)
    on = on.replace("np.uintp(i)", "i")  # (jit=True reads ``i`` unsigned: backend/unsigned.py)
    assert "= dA[i, :, 1]\n" in on and "_view2 += " in on and "dA[i, :, 1] +=" not in on
    assert "_view" not in off and "dA[i, :, 1] += " in off


def test_plain_assignment_into_a_row_stays():
    f, args, wrt = CASES[0]
    on = _source(f, args, wrt, True)
    assert "dW[i] = _dt" in on and "_view" not in on


def test_elements_and_index_arrays_keep_their_statements():
    f, args, wrt = CASES[3]
    on = _source(f, args, wrt, True)
    assert "_view" not in on


def test_split_helper_gradient_updates_views():
    f, args, wrt = CASES[4]
    src = jg.grad(f, wrt=wrt, jit=True).source(*args)
    vjp = src[src.index("def cell_vjp"):]
    assert "_view = db[" in vjp and "db[0] +=" not in vjp
