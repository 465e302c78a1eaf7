"""Gradients called from the user's own ``@numba.njit`` code (``jitgrad/njit_call.py``).

A module-level ``jg.grad(f)``/``jg.value_and_grad(f)`` and a ``@differentiate`` object's
``.grad``/``.value_and_grad`` called inside an optimizer, Langevin or HMC loop written in
Numba: each step must return exactly what the Python-level call returns (the same
compiled code), so the whole trajectory equals the same loop run in Python; the
gradients themselves are checked against central differences (and ``jit=False``).
Compiled once per module (fixtures), since each njit compile costs seconds."""

from __future__ import annotations

import numba
import numpy as np
import pytest
from gradcheck import numeric_grad
from numba.core.errors import TypingError

import jitgrad as jg


def potential(x, k, c=0.25):
    """A chain with springs and a cosine landscape: a loop, a default parameter."""
    s = 0.0
    for i in range(x.shape[0] - 1):
        d = x[i + 1] - x[i]
        s += k * d * d + c * np.cos(3.0 * x[i]) ** 2
    return s + 0.1 * np.sum(x ** 4)


def rollout(x, n):
    """A state carried through a nonlinear loop (the gradient code keeps tapes)."""
    v = x.copy()
    s = 0.0
    for _ in range(n):
        v = np.sin(v) * 0.9 + 0.1 * x
        s = np.sin(s) + np.sum(v * v)
    return s


def loss2(w, b, x):
    """Two parameters, an array and a scalar, differentiated together (wrt=(0, 1))."""
    r = np.tanh(x * w) + b
    return np.sum(r * r) + b * b


def with_aux(x, k):
    y = np.tanh(x * k)
    return np.sum(y * y), y


def writes(x, y):
    x[0] = x[0] * y[0]
    return np.sum(x * y)


def vector(x):
    return x * 2.0


@jg.differentiate(wrt=(0,))
def energy(q, k):
    return 0.5 * k * np.sum(q * q) + np.sum(np.cos(q))


dpot = jg.grad(potential)
dpot_py = jg.grad(potential, jit=False)
vg_pot = jg.value_and_grad(potential)
drollout = jg.grad(rollout)
dloss2 = jg.value_and_grad(loss2, wrt=(0, 1))
daux = jg.grad(with_aux, has_aux=True)
vaux = jg.value_and_grad(with_aux, has_aux=True)
dwrites = jg.grad(writes)
dvector = jg.grad(vector)


@numba.njit
def descend(x, k, lr, steps):
    """Gradient descent on ``potential`` in Numba, recording each iterate."""
    path = np.empty((steps + 1, x.shape[0]))
    path[0] = x
    for t in range(steps):
        x = x - lr * dpot(x, k)
        path[t + 1] = x
    return path


def descend_py(x, k, lr, steps):
    path = np.empty((steps + 1, x.shape[0]))
    path[0] = x
    for t in range(steps):
        x = x - lr * dpot(x, k)
        path[t + 1] = x
    return path


@numba.njit
def langevin(x, k, dt, noise):
    """Unadjusted Langevin: x <- x - dt grad U(x) + sqrt(2 dt) xi (noise drawn outside)."""
    for t in range(noise.shape[0]):
        x = x - dt * dpot(x, k, 0.5) + np.sqrt(2.0 * dt) * noise[t]
    return x


def langevin_py(x, k, dt, noise):
    for t in range(noise.shape[0]):
        x = x - dt * dpot(x, k, 0.5) + np.sqrt(2.0 * dt) * noise[t]
    return x


@numba.njit
def hmc(q, k, eps, leaps, momenta, uniforms):
    """Hamiltonian Monte Carlo on ``energy`` (leapfrog with the gradient, Metropolis test
    with the value), the draws passed in; returns the chain and the accept count."""
    chain = np.empty((momenta.shape[0], q.shape[0]))
    accepted = 0
    for t in range(momenta.shape[0]):
        p = momenta[t].copy()
        u0, g = energy.value_and_grad(q, k)
        h0 = u0 + 0.5 * np.sum(p * p)
        qn = q.copy()
        for _ in range(leaps):
            p = p - 0.5 * eps * g[0]
            qn = qn + eps * p
            g = energy.grad(qn, k)
            p = p - 0.5 * eps * g[0]
        h1 = energy(qn, k) + 0.5 * np.sum(p * p)
        if uniforms[t] < np.exp(h0 - h1):
            q = qn
            accepted += 1
        chain[t] = q
    return chain, accepted


def hmc_py(q, k, eps, leaps, momenta, uniforms):
    chain = np.empty((momenta.shape[0], q.shape[0]))
    accepted = 0
    for t in range(momenta.shape[0]):
        p = momenta[t].copy()
        u0, g = energy.value_and_grad(q, k)
        h0 = u0 + 0.5 * np.sum(p * p)
        qn = q.copy()
        for _ in range(leaps):
            p = p - 0.5 * eps * g[0]
            qn = qn + eps * p
            g = energy.grad(qn, k)
            p = p - 0.5 * eps * g[0]
        h1 = energy(qn, k) + 0.5 * np.sum(p * p)
        if uniforms[t] < np.exp(h0 - h1):
            q = qn
            accepted += 1
        chain[t] = q
    return chain, accepted


@numba.njit
def entry_points(x, w, b):
    """Every kind of call once: value_and_grad, tuple wrt, has_aux, tapes, ints."""
    return (vg_pot(x, 1.5), dloss2(w, b, x), daux(x, 1.5), vaux(x, 1.5),
            drollout(x, 3), energy.grad(x, 2.0))


X0 = np.array([0.3, -0.2, 0.7, 0.1, -0.5])


