"""Array assignments of one array into another in compiled gradient code
(``backend/view_updates.py``): ``dz[...] = dy``, as ``loop_buffers`` sets a zeroed
buffer by its first add, is an element loop under ``jit=True`` (where the shapes are
not known to be one, the helper ``copy_into`` for shapes that differ), since Numba
compiles an array assignment's shape-mismatch message in every process (about 1.5 CPU
s).  Gradients against central differences in both modes, and the helper's values."""

from __future__ import annotations

import math

import numpy as np
import pytest
from gradcheck import check_grad
from numba import njit
from test_loop_buffers import kept  # a loop's state copied back each trip: dz = dy

import jitgrad as jg
from jitgrad.kernels.helpers import copy_into


def rows(W, x):
    """A 2-d state copied back each trip (the set form over rows and columns)."""
    y = W * 1.0
    for _ in range(2):
        z = np.empty_like(W)
        for i in range(W.shape[0]):
            for j in range(W.shape[1]):
                z[i, j] = math.sin(y[i, j]) * x[j]
        y = z
    return np.sum(y * y)


CASES = {kept: (np.linspace(0.3, 1.1, 5), 3),
         rows: (np.linspace(-0.6, 0.9, 12).reshape(3, 4), np.linspace(0.5, 1.5, 4))}


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("f", list(CASES), ids=lambda f: f.__name__)
def test_against_central_differences(f, jit):
    x = CASES[f]
    g = jg.grad(f, wrt=0, jit=jit)
    np.testing.assert_allclose(g(*x), check_grad(f, x, wrt=0, jit=jit)[0], rtol=1e-12)
    value, dx = jg.value_and_grad(f, wrt=0, jit=jit)(*x)
    assert value == pytest.approx(f(*x), rel=1e-13)
    np.testing.assert_allclose(dx, g(*x), rtol=1e-12)


@pytest.mark.parametrize("f", list(CASES), ids=lambda f: f.__name__)
def test_no_array_assignment_in_compiled_code(f):
    """The set form is an element loop under jit=True, ``dz[...] = dy`` under jit=False."""
    compiled = jg.grad(f, wrt=0).source(*CASES[f])
    plain = jg.grad(f, wrt=0, jit=False).source(*CASES[f])
    assert "dz[...] = dy" in plain, plain
    assert "dz[...] = dy" not in compiled and "dz[_k" in compiled, compiled


@njit
def _copied(dst, src):
    copy_into(dst, src)
    return dst


@pytest.mark.parametrize("run", [copy_into, _copied], ids=["python", "compiled"])
def test_copy_into_broadcasts_as_numpy(run):
    """Same shapes, a broadcast element, row or scalar, 2-d views, as ``dst[...] = src``."""
    for dst, src in ((np.zeros(4), np.arange(4.0)), (np.zeros(4), np.array([2.5])),
                     (np.zeros((3, 4)), np.arange(4.0)), (np.zeros((3, 4)), np.ones((1, 4))),
                     (np.zeros((3, 4)), np.arange(12.0).reshape(3, 4)),
                     (np.zeros((4, 3)).T, np.arange(12.0).reshape(3, 4)),
                     (np.zeros((3, 4)), 1.5)):
        want = dst.copy()
        want[...] = src
        got = dst.copy()
        out = run(got, src)
        np.testing.assert_array_equal(got if out is None else out, want)


def test_copy_into_refuses_shapes_that_do_not_broadcast():
    """NumPy's and Numba's ValueError (np.broadcast_to's message)."""
    with pytest.raises(ValueError):
        _copied(np.zeros(4), np.ones(3))
    with pytest.raises(ValueError):
        _copied(np.zeros((3, 4)), np.ones((2, 4)))
