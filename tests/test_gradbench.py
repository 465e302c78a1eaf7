"""benchmarks/gradbench at tiny sizes: jitgrad's output on every GradBench eval against
central differences (and the hand-written adjoints where there is one), both jit modes;
particle and saddle (nested differentiation) against central differences and JAX; the
recursive det refused at its line."""

from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg
from benchmarks.gradbench import jaxtools, nested, simple
from benchmarks.gradbench.evals import EVALS
from benchmarks.harness.checks import compare

GRADIENT_EVALS = ["gmm", "lstm", "ba", "ht", "ode", "kmeans", "lse", "llsq", "det", "particle",
                  "saddle"]
#: jit=True compiles each (seconds on a loaded machine): a few small ones only
COMPILED = ["lse", "llsq", "det", "particle", "saddle"]


def _numpy(out) -> tuple:
    return tuple(np.asarray(g, dtype=np.float64) for g in out)


def _check(name: str, jit: bool) -> tuple:
    ev = EVALS[name]
    args = ev.args("test")
    before = [np.copy(a) for a in args]
    got = _numpy(ev.gradient(jit)(*args))
    compare(got, _numpy(ev.reference(*args)), rtol=1e-5, atol_scale=1e-6)
    for a, b in zip(args, before, strict=True):
        np.testing.assert_array_equal(a, b)          # inputs untouched
    return got


@pytest.mark.parametrize("name", GRADIENT_EVALS)
def test_eval_gradient_python(name):
    got = _check(name, jit=False)
    hand = EVALS[name].hand
    if hand is not None:
        compare(_numpy(hand(*EVALS[name].args("test"))), got, rtol=1e-9, atol_scale=1e-12)


@pytest.mark.parametrize("name", COMPILED)
def test_eval_gradient_compiled(name):
    _check(name, jit=True)


@pytest.mark.parametrize("jit", [False, True])
def test_value_and_grad_value(jit):
    """The value jitgrad returns next to the gradient is the objective's."""
    x, n = EVALS["llsq"].args("test")
    value, g = jg.value_and_grad(simple.llsq, wrt=0, jit=jit)(x, n)
    assert value == pytest.approx(simple.llsq(x, n), rel=1e-12)
    compare(_numpy((g,)), _numpy(EVALS["llsq"].reference(x, n)), rtol=1e-5, atol_scale=1e-6)


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("name", ["particle", "saddle"])
def test_nested_evals_value_and_jax(name, jit):
    """Nested differentiation: the value next to the outer gradient is the objective's, and
    the gradient is JAX's (jax.grad inside jax.grad) where JAX is installed."""
    ev = EVALS[name]
    args = ev.args("test")
    value, g = jg.value_and_grad(ev.objective, wrt=0, jit=jit)(*args)
    assert value == pytest.approx(ev.objective(*args), rel=1e-12)
    if jaxtools.available() is None:
        _, jax_grad = jaxtools.make(name, args)
        compare(_numpy((g,)), _numpy(jax_grad()), rtol=1e-9, atol_scale=1e-12)


def test_saddle_argmin_is_the_saddle_point():
    """The whole eval (outer descent over the nested gradient): x and y reach the origin."""
    np.testing.assert_allclose(nested.argmin("saddle", jit=False, steps=60), 0.0, atol=1e-3)


def test_recursive_det_refused():
    with pytest.raises(jg.TransformError, match="recursion"):
        jg.grad(simple.det_recursive, wrt=0, jit=False)(np.eye(3).ravel(), 3)
