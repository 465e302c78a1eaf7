"""Adjoint buffers of arrays made inside loops are allocated at the first trip and zeroed
in place in the others (``backend/loop_buffers.py``), unless the buffer may outlive its
trip or its shape may change from trip to trip."""

from __future__ import annotations

import ast
import math
import re

import numpy as np
import pytest
from gradcheck import check_grad

import jitgrad as jg
from jitgrad.transpiler.backend.loop_buffers import loop_buffers
from jitgrad.transpiler.notes import PRANGE, ZEROING


def fixed_shape(x, n):
    m = x.shape[0]
    s = 0.0
    for t in range(n):
        z = np.empty(m)
        for j in range(m):
            z[j] = math.sin(x[j] * (t + 1.0))
        s += np.sum(z) * (t + 2.0)
    return s


def varying_shape(x, n):
    s = 0.0
    for t in range(n):
        z = np.empty(t + 1)
        for j in range(t + 1):
            z[j] = x[j] * x[t - j]
        s += np.sum(np.sin(z))
    return s


def nested(x, n):
    m = x.shape[0]
    s = 0.0
    for t in range(n):
        for u in range(2):
            z = np.empty(m)
            for j in range(m):
                z[j] = math.cos(x[j] * (t + u + 1.0))
            s += np.sum(z) * (u + 1.0)
    return s


def kept(x, n):
    m = x.shape[0]
    y = x * 1.0
    for _ in range(n):
        z = np.empty(m)
        for j in range(m):
            z[j] = math.sin(y[j]) + x[j]
        y = z
    return np.sum(y * y)


ARGS = {fixed_shape: 3, nested: 2, kept: 3}  # kept: the adjoint copies (dz += dy)
REUSED = (fixed_shape, nested, kept)


