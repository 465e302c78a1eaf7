"""NaN safety: a zero cotangent gives a zero contribution, even where a partial is
infinite (``guard``), in compiled and plain code, at no cost where nothing is masked."""

from __future__ import annotations

import math

import numpy as np
import pytest

import jitgrad as jg


def _compiled_guard():
    import numba

    from jitgrad.kernels.helpers import guard

    return numba.njit(lambda dy, g: guard(dy, g))


@pytest.mark.parametrize("compiled", [True, False])
def test_guard_zero_cotangent_masks_infinite_partials(compiled):
    from jitgrad.kernels.helpers import guard

    fn = _compiled_guard() if compiled else guard
    inf = np.inf
    dy = np.array([0.0, 1.0, 0.0, 2.0])
    for g, want in ((np.array([inf, 3.0, -inf, 1.0]), [0.0, 3.0, 0.0, 1.0]),
                    (np.array([np.nan, 3.0, 0.0, 1.0]), [0.0, 3.0, 0.0, 1.0]),
                    (np.array([5.0, 3.0, -0.0, 1.0]), [0.0, 3.0, 0.0, 1.0])):
        out = fn(dy, g.copy())
        np.testing.assert_array_equal(out, want)
        assert np.all(np.isfinite(out))
    g = np.array([0.0, 3.0, -0.0, 1.0])  # nothing to mask: g itself, no new array
    assert fn(dy, g) is g if not compiled else np.array_equal(fn(dy, g), g)
    np.testing.assert_array_equal(fn(0.0, np.array([inf, 1.0])), [0.0, 0.0])
    np.testing.assert_array_equal(fn(2.0, np.array([inf, 1.0])), [inf, 1.0])
    np.testing.assert_array_equal(fn(np.zeros((2, 2)), np.array([inf, 1.0])), np.zeros((2, 2)))
    assert fn(0.0, inf) == 0.0 and fn(1.0, inf) == inf
    g32 = np.array([inf, 1.0], dtype=np.float32)
    np.testing.assert_array_equal(fn(np.array([0.0, 1.0]), g32), [0.0, 1.0])


def masked_log(x):
    return np.sum(np.where(x > 0.0, np.log(np.abs(x)), 0.0) + x * x)


def masked_sqrt_loop(x):
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] > 0.0:
            s += math.sqrt(x[i])
        else:
            s += 0.0 * math.sqrt(abs(x[i])) + x[i]
    return s


@pytest.mark.parametrize("jit", [True, False])
def test_masked_singular_partials_give_finite_gradients(jit):
    x = np.array([-1.0, 0.0, 2.0, 0.5])
    g = jg.grad(masked_log, jit=jit)(x)
    np.testing.assert_allclose(g, [-2.0, 0.0, 0.5 + 4.0, 2.0 + 1.0])
    g = jg.grad(masked_sqrt_loop, jit=jit)(x)
    assert np.all(np.isfinite(g))
    np.testing.assert_allclose(g, [1.0, 1.0, 0.5 / np.sqrt(2.0), 0.5 / np.sqrt(0.5)])
