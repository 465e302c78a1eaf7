"""The reverse pass as components (``transpiler/modes``): the store-or-recompute planner
returns a decision record and writes no code; no function in ``modes/`` is over 80 lines;
and the function the record is taken from differentiates correctly (every element against
central differences, compiled and not)."""

import ast
import math
import pathlib

import numpy as np
import pytest
from gradcheck import check_grad

from jitgrad.transpiler.analysis.kinds import of_value
from jitgrad.transpiler.modes.recompute import Captures, Planner
from jitgrad.transpiler.modes.unit import Unit
from jitgrad.transpiler.pipeline import prepare, transform

MODES = pathlib.Path(__file__).resolve().parents[1] / "jitgrad" / "transpiler" / "modes"


def exp_and_cube(x, n):
    s = 0.0
    for i in range(n):
        t = math.exp(x[i])
        u = x[i] * 3.0
        s = s + t * t + u * u
    return s


ARGS = (np.linspace(0.1, 1.0, 4), 4)


def _planner():
    """The planner of ``exp_and_cube``'s analysed body, and that body's loop."""
    kinds = {p: of_value(a) for p, a in zip(("x", "n"), ARGS, strict=True)}
    u = transform(prepare(exp_and_cube), ["x"], kinds, until="analyse")
    unit = Unit(u.parsed, u.analysis, u.env, u.namer, u.params, u.wrt, u.returns)
    loop = next(s for s in u.body if isinstance(s, ast.For))
    return Planner(u.analysis, u.env, u.params, u.body, unit.has_break), loop, u.env


def _reading(loop: ast.For, n: str) -> ast.Assign:
    """The loop body's product ``n * n``."""
    return next(s for s in loop.body if isinstance(s, ast.Assign)
                and ast.unparse(s.value) == f"{n} * {n}")


def test_planner_stores_what_costs_more_than_a_tape():
    planner, loop, env = _planner()
    names = set(env)
    restored: set[str] = set()
    record = planner.plan(_reading(loop, "t"), {"t"}, set(), restored, False, set())
    assert isinstance(record, Captures) and record.joint is None
    (c,) = record.values
    assert (c.name, c.decision.stored, c.restores, c.next_trip) == ("t", True, True, False)
    assert c.decision.why == "math.exp costs 20 > tape 16"
    assert restored == {"t"}  # the adjoint will have it back under its name
    assert set(env) == names  # a record, not code: nothing made reachable


def test_planner_recomputes_a_cheap_value():
    planner, loop, _ = _planner()
    record = planner.plan(_reading(loop, "u"), {"u"}, set(), set(), False, set())
    (c,) = record.values
    assert not c.decision.stored and c.decision.plan.cost == 1.0
    assert ast.unparse(c.decision.plan.expr) == "x[i] * 3.0"


@pytest.mark.parametrize("jit", [False, True], ids=["nojit", "jit"])
def test_planned_function_gradient(jit):
    check_grad(exp_and_cube, ARGS, wrt=0, jit=jit)


def test_no_function_in_modes_over_80_lines():
    long = []
    for path in sorted(MODES.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > 80:
                    long.append(f"{path.name}:{node.lineno} {node.name} ({n} lines)")
    assert not long, long
