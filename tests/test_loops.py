"""The control-flow corpus: every case against finite differences, jit and no-jit."""

import corpus_loops as C
import numpy as np
import pytest
from gradcheck import check_grad, shared_diff
from hypothesis import given, settings
from hypothesis import strategies as st

import jitgrad as jg


def _id(case):
    return case[0].__name__


@pytest.mark.parametrize("case", C.CASES, ids=[f"{c[0].__name__}-{k}" for k, c in
                                                enumerate(C.CASES)])
def test_corpus(case, jit):
    f, make, wrt = case
    check_grad(f, make(), wrt=wrt, jit=jit, shared=True)


def test_corpus_size():
    assert len({c[0] for c in C.CASES}) >= 80


def test_float32_gradient_dtype(jit):
    x = np.linspace(-1, 1, 4).astype(np.float32)
    g = jg.grad(C.arr_write_local, jit=jit)(x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, 5 * x ** 4 * 0 + 3 * x * x, rtol=1e-5)


def test_recursion_refused():
    def rec(a):
        return C.h_recursive(a, 3)

    import corpus_loops

    with pytest.raises(jg.TransformError, match="recursion"):
        jg.grad(corpus_loops.h_recursive)(0.5, 3)


def test_tapes_only_where_needed():
    src = jg.differentiate(C.combo_rosenbrock).source(np.ones(4))
    assert "_tape" not in src  # x is never written: reads are recomputed
    src = jg.differentiate(C.for_loop_carried_scalar).source(0.5, 3)
    assert ".append(i)" not in src  # loop indices are never pushed


_PROPERTY = [C.combo_rosenbrock, C.if_array_cond, C.for_break_data, C.arr_cumulative,
             C.for_continue, C.combo_max_tracking]


@settings(max_examples=15, deadline=None)
@given(data=st.data())
@pytest.mark.parametrize("f", _PROPERTY, ids=[f.__name__ for f in _PROPERTY])
def test_loop_gradients_hypothesis(f, data):
    """Random inputs (so random branches, break points and maxima) in both modes."""
    from gradcheck import numeric_grad

    n = data.draw(st.integers(2, 7))
    xs = data.draw(st.lists(st.floats(-1.5, 1.5), min_size=n, max_size=n))
    x = np.array(xs)
    # keep away from kinks, where one-sided derivatives legitimately differ
    # branch boundaries of the corpus functions (0 and -0.5) and ties are kinks
    if np.min(np.abs(x)) < 1e-3 or np.min(np.abs(x + 0.5)) < 1e-3 \
            or len(np.unique(np.round(x, 3))) < n:
        return
    if f is C.for_break_data and np.any(np.abs(x) < 0.05):
        return
    for jit in (True, False):
        g = shared_diff(f, 0, jit).grad(x)  # the object test_corpus checked (wrt 0)
        np.testing.assert_allclose(g, numeric_grad(f, (x,), 0), rtol=1e-5, atol=1e-6)
