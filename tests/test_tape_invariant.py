"""Loop-invariant values on the tape (``modes/policy.py``, ``ReadPolicy.hoisted``): a scalar
the adjoint needs from a tape is stored once per run of the loop it is invariant in, not
once per trip of it: one made before the loop and not rebound in it, or one the loop's
body makes first from operands the loop does not change (an element of a scratch array
written between outer trips and only read in the inner loop).  Where the loop does change
an operand (the array is written in the inner loop, the scalar rebound there) the value is
still stored on every trip.  Every case is checked against central differences, compiled
and not, and through ``hvp`` (second order differentiates the gradient code written here).
"""

import ast
import math
import re

import numpy as np
import pytest
from gradcheck import check_grad, check_hvp
from test_pass_decisions import assert_tapes_balanced, sweeps

import jitgrad as jg


def row_scratch(a, x):
    """A matrix-vector product per row into a scratch array made per row, read in a
    triangular inner loop: ``t[p]`` is invariant in the loop over ``q``."""
    n, m = a.shape
    out = 0.0
    for i in range(n):
        t = np.empty(m)
        for j in range(m):
            t[j] = a[i, j] * x[j]
        for p in range(m):
            for q in range(p, m):
                out += t[p] * t[q] * x[q]
    return out


def outer_scalar(x, w):
    """A scalar made in the outer loop (costlier than a tape) and read in the inner one."""
    n = x.shape[0]
    s = 0.0
    for i in range(n):
        c = math.exp(x[i] * w[0])
        for j in range(w.shape[0]):
            s += c * w[j] * x[j % n]
    return s


def empty_inner(a, b):
    """``a[i]`` is read in a loop that makes no trip once ``i`` passes ``a``'s end: the
    value is pushed only where the loop runs (reading it first would be out of bounds)."""
    m = a.shape[0]
    s = 0.0
    for i in range(b.shape[0]):
        buf = np.empty(m)
        for j in range(m):
            buf[j] = a[j] * b[i]
        for j in range(i, m):
            s += buf[i] * buf[j] * b[i]
    return s


def written_inside(x, y):
    """Not invariant: ``buf[i]`` is read in the loop over ``k``, which writes ``buf``
    (``buf[i]`` itself at ``k == i``): stored on every trip."""
    n = x.shape[0]
    buf = np.zeros(n)
    s = 0.0
    for i in range(n):
        for j in range(n):
            buf[j] = x[j] * y[i]
        for k in range(n):
            s += buf[i] * buf[k]
            buf[k] = buf[k] * 0.5 + x[i] * buf[k]
    return s


def rebound_inside(x, w):
    """Not invariant: the scalar made in the outer loop is rebound in the inner one."""
    n = x.shape[0]
    s = 0.0
    for i in range(n):
        c = math.exp(x[i] * w[0])
        for j in range(w.shape[0]):
            s += c * w[j]
            c = c * x[j % n]
    return s


def scratch_rows(a, x):
    """A scratch array filled per outer trip and read over and over in a double loop
    (``t[q]`` changes with ``q``, not with ``p``): kept once per trip over ``i``."""
    n, m = a.shape
    t = np.empty(m)
    out = 0.0
    for i in range(n):
        for j in range(m):
            t[j] = a[i, j] * x[j]
        for p in range(m):
            for q in range(m):
                out += t[q] * t[p] * x[p]
    return out


def scratch_exp(a, x):
    """As ``scratch_rows`` with ``exp`` in the fill, which costs more per element than a
    tape: kept once per trip over ``i`` (``scratch_rows`` itself is filled again in the
    adjoint, ``test_refill.py``)."""
    n, m = a.shape
    t = np.empty(m)
    out = 0.0
    for i in range(n):
        for j in range(m):
            t[j] = math.exp(a[i, j]) * x[j]
        for p in range(m):
            for q in range(m):
                out += t[q] * t[p] * x[p]
    return out


def scratch_rewritten(a, x):
    """Not kept: the array is written again after the double loop reads it (in the same
    trip), so its elements there are stored as they are read."""
    n, m = a.shape
    t = np.zeros(m)
    out = 0.0
    for i in range(n):
        for j in range(m):
            t[j] = t[j] * 0.5 + a[i, j] * x[j]
        for p in range(m):
            for q in range(m):
                out += t[q] * t[p] * x[p]
        for j in range(m):
            t[j] = t[j] * x[j]
    return out


def scratch_aliased(a, x):
    """Not kept: the array is filled through another name for its buffer."""
    n, m = a.shape
    t = np.empty(m)
    u = t
    out = 0.0
    for i in range(n):
        for j in range(m):
            u[j] = a[i, j] * x[j]
        for p in range(m):
            for q in range(m):
                out += t[q] * t[p] * x[p]
    return out


def _rng(k):
    return np.random.default_rng(k)


