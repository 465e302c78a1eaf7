"""Every operation the runtime records, checked against central differences element by element.

Each case is ``(name, f, domains)``; hypothesis draws the inputs from the domains.
``f`` is wrapped as ``sum(sin(f(...)))`` (Tracker's ``gradtest``) so the incoming
gradient is not all ones.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import jitgrad.runtime as rt

M = np.array([[1.0, 2.0, 0.5], [-1.0, 0.3, 2.0]])


def _in(lo, hi, shape):
    return arrays(np.float64, shape, elements=st.floats(lo, hi, allow_nan=False))


U = lambda *shape: _in(0.1, 0.9, shape)   # positive, inside (0, 1)
S = lambda *shape: _in(-2.0, 2.0, shape)  # signed
WELL = arrays(np.float64, (3, 3), elements=st.floats(-0.5, 0.5)).map(lambda a: a + 3 * np.eye(3))

CASES = [
    # python operators, incl. broadcasting and reflected forms
    ("add", lambda x, y: x + y, [S(2, 3), S(3)]),
    ("radd_ndarray", lambda x: np.ones(3) + x, [S(2, 3)]),
    ("sub", lambda x, y: x - y, [S(2, 3), S(2, 1)]),
    ("rsub", lambda x: 2.0 - x, [S(3)]),
    ("mul", lambda x, y: x * y, [S(2, 3), S()]),
    ("rmul_ndarray", lambda x: M * x, [S(3)]),
    ("truediv", lambda x, y: x / y, [S(2, 3), U(3)]),
    ("rtruediv", lambda x: 1.0 / x, [U(3)]),
    ("pow", lambda x, y: x ** y, [U(3), S(3)]),
    ("pow_const", lambda x: x ** 3, [S(4)]),
    ("rpow", lambda x: 2.0 ** x, [S(3)]),
    ("neg", lambda x: -x, [S(3)]),
    ("pos", lambda x: +x, [S(3)]),
    ("abs", lambda x: abs(x - 1.0), [U(3)]),
    ("mod", lambda x: x % 1.0 + x, [U(3)]),
    ("floordiv", lambda x: (x // 0.5) * x, [_in(0.55, 0.95, (3,))]),
    ("matmul_mv", lambda A, x: A @ x, [S(2, 3), S(3)]),
    ("matmul_mm", lambda A, B: A @ B, [S(2, 3), S(3, 2)]),
    ("rmatmul", lambda x: M @ x, [S(3)]),
    ("matmul_vv", lambda x, y: x @ y, [S(3), S(3)]),
    # numpy ufuncs
    ("np.add", lambda x, y: np.add(x, y), [S(3), S(2, 3)]),
    ("np.multiply", lambda x, y: np.multiply(x, y), [S(3), S(3)]),
    ("np.subtract", lambda x, y: np.subtract(x, y), [S(3), S()]),
    ("np.divide", lambda x, y: np.divide(x, y), [S(3), U(3)]),
    ("np.negative", np.negative, [S(3)]),
    ("sin", np.sin, [S(2, 2)]),
    ("cos", np.cos, [S(3)]),
    ("tan", np.tan, [U(3)]),
    ("arcsin", np.arcsin, [U(3)]),
    ("arccos", np.arccos, [U(3)]),
    ("arctan", np.arctan, [S(3)]),
    ("arctan2", np.arctan2, [S(3), U(3)]),
    ("hypot", np.hypot, [U(3), S(3)]),
    ("tanh", np.tanh, [S(3)]),
    ("sinh", np.sinh, [S(3)]),
    ("cosh", np.cosh, [S(3)]),
    ("exp", np.exp, [S(3)]),
    ("expm1", np.expm1, [S(3)]),
    ("log", np.log, [U(3)]),
    ("log1p", np.log1p, [U(3)]),
    ("sqrt", np.sqrt, [U(3)]),
    ("np.power", np.power, [U(3), S(3)]),
    ("np.abs", lambda x: np.abs(x - 1.0), [U(3)]),
    ("maximum", lambda x, y: np.maximum(x, y + 1.0), [S(3), U(3)]),
    ("minimum", lambda x, y: np.minimum(x - 1.0, y), [U(3), U(3)]),
    # reductions, as functions and methods
    ("sum", lambda x: np.sum(x), [S(2, 3)]),
    ("sum_axis", lambda x: np.sum(x, axis=0), [S(2, 3)]),
    ("sum_method", lambda x: x.sum(axis=1), [S(2, 3)]),
    ("mean", lambda x: x.mean(), [S(2, 3)]),
    ("mean_axis", lambda x: np.mean(x, axis=1), [S(2, 3)]),
    ("prod", lambda x: x.prod(axis=0), [S(2, 3)]),
    ("max", lambda x: np.max(x + np.arange(6.0).reshape(2, 3)), [U(2, 3)]),
    ("min_axis", lambda x: (x + np.arange(6.0).reshape(2, 3)).min(axis=1), [U(2, 3)]),
    ("var", lambda x: x.var(), [S(4)]),
    ("std", lambda x: np.std(x + np.arange(6.0).reshape(3, 2), axis=0), [U(3, 2)]),
    ("norm", np.linalg.norm, [U(3)]),
    ("cumsum", lambda x: np.cumsum(x), [S(2, 3)]),
    ("cumsum_method", lambda x: x.cumsum(axis=1), [S(2, 3)]),
    # linear algebra
    ("dot", np.dot, [S(2, 3), S(3)]),
    ("dot_method", lambda x, y: x.dot(y), [S(3), S(3)]),
    ("outer", np.outer, [S(3), S(2)]),
    ("solve", np.linalg.solve, [WELL, S(3)]),
    ("inv", np.linalg.inv, [WELL]),
    ("det", np.linalg.det, [WELL]),
    ("trace", np.trace, [S(3, 3)]),
    # shape
    ("reshape", lambda x: x.reshape(3, 2) * np.arange(6.0).reshape(3, 2), [S(2, 3)]),
    ("np.reshape", lambda x: np.reshape(x, (6,)) * np.arange(6.0), [S(2, 3)]),
    ("T", lambda x: x.T @ np.array([1.0, 2.0]), [S(2, 3)]),
    ("transpose_axes", lambda x: x.transpose(1, 0, 2) * np.arange(12.0).reshape(3, 2, 2),
     [S(2, 3, 2)]),
    ("ravel", lambda x: x.ravel() * np.arange(6.0), [S(2, 3)]),
    ("flatten", lambda x: x.flatten() * np.arange(6.0), [S(2, 3)]),
    ("expand_dims", lambda x: np.expand_dims(x, 0) * np.ones((2, 3)), [S(3)]),
    ("concatenate", lambda x, y: np.concatenate([x, y, np.ones(1)]) * np.arange(6.0),
     [S(2), S(3)]),
    ("stack", lambda x, y: np.stack([x, y], axis=1) * M.T, [S(3), S(3)]),
    ("hstack", lambda x, y: np.hstack([x, y]), [S(2), S(3)]),
    ("vstack", lambda x, y: np.vstack([x, y]) * M, [S(3), S(3)]),
    ("copy", lambda x: np.copy(x) * x, [S(3)]),
    # indexing and selection
    ("getitem_slice", lambda x: x[1:3] * 2.0, [S(4)]),
    ("getitem_int", lambda x: x[1] * x[0, 2], [S(2, 3)]),
    ("getitem_repeated", lambda x: x[np.array([0, 2, 2, 0])], [S(3)]),
    ("iterate", lambda x: sum(r * r for r in x), [S(3, 2)]),
    ("where", lambda x, y: np.where(np.array([True, False, True]), x, y), [S(3), S(3)]),
    ("clip", lambda x: np.clip(x, -1.0, 1.0) * x, [S(4)]),
    ("clip_method", lambda x: x.clip(-1.0, 1.0), [S(4)]),
    # runtime nodes
    ("hook", lambda x: rt.hook(lambda g: g, x) * x, [S(3)]),
    ("checkpoint", lambda x, y: rt.checkpoint(lambda a, b: np.tanh(a @ b), x, y), [S(2, 3), S(3)]),
    ("param_of_tracked", lambda x: rt.param(x) * x, [S(3)]),
]


def _wrapped(f):
    return lambda *xs: np.sin(f(*xs)).sum()


def check(f, *xs):
    for r in rt.gradcheck_report(_wrapped(f), *xs, rtol=1e-5, atol=1e-6):
        assert r["passed"], r


@pytest.mark.parametrize("name,f,domains", CASES, ids=[c[0] for c in CASES])
def test_op_against_finite_differences(name, f, domains):
    @settings(max_examples=8, deadline=None, derandomize=True)
    @given(st.tuples(*domains))
    def run(xs):
        before = [x.copy() for x in xs]
        check(f, *xs)
        for x, b in zip(xs, before, strict=True):
            np.testing.assert_array_equal(x, b)

    run()


def test_scalar_inputs(assert_fd):
    assert_fd(lambda a, b: a * b + np.sin(a) / b - a ** b, 0.7, 1.3)


def test_track_call_records_one_node(assert_fd):
    calls = []

    def vjp_all(A, x, n):
        calls.append("fwd")
        y = np.tanh(A @ x) * n

        def pullback(dy):
            calls.append("back")
            d = dy * n * (1 - np.tanh(A @ x) ** 2)
            return np.outer(d, x), A.T @ d, None

        return y, pullback

    A = rt.param(M)
    x = rt.param(np.array([0.1, 0.2, 0.3]))
    y = rt.track_call(vjp_all, (A, x, 2))
    assert rt.istracked(y) and y.node.parents == (A.node, x.node)
    rt.back(y.sum())
    assert calls == ["fwd", "back"]
    d = 2 * (1 - np.tanh(M @ x.data) ** 2)
    np.testing.assert_allclose(A.grad, np.outer(d, x.data))
    np.testing.assert_allclose(x.grad, M.T @ d)
    assert np.array_equal(rt.track_call(vjp_all, (M, x.data, 1)), np.tanh(M @ x.data))
    assert_fd(lambda a, b: rt.track_call(vjp_all, (a, b, 3)).sum(), M, np.array([0.1, 0.2, 0.3]))
