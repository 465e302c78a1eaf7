"""Tape entries the same in every trip of a fused loop: computed and pushed in its first
trip only, read back from the tape in the others (issue 34: "a loop-invariant value is
stored at most once per trip of the loop it is invariant in").

In a fused loop (``backend/fuse.py``, ``notes.ONE_TRIP_TAPES``) each trip pops what it
pushed: every trip's pushes land on the same entries of the tape.  Where a tape's pushes
in the loop write, entry by entry, the same values in every trip, the first trip's
entries serve all trips: the later trips skip the push and what computes the value only
for it, and read the entry instead (GradBench gmm: ``math.exp(q[ik, j])`` per point,
component and coordinate, 1M calls at its full size, is made once per component and
coordinate, as the hand adjoint's ``eq = np.exp(q)``)::

    _new = True                                  (before the loop)
    for i in range(n):
        for j in range(d):                       for j in range(d):
            _t2 = q[j]                               if _new:
            _t = math.exp(_t2)                           _t2 = q[j]
            _tape[_tape_n] = _t                          _t = math.exp(_t2)
            _tape_n += 1                                 _tape[_tape_n] = _t
                                                     else:
                                                         _t = _tape[_tape_n]
                                                     _tape_n += 1
        ...                                      ...
                                                 _new = False     (the trip's last)

Preconditions, each checked (any doubt leaves the tape as it was): the loop is a ``for``
over ``range`` with no ``break`` or ``continue`` in it; every write of the tape in the
loop is a push of a name (or its reservation, ``tape = tape_reserve(...)``), each push
lies only in ``for`` loops over ``range`` (no branch), whose bounds are the same in every
trip (``_Trip.same``), so every trip pushes as many entries in the same order; the name
pushed is bound once in the loop, just before in the push's block, to a value the same in
every trip at that point (``_Trip.same``: constants, names not bound in the loop, indices
of the inner loops, names bound once and read nowhere before their binding in a trip,
elements of arrays the loop writes nowhere, under any name, and ``math`` functions of
those); nothing between the binding and the push reads the name.  What computes the
value moves into the first trip's branch only where nothing else in the loop reads it.
Not under ``parallel=True`` (threads run trips in any order).
"""

from __future__ import annotations

import ast
import builtins
import copy
import math
from collections.abc import Callable, Iterable
from typing import Any

from ..analysis.dataflow import (
    Dataflow,
    base_name,
    binds,
    binds_in,
    carried,
    loop_index,
    plain_binding,
)
from ..astutil import resolve
from ..naming import fresh_in
from ..nodes import clone, loaded_ids, own_expressions, rewrite_blocks, walk, walk_stmts
from ..notes import ONE_TRIP_TAPES, TAPED, is_prange
from .emit import comment

#: calls whose value depends on their arguments only (besides ``math``'s functions)
_PURE = frozenset({builtins.abs, builtins.min, builtins.max, builtins.float, builtins.int,
                   builtins.range})


def trip_memos(body: list[ast.stmt], tapes: set[str], shared: dict[str, str],
               taken: Callable[[], set[str]], env: dict[str, Any],
               is_array: Callable[[str], bool | None] | None = None) -> list[ast.stmt]:
    """``body`` with the pushes of each fused loop that are the same in every trip made in
    its first trip only (see the module docstring; ``taken()``: the names in use, for the
    first trip's flag, asked once a loop has one; ``is_array``: ``Dataflow``'s, the kinds
    where known).  Changed statements and the blocks holding them are copied (the
    variants share statements); ``body`` itself where nothing changes."""
    loops = [s for s in walk_stmts(body) if isinstance(s, ast.For) and ONE_TRIP_TAPES.get(s)]
    if not tapes or not loops:
        return body
    df = Dataflow(body, shared, is_array=is_array, env=env)
    new: dict[int, ast.stmt] = {}
    names: set[str] | None = None
    for loop in loops:
        if loop_index(loop) is None or is_prange(loop) or any(
                isinstance(x, (ast.Break, ast.Continue)) for x in walk_stmts(loop.body)):
            continue
        trip = _Trip(loop, df, env)
        sites = [site for t in sorted(tapes) for site in trip.memos(t)]
        if sites:
            names = taken() if names is None else names
            flag = fresh_in("_new_trip", names)
            new[id(loop)] = [ast.copy_location(_set(flag, True), loop),
                             _memoised(loop, sites, flag)]
    return body if not new else rewrite_blocks(body, lambda s: new.get(id(s)))


