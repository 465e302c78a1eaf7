"""Accumulations into one element across a loop, kept in a scalar until the loop ends.

The adjoint of a pair loop (``for j in range(i + 1, n): ... pos[i, k] ... pos[j, k]``)
adds into ``dpos[i, k]`` in every iteration of the inner loop: a load and a store of
the same element per iteration, which the compiler cannot keep in a register while
``dpos[j, k]`` is written beside it (it cannot tell the two apart).  When the index
does not change in the loop and no other access in the loop can reach that element,
the sum is kept in a local and added once after the loop, as an expert writes it::

    for j in range(n - 1, _n_1 - 1, -1):        _dpos_i_0_sum = 0.0
        ...                                      for j in range(n - 1, _n_1 - 1, -1):
        dpos[j, 0] += _dt2              ->           ...
        dpos[i, 0] += _dt                            dpos[j, 0] += _dt2
                                                     _dpos_i_0_sum += _dt
                                                 if n > _n_1:
                                                     dpos[i, 0] += _dpos_i_0_sum

Only where it is exact: a straight-line loop body, an array that is a buffer of its
own (``gather.distinct_buffers``) and that the loop reads nowhere, an index made of
names the loop does not assign and constants that picks one element (an integer for each
axis of the array's known rank: ``dpos[i]`` of a 2-d ``dpos`` is a row, the adjoint of a
row read ``pos[i]``, and stays an in-place row sum), and every other write of the array in
the loop provably at another element: some component is a constant that differs, or
is the loop index against an enclosing loop's index ``i`` while the loop runs over
``range(i + c, ...)`` with ``c >= 1`` (or stops at ``i``).  Sums are formed in another
order: results agree to round-off.
"""

from __future__ import annotations

import ast
from typing import Any

from ..analysis import dataflow
from ..analysis.dependence import apart, offset_through
from ..front.desugar import assign, const, name
from ..naming import Namer
from ..nodes import clone, loaded_ids, stmts_by_depth, walk
from ..notes import COMMENT, carry
from .gather import _reversed_range, distinct_buffers


def promote_accumulations(stmts: list[ast.stmt], before: list[ast.stmt],
                          env: dict[str, Any], namer: Namer, shared: dict[str, str],
                          ndims: dict[str, int]) -> list[ast.stmt]:
    """``stmts`` (the adjoint sweep) with loop-invariant element accumulations of inner
    loops kept in scalars (see the module docstring); the input is not changed.
    ``ndims``: the arrays' known ranks (an index must pick one element: ``dpos[i]`` of a
    2-d ``dpos`` is a row, which a scalar cannot hold)."""
    wanted = {a for a in _invariant_targets(stmts) if a in ndims}
    if not wanted:
        return list(stmts)
    fresh = distinct_buffers([*before, *stmts], shared, env, wanted)
    fresh = {a: ndims[a] for a in fresh}
    return _rewrite(list(stmts), fresh, namer, set(), _Binds())


class _Binds:
    """Names bound, in the blocks around a point, to a value that still holds there (an
    integer offset of a name: ``_n_1 = i + 1``), for the range proof; what rebinds a name
    drops its own bind and those made from it (a reverse index keeps that linear)."""

    def __init__(self) -> None:
        self.values: dict[str, ast.expr] = {}
        self.readers: dict[str, set[str]] = {}

    def copy(self) -> _Binds:
        new = _Binds()
        new.values = dict(self.values)
        new.readers = {k: set(v) for k, v in self.readers.items()}
        return new

    def kill(self, n: str) -> None:
        self.values.pop(n, None)
        for k in self.readers.pop(n, ()):
            self.values.pop(k, None)

    def bind(self, n: str, v: ast.expr) -> None:
        if offset_through(v, None, {}) is None:  # only ``m``, ``m + c`` and ``m - c`` matter
            return
        self.values[n] = v
        for m in loaded_ids(v):
            self.readers.setdefault(m, set()).add(n)


def _rewrite(stmts: list[ast.stmt], fresh: dict[str, int], namer: Namer, outer: set[str],
             binds: _Binds) -> list[ast.stmt]:
    """``outer``: the indices of the enclosing reversed loops that run over non-negative
    values and are not rebound in their bodies; ``binds``: see ``_Binds``."""
    out: list[ast.stmt] = []
    binds = binds.copy()
    for s in stmts:
        stored = dataflow.binds_in([s])
        if isinstance(s, ast.For):
            rng = _reversed_range(s)
            inside = binds.copy()  # (the target among what the loop stores)
            for n in stored:
                inside.kill(n)
            i = s.target.id
            ok = (rng is not None and isinstance(rng[0], ast.Constant)
                  and type(rng[0].value) is int and rng[0].value >= 0
                  and i not in dataflow.binds_in(s.body))
            body = _rewrite(s.body, fresh, namer, outer | {i} if ok else outer - {i},
                            inside)
            new = ast.copy_location(ast.For(target=s.target, iter=s.iter, body=body,
                                            orelse=s.orelse), s)
            carry(s, new)
            out += _promote(new, fresh, namer, outer, binds.values) if rng is not None \
                else [new]
        else:
            out.append(s)
        for n in stored:  # what s rebinds no longer holds, nor what was made from it
            binds.kill(n)
        if (isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name)
                and offset_through(s.value, None, {}) is not None
                and s.targets[0].id not in loaded_ids(s.value)):
            binds.bind(s.targets[0].id, s.value)
    return out


