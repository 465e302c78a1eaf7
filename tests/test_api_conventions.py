"""Functions as people write them (issue 30): default parameter values and keyword
arguments (in the differentiated function and in its helpers), JAX's ``argnums=`` and
``has_aux=``, and what a first call reports.  Every entry point, both modes, every input
element against central differences; the structures are JAX's, written out by hand."""

from __future__ import annotations

import logging
import os
import subprocess
import sys

import numpy as np
import pytest

import jitgrad as jg
from jitgrad.transpiler.backend import cache as disk

SCALE = np.array([1.0, 0.5, 2.0])


def rhs(y, k, c=0.1, w=SCALE):
    return -k * y + c * y * y * w


def euler(x, k, dt=0.01):
    """Three Euler steps; the helper called with its defaults and with a keyword."""
    y = x.copy()
    for _ in range(3):
        y = y + dt * rhs(y, k)
        y = y + dt * rhs(y, k, c=dt * 20.0)
    return np.sum(y * y) + dt * k


def euler_py(x, k, dt=0.01):
    """``euler`` as plain Python (the reference for the finite differences)."""
    y = x.copy()
    for _ in range(3):
        y = y + dt * (-k * y + 0.1 * y * y * SCALE)
        y = y + dt * (-k * y + dt * 20.0 * y * y * SCALE)
    return np.sum(y * y) + dt * k


def field(x, k, dt=0.01):
    """A vector output for the Jacobians and vjp."""
    return np.sin(x) * k + dt * x * x


def field_py(x, k, dt=0.01):
    return np.sin(x) * k + dt * x * x


def with_keyword_call(x, c2):
    """A helper given its arguments by keyword, in another order."""
    return np.sum(rhs(w=x, c=c2, k=1.5, y=x))


def bad_keyword(x):
    return np.sum(rhs(x, 1.0, cc=2.0))


def missing_argument(x):
    return np.sum(rhs(x, c=2.0))


def loss_aux(x, k):
    """``(out, aux)``: aux an array that depends on x."""
    y = np.sin(x) * k
    return np.sum(y * y), y


def loss_aux_tuple(x, n):
    """aux a tuple (a float that depends on x, an int), returned from two places."""
    s = np.sum(x * x)
    if s > 100.0:
        return s, (s * 2.0, n)
    return s * 3.0 + np.sum(np.exp(x)), (np.sum(np.cos(x)), n)


def loss_aux_scalar(x, k=2.0):
    m = np.max(x)
    return np.sum(np.exp(x * k)), m


def vec_aux(x):
    """A vector output with a scalar aux (for vjp)."""
    y = np.sin(x)
    return y * np.cos(x), np.sum(y)


def not_a_pair(x):
    return np.sum(x)


def three_values(x):
    return np.sum(x), x, 1.0


def pair_in_a_name(x):
    p = np.sum(x), x
    return p


X = np.array([0.5, -0.2, 0.3])


def central(fun, x, eps=1e-6):
    """Central differences of ``fun`` at ``x``: shape ``out.shape + x.shape``."""
    x = np.asarray(x, dtype=float)
    cols = []
    for idx in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[idx] += eps
        xm[idx] -= eps
        cols.append((np.asarray(fun(xp if x.ndim else float(xp)))
                     - np.asarray(fun(xm if x.ndim else float(xm)))) / (2 * eps))
    out = np.stack(cols, axis=-1)
    return out.reshape(out.shape[:-1] + x.shape)


def close(a, b, tol=1e-6):
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


# --- 1. defaults and keywords --------------------------------------------------------------


