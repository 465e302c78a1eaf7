"""NumPy calls of compiled gradient code that call helpers cached on disk
(``backend/cached_calls.py``): ``np.zeros_like``, ``np.empty_like`` and ``@`` under
``jit=True``, the same values and gradients as ``jit=False`` (which keeps NumPy's
calls) and as central differences; not under ``parallel=True``."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad

import jitgrad as jg


def products(A, x, B):
    """Matrix-matrix, matrix-vector and vector-matrix products, a loop writing an array."""
    y = A @ x
    z = x @ B
    w = np.empty_like(y)
    for i in range(y.shape[0]):
        w[i] = y[i] * y[i]
    return np.sum(w) + np.sum(z * z) + np.sum((A @ B) ** 2)


def _args(rng):
    return rng.normal(size=(4, 3)), rng.normal(size=3), rng.normal(size=(3, 5))


def _source(f, args, **kw):
    return jg.differentiate(f, wrt=(0, 1, 2), **kw).source(*args)


def _code(src):
    """``src`` without its comment lines (which quote the user's lines)."""
    return "\n".join(ln for ln in src.splitlines() if not ln.lstrip().startswith("#"))


@pytest.mark.parametrize("jit", [True, False])
def test_products_against_central_differences(jit):
    check_grad(products, _args(np.random.default_rng(0)), (0, 1, 2), jit=jit)


def test_same_gradients_in_both_modes():
    args = _args(np.random.default_rng(1))
    on = jg.grad(products, wrt=(0, 1, 2), jit=True)(*args)
    off = jg.grad(products, wrt=(0, 1, 2), jit=False)(*args)
    for a, b in zip(on, off, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-13)


def test_only_compiled_code_calls_the_helpers():
    args = _args(np.random.default_rng(2))
    on = _code(_source(products, args, jit=True))
    assert "np_matmul(A, x)" in on and "np_zeros_like(" in on and " @ " not in on
    assert "np.zeros_like(" not in on and "np.empty_like(" not in on
    off = _code(_source(products, args, jit=False))
    assert "np_" not in off and "A @ x" in off
