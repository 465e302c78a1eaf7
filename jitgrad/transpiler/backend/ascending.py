"""Reversed loops whose iterations are independent run in ascending order.

The adjoint sweep runs a loop's adjoint backwards, ``for j in range(hi - 1, lo - 1, -1)``.
Numba wraps a negative index on every element access (``a[j]`` reads ``a[j + len(a)]``
where ``j < 0``); on a descending range LLVM cannot prove ``j >= 0``, the select stays in
the loop and it is not vectorised: ``dx[j] += c * t[j]`` over 128 elements runs 4.5x
slower descending than ascending (llsq's adjoint, ``docs/performance.md``).  Where the
order of the iterations changes nothing, the loop runs ascending::

    for j in range(m - 1, -1, -1):           _tape_n -= max(m, 0)
        _tape_n -= 1                    ->   for j in range(m):
        v = _tape[_tape_n]                       v = _tape[_tape_n + j]
        dx[j] += c * v                           dx[j] += c * v

A tape the loop pops once per iteration, at the top level of its body, is read at the
iteration's own slot of the serial layout (``slots.slot_tapes``: the cursor moves back by
the trip count first), so the tape is laid out as before and the forward loop is
untouched.  Preconditions, checked on the rewritten loop (``ascending``):

- it is a serial loop over ``range(hi - 1, lo - 1, -1)`` (not prange), without
  ``continue`` (an iteration that skipped its pop would read the next one's slot);
- its iterations are independent (``dependence.independent``): every element it writes
  is the iteration's own and nothing else reads it, every name it binds is local to an
  iteration and the index is not read after the loop, nothing runs for its effect, no
  ``break``;
- it makes no sum: not of a scalar (``s += e``, a tape cursor it still moves), nor into
  an element several iterations share: the order of a floating-point sum changes its
  rounding.  So the values are those of the descending loop, bit for bit (where two
  iterations would raise an ``IndexError``, the other one is reported first).

Where it does not apply: a loop with a sum (``da += -g``, lse's adjoint), a tape popped
under an ``if`` or in an inner loop whose trip count the body changes, a loop over
anything but a unit-step range.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from ..analysis import dataflow
from ..analysis.dependence import Names, independent
from ..front.desugar import name
from ..nodes import clone, rewrite_blocks, this_loop, walk_stmts
from ..notes import is_prange
from . import emit
from .gather import _reversed_range
from .slots import slot_tapes

NOTE = "iterations over {i} are independent: run ascending (so that it vectorises)"


def ascending(body: list[ast.stmt], flow_of: Callable[[list[ast.stmt]], dataflow.Dataflow],
              env: dict[str, Any]) -> list[ast.stmt]:
    """``body`` with each reversed loop that the preconditions (module docstring) admit run
    ascending; the loops and blocks on the way copied, the rest shared; ``body`` itself
    where none is.  ``flow_of(body)``: the body's ``Dataflow`` (made once, when a loop
    is found)."""
    flow: dataflow.Dataflow | None = None

    def visit(s: ast.stmt) -> list[ast.stmt] | None:
        nonlocal flow
        if not isinstance(s, ast.For) or is_prange(s) or _reversed_range(s) is None \
                or _carries(s):  # (refused by ``_flipped`` too: known before the clone)
            return None
        flow = flow or flow_of(body)
        return _flipped(s, Names.of(flow, s), env)

    return rewrite_blocks(body, visit)


def _flipped(loop: ast.For, names: Names, env: dict[str, Any]) -> list[ast.stmt] | None:
    """The statements that run ``loop`` ascending (its tape pops slotted), or None where
    the preconditions do not hold."""
    if any(isinstance(s, ast.Continue) for s in this_loop(loop.body)):
        return None  # (an iteration that skips its pop would move the slots)
    new = clone(loop)
    block: list[ast.stmt] = [new]
    slot_tapes(block, new, env, _no_global)  # (pops at the top level: read at slots)
    verdict = independent(new, names)
    if not verdict.ok or verdict.sums or verdict.collisions:
        return None
    lo, hi = _reversed_range(loop)
    args = [hi] if isinstance(lo, ast.Constant) and lo.value == 0 else [lo, hi]
    new.iter = ast.Call(func=name("range"), args=args, keywords=[])
    k = block.index(new)
    block.insert(k, emit.comment(NOTE.format(i=loop.target.id)))
    return block


def _carries(loop: ast.For) -> bool:
    """Does an iteration of ``loop`` read a name an earlier one bound (``carried``), other
    than a cursor moved by one (the only bindings slotting removes)?  ``independent`` then
    refuses the slotted loop: such a name is a sum, or carried and not known zero
    (``Names.of`` knows no scalar zero before a loop)."""
    moved = {s.target.id for s in walk_stmts(loop.body) if isinstance(s, ast.AugAssign)
             and isinstance(s.target, ast.Name) and isinstance(s.value, ast.Constant)
             and s.value.value == 1}
    return bool(dataflow.carried(loop) - moved)


def _no_global(want: str, obj: Any) -> str:
    """Slotting a reversed loop's pops reserves no room (only a forward loop's pushes do)."""
    raise AssertionError(f"a reversed loop's slots need no {want}")


__all__ = ["ascending"]
