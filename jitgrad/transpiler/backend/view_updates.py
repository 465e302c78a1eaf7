"""Augmented assignments into a view of an array, as an update of the view (``jit=True``).

Numba compiles ``db[2] += g`` (``db`` 2-d, ``g`` 1-d) as a read of the row, an in-place
addition into it, then an array assignment of the row to itself; the assignment's
shape-mismatch error (``raise_with_shape_context``: an f-string of two shapes) is a
compile of ``str(int)``, string concatenation and ``repr`` that costs a process about
1.5 CPU s, more than the rest of a small gradient.  Under ``jit=True`` an augmented
assignment whose target is a view (basic indexing that leaves at least one dimension)
updates the view instead::

    db[2] += _dt22                  _view = db[2]
                                    _view += _dt22

The same values: NumPy and Numba both add into the view in place; the assignment back
wrote the view onto itself.  Only where the dimensions say the target is a view: the
array's dimension is known (``Context.ndims``), every index is a slice or an integer
scalar (a constant, a scalar name, arithmetic of those), and fewer indices are integers
than the array has dimensions.  An element (``dx[i] += g``), an index array (a copy,
not a view), ``...``, ``None`` or an unknown dimension keep their statement.

An assignment of an array into a whole array or a view of one pays the same compile
(``dz[...] = e``, as ``loop_buffers`` sets a zeroed buffer by its first add: GradBench
gmm's first call 2.6 -> 4.2 s).  Where the assigned value is a name of an array
(dimension known, at least 1) whose buffer the target's array cannot share
(``Dataflow.shares``: NumPy copies an overlapping source first, an element loop does
not), the copy is an element loop; where the shape classes do not prove the two shapes
equal, the loop runs under a test of the shapes and otherwise the helper ``copy_into``
(cached on disk, its message compiled once per machine, broadcasting) copies::

    dz[...] = _dt4                  if _dt4.shape == dz.shape:
                                        for _k in range(dz.shape[0]):
                                            dz[_k] = _dt4[_k]
                                    else:
                                        copy_into(dz, _dt4)

A plain array assignment into a view (``dW[i] = _dt4``, as ``write_once`` makes them)
keeps its statement: the helper's call on a view made per trip keeps the view's
reference counting, about 100 ns per assignment at run time.

A split helper's gradient (``front/split.py``), which is compiled on its own and does
not pass through the backend's steps, is rewritten the same way (``function_views``);
being Python as well, it runs so under ``jit=False`` too, with the same values.
"""

from __future__ import annotations

import ast
import copy
import inspect
from collections.abc import Callable
from typing import Any

from ..front.build import assign, name
from ..naming import fresh_in, names_in
from . import emit

#: ``copier``'s answer for an element loop (``a`` and ``v`` of one shape)
LOOP = "loop"


def view_updates(body: list[ast.stmt], ndims: dict[str, int], params: list[str],
                 copier: Callable[[str, str], str | None] | None = None) -> list[ast.stmt]:
    """``body`` with each augmented assignment into a view made an update of the view,
    and each array assignment of a name into a whole array an element loop (module
    docstring; ``copier(target, value)``: ``LOOP`` where the shapes are one, else the name
    generated code calls ``copy_into`` by, where the two arrays' buffers are apart; None
    where they may share one).  Statements that change are
    copied (the variants share them)."""
    taken: set[str] | None = None

    def fresh(stem: str = "_view") -> str:
        nonlocal taken
        if taken is None:
            taken = set(params).union(*(names_in(s) for s in body))
        return fresh_in(stem, taken)

    return _rewrite(body, ndims, fresh, copier)


def function_views(fn: Any, ndims: dict[str, int]) -> Any:
    """The generated function ``fn`` (its names' dimensions ``ndims``, as
    ``Unit.float_ndims`` gives them) with ``view_updates`` applied, loaded again; ``fn``
    where nothing changes."""
    fdef = ast.parse(inspect.getsource(fn)).body[0]
    body = view_updates(fdef.body, ndims, [a.arg for a in fdef.args.args])
    if body is fdef.body:
        return fn
    fdef.body = body
    src = ast.unparse(ast.fix_missing_locations(fdef)) + "\n"
    return emit.load(src, fn.__name__, dict(fn.__globals__), f"{fn.__name__}.views")


def _rewrite(body: list[ast.stmt], ndims: dict[str, int], fresh: Callable[[], str],
             copier: Callable[[str, str], str | None] | None) -> list[ast.stmt]:
    """``body`` rewritten, nested blocks too; ``body`` itself when nothing changes."""
    out: list[ast.stmt] = []
    changed = False
    for s in body:
        new = _statement(s, ndims, fresh, copier)
        changed |= new is not s
        out += new if isinstance(new, list) else [new]
    return out if changed else body


