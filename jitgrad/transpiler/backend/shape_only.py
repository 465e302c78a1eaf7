"""Arrays the adjoint reads only for their shape: a stand-in of that shape lets them go.

The adjoint of ``_t = _t2 + b1`` sums its cotangent back to the shape of each operand,
``unbroadcast(_dt, _t2)``: it reads ``_t2`` only for its shape (and dtype).  Numba frees an
array after its last use, so that one read keeps ``_t2`` (``X @ W1``, 1 MiB in the MLP
benchmark) alive from the forward sweep to the end of the adjoint sweep, where an
expert's adjoint frees it at once.  Where every later read of such an array is the
shape argument of ``unbroadcast`` or ``expand_along``, those reads take a stand-in made
right after the array: a broadcast view of one zero of its dtype, of its shape, that
holds no memory of its own::

    _t2 = X @ W1                    _t2 = X @ W1
    ...                             # _t2: only its shape is read later
    _dt2 = unbroadcast(_dt, _t2)    _t2_like = np.broadcast_to(np.zeros((), _t2.dtype),
                                                               _t2.shape)
                                    ...
                                    _dt2 = unbroadcast(_dt, _t2_like)

Only for a float array (``arrays``) bound once, at the top level of the function, and
only where the adjoint sweep reads it for nothing else (otherwise nothing is freed
earlier).  The MLP's peak memory: 4.52 -> 3.52 MiB, the hand adjoint's.
"""

from __future__ import annotations

import ast

from ..astutil import all_defs
from ..front.desugar import assign, name
from ..naming import names_in
from ..nodes import clone, walk, walk_stmts
from .emit import comment

#: helpers whose second argument is read for its shape and dtype only
SHAPE_ARGS = frozenset({"unbroadcast", "expand_along"})


def shape_stand_ins(body: list[ast.stmt], arrays: frozenset[str], sweep: set[int]
                    ) -> list[ast.stmt]:
    """``body`` (a variant's function body) with a stand-in for each array of ``arrays``
    that the adjoint sweep reads only for its shape (see the module docstring); ``sweep``:
    the ``id`` of the sweep's statements (the adjoints' zeroing and the adjoint itself).
    The statements of ``body`` are not changed (the variants share them): those that
    change are copied."""
    start = next((k for k, s in enumerate(body) if id(s) in sweep), len(body))
    binds: dict[str, int] = {}
    for s in walk_stmts(body):
        for n in all_defs(s):
            binds[n] = binds.get(n, 0) + 1
    taken = set().union(*(names_in(s) for s in body)) if body else set()
    out = list(body)
    for k, s in enumerate(body):
        v = _bound(s)
        if v is None or v not in arrays or binds.get(v) != 1:
            continue
        shape_at, other_at = _reads(body[k + 1:], v)
        if not shape_at or (other_at and k + 1 + max(other_at) >= start):
            continue  # (read otherwise in the sweep: it stays alive anyway)
        like = _fresh(f"{v}_like", taken)
        for m in set(shape_at):
            out[k + 1 + m] = _with_stand_in(out[k + 1 + m], v, like)
        made = assign(like, ast.Call(
            func=ast.Attribute(value=name("np"), attr="broadcast_to", ctx=ast.Load()),
            args=[ast.Call(func=ast.Attribute(value=name("np"), attr="zeros", ctx=ast.Load()),
                           args=[ast.Tuple(elts=[], ctx=ast.Load()),
                                 ast.Attribute(value=name(v), attr="dtype", ctx=ast.Load())],
                           keywords=[]),
                  ast.Attribute(value=name(v), attr="shape", ctx=ast.Load())], keywords=[]))
        out[k] = [out[k], comment(f"{v}: only its shape is read later"),
                  ast.copy_location(made, s)]
    flat: list[ast.stmt] = []
    for s in out:
        flat += s if isinstance(s, list) else [s]
    return flat


def _bound(s: ast.stmt) -> str | None:
    """``v`` where ``s`` is ``v = e``."""
    if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name):
        return s.targets[0].id
    return None


def _shape_read(n: ast.AST, v: str) -> bool:
    return (isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in SHAPE_ARGS
            and len(n.args) >= 2 and isinstance(n.args[1], ast.Name) and n.args[1].id == v)


def _reads(stmts: list[ast.stmt], v: str) -> tuple[list[int], list[int]]:
    """The positions in ``stmts`` of the statements reading ``v`` for its shape, and of
    those reading it otherwise (a statement may be in both)."""
    shape_at: list[int] = []
    other_at: list[int] = []
    for m, s in enumerate(stmts):
        shapes = sum(_shape_read(n, v) for n in walk(s))
        uses = sum(isinstance(n, ast.Name) and n.id == v for n in walk(s))
        if shapes:
            shape_at.append(m)
        if uses > shapes:
            other_at.append(m)
    return shape_at, other_at


def _with_stand_in(s: ast.stmt, v: str, like: str) -> ast.stmt:
    """A copy of ``s`` whose shape reads of ``v`` read ``like``."""
    new = clone(s)
    for n in walk(new):
        if _shape_read(n, v):
            n.args[1] = name(like)
    return new


def _fresh(base: str, taken: set[str]) -> str:
    out, k = base, 1
    while out in taken:
        k += 1
        out = f"{base}{k}"
    taken.add(out)
    return out


__all__ = ["SHAPE_ARGS", "shape_stand_ins"]
