"""Reductions of a number (``np.sum(b * b)`` with a float ``b``): NumPy takes them, so the
gradient must too.  With ``jit=True`` the pullback kernels had no implementation for a
scalar (``expand_along``, ``axis_count``, ``chooser_weights``, ``prod_others``)."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad

REDUCTIONS = [np.sum, np.mean, np.max, np.min, np.prod, np.amax]


def _case(red):
    def f(x, b):
        return red(b * b) * 1.5 + np.sum(x) * b + red(np.sin(b))

    f.__name__ = f"f_{red.__name__}"
    return f


@pytest.mark.parametrize("red", REDUCTIONS, ids=lambda r: r.__name__)
def test_reduction_of_a_number(red, jit):
    check_grad(_case(red), (np.array([1.0, 2.0, -0.5]), 0.7), wrt=(0, 1), jit=jit)
