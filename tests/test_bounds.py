"""Index bounds checked once per loop (``backend/bounds.py``): under ``jit=True`` the
gradient checks every index itself and is compiled without Numba's per-access check;
arguments too short for the loops still raise IndexError, never read or write past an
array.  Values and gradients against central differences in both jit modes."""

from __future__ import annotations

import ast
import math

import numpy as np
import pytest
from gradcheck import check_grad
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jitgrad as jg
from jitgrad.transpiler.backend.bounds import MARK, UNPROVED


def stencil(x, y):
    s = 0.0
    for i in range(1, y.shape[0] - 1):
        s += x[i - 1] * y[i + 1] + x[i + 1] * x[i]
    return s


def reversed_2d(a, w):
    s = 0.0
    for i in range(a.shape[0] - 1, -1, -1):
        for j in range(w.shape[0] - 1, 0, -1):
            s += w[j] * a[i, j - 1] * a[i, j]
    return s


def triangle(p, n):
    s = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            d = p[i] - p[j]
            s += d * d
    return s


def ends(x):
    return x[-1] * x[0] + x[-2]


def strided(x, n):
    s = 0.0
    for i in range(0, n, 3):
        s += math.sin(x[i + 1])
    for i in range(n - 1, -1, -2):
        s += x[i] * x[i]
    return s


def swapped(u0, a, steps):
    n = u0.shape[0]
    u = u0.copy()
    v = u0.copy()
    for _ in range(steps):
        for i in range(1, n - 1):
            v[i] = u[i] + a * (u[i - 1] - 2.0 * u[i] + u[i + 1])
        u, v = v, u
    total = 0.0
    for i in range(n):
        total += u[i] * u[i]
    return total


def offsets(x):
    s = 0.0
    for i in range(x.shape[0] - 2):
        j = i + 2
        s += x[j] * x[i]
    return s


def rows(a, w):
    s = 0.0
    for i in range(a.shape[0]):
        r = a[i]
        for j in range(w.shape[0]):
            s += r[j] * w[j]
    return s


def branchy(x, n):
    s = 0.0
    for i in range(n):
        if i < x.shape[0] - 1:
            s += x[i + 1] * x[i]
    return s


R = np.random.default_rng(3)
CASES = [
    (stencil, (R.normal(size=8), R.normal(size=8)), (0, 1), (R.normal(size=5), R.normal(size=8))),
    (reversed_2d, (R.normal(size=(3, 5)), R.normal(size=5)), (0, 1),
     (R.normal(size=(3, 4)), R.normal(size=5))),
    (triangle, (R.normal(size=6), 6), 0, (R.normal(size=4), 6)),
    (ends, (R.normal(size=4),), 0, (R.normal(size=1),)),
    (strided, (R.normal(size=11), 10), 0, (R.normal(size=9), 10)),
    (swapped, (R.normal(size=7), 0.1, 3), (0, 1), None),
    (offsets, (R.normal(size=7),), 0, None),
    (rows, (R.normal(size=(3, 4)), R.normal(size=4)), (0, 1),
     (R.normal(size=(3, 2)), R.normal(size=4))),
    (branchy, (R.normal(size=6), 9), 0, None),
]
#: no index of these is checked per trip of an innermost loop (but in a stencil's few
#: edge trips, ``_e``, after ``gather``)
HOISTED = ("stencil", "reversed_2d", "triangle", "strided", "swapped", "offsets", "rows")


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0].__name__)
def test_values_and_gradients(case, jit):
    f, args, wrt, _ = case
    check_grad(f, args, wrt=wrt, jit=jit)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0].__name__)
def test_checks_are_explicit_under_jit(case):
    """Every index of these gradients is checked by the code itself (or in range by the
    shapes: ``offsets`` needs no test): compiled without Numba's per-access check (the
    comment ``MARK`` first, ``boundscheck=False``)."""
    f, args, wrt, _ = case
    d = jg.differentiate(f, wrt=wrt if isinstance(wrt, tuple) else (wrt,))
    src = d.source(*args)
    assert f"# {MARK}" in src.splitlines()[1], src
    if f.__name__ in HOISTED:
        assert not per_trip(src), src


