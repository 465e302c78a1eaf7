"""A name reused for unrelated values in different loops or branches (``front/webs.py``).

Real code reuses temporaries (``d``, ``tmp``, ``r``) from loop to loop; before, an array
temporary reused so was refused as "created inside a loop and used after it".  Each
case: value and every gradient element against the plain function and central
differences, both modes; and the names that must stay one variable (an accumulator
carried through two loops) still do.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad

import jitgrad as jg


def two_loops(x, a):
    s = 0.0
    for _i in range(3):
        d = x * a
        s += np.sum(d * d)
    for _j in range(2):
        d = x[:2] * s
        s += np.sum(d)
    return s


def two_loops_scalar_and_array(x, a):
    s = 0.0
    for i in range(x.shape[0]):
        tmp = x[i] * a
        s += tmp * tmp
    for _k in range(2):
        tmp = np.sin(x) * s
        s = s + np.sum(tmp * x)
    return s


def carried_through_both(x, a):
    acc = x * 1.0
    for _i in range(3):
        acc = acc * a + 0.1 * acc * acc
    for _j in range(2):
        acc = np.tanh(acc) * a
    return np.sum(acc)


def inner_loops_of_one_outer(x, a):
    s = 0.0
    for _t in range(2):
        for i in range(x.shape[0]):
            r = x * x[i]
            s += np.sum(r) * a
        for _j in range(2):
            r = x[1:] * s
            s += 0.1 * np.sum(r * r)
    return s


def while_then_for(x, a):
    s = 0.0
    k = 0
    while k < 2:
        w = x * a
        s += np.sum(w)
        k += 1
    for _i in range(2):
        w = np.cos(x) * s
        s += np.sum(w * w) * 0.1
    return s


def branch_then_loop(x, a):
    s = np.sum(x)
    if s > 0.0:
        e = np.exp(x * a)
        s = np.sum(e)
    for _i in range(2):
        e = x * s
        s = s + np.sum(e) * 0.5
    return s


def checkpointed_rebinding(x, a):
    """Fuzz seed 97001 #258: the gradient code's binomial driver binds ``_m`` and ``_y`` in
    several loops; second order re-reads that code, and splitting its names broke the
    driver's snapshot references (IndexError in hvp)."""
    s = 0.0
    y = np.empty_like(x)
    for i in range(x.shape[0]):
        y[i] = -s + x[i] * a
    for _ in x:
        s += y[1] * y[2]
    for _ in jg.checkpointed(range(3), snapshots=None):
        y = np.tanh(y)
    y += np.cumsum(x) * 0.25
    return s * s + np.sum(x) + np.sum(y * y)


CASES = [checkpointed_rebinding, two_loops, two_loops_scalar_and_array, carried_through_both,
         inner_loops_of_one_outer, while_then_for, branch_then_loop]


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_reused_name_gradient(f, jit):
    x = np.array([0.3, -0.2, 0.5])
    check_grad(f, (x, 0.7), wrt=(0, 1), jit=jit)
    assert jg.differentiate(f, wrt=(0, 1), jit=jit)(x, 0.7) == pytest.approx(f(x, 0.7),
                                                                              rel=1e-12)


def test_one_variable_keeps_its_name():
    """An accumulator carried through both loops is one web: no version appears."""
    src = jg.differentiate(carried_through_both, wrt=(0, 1), jit=False).source(
        np.ones(3), 0.5, stage="webs")
    assert "acc_" not in src.replace("acc_1 = x * 1.0", "")
    src = jg.differentiate(two_loops, wrt=(0, 1), jit=False).source(np.ones(3), 0.5,
                                                                    stage="webs")
    assert "d_1 = " in src and "np.sum(d_1)" in src


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_reused_name_hvp(f):
    """Second order through the split names: hvp against central differences of the
    gradient."""
    x = np.array([0.3, -0.2, 0.5])
    v = np.array([0.7, 0.1, -0.4])
    h = jg.hvp(f, (x, 0.7), (v,), wrt=0, jit=False)
    g = jg.grad(f, wrt=0, jit=False)
    eps = 1e-6
    np.testing.assert_allclose(h, (g(x + eps * v, 0.7) - g(x - eps * v, 0.7)) / (2 * eps),
                               rtol=1e-5, atol=1e-6)
