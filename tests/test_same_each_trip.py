"""Arrays an inlined helper makes in a loop, of a shape bound in the loop (``d =
v.shape[0]; out = np.empty(d)``) and handed back under another name (``r = out``), are
made once and their adjoint buffers zeroed in place (``Dataflow.same_each_trip``, the
``contents`` liveness of ``Dataflow.live_after`` and ``carried``, ``loop_buffers``):
GradBench gmm's ``q_times_x`` allocated three arrays per point and component."""

from __future__ import annotations

import ast
import math
import re

import numpy as np
import pytest
from gradcheck import check_grad

import jitgrad as jg
from jitgrad.transpiler.analysis.dataflow import Dataflow, content_ids


def _scaled(w, v):
    """A fresh array: ``exp(w) * v`` plus a triangle of ``w[i] * v[i]`` (gmm's Q x)."""
    d = v.shape[0]
    out = np.empty(d)
    for i in range(d):
        out[i] = math.exp(w[i]) * v[i]
    for i in range(d):
        for j in range(i + 1, d):
            out[j] += w[i] * v[i] * 0.5
    return out


def rows(w, x):
    n, d = x.shape
    vc = np.empty(d)
    s = 0.0
    for i in range(n):
        for k in range(w.shape[0]):
            for j in range(d):
                vc[j] = x[i, j] - w[k, j]
            r = _scaled(w[k], vc)
            sq = 0.0
            for j in range(d):
                sq += r[j] * r[j]
            s += math.log(1.0 + sq)
    return s


def collide(w, x):
    """``rows`` with user names that generated code would pick (the flag, the adjoint)."""
    n, d = x.shape
    _new_out = 0.5
    dout = 1.5
    dr = np.empty(d)
    s = 0.0
    for i in range(n):
        for k in range(w.shape[0]):
            for j in range(d):
                dr[j] = x[i, j] - w[k, j]
            out = _scaled(w[k], dr)
            sq = 0.0
            for j in range(d):
                sq += out[j] * out[j]
            s += dout * math.log(1.0 + _new_out * sq)
    return s


def kept(w, x):
    """The helper's array is kept for the next trip and read there for its values: it
    must not be made once (each trip's array is another)."""
    n, d = x.shape
    prev = np.zeros(d)
    s = 0.0
    for i in range(n):
        r = _scaled(w[0], x[i])
        for j in range(d):
            s += r[j] * prev[j]
        prev = r
    return s


def shape_kept(w, x):
    """The helper's array is kept for the next trip but read there only for its shape."""
    n, d = x.shape
    prev = np.zeros(d)
    vc = np.empty(d)
    s = 0.0
    for i in range(n):
        m = prev.shape[0]
        for j in range(d):
            vc[j] = x[i, j] * 1.0
        r = _scaled(w[i % 2], vc)
        for j in range(m):
            s += r[j] * r[j] * (j + 1.0)
        prev = r
    return s


FUNCS = (rows, collide, kept, shape_kept)


def _args(n: int = 3, k: int = 2, d: int = 4) -> tuple:
    rng = np.random.default_rng(5)
    return rng.normal(size=(k, d)) * 0.5, rng.normal(size=(n, d))


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("f", FUNCS, ids=lambda f: f.__name__)
def test_values_and_gradients(f, jit):
    """Value and every element of both gradients against central differences."""
    check_grad(f, _args(), wrt=(0, 1), jit=jit, rtol=1e-6, atol=1e-8, shared=True)


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("f", FUNCS, ids=lambda f: f.__name__)
def test_other_sizes_and_no_trips(f, jit):
    """One compiled function on other sizes, and on loops that run no trip."""
    g = jg.grad(f, wrt=(0, 1), jit=jit)
    for n, k, d in ((4, 3, 5), (0, 2, 3), (2, 2, 1), (3, 2, 4)):
        args = _args(n, k, d)
        want = check_grad(f, args, wrt=(0, 1), jit=jit, rtol=1e-6, atol=1e-8, shared=True)
        for a, b in zip(g(*args), want, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("f", [rows, collide, shape_kept], ids=lambda f: f.__name__)
def test_made_once(f):
    """The helper's array is made at the first trip, its adjoints are zeroed in place: no
    allocation per trip (before: ``np.empty(d1)`` and two ``zeros_like`` per trip)."""
    src = jg.grad(f, wrt=(0, 1)).source(*_args())
    assert not re.search(r"zeros_like\((out|r|dr)\d*\)", src), src
    assert re.search(r"if _new_\w+:\n\s+out\w* = np\.empty\(", src), src


def test_kept_array_made_per_trip():
    """An array read for its values in a later trip keeps its allocation per trip."""
    src = jg.grad(kept, wrt=(0, 1)).source(*_args())
    assert not re.search(r"if _new_out\w*:", src), src


def _loop(src: str) -> tuple[Dataflow, ast.stmt, ast.expr]:
    """The dataflow of ``src``, its first loop, and the value of the last assignment to
    ``e`` in it."""
    body = ast.parse(src).body
    loop = next(s for s in body if isinstance(s, ast.For))
    e = [s for s in ast.walk(loop) if isinstance(s, ast.Assign)
         and getattr(s.targets[0], "id", "") == "e"][-1].value
    return Dataflow(body), loop, e


SAME = {
    "shape of a written array": ("for i in range(n):\n    d = a.shape[0]\n    a[i] = 1.0\n"
                                 "    e = d + 1\n", True),
    "chain": ("for i in range(n):\n    m = c * 2\n    d = m + c\n    e = d\n", True),
    "nested binding": ("for i in range(n):\n    for k in range(m):\n        d = a.shape[0]\n"
                       "        e = d * 2\n", True),
    "loop index": ("for i in range(n):\n    d = i\n    e = d\n", False),
    "read before bound": ("for i in range(n):\n    e = d\n    d = c\n", False),
    "bound in a branch": ("for i in range(n):\n    if c:\n        d = c\n    e = d\n", False),
    "bound twice": ("for i in range(n):\n    d = c\n    d = b\n    e = d\n", True),
    "grows": ("for i in range(n):\n    d = c\n    d += 1\n    e = d\n", False),
    "a call": ("for i in range(n):\n    d = f(c)\n    e = d\n", False),
    "element value": ("for i in range(n):\n    a[i] = 1.0\n    d = a[0]\n    e = d\n", False),
    "resized": ("for i in range(n):\n    a.resize(i)\n    d = a.shape[0]\n    e = d\n", False),
    "rebound array": ("for i in range(n):\n    a = b[i:]\n    d = a.shape[0]\n    e = d\n",
                      False),
}


@pytest.mark.parametrize("case", list(SAME))
def test_same_each_trip(case):
    """Which values bound in a loop are the same wherever they are read in every trip."""
    src, same = SAME[case]
    df, loop, e = _loop(src)
    assert df.same_each_trip(loop, e) is same
    assert not df.invariant(loop, e) or same  # (``invariant`` is the stronger question)


def test_content_ids_skip_shape_reads():
    """Names read only for their shape are not among the names whose values are read."""
    tree = ast.parse("y = np.zeros_like(a) + b.shape[0] + len(c) + d[0] + e.ndim")
    assert content_ids(tree, {"np": np}) & {"a", "b", "c", "d", "e"} == {"d"}