def test_grad_defaults_and_keywords(jit):
    g = jg.grad(euler, wrt=0, jit=jit)
    x0 = X.copy()
    close(g(X, 2.0), central(lambda x: euler_py(x, 2.0), X))  # dt's default
    close(g(X, 2.0, dt=0.02), central(lambda x: euler_py(x, 2.0, 0.02), X))
    close(g(X, k=2.0, dt=0.02), central(lambda x: euler_py(x, 2.0, 0.02), X))
    close(g(dt=0.02, k=2.0, x=X), g(X, 2.0, 0.02))
    assert np.array_equal(X, x0)  # the caller's array is not written
    gdt = jg.grad(euler, wrt="dt", jit=jit)
    close(gdt(X, 2.0), central(lambda dt: euler_py(X, 2.0, dt), 0.01))
    close(gdt(X, 2.0, dt=0.03), central(lambda dt: euler_py(X, 2.0, dt), 0.03))
    v, (gx, gd) = jg.value_and_grad(euler, wrt=(0, "dt"), jit=jit)(X, k=2.0)
    close(v, euler_py(X, 2.0))
    close(gx, central(lambda x: euler_py(x, 2.0), X))
    close(gd, central(lambda dt: euler_py(X, 2.0, dt), 0.01))


def test_differentiate_object_defaults_and_keywords(jit):
    d = jg.differentiate(euler, wrt=(0, 2), jit=jit)
    close(d(X, 2.0), euler_py(X, 2.0))
    close(d(X, 2.0, dt=0.02), euler_py(X, 2.0, 0.02))
    v, (gx, gd) = d.value_and_grad(X, 2.0, dt=0.02)
    close(v, euler_py(X, 2.0, 0.02))
    close(gx, central(lambda x: euler_py(x, 2.0, 0.02), X))
    close(gd, central(lambda dt: euler_py(X, 2.0, dt), 0.02))
    gx2, gd2 = d.grad(X, k=2.0)
    close(gx2, central(lambda x: euler_py(x, 2.0), X))
    close(gd2, central(lambda dt: euler_py(X, 2.0, dt), 0.01))
    assert "def euler_grad" in d.source(X, 2.0) or d.source(X, 2.0)


def test_vjp_and_jvp_defaults_and_keywords(jit):
    dy = np.array([0.3, -1.0, 2.0])
    for kw, dt in (({}, 0.01), ({"dt": 0.05}, 0.05)):
        jac = central(lambda x: field_py(x, 1.5, dt), X)  # noqa: B023
        jdt = central(lambda t: field_py(X, 1.5, t), dt)
        v, pull = jg.vjp(field, X, 1.5, wrt=(0, "dt"), jit=jit, **kw)
        close(v, field_py(X, 1.5, dt))
        gx, gd = pull(dy)
        close(gx, dy @ jac)
        close(gd, dy @ jdt)
        v, pull = jg.differentiate(field, jit=jit).vjp(X, k=1.5, **kw)
        close(pull(dy), dy @ jac)
        v, t = jg.jvp(field, (X, 1.5), dy, jit=jit, **kw)
        close(v, field_py(X, 1.5, dt))
        close(t, jac @ dy)
        v, t = jg.jvp(field, (X, 1.5), 0.7, wrt="dt", jit=jit, **kw)
        close(t, jdt * 0.7)
        v, t = jg.differentiate(field, jit=jit).jvp((X, 1.5), dy, **kw)
        close(t, jac @ dy)


def test_jacobians_and_second_order_defaults_and_keywords(jit):
    for kw, dt in (({}, 0.01), ({"dt": 0.05}, 0.05)):
        jac = central(lambda x: field_py(x, 1.5, dt), X)  # noqa: B023
        close(jg.jacfwd(field, jit=jit)(X, 1.5, **kw), jac)
        close(jg.jacrev(field, jit=jit)(X, k=1.5, **kw), jac)
        close(jg.jacrev(field, wrt="dt", jit=jit)(X, 1.5, **kw),
              central(lambda t: field_py(X, 1.5, t), dt))
        hess = central(lambda x: central(lambda z: euler_py(z, 2.0, dt), x, 1e-4), X, 1e-4)
        close(jg.hessian(euler, jit=jit)(X, 2.0, **kw), hess, 1e-4)
        v = np.array([1.0, -2.0, 0.5])
        close(jg.hvp(euler, (X, 2.0), v, jit=jit, **kw), hess @ v, 1e-4)
        hdt = central(lambda t: central(lambda s: euler_py(X, 2.0, s), t, 1e-4), dt, 1e-4)
        close(jg.hessian(euler, wrt="dt", jit=jit)(X, 2.0, **kw), hdt, 1e-4)