def _promote(loop: ast.For, fresh, namer: Namer, outer: set[str],
             binds: dict[str, ast.expr]) -> list[ast.stmt]:
    body = [s for s in loop.body if not COMMENT.get(s)]
    if not body or any(not isinstance(s, (ast.Assign, ast.AugAssign)) for s in body):
        return [loop]
    j = loop.target.id
    assigned = dataflow.binds_in(body) | {j}  # arrays written too
    writes = [s for s in body if isinstance(s, (ast.Assign, ast.AugAssign))
              and isinstance(_target(s), ast.Subscript)]
    candidates: dict[str, list[ast.AugAssign]] = {}
    for s in writes:
        t = _target(s)
        if (isinstance(s, ast.AugAssign) and isinstance(s.op, ast.Add)
                and isinstance(t.value, ast.Name) and t.value.id in fresh
                and not (loaded_ids(t.slice) & assigned)
                and _element(t.slice, fresh[t.value.id])):
            # (an element, not a slice or a row: the register sum starts as the scalar 0.0)
            candidates.setdefault(ast.unparse(t), []).append(s)
    if not candidates:
        return [loop]
    lo, hi = _reversed_range(loop)
    chosen: dict[str, list[ast.AugAssign]] = {}
    for key, adds in candidates.items():
        arr = _target(adds[0]).value.id
        reads = [n for s in body for part in _reads_of(s) for n in walk(part)
                 if isinstance(n, ast.Name) and n.id == arr]
        if reads:
            continue  # the loop reads the array: its elements must be current
        idx = _components(_target(adds[0]).slice)
        mine = {id(a) for a in adds}
        others = [w for w in writes if id(w) not in mine and isinstance(_target(w).value,
                                                                       ast.Name)
                  and _target(w).value.id == arr]  # (one at this very index is not apart)
        if all(apart(idx, _components(_target(w).slice), j, lo, hi, outer, binds)
               for w in others):
            chosen[key] = adds
    if not chosen:
        return [loop]
    pre: list[ast.stmt] = []
    post: list[ast.stmt] = []
    replace: dict[int, ast.stmt] = {}
    for adds in chosen.values():
        t = _target(adds[0])
        acc = namer.fresh("_" + "_".join(  # ``_dpos_i_0_sum``
            [t.value.id, *(ast.unparse(c) for c in _components(t.slice)), "sum"])
            .replace(" ", "").replace("-", "m").replace("+", "p"))
        acc = acc if acc.isidentifier() else namer.fresh("_acc")
        pre.append(assign(acc, const(0.0)))
        for s in adds:
            replace[id(s)] = ast.copy_location(ast.AugAssign(
                target=name(acc, True), op=ast.Add(), value=s.value), s)
        post.append(ast.AugAssign(target=clone(t), op=ast.Add(), value=name(acc)))
    new_body = [replace.get(id(s), s) for s in loop.body]
    new = ast.copy_location(ast.For(target=loop.target, iter=loop.iter, body=new_body,
                                    orelse=[]), loop)
    carry(loop, new)
    ran = ast.Compare(left=clone(hi), ops=[ast.Gt()], comparators=[clone(lo)])
    return [*pre, new, ast.copy_location(ast.If(test=ran, body=post, orelse=[]), loop)]


def _invariant_targets(stmts: list[ast.stmt]) -> set[str]:
    """Arrays that a reversed loop's own statements accumulate into at an index without
    the loop's index (the candidates; a quick scan before any analysis)."""
    out: set[str] = set()
    for s in stmts_by_depth(stmts):
        if isinstance(s, ast.For) and _reversed_range(s) is not None:
            for x in s.body:
                if (isinstance(x, ast.AugAssign) and isinstance(x.target, ast.Subscript)
                        and isinstance(x.target.value, ast.Name)
                        and s.target.id not in loaded_ids(x.target.slice)):
                    out.add(x.target.value.id)
    return out


def _target(s: ast.stmt) -> ast.expr:
    return s.targets[0] if isinstance(s, ast.Assign) else s.target


def _reads_of(s: ast.stmt) -> list[ast.expr]:
    """The expressions a statement reads (a target's index, not its base)."""
    t = _target(s)
    parts: list[ast.expr] = [s.value]
    if isinstance(t, ast.Subscript):
        parts.append(t.slice)
    return parts


def _components(idx: ast.expr) -> list[ast.expr]:
    return list(idx.elts) if isinstance(idx, ast.Tuple) else [idx]


def _element(idx: ast.expr, ndim: int) -> bool:
    """Does ``idx`` pick one element of an ``ndim``-d array (one integer per axis)?"""
    parts = _components(idx)
    return len(parts) == ndim and not any(
        isinstance(c, (ast.Slice, ast.Tuple, ast.List, ast.Starred))
        or (isinstance(c, ast.Constant) and type(c.value) is not int) for c in parts)


__all__ = ["promote_accumulations"]
