"""Nested differentiation, compiled: a jitgrad gradient called inside a differentiated
function is inlined as its generated gradient code and differentiated again (reverse over
reverse; forward over reverse for jvp/hvp).  Every gradient element against central
differences, the value every entry point returns, both jit modes."""

from __future__ import annotations

import math

import numpy as np
import pytest
from gradcheck import check_grad, numeric_grad

import jitgrad as jg

JIT = [False, True]


# --- (1) a force from the gradient of a potential drives an Euler trajectory -----------

def potential(x0, x1, w):
    """Two soft charges, one moved by w, and a weak linear coupling."""
    r1 = math.sqrt((x0 - 2.0) ** 2 + (x1 - w) ** 2 + 0.5)
    r2 = math.sqrt((x0 - 2.0) ** 2 + x1 ** 2 + 0.5)
    return 1.0 / r1 + 1.0 / r2 + 0.1 * x0 * x1


force = jg.grad(potential, wrt=(0, 1), jit=False)


def trajectory(w, dt):
    x0, x1 = 0.0, 2.0
    v0, v1 = 0.5, 0.0
    for _ in range(12):
        g0, g1 = force(x0, x1, w)
        x0 = x0 + dt * v0
        x1 = x1 + dt * v1
        v0 = v0 - dt * g0
        v1 = v1 - dt * g1
    return x0 * x0 + x1 * w


@pytest.mark.parametrize("jit", JIT)
def test_euler_trajectory_driven_by_a_gradient(jit):
    check_grad(trajectory, (0.7, 0.1), wrt=(0, 1), jit=jit)
    g = jg.grad(trajectory, wrt=0, jit=jit)(0.7, 0.1)
    assert g == pytest.approx(numeric_grad(trajectory, (0.7, 0.1), 0), rel=1e-6)
    value, pullback = jg.vjp(trajectory, 0.7, 0.1, wrt=0, jit=jit)
    assert value == pytest.approx(trajectory(0.7, 0.1), rel=1e-12)
    assert pullback(2.0) == pytest.approx(2.0 * g, rel=1e-12)


# --- (2) inner gradient ascent on y inside an outer gradient on x (saddle) -------------

def saddle(p, q):
    return (p[0] * p[0] + q[0] * q[0]) - (p[1] * p[1] + q[1] * q[1]) + p[0] * q[1] \
        + 0.3 * math.sin(p[1] * q[0])


ascent = jg.grad(saddle, wrt=1, jit=False)


def inner_max(p, start):
    q = start.copy()
    eta = 0.05
    for _ in range(6):
        q = q + eta * ascent(p, q)
        eta = eta * 1.5 if eta < 0.1 else eta
    return saddle(p, q)


@pytest.mark.parametrize("jit", JIT)
def test_inner_gradient_ascent_inside_outer_gradient(jit):
    p, start = np.array([0.3, -0.4]), np.array([1.0, 0.5])
    check_grad(inner_max, (p, start), wrt=(0, 1), jit=jit)
    value, g = jg.value_and_grad(inner_max, wrt=0, jit=jit)(p, start)
    assert value == pytest.approx(inner_max(p, start), rel=1e-12)
    np.testing.assert_allclose(g, numeric_grad(inner_max, (p, start), 0), rtol=1e-6)


# --- (3) grad(grad(f)) of a scalar function with a loop ---------------------------------

def wavy(x):
    s = 0.0
    for i in range(4):
        s = s + math.sin(x * (i + 1.0)) * x
    return s * x


def chained(x):
    s = x
    for _ in range(4):
        s = math.sin(s) * x  # (the gradient code keeps s on a tape)
    return s


def _second_fd(f, x, h=1e-4):
    return (f(x + h) - 2.0 * f(x) + f(x - h)) / (h * h)


@pytest.mark.parametrize("jit", JIT)
@pytest.mark.parametrize("f", [wavy, chained])
def test_grad_of_grad_with_a_loop(f, jit):
    g1 = jg.grad(f, jit=jit)
    g2 = jg.grad(g1, jit=jit)
    h = 1e-6
    assert g1(0.7) == pytest.approx((f(0.7 + h) - f(0.7 - h)) / (2 * h), rel=1e-6)
    assert g2(0.7) == pytest.approx(_second_fd(f, 0.7), rel=1e-5)
    value, d2 = jg.value_and_grad(g1, jit=jit)(0.7)
    assert value == pytest.approx(g1(0.7), rel=1e-12)  # the value is the first derivative
    assert d2 == pytest.approx(g2(0.7), rel=1e-12)
    check_grad(g1, (0.7,), jit=jit, rtol=1e-5)  # jg.differentiate of a jg.grad result