CASES = {
    "row_scratch": (row_scratch, (_rng(1).normal(size=(3, 4)), _rng(2).normal(size=4)),
                    (0, 1)),
    "outer_scalar": (outer_scalar, (_rng(3).normal(size=4) * 0.5, _rng(4).normal(size=5)),
                     (0, 1)),
    "empty_inner": (empty_inner, (_rng(5).normal(size=3), _rng(6).normal(size=5)), (0, 1)),
    "written_inside": (written_inside, (_rng(7).normal(size=4), _rng(8).normal(size=4)),
                       (0, 1)),
    "rebound_inside": (rebound_inside, (_rng(9).normal(size=3) * 0.5,
                                        _rng(10).normal(size=4)), (0, 1)),
    "scratch_rows": (scratch_rows, (_rng(12).normal(size=(3, 4)), _rng(13).normal(size=4)),
                     (0, 1)),
    "scratch_exp": (scratch_exp, (_rng(18).normal(size=(3, 4)) * 0.3,
                                  _rng(19).normal(size=4)), (0, 1)),
    "scratch_rewritten": (scratch_rewritten, (_rng(14).normal(size=(3, 4)),
                                              _rng(15).normal(size=4)), (0, 1)),
    "scratch_aliased": (scratch_aliased, (_rng(16).normal(size=(3, 4)),
                                          _rng(17).normal(size=4)), (0, 1)),
}


def push_depths(src: str) -> dict[str, list[int]]:
    """The value of each tape push (``tape_put(tape, cursor, v)``) of the forward sweep,
    with how many ``for`` loops are around it, for every push of it."""
    out: dict[str, list[int]] = {}

    def visit(stmts, depth):
        for s in stmts:
            v = s.value if isinstance(s, ast.Expr) else None
            if isinstance(v, ast.Call) and getattr(v.func, "id", "") == "tape_put":
                out.setdefault(ast.unparse(v.args[2]), []).append(depth)
            inner = depth + isinstance(s, ast.For)
            for f in ("body", "orelse"):
                visit(getattr(s, f, []) or [], inner)

    for fn in ast.parse(src).body:
        if isinstance(fn, ast.FunctionDef):
            visit(fn.body, 0)
    return out


def _forward(case):
    f, args, wrt = CASES[case]
    return jg.grad(f, wrt=wrt, jit=False).source(*args, stage="forward")


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("case", sorted(CASES))
def test_gradients(case, jit):
    f, args, wrt = CASES[case]
    check_grad(f, args, wrt=wrt, jit=jit)


@pytest.mark.parametrize("case", sorted(CASES))
def test_hvp(case):
    """``hvp`` against central differences of the gradient, for each argument."""
    f, args, wrt = CASES[case]
    check_hvp(f, args, wrt)


@pytest.mark.parametrize("case", sorted(CASES))
def test_tapes_balanced(case):
    f, args, wrt = CASES[case]
    assert_tapes_balanced(sweeps(f, *args, wrt=wrt))


def _read(src: str, expr: str) -> str:
    """The name the forward sweep reads ``expr`` into (``_t6 = t[p]``)."""
    return re.search(rf"^\s*(\w+) = {re.escape(expr)}$", src, re.M).group(1)


def test_scratch_element_stored_once_per_inner_loop():
    """``t[p]`` goes on the tape once per trip over ``p`` (two loops deep), not per trip
    over ``q`` (three); ``t[q]`` changes with ``q`` and stays there."""
    src = _forward("row_scratch")
    depths = push_depths(src)
    assert depths.get(_read(src, "t[p]")) == [2], depths
    assert depths.get(_read(src, "t[q]")) == [3], depths
    assert "once per loop over q, not per trip" in src


def test_outer_scalar_stored_once_per_outer_trip():
    """``c`` is stored before the loop over ``j``, once per trip over ``i`` (and that one
    tape serves the adjoint of ``c = exp(...)`` too)."""
    src = _forward("outer_scalar")
    assert push_depths(src).get("c") == [1], push_depths(src)
    assert "stored c once per loop over j" in src


def test_empty_inner_loop_pushes_only_when_it_runs():
    src = _forward("empty_inner")
    assert push_depths(src).get(_read(src, "buf[i]")) == [1], push_depths(src)
    assert re.search(r"if m - i > 0:", src), src


def test_written_inside_is_stored_every_trip():
    """The read of ``buf[i]`` in the loop that writes ``buf`` stays on the tape per trip."""
    src = _forward("written_inside")
    assert "once per loop" not in src
    assert push_depths(src).get(_read(src, "buf[i]")) == [2], push_depths(src)


def test_rebound_scalar_is_stored_every_trip():
    src = _forward("rebound_inside")
    assert "once per loop" not in src
    assert 2 in push_depths(src).get("c", []), push_depths(src)


KEPT = "once per trip, after the last write"


def test_scratch_array_kept_once_per_outer_trip():
    """``t`` is stored whole once per trip over ``i`` (``m`` numbers), and its element
    reads in the double loop are read again: nothing is pushed inside it (before: two
    elements per inner trip, ``m * m`` per outer trip; the fill's ``exp`` is pushed for
    its own adjoint)."""
    src = _forward("scratch_exp")
    assert KEPT in src
    assert re.search(r"_tape_t_\w*\.append\(", src), src
    assert all(max(ds) <= 2 for ds in push_depths(src).values()), push_depths(src)
    adj = jg.grad(scratch_exp, wrt=(0, 1), jit=False).source(*CASES["scratch_exp"][1],
                                                            stage="adjoint")
    assert re.search(r"^\s*t = _tape_t_\w*\.pop\(\)", adj, re.M), adj


@pytest.mark.parametrize("case", ["scratch_rewritten", "scratch_aliased"])
def test_scratch_array_not_kept(case):
    """Written after the reads, or through another name: its elements stay on the tape."""
    src = _forward(case)
    assert KEPT not in src
    assert push_depths(src).get(_read(src, "t[q]")) == [3], push_depths(src)
