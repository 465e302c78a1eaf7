"""``fold_scalar_adjoints`` and calls that write an argument: a scalar adjoint's term that
reads a view of an array must not be moved past a call that writes into that array
(``restore_into(a, snap)``, ``np.copyto``, a mutating method, an unknown function), even
inside a loop, where the statement is no bare call; pure calls and list pops leave the
fold as it was.  Each case runs the block before and after the fold and compares.

End to end, user code cannot write an array through a call (jitgrad refuses it: last
test), so only generated code's copies reach the fold; a checkpointed loop whose reverse
restores a buffer that a view read after the loop is checked against central
differences in both modes."""

from __future__ import annotations

import ast

import numpy as np
import pytest
from gradcheck import check_grad

import jitgrad as jg
from jitgrad.errors import TransformError
from jitgrad.kernels.helpers import restore_into
from jitgrad.transpiler.analysis.dataflow import Dataflow
from jitgrad.transpiler.backend.optimize import call_writes, fold_scalar_adjoints


def zero_it(a):
    """A function the primitive table does not know, writing its argument."""
    a[:] = 0.0


ENV = {"np": np, "restore_into": restore_into, "zero_it": zero_it}

BLOCK = """
ds = 0.0
v = a[::1]
ds += g * v[1]
for j in range(2):
    {write}
ds += h * v[2]
"""


def _fold(src: str) -> tuple[list[ast.stmt], list[ast.stmt]]:
    body = ast.parse(src).body
    folded = fold_scalar_adjoints(ast.parse(src).body, {"ds"}, Dataflow(body, env=ENV))
    return body, folded


def _run(stmts: list[ast.stmt]) -> float:
    scope = dict(ENV, a=np.array([1.0, 2.0, 3.0]), snap=np.array([5.0, 7.0, 11.0]),
                 g=0.5, h=0.25, xs=[1.0, 2.0])
    exec(compile(ast.fix_missing_locations(ast.Module(body=stmts, type_ignores=[])),
                 "<block>", "exec"), scope)
    return scope["ds"]


@pytest.mark.parametrize("write", ["restore_into(a, snap)", "np.copyto(a, snap)",
                                   "a.fill(0.0)", "zero_it(a)", "t = zero_it(v)",
                                   "np.multiply(snap, 2.0, out=a)"])
def test_a_call_writing_the_viewed_array_keeps_the_term(write):
    body, folded = _fold(BLOCK.format(write=write))
    assert _run(folded) == _run(body)
    assert ast.unparse(folded[-1]) == "ds += h * v[2]"


@pytest.mark.parametrize("write", ["t = np.sin(a)", "t = a.sum()", "t = xs.pop()",
                                   "print(j)"])
def test_a_call_writing_nothing_viewed_still_folds(write):
    body, folded = _fold(BLOCK.format(write=write))
    assert _run(folded) == _run(body)
    last = ast.unparse(folded[-1])
    assert last == "ds = g * v[1] + h * v[2]", last


def test_a_list_pop_keeps_a_term_reading_the_list():
    src = "ds = 0.0\nds += g * xs[-1]\nfor j in range(1):\n    t = xs.pop()\nds += h\n"
    body, folded = _fold(src)
    assert _run(folded) == _run(body) == 0.5 * 2.0 + 0.25


def test_call_writes_by_the_table():
    def call(src):
        return call_writes(ast.parse(src).body[0].value, ENV)
    assert call("restore_into(a[1:], snap)") == {"a"}
    assert call("np.sin(a)") == set()
    assert call("np.sin(a, out=b)") == {"b"}
    assert call("a.sort()") == {"a"}
    assert call("zero_it(a, b[0], 3.0)") == {"a", "b"}
    assert call("print(a)") == set()


def view_after_checkpointed(w, s, T, k):
    """A checkpointed loop writing a buffer in place, a view of it read after the loop by
    a term of ``s``'s adjoint: the reverse sweep restores and recomputes the buffer."""
    r = s * s
    D = w * w
    for _ in jg.checkpointed(range(T), snapshots=k):
        for e in range(len(D)):
            D[e] = np.sin(D[e]) * s
    V = D[1:]
    r = r + np.sum(V * s) + V[0] * r
    return r


@pytest.mark.parametrize("jit", [False, True], ids=["nojit", "jit"])
def test_view_after_checkpointed_loop(jit):
    w, s = np.array([0.53, -0.61, -0.79, -0.41]), 0.84
    for T, k in [(3, 2), (5, 2), (1, 1)]:
        check_grad(view_after_checkpointed, (w, s, T, k), wrt=(0, 1), jit=jit, rtol=1e-5,
                   atol=1e-7, shared=True)


@pytest.mark.parametrize("jit", [False, True], ids=["nojit", "jit"])
def test_user_code_cannot_write_through_a_call(jit):
    def f(x, s):
        y = x * s
        np.copyto(y, x * x)
        return np.sum(y)
    with pytest.raises(TransformError, match="in place"):
        jg.value_and_grad(f, wrt=(0, 1), jit=jit)(np.ones(3), 0.5)
