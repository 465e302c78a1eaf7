"""A second entry point on the same function compiles nothing: ``f.grad`` after
``f.value_and_grad`` (or a ``vjp``) runs the compiled value-and-gradient variant and drops
the value (``backend.jit.runs_as``); values and gradients stay those of the function."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest
from gradcheck import numeric_grad

import jitgrad as jg
from jitgrad.transpiler.backend import jit as backend
from jitgrad.transpiler.backend.lower import VARIANTS


def taped(x, k, n):
    s = 0.0
    for i in range(n):
        s = s + k * math.sin(s + x[i])  # a tape: the workspace of the variant that runs
    return s * s


def dead_value(x, k):
    s = 0.0
    for i in range(x.shape[0]):
        s += math.exp(k * x[i])
    t = s * 2.0  # only the value needs t: the gradient-only variant drops it
    return s + t - 2.0 * s


ARGS = {taped: (np.linspace(0.1, 0.9, 5), 0.7, 5), dead_value: (np.linspace(-1.0, 1.0, 4), 0.3)}


def _check(f, args, value, grads):
    """``value`` is ``f(*args)`` (None: not checked); ``grads`` (x, k) match central
    differences on every element."""
    if value is not None:
        assert value == pytest.approx(f(*args), rel=1e-12)
    for i, g in enumerate(grads):
        np.testing.assert_allclose(g, numeric_grad(f, args, i), rtol=1e-6, atol=1e-8)


def _variants(d: jg.differentiate) -> dict[str, int]:
    """variant -> how many signatures Numba compiled it for (jit=True; 0 also where it is
    not loaded: a variant is lowered and loaded when first called)."""
    jitted = d._last.compiled.jitted
    return {v: len(jitted[v].overloads) if v in jitted else 0 for v in VARIANTS}


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("f", [taped, dead_value])
def test_grad_after_value_and_grad(f, jit):
    d = jg.differentiate(f, wrt=(0, 1), jit=jit)
    args = ARGS[f]
    value, grads = d.value_and_grad(*args)
    _check(f, args, value, grads)
    for _ in range(2):  # a second call reuses the first's workspace
        _check(f, args, None, d.grad(*args))
        value, grads = d.value_and_grad(*args)
        _check(f, args, value, grads)
    if jit:
        assert _variants(d) == {"grad": 1, "grad_only": 0}
        assert "grad_only" in d._last.unit.sources.later  # (not even lowered)


@pytest.mark.parametrize("jit", [True, False])
def test_grad_after_vjp(jit):
    d = jg.differentiate(taped, wrt=(0, 1), jit=jit)
    args = ARGS[taped]
    value, pullback = d.vjp(*args)
    assert value == pytest.approx(taped(*args), rel=1e-12)
    _check(taped, args, None, pullback(1.0))
    _check(taped, args, None, d.grad(*args))
    if jit:
        assert _variants(d) == {"grad": 1, "grad_only": 0}


@pytest.mark.parametrize("jit", [True, False])
def test_grad_first_keeps_its_variant(jit):
    """``f.grad`` first compiles the gradient-only variant; ``value_and_grad`` then needs
    the value, so compiles its own, and each runs its own from then on."""
    d = jg.differentiate(dead_value, wrt=(0, 1), jit=jit)
    args = ARGS[dead_value]
    _check(dead_value, args, None, d.grad(*args))
    value, grads = d.value_and_grad(*args)
    _check(dead_value, args, value, grads)
    _check(dead_value, args, None, d.grad(*args))
    if jit:
        assert _variants(d) == {"grad": 1, "grad_only": 1}
        assert backend.runs_as(d._last.compiled, "grad_only") == "grad_only"


def test_new_argument_types_compile_one_variant():
    """float32 arrays after float64 ones: the stand-in compiles for the new types once."""
    d = jg.differentiate(dead_value, wrt=0)
    x, k = ARGS[dead_value]
    d.value_and_grad(x, k)
    x32 = x.astype(np.float32)
    g = d.grad(x32, k)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, numeric_grad(dead_value, (x, k), 0), rtol=1e-5)
    counts = _variants(d)
    assert counts["grad_only"] == 0 and counts["grad"] >= 1


@pytest.mark.parametrize("jit", [True, False])
def test_from_the_disk_cache(tmp_path, monkeypatch, jit):
    """``cache=True``: a function loaded from disk routes the same way."""
    (tmp_path / "entryfn.py").write_text(
        "import math\n\n\ndef f(x, k):\n    s = 0.0\n    for i in range(x.shape[0]):\n"
        "        s += math.exp(k * x[i])\n    return s * s\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import entryfn

    args = (np.linspace(-1.0, 1.0, 4), 0.3)
    for _ in range(2):  # transformed and saved, then a new object loading it
        d = jg.differentiate(entryfn.f, wrt=(0, 1), jit=jit, cache=True)
        value, grads = d.value_and_grad(*args)
        _check(entryfn.f, args, value, grads)
        _check(entryfn.f, args, None, d.grad(*args))
        if jit:
            assert _variants(d) == {"grad": 1, "grad_only": 0}
    assert d.cache_info()["hits"] == 1
    sys.modules.pop("entryfn", None)
