"""Straight-line code: operators, math and NumPy elementwise rules, builtins, returns."""

import corpus_straight as C
import numpy as np
import pytest
from gradcheck import check_grad, shared_diff
from hypothesis import given, settings
from hypothesis import strategies as st

import jitgrad as jg

SCALAR_CASES = [
    (C.arith, (0.7, 1.3)), (C.tuple_unpack, (0.7, 1.3)), (C.aug, (0.7, 1.3)),
    (C.floordiv_mod, (2.7, 1.3)), (C.ternary, (0.7, 1.3)), (C.ternary, (1.7, 1.3)),
    (C.boolean_ops, (0.7, 1.3)), (C.boolean_ops, (-0.7, 1.3)),
    (C.globals_closure_builtins, (0.7, 1.3)), (C.globals_closure_builtins, (-0.7, -1.3)),
    (C.multiple_returns, (2.0, 1.0)), (C.multiple_returns, (-2.0, 1.0)),
    (C.multiple_returns, (0.5, 1.0)), (C.name_collision, (0.7, 1.3)),
    (C.helper_call, (0.7, 1.3)), (C.math_scalars, (0.7, 1.3)),
]


@pytest.mark.parametrize("f,args", SCALAR_CASES, ids=lambda v: getattr(v, "__name__", ""))
def test_scalar_functions(f, args, jit):
    check_grad(f, args, wrt=(0, 1), jit=jit, shared=True)


def test_numpy_elementwise_arrays(jit):
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, 5)
    y = rng.uniform(0.5, 2, 5)
    check_grad(C.numpy_arrays, (x, y), wrt=(0, 1), jit=jit, shared=True)


def test_broadcast_scalar_array(jit):
    x = np.linspace(-1, 1, 4)
    check_grad(C.broadcast_scalar, (x, 0.7), wrt=(0, 1), jit=jit, shared=True)


def _compiled(f, jit):
    """The object test_scalar_functions checked (``shared_diff``): compiled once."""
    return shared_diff(f, (0, 1), jit)


@settings(max_examples=25, deadline=None)
@given(x=st.floats(-2, 2), y=st.floats(0.2, 3))
def test_math_rules_hypothesis(x, y):
    from gradcheck import numeric_grad

    for jit in (True, False):
        g = _compiled(C.math_scalars, jit).grad(x, y)
        for k in range(2):
            fd = numeric_grad(C.math_scalars, (x, y), k)
            np.testing.assert_allclose(g[k], fd, rtol=1e-4, atol=1e-5)


@settings(max_examples=25, deadline=None)
@given(x=st.floats(-3, 3), y=st.floats(0.2, 3))
def test_operator_rules_hypothesis(x, y):
    from gradcheck import numeric_grad

    for jit in (True, False):
        g = _compiled(C.arith, jit).grad(x if x > 0.05 else 0.05 + abs(x), y)
        xx = x if x > 0.05 else 0.05 + abs(x)
        for k in range(2):
            fd = numeric_grad(C.arith, (xx, y), k)
            np.testing.assert_allclose(g[k], fd, rtol=1e-4, atol=1e-5)


def test_value_and_grad_and_vjp(jit):
    d = jg.differentiate(C.arith, wrt=0, jit=jit)
    v, g = d.value_and_grad(0.7, 1.3)
    assert np.isclose(v, C.arith(0.7, 1.3))
    assert np.isclose(g, jg.grad(C.arith, jit=jit)(0.7, 1.3))
    v2, pb = d.vjp(0.7, 1.3)
    assert np.isclose(pb(2.0), 2 * g) and np.isclose(pb(1.0), g)
    assert np.isclose(d(0.7, 1.3), v)
    vg = jg.value_and_grad(C.arith, wrt="y", jit=jit)(0.7, 1.3)
    assert np.isclose(vg[1], jg.grad(C.arith, wrt=1, jit=jit)(0.7, 1.3))


def test_decorator_forms_and_numba_input():
    import numba

    @numba.njit
    def nf(x):
        return x * x * 3.0

    d = jg.differentiate(nf)
    assert np.isclose(d.grad(2.0), 12.0)
    assert np.isclose(jg.differentiate(wrt=0, jit=False)(C.helper_sq).grad(3.0), 6.0)


def test_source_is_readable():
    d = jg.differentiate(C.arith, wrt=(0, 1))
    src = d.source(0.7, 1.3)
    assert "def arith_grad" in src and "dx" in src and "dy" in src
    assert "_tape" not in src  # straight-line code needs no tape
    for stage in ("normalized", "forward", "adjoint"):
        assert d.source(stage=stage).startswith("def ")


def test_user_rule_is_used():
    import math as m

    def mysq(x):
        return x * x

    calls = []

    @jg.grad_rule(mysq)
    def _mysq(x):
        def back(dy):
            return (dy * 2.0 * x,)
        return x * x, back

    calls.append(1)
    from corpus_rules import set_fn, uses_mysq

    set_fn(mysq)
    check_grad(uses_mysq, (0.9,), jit=False)
    check_grad(uses_mysq, (0.9,), jit=True)
    assert m.isclose(jg.grad(uses_mysq)(0.5), 2 * 0.5 * 3.0)
