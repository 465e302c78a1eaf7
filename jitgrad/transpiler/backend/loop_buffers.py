"""Adjoint buffers made inside loops, allocated once before the loop (issue 34).

The reverse pass zeroes the adjoint of an array made in a loop body at the top of each
trip of the reversed loop (``dz = np.zeros_like(z)``, the mark ``notes.ZEROING``): one
allocation per trip.  Where the buffer cannot outlive its trip and its shape is the same
in every trip of the outermost loop holding it, it is allocated at the first trip that
reaches it and zeroed in place in every trip::

    _new_dz = True                      (before the outermost loop)
    ...
        if _new_dz:                     (at the zeroing)
            dz = np.empty_like(z)
            _new_dz = False
        dz[...] = 0.0

(not before the loop: ``z`` may be bound only in the forward sweep's loop, so only
when the loop runs).  Where the first statement after the zeroing, in its block, to name
the buffer (or a name that may share it) adds a whole value to it, ``dz += e``, with
``e`` not reading it and no ``break``, ``continue``, ``return`` or ``raise`` between,
the zeroing goes and that statement sets it, ``dz[...] = e`` (one pass over the buffer
less, and a copy instead of an add: GradBench ode's ``dz += dk`` per stage, -7%;
the sums are the same but for the sign of a zero, ``0.0 + -0.0`` being ``0.0``).

An array the loop itself makes, ``z = np.empty(shape)`` or
``np.zeros(shape)`` (float64), is made once the same way where its shape is the same in
every trip (``Dataflow.invariant``), ``np.zeros``'s zeroed in place; where that shape is
non-negative integer constants (it cannot fail) it is made before the loop, and so is the
adjoint buffer made like it (one check of a flag per trip less).  A small array per
iteration (a 3-vector in a projection helper, GradBench ba) costs an allocation per trip
otherwise: 2.2x the gradient's time there.

Either cannot outlive its trip when no name that may share its buffer (``Dataflow.shares``,
itself included) is read after the outermost loop (so nothing returned or kept after the
sweep views it), and no other such name is read after the zeroing before being bound
again (``Dataflow.live_after``: a later trip counts, so a buffer appended to a list,
stored on a tape or kept under another name across trips is left alone).  Its shape is
the same when the loop never binds ``z`` (one array in every trip); the zeroing must
be the loop's only binding of ``dz``, and no trip may read ``dz`` before it (the hoisted
allocation would change what the first trip reads).  Not under ``prange``, nor with
``parallel=True`` (threads would share the buffer) or hooks (a hook may keep what it is
given).  A shape that varies per trip keeps its allocation (the forward sweep leaves the
last trip's array, so such a zeroing already raises ``SHAPE_MISMATCH``).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

import numpy as np

from ...rules.primitives import allocates_shape, fills_with, uninitialised
from ..analysis.dataflow import Dataflow, binds, plain_binding
from ..astutil import resolve
from ..naming import fresh_in, names_in
from ..nodes import clone, rewrite_blocks, walk_stmts, with_blocks
from ..notes import ZEROING, is_prange

_LOOPS = (ast.For, ast.While)


def loop_buffers(body: list[ast.stmt], shared: dict[str, str],
                 taken: set[str] | Callable[[], set[str]],
                 is_array: Callable[[str], bool | None] | None = None,
                 env: dict[str, Any] | None = None) -> list[ast.stmt]:
    """``body`` with each in-loop zeroing or allocation whose buffer stays in its trip, of
    a shape the same in every trip, allocated once and zeroed in place (see the module
    docstring; flags: new names, not in ``taken``, or what it returns: made only where
    needed; ``env``: the code's namespace).  The changed statements and the blocks
    holding them are copied (the variants share statements); ``body`` itself where
    nothing changes."""
    env = {"np": np} if env is None else env
    if not _zeroings_in_loops(body, env):
        return body
    df = Dataflow(body, shared, is_array=is_array, env=env)
    taken = set(taken() if callable(taken) else taken)
    new: dict[int, list[ast.stmt]] = {}
    before: dict[int, list[ast.stmt]] = {}
    early: set[str] = set()  # the buffers made before their loop
    for s, outer, block in _candidates(body, df, env):
        d = s.targets[0].id
        made = clone(s)
        zeroed = _zeroing(s) or fills_with(resolve(made.value.func, env)) == 0.0
        if _zeroing(s):
            made.value.func.attr = "empty_like"
            ZEROING.set(made.value, False)
        whole = ast.Subscript(value=_name(d), slice=ast.Constant(value=Ellipsis),
                              ctx=ast.Store())
        zero = [ast.Assign(targets=[whole], value=ast.Constant(0.0))] if zeroed else []
        add = first_add(block, s, d, df.shares(d)) if zeroed else None
        if add is not None:  # ``d[...] = 0.0`` ... ``d += e``: ``d[...] = e`` instead
            zero = []
            new[id(add)] = [ast.copy_location(ast.Assign(targets=[whole], value=add.value),
                                              add)]
        if _fixed(s, early):  # nothing to wait for: made before the loop
            early.add(d)
            new[id(s)] = [ast.copy_location(x, s) for x in zero]
            before.setdefault(id(outer), []).append(ast.copy_location(made, outer))
            continue
        flag = fresh_in("_new_" + d.lstrip("_"), taken, "_")
        taken.add(flag)
        first = ast.If(test=_name(flag), body=[made, _set(flag, False)], orelse=[])
        new[id(s)] = [ast.copy_location(x, s) for x in (first, *zero)]
        before.setdefault(id(outer), []).append(ast.copy_location(_set(flag, True), outer))
    return _replaced(body, new, before) if new else body


def first_add(block: list[ast.stmt], s: ast.stmt, d: str, sharing: set[str]
               ) -> ast.AugAssign | None:
    """The statement ``d += e`` of ``block`` after ``s`` that is the first to name ``d``
    or a name that may share its buffer (``sharing``), ``e`` naming none of them, with no
    ``break``, ``continue``, ``return`` or ``raise`` before it (it runs whenever ``s``
    does, so the zeroing's elements are all overwritten by ``e``'s, broadcast as ``+=``
    broadcasts them); None if there is none."""
    for x in block[next(k for k, y in enumerate(block) if y is s) + 1:]:
        if any(isinstance(y, _JUMPS) for y in walk_stmts([x])):
            return None
        if not names_in(x) & sharing:
            continue
        ok = isinstance(x, ast.AugAssign) and isinstance(x.op, ast.Add) \
            and isinstance(x.target, ast.Name) and x.target.id == d \
            and not names_in(x.value) & sharing
        return x if ok else None
    return None


_JUMPS = (ast.Break, ast.Continue, ast.Return, ast.Raise)


def _fixed(s: ast.Assign, early: set[str]) -> bool:
    """May ``s``'s buffer be made before its loop, whether or not the loop runs: an
    allocation of a shape of non-negative integer constants (it cannot fail), or the
    zeroing of a buffer like one of ``early`` (made before the loop already)."""
    v = s.value
    if _zeroing(s):
        return v.args[0].id in early
    dims = v.args[0].elts if isinstance(v.args[0], ast.Tuple) else [v.args[0]]
    return all(isinstance(e, ast.Constant) and type(e.value) is int and e.value >= 0
               for e in dims)


def _name(n: str, store: bool = False) -> ast.Name:
    return ast.Name(id=n, ctx=ast.Store() if store else ast.Load())


def _set(n: str, value: bool) -> ast.Assign:
    return ast.Assign(targets=[_name(n, True)], value=ast.Constant(value))


def _zeroings_in_loops(body: list[ast.stmt], env: dict[str, Any]) -> bool:
    """Is any marked zeroing or ``np.empty``/``np.zeros`` inside a loop of ``body`` (before
    the dataflow is built)?"""
    return any(x.__class__ is ast.Assign and x.value.__class__ is ast.Call
               and (_zeroing(x) or _allocation(x, env) is not None)
               for s in body if isinstance(s, _LOOPS) for x in walk_stmts(s.body))


def _candidates(body: list[ast.stmt], df: Dataflow, env: dict[str, Any]
                ) -> list[tuple[ast.Assign, ast.stmt, list[ast.stmt]]]:
    """The marked zeroings and the allocations of a fixed shape inside loops (not
    ``prange``) that may be hoisted, each with its outermost loop and its block."""
    out: list[tuple[ast.Assign, ast.stmt, list[ast.stmt]]] = []

    def visit(block: list[ast.stmt], outer: ast.stmt | None) -> None:
        for s in block:
            if outer is not None and s.__class__ is ast.Assign \
                    and (_zeroing(s) or _made(s, outer, df, env)) \
                    and _hoistable(s, outer, df, env):
                out.append((s, outer, block))
            if isinstance(s, _LOOPS) and is_prange(s):
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
            and isinstance(s.value, ast.Call) and isinstance(s.value.func, ast.Attribute)
            and len(s.value.args) == 1 and isinstance(s.value.args[0], ast.Name))


def _allocation(s: ast.stmt, env: dict[str, Any]) -> ast.Call | None:
    """The call of ``s`` where it is ``z = np.empty(shape)`` or ``z = np.zeros(shape)``
    (float64: no keyword; a fresh array made from a shape, ``allocates_shape``, that the
    table leaves ``uninitialised`` or fills with 0.0, the callee found through ``env``)."""
    if s.__class__ is not ast.Assign or s.value.__class__ is not ast.Call:
        return None
    v = s.value if len(s.targets) == 1 and isinstance(s.targets[0], ast.Name) else None
    if v is None or not isinstance(v.func, ast.Attribute) or len(v.args) != 1 or v.keywords:
        return None
    fn = resolve(v.func, env)
    return v if allocates_shape(fn) and (uninitialised(fn) or fills_with(fn) == 0.0) \
        else None


def _made(s: ast.stmt, outer: ast.stmt, df: Dataflow, env: dict[str, Any]) -> bool:
    """Is ``s`` an ``_allocation`` of a shape the same in every trip of ``outer``
    (``Dataflow.same_each_trip``: ``d = x.shape[0]`` bound in the loop counts)?"""
    v = _allocation(s, env)
    return v is not None and df.same_each_trip(outer, v.args[0])


def _one_shape(v: str, outer: ast.stmt, df: Dataflow, env: dict[str, Any],
               seen: frozenset[str] = frozenset()) -> bool:
    """Does ``v`` hold arrays of one shape in every trip of ``outer``: not bound there, or
    bound only by allocations of a shape the same in every trip (``_made``) or by plain
    ``v = w``, ``w`` a name of one shape (an inlined helper's result, ``qx = out``)?"""
    made = [x for x in walk_stmts(outer.body) if v in binds(x)]
    return v not in seen and all(
        _made(x, outer, df, env) or (plain_binding(x) == v and isinstance(x.value, ast.Name)
                                     and _one_shape(x.value.id, outer, df, env, seen | {v}))
        for x in made)


def _hoistable(s: ast.Assign, outer: ast.stmt, df: Dataflow, env: dict[str, Any]) -> bool:
    """May ``s``'s buffer be made once before ``outer`` (see the module docstring)?"""
    d = s.targets[0].id
    sharing = df.shares(d)
    # (a name kept across trips or after the loop that is read there only for its shape
    # may share it: the shape is the same in every trip)
    if sharing & df.live_after(outer, contents=True) \
            or (sharing - {d}) & df.live_after(s, contents=True):
        return False
    # (``d += e`` writes into ``d``'s array: not another binding)
    binding = [x for x in walk_stmts(outer.body)
               if d in binds(x) and not isinstance(x, ast.AugAssign)]
    if binding != [s] or d in df.carried(outer, contents=True):
        return False
    if not _zeroing(s):
        return True
    # one array, so one shape, in every trip: ``v`` not bound in the loop, or bound there
    # only by an allocation of a shape the same in every trip
    return _one_shape(s.value.args[0].id, outer, df, env)


def _replaced(block: list[ast.stmt], new: dict[int, list[ast.stmt]],
              before: dict[int, list[ast.stmt]]) -> list[ast.stmt]:
    """``block`` with the statements of ``new`` (by id) in place of theirs and those of
    ``before`` ahead of theirs, copying what holds them."""
    def fn(s: ast.stmt) -> list[ast.stmt] | None:
        if id(s) in new:
            return new[id(s)]
        if id(s) not in before:
            return None
        return [*before[id(s)], with_blocks(s, lambda b: rewrite_blocks(b, fn))]

    return rewrite_blocks(block, fn)


__all__ = ["first_add", "loop_buffers"]