@pytest.fixture(scope="module")
def calls():
    """``entry_points`` compiled and run once, with the inputs (checked unchanged)."""
    x, w = X0.copy(), np.array([0.5, -1.0, 2.0, 0.25, 1.5])
    out = entry_points(x, w, 0.3)
    np.testing.assert_array_equal(x, X0)
    return out, x, w, 0.3


def test_descent_loop_matches_python_step_for_step():
    path = descend(X0.copy(), 1.5, 0.05, 40)
    np.testing.assert_array_equal(path, descend_py(X0.copy(), 1.5, 0.05, 40))
    assert potential(path[-1], 1.5) < potential(X0, 1.5)  # it did descend


def test_gradient_against_central_differences_and_jit_false():
    x = np.array([0.4, -0.3, 0.9, 0.2])
    g = descend(x, 1.5, 1.0, 1)[0] - descend(x, 1.5, 1.0, 1)[1]  # one step of lr 1: -grad
    np.testing.assert_allclose(g, numeric_grad(potential, (x, 1.5), 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(g, dpot_py(x, 1.5), rtol=1e-12, atol=1e-14)


def test_langevin_loop_matches_python():
    noise = np.random.default_rng(0).standard_normal((60, X0.shape[0]))
    out = langevin(X0.copy(), 1.5, 0.01, noise)
    np.testing.assert_array_equal(out, langevin_py(X0.copy(), 1.5, 0.01, noise))


def test_hmc_loop_matches_python():
    rng = np.random.default_rng(1)
    momenta = rng.standard_normal((25, 3))
    uniforms = rng.uniform(size=25)
    q = np.array([0.5, -1.0, 0.25])
    chain, acc = hmc(q.copy(), 2.0, 0.1, 5, momenta, uniforms)
    chain_py, acc_py = hmc_py(q.copy(), 2.0, 0.1, 5, momenta, uniforms)
    np.testing.assert_array_equal(chain, chain_py)
    assert acc == acc_py and 0 < acc  # noqa: PT018
    np.testing.assert_array_equal(q, [0.5, -1.0, 0.25])


def test_value_and_grad_from_njit(calls):
    (value, g), *_ = calls[0]
    x = calls[1]
    assert value == vg_pot(x, 1.5)[0] and value == potential(x, 1.5)  # noqa: PT018
    np.testing.assert_array_equal(g, vg_pot(x, 1.5)[1])
    np.testing.assert_allclose(g, numeric_grad(potential, (x, 1.5), 0), rtol=1e-6, atol=1e-8)


def test_tuple_wrt_from_njit(calls):
    out, x, w, b = calls
    value, (gw, gb) = out[1]
    pv, (pw, pb) = dloss2(w, b, x)
    assert value == pv and gb == pb and isinstance(gb, float)  # noqa: PT018
    np.testing.assert_array_equal(gw, pw)
    np.testing.assert_allclose(gw, numeric_grad(loss2, (w, b, x), 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gb, numeric_grad(loss2, (w, b, x), 1), rtol=1e-6, atol=1e-8)


def test_has_aux_from_njit(calls):
    out, x, _, _ = calls
    (g, aux), ((value, aux2), g2) = out[2], out[3]
    (pg, paux), ((pvalue, paux2), pg2) = daux(x, 1.5), vaux(x, 1.5)
    for a, b in ((g, pg), (aux, paux), (aux2, paux2), (g2, pg2)):
        np.testing.assert_array_equal(a, b)
    assert value == pvalue
    np.testing.assert_allclose(g, numeric_grad(lambda v, k: with_aux(v, k)[0], (x, 1.5), 0),
                               rtol=1e-6, atol=1e-8)


def test_tapes_and_differentiate_grad_from_njit(calls):
    out, x, _, _ = calls
    np.testing.assert_array_equal(out[4], drollout(x, 3))
    np.testing.assert_allclose(out[4], numeric_grad(rollout, (x, 3), 0), rtol=1e-6,
                               atol=1e-8)
    (g,) = out[5]  # energy's wrt is (0,): a 1-tuple, as in Python
    np.testing.assert_array_equal(g, energy.grad(x, 2.0)[0])
    np.testing.assert_allclose(g, numeric_grad(energy.func, (x, 2.0), 0), rtol=1e-6,
                               atol=1e-8)


@numba.njit
def call_aliased(x):
    return dwrites(x, x)


@numba.njit
def call_separate(x, y):
    return dwrites(x, y)


def test_written_arguments_copied_and_aliasing_refused():
    x, y = np.array([0.5, 2.0]), np.array([3.0, -1.0])
    np.testing.assert_array_equal(call_separate(x, y), dwrites(x, y))
    np.testing.assert_array_equal(x, [0.5, 2.0])
    with pytest.raises(ValueError, match="share memory"):
        call_aliased(x)
    np.testing.assert_array_equal(x, [0.5, 2.0])


def _typing_error(fn, *args):
    with pytest.raises(TypingError) as info:
        fn(*args)
    return str(info.value)


def test_jit_false_refused_clearly():
    msg = _typing_error(numba.njit(lambda x: dpot_py(x, 1.0)), X0)
    assert "jitgrad" in msg and "jit=False" in msg and "jit=True" in msg  # noqa: PT018


def test_unsupported_uses_refused_clearly():
    msg = _typing_error(numba.njit(lambda x: dvector(x)), X0)
    assert "jitgrad" in msg and "scalar output" in msg  # noqa: PT018
    msg = _typing_error(numba.njit(lambda x: dpot(x, "a")), X0)
    assert "jitgrad" in msg and "argument 1 ('k')" in msg  # noqa: PT018
    msg = _typing_error(numba.njit(lambda x: dpot(x)), X0)
    assert "jitgrad" in msg and "potential(x, k, c=0.25)" in msg  # noqa: PT018