def test_helper_keywords_in_any_order(jit):
    g = jg.grad(with_keyword_call, wrt=(0, 1), jit=jit)

    def ref(x, c2):
        return np.sum(-1.5 * x + c2 * x * x * x)

    gx, gc = g(X, 0.7)
    close(gx, central(lambda x: ref(x, 0.7), X))
    close(gc, central(lambda c: ref(X, c), 0.7))
    close(jg.value_and_grad(with_keyword_call, jit=jit)(X, c2=0.7)[0], ref(X, 0.7))


def test_default_values_are_literals_or_globals():
    src = jg.differentiate(euler, jit=False).source(X, 2.0, stage="forward")
    assert "0.1 * y" in src  # rhs's c=0.1: the literal, no variable kept on a tape
    assert "rhs_w" in src  # rhs's w=SCALE: the array Python stored, by a global name


@pytest.mark.parametrize("call,match", [
    (lambda g: g(X, 2.0, dtt=0.1), "unexpected keyword argument 'dtt'"),
    (lambda g: g(X), "missing a required argument: 'k'"),
    (lambda g: g(X, 2.0, k=2.0), "multiple values for argument 'k'"),
    (lambda g: g(X, 2.0, 0.1, 4.0), "too many positional arguments"),
])
def test_bad_calls_are_pythons_type_errors(call, match, jit):
    for g in (jg.grad(euler, jit=jit), jg.differentiate(euler, jit=jit),
              jg.jacfwd(euler, jit=jit)):
        with pytest.raises(TypeError, match=match) as info:
            call(g)
        assert "euler(x, k, dt=0.01)" in str(info.value)


@pytest.mark.parametrize("f,match", [(bad_keyword, "unexpected keyword argument 'cc'"),
                                     (missing_argument, "missing 1 required argument: 'k'")])
def test_bad_helper_calls_refused_at_the_call(f, match, jit):
    with pytest.raises(jg.TransformError, match=match) as info:
        jg.grad(f, jit=jit)(X)
    assert info.value.filename.endswith("test_api_conventions.py")
    assert "rhs(x" in info.value.source_line and "c=0.1" in info.value.hint


def test_specialisation_keys_follow_the_defaults():
    d = jg.differentiate(euler, jit=False)
    d.grad(X, 2.0)
    d.grad(X, 2.0, dt=0.02)  # a float as the default is: the same specialisation
    assert len(d._specs.entries("vjp")) == 1
    d.grad(X, 2.0, dt=1)  # an integer dt: another specialisation
    assert len(d._specs.entries("vjp")) == 2
    before = disk.function_digest(euler)
    saved = rhs.__defaults__
    try:  # a helper's default is written into the generated code: part of the disk key
        rhs.__defaults__ = (0.2, SCALE)
        assert disk.function_digest(euler) != before
        rhs.__defaults__ = (0.1, SCALE * 2)
        assert disk.function_digest(euler) != before
    finally:
        rhs.__defaults__ = saved
    assert disk.function_digest(euler) == before
    kinds = {"x": jg.api.of_value(X), "k": jg.api.of_value(2.0)}
    assert disk.key(loss_aux, ["x"], kinds, True) != disk.key(loss_aux, ["x"], kinds, True,
                                                             aux=True)


# --- 3. JAX's spellings: argnums=, has_aux= -------------------------------------------------