def _set(n: str, v: bool) -> ast.Assign:
    return ast.Assign(targets=[ast.Name(id=n, ctx=ast.Store())], value=ast.Constant(v))


class _Trip:
    """What is the same in every trip of one loop (see the module docstring)."""

    def __init__(self, loop: ast.For, df: Dataflow, env: dict[str, Any]) -> None:
        self.loop, self.env = loop, env
        self.written = df.written_in(loop)
        inner = [x for x in walk_stmts(loop.body) if isinstance(x, (ast.For, ast.While))]
        self.carried = set().union(carried(loop), *(carried(x) for x in inner))
        self.defs: dict[str, list[ast.stmt]] = {}
        for x in walk_stmts(loop.body):
            for n in binds(x):
                self.defs.setdefault(n, []).append(x)
        self.parents: dict[int, tuple[ast.stmt, list[ast.stmt]]] = {}
        self._place(loop, loop.body)
        self._known: dict[str, bool] = {}

    def _place(self, owner: ast.stmt, block: list[ast.stmt]) -> None:
        for s in block:
            self.parents[id(s)] = (owner, block)
            for f in ("body", "orelse"):
                sub = getattr(s, f, None)
                if isinstance(sub, list):
                    self._place(s, sub)

    def memos(self, tape: str) -> list[tuple[ast.Assign, list[ast.stmt]]]:
        """``(push, what computes it only for it)`` for each push of ``tape`` in the loop,
        where all of them may be made in the first trip only; else none."""
        if self.written is None:
            return []
        out = []
        for s in walk_stmts(self.loop.body):
            if tape not in binds(s, elements=True):
                continue
            if plain_binding(s) == tape and _reserve(s.value, tape):
                continue
            site = self._site(s, tape)
            if site is None:
                return []
            out.append(site)
        return out

    def _site(self, s: ast.stmt, tape: str) -> tuple[ast.Assign, list[ast.stmt]] | None:
        if not (TAPED.get(s) and isinstance(s, ast.Assign) and len(s.targets) == 1
                and isinstance(s.targets[0], ast.Subscript)
                and base_name(s.targets[0]) == tape and isinstance(s.value, ast.Name)):
            return None
        owner, block = self.parents[id(s)]
        while owner is not self.loop:  # only loops over ranges the same in every trip
            if loop_index(owner) is None or not self.same(owner.iter):
                return None
            owner = self.parents[id(owner)][0]
        v, at = s.value.id, _index(block, s)
        k = next((j for j in range(at - 1, -1, -1) if plain_binding(block[j]) == v), None)
        if k is None or not self.same(block[k].value) or any(
                v in loaded_ids(x) or v in binds_in([x]) for x in block[k + 1:at]):
            return None  # (the binding that reaches the push, the same in every trip)
        return s, self._feeding(block, k)

    def _feeding(self, block: list[ast.stmt], k: int) -> list[ast.stmt]:
        """``block[k]`` and the statements before it in ``block`` that compute values it
        alone reads (read nowhere else in the loop), in order: they move with the push."""
        moved = [block[k]]
        reads = {n: 0 for n in loaded_ids(block[k])}
        for x in reversed(block[:k]):
            n = plain_binding(x)
            if n is None or n not in reads or len(self.defs.get(n, [])) != 1:
                continue
            if _reads_of(n, walk_stmts(self.loop.body)) == _reads_of(n, moved):
                moved.insert(0, x)
                reads.update((m, 0) for m in loaded_ids(x))
        return moved

    def same(self, e: ast.expr) -> bool:
        """Does ``e`` take the same value in every trip at its place in the trip?"""
        for n in walk(e):
            if isinstance(n, ast.Call):
                fn = resolve(n.func, self.env)
                if fn is None and isinstance(n.func, ast.Name) and n.func.id not in self.env:
                    fn = getattr(builtins, n.func.id, None)  # (the namespace's builtins)
                if not (getattr(fn, "__module__", None) == "math" and callable(fn)
                        or fn in _PURE or fn is math.pi):
                    return False
            elif isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Load):
                b = base_name(n)  # (None: a shape query, ``a.shape[0]``, or a call's)
                if b is not None and b in self.written:
                    return False
            elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) \
                    and not self._same_name(n.id):
                return False
        return True

    def _same_name(self, n: str) -> bool:
        if n in self._known:
            return self._known[n]
        self._known[n] = False  # (a cycle is not the same)
        defs = self.defs.get(n)
        if n == self.loop.target.id:
            ok = False
        elif not defs:
            ok = True
        elif n in self.carried:
            ok = False
        elif all(isinstance(d, ast.For) for d in defs):  # inner loops' index, their ranges
            ok = all(loop_index(d) == n and self.same(d.iter) for d in defs)  # the same
        else:
            ok = len(defs) == 1 and plain_binding(defs[0]) == n and self.same(defs[0].value)
        self._known[n] = ok
        return ok


