"""Adjoint buffers made inside loops, kept in workspace memory (issue 34).

The reverse pass zeroes the adjoint of an array made in a loop body at the top of each
trip of the reversed loop (``dz = np.zeros_like(z)``, the mark ``notes.ZEROING``): one
allocation per trip.  Where the buffer cannot outlive its trip, the zeroing becomes
``_ws_dz, dz = ws_zeros_like(_ws_dz, z)``: a zero view of float64 storage kept between
trips and calls (grown when a trip needs more, so a shape that varies per trip is fine;
a new array for other dtypes), passed through the workspace (``lower.with_workspace``).

It cannot outlive its trip when no name that may share its buffer (``Dataflow.shares``,
itself included) is read after the outermost loop holding the zeroing (so nothing
returned or kept after the sweep views the storage), and no other such name is read
after the zeroing before being bound again (``Dataflow.live_after``: a later trip counts,
so a buffer appended to a list, stored on a tape or kept under another name across
trips is left alone).  Not under ``prange``, nor with ``parallel=True`` (threads would
share the storage) or hooks (a hook may keep what it is given).
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable

from ..analysis.dataflow import Dataflow
from ..notes import ZEROING
from .workspace import zeroing

_LOOPS = (ast.For, ast.While)


def loop_buffers(body: list[ast.stmt], shared: dict[str, str], helper: Callable[[], str],
                 taken: set[str], is_array: Callable[[str], bool | None] | None = None
                 ) -> tuple[list[ast.stmt], list[str]]:
    """``body`` with each in-loop zeroing whose buffer stays in its trip made from kept
    storage, and the names of those stores (new names, not in ``taken``).  The changed
    statements and the blocks holding them are copied (the variants share statements)."""
    df = Dataflow(body, shared, is_array=is_array)
    found = _candidates(body, df)
    if not found:
        return body, []
    name = helper()
    stores: list[str] = []
    new: dict[int, ast.stmt] = {}
    for s in found:
        d = s.targets[0].id
        store = _fresh("_ws_" + d.lstrip("_"), taken)
        stores.append(store)
        made = zeroing(store, d, name, ast.Name(id=s.value.args[0].id, ctx=ast.Load()))
        new[id(s)] = ast.copy_location(made, s)
    return _replaced(body, new), stores


def _candidates(body: list[ast.stmt], df: Dataflow) -> list[ast.Assign]:
    """The marked zeroings inside loops (not ``prange``) whose buffer stays in its trip."""
    out: list[ast.Assign] = []

    def visit(block: list[ast.stmt], outer: ast.stmt | None) -> None:
        for s in block:
            if outer is not None and _zeroing(s) and _stays(s, outer, df):
                out.append(s)
            if isinstance(s, _LOOPS) and _prange(s):
                continue
            here = outer if outer is not None or not isinstance(s, _LOOPS) else s
            for f in ("body", "orelse"):
                sub = getattr(s, f, None)
                if isinstance(sub, list):
                    visit(sub, here)

    visit(body, None)
    return out


def _zeroing(s: ast.stmt) -> bool:
    """Is ``s`` the reverse pass's ``d = np.zeros_like(v)`` (its mark), ``v`` a name?"""
    return (isinstance(s, ast.Assign) and len(s.targets) == 1
            and isinstance(s.targets[0], ast.Name) and bool(ZEROING.get(s.value))
            and isinstance(s.value, ast.Call) and len(s.value.args) == 1
            and isinstance(s.value.args[0], ast.Name))


def _stays(s: ast.Assign, outer: ast.stmt, df: Dataflow) -> bool:
    """Does the buffer ``s`` makes stay in its trip (see the module docstring)?"""
    d = s.targets[0].id
    sharing = df.shares(d)
    return not (sharing & df.live_after(outer)) and not ((sharing - {d}) & df.live_after(s))


def _prange(loop: ast.stmt) -> bool:
    it = getattr(loop, "iter", None)
    return isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "prange"


def _fresh(base: str, taken: set[str]) -> str:
    n, k = base, 1
    while n in taken:
        k += 1
        n = f"{base}_{k}"
    taken.add(n)
    return n


def _replaced(block: list[ast.stmt], new: dict[int, ast.stmt]) -> list[ast.stmt]:
    """``block`` with the statements of ``new`` (by id) in place, copying what holds them."""
    out: list[ast.stmt] = []
    changed = False
    for s in block:
        t = new.get(id(s), s)
        if t is s:
            for f in ("body", "orelse"):
                sub = getattr(s, f, None)
                if isinstance(sub, list) and sub:
                    r = _replaced(sub, new)
                    if r is not sub:
                        t = copy.copy(t) if t is s else t
                        setattr(t, f, r)
        changed |= t is not s
        out.append(t)
    return out if changed else block


__all__ = ["loop_buffers"]
