"""An array that changes shape from one loop trip to the next has no one-shape adjoint:
refused at its line where provable (``analysis/shapes.py``), an error at run time where
not (``unbroadcast``), in both modes — before, jit=True returned zeros or wrote out of
bounds (found by the binomial-schedule helper's tests)."""

from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg
from jitgrad.kernels.helpers import SHAPE_MISMATCH, unbroadcast


def shrinking(x, n):
    u = x * 1.0
    s = 0.0
    for _ in range(n):
        u = u[1:] * 0.9
        s += np.sum(u * u)
    return s


def growing(x, n):
    u = x * 1.0
    s = 0.0
    for _ in range(n):
        u = np.concatenate((u, u[:1])) * 0.5
        s += np.sum(u)
    return s


def same_shape(x, n):  # u rebound to a slice of another array: one shape, differentiated
    u = x[1:] * 1.0
    s = 0.0
    for _ in range(n):
        u = x[:-1] * u
        s += np.sum(u * u)
    return s


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("f", [shrinking, growing])
def test_shape_change_in_a_loop_is_refused_at_its_line(f, jit):
    with pytest.raises(jg.TransformError, match="'u' changes shape from one loop trip") as e:
        jg.grad(f, jit=jit)(np.linspace(0.1, 1.0, 6), 3)
    assert e.value.lineno is not None and "u = " in e.value.source_line


@pytest.mark.parametrize("jit", [True, False])
def test_one_shape_rebinding_still_differentiates(jit):
    from gradcheck import check_grad

    check_grad(same_shape, (np.linspace(0.1, 1.0, 6), 3), wrt=0, jit=jit)


def test_unbroadcast_refuses_a_shape_it_cannot_come_from():
    """The run-time net under what analysis cannot prove: never a wrong sum, never a
    write outside the result (compiled or not)."""
    import numba

    g, x = np.ones(3), np.ones(5)
    with pytest.raises(ValueError, match="does not have the shape"):
        unbroadcast(g, x)
    compiled = numba.njit(lambda g, x: unbroadcast(g, x))
    with pytest.raises(ValueError, match="does not have the shape"):
        compiled(g, x)
    with pytest.raises(ValueError):
        compiled(np.ones((2, 7)), np.ones((2, 5)))
    np.testing.assert_array_equal(compiled(np.ones((4, 3)), np.ones((1, 3))), 4 * np.ones((1, 3)))
    np.testing.assert_array_equal(unbroadcast(np.ones((4, 3)), np.ones(3)), 4 * np.ones(3))
    assert "preallocate" in SHAPE_MISMATCH
