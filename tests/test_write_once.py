"""Gradients written once (``backend/write_once.py``): a loop that is the first writer of
every row of a zeroed gradient assigns instead of adding, the gradient is made with
``np.empty_like`` and the elements no iteration reaches are set to 0.

Each case checks where the rewrite applies (or must not) in the generated source, and
every gradient element against central differences or a closed form in both ``jit``
modes.  Under ``jit=False`` ``np.empty_like`` is made to return NaN-filled memory, so an
element the rewrite forgot to write shows up as NaN instead of as a lucky zero."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from gradcheck import benchmark_workloads, check_grad, shared_diff
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jitgrad as jg

ONCE = "each element written once (made empty)"


def _poison(mp: pytest.MonkeyPatch) -> None:
    """Make ``np.empty_like`` return NaNs (what the generated code calls under
    ``jit=False``; Numba must never compile against the patched function)."""
    real = np.empty_like

    def empty_like(a, *args, **kwargs):
        out = real(a, *args, **kwargs)
        if out.dtype.kind in "fc":
            out.fill(np.nan)
        return out

    mp.setattr(np, "empty_like", empty_like)


@pytest.fixture(autouse=True)
def poisoned_empty(request, monkeypatch):
    """Under a test's ``jit=False`` parameter, ``np.empty_like`` returns NaNs."""
    params = getattr(request.node, "callspec", None)
    if params is not None and params.params.get("jit") is False:
        _poison(monkeypatch)


def _src(f, *args, wrt=0):
    d = jg.differentiate(f, wrt=wrt, jit=False)  # (Numba must not see a poisoned NumPy)
    d.grad(*args)
    return d.source(*args)


#: the softmax cross-entropy of ``benchmarks/``: one row per outer iteration, a label
#: element accumulated before the row's inner loop
log_sum_exp_rows = benchmark_workloads()["softmax_ce"].primal


def inner_span(z, a, b):
    """Rows ``1 .. n - 2``, columns ``2 .. m + b - 1``: elements no index reaches."""
    n = z.shape[0]
    m = z.shape[1]
    s = 0.0
    for i in range(1, n - 1):
        for j in range(2, m + b):
            s += a * z[i, j] * z[i, j]
    return s


def triangle(z):
    """The inner span depends on the row: ``j < i``."""
    s = 0.0
    for i in range(z.shape[0]):
        for j in range(i):
            s += math.sin(z[i, j])
    return s


def whole_rows(x, w):
    """``dx[i]`` once per iteration, with a sum into ``dw`` (which keeps the gather form
    away: it is a serial loop)."""
    s = 0.0
    for i in range(x.shape[0]):
        s += w * x[i] * x[i]
    return s


def row_vectors(z, w):
    """``dz[i] += e`` with ``e`` a row: the whole row at once."""
    s = 0.0
    for i in range(z.shape[0]):
        s += w * np.sum(z[i] * z[i])
    return s


def strided(z):
    s = 0.0
    for i in range(0, z.shape[0], 2):
        for j in range(z.shape[1]):
            s += z[i, j] * z[i, j]
    return s


def next_row(z):
    """Iteration ``i`` adds to row ``i + 1`` too: the next iteration must not overwrite."""
    s = 0.0
    for i in range(z.shape[0] - 1):
        for j in range(z.shape[1]):
            s += z[i, j] * z[i + 1, j]
    return s


def branch_after(z):
    """The row's last accumulation (its adjoint's first) is conditional."""
    s = 0.0
    for i in range(z.shape[0]):
        for j in range(z.shape[1]):
            s += z[i, j]
        if z[i, 0] > 0.0:
            s += z[i, 0] * z[i, 0]
    return s


def rows_then_element(z):
    """A statement after the loop adds to the gradient: its adjoint comes first."""
    s = 0.0
    for i in range(z.shape[0]):
        for j in range(z.shape[1]):
            s += z[i, j] * z[i, j]
    return s + z[0, 0] * 3.0


def column_after(z, labels):
    """The element read after the inner loop is at its last index: the adjoint's inner
    loop rebinds ``j``, so that accumulation may not move after it."""
    s = 0.0
    for i in range(z.shape[0]):
        for j in range(z.shape[1]):
            s += z[i, j] * z[i, j]
        s += z[i, labels[j]] * 2.0
    return s


def branch_first(z):
    """A conditional accumulation before the row's loop: its adjoint runs after it."""
    s = 0.0
    for i in range(z.shape[0]):
        if z[i, 0] > 0.0:
            s += z[i, 0] * z[i, 0]
        for j in range(z.shape[1]):
            s += z[i, j]
    return s


def stops_early(z):
    """The forward loop breaks; its adjoint loop runs over the trips made."""
    s = 0.0
    for i in range(z.shape[0]):
        for j in range(z.shape[1]):
            s += z[i, j] * z[i, j]
            if s > 4.0:
                break
    return s


def element_then_rows(z):
    """A statement before the loop adds to the gradient: its adjoint comes last."""
    s = z[0, 0] * 3.0
    for i in range(z.shape[0]):
        for j in range(z.shape[1]):
            s += z[i, j] * z[i, j]
    return s


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("shape", [(1, 1), (2, 3), (4, 5)])
def test_rows(shape, jit):
    rng = np.random.default_rng(sum(shape))
    z = rng.normal(size=shape)
    labels = rng.integers(0, shape[1], shape[0])
    check_grad(log_sum_exp_rows, (z, labels), 0, jit=jit, shared=True)
    src = _src(log_sum_exp_rows, z, labels)
    assert ONCE in src and "dz = np.empty_like(z)" in src
    assert "dz[i, j] = " in src and "dz[i, max(c, 0):] = 0.0" in src
    assert "dz[max(n, 0):] = 0.0" in src
    # the label's accumulation moved after the row's loop
    assert src.index("dz[i, j] = ") < src.index("dz[i, labels[i]] += ")


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("shape,b", [((4, 5), 0), ((5, 6), -2), ((3, 4), -9), ((2, 3), 0),
                                     ((1, 3), 0)])
