"""Nested differentiation of forward-mode calls: ``jg.jvp``, ``jg.hvp`` and a
``@differentiate`` object's ``.jvp`` called inside a differentiated function inline their
generated code (tangent code; the tangent code of the gradient code) and are
differentiated again under every outer entry point.  Values and every gradient element
against central differences (or closed forms), both jit modes; ``jg.vjp`` inside stays
refused (tests/test_api_errors.py), its documented rewrite is checked here."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
from gradcheck import numeric_grad

import jitgrad as jg

JIT = [False, True]
X = np.array([0.3, 0.5, -0.2])


def field(x, w):
    """A scalar field of an array and a parameter."""
    return np.sum(np.sin(x * w) * x) + w * np.exp(x[0])


def directional_loss(x, w):
    """Directional derivatives of ``field`` along directions that change in a loop."""
    s = 0.0
    v = x * 0.5
    for _ in range(3):
        y, t = jg.jvp(field, (x, w), v)
        s = s + t * w + 0.1 * y
        v = v + 0.1 * x
    return s


def _directional_closed_form(x, w):
    """``directional_loss`` with the directional derivative written by hand."""
    def grad_x(x, w):
        g = np.sin(x * w) + w * x * np.cos(x * w)
        g[0] += w * np.exp(x[0])
        return g
    s, v = 0.0, x * 0.5
    for _ in range(3):
        s = s + (grad_x(x, w) @ v) * w + 0.1 * field(x, w)
        v = v + 0.1 * x
    return s


def _all_entry_points(f, args, jit):
    """Value, gradient (both arguments; inputs unchanged), a jvp, an hvp, jacfwd and jacrev
    of ``f`` against central differences of ``f`` (and of the gradient checked first, for
    the hvp): each entry point compiled once."""
    value = f(*args)
    ng = [numeric_grad(f, args, i) for i in range(2)]
    before = copy.deepcopy(args)
    vg = jg.value_and_grad(f, wrt=(0, 1), jit=jit)
    v, g = vg(*args)
    assert v == pytest.approx(value, rel=1e-12)
    for a, b in zip(g, ng, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-8)
    np.testing.assert_equal(args, before, err_msg="gradient call mutated an input")
    tan = (np.linspace(0.5, 1.5, np.size(args[0])).reshape(np.shape(args[0])), 0.3)
    v, t = jg.jvp(f, args, tan, wrt=(0, 1), jit=jit)
    assert v == pytest.approx(value, rel=1e-12)
    assert t == pytest.approx(np.sum(ng[0] * tan[0]) + ng[1] * tan[1], rel=1e-6, abs=1e-8)
    np.testing.assert_allclose(jg.jacfwd(f, wrt=0, jit=jit)(*args), ng[0], rtol=1e-6,
                               atol=1e-8)
    np.testing.assert_allclose(jg.jacrev(f, wrt=0, jit=jit)(*args), ng[0], rtol=1e-6,
                               atol=1e-8)
    dw = lambda *a: vg(*a)[1][1]  # noqa: E731  (the gradient checked above)
    h = jg.hvp(f, args, 1.0, wrt=1, jit=jit)
    assert h == pytest.approx(numeric_grad(dw, args, 1, eps=1e-5), rel=1e-5, abs=1e-7)


@pytest.mark.parametrize("jit", JIT)
def test_directional_derivative_in_a_loop(jit):
    assert directional_loss(X, 0.7) == pytest.approx(_directional_closed_form(X, 0.7),
                                                    rel=1e-12)
    _all_entry_points(directional_loss, (X, 0.7), jit)


def curvature_loss(x, w):
    """The Hessian of ``field`` along ``x / 2``, then weighted."""
    h = jg.hvp(field, (x, w), x * 0.5)
    return np.sum(h * x) * w


@pytest.mark.parametrize("jit", JIT)
def test_hvp_inside(jit):
    # the closed form: H_xx @ v with v = x / 2
    hx = jg.hessian(field, wrt=0, jit=False)(X, 0.7)
    assert curvature_loss(X, 0.7) == pytest.approx(np.sum((hx @ (X * 0.5)) * X) * 0.7,
                                                  rel=1e-12)
    _all_entry_points(curvature_loss, (X, 0.7), jit)


d_field = jg.differentiate(field, wrt=0, jit=False)


def method_loss(x, w):
    y, t = d_field.jvp((x, w), (x,))
    return t * w + y


def pair(a, b):
    return math.sin(a * b) + a * a * b


def two_tangents(a, b):
    y, t = jg.jvp(pair, (a, b), (1.0, 0.5), wrt=(0, 1))
    return t * a + y * b


pair_grad = jg.grad(pair, wrt=0, jit=False)


def jvp_of_a_gradient(a, b):
    y, t = jg.jvp(pair_grad, (a, b), 1.0)
    return t * b + y


def hvp_two_tangents(a, b):
    ha, hb = jg.hvp(pair, (a, b), (1.0, 0.5), wrt=(0, 1))
    return ha * b + hb * a


def calls_a_gradient(a, b):
    return pair_grad(a, b) * a


def jvp_of_a_caller(a, b):
    y, t = jg.jvp(calls_a_gradient, (a, b), 0.3)
    return t * t + y


def vector_out(x, w):
    return np.sin(x * w) * x


def vector_jvp(x, w):
    y, t = jg.jvp(vector_out, (x, w), x)
    return np.sum(t * t) + np.sum(y) * w


@pytest.mark.parametrize("jit", JIT)
@pytest.mark.parametrize("f, args", [
    (method_loss, (X, 0.7)), (two_tangents, (0.4, 1.3)), (vector_jvp, (X, 0.7)),
    (jvp_of_a_gradient, (0.4, 1.3)), (hvp_two_tangents, (0.4, 1.3)),
    (jvp_of_a_caller, (0.4, 1.3))])
def test_jvp_forms_inside(f, args, jit):
    """``d.jvp``, a tuple wrt with its tangents, an array-valued function's jvp, the jvp
    of a gradient, an hvp with a tuple wrt, the jvp of a function calling a gradient."""
    _all_entry_points(f, args, jit)


@pytest.mark.parametrize("jit", JIT)
def test_differentiate_object_of_a_function_calling_jvp(jit):
    """``@differentiate`` objects of an outer function: grad, vjp, jvp."""
    d = jg.differentiate(directional_loss, wrt=(0, 1), jit=jit)
    ng = [numeric_grad(directional_loss, (X, 0.7), i) for i in range(2)]
    gx, gw = d.grad(X, 0.7)
    np.testing.assert_allclose(gx, ng[0], rtol=1e-6)
    assert gw == pytest.approx(ng[1], rel=1e-6)
    value, pullback = d.vjp(X, 0.7)
    assert value == pytest.approx(directional_loss(X, 0.7), rel=1e-12)
    np.testing.assert_allclose(pullback(2.0)[0], 2.0 * ng[0], rtol=1e-6)
    _, t = d.jvp((X, 0.7), (np.ones(3), 0.0))
    assert t == pytest.approx(np.sum(ng[0]), rel=1e-6)


def _cotangent_field(x, w, ct):
    return np.sum(ct * vector_out(x, w))


def vjp_rewritten(x, w):
    """The rewrite a nested jg.vjp's refusal suggests: jg.grad of a helper."""
    g = jg.grad(_cotangent_field)(x, w, x * x)
    return np.sum(g * x) * w


