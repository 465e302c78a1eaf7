"""Arrays the adjoint reads only for their shape: a stand-in of that shape lets them go.

The adjoint of ``_t = _t2 + b1`` sums its cotangent back to the shape of each operand,
``unbroadcast(_dt, _t2)``: it reads ``_t2`` only for its shape (and dtype).  Numba frees an
array after its last use, so that one read keeps ``_t2`` (``X @ W1``, 1 MiB in the MLP
benchmark) alive from the forward sweep to the end of the adjoint sweep, where an
expert's adjoint frees it at once.  Where every later read of such an array is the
shape argument of ``unbroadcast`` or ``expand_along``, those reads take a stand-in made
right after the array: a broadcast view of one zero of its dtype, of its shape, that
holds no memory of its own (``kernels.helpers.shape_stand_in``, compiled once per
machine: ``np.broadcast_to`` and ``np.zeros`` inline were two more NumPy implementations
for Numba to compile in every process)::

    _t2 = X @ W1                    _t2 = X @ W1
    ...                             # _t2: only its shape is read later
    _dt2 = unbroadcast(_dt, _t2)    _t2_like = shape_stand_in(_t2)
                                    ...
                                    _dt2 = unbroadcast(_dt, _t2_like)

Only for a float array (``arrays``) bound once, at the top level of the function, and
only where the adjoint sweep reads it for nothing else (otherwise nothing is freed
earlier).  The MLP's peak memory: 4.52 -> 3.52 MiB, the hand adjoint's.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from ...rules.primitives import query_attrs, shape_args
from ..analysis import dataflow
from ..front.desugar import assign, name
from ..naming import fresh_in, names_in
from ..nodes import clone, loaded_ids, mentions, nodes_of, walk, walk_stmts
from .emit import comment


def shape_stand_ins(body: list[ast.stmt], arrays: frozenset[str], sweep: set[int],
                    helper: Callable[[str], str] = str,
                    readers: tuple[str, ...] = ()) -> list[ast.stmt]:
    """``body`` (a variant's function body) with a stand-in for each array of ``arrays``
    that the adjoint sweep reads only for its shape (see the module docstring); ``sweep``:
    the ``id`` of the sweep's statements (the adjoints' zeroing and the adjoint itself);
    ``helper``: the name generated code calls a helper of ``kernels.helpers`` by (asked
    only where a stand-in is made); ``readers``: the names it calls the helpers reading
    an argument for its shape by (``shape_reading_names``).
    The statements of ``body`` are not changed (the variants share them): those that
    change are copied."""
    cands = {v for v in map(dataflow.plain_binding, body) if v in arrays}
    if not cands or not readers:
        return body
    binds: dict[str, int] = {}
    for s in walk_stmts(body):
        for n in dataflow.binds(s, elements=True):
            if n in cands:
                binds[n] = binds.get(n, 0) + 1
    cands = {v for v in cands if binds[v] == 1}
    start = next((k for k, s in enumerate(body) if id(s) in sweep), len(body))
    shape_at, other_at = _reads(body, cands, readers)
    taken: set[str] | None = None
    out: list[ast.stmt | list[ast.stmt]] = list(body)
    for k, s in enumerate(body):
        v = dataflow.plain_binding(s)
        if v not in cands or not shape_at.get(v) or min(shape_at[v]) <= k:
            continue
        if any(m > k and m >= start for m in other_at.get(v, ())):
            continue  # (read otherwise in the sweep: it stays alive anyway)
        if taken is None:
            taken = set().union(*(names_in(x) for x in body))
        like = fresh_in(f"{v}_like", taken)
        for m in shape_at[v]:
            out[m] = _with_stand_in(out[m], v, like, readers)
        made = assign(like, stand_in(v, helper("shape_stand_in")))
        out[k] = [out[k], comment(f"{v}: only its shape is read later"),
                  ast.copy_location(made, s)]
    flat: list[ast.stmt] = []
    for s in out:
        flat += s if isinstance(s, list) else [s]
    return flat


def shape_reading_names(env: dict[str, Any]) -> tuple[str, ...]:
    """The names ``env`` binds to functions that read their second argument only for its
    shape and dtype (the primitive table's ``shape_args``: ``unbroadcast``...)."""
    return tuple(sorted(n for n, v in env.items() if 1 in shape_args(v)))


def read_for_shape_only(stmts: list[ast.stmt], readers: tuple[str, ...]) -> set[str]:
    """The names ``stmts`` load only for their shape: as the second argument of one of
    ``readers`` (``shape_reading_names``: their result's dtype is their first argument's
    under Numba), through an attribute the primitive table calls a query (``.shape``,
    ``.size``, ``.ndim``, ``.dtype``: the stand-in keeps them), or ``len``; every other
    load of such a name disqualifies it."""
    return shape_only_and_loads(stmts, readers)[0]


def shape_only_and_loads(stmts: list[ast.stmt], readers: tuple[str, ...]
                         ) -> tuple[set[str], set[str]]:
    """``read_for_shape_only(stmts, readers)`` and the names ``stmts`` load
    (``nodes.loaded_ids``), in one walk."""
    nodes = nodes_of(ast.Module(body=list(stmts), type_ignores=[]))
    queries = query_attrs()
    shaped: dict[int, str] = {}
    for n in nodes:
        cls = n.__class__
        if cls is ast.Call:
            if _shape_read(n, readers):
                shaped[id(n.args[1])] = n.args[1].id
            elif isinstance(n.func, ast.Name) and n.func.id == "len" \
                    and len(n.args) == 1 and isinstance(n.args[0], ast.Name):
                shaped[id(n.args[0])] = n.args[0].id
        elif cls is ast.Attribute and n.attr in queries and isinstance(n.value, ast.Name):
            shaped[id(n.value)] = n.value.id
    other: set[str] = set()
    loads: set[str] = set()
    for n in nodes:
        if n.__class__ is ast.Name:
            if id(n) not in shaped:
                other.add(n.id)
            if isinstance(n.ctx, ast.Load):
                loads.add(n.id)
    return set(shaped.values()) - other, loads


def stand_in(v: str, callee: str) -> ast.expr:
    """``shape_stand_in(v)``, called as ``callee``: an array of ``v``'s shape and dtype
    holding no memory of its own (a view of one zero, ``kernels.helpers``)."""
    return ast.Call(func=name(callee), args=[name(v)], keywords=[])


def _shape_read(n: ast.AST, readers: tuple[str, ...], v: str | None = None) -> bool:
    """``n`` is a call of one of ``readers`` reading its second argument, a name (``v``),
    for its shape."""
    return (isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in readers
            and len(n.args) >= 2 and isinstance(n.args[1], ast.Name)
            and (v is None or n.args[1].id == v))


def _reads(stmts: list[ast.stmt], names: set[str], readers: tuple[str, ...]
           ) -> tuple[dict[str, list[int]], dict[str, list[int]]]:
    """Name of ``names`` -> the positions in ``stmts`` of the statements reading it for its
    shape, and of those reading it otherwise (a statement may be in both)."""
    shape_at: dict[str, list[int]] = {}
    other_at: dict[str, list[int]] = {}
    for m, s in enumerate(stmts):
        read = loaded_ids(s) & names
        if not read:
            continue
        shapes: dict[str, int] = {}
        for n in walk(s):
            if _shape_read(n, readers) and n.args[1].id in read:
                shapes[n.args[1].id] = shapes.get(n.args[1].id, 0) + 1
        for v in read:
            if v in shapes:
                shape_at.setdefault(v, []).append(m)
            if mentions(s, v) > shapes.get(v, 0):
                other_at.setdefault(v, []).append(m)
    return shape_at, other_at


def _with_stand_in(s: ast.stmt, v: str, like: str, readers: tuple[str, ...]) -> ast.stmt:
    """A copy of ``s`` whose shape reads of ``v`` read ``like``."""
    new = clone(s)
    for n in walk(new):
        if _shape_read(n, readers, v):
            n.args[1] = name(like)
    return new


__all__ = ["read_for_shape_only", "shape_reading_names", "shape_stand_ins", "stand_in"]
