"""Integer counters the adjoint steps back instead of storing.

A counter ``idx = idx + 1`` read in a loop (``l[idx]``, packing a triangle or walking a
sparse row) changes on every trip, so a read of it in the adjoint would need it stored
once per trip: a tape as long as the loop nest.  Integer steps are exactly invertible,
so the adjoint sweep can instead give the counter back by running its steps backwards
(``idx = idx - 1`` at the reverse of each step), with its value stored once, after the
loop, and given back before the reversed loop.  The adjoint then finds the counter, at
the reverse of every statement of the loop, as the forward sweep had it there.

``Counters.find`` chooses, per step, its region: the outermost loop around it in which
every binding of the counter is such a step (a constant, or a name nothing binds).  It
holds only where the reverse sweep runs the region's statements once each, in reverse
order: ``for`` loops without ``break``, not parallel, no checkpointed region or
binomial loop anywhere in the function (their reruns would step the counter again).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

from ..analysis.analyse import Analysis
from ..front.desugar import assign, name
from ..nodes import walk, walk_stmts
from ..notes import CHECKPOINTED, END, POS, checkpoint, is_prange


@dataclass(frozen=True)
class Step:
    """``n = n + step`` (``op`` Add) or ``n = n - step`` (Sub)."""

    name: str
    op: ast.operator
    step: ast.expr

    def inverse(self) -> ast.stmt:
        """The statement that undoes it."""
        back = ast.Sub() if isinstance(self.op, ast.Add) else ast.Add()
        return assign(self.name, ast.BinOp(left=name(self.name), op=back, right=self.step))


class Counters:
    """The counters stepped back in the adjoint: their steps and their regions."""

    def __init__(self) -> None:
        #: id of a step statement -> the step
        self.steps: dict[int, Step] = {}
        #: id of a region loop -> (the loop, the counters stepped back in it)
        self.regions: dict[int, tuple[ast.For, set[str]]] = {}

    @classmethod
    def find(cls, body: list[ast.stmt], an: Analysis,
             has_break: Callable[[ast.stmt], bool]) -> Counters:
        """The counters of ``body`` (see the module docstring); none where any loop is
        checkpointed."""
        out = cls()
        stmts = list(walk_stmts(body))
        if any(checkpoint(s) or CHECKPOINTED.get(s) for s in stmts):
            return out
        for n, defs in an.defs.items():
            k = an.kind(n)
            if k.is_array or k.ndim != 0 or k.cls != "i":
                continue
            steps = {id(d): st for d in defs if (st := _step(d, n, an)) is not None}
            for d in defs:
                loop = _region(d, defs, steps, an, has_break) if id(d) in steps else None
                if loop is not None and _reads_inside(n, loop, steps, an):
                    out.steps[id(d)] = steps[id(d)]
                    out.regions.setdefault(id(loop), (loop, set()))[1].add(n)
        return out

    def stepped_back(self, n: str, s: ast.stmt) -> bool:
        """Does the adjoint of the simple statement ``s`` find ``n`` as the forward sweep
        had it at ``s``: is ``s`` in a region of ``n``?"""
        if isinstance(s, (ast.For, ast.While, ast.If)):
            return False  # (a header's values are wanted where its adjoint starts)
        return any(n in names and POS.get(loop) < POS.get(s) <= END.get(loop)
                   for loop, names in self.regions.values())

    def holds(self, n: str, d: ast.stmt, s: ast.stmt, an: Analysis) -> bool:
        """Does ``n`` hold, in the adjoint of ``s``, the value it had at ``d`` (before
        ``s``, in its trip): both in a region of ``n``, no step between them?"""
        return self.stepped_back(n, s) and self.stepped_back(n, d) \
            and not an.defined_between(n, d, s)

    def inverse(self, s: ast.stmt) -> ast.stmt | None:
        """The adjoint of a step: the statement undoing it (None: ``s`` is no step)."""
        st = self.steps.get(id(s))
        return None if st is None else st.inverse()

    def stored_at(self, loop: ast.stmt) -> list[str]:
        """The counters whose value at the end of ``loop`` is stored after it and given
        back before its reversed loop (``loop`` is their region)."""
        return sorted(self.regions.get(id(loop), (None, ()))[1])


def _step(d: ast.stmt, n: str, an: Analysis) -> Step | None:
    """``d`` as a step of ``n`` by an integer constant or by a name nothing binds."""
    if not (isinstance(d, ast.Assign) and isinstance(d.targets[0], ast.Name)
            and d.targets[0].id == n and isinstance(d.value, ast.BinOp)
            and isinstance(d.value.op, (ast.Add, ast.Sub))):
        return None
    left, right = d.value.left, d.value.right
    if isinstance(right, ast.Name) and right.id == n and isinstance(d.value.op, ast.Add):
        left, right = right, left  # c + n
    if not (isinstance(left, ast.Name) and left.id == n):
        return None
    const = isinstance(right, ast.Constant) and type(right.value) is int
    fixed = isinstance(right, ast.Name) and right.id != n and right.id not in an.defs \
        and an.kind(right.id).cls == "i" and an.kind(right.id).ndim == 0
    return Step(n, d.value.op, right) if const or fixed else None


def _region(d: ast.stmt, defs: list[ast.stmt], steps: dict[int, Step], an: Analysis,
            has_break: Callable[[ast.stmt], bool]) -> ast.For | None:
    """The outermost loop around ``d`` in which every binding of the counter is a step,
    where the reverse sweep runs each of its statements once, in reverse order."""
    loops = an.enclosing_loops(d)
    for k, loop in enumerate(loops):
        inside = [x for x in defs if POS.get(loop) <= POS.get(x) <= END.get(loop)]
        if not all(id(x) in steps for x in inside):
            continue
        plain = all(isinstance(x, ast.For) and not has_break(x) and not is_prange(x)
                    for x in [loop, *walk_stmts(loop.body)]
                    if isinstance(x, (ast.For, ast.While)))
        outer_ok = not any(is_prange(x) for x in loops[:k])
        return loop if plain and outer_ok else None
    return None


def _reads_inside(n: str, loop: ast.stmt, steps: dict[int, Step], an: Analysis,
                  depth: int = 0) -> bool:
    """Is ``n`` read in ``loop`` (other than by its steps) where the adjoint may need it:
    with an active value, or into an integer that is (``k = n % m``, then ``x[k]``)?"""
    for u in an.uses.get(n, ()):
        if not POS.get(loop) < POS.get(u) <= END.get(loop) or id(u) in steps:
            continue
        part = getattr(u, "test", None) or getattr(u, "iter", None) or u
        if {x.id for x in walk(part) if isinstance(x, ast.Name)} & an.active:
            return True
        t = u.targets[0] if isinstance(u, ast.Assign) else None
        if isinstance(t, ast.Name) and t.id != n and depth < 3 and an.kind(t.id).cls == "i" \
                and _reads_inside(t.id, loop, {}, an, depth + 1):
            return True
    return False


__all__ = ["Counters", "Step"]
