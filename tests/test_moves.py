"""Adjoint moves (``backend/moves.py``): a zeroed adjoint buffer whose first update adds
a whole array takes that array's buffer, where nothing reads the array after the buffer
is written; and the two analysis facts that let the element loops and the moves see it
(``unbroadcast(g, x)`` shares no buffer with ``x``; an element of a name of a known shape
class is a scalar)."""

from __future__ import annotations

import ast
import re
import textwrap

import numpy as np
import pytest
from gradcheck import check_grad

import jitgrad as jg
from jitgrad.kernels import helpers as H
from jitgrad.transpiler.analysis import dataflow
from jitgrad.transpiler.analysis.shape_classes import SCALAR, ShapeClasses
from jitgrad.transpiler.backend.moves import adjoint_moves


def stage(x, dz):
    """A helper returning an array made element by element (its adjoint is moved into)."""
    n = x.shape[0]
    _t1 = np.empty(n)  # user names that generated code also uses
    _t1[0] = x[0]
    for i in range(1, n):
        _t1[i] = x[i] * dz[i - 1]
    return _t1


def rk2(x, s):
    """RK2 of a linear chain, the state named ``dy``, stages ``dz`` and ``_g``."""
    n = x.shape[0]
    h = 1.0 / (s + 1)
    dy = np.zeros(n) + 0.1
    for _ in range(s):
        dz = stage(x, dy)
        _g = stage(x, dy + h * dz / 2.0)
        dy = dy + h * (dz + _g) / 2.0
    return dy[n - 1] + np.sum(dy * dy)


def rebinding(x, s):
    """``y = y + ...`` rebinding, the adjoint of ``y`` read again after its update."""
    y = x * 1.0
    for _ in range(s):
        y = y + 0.25 * y * x
        y = np.sin(y) + y
    return np.sum(y * x)


def kept_stage(x, s):
    """A stage kept past the step (``acc`` reads it): its adjoint is read after the add."""
    y = x * 0.5
    acc = np.zeros(x.shape[0])
    for _ in range(s):
        k = stage(x, y)
        y = y + 0.1 * k
        acc = acc + k * y
    return np.sum(acc) + y[0]


CASES = {rk2: 3, rebinding: 2, kept_stage: 3}


def _x(m: int = 5) -> np.ndarray:
    return np.linspace(0.3, 1.1, m)


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("f", list(CASES), ids=lambda f: f.__name__)
def test_values_and_gradients(f, jit):
    check_grad(f, (_x(), CASES[f]), wrt=0, jit=jit, shared=True)


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("f", list(CASES), ids=lambda f: f.__name__)
def test_other_sizes_and_no_trips(f, jit):
    for m, s in ((1, 1), (2, 0), (7, 4)):
        check_grad(f, (_x(m), s), wrt=0, jit=jit, shared=True)


def test_moves_in_generated_code():
    """rk2's gradient adds no stage adjoint into a zeroed (or hoisted) buffer: each is
    moved, and ``dy += unbroadcast(...)`` runs inside the element loop after it."""
    src = jg.differentiate(rk2, wrt=0).source(_x(), 3)
    moved = re.findall(r"# (\w+) takes the buffer of (\w+)", src)
    assert len(moved) >= 3, src
    assert "[...] = " not in src, src  # no copy into a hoisted buffer
    for d, _ in moved:
        assert not re.search(rf"\b{d} = (np_)?zeros_like\(", src.split("for _ in range(s - 1")[1])
    # (no whole-array update of the state's adjoint is left outside an element loop)
    assert not re.search(r"^\s*d\w* \+= unbroadcast\(d", src, re.M), src


def test_no_moves_without_kinds():
    """Under ``jit=False`` there are no shape classes: the buffers stay."""
    src = jg.differentiate(rk2, wrt=0, jit=False).source(_x(), 3)
    assert "takes the buffer" not in src


# --- the step on hand-written bodies --------------------------------------------------

