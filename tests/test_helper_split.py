"""Helpers called at many sites are compiled once, not inlined (``front/split.py``, issue 31).

Each case checks the value and every gradient element against central differences in both
modes, and that the generated code calls the helper's compiled gradient (``<helper>_vjp``)
where the helper is split, and inlines it where it is not.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types

import numpy as np
import pytest
import split_cases as sc
from gradcheck import check_grad, check_hvp

import jitgrad as jg
from jitgrad.transpiler.front import split

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _rng_args(case: str):
    rng = np.random.default_rng(3)
    if case in ("scalar4", "scalar3", "impure", "in_expressions"):
        return (0.3, 0.7), (0, 1)
    if case == "with_ints":
        return (rng.normal(size=3), rng.normal(size=3)), (0, 1)
    n = 8 if case.startswith("looped") or case == "checkpointed" else 4
    return (0.3 * rng.normal(size=3), rng.normal(size=(n, 2)), 0.5 * rng.normal(size=(3, 2)),
            0.5 * rng.normal(size=(3, 3))), (0, 1, 2, 3)


#: case -> the name of the helper's compiled gradient in the code, None where inlined
SPLIT = {"scalar4": "sq_vjp", "unrolled": "cell_vjp", "looped": "cell_vjp",
         "looped_unrolled": "cell_vjp", "with_ints": "bump_vjp", "scalar3": None,
         "impure": None, "in_expressions": "sq_vjp", "checkpointed": "cell_vjp",
         "all_accumulated": "feats_vjp", "shared_twice": "mix_vjp",
         "rebound_weights": "cell_vjp", "scalar_weight": "scaled_vjp"}


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


def test_split_gradient_adds_into_buffers():
    """The helper's gradient adds into the caller's adjoint buffers (whole array
    arguments: ``dW``, ``dU``) and into zeroed arrays for the rest (a local ``h``, a row
    ``xs[k]``); it returns only what cannot be added into (a scalar argument's)."""
    args, wrt = _rng_args("unrolled")
    src = jg.grad(sc.unrolled, wrt=wrt, jit=False).source(*args)
    calls = [x for x in src.splitlines() if "cell_vjp(" in x and "def " not in x]
    assert len(calls) == 4 and all(x.endswith(", dW, dU)") for x in calls)
    assert "def cell_vjp(h, x, W, U, _dy, _dret, dh, dx, dW, dU):" in src
    assert "_g[" not in src and ".copy()" not in src
    assert src.count("np.zeros_like(W)") == 1  # the caller's; the gradient's own went
    src = jg.grad(sc.scalar_weight, wrt=wrt, jit=False).source(*args)
    assert "scaled_vjp(h_2, _t7, W, 0.5, dh_3, 1.0, _z01, _z11, dW)" in src
    assert "    return da\n" in src  # the scalar's gradient, returned


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


CACHED = '''
import numpy as np
from numba import njit

import jitgrad as jg


@njit
def sq(a, w):
    return {body}


@jg.differentiate(wrt=(0, 1), cache=True)
def f(x, w):
    y = sq(x, w)
    y = sq(y, w)
    y = sq(y, 2.0)
    y = sq(y, w)
    return y * 3.0
'''

RUN = '''
import json, sys
sys.path.insert(0, {folder!r})
import jitgrad.api as api
calls = []
_generate = api.generate
api.generate = lambda *a: calls.append(1) or _generate(*a)
from splitfn import f
g = f.grad(0.3, 0.7)
print(json.dumps({{"g": [float(v) for v in g], "transforms": len(calls), **f.cache_info()}}))
'''


def _run_cached(folder, body: str) -> dict:
    (folder / "splitfn.py").write_text(CACHED.format(body=body))
    (folder / "run.py").write_text(RUN.format(folder=str(folder)))
    env = dict(os.environ, PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, str(folder / "run.py")], capture_output=True,
                         text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def _fd(body: str) -> list[float]:
    def sq(a, w):
        return eval(body, {"np": np, "a": a, "w": w})

    def f(x, w):
        return 3.0 * sq(sq(sq(sq(x, w), w), 2.0), w)

    h = 1e-6
    return [(f(0.3 + h, 0.7) - f(0.3 - h, 0.7)) / (2 * h),
            (f(0.3, 0.7 + h) - f(0.3, 0.7 - h)) / (2 * h)]


def test_split_on_disk_cache(tmp_path):
    """``cache=True``: the split gradient (its helper's gradient in the module) is loaded by
    a second process; an edit of the helper's source is a new entry."""
    body = "np.sin(a) * w + a * a"
    first, second = _run_cached(tmp_path, body), _run_cached(tmp_path, body)
    # the function, and the helper's gradient at two sets of active arguments (w, 2.0)
    assert (first["misses"], first["transforms"]) == (1, 3)
    assert (second["hits"], second["misses"], second["transforms"]) == (1, 0, 0)
    assert second["numba_misses"] == 0
    edited = _run_cached(tmp_path, "np.cos(a) * w + a * a")
    assert (edited["hits"], edited["misses"], edited["transforms"]) == (0, 1, 3)
    for res, b in ((first, body), (second, body), (edited, "np.cos(a) * w + a * a")):
        np.testing.assert_allclose(res["g"], _fd(b), rtol=1e-6)
