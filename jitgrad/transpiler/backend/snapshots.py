"""Snapshots: the copies a variant pushes on list tapes go to memory kept between calls.

A list tape of array copies (``Adjoint.snapshots``) allocated each copy on every call.
Where every push of a tape runs before any of its pops (each top-level statement pushing
it precedes each one popping it: the forward sweep pushes, the adjoint sweep pops) and
the tape is used for nothing else, its copies are written one after the other into a
store the caller keeps (``kernels/snapshots.py``), at a cursor that only counts up during
a call: a view a pop hands out is never written again in that call.  The call ends by
growing the store to what it copied (``ws_grow``), for the next call.  Tapes pushed again
after a pop (a checkpointed region rerun in the adjoint sweep, once per outer trip) keep
their fresh copies: with a cursor that never goes back, their copies would all stay live.

Before::                                  After::

    _tape_u = []                              _ws_snaps = _ws[0]
    for t in range(n):                        _ws_snapsn = 0
        _tape_u.append(snapshot(u))           _tape_u = []
        u[:] = np.sin(u)                      for t in range(n):
    ...                                           _tape_u.append(ws_snapshot(_ws_snaps,
    for t in range(n - 1, -1, -1):                                           _ws_snapsn, u))
        u = _tape_u.pop()                         _ws_snapsn += u.size
    return (value, grads)                         u[:] = np.sin(u)
                                              ...
                                              _ws_snaps = ws_grow(_ws_snaps, _ws_snapsn)
                                              return (value, grads, (_ws_snaps,))
"""

from __future__ import annotations

import ast

from ..front.desugar import const, name
from ..ir import Snapshots
from ..nodes import clone, own_expressions, rewrite_blocks, walk_stmts
from ..notes import PUSH


def keep_snapshots(body: list[ast.stmt], snaps: Snapshots) -> list[ast.stmt] | None:
    """``body`` (ending in its return) with the copies of the tapes that qualify (module
    docstring) written into ``snaps.store``, the cursor set to 0 first and the store grown
    before the return; None where no tape qualifies."""
    kept = _qualifying(body, snaps)
    if not kept:
        return None
    out = _rewrite(body, kept, snaps)
    grow = ast.Assign(targets=[name(snaps.store, True)], value=ast.Call(
        func=name(snaps.grow), args=[name(snaps.store), name(snaps.cursor)], keywords=[]))
    return [ast.Assign(targets=[name(snaps.cursor, True)], value=const(0)), *out[:-1], grow,
            out[-1]]


def _qualifying(body: list[ast.stmt], snaps: Snapshots) -> set[str]:
    """The tapes pushed only with copies, popped only into names, and pushed by top-level
    statements that all come before those that pop them."""
    tapes = set(snaps.tapes)
    pushed: dict[str, int] = {}  # the last top-level statement pushing each
    popped: dict[str, int] = {}  # the first popping each
    bad: set[str] = set()
    for k, top in enumerate(body):
        for st in walk_stmts([top]):
            allowed: set[int] = set()
            t = _push(st, snaps)
            if t is not None:
                pushed[t] = k
                allowed.add(id(st.value.func.value))
            t = _pop(st)
            if t is not None:
                popped.setdefault(t, k)
                allowed.add(id(st.value.func.value))
            if st is top and _declares(st, tapes):
                allowed.add(id(st.targets[0]))
            for n in own_expressions(st):
                if isinstance(n, ast.Name) and n.id in tapes and id(n) not in allowed:
                    bad.add(n.id)
    return {t for t in pushed if t in tapes and t not in bad
            and pushed[t] < popped.get(t, len(body))}


def _push(st: ast.stmt, snaps: Snapshots) -> str | None:
    """``t`` where ``st`` is ``t.append(snapshot(x))``."""
    if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) \
            and _method(st.value, "append") and len(st.value.args) == 1:
        arg = st.value.args[0]
        if isinstance(arg, ast.Call) and isinstance(arg.func, ast.Name) \
                and arg.func.id == snaps.snapshot and len(arg.args) == 1 and not arg.keywords:
            return st.value.func.value.id
    return None


def _pop(st: ast.stmt) -> str | None:
    """``t`` where ``st`` is ``x = t.pop()``."""
    if isinstance(st, ast.Assign) and len(st.targets) == 1 \
            and isinstance(st.targets[0], ast.Name) and isinstance(st.value, ast.Call) \
            and _method(st.value, "pop") and not st.value.args:
        return st.value.func.value.id
    return None


def _method(call: ast.Call, attr: str) -> bool:
    f = call.func
    return isinstance(f, ast.Attribute) and f.attr == attr and isinstance(f.value, ast.Name) \
        and not call.keywords


def _declares(st: ast.stmt, tapes: set[str]) -> bool:
    """Is ``st`` ``t = []`` for one of ``tapes``?"""
    return isinstance(st, ast.Assign) and len(st.targets) == 1 \
        and isinstance(st.targets[0], ast.Name) and st.targets[0].id in tapes \
        and isinstance(st.value, ast.List) and not st.value.elts


def _rewrite(stmts: list[ast.stmt], kept: set[str], snaps: Snapshots) -> list[ast.stmt]:
    """``stmts`` with the pushes of ``kept`` tapes into the store; compound statements
    holding one are copied (the variants share the IR's statements)."""
    def push(st: ast.stmt) -> list[ast.stmt] | None:
        t = _push(st, snaps)
        if t not in kept:
            return None
        x = clone(st.value.args[0].args[0])
        into = ast.Expr(value=ast.Call(
            func=ast.Attribute(value=name(t), attr="append", ctx=ast.Load()),
            args=[ast.Call(func=name(snaps.helper), args=[
                name(snaps.store), name(snaps.cursor), x], keywords=[])], keywords=[]))
        step = ast.AugAssign(target=name(snaps.cursor, True), op=ast.Add(),
                             value=ast.Attribute(value=clone(x), attr="size", ctx=ast.Load()))
        for p in (into, step):
            PUSH.set(p, True)
        return [into, step]

    return rewrite_blocks(stmts, push)


__all__ = ["keep_snapshots"]
