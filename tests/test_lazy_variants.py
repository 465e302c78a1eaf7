"""Each variant of a specialisation (value and gradient; gradient only) is lowered when a
call first needs it, and its code is the same whichever variant is lowered first.

``f.grad`` lowers the gradient-only variant, ``f.value_and_grad`` the value-and-gradient
one; a ``grad`` after ``value_and_grad`` under ``jit=True`` runs the variant compiled
already (``jit.runs_as``) and lowers nothing.  Gradients are checked against central
differences, ``jit=True`` and ``jit=False``."""

import corpus_loops
import corpus_prange as P
import numpy as np
import pytest
from gradcheck import numeric_grad

import jitgrad as jg
from jitgrad.transpiler.backend.lower import VARIANTS

X = np.linspace(-0.8, 0.9, 9)


def energy(x, k):
    e = 0.0
    for i in range(len(x) - 1):
        d = x[i + 1] - x[i] - 1.0
        e += k * d * d
    return e


def decay(x, n):
    for _ in range(n):
        x = np.sin(x) * 0.9 + 0.1 * x
    return np.sum(x * x)


def _lowered(gen) -> list[str]:
    """The variants of ``gen``'s unit whose source is written."""
    return sorted(v for v in VARIANTS if v not in gen.unit.sources.later)


def _check(f, args, wrt, grads) -> None:
    for w, g in zip(wrt, grads, strict=True):
        np.testing.assert_allclose(g, numeric_grad(f, args, w), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("f, args", [(energy, (X, 2.0)), (decay, (X, 3))])
def test_grad_lowers_only_the_gradient_only_variant(f, args, jit):
    d = jg.differentiate(f, wrt=(0,), jit=jit)
    _check(f, args, (0,), d.grad(*args))
    assert _lowered(d._last) == ["grad_only"]
    value, grads = d.value_and_grad(*args)  # the other variant, lowered now
    np.testing.assert_allclose(value, f(*args), rtol=1e-12)
    _check(f, args, (0,), grads)
    assert _lowered(d._last) == ["grad", "grad_only"]


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("f, args", [(energy, (X, 2.0)), (decay, (X, 3))])
def test_value_and_grad_lowers_only_its_variant(f, args, jit):
    d = jg.differentiate(f, wrt=(0,), jit=jit)
    value, grads = d.value_and_grad(*args)
    np.testing.assert_allclose(value, f(*args), rtol=1e-12)
    _check(f, args, (0,), grads)
    assert _lowered(d._last) == ["grad"]
    _check(f, args, (0,), d.grad(*args))
    # compiled, the value-and-gradient variant runs for grad too (nothing more lowered)
    assert _lowered(d._last) == (["grad"] if jit else ["grad", "grad_only"])


def _both_orders(f, args, wrt) -> tuple[dict[str, str], dict[str, str]]:
    """Both variants' sources of ``f`` at ``args``, lowered in one order, then the other
    (each from a transform of its own)."""
    out = []
    for order in (VARIANTS, VARIANTS[::-1]):
        d = jg.differentiate(f, wrt=wrt, jit=False)
        u = d._generated(d.bind(args)).unit
        out.append({v: u.sources[v] for v in order})
    return out[0], out[1]


#: the loop corpus (every fifth case) and the prange corpus (``parallel=True``: each
#: variant's prange rewrite names chunks with fresh names)
ORDER_CASES = [(f, make(), wrt) for f, make, wrt in corpus_loops.CASES[::5]] + [
    (P.reduction, (X, 0.6), (0, 1)), (P.inner_loop, (X, 0.7), (0, 1)),
    (P.gather, (X, np.array([0, 3, 3, 8, 1, 3, 7]), 0.8), (0, 2)),
    (P.branch_stencil, (np.linspace(-0.8, 0.9, 40), 0.6), (0, 1))]


@pytest.mark.parametrize("k", range(len(ORDER_CASES)))
def test_lowering_order_does_not_change_the_code(k):
    f, args, wrt = ORDER_CASES[k]
    first, second = _both_orders(f, args, wrt if isinstance(wrt, tuple) else (wrt,))
    assert first == second
