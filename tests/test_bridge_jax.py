"""``jg.to_jax``: a jitgrad function as a JAX function (bridges/jax_bridge.py).

Values and gradients against JAX's own autodiff of the same function written with
``jax.numpy``, under ``jax.jit``, ``jax.grad`` and ``jax.vmap``, and with
``jax.test_util.check_grads`` (central differences), in both jit modes.  Runs with 64-bit
floats switched on for the module (restored after)."""

from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")


@pytest.fixture(scope="module", autouse=True)
def x64():
    before = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", before)


def loss(w, X, y, n):
    s = 0.0
    for _ in range(n):
        r = np.tanh(X @ w) - y
        s += np.sum(r * r)
    return s


def loss_jax(w, X, y, n):
    s = 0.0
    for _ in range(n):
        r = jnp.tanh(X @ w) - y
        s += jnp.sum(r * r)
    return s


def field(x, k):
    return np.sin(k * x) * x


def field_jax(x, k):
    return jnp.sin(k * x) * x


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    return rng.standard_normal(3), rng.standard_normal((8, 3)), rng.standard_normal(8)


def close(a, b, tol=1e-10):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


@pytest.mark.parametrize("jit", [True, False])
def test_value_grad_and_jit_match_jax(data, jit):
    w, X, y = data
    f = jg.to_jax(loss, jit=jit)
    close(f(w, X, y, 3), loss_jax(w, X, y, 3), 1e-12)
    g = jax.grad(f, argnums=(0, 1))(w, X, y, 3)
    ref = jax.grad(loss_jax, argnums=(0, 1))(w, X, y, 3)
    close(g[0], ref[0])
    close(g[1], ref[1])
    jitted = jax.jit(jax.value_and_grad(lambda w: f(w, X, y, 2)))(w)
    close(jitted[0], loss_jax(w, X, y, 2), 1e-12)
    close(jitted[1], jax.grad(loss_jax)(w, X, y, 2))


@pytest.mark.parametrize("jit", [True, False])
def test_check_grads(data, jit):
    from jax.test_util import check_grads

    w, X, y = data
    f = jg.to_jax(loss, jit=jit)
    check_grads(lambda w, X: f(w, X, y, 2), (w, X), order=1, modes=("rev",))
    check_grads(lambda x: jg.to_jax(field, jit=jit)(x, 1.3), (w,), order=1, modes=("rev",))


def test_vmap_loops(data):
    w, X, y = data
    f = jg.to_jax(loss)
    W = np.stack([w, 2 * w, -w, w + 0.5])
    close(jax.vmap(lambda v: f(v, X, y, 2))(W), jax.vmap(lambda v: loss_jax(v, X, y, 2))(W),
          1e-12)
    close(jax.vmap(jax.grad(lambda v: f(v, X, y, 2)))(W),
          jax.vmap(jax.grad(lambda v: loss_jax(v, X, y, 2)))(W))


def test_array_output_jacobian(data):
    w = data[0]
    f = jg.to_jax(field)
    close(f(w, 1.3), field_jax(w, 1.3), 1e-12)
    close(jax.jit(lambda x: f(x, 1.3))(w), field_jax(w, 1.3), 1e-12)
    close(jax.jacrev(f, argnums=(0, 1))(w, 1.3)[0],
          jax.jacrev(field_jax, argnums=(0, 1))(w, 1.3)[0])
    close(jax.jacrev(f, argnums=(0, 1))(w, 1.3)[1],
          jax.jacrev(field_jax, argnums=(0, 1))(w, 1.3)[1])


def test_wrt_others_are_constants(data):
    """Arguments outside ``wrt`` are constants to JAX (as under ``stop_gradient``)."""
    w, X, y = data
    f = jg.to_jax(loss, wrt=0)
    gw, gX = jax.grad(f, argnums=(0, 1))(w, X, y, 1)
    close(gw, jax.grad(loss_jax)(w, X, y, 1))
    close(gX, np.zeros_like(X), 0)
    with pytest.raises(ValueError, match="wrt=5"):
        jg.to_jax(loss, wrt=5)