@pytest.mark.parametrize("jit", JIT)
def test_the_suggested_rewrite_of_a_nested_vjp(jit):
    _all_entry_points(vjp_rewritten, (X, 0.7), jit)


def partial_primals(x, w):
    y, t = jg.jvp(field, (x,), (x,))
    return t


def scalar_tangent(x, w):
    y, t = jg.jvp(field, (x, w), w)
    return t


def two_outputs(x, w):
    return x * w, w


def jvp_of_two_outputs(x, w):
    y, t = jg.jvp(two_outputs, (x, w), x)
    return np.sum(t[0])


@pytest.mark.parametrize("f, line, why", [
    (partial_primals, "jg.jvp(field, (x,), (x,))", "tuple of all 2 arguments"),
    (scalar_tangent, "jg.jvp(field, (x, w), w)", "the tangent of 'x'"),
    (jvp_of_two_outputs, "jg.jvp(two_outputs, (x, w), x)", "returns 2 values"),
])
@pytest.mark.parametrize("jit", JIT)
def test_refused_at_the_users_line(f, line, why, jit):
    with pytest.raises(jg.TransformError, match=why) as e:
        jg.grad(f, jit=jit)(X, 0.7)
    assert line in str(e.value) and "test_nested_forward.py" in str(e.value)
    assert e.value.hint
