"""Whole-array regressions by gradient descent (Numba's examples, ``benchmarks/
whole_array.py``): the adjoint of ``np.dot(X, w)`` and ``np.dot(X.T, r)`` adds its outer
products into ``dX`` in place (``backend/outer_updates.py``), one pass per step, and an
array the step makes afresh from arguments only (``-Y``) is stored once per loop, not
per step (``ReadPolicy.hoisted``, precondition 20).  Values and every gradient element
against central differences in both ``jit`` modes, and what the generated code makes
and stores."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad

import jitgrad as jg


def linear_regression(Y, X, w, alpha, steps):
    for _i in range(steps):
        w = w - alpha * np.dot(X.T, np.dot(X, w) - Y)
    r = np.dot(X, w) - Y
    return np.dot(r, r)


def logistic_regression(Y, X, w, steps):
    for _i in range(steps):
        w = w - 0.01 * np.dot(((1.0 / (1.0 + np.exp(-Y * np.dot(X, w))) - 1.0) * Y), X)
    return np.sum(w * w)


def matmul_transposed(Y, X, w, steps):
    """``@`` and a transpose bound to a name of its own, read twice."""
    Xt = X.T
    for _i in range(steps):
        r = np.tanh(X @ w) - Y
        w = w - 0.1 * (Xt @ r)
    return np.sum(w * w) + np.sum(Xt @ Y)


def shrinking_X(Y, X, w, steps):
    """``X`` itself rebound every step: its adjoint is read between the updates."""
    for _i in range(steps):
        w = w - 0.05 * np.dot(X.T, np.dot(X, w) - Y)
        X = X * 0.9
    return np.sum(w * w) + np.sum(X)


def _data(m=7, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, d))
    Y = X @ rng.normal(size=d) + 0.1 * rng.normal(size=m)
    return Y, X, rng.normal(size=d) * 0.1


CASES = [
    (linear_regression, lambda: (*_data(), 0.01, 3), (0, 1, 2, 3)),
    (logistic_regression, lambda: (np.sign(_data()[0]), *_data()[1:], 3), (1, 2)),
    (matmul_transposed, lambda: (*_data(seed=1), 3), (0, 1, 2)),
    (shrinking_X, lambda: (*_data(seed=2), 2), (0, 1, 2)),
]


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("f, make, wrt", CASES, ids=[c[0].__name__ for c in CASES])
def test_gradients_match_central_differences(f, make, wrt, jit):
    check_grad(f, make(), wrt=wrt, jit=jit)


def test_no_outer_product_matrix_is_made():
    """Under ``jit=True`` each step adds both outer products into ``dX`` in one pass
    (``add_outers``): no ``dot_grad_a`` of a matrix, no transposed matrix added; with
    ``jit=False`` the code is as the rules write it."""
    for f, make, wrt in CASES[:2]:
        src = jg.differentiate(f, wrt=wrt, jit=True).source(*make())
        loop = src[src.index("range(steps - 1, -1, -1)"):]
        assert "add_outers(dX, " in loop and "transpose_back" not in loop, src
        assert "dot_grad_a(_dt10, X, w)" not in loop and "dot_grad_a(_dt5, X, w)" not in loop
        plain = jg.differentiate(f, wrt=wrt, jit=False).source(*make())
        assert "add_outer" not in plain and "dot_grad" in plain


def test_buffer_read_between_keeps_the_transposed_update():
    """Where ``dX`` is read between the product's adjoint and the transposed update
    (``X`` rebound each step: its adjoint is carried), that update is not moved."""
    src = jg.differentiate(shrinking_X, wrt=(0, 1, 2), jit=True).source(*_data(seed=2), 2)
    loop = src[src.index("range(steps - 1, -1, -1)"):]
    assert "transpose_back" in loop, src


def invariant_in_place(Y, X, w, steps):
    """``t`` is made from arguments only, but written in place: a new value every step."""
    for i in range(steps):
        t = -Y
        t[0] = w[0] * i
        w = w - 0.01 * np.dot(t * np.tanh(np.dot(X, w)), X)
    return np.sum(w * w)


@pytest.mark.parametrize("jit", [True, False])
def test_invariant_array_stored_once(jit):
    """``_t9 = -Y`` heads the step and reads arguments only: pushed once before the loop
    and popped once before its adjoint; an array written in place after it is made
    (``t[0] = ...``) is stored every step; both against central differences."""
    args = (np.sign(_data()[0]), *_data()[1:], 3)
    src = jg.differentiate(logistic_regression, wrt=(1, 2), jit=jit).source(*args)
    assert "stored _t9 once per loop over _i, not per trip" in src, src
    fwd = src[src.index("for _i in range(steps):"):src.index("range(steps - 1, -1, -1)")]
    assert "_t9 = -Y" in fwd and "_tape_t9_1.append" not in fwd
    check_grad(invariant_in_place, (*_data(seed=3), 3), wrt=(0, 1, 2), jit=jit)
    src = jg.differentiate(invariant_in_place, wrt=(0, 1, 2), jit=jit).source(*_data(), 3)
    assert "once per loop" not in src, src
