"""Adjoint moves: a zeroed adjoint buffer whose first update adds a whole array takes
that array's buffer instead (issue 34).

The reverse pass makes an adjoint zero, then adds what flows into it::

    dz = np.zeros_like(z)               (a zeroing: ``primitives.zeros_shaped_like``)
    ...                                 (nothing names ``dz`` or what shares its buffer)
    dz += dk                            (or ``dz += unbroadcast(dk, x)``)

which is a pass zeroing ``dz`` and a pass adding ``dk`` into it (or, once
``loop_buffers`` hoists the buffer, a copy ``dz[...] = dk``).  Where ``dk``'s buffer is
``dz``'s to take, the zeroing goes and the add becomes ``dz = dk``: no pass at all
(GradBench ode: a ``dz += dk`` per RK4 stage, and ``dy += unbroadcast(_g, x)`` of the
rebinding ``y = y + ...``).  Preconditions, each checked, else the statements stay:

- the add is the first statement after the zeroing, in its block, to name ``dz`` (the
  zeroing's buffer is new: nothing else reaches it), with no ``break``, ``continue``,
  ``return`` or ``raise`` before it (``loop_buffers.first_add``), and ``dz`` is no
  adjoint view nor has one (``ir.shared``): the zeroing's value is never seen;
- ``dk`` and ``z`` (and ``x``) are float arrays of one strict shape class
  (``ShapeClasses``, no shape assumed): ``dz + dk`` broadcasts nothing and
  ``unbroadcast`` returns ``dk`` itself;
- ``dk`` and every name that may share its buffer (``Dataflow.shares``) are bound in
  the body (no argument: generated code writes none);
- no other move in the body involves a name sharing the buffer (the dataflow is the
  body's before the moves: a second move would join names the first did not check);
- from the add on, the names that then share the buffer (``dz``, ``dk`` and its
  sharers) are never written under one of them while another is read at or after the
  write (``Dataflow.live_after``, a later trip counting), and none but ``dz`` is read
  after the block (``dataflow.writes`` lists what a statement writes: element writes,
  ``a += e``, arrays handed to a call that is not pure).

Only with the kinds known (``jit=True``: the shape classes), not with hooks (a hook
may keep what it is given) nor ``parallel=True``.
"""

from __future__ import annotations

import ast
from typing import Any

from ...kernels import helpers as H
from ...rules.primitives import zeros_shaped_like
from ..analysis import dataflow
from ..analysis.shape_classes import SCALAR, ShapeClasses
from ..astutil import resolve
from ..naming import names_in
from ..nodes import loaded_ids, rewrite_blocks
from .emit import comment
from .loop_buffers import first_add


def adjoint_moves(body: list[ast.stmt], shapes: ShapeClasses, flow: dataflow.Dataflow,
                  params: list[str], shared: dict[str, str], env: dict[str, Any]
                  ) -> list[ast.stmt]:
    """``body`` with each zeroing whose first add may take the added array's buffer
    replaced by that move (see the module docstring); ``body`` itself where none may."""
    views = set(shared) | set(shared.values())
    bound = dataflow.binds_in(body, elements=False)
    new: dict[int, list[ast.stmt]] = {}
    moved: set[str] = set()  # the names of the buffers moved so far
    for block in _blocks(body):
        for s in block:
            found = _move(s, block, shapes, flow, env, views, bound - set(params))
            # (``flow`` is the body's before any move: two moves of one buffer would each
            # miss the names the other joins to it, so a buffer moves once)
            if found is not None and not found[1] & moved:
                add, names = found
                moved |= names
                d = s.targets[0].id
                v = _moved_value(add.value, env)
                new[id(s)] = []
                move = ast.copy_location(ast.Assign(  # (new nodes: the variants share)
                    targets=[ast.Name(id=d, ctx=ast.Store())],
                    value=ast.Name(id=v.id, ctx=ast.Load())), add)
                new[id(add)] = [comment(f"{d} takes the buffer of {v.id}: nothing reads "
                                        f"{v.id} after {d} is written (no zeroing, no add)"),
                                move]
    return rewrite_blocks(body, lambda s: new.get(id(s))) if new else body


def _blocks(body: list[ast.stmt]) -> list[list[ast.stmt]]:
    """``body`` and every block nested in it."""
    out = [body]
    for s in body:
        for f in ("body", "orelse"):
            sub = getattr(s, f, None)
            if isinstance(sub, list) and sub:
                out += _blocks(sub)
    return out


def _move(s: ast.stmt, block: list[ast.stmt], shapes: ShapeClasses, flow: dataflow.Dataflow,
          env: dict[str, Any], views: set[str], bound: set[str]
          ) -> tuple[ast.AugAssign, set[str]] | None:
    """The add ``d += v`` that may take ``v``'s buffer where ``s`` is ``d = zeros_like(r)``
    (see the module docstring), with the names that then share the buffer; else None."""
    if not (isinstance(s, ast.Assign) and len(s.targets) == 1
            and isinstance(s.targets[0], ast.Name) and isinstance(s.value, ast.Call)
            and len(s.value.args) == 1 and not s.value.keywords
            and zeros_shaped_like(resolve(s.value.func, env))):
        return None
    d = s.targets[0].id
    if d in views:
        return None
    # (the zeroing's buffer is new: only a statement naming ``d`` reaches it)
    add = first_add(block, s, d, {d})
    v = None if add is None else _moved_value(add.value, env)
    if v is None or not _one_shape(shapes, [s.value.args[0], add.value, v]):
        return None
    group = (flow.shares(v.id) | flow.shares(d)) - {d}
    if not group <= bound:
        return None
    return (add, group | {d}) if _exclusive(block, add, d, group, flow, env) else None


def _moved_value(e: ast.expr, env: dict[str, Any]) -> ast.Name | None:
    """``v`` where ``e`` is ``v`` or ``unbroadcast(v, x)``, ``v`` a name."""
    if isinstance(e, ast.Call) and resolve(e.func, env) is H.unbroadcast \
            and len(e.args) == 2 and not e.keywords:
        e = e.args[0]
    return e if isinstance(e, ast.Name) else None


def _one_shape(shapes: ShapeClasses, exprs: list[ast.expr]) -> bool:
    """Are ``exprs`` (and the operands of an ``unbroadcast`` among them) arrays of one
    strict shape class that relies on no assumption?"""
    parts = [a for e in exprs for a in (e.args if isinstance(e, ast.Call) else [e])]
    got = {shapes.expr(a) for a in parts}
    if len(got) != 1:
        return False
    c = got.pop()
    return c not in (None, SCALAR) and not shapes.checks(c)


def _exclusive(block: list[ast.stmt], add: ast.stmt, d: str, group: set[str],
               flow: dataflow.Dataflow, env: dict[str, Any]) -> bool:
    """After ``add``, is the buffer ``d`` and ``group`` share never written under one name
    while another is read then or later, and is no name of ``group`` read after the
    block?"""
    names = group | {d}
    after = block[next(k for k, x in enumerate(block) if x is add) + 1:]
    if group & flow.live_after(block[-1]):
        return False
    for t in after:
        written = dataflow.writes(t, env)
        if None in written and names & names_in(t):
            return False
        hit = written & names
        if hit and (names - hit) & (loaded_ids(t) | flow.live_after(t)):
            return False
    return True


__all__ = ["adjoint_moves"]
