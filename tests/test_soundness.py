"""Defect classes that once gave silently wrong gradients: right now, or a clear error."""

import corpus_soundness as C
import numpy as np
import pytest
from gradcheck import check_grad

import jitgrad as jg


@pytest.mark.parametrize("case", C.CASES, ids=[f"{c[0].__name__}-{k}" for k, c in
                                                enumerate(C.CASES)])
def test_once_wrong_now_right(case, jit):
    f, make, wrt = case
    check_grad(f, make(), wrt=wrt, jit=jit)


@pytest.mark.parametrize("case", C.REFUSED, ids=[c[0].__name__ for c in C.REFUSED])
def test_refused_at_the_users_line(case, jit):
    f, make, what, line = case
    args = make()
    before = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    with pytest.raises(jg.TransformError, match=what) as info:
        jg.differentiate(f, wrt=0, jit=jit).grad(*args)
    err = info.value
    assert err.filename.endswith("corpus_soundness.py")
    assert err.lineno is not None and line in err.source_line
    assert "_t" not in err.msg and "_ret" not in err.msg  # names the user wrote
    for a, b in zip(args, before, strict=True):
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b)


def test_adjoint_of_rebound_argument_has_its_shape(jit):
    x = np.linspace(0.1, 0.9, 7)
    g = jg.grad(C.wrt_rebound_after_loop, jit=jit)(x)
    assert g.shape == x.shape
    np.testing.assert_allclose(g, 2 * x)


def test_grad_of_array_rebound_to_scalar_is_a_scalar_output(jit):
    d = jg.differentiate(C.array_to_scalar, jit=jit)
    x = np.array([1.0, 2.0])
    value, g = d.value_and_grad(x)
    assert value == 9.0
    np.testing.assert_allclose(g, [6.0, 6.0])


def _dot_loop(x, y):
    s = 0.0
    for i in range(len(x)):
        s += x[i] * y[i]
    return s


def test_mismatched_shapes_raise_instead_of_writing_out_of_bounds(jit):
    x, y = np.ones(5), np.ones(3)
    with pytest.raises(IndexError):
        jg.grad(_dot_loop, wrt=(0, 1), jit=jit)(x, y)
    np.testing.assert_array_equal(y, np.ones(3))


def _view_after_the_writes(x, a):
    h = np.empty_like(x)
    for i in range(3):
        h[i] = x[i] * a
    h[3:] = x[3:]
    r = h[::-1]  # made after every write into h: a plain adjoint, no adjoint view
    return np.min(r) * a + np.sum(r * r)


def _twice_bound_view(x, a):
    s = 0.0
    for _k in range(2):  # each trip binds q anew, before the writes of the next
        q = x * a
        v = q[1:]
        s = s + np.sum(v * v)
        q[0] = s
    return s


@pytest.mark.parametrize("f", [_view_after_the_writes, _twice_bound_view])
def test_views_made_after_the_writes_into_their_base(f, jit):
    """A write into a view's base that runs only before the view is made (or into an array
    the name no longer holds) needs no adjoint view (analyse._may_name_the_same)."""
    check_grad(f, (np.linspace(0.2, 1.1, 5), 0.7), wrt=(0, 1), jit=jit)
