"""Helpers called at many sites are compiled once, not inlined (``front/split.py``, issue 31).

Each case checks the value and every gradient element against central differences in both
modes, and that the generated code calls the helper's compiled gradient (``<helper>_vjp``)
where the helper is split, and inlines it where it is not.
"""

from __future__ import annotations

import types

import numpy as np
import pytest
import split_cases as sc
from gradcheck import check_grad, check_hvp

import jitgrad as jg
from jitgrad.transpiler.front import split


def _rng_args(case: str):
    rng = np.random.default_rng(3)
    if case in ("scalar4", "scalar3", "impure"):
        return (0.3, 0.7), (0, 1)
    if case == "with_ints":
        return (rng.normal(size=3), rng.normal(size=3)), (0, 1)
    n = 8 if case.startswith("looped") else 4
    return (0.3 * rng.normal(size=3), rng.normal(size=(n, 2)), 0.5 * rng.normal(size=(3, 2)),
            0.5 * rng.normal(size=(3, 3))), (0, 1, 2, 3)


#: case -> the name of the helper's compiled gradient in the code, None where inlined
SPLIT = {"scalar4": "sq_vjp", "unrolled": "cell_vjp", "looped": "cell_vjp",
         "looped_unrolled": "cell_vjp", "with_ints": "bump_vjp", "scalar3": None,
         "impure": None}


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("case", sorted(SPLIT))
def test_split_gradient(case, jit):
    """Values and every gradient element against central differences; the split form."""
    f = getattr(sc, case)
    args, wrt = _rng_args(case)
    check_grad(f, args, wrt=wrt, jit=jit)
    src = jg.grad(f, wrt=wrt, jit=jit).source(*args)
    helper = SPLIT[case]
    if helper is None:
        assert "_vjp" not in src
    else:
        assert f"{helper}(" in src  # called in the gradient...
        assert f"def {helper}(" in src  # ...and printed after it


def test_split_equals_inlined(monkeypatch):
    """The split gradient is the inlined one (to rounding), and the loop's equals the
    unrolled program's."""
    args, wrt = _rng_args("looped")
    got = jg.grad(sc.looped, wrt=wrt, jit=False)(*args)
    unrolled = jg.grad(sc.looped_unrolled, wrt=wrt, jit=False)(*args)
    monkeypatch.setattr(split, "SPLIT_SITES", 1000)
    fresh = types.FunctionType(sc.looped.__code__, sc.looped.__globals__)  # (nothing cached)
    inlined = jg.grad(fresh, wrt=wrt, jit=False)(*args)
    assert "_vjp" not in jg.grad(fresh, wrt=wrt, jit=False).source(*args)
    for a, b, c in zip(got, inlined, unrolled, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(a, c, rtol=1e-12, atol=1e-14)


def test_loop_stores_rebound_argument_once_per_call():
    """In the loop, each call's ``h`` is kept for its pullback (one tape push per call)."""
    args, wrt = _rng_args("looped")
    fwd = jg.grad(sc.looped, wrt=wrt, jit=False).source(*args, stage="forward")
    assert fwd.count("cell(") == 4
    assert fwd.count(".append(") + fwd.count("_tape") >= 4


@pytest.mark.parametrize("case", ["scalar4", "unrolled"])
def test_split_hvp(case):
    """Second order inlines the helper again (forward over the gradient code)."""
    args, wrt = _rng_args(case)
    check_hvp(getattr(sc, case), args, wrt)


def test_forward_mode_inlines():
    """Forward mode keeps inlining: jvp against central differences."""
    args, _ = _rng_args("unrolled")
    v = np.random.default_rng(5).normal(size=3)
    _, t = jg.jvp(sc.unrolled, args, (v,), wrt=0, jit=False)
    eps = 1e-6
    hi = sc.unrolled(args[0] + eps * v, *args[1:])
    lo = sc.unrolled(args[0] - eps * v, *args[1:])
    np.testing.assert_allclose(t, (hi - lo) / (2 * eps), rtol=1e-6, atol=1e-8)


def test_pure_helper():
    """Only helpers that write none of their arguments are split."""
    assert split.pure_helper(sc.sq.py_func) and split.pure_helper(sc.cell.py_func)
    assert not split.pure_helper(sc.fill.py_func)