NDIMS = {n: 1 for n in ("z", "dz", "dk", "p", "w", "d1", "d2", "v")}


def _moved(src: str, params=("z", "p")) -> str:
    body = ast.parse(textwrap.dedent(src)).body
    env = {"np": np, "unbroadcast": H.unbroadcast}
    shapes = ShapeClasses(body, NDIMS, env, list(params))
    flow = dataflow.Dataflow(body, env=env,
                             is_array=lambda n: False if shapes.of(n) == SCALAR else None)
    return ast.unparse(adjoint_moves(body, shapes, flow, list(params), {}, env))


def test_moved_where_the_array_is_dead():
    out = _moved("""
        dz = np.zeros_like(z)
        dk = np.empty_like(z)
        dk[0] = 1.0
        dz += dk
        dz[1] += 2.0
        r = dz[0]
    """)
    assert "dz = dk" in out and "zeros_like" not in out, out


@pytest.mark.parametrize("src", [
    # the array is read after the buffer is written
    "dz = np.zeros_like(z)\ndk = np.empty_like(z)\ndz += dk\ndz[1] += 2.0\nr = dk[1]",
    # the array is written while the buffer is read later
    "dz = np.zeros_like(z)\ndk = np.empty_like(z)\ndz += dk\ndk[1] = 2.0\nr = dz[1]",
    # an argument's buffer is never taken
    "dz = np.zeros_like(z)\ndz += p\ndz[0] += 1.0",
    # a value of another shape (broadcast by the add)
    "dz = np.zeros_like(z)\ndk = np.empty(3)\ndz += dk\ndz[0] += 1.0",
    # the buffer is read before the add
    "dz = np.zeros_like(z)\nr = dz[0]\ndk = np.empty_like(z)\ndz += dk",
    # a jump between: the zeroing may be what is seen
    "for i in range(3):\n    dz = np.zeros_like(z)\n    if i:\n        break\n"
    "    dk = np.empty_like(z)\n    dz += dk\nr = dz[0]",
])
def test_left_alone(src):
    assert "zeros_like" in _moved(src)


def test_array_read_in_a_later_trip_is_left_alone():
    """``dk`` read at the top of the next trip, after ``dz`` (its buffer) was written."""
    out = _moved("""
        dk = np.empty_like(z)
        for i in range(3):
            r = dk[0]
            dz = np.zeros_like(z)
            dz += dk
            dz[0] += r
    """)
    assert "zeros_like" in out


def test_a_buffer_moves_once():
    """Two moves chained through one buffer (``d1 = v``, then ``d2 = d1``) would write
    ``v`` through ``d2`` while ``v`` is read after: one of them stays, and the body
    computes what it did."""
    src = """
        d1 = np.zeros_like(z)
        v = np.empty_like(z)
        v[0] = 1.0
        v[1] = 2.0
        d1 += v
        d2 = np.zeros_like(z)
        d2 += d1
        d2[0] += 5.0
        r = v[0] + d2[0]
    """
    out = _moved(src)
    assert out.count("takes the buffer") == 1, out
    run = lambda text: exec(text, {"np": np, "z": np.zeros(2)}, ns := {}) or ns["r"]  # noqa: E731
    assert run(out) == run(textwrap.dedent(src)) == 7.0


# --- the analysis facts -------------------------------------------------------------------


def test_shape_argument_shares_no_buffer():
    env = {"unbroadcast": H.unbroadcast, "np": np}
    e = ast.parse("unbroadcast(g, x)", mode="eval").body
    assert dataflow.may_alias(e, env=env) == {"g"}
    assert dataflow.may_alias(e) == {"g", "x"}  # (unknown callee: both)


def test_element_of_a_classed_name_is_a_scalar():
    body = ast.parse("g = x\nt = g[i]\n").body
    shapes = ShapeClasses(body, {"x": 1, "i": 0}, {}, ["x", "i"])
    assert shapes.of("t") == SCALAR
