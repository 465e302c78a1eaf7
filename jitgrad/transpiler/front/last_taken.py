"""Loops whose last taken branch decides their result: a running maximum, an argmin.

In ``for j in range(...): if z[j] > m: m = z[j]`` the final ``m`` is ``z[j*]`` for the
last iteration ``j*`` whose test held (or ``m`` as it came in).  Reversed as written, the
loop stores every test's outcome on a tape and replays them all backwards to find that
one iteration.  This pass runs the tests on a copy of ``m`` and keeps the iteration's
index instead, then makes the assignment once, after the loop::

    for j in range(1, n):              _m = m
        if z[j] > m:                   _hit = False
            m = z[j]                   _j = 0
            k = j                      for j in range(1, n):
                                           if z[j] > _m:
                                               _m = z[j]
                                               _hit = True
                                               _j = j
                                       if _hit:
                                           m = z[_j]
                                           k = _j

The values are the same (the assigned expressions are evaluated once more, at ``_j``);
the loop itself carries no gradient any more, so it needs no tape, and ``m``'s adjoint
goes to ``z[_j]`` at once.  It applies only where that is exact: a ``range`` loop (not
``prange``, not ``jg.checkpointed``: the user chose its schedule) whose whole body is
one ``if`` without ``else``, assigning names from pure expressions (``front/purity.py``)
that read none of the names the branch assigns; a test that is pure too; the names the
test reads bound before the loop.
"""

from __future__ import annotations

import ast
from typing import Any

from ..analysis import dataflow
from ..naming import Namer
from ..nodes import clone, loaded_ids
from ..notes import CHECKPOINTED, is_prange
from .desugar import assign, const, name
from .inline import rename
from .purity import is_pure, resolve_name


def last_taken(body: list[ast.stmt], env: dict[str, Any], namer: Namer,
               params: list[str]) -> list[ast.stmt]:
    """``body`` with every qualifying loop (at any depth) rewritten as above."""
    return _block(body, env, namer, set(params))


def _block(stmts: list[ast.stmt], env, namer: Namer, bound: set[str]) -> list[ast.stmt]:
    """``stmts`` rewritten; ``bound``: names surely bound before the first of them."""
    out: list[ast.stmt] = []
    bound = set(bound)
    for s in stmts:
        new = _rewrite(s, env, namer, bound) if isinstance(s, ast.For) else None
        if new is not None:
            out += new
        else:
            for f in ("body", "orelse"):
                sub = getattr(s, f, None)
                if isinstance(sub, list) and sub and isinstance(sub[0], ast.stmt):
                    inner = bound | ({s.target.id} if isinstance(s, ast.For) and isinstance(
                        s.target, ast.Name) and f == "body" else set())
                    setattr(s, f, _block(sub, env, namer, inner))
            out.append(s)
        if isinstance(s, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            bound |= dataflow.binds_in([s])  # (statements of this block run in order)
    return out


def _rewrite(loop: ast.For, env, namer: Namer, bound: set[str]) -> list[ast.stmt] | None:
    """The rewritten ``loop`` (a list of statements), or None where it does not apply."""
    it = loop.iter
    if (is_prange(loop) or CHECKPOINTED.get(loop) or loop.orelse
            or not isinstance(loop.target, ast.Name)
            or not (isinstance(it, ast.Call) and resolve_name(it.func, env) is range)
            or len(loop.body) != 1 or not isinstance(loop.body[0], ast.If)):
        return None
    j = loop.target.id
    branch = loop.body[0]
    if branch.orelse or not branch.body or not is_pure(branch.test, env):
        return None
    targets: list[str] = []
    for s in branch.body:
        if not (isinstance(s, ast.Assign) and len(s.targets) == 1
                and isinstance(s.targets[0], ast.Name) and is_pure(s.value, env)):
            return None
        targets.append(s.targets[0].id)
    assigned = set(targets)
    if len(assigned) != len(targets) or j in assigned:
        return None
    if any(loaded_ids(s.value) & assigned for s in branch.body):
        return None  # a value that depends on the branch's own results
    read = loaded_ids(branch.test) & assigned
    if not read <= bound:
        return None  # the copy before the loop would read an unbound name
    copies = {n: namer.fresh("_" + n.lstrip("_")) for n in targets if n in read}
    hit, at = namer.fresh("_hit"), namer.fresh("_" + j.lstrip("_"))
    pre = [assign(copies[n], name(n)) for n in targets if n in copies]
    pre += [assign(hit, const(False)), assign(at, const(0))]
    inner = [rename(clone(s), copies) for s in branch.body if s.targets[0].id in copies]
    inner += [assign(hit, const(True)), assign(at, name(j))]
    test = rename(clone(branch.test), copies)
    loop.body = [ast.copy_location(ast.If(test=test, body=inner, orelse=[]), branch)]
    after = [ast.copy_location(ast.Assign(targets=[clone(s.targets[0])],
                                          value=rename(clone(s.value), {j: at})), s)
             for s in branch.body]
    post = ast.copy_location(ast.If(test=name(hit), body=after, orelse=[]), branch)
    return [ast.copy_location(s, loop) for s in pre] + [loop, post]


__all__ = ["last_taken"]