def _reads_of(n: str, stmts: Iterable[ast.stmt]) -> int:
    """How many times the statements themselves (not their nested blocks) read ``n``."""
    return sum(1 for y in stmts for m in own_expressions(y)
               if isinstance(m, ast.Name) and m.id == n and isinstance(m.ctx, ast.Load))


def _index(block: list[ast.stmt], s: ast.stmt) -> int:
    """The position of ``s`` (by identity) in ``block``."""
    return next(k for k, x in enumerate(block) if x is s)


def _reserve(v: ast.expr, tape: str) -> bool:
    """Is ``v`` the reservation ``tape_reserve(tape, ...)`` (the name its call has)?"""
    return isinstance(v, ast.Call) and isinstance(v.func, ast.Name) \
        and v.func.id.endswith("tape_reserve") and bool(v.args) \
        and isinstance(v.args[0], ast.Name) and v.args[0].id == tape


def _memoised(loop: ast.For, sites: list[tuple[ast.Assign, list[ast.stmt]]],
              flag: str) -> ast.For:
    """A copy of ``loop`` with each push of ``sites`` and what feeds it made under
    ``flag``, the entry read back otherwise, and ``flag`` cleared at the trip's end."""
    moved = {id(x) for _, feed in sites for x in feed}
    at = {id(s): (s, feed) for s, feed in sites}

    def fn(s: ast.stmt) -> list[ast.stmt] | None:
        if id(s) in moved:
            return []
        if id(s) not in at:
            return None
        push, feed = at[id(s)]
        pop = ast.Assign(targets=[ast.Name(id=push.value.id, ctx=ast.Store())],
                         value=clone(push.targets[0]))
        pop.value.ctx = ast.Load()
        ast.copy_location(pop, push)
        TAPED.set(pop, True)
        return [ast.copy_location(ast.If(test=ast.Name(id=flag, ctx=ast.Load()),
                                         body=[*feed, push], orelse=[pop]), push)]

    note = comment(f"{len(sites)} stored value(s) the same in every trip: made in the first")
    out = copy.copy(loop)  # (its notes too)
    out.body = [ast.copy_location(note, loop), *rewrite_blocks(loop.body, fn),
                ast.copy_location(_set(flag, False), loop)]
    return out


__all__ = ["trip_memos"]