def _statement(s: ast.stmt, ndims: dict[str, int], fresh: Callable[[], str],
               copier: Callable[[str, str], str | None] | None
               ) -> ast.stmt | list[ast.stmt]:
    """``s`` rewritten: two statements for an update of a view, a call for a copy, a
    copy of a block whose body changes, else ``s`` itself."""
    how = None if copier is None else _copied(s, ndims, copier)
    if how is not None:
        a, v = s.targets[0].value.id, s.value.id
        loop = _element_loop(a, v, ndims[v], fresh)
        if how != LOOP:  # shapes not known to be one: the helper where they differ
            same = ast.Compare(left=_attr(v, "shape"), ops=[ast.Eq()],
                               comparators=[_attr(a, "shape")])
            call = ast.Expr(value=ast.Call(func=name(how), args=[name(a), name(v)],
                                           keywords=[]))
            loop = ast.If(test=same, body=[loop], orelse=[call])
        return ast.copy_location(loop, s)
    if isinstance(s, ast.AugAssign) and _is_view(s.target, ndims):
        v = fresh()
        read = ast.copy_location(assign(v, ast.Subscript(
            value=s.target.value, slice=s.target.slice, ctx=ast.Load())), s)
        return [read, ast.copy_location(ast.AugAssign(target=name(v, store=True), op=s.op,
                                                      value=s.value), s)]
    new = s
    for fld in ("body", "orelse", "finalbody"):
        sub = getattr(s, fld, None)
        if isinstance(sub, list) and sub and isinstance(sub[0], ast.stmt):
            done = _rewrite(sub, ndims, fresh, copier)
            if done is not sub:
                new = copy.copy(new) if new is s else new
                setattr(new, fld, done)
    return new


def _copied(s: ast.stmt, ndims: dict[str, int],
            copier: Callable[[str, str], str | None]) -> str | None:
    """How ``s`` is made where it is ``a[...] = v``, ``a`` and ``v`` arrays of known
    dimension and apart: ``LOOP`` or the name of ``copy_into`` (``copier``); else None."""
    if not copied_array(s, ndims):
        return None
    return copier(s.targets[0].value.id, s.value.id)


def _element_loop(a: str, v: str, ndim: int, fresh: Callable[..., str]) -> ast.For:
    """``for _k in range(a.shape[0]): ... a[_k, ...] = v[_k, ...]``, ``ndim`` loops deep."""
    ks = [fresh("_k") for _ in range(ndim)]
    idx = ast.Tuple(elts=[name(k) for k in ks], ctx=ast.Load()) if ndim > 1 else name(ks[0])
    stmt: ast.stmt = ast.Assign(
        targets=[ast.Subscript(value=name(a), slice=idx, ctx=ast.Store())],
        value=ast.Subscript(value=name(v), slice=copy.deepcopy(idx), ctx=ast.Load()))
    for d in range(ndim - 1, -1, -1):
        extent = ast.Subscript(value=_attr(a, "shape"), slice=ast.Constant(d), ctx=ast.Load())
        stmt = ast.For(target=name(ks[d], store=True), iter=ast.Call(
            func=name("range"), args=[extent], keywords=[]), body=[stmt], orelse=[])
    return stmt


def _attr(n: str, attr: str) -> ast.Attribute:
    return ast.Attribute(value=name(n), attr=attr, ctx=ast.Load())


def copied_array(s: ast.stmt, ndims: dict[str, int]) -> bool:
    """Is ``s`` ``a[...] = v``, ``a`` and ``v`` arrays of known dimension (at least 1)?"""
    if not (isinstance(s, ast.Assign) and len(s.targets) == 1
            and isinstance(s.value, ast.Name) and ndims.get(s.value.id)):
        return False
    t = s.targets[0]
    return isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) \
        and isinstance(t.slice, ast.Constant) and t.slice.value is Ellipsis \
        and bool(ndims.get(t.value.id))


def _is_view(t: ast.expr, ndims: dict[str, int]) -> bool:
    """Is ``t`` a basic-indexing subscript of an array of known dimension that leaves at
    least one dimension (a view, not an element or a copy)?"""
    if not (isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name)):
        return False
    d = ndims.get(t.value.id)
    if not d:
        return False
    idx = t.slice.elts if isinstance(t.slice, ast.Tuple) else [t.slice]
    if not all(isinstance(e, ast.Slice) or _int_scalar(e, ndims) for e in idx):
        return False
    return sum(not isinstance(e, ast.Slice) for e in idx) < d and len(idx) <= d


def _int_scalar(e: ast.expr, ndims: dict[str, int]) -> bool:
    """Is ``e`` an integer scalar: an int constant, a name of dimension 0, or ``+ - * //
    %`` and unary minus of those?"""
    if isinstance(e, ast.Constant):
        return type(e.value) is int
    if isinstance(e, ast.Name):
        return ndims.get(e.id) == 0
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd)):
        return _int_scalar(e.operand, ndims)
    if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Add, ast.Sub, ast.Mult,
                                                      ast.FloorDiv, ast.Mod)):
        return _int_scalar(e.left, ndims) and _int_scalar(e.right, ndims)
    return False


__all__ = ["LOOP", "copied_array", "function_views", "view_updates"]