def _x(m: int) -> np.ndarray:
    return np.linspace(0.3, 1.1, m)


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("f", list(ARGS), ids=lambda f: f.__name__)
def test_values_and_gradients(f, jit):
    check_grad(f, (_x(5), ARGS[f]), wrt=0, jit=jit)


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("f", REUSED, ids=lambda f: f.__name__)
def test_other_sizes_and_no_trips(f, jit):
    """Calls of other sizes, and with loops that run no trip (the buffer never made),
    give the gradients of central differences, from one compiled function."""
    g = jg.grad(f, wrt=0, jit=jit)
    for m, n in ((3, 2), (7, 5), (4, 0), (4, 3), (7, 5)):
        x = _x(m)
        want = check_grad(f, (x, n), wrt=0, jit=jit, shared=True)[0]
        np.testing.assert_allclose(g(x, n), want, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("f", REUSED, ids=lambda f: f.__name__)
def test_zeroing_in_loop_uses_workspace(f):
    src = jg.grad(f, wrt=0).source(_x(5), ARGS[f])
    # zeroed, or set (``first_add``): under jit=True an array set element by element
    # (``view_updates``: no array assignment, whose error message Numba compiles)
    after = src.split("for ", 1)[1]
    assert "dz[...] = " in after or "dz[_k" in after, src
    assert "zeros_like(z)" not in src, src  # (np.zeros_like or its cached np_zeros_like)


ESCAPES = {
    "stays": ("for t in range(n):\n    dz = np.zeros_like(z)\n    dz[0] += g\n"
              "    dx += dz\n", True),
    "nested": ("for t in range(n):\n    for u in range(n):\n        dz = np.zeros_like(z)\n"
               "        dx += dz\n", True),
    "appended": ("for t in range(n):\n    dz = np.zeros_like(z)\n    dz[0] += g\n"
                 "    keep.append(dz)\nuse(keep)\n", False),
    "returned": ("for t in range(n):\n    dz = np.zeros_like(z)\n    dz[0] += g\n"
                 "return dz\n", False),
    "aliased": ("for t in range(n):\n    for u in range(n):\n        use(w)\n"
                "        dz = np.zeros_like(z)\n        w = dz\n", False),
    "shape varies": ("for t in range(n):\n    z = a[t:]\n    dz = np.zeros_like(z)\n"
                     "    dx += dz\n", False),
    "rebound": ("for t in range(n):\n    dz = np.zeros_like(z)\n    dx += dz\n"
                "    dz = dz * 2.0\n", False),
    "read first": ("dz = a\nfor t in range(n):\n    dx += dz\n    dz = np.zeros_like(z)\n"
                   "    dz[0] += g\n", False),
    "prange": ("for t in prange(n):\n    dz = np.zeros_like(z)\n    dx += dz\n", False),
    "top level": ("dz = np.zeros_like(z)\ndx += dz\n", False),
}


@pytest.mark.parametrize("case", list(ESCAPES))
def test_only_buffers_that_stay_in_their_trip(case):
    """A zeroing in a loop is made once only where no name that may view the buffer is
    read after its trip (not appended to a list, returned or kept under another name),
    its shape is the same in every trip, the loop binds it only there and reads it
    nowhere before; not under ``prange`` nor outside loops."""
    src, hoisted = ESCAPES[case]
    body = ast.parse(src).body
    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "zeros_like":
            ZEROING.set(node, True)
        if isinstance(node, ast.For) and getattr(node.iter.func, "id", "") == "prange":
            PRANGE.set(node, True)  # (as desugar marks a loop over numba.prange)
    text = ast.unparse(ast.fix_missing_locations(ast.Module(body=loop_buffers(body, {}, set()),
                                                            type_ignores=[])))
    assert ("dz[...] = 0.0" in text) == hoisted, text
    assert ("np.zeros_like(z)" in text) != hoisted, text


@pytest.mark.parametrize("jit", [True, False])
def test_shape_varying_per_trip_still_refused(jit):
    """An array whose shape changes from trip to trip: its adjoint is zeroed in the shape
    the forward sweep left (as before): the call raises, never a wrong gradient."""
    with pytest.raises(ValueError, match="does not have the shape"):
        jg.grad(varying_shape, wrt=0, jit=jit)(_x(5), 4)


@pytest.mark.parametrize("f", REUSED, ids=lambda f: f.__name__)
def test_hvp_through_kept_buffers(f):
    """Forward mode over the gradient code (``hvp``) sees the kept buffers too."""
    from gradcheck import check_hvp

    check_hvp(f, (_x(5), ARGS[f]), wrt=(0,))


# --- a zeroing whose first use adds a whole array sets it instead (``first_add``) -------


def rk4_chain(x, n):
    """RK4 of the linear chain ODE (GradBench ode): per-step stage arrays whose adjoints
    are first added to whole (``dz += dk``) in each trip of the reversed loop."""
    m = x.shape[0]
    h = 1.0 / n
    y = np.zeros(m)
    for _ in range(n):
        k1 = _chain(x, y)
        k2 = _chain(x, y + h * k1 / 2.0)
        k3 = _chain(x, y + h * k2 / 2.0)
        k4 = _chain(x, y + h * k3)
        y = y + h * (k1 + 2.0 * k2 + 2.0 * k3 + k4) / 6.0
    return y[m - 1] + np.sum(y * x)


def _chain(x, y):
    z = np.empty(x.shape[0])
    z[0] = x[0]
    for i in range(1, x.shape[0]):
        z[i] = x[i] * y[i - 1]
    return z


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("f,n", [(rk4_chain, 3), (rk4_chain, 5000), (fixed_shape, 4)],
                         ids=["rk4", "rk4_5000_steps", "broadcast_scalar"])
def test_set_instead_of_zero_and_add(f, n, jit):
    """Values and gradients against central differences where the adjoint's first use of a
    buffer zeroed per trip adds a whole array to it (set instead), also over 5,000 steps."""
    x = np.linspace(0.2, 0.9, 4)
    check_grad(f, (x, n), wrt=0, jit=jit, rtol=1e-6, atol=1e-8)
    src = jg.grad(f, wrt=0, jit=jit).source(x, n)
    assert not re.search(r"dz\d*\[\.\.\.\] = 0\.0|dz\d* \+= ", src), src
    # (or, under jit=True, the step ``moves`` takes the added array's buffer)
    assert re.search(r"dz\d*\[\.\.\.\] = |# dz\d* takes the buffer of", src), src


FIRST_ADDS = {
    "first add": ("for t in range(n):\n    dz = np.zeros_like(z)\n    g = a[t]\n"
                  "    dz += e * g\n    dx += dz\n", True),
    "element first": ("for t in range(n):\n    dz = np.zeros_like(z)\n    dz[0] += g\n"
                      "    dz += e\n    dx += dz\n", False),
    "reads itself": ("for t in range(n):\n    dz = np.zeros_like(z)\n    dz += dz * e\n"
                     "    dx += dz\n", False),
    "jump before": ("for t in range(n):\n    dz = np.zeros_like(z)\n    if c:\n"
                    "        break\n    dz += e\n    dx += dz\n", False),
    "in a branch": ("for t in range(n):\n    dz = np.zeros_like(z)\n    if c:\n"
                    "        dz += e\n    dx += dz\n", False),
    "view first": ("for t in range(n):\n    dz = np.zeros_like(z)\n    v = dz[1:]\n"
                   "    v[0] += g\n    dz += e\n    dx += dz\n", False),
    "subtracts": ("for t in range(n):\n    dz = np.zeros_like(z)\n    dz -= e\n"
                  "    dx += dz\n", False),
}


@pytest.mark.parametrize("case", list(FIRST_ADDS))
def test_first_add_preconditions(case):
    """The zeroing goes, and ``dz += e`` becomes ``dz[...] = e``, only where that add is the
    first statement after the zeroing to name the buffer (or a name sharing it), in the
    same block, ``e`` does not read it, and no jump lies between."""
    src, set_instead = FIRST_ADDS[case]
    body = ast.parse(src).body
    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "zeros_like":
            ZEROING.set(node, True)
    text = ast.unparse(ast.fix_missing_locations(ast.Module(body=loop_buffers(body, {}, set()),
                                                            type_ignores=[])))
    assert ("dz[...] = 0.0" not in text) == set_instead, text
    assert ("dz[...] = e" in text) == set_instead, text