def test_partial_spans(shape, b, jit):
    """Every element outside rows ``1 .. n - 2`` and columns ``2 .. m + b - 1`` is 0,
    including where a span is empty."""
    z = np.random.default_rng(shape[0]).normal(size=shape)
    check_grad(inner_span, (z, 0.5, b), 0, jit=jit, shared=True)
    g = shared_diff(inner_span, 0, jit).grad(z, 0.5, b)
    want = np.zeros_like(z)
    want[1:-1, 2:max(shape[1] + b, 2)] = z[1:-1, 2:max(shape[1] + b, 2)]
    np.testing.assert_allclose(g, want, rtol=1e-12, atol=0.0)
    src = _src(inner_span, z, 0.5, b)
    assert "dz[:1] = 0.0" in src and re.search(r"dz\[max\(\w+, 1\):\] = 0\.0", src)
    assert "dz[i, :2] = 0.0" in src and re.search(r"dz\[i, max\(\w+, 2\):\] = 0\.0", src)
    # (the fills come before the comment that describes the loop)
    assert re.search(r"0\.0\n\s*# iterations over j", src)


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("shape", [(1, 1), (3, 3), (2, 4)])
def test_span_from_the_row(shape, jit):
    z = np.random.default_rng(3).normal(size=shape)
    check_grad(triangle, (z,), 0, jit=jit, shared=True)
    assert ONCE in _src(triangle, z)


@pytest.mark.parametrize("jit", [True, False])
def test_whole_rows(jit):
    x = np.random.default_rng(0).normal(size=5)
    check_grad(whole_rows, (x, 0.3), (0, 1), jit=jit)
    src = _src(whole_rows, x, 0.3, wrt=(0, 1))
    assert ONCE in src and "dx[i] = " in src and "_inner_lo" not in src
    z = np.random.default_rng(1).normal(size=(3, 4))
    check_grad(row_vectors, (z, 0.3), 0, jit=jit)
    src = _src(row_vectors, z, 0.3)
    assert ONCE in src and "dz[i] = " in src


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("f", [branch_first, stops_early, element_then_rows])
def test_accumulations_around_the_row(f, jit):
    """Accumulations before the forward loop (after it in the adjoint), a ``break`` (the
    adjoint loop runs over the trips made: the fill starts there)."""
    z = np.random.default_rng(2).normal(0.3, 0.5, size=(5, 3))
    check_grad(f, (z,), 0, jit=jit)
    assert ONCE in _src(f, z)


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("f", [strided, next_row, branch_after, rows_then_element])
def test_does_not_apply(f, jit):
    z = np.random.default_rng(2).normal(0.3, 0.5, size=(5, 3))
    check_grad(f, (z,), 0, jit=jit)
    src = _src(f, z)
    assert ONCE not in src and "np.empty_like" not in src


@pytest.mark.parametrize("jit", [True, False])
def test_accumulation_reading_what_the_inner_loop_binds(jit):
    z = np.random.default_rng(4).normal(size=(3, 4))
    labels = np.array([1, 3, 0, 2])
    check_grad(column_after, (z, labels), 0, jit=jit)
    src = _src(column_after, z, labels)
    assert ONCE not in src and "np.empty_like" not in src


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(0, 5), m=st.integers(0, 5), b=st.integers(-6, 0),
       jit=st.booleans())
def test_spans_property(n, m, b, jit):
    """Closed form for any shape and span, empty ones included: ``2 a z`` inside, 0 out."""
    z = np.random.default_rng(n * 7 + m).normal(size=(n, m))
    d = shared_diff(inner_span, 0, jit)
    with pytest.MonkeyPatch.context() as mp:
        if not jit:
            _poison(mp)
        g = d.grad(z, 0.5, b)
    want = np.zeros_like(z)
    stop = max(m + b, 2)
    want[1:max(n - 1, 1), 2:stop] = z[1:max(n - 1, 1), 2:stop]
    np.testing.assert_array_equal(np.isnan(g), False)
    np.testing.assert_allclose(g, want, rtol=1e-12, atol=0.0)


@pytest.mark.parametrize("jit", [True, False])
def test_hvp_through_written_once_gradients(jit):
    """``jg.hvp`` runs the forward mode of the gradient code, assignments and fills
    included: against central differences of the gradient."""
    rng = np.random.default_rng(0)
    z = rng.normal(size=(3, 4))
    cases = [(log_sum_exp_rows, (z, np.array([1, 3, 0]))), (inner_span, (z, 0.5, -1)),
             (triangle, (rng.normal(size=(3, 3)),)), (whole_rows, (rng.normal(size=4), 0.3))]
    for f, args in cases:
        v = rng.normal(size=args[0].shape)
        hv = jg.hvp(f, args, v, jit=jit)
        d = shared_diff(f, 0, jit)  # (the objects the tests above checked)
        eps = 1e-5
        fd = (d.grad(args[0] + eps * v, *args[1:]) - d.grad(args[0] - eps * v, *args[1:])) \
            / (2 * eps)
        np.testing.assert_allclose(hv, fd, rtol=1e-6, atol=1e-8, err_msg=f.__name__)
