"""Unroll-and-jam (``front/jam.py``): four outer iterations of a loop nest share one inner
loop.  Each case checks in the ``jam`` stage where the rewrite applies (or, for each
precondition that fails, that the nest is left as written), the value bit-identical to
the plain Python function's (``==``) where it applies, and every gradient element against
central differences in both ``jit`` modes."""

from __future__ import annotations

import math

import numpy as np
import pytest
from gradcheck import check_grad, check_hvp, shared_diff
from test_forward import check_jvp

import jitgrad as jg
from benchmarks.gradbench.simple import llsq  # GradBench's: a serial recurrence per point

JAMMED = "for _jk in range("


def offset_pair(x, dx, J):
    """A range not starting at 0, two wrt arrays, two accumulators."""
    M = x.shape[0]
    acc = 0.0
    sq = 0.0
    for i in range(2, J):
        s = dx[i % dx.shape[0]]
        for j in range(M):
            s = s * 0.5 + math.sin(x[j] * i)
        acc += s
        sq = sq + s * acc
    return acc + sq


def _stage(f, *args, **kw):
    return jg.differentiate(f, **kw).source(*args, stage="jam")


X = np.array([0.3, -0.7, 0.45, 0.2, -0.15])


@pytest.mark.parametrize("jit", [False, True])
def test_llsq_jammed_bit_identical(jit):
    assert JAMMED in _stage(llsq, X, 9)
    d = shared_diff(llsq, 0, jit)  # (compiled once: n changes what runs, not the code)
    for n in (0, 2, 3, 4, 5, 7, 13):  # (n = 1 divides by zero: GradBench's definition)
        value, _ = d.value_and_grad(X, n)
        assert value == llsq(X, n), n  # the user's operations in the user's order
        check_grad(llsq, (X, n), wrt=0, jit=jit, shared=True)


@pytest.mark.parametrize("jit", [False, True])
def test_offset_range_two_arrays(jit):
    dx = np.array([0.1, 0.9, -0.4])
    assert JAMMED in _stage(offset_pair, X, dx, 11, wrt=(0, 1))
    d = shared_diff(offset_pair, (0, 1), jit)  # (compiled once, as above)
    for J in (0, 2, 3, 5, 6, 7, 9, 11):  # 0, 0, 1, 3, 4, 5, 7, 9 trips
        value, _ = d.value_and_grad(X, dx, J)
        assert value == offset_pair(X, dx, J), J
        check_grad(offset_pair, (X, dx, J), wrt=(0, 1), jit=jit, shared=True)


@pytest.mark.parametrize("jit", [False, True])
def test_forward_mode_jammed(jit):
    assert JAMMED in jg.differentiate(llsq).source(X, 9, stage="jam", mode="jvp")
    check_jvp(llsq, [X, 9], 0, jit=jit)


def test_hvp_over_jammed_gradient():
    """Second order differentiates the jammed gradient code (not jammed again)."""
    check_hvp(llsq, (X, 9), (0,))
    check_hvp(offset_pair, (X, np.array([0.1, 0.9, -0.4]), 11), (0, 1))


# --- each precondition that fails leaves the nest as written ----------------------------


def stepped(x, K):
    total = 0.0
    for i in range(0, K, 2):  # not a unit step
        r = 0.0
        for j in range(x.shape[0]):
            r = r * x[j] + i
        total += r
    return total


def triangle(x, K):
    total = 0.0
    for i in range(K):
        r = 0.0
        for j in range(i % x.shape[0]):  # the inner bound changes with i
            r = r * x[j] + 1.0
        total += r
    return total


def writes_pre(x, K):
    y = np.zeros(K)
    total = 0.0
    for i in range(K):
        y[i] = x[0] * i  # memory written before the inner loop
        r = y[i]
        for j in range(x.shape[0]):
            r = r * x[j] + 1.0
        total += r
    return total


def writes_post(x, K):
    y = np.zeros(K)
    for i in range(K):
        r = 0.0
        for j in range(x.shape[0]):
            r = r * x[j] + 1.0
        y[i] = r  # memory written after it
    return np.sum(y * y)


def carried_pre(x, K):
    total = 0.0
    last = 1.0
    for i in range(K):
        r = last + i  # reads what the previous iteration's post left
        for j in range(x.shape[0]):
            r = r * x[j] + 1.0
        last = r * 0.5
        total += r
    return total


def read_after(x, K):
    total = 0.0
    r = 0.0
    for i in range(K):
        r = i * 0.5
        for j in range(x.shape[0]):
            r = r * x[j] + 1.0
        total += r
    return total + r  # an iteration-local name read after the loop


def two_inner(x, K):
    total = 0.0
    for i in range(K):
        r = i * 0.5
        for j in range(x.shape[0]):
            r = r * x[j] + 1.0
        for j in range(x.shape[0]):
            r = r + x[j]
        total += r
    return total


def large_inner(x, K):
    total = 0.0
    for i in range(K):
        r = i * 0.5
        for j in range(x.shape[0]):  # 13 statements once normalised
            a = x[j] * r + 1.0
            b = a * a - 0.5
            c = b * a + r
            d = c * 0.25 - b
            e = d * d + c
            r = e * 0.125 + a
        total += r
    return total


def branch_inner(x, K):
    total = 0.0
    for i in range(K):
        r = i * 0.5
        for j in range(x.shape[0]):
            if x[j] > 0.0:  # a branch inside the inner loop
                r = r * x[j] + 1.0
        total += r
    return total


def branch_post(x, K):
    best = 0.0
    for i in range(K):
        r = i * 0.5
        for j in range(x.shape[0]):
            r = r * x[j] + 1.0
        if r < best:  # a running minimum: its adjoint reaches one iteration
            best = r
    return best


def stale_local(x, K):
    total = 0.0
    v = 0.0
    for i in range(K):
        for j in range(x.shape[0]):
            v = x[j] * i  # bound only in the inner loop: stale where it runs no trip
        total += v
    return total


def tiny(x):
    total = 0.0
    for i in range(5):  # fewer trips than two jammed ones
        r = 0.0
        for j in range(x.shape[0]):
            r = r * x[j] + i
        total += r
    return total


def array_pre(x, K):
    total = 0.0
    for i in range(K):
        w = x * i  # an array bound in the iteration
        r = 0.0
        for j in range(x.shape[0]):
            r = r * w[j] + 1.0
        total += r
    return total


@pytest.mark.parametrize("f", [stepped, triangle, writes_pre, writes_post, carried_pre,
                               read_after, two_inner, large_inner, branch_inner, branch_post,
                               stale_local,
                               array_pre])
def test_left_as_written(f):
    args = (X, 6)
    assert JAMMED not in _stage(f, *args)
    for jit in (False, True):
        value, _ = shared_diff(f, 0, jit).value_and_grad(*args)  # (what check_grad runs)
        assert value == f(*args)
        check_grad(f, args, wrt=0, jit=jit, shared=True)


def test_tiny_left_as_written():
    assert JAMMED not in _stage(tiny, X)
    for jit in (False, True):
        check_grad(tiny, (X,), wrt=0, jit=jit)
