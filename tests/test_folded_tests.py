"""Branch tests Numba can partly fold: ``DEBUG and ...``, ``-0.4 > 0.2 or ...``.

Numba prunes the short circuit after an operand it proves constant, and then rejected
the adjoint's reads of values the pruned branch defines ("Unsupported assignment
encountered: Undefined", fuzz seed 92004 #44).  The test stays a branch (``bool(...)``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from gradcheck import check_grad

import jitgrad as jg

DEBUG = False
VERBOSE = True


def global_and(x, a):
    s = a
    if DEBUG and abs(s) < 0.4:
        t = x[0] * x[0]
        x[0] = t
    else:
        s = s * math.exp(x[1])
    return s * s + x[0] * x[2]


def literal_and(x, a):
    s = a
    if -0.4 > 0.2 and abs(s) < 0.4:
        x[0] = x[0] * x[0]
    else:
        a = math.exp(0.5 * math.tanh(np.dot(x[:-1], x[1:])))
    return s * a + x[0] * x[3]


def literal_or(x, a):
    s = x[0] * a
    if (1.0 + 2.0 * 2.0) ** 1.5 > 0.5 or np.sqrt(0.25 * 0.25 + 0.5) < 0.4:
        b = s
        s = s * s
        a = s * b
    elif 0.3 - x[3] < -0.3:
        b = a
        a = a * a
    return a * a + np.sum(x)


def global_or_loop(x, a):
    s = 0.0
    for i in range(len(x)):
        if VERBOSE or x[i] > s:
            t = x[i] * a
            s = s + t * t
    return s


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("f", [global_and, literal_and, literal_or, global_or_loop],
                         ids=lambda f: f.__name__)
def test_folded_test_gradient(f, jit):
    x = np.array([0.3, -0.2, 0.5, 0.1])
    check_grad(f, (x, 0.7), wrt=(0, 1), jit=jit)
    d = jg.differentiate(f, wrt=(0, 1), jit=jit)
    assert d(x.copy(), 0.7) == pytest.approx(f(x.copy(), 0.7), rel=1e-12)
