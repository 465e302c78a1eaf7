"""Scalar adjoints known zero (``backend/known_zero.py``): an accumulation into one is an
assignment, and a zeroing nothing reads goes; gradients checked against central
differences in both jit modes."""

from __future__ import annotations

import ast
import math
import textwrap

import numpy as np
import pytest

import jitgrad as jg
from jitgrad.transpiler.backend.known_zero import known_zero_adds
from tests.gradcheck import check_grad


def _run(src: str, scalars=("d", "e"), kept=()) -> str:
    body = ast.parse(textwrap.dedent(src)).body
    return ast.unparse(known_zero_adds(body, set(scalars), set(kept)))


_TRIPS = """
    d = 0.0
    for j in range(n):
        d += g[j]
        x[j] += d * w
        d = 0.0
"""


@pytest.mark.parametrize("kept,want", [
    ((), "for j in range(n):\n    d = g[j]\n    x[j] += d * w"),
    (("d",), "d = 0.0\nfor j in range(n):\n    d = g[j]\n    x[j] += d * w\n    d = 0.0"),
])
def test_zeroed_before_the_loop_and_after_each_trip(kept, want):
    """Zeroed before the loop and after each trip: the add is an assignment; the zeroings
    go unless the adjoint is a gradient returned (``kept``)."""
    assert _run(_TRIPS, kept=kept) == want


def test_zero_in_one_branch_only_is_not_known():
    src = """
        d = 0.0
        for j in range(n):
            d += g[j]
            x[j] += d
            if c[j]:
                d = 0.0
    """
    assert "d += g[j]" in _run(src)


def test_a_zero_read_by_the_next_trip_stays():
    out = _run("""
        e = 0.0
        d = 0.0
        for j in range(n):
            if c[j]:
                d += e
            if d != 0.0:
                x[j] += d
            d = 0.0
    """)
    assert "d = e" in out and out.rstrip().endswith("d = 0.0")


def test_a_loop_that_breaks_knows_only_what_it_never_binds():
    out = _run("""
        d = 0.0
        e = 0.0
        for j in range(n):
            e += g[j]
            d += e
            x[j] += d
            d = 0.0
            if e > 1.0:
                break
        e += 1.0
    """)
    assert "d += e" in out and "e += g[j]" in out and "e += 1.0" in out


def test_minus_and_self_reading_accumulations():
    out = _run("""
        d = 0.0
        d -= a * b
        e = 0.0
        e += e * 2.0
        y = d + e
    """)
    assert "d = -(a * b)" in out and "e += e * 2.0" in out


def test_while_and_nested_loops():
    out = _run("""
        d = 0.0
        while k > 0:
            for j in range(m):
                d += g[k, j]
                x[j] += d
                d = 0.0
            k -= 1
    """)
    assert "d = g[k, j]" in out and "d = 0.0" not in out


def _trips(x, w, J):
    total = 0.0
    for i in range(J):
        r = 0.1 * i
        for j in range(x.shape[0]):
            r += x[j] * w
        if r > 0.5:
            total += r * r
        else:
            total -= 0.5 * r
    return total


def _nested(M, dx, K):
    s = 0.0
    for k in range(K):
        acc = 0.05 * k
        for i in range(M.shape[0]):
            t = 0.0
            for j in range(M.shape[1]):
                t += M[i, j] * dx[j]
            acc += math.sin(t)
        s += acc * acc
    return s


def _while(x, K):
    s = 0.0
    k = 0
    while k < K:
        a = 0.0
        for j in range(x.shape[0]):
            a += x[j] * x[j]
            if a > 3.0:
                break
        s += a * (k + 1)
        k += 1
    return s


CASES = [
    (_trips, lambda r: (r.normal(size=5), 0.7, 3), (0, 1)),
    (_nested, lambda r: (r.normal(size=(3, 4)), r.normal(size=4), 2), (0, 1)),
    (_while, lambda r: (r.normal(size=6), 3), (0,)),
]


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("f,make,wrt", CASES, ids=[c[0].__name__ for c in CASES])
def test_gradients_where_adjoints_are_known_zero(f, make, wrt, jit):
    args = make(np.random.default_rng(3))
    g = jg.value_and_grad(f, wrt=wrt, jit=jit)
    value, grads = g(*args)
    assert value == pytest.approx(f(*args), rel=1e-12)
    check_grad(f, args, wrt, jit=jit)
    assert len(grads if len(wrt) > 1 else (grads,)) == len(wrt)
