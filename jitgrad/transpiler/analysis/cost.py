"""Store or recompute: what a value the adjoint needs costs to compute again, and the choice.

The reverse pass (``modes/tapes.py``) asks, for each value an adjoint statement reads
that may have changed by then, for a ``Plan``: the value's expression rebuilt from
operands the adjoint sweep still has (arrays never written after it, restored or
loop-invariant scalars, the loop index), with the intermediate values it names on the
way.  ``decide`` prices the plan from the primitive table (``Primitive.cost``: an add
1, a division 4, ``sqrt`` 6, ``exp`` 20) and recomputes when that costs no more than a
tape round trip (``TAPE_COST``, 16), stores otherwise; ``note`` is the comment that
says so in the generated code.

>>> plan = Plan(ast.parse("np.sqrt(_t9)").body[0].value, [("dx", None)], 15.0,
...             {"pos", "eps"}, ops=10)
>>> note([decide("_t8", plan)], stored=False)
['recomputed dx, _t8 from eps, pos (cost 15 <= tape 16)']
>>> note([decide("t", Plan(None, why="math.sin costs 20 > tape 16"))], stored=True)
['stored t: math.sin costs 20 > tape 16']
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from ...rules.primitives import TAPE_COST, cost
from ..astutil import resolve
from ..naming import is_generated
from .analyse import BINOPS, UNARYOPS

#: reading an element of an array nothing writes any more: the adjoint reads the same
#: elements anyway (they are operands still available, like the loop index)
READ_COST = 0.0

__all__ = ["READ_COST", "TAPE_COST", "Decision", "Plan", "decide", "note", "op_cost"]


@dataclass
class Plan:
    """How to get a value again in the adjoint sweep.

    ``expr`` gives the value (None: it cannot be recomputed, ``why`` says why); ``steps``
    are the intermediate names restored first, in order (``(name, expression)``); ``cost``
    is the work of ``steps`` and ``expr`` together; ``leaves`` the names they read that
    the adjoint still has (arrays, scalars, indices); ``dearest`` the priciest operation.
    """

    expr: ast.expr | None = None
    steps: list[tuple[str, ast.expr | None]] = field(default_factory=list)
    cost: float = 0.0
    leaves: set[str] = field(default_factory=set)
    why: str = ""
    dearest: tuple[float, str] = (0.0, "")
    #: some intermediates are needed by earlier lines too: ``cost`` counts only what
    #: they cost beyond the tape they save there
    shared: bool = False

    #: how many operations (an element read is none)
    ops: int = 0
    #: (id of a loop body, index in it, array): the arrays it reads that are kept once per
    #: trip of that loop after that statement (``ReadPolicy.kept``)
    kept: set[tuple[int, int, str]] = field(default_factory=set)

    def charge(self, c: float, what: str) -> None:
        """Add one operation of cost ``c`` (``what`` names it for the note)."""
        self.cost += c
        self.ops += 1 if what or c else 0
        if c > self.dearest[0]:
            self.dearest = (c, what)


@dataclass(frozen=True)
class Decision:
    """Whether ``name`` is stored on a tape or recomputed in the adjoint, and why."""

    name: str
    stored: bool
    why: str
    plan: Plan | None = None

    @property
    def quiet(self) -> bool:
        """A recomputation not worth a comment: a re-read, index arithmetic, one operator."""
        return not self.stored and self.plan is not None and self.plan.ops <= 1

    @property
    def reason(self) -> str:
        """``why`` without the name it is about (``z is rebound later``: ``rebound later``)."""
        for head in (f"{self.name} is ", f"{self.name} "):
            if self.why.startswith(head):
                return self.why[len(head):]
        return self.why


def op_cost(v: ast.expr, env: dict) -> tuple[float | None, str]:
    """The cost of the operation at the top of ``v`` (an operator or a scalar call) and its
    name; None where the primitive table gives none."""
    if isinstance(v, ast.BinOp):
        fn = BINOPS.get(type(v.op))
    elif isinstance(v, ast.UnaryOp) and isinstance(v.op, ast.Not):
        return 1.0, "not"
    elif isinstance(v, ast.UnaryOp):
        fn = UNARYOPS.get(type(v.op))
    elif isinstance(v, ast.Call):
        fn = resolve(v.func, env)
    else:
        return 0.0, ""
    what = ast.unparse(v.func) if isinstance(v, ast.Call) else type(v.op).__name__.lower()
    return (None if fn is None else cost(fn)), what


def decide(name: str, plan: Plan) -> Decision:
    """Recompute ``name`` when its plan exists and costs no more than a tape round trip."""
    if plan.expr is None:
        return Decision(name, True, plan.why or "it cannot be recomputed here")
    if plan.cost > TAPE_COST:
        c, what = plan.dearest
        head = f"{what} costs {c:g}, in all " if what and c < plan.cost else \
            (f"{what} " if what else "")
        return Decision(name, True, f"{head}costs {plan.cost:g} > tape {TAPE_COST:g}", plan)
    leaves = ", ".join(sorted(plan.leaves)) or "constants"
    rest = ", the rest shared with earlier lines" if plan.shared else ""
    return Decision(name, False, f"from {leaves} (cost {plan.cost:g} <= tape {TAPE_COST:g}"
                    f"{rest})", plan)


def note(decisions: list[Decision], stored: bool) -> list[str]:
    """The comment lines for the decisions of one statement (its stored or its recomputed
    values): one per reason for what is stored, one per recomputed value; none for
    re-reads and single operators."""
    ds = [d for d in decisions if d.stored == stored and not d.quiet]
    if stored:  # one clause per reason: ``stored a, b: rebound later``
        by: dict[str, list[str]] = {}
        for d in ds:
            by.setdefault(d.reason, []).append(d.name)
        return ["stored " + "; ".join(f"{', '.join(ns)}: {r}" for r, ns in by.items())] \
            if by else []
    lines = []
    for d in ds:
        named = [m for m, _ in d.plan.steps if not is_generated(m)] if d.plan else []
        if len(named) > 4:  # a whole chain: say how long, not every name
            lines.append(f"recomputed {d.name} (and {len(d.plan.steps)} values on the way) "
                         f"{d.why}")
        else:
            lines.append(f"recomputed {', '.join([*named, d.name])} {d.why}")
    return lines
