"""Values the adjoint reads only for their shape are not stored whole (``modes/tapes.py``,
``Planner.shape_only``): loops of whole-array statements whose temporaries the adjoint
reads only as ``unbroadcast(g, t)`` store a stand-in of the shape (no memory of its
own), or nothing where the shape is an argument's (``Tapes.same_shape_arg``).  Every
value and gradient element is checked against central differences, compiled and not,
second order too (the gradient code is differentiated again)."""

import ast
import re

import numpy as np
import pytest
from gradcheck import check_grad, check_hvp
from test_pass_decisions import sweeps

from jitgrad.kernels.helpers import shape_stand_in
from jitgrad.transpiler.analysis.shape_classes import ShapeClasses


def same_shape(x, s):
    """RK-like stages of arrays of ``x``'s shape: every temporary has it."""
    y = x * 1.0
    for _ in range(s):
        k1 = np.sin(y)
        k2 = np.sin(y + 0.1 * k1)
        y = y + 0.05 * (k1 + 2.0 * k2)
    return np.sum(y * y)


def scalar_broadcast(x, c, s):
    """A scalar broadcast against the state every step (its adjoint sums to a scalar)."""
    n = x.shape[0]
    y = np.zeros(n)
    for _ in range(s):
        k = np.cos(y) * c + x
        y = y + 0.1 * (k + c)
    return np.sum(y * x)


def column_against_matrix(a, s):
    """A ``(n, 1)`` column broadcast against the ``(n, m)`` state: its adjoint sums over
    the columns, to the column's shape (a stand-in of that shape, not the column)."""
    y = a * 1.0
    for _ in range(s):
        b = y[:, :1] * 0.5
        t = y * 0.9 + b
        y = t + 0.1 * np.tanh(t)
    return np.sum(y * a)


def grown(x, s):
    """A state whose shape is not an argument's (``np.ones(3)`` then broadcast): the
    temporaries' shapes are stored as stand-ins."""
    y = np.ones(3) * 0.5
    for _ in range(s):
        z = y * x[0] + x[1]
        y = y + 0.2 * np.sin(z)
    return np.sum(y)


def shifted(x, s):
    """An allocation of ``x.shape[0] - 1`` elements: not ``x``'s shape (no class of an
    argument), so its temporaries' shapes are stored as stand-ins."""
    n = x.shape[0] - 1
    y = np.zeros(n)
    for _ in range(s):
        y = y * 0.5 + x[1:] * x[:-1]
    return np.sum(y * y)


def _rng(seed):
    return np.random.default_rng(seed)


CASES = {
    "same_shape": (same_shape, (_rng(1).normal(size=5), 4), (0,)),
    "scalar_broadcast": (scalar_broadcast, (_rng(2).normal(size=4), 0.7, 3), (0, 1)),
    "column_against_matrix": (column_against_matrix, (_rng(3).normal(size=(3, 4)), 3), (0,)),
    "grown": (grown, (_rng(4).normal(size=2), 4), (0,)),
    "shifted": (shifted, (_rng(5).normal(size=5), 3), (0,)),
}


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("case", sorted(CASES))
def test_gradients(case, jit):
    f, args, wrt = CASES[case]
    check_grad(f, args, wrt=wrt, jit=jit)


@pytest.mark.parametrize("case", sorted(CASES))
def test_second_order(case):
    f, args, wrt = CASES[case]
    check_hvp(f, args, wrt)


def _whole_pushes(src):
    """The values pushed whole on list tapes (``_tape_t.append(t)``, a copy of ``t``)."""
    return re.findall(r"^\s*_tape_\w+\.append\((?!shape_stand_in)(.*)\)\s*$", src, re.M)


def _stand_ins(src):
    return re.findall(r"^\s*_tape_\w+\.append\(shape_stand_in\(", src, re.M)


#: the values each case's adjoint reads for more than their shape: only these are pushed
#: whole (before: every temporary and the state again, e.g. same_shape's ``y, _t2, _t,
#: k2, k1, _t5, _t4, y, _t3``)
NEEDED = {"same_shape": ["y", "_t"], "scalar_broadcast": ["y", "_t2"],
          "column_against_matrix": ["_t4"], "grown": ["y", "z"], "shifted": []}


@pytest.mark.parametrize("case", sorted(CASES))
def test_only_values_read_are_stored_whole(case):
    f, args, wrt = CASES[case]
    src = sweeps(f, *args, wrt=wrt)
    assert _whole_pushes(src) == NEEDED[case], src


@pytest.mark.parametrize("case", ["same_shape", "scalar_broadcast"])
def test_argument_shaped_temporaries_take_no_tape(case):
    """Every temporary read only for its shape has an argument's shape: read from it."""
    f, args, wrt = CASES[case]
    src = sweeps(f, *args, wrt=wrt)
    assert not _stand_ins(src) and "only the shape is read" in src, src


@pytest.mark.parametrize("case", ["column_against_matrix", "grown", "shifted"])
def test_other_shapes_are_stored_as_stand_ins(case):
    """The ``(n, 1)`` column, a state of a shape no argument has: stand-ins of the
    shape, one zero's memory each; the column's adjoint sums to its shape."""
    f, args, wrt = CASES[case]
    src = sweeps(f, *args, wrt=wrt)
    assert _stand_ins(src), src
    if case == "column_against_matrix":
        assert re.search(r"unbroadcast\([^,]+, _b_\w*\)", src), src
    stand = shape_stand_in(np.zeros((1000, 3)))
    assert stand.base is not None and stand.base.nbytes == 8 and stand.strides == (0, 0)


@pytest.mark.parametrize("alloc, cls", [
    ("np.zeros(n)", "x"), ("np.empty(len(x))", "x"), ("np.ones(a.shape)", "a"),
    ("np.zeros((a.shape[0], m))", "a"), ("np.zeros((m, a.shape[0]))", None),
    ("np.zeros(n - 1)", None), ("np.zeros(a.shape[0])", None), ("np.zeros(k)", None)])
def test_allocation_classes(alloc, cls):
    """An allocation of an argument's extents, in order, has that argument's shape class
    (through names bound only to an extent); anything else has none."""
    src = f"""
n = x.shape[0]
m = a.shape[1]
k = x.shape[0]
k = k + 1
z = {alloc}
"""
    body = ast.parse(src).body
    shapes = ShapeClasses(body, {"x": 1, "a": 2, "n": 0, "m": 0, "k": 0}, {"np": np, "len": len},
                          ["x", "a"])
    assert shapes.of("z") == cls