def per_trip(src: str) -> list[str]:
    """The checks before a statement (not a loop) inside an innermost loop but gather's
    edge loop over ``_e``."""
    out = []
    for loop in ast.walk(ast.parse(src)):
        if not isinstance(loop, ast.For) or loop.target.id == "_e" or any(
                isinstance(n, ast.For) for s in loop.body for n in ast.walk(s)):
            continue
        out += [ast.unparse(n) for s in loop.body for n in ast.walk(s)
                if isinstance(n, ast.Raise) and "loop over" not in ast.unparse(n)]
    return out


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("case", [c for c in CASES if c[3] is not None],
                         ids=lambda c: c[0].__name__)
def test_too_short_raises_index_error(case, jit):
    """An argument too short for the loops: the primal's index would be out of range;
    the gradient raises IndexError in both modes (NumPy's own without jit)."""
    f, _, wrt, short = case
    with pytest.raises(IndexError):
        f(*short)
    d = jg.differentiate(f, wrt=wrt if isinstance(wrt, tuple) else (wrt,), jit=jit)
    with pytest.raises(IndexError):
        d.value_and_grad(*short)
    with pytest.raises(IndexError):
        d.grad(*short)


def test_message_names_array_and_line():
    d = jg.differentiate(stencil, wrt=(0, 1))
    msg = r"x\[i - 1\], .*x\[i \+ 1\].* out of range \(line \d+, loop over i\)"
    with pytest.raises(IndexError, match=msg):
        d.value_and_grad(np.ones(5), np.ones(8))


def test_index_array_elements_checked_before_their_statement():
    """An element of an integer-array parameter the body never binds nor writes stands as
    an index: checked before its statement (the function compiled without Numba's checks);
    a bad or negative index behaves as in the user's code."""
    def gather(x, idx):
        s = 0.0
        for k in range(idx.shape[0]):
            s += x[idx[k]] * x[idx[k]]
        return s

    d = jg.differentiate(gather, wrt=(0,))
    x, idx = np.arange(1.0, 5.0), np.array([0, 3, 1])
    src = d.source(x, idx)
    assert MARK in src and "idx[k] < -x.shape[0]" in src, src
    check_grad(gather, (x, idx), wrt=0)
    check_grad(gather, (x, np.array([-1, 2, -4])), wrt=0)  # Python's wraparound
    with pytest.raises(IndexError):
        d.grad(x, np.array([0, 4]))
    with pytest.raises(IndexError):
        d.grad(x, np.array([0, -5]))


def test_index_array_keeps_numba_checks():
    """An index computed from an element (``idx[k] - 1``), or an index array the body
    writes, is not proved: Numba checks every index of that function (a comment says
    which subscript), and a bad index still raises."""
    def shifted(x, idx):
        s = 0.0
        for k in range(idx.shape[0]):
            s += x[idx[k] - 1] * x[idx[k]]
        return s

    def written(x, idx):
        s = 0.0
        for k in range(idx.shape[0]):
            idx[k] = idx[k] % 4
            s += x[idx[k]] * x[idx[k]]
        return s

    x = np.arange(1.0, 5.0)
    for f in (shifted, written):
        d = jg.differentiate(f, wrt=(0,))
        src = d.source(x, np.array([1, 3, 2]))
        assert UNPROVED in src and MARK not in src, src
        check_grad(f, (x, np.array([1, 3, 2])), wrt=0)
    with pytest.raises(IndexError):
        jg.differentiate(shifted, wrt=(0,)).grad(x, np.array([1, 5]))