def test_argnums_is_wrt(jit):
    def ref(x, k, dt=0.01):
        return euler_py(x, k, dt)

    gx = central(lambda x: ref(x, 2.0), X)
    gk = central(lambda k: ref(X, k), 2.0)
    close(jg.grad(euler, argnums=0, jit=jit)(X, 2.0), gx)
    a, b = jg.grad(euler, argnums=(0, 1), jit=jit)(X, 2.0)
    close(a, gx)
    close(b, gk)
    v, g = jg.value_and_grad(euler, argnums=1, jit=jit)(X, 2.0)
    close(v, ref(X, 2.0))
    close(g, gk)
    dy = np.array([0.3, -1.0, 2.0])
    out, pull = jg.vjp(field, X, 1.5, argnums=1, jit=jit)
    close(out, field_py(X, 1.5))
    close(pull(dy), dy @ central(lambda k: field_py(X, k), 1.5))
    jac = central(lambda k: field_py(X, k), 1.5)
    close(jg.jacfwd(field, argnums=1, jit=jit)(X, 1.5), jac)
    close(jg.jacrev(field, argnums=1, jit=jit)(X, 1.5), jac)
    h = jg.hessian(euler, argnums=1, jit=jit)(X, 2.0)
    close(h, central(lambda k: central(lambda q: ref(X, q), k, 1e-4), 2.0, 1e-4), 1e-4)


@pytest.mark.parametrize("make", [
    lambda: jg.grad(euler, 0, argnums=1), lambda: jg.value_and_grad(euler, 0, argnums=0),
    lambda: jg.vjp(euler, X, 2.0, wrt=0, argnums=0), lambda: jg.jacfwd(euler, 0, argnums=0),
    lambda: jg.jacrev(euler, wrt=0, argnums=0), lambda: jg.hessian(euler, 0, argnums=0)])
def test_wrt_and_argnums_together_refused(make):
    with pytest.raises(TypeError, match="wrt= or argnums="):
        make()


def test_has_aux_grad_and_value_and_grad(jit):
    def out(x, k):
        return np.sum((np.sin(x) * k) ** 2)

    g, aux = jg.grad(loss_aux, has_aux=True, jit=jit)(X, 2.0)  # jax: (g, aux)
    close(g, central(lambda x: out(x, 2.0), X))  # aux carries no gradient
    close(aux, np.sin(X) * 2.0)
    (v, aux), (gx, gk) = jg.value_and_grad(loss_aux, argnums=(0, 1), has_aux=True,
                                           jit=jit)(X, 2.0)  # jax: ((out, aux), g)
    close(v, out(X, 2.0))
    close(aux, np.sin(X) * 2.0)
    close(gx, central(lambda x: out(x, 2.0), X))
    close(gk, central(lambda k: out(X, k), 2.0))
    (v, m), g = jg.value_and_grad(loss_aux_scalar, has_aux=True, jit=jit)(X, k=1.5)
    close(v, np.sum(np.exp(X * 1.5)))
    assert m == np.max(X)
    close(g, central(lambda x: np.sum(np.exp(x * 1.5)), X))


def test_has_aux_tuple_from_two_returns(jit):
    def out(x):
        s = np.sum(x * x)
        return s if s > 100.0 else s * 3.0 + np.sum(np.exp(x))

    for x, aux0 in ((X, np.sum(np.cos(X))), (X * 100.0, np.sum(X * X) * 2e4)):
        g, aux = jg.grad(loss_aux_tuple, has_aux=True, jit=jit)(x, 7)
        assert isinstance(aux, tuple) and len(aux) == 2 and aux[1] == 7
        close(aux[0], aux0)
        close(g, central(out, x), 1e-5)


