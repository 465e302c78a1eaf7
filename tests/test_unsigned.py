"""Indices proved ``>= 0`` in innermost loops are read unsigned, in place or in a loop
versioned on its entry values (``backend/unsigned.py``): gradients of loop nests with
carried counters and offset starts, a start negative at run time taking the loop as
written (Python's wraparound), checked against central differences on every element."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad

import jitgrad as jg
from jitgrad.transpiler.backend import passes


def packed(M, x):
    """Per row of ``M``, ``out[j] += M[r, idx] * x[i]`` over a packed lower triangle with
    ``idx`` carried from trip to trip (GradBench gmm's Q x)."""
    d = x.shape[0]
    s = 0.0
    for r in range(M.shape[0]):
        out = np.zeros(d)
        idx = 0
        for i in range(d):
            for j in range(i + 1, d):
                out[j] += M[r, idx] * x[i]
                idx += 1
        for j in range(d):
            s += out[j] * out[j] * (r + 1.0)
    return s


def shifted(x, dx, J):
    """``x[i] * dx[i - J]`` from ``J``: ``x`` wraps where ``J`` is negative."""
    s = 0.0
    for i in range(J, x.shape[0]):
        s += x[i] * dx[i - J] * x[i]
    return s


def counted(x, K):
    """A counter from ``K`` (negative: it wraps) stepping by one, beside ``x[i]``."""
    idx = K
    s = 0.0
    for i in range(x.shape[0] - 2):
        s += x[idx] * x[i] + 0.5 * x[idx] * x[idx]
        idx += 1
    return s


def stepped_down(x, dx, K):
    """A counter from ``K`` stepping down by two (it may go negative), an inner loop from
    the outer index (a start LLVM cannot prove >= 0)."""
    k = K
    s = 0.0
    for i in range(x.shape[0] - 1):
        for j in range(i + 1, x.shape[0]):
            s += x[j] * dx[k] * x[i]
            k = k - 2
    return s


def nested_offset(x, M, J):
    """An inner loop from ``J`` under a loop over the rows of ``M``: ``x[i]``'s least value
    ``J`` is tested before the outer loop, its inner loop versioned on it."""
    s = 0.0
    for t in range(M.shape[0]):
        for i in range(J, x.shape[0]):
            s += x[i] * M[t, i - J] * x[i]
    return s


CASES = [
    ("packed", packed, lambda r: (r.normal(size=(3, 6)), r.normal(size=4)), (0, 1)),
    ("shifted", shifted, lambda r: (r.normal(size=6), r.normal(size=6), 2), (0, 1)),
    ("shifted_negative", shifted, lambda r: (r.normal(size=5), r.normal(size=8), -3),
     (0, 1)),
    ("nested_offset", nested_offset,
     lambda r: (r.normal(size=5), r.normal(size=(2, 5)), 1), (0, 1)),
    ("nested_offset_negative", nested_offset,
     lambda r: (r.normal(size=5), r.normal(size=(2, 8)), -3), (0, 1)),
    ("counted", counted, lambda r: (r.normal(size=7), 1), (0,)),
    ("counted_negative", counted, lambda r: (r.normal(size=7), -4), (0,)),
    ("stepped_down", stepped_down, lambda r: (r.normal(size=4), r.normal(size=13), 12),
     (0, 1)),
    ("stepped_down_negative", stepped_down,
     lambda r: (r.normal(size=4), r.normal(size=13), 5), (0, 1)),
]


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_gradients(case, jit):
    """Every element against central differences, value too; both paths of a versioned
    loop (a start or counter negative at run time wraps as the user's code does)."""
    _, f, make, wrt = case
    args = make(np.random.default_rng(9200))
    check_grad(f, args, wrt=wrt, jit=jit)
    assert jg.grad(f, wrt=wrt, jit=jit)(*args) is not None


def test_gradients_equal_the_loop_as_written():
    """The unsigned and the fallback path give the gradient the loop as written gives
    (``jit=False`` runs it as written), on either side of the test."""
    for K in (1, -4):
        x = np.random.default_rng(9201).normal(size=7)
        a = jg.value_and_grad(counted, wrt=0, jit=True)(x, K)
        b = jg.value_and_grad(counted, wrt=0, jit=False)(x, K)
        np.testing.assert_allclose(a[0], b[0], rtol=1e-13)
        np.testing.assert_allclose(a[1], b[1], rtol=1e-13)


def test_step_output_small_example():
    """The step's output: a counter read unsigned in a loop versioned on its entry value,
    the loop as written its ``else``; an index proved by the loop's range in place."""
    src = jg.differentiate(counted, wrt=0).source(np.ones(7), 1)
    assert "if idx >= 0:" in src, src
    assert "x[np.uintp(idx)]" in src and "x[np.uintp(i)]" in src, src
    assert "else:" in src and "_t3 = x[idx]" in src.split("else:", 1)[1], src
    shown = passes.listing()
    assert "unsigned: requires bounds checked; provides unsigned indices" in shown


def test_unsigned_stage_alone():
    """``stage("unsigned")`` shows the step's rewrite; ``bounds`` (the step before) has
    none of it."""
    from jitgrad.transpiler.pipeline import example

    src = '''
def f(x, J):
    s = 0.0
    for i in range(J, x.shape[0]):
        s += x[i] * x[i]
    return s
'''
    after = example("unsigned", src, args=(np.ones(4), 1), jit=True)
    before = example("bounds", src, args=(np.ones(4), 1), jit=True)
    assert "np.uintp" not in before
    assert "if J >= 0:" in after and "x[np.uintp(i)]" in after, after


def test_not_under_jit_false():
    """``jit=False`` code is run by Python: no unsigned index (and no bounds step)."""
    src = jg.differentiate(counted, wrt=0, jit=False).source(np.ones(7), 1)
    assert "uintp" not in src