def test_compiled_without_numba_checks_unless_the_user_asks():
    """A proved gradient is compiled with ``boundscheck=False``; the user's own
    ``boundscheck=`` is the compile option where given (the explicit checks raise either
    way)."""
    import numba

    d = jg.differentiate(stencil, wrt=(0, 1))
    d.value_and_grad(np.ones(8), np.ones(8))
    assert d._last.compiled.jitted["grad"].targetoptions.get("boundscheck") is False
    for user in (True, False):
        u = jg.differentiate(numba.njit(boundscheck=user)(stencil), wrt=(0, 1))
        u.value_and_grad(np.ones(8), np.ones(8))
        assert u._last.compiled.jitted["grad"].targetoptions.get("boundscheck") is user
        with pytest.raises(IndexError):
            u.value_and_grad(np.ones(5), np.ones(8))


# --- random offsets and lengths against a pure-Python oracle -----------------------------


def shifted(x, lo, n, a):
    s = 0.0
    for i in range(lo, n):
        s += x[i + a] * x[i + a]
    return s


def mirrored(x, lo, n, a):
    s = 0.0
    for i in range(n, lo, -1):
        s += math.sin(x[a - 2 * i])
    return s


def nested(x, lo, n, a):
    s = 0.0
    for i in range(lo, n):
        for j in range(lo, i):
            s += x[i - a] * x[j + a]
    return s


def oracle(f, x, lo, n, a) -> bool:
    """Does the primal index ``x`` out of range (``-len <= e < len`` is in range)?"""
    def bad(e):
        return not -len(x) <= e < len(x)

    if f is shifted:
        return any(bad(i + a) for i in range(lo, n))
    if f is mirrored:
        return any(bad(a - 2 * i) for i in range(n, lo, -1))
    return any(bad(i - a) or bad(j + a) for i in range(lo, n) for j in range(lo, i))


FAMILY = (shifted, mirrored, nested)
GRADS = {(f, jit): jg.differentiate(f, wrt=0, jit=jit) for f in FAMILY for jit in (True, False)}


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(f=st.sampled_from(FAMILY), jit=st.sampled_from([True, True, False]),
       nx=st.integers(0, 8), lo=st.integers(-4, 4), n=st.integers(-3, 8),
       a=st.integers(-9, 9))
def test_raises_exactly_when_the_primal_indexes_out_of_range(f, jit, nx, lo, n, a):
    """Random lengths, ranges and offsets: the gradient raises IndexError exactly where
    the primal (a pure-Python oracle of its indices) indexes out of range; else its
    value is the primal's."""
    x = np.linspace(0.5, 1.5, nx)
    d = GRADS[(f, jit)]
    if oracle(f, x, lo, n, a):
        with pytest.raises(IndexError):
            d.value_and_grad(x, lo, n, a)
        return
    value, gx = d.value_and_grad(x, lo, n, a)
    assert value == pytest.approx(f(x, lo, n, a), rel=1e-12, abs=1e-12)
    assert gx.shape == x.shape


def checkpointed_no_trips(_n, d_n, steps):
    """A checkpointed loop (with no trip for ``steps`` <= len): its schedule comment stands
    in the forward and the adjoint code, one node in two places; a check of the adjoint's
    ``_dn[3]`` planned before it stood also in the forward code, where ``_dn`` is unbound
    (Numba: "Variable '_dn' is not defined"; fuzz seed 8102, #139)."""
    INDEX = _n.copy()
    for dINDEX in jg.checkpointed(range(len(_n), steps, 1), snapshots=1):  # noqa: B007 (the name)
        _live = INDEX
        _live[3] = d_n * _live[2]
    return np.sum(INDEX * INDEX) + _n[3]


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("steps", [1, 8])
def test_check_not_planned_before_a_node_in_two_places(jit, steps):
    x = np.array([-0.79, 0.79, 0.67, 0.2, -0.84])
    check_grad(checkpointed_no_trips, (x, 0.16, steps), (0, 1), jit)
    src = jg.differentiate(checkpointed_no_trips, wrt=(0, 1), jit=jit).source(x, 0.16, steps)
    if jit:
        assert MARK in src
        first = src.index("_dn")
        assert "_dn = " in src[first:first + 40] or "_dn, " in src[first:first + 40], src