def test_has_aux_vjp(jit):
    dy = np.array([0.3, -1.0, 2.0])
    out, pull, aux = jg.vjp(vec_aux, X, has_aux=True, jit=jit)  # jax: (out, vjp_fn, aux)
    close(out, np.sin(X) * np.cos(X))
    close(aux, np.sum(np.sin(X)))
    close(pull(dy), dy @ central(lambda x: np.sin(x) * np.cos(x), X))
    d = jg.differentiate(loss_aux, wrt=(0, 1), has_aux=True, jit=jit)
    v, pull, aux = d.vjp(X, 2.0)
    close(aux, np.sin(X) * 2.0)
    gx, gk = pull(0.5)
    close(gx, 0.5 * central(lambda x: np.sum((np.sin(x) * 2.0) ** 2), X))
    close(gk, 0.5 * central(lambda k: np.sum((np.sin(X) * k) ** 2), 2.0))


@pytest.mark.parametrize("f,what", [(not_a_pair, "gives one value"),
                                    (three_values, "gives 3 values"),
                                    (pair_in_a_name, "'p'")])
def test_has_aux_without_a_pair_refused_at_the_return(f, what, jit):
    for call in (lambda: jg.grad(f, has_aux=True, jit=jit)(X),
                 lambda: jg.value_and_grad(f, has_aux=True, jit=jit)(X),
                 lambda: jg.vjp(f, X, has_aux=True, jit=jit)):
        with pytest.raises(jg.TransformError, match="must return a pair") as info:
            call()
        assert what in str(info.value)
        assert info.value.filename.endswith("test_api_conventions.py")
        assert "return" in info.value.source_line


# --- 8. what a first call is doing ------------------------------------------------------------


def smooth(x, k=1.5):
    return np.sum(np.tanh(x * k) * x)


def smooth_py(x, k=1.5):
    return np.sum(np.tanh(x * k) * x)


def test_first_call_logged_and_in_cache_info(jit, caplog):
    d = jg.differentiate(smooth, jit=jit)  # a new object: its first call transforms
    with caplog.at_level(logging.INFO, logger="jitgrad"):
        v, g = d.value_and_grad(X)
    close(v, smooth_py(X))
    close(g, central(smooth_py, X))
    text = [r.getMessage() for r in caplog.records if r.name == "jitgrad"]
    assert any(m.startswith("transformed smooth(x: float 1-d array, k: float) in ")
               for m in text), text
    assert any("with Numba in" in m for m in text) == jit, text
    info = d.cache_info()
    assert info["transform_seconds"] > 0
    assert (info["compile_seconds"] > 0) == jit
    (spec,) = info["specialisations"]
    assert spec["mode"] == "vjp" and spec["wrt"] == ["x"]
    assert spec["kinds"] == {"x": "float 1-d array", "k": "float"}
    assert spec["transform_seconds"] == info["transform_seconds"]
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="jitgrad"):
        close(d.value_and_grad(X, k=2.0)[1], central(lambda x: smooth_py(x, 2.0), X))
    assert not [r for r in caplog.records if r.name == "jitgrad"]  # nothing new to make
    close(d.jvp((X,), X)[1], central(smooth_py, X) @ X)
    assert [s["mode"] for s in d.cache_info()["specialisations"]] == ["vjp", "jvp"]


def test_verbose_prints_while_a_first_call_runs(jit, capsys, monkeypatch):
    monkeypatch.setattr(jg.config, "verbose", True)
    d = jg.differentiate(smooth, jit=jit)
    close(d.grad(X), central(smooth_py, X))
    err = capsys.readouterr().err
    assert "jitgrad: transforming smooth(x: float 1-d array, k: float) ...\n" in err
    assert "jitgrad: transformed smooth(" in err
    assert ("jitgrad: compiling smooth_gradonly" in err) == jit
    monkeypatch.setattr(jg.config, "verbose", False)
    jg.differentiate(smooth, jit=jit).grad(X)
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("value,on", [("1", True), ("0", False), ("", False)])
def test_verbose_from_the_environment(value, on):
    code = "import jitgrad; print(jitgrad.config.verbose)"
    env = {**os.environ, "JITGRAD_VERBOSE": value}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout
    assert out.strip() == str(on)