# --- (4) jvp and hvp of a function calling an inner gradient ----------------------------

@jg.differentiate(wrt=0, jit=False)
def energy(q, k):
    s = 0.0
    for i in range(q.shape[0]):
        s = s + k * q[i] ** 4 + math.cos(q[i])
    return s


def work(q, a):
    g = energy.grad(q, 0.5)  # (5) an array gradient, used in a dot product
    return np.dot(g, a) + np.sum(q * q) * a[0]


Q, A, V = np.array([0.3, -0.2, 0.8]), np.array([1.0, 2.0, -0.5]), np.array([0.1, 0.4, -0.3])


@pytest.mark.parametrize("jit", JIT)
def test_array_gradient_in_a_dot_product(jit):
    check_grad(work, (Q, A), wrt=(0, 1), jit=jit)


@pytest.mark.parametrize("jit", JIT)
def test_jvp_and_hvp_of_a_function_calling_a_gradient(jit):
    value, tangent = jg.jvp(work, (Q, A), (V,), wrt=0, jit=jit)
    assert value == pytest.approx(work(Q, A), rel=1e-12)
    assert tangent == pytest.approx(numeric_grad(work, (Q, A), 0) @ V, rel=1e-6)
    hv = jg.hvp(work, (Q, A), (V,), wrt=0, jit=jit)
    hessian = np.array([numeric_grad(lambda x, a: numeric_grad(work, (x, a), 0)[j], (Q, A), 0)
                        for j in range(3)])
    np.testing.assert_allclose(hv, hessian @ V, rtol=1e-4, atol=1e-6)


def cubic(x):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + x[i] ** 3 * x[0]
    return s


@pytest.mark.parametrize("jit", JIT)
def test_forward_mode_and_jacobians_of_a_gradient(jit):
    """jvp / jacfwd / jacrev of a jg.grad result: the Hessian, as jg.hessian and jg.hvp."""
    x, v = np.array([0.5, 1.0, 2.0]), np.array([1.0, -1.0, 0.5])
    g = jg.grad(cubic, jit=jit)
    hessian = np.array([numeric_grad(lambda y, j=j: g(y)[j], (x,), 0) for j in range(3)])
    np.testing.assert_allclose(jg.hessian(cubic, jit=jit)(x), hessian, rtol=1e-6)
    value, tangent = jg.jvp(g, (x,), (v,), jit=jit)
    np.testing.assert_allclose(value, g(x), rtol=1e-12)
    np.testing.assert_allclose(tangent, jg.hvp(cubic, (x,), (v,), jit=jit), rtol=1e-12)
    np.testing.assert_allclose(jg.jacfwd(g, jit=jit)(x), hessian, rtol=1e-6)
    np.testing.assert_allclose(jg.jacrev(g, jit=jit)(x), hessian, rtol=1e-6)


def quartic(x, k, c=0.5):
    return k * x ** 4 + c * math.cos(x)


d_quartic = jg.grad(quartic, jit=False)
vg_quartic = jg.value_and_grad(quartic, wrt=(0, 1), jit=False)


def keywords_and_values(x, k):
    a = d_quartic(x, k)               # the default c
    b = d_quartic(x, k=k, c=0.25)     # keywords
    v, g = vg_quartic(x, k)           # the value, and a tuple of gradients
    g0, g1 = g
    return a * b + v * g1 + g0


@pytest.mark.parametrize("jit", JIT)
def test_defaults_keywords_and_value_and_grad_inside(jit):
    check_grad(keywords_and_values, (0.7, 1.3), wrt=(0, 1), jit=jit)


# --- the helpers array gradient code calls, differentiated again -----------------------

def model(x, A, b):
    r = A @ x - b
    y = np.where(x > 0.0, x, 0.5 * x)
    return np.sum(r * r) + 0.1 * np.max(x * x) + np.sum(y * b[:4]) \
        + np.sum(np.reshape(np.sin(x), (2, 2)) * 2.0, axis=0)[1] + np.sum(x, keepdims=True)[0]


