"""An inlined helper's results: bound to the caller's own target where the call is the
whole right side of an assignment (``u = sgn(a, k)``: ``u`` bound in each branch, no copy
of a return variable), else to variables named after the helper (``_sgn``, ``_sgn2``),
one per call site; and a scalar so bound in both branches of an ``if`` is stored once per
run of a loop that only reads it (``ReadPolicy.hoisted``, ``_bound_on_entry``).

Every case: value and every gradient element against central differences, both modes."""

import math
import re

import numpy as np
import pytest
from gradcheck import check_grad

import jitgrad as jg


def sgn(a, b):
    """Two returns: its result is a variable the returns bind."""
    if a > 0.0:
        return a * b
    return -a * b


def rot(a, b, c):
    """Three results from two returns."""
    if a > 0.1:
        s = math.sin(a)
        return b * s, c * s, a * b
    return b, c + a, a * c


def proj(x, k):
    """One return at its end: its expression is used in place (no variable)."""
    s = 0.0
    for j in range(x.shape[0]):
        s += x[j] * k
    return s * s


def two_level(a, b):
    """A helper calling helpers, with results bound in its own branches."""
    u, v, w = rot(a, b, 0.5 * a)
    if u > v:
        return sgn(u - w, v)
    return sgn(v, w) * u


def sites(x, k):
    """Several call sites of each helper; results used later, in loops and branches."""
    tot = 0.0
    for i in range(x.shape[0]):
        u = sgn(x[i, 0], k)
        v = sgn(x[i, 1], u)
        p = proj(x[i], k)
        q = proj(x[i], u)
        tot += u * v + p * q
    return tot


def nested(x, k):
    """Nested helpers, a helper called inside another's argument, three results."""
    tot = 0.0
    for i in range(x.shape[0]):
        a, b, c = rot(x[i, 0], sgn(x[i, 1], k), x[i, 2])
        d = two_level(a + c, b)
        tot += sgn(d, a) + b * c + 0.5 * sgn(sgn(c, k), b)
    return tot


def collide(x, k):
    """User names that look generated: ``_ret``, ``_sgn``, ``sgn_ret``, ``_rot``; a target
    that is an argument (``u = sgn(u, k)``) and a swap through a helper."""
    _ret = 0.0
    _sgn = 1.0
    sgn_ret = 0.5
    for i in range(x.shape[0]):
        u = x[i, 0]
        u = sgn(u, k)
        _rot, b, c = rot(x[i, 1], u, _sgn)
        b, c = swap(c, b)
        _sgn = sgn(_sgn * 0.9, b)
        _ret += u * b + c * _rot
        sgn_ret = sgn(sgn_ret + c, k)
    return _ret + _sgn + sgn_ret


def swap(a, b):
    """Returns its arguments the other way round, from two returns."""
    if a > b:
        return b, a
    return b * 1.0, a * 1.0


def hoisted(x, k):
    """Not fused (``v`` carries): ``u``, bound in both branches of an ``if``, is read by an
    inner loop that does not bind it: stored once per run of that loop."""
    v = 0.5
    for i in range(x.shape[0]):
        u = sgn(x[i, 0], k)
        s = 0.0
        for j in range(x.shape[1]):
            s += x[i, j] * u
        v = math.sin(v * s) + u
    return v


def hoisted_plain(x, k):
    """``hoisted`` as its user might write it, ``u`` bound in both branches by hand."""
    v = 0.5
    for i in range(x.shape[0]):
        if x[i, 0] > 0.0:
            u = x[i, 0] * k
        else:
            u = -x[i, 0] * k
        s = 0.0
        for j in range(x.shape[1]):
            s += x[i, j] * u
        v = math.sin(v * s) + u
    return v


def _x(rows: int, cols: int = 3, seed: int = 4) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1.0, 1.0, (rows, cols))


CASES = [(sites, (0, 1)), (nested, (0, 1)), (collide, (0, 1)), (hoisted, (0, 1)),
         (hoisted_plain, (0, 1))]


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("f, wrt", CASES, ids=[c[0].__name__ for c in CASES])
def test_gradient(f, wrt, jit):
    x, k = _x(5), 0.7
    check_grad(f, (x, k), wrt, jit)
    value = jg.differentiate(f, wrt=wrt, jit=jit).value_and_grad(x, k)[0]
    assert value == pytest.approx(f(x, k), rel=1e-13)


def test_results_bound_to_the_targets():
    """``u = sgn(...)``: the returns bind ``u`` itself in each branch; no return variable,
    no copy of one."""
    src = jg.differentiate(sites, wrt=(0, 1)).source(_x(4), 0.7)
    assert "_ret" not in src.replace("_dret", "") and "_sgn" not in src, src
    assert src.count("u = a1 * k") == 1 and "u = _t * k" in src, src
    assert "v = a2 * u" in src and "\n        u = u\n" not in src, src


def test_results_named_after_the_helper_where_not_bound():
    """A call inside an expression, or whose target its arguments read: its result is a
    variable named after the helper, a fresh one per call site, never a user's name."""
    src = jg.differentiate(collide, wrt=(0, 1)).source(_x(4), 0.7)
    # ``u = sgn(u, k)``: the helper reads its argument ``u``; the user has a ``_sgn``
    assert "_sgn1 = u * k" in src and "u = _sgn1" in src, src
    assert "_swap2 = c" in src and "b = _swap\n" in src, src  # ``b, c = swap(c, b)``
    # an argument expression is bound before the body: ``_sgn = sgn(_sgn * 0.9, b)``
    assert "a2 = _sgn * 0.9" in src and "_sgn = a2 * b" in src, src
    src = jg.differentiate(nested, wrt=(0, 1)).source(_x(4), 0.7)
    sites_named = set(re.findall(r"\b(_sgn\d*) = ", src))
    assert "_sgn" in sites_named and len(sites_named) >= 4, sites_named  # one per site
    assert "_ret" not in src.replace("_dret", ""), src


@pytest.mark.parametrize("f", [hoisted, hoisted_plain])
def test_bound_in_both_branches_stored_once_per_inner_loop(f):
    """``u``, bound in both branches, is stored once per run of the inner loop over ``j``
    (bound on every path to it), not once per trip."""
    src = jg.differentiate(f, wrt=(0, 1)).source(_x(4), 0.7)
    assert "stored u once per loop over j, not per trip" in src, src