def model_hv(x, A, b, v):
    """H v by reverse over reverse: the gradient code inlined, its vjp taken."""
    return np.dot(jg.grad(model, wrt=0, jit=False)(x, A, b), v)


def model_hv_a(x, A, b, v):
    return np.sum(jg.grad(model, wrt=1, jit=False)(x, A, b) * v)


@pytest.mark.parametrize("jit", JIT)
def test_array_helpers_differentiated_again(jit):
    """Reverse over reverse against forward over reverse (jg.hvp) and central differences,
    through unbroadcast, expand_along, reduce_sum/max, kept, reshape_like, select and
    dot_grad_a/b in the gradient code."""
    rng = np.random.default_rng(3)
    x, A, b = rng.normal(size=4), rng.normal(size=(5, 4)), rng.normal(size=5)
    v, w = rng.normal(size=4), rng.normal(size=(5, 4))
    g = jg.grad(model_hv, wrt=0, jit=jit)(x, A, b, v)
    np.testing.assert_allclose(g, jg.hvp(model, (x, A, b), (v,), wrt=0, jit=jit), rtol=1e-9)
    check_grad(model_hv, (x, A, b, v), wrt=(0, 1, 2), jit=jit)
    check_grad(model_hv_a, (x, A, b, w), wrt=(0, 1, 2), jit=jit)


# --- what is refused, at the user's line -------------------------------------------------

def loss_aux(x):
    return x * x, 2.0


aux_grad = jg.grad(loss_aux, has_aux=True, jit=False)
tuple_wrt = jg.grad(potential, wrt=(0,), jit=False)


def calls_aux(x):
    g, aux = aux_grad(x)
    return g * x


def calls_tuple_wrt(x):
    (g,) = tuple_wrt(x, 1.0, 0.5)
    return g * x


def int_wrt(x):
    return force(x, 1, 0.5)[0]


def scales_in_place(v):
    v *= 2.0
    return np.sum(v * v)


d_scales = jg.grad(scales_in_place, jit=False)


def calls_a_writer(x):
    u = x * 1.0
    return np.sum(d_scales(u) * u)


def newton(x):
    y = x
    k = 0
    while y * y - x > 1e-12 or k < 1:  # (an unknown trip count: a growable tape)
        y = 0.5 * (y + x / y)
        k += 1
    return y * x


newton_grad = jg.grad(newton, jit=False)


def calls_newton(x):
    return newton_grad(x) * x


@pytest.mark.parametrize("f, line, why", [
    (calls_aux, "g, aux = aux_grad(x)", "has_aux"),
    (calls_tuple_wrt, "(g,) = tuple_wrt(x, 1.0, 0.5)", "one-element tuple"),
    (int_wrt, "return force(x, 1, 0.5)[0]", "integer"),
    (calls_newton, "return newton_grad(x) * x", "cannot be differentiated again"),
    (calls_a_writer, "return np.sum(d_scales(u) * u)", "in place"),
])
def test_refused_at_the_users_line(f, line, why):
    x = 1.3 if f is not calls_a_writer else np.array([0.5, 1.5])
    with pytest.raises(jg.TransformError, match=why) as e:
        jg.grad(f, jit=False)(x)
    assert line in str(e.value) and "test_nested.py" in str(e.value)
    assert e.value.hint


def selfish(x):
    return x * selfish_grad(x)


selfish_grad = jg.grad(selfish, jit=False)


def test_a_function_calling_its_own_gradient_is_recursion():
    with pytest.raises(jg.TransformError, match="recursion") as e:
        selfish_grad(0.5)
    assert "return x * selfish_grad(x)" in str(e.value)


def device_calls_a_gradient(x, y):
    return d_quartic(x, 2.0) * y


def test_refused_in_cuda_code():
    """CUDA code gets no inlined gradient code: refused at the call."""
    pytest.importorskip("numba.cuda")
    d = jg.differentiate(device_calls_a_gradient, wrt=(0, 1), target="cuda")
    with pytest.raises(jg.TransformError, match="inside CUDA code") as e:
        d.device_grad  # noqa: B018
    assert "return d_quartic(x, 2.0) * y" in str(e.value)
