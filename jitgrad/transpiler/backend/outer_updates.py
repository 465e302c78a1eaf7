"""Outer products of a matrix product's adjoint, added in place (``jit=True``).

The adjoint of ``np.dot(A, b)`` (``A`` 2-d, ``b`` 1-d) with respect to ``A`` is the outer
product of the cotangent and ``b`` (``dot_grad_a``), and that of ``np.dot(a, B)`` with
respect to ``B`` the outer product of ``a`` and the cotangent (``dot_grad_b``): a new
matrix of ``A``'s shape, which the adjoint then adds into a gradient buffer and drops.
In a loop (a gradient-descent step, ``w = w - a * np.dot(X.T, np.dot(X, w) - Y)``) that
is a matrix allocated, written, read back and freed on every trip.  Under ``jit=True``
such an update adds the products into the buffer in place (``add_outer``)::

    dX += dot_grad_a(_dt5, X, w)            add_outer(dX, _dt5, w)
    _dt3 = dot_grad_a(_dt2, _t3, _t4)       add_outer(dX, _t4, _dt2)
    ...
    dX += transpose_back(_dt3, None)

The second form is the adjoint of a product with a transposed matrix (``np.dot(X.T, r)``):
the outer product's transpose is the outer product of the operands swapped, added where
the product was made.  Two such updates of one buffer are made one pass over it::

    add_outer(dX, _t4, _dt2)                ...
    ...                                     add_outers(dX, _t4, _dt2, _dt5, w)
    add_outer(dX, _dt5, w)

Preconditions, each checked (names' dimensions from
``Context.ndims``, which holds float names only; buffers shared from ``Dataflow.shares``):

1. the outer-product case: the matrix operand is 2-d, the other operand and the
   cotangent 1-d; the buffer is a name of dimension 2;
2. the kernel reads the factors while it writes the buffer: it copies a factor whose
   memory may overlap the buffer's first (compared at run time, as the analysis of the
   generated code's workspace tuples cannot tell them apart);
3. (the transposed form) ``t = dot_grad_a(...)`` (or ``dot_grad_b``) is ``t``'s only
   binding and ``buf += transpose_back(t, None)`` its only read, later in the same block;
   every statement between them names neither ``buf`` nor a name that may share its buffer,
   except updates ``buf += e`` whose ``e`` names neither: the products are then added
   earlier among additions into the same buffer, which nothing reads in between;
4. (two updates of one buffer made one pass, ``add_outers``) the first moves down to the
   second past statements as in 3 that neither bind its factors' names nor write into a
   buffer that may share them (so it reads what it read where it was).

The same values up to the order of the additions (a rounding difference).  Not under
``parallel=True``, and not in code without element loops' dimensions (``jit=False``,
second order's input).
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable
from typing import Any

import numpy as np

from ...kernels.arrays import dot_grad_a, dot_grad_b, transpose_back
from ...rules.primitives import copies_into, hides_writes
from ..analysis import dataflow
from ..analysis.dataflow import Dataflow
from ..astutil import resolve
from ..front.purity import called
from ..naming import names_in
from ..nodes import name_counts, walk_stmts


def outer_updates(body: list[ast.stmt], ndims: dict[str, int], env: dict[str, Any],
                  flow: Dataflow, helper: Callable[[str], str]) -> list[ast.stmt]:
    """``body`` with the outer-product updates of the module docstring made in place by
    the helper ``helper("add_outer")``; statements that change are new (the variants
    share statements), and ``body`` itself is returned where nothing changes."""
    reads = name_counts(body)
    return _block(body, _Scope(ndims, env, flow, helper, reads))


class _Scope:
    """What the rewrite of one function asks: dimensions, names, buffers, use counts."""

    def __init__(self, ndims: dict[str, int], env: dict[str, Any], flow: Dataflow,
                 helper: Callable[[str], str], reads: dict[str, int]) -> None:
        self.ndims, self.env, self.flow = ndims, env, flow
        self.helper, self.reads = helper, reads
        self._names: tuple[str, str] | None = None

    @property
    def kernel(self) -> str:
        """The name of ``add_outer`` in generated code (asked only once one is made)."""
        return self.names()[0]

    @property
    def kernels(self) -> str:
        return self.names()[1]

    def names(self) -> tuple[str, ...]:
        if self._names is None:
            self._names = (self.helper("add_outer"), self.helper("add_outers"))
        return self._names

    def updated(self, s: ast.stmt) -> str | None:
        """``buf`` where ``s`` is an update ``add_outer(buf, ...)`` made here, else None."""
        ok = self._names is not None and isinstance(s, ast.Expr) \
            and isinstance(s.value, ast.Call) and isinstance(s.value.func, ast.Name) \
            and s.value.func.id in self._names and s.value.args \
            and isinstance(s.value.args[0], ast.Name)
        return s.value.args[0].id if ok else None

    def factors(self, call: ast.expr) -> tuple[ast.expr, ast.expr] | None:
        """``(u, v)`` where ``call`` is ``dot_grad_a``/``dot_grad_b`` of the outer-product
        case (precondition 1): the call's value is ``np.outer(u, v)``."""
        if not (isinstance(call, ast.Call) and len(call.args) == 3 and not call.keywords
                and all(isinstance(a, ast.Name) for a in call.args)):
            return None
        fn = resolve(call.func, self.env)
        dy, a, b = call.args
        dims = [self.ndims.get(x.id) for x in (dy, a, b)]
        if fn is dot_grad_a and dims == [1, 2, 1]:
            return dy, b
        if fn is dot_grad_b and dims == [1, 1, 2]:
            return a, dy
        return None

    def update(self, buf: str, u: ast.expr, v: ast.expr, at: ast.stmt) -> ast.stmt | None:
        """``add_outer(buf, u, v)`` placed as ``at``, where ``buf`` is a matrix
        (precondition 1); else None."""
        if self.ndims.get(buf) != 2:
            return None
        call = ast.Call(func=ast.Name(id=self.kernel, ctx=ast.Load()),
                        args=[ast.Name(id=buf, ctx=ast.Load()), u, v], keywords=[])
        return ast.copy_location(ast.Expr(value=call), at)


def _block(body: list[ast.stmt], sc: _Scope) -> list[ast.stmt]:
    out = list(body)
    changed = False
    for k, s in enumerate(body):
        for fld in ("body", "orelse"):
            sub = getattr(s, fld, None)
            if isinstance(sub, list) and sub and isinstance(sub[0], ast.stmt):
                done = _block(sub, sc)
                if done is not sub:
                    out[k] = s = _copy_with(out[k], fld, done)
                    changed = True
        new = _direct(s, sc)
        if new is not None:
            out[k], changed = new, True
    moved = _transposed(out, sc)
    merged = _merged(moved if moved is not None else out, sc)
    if merged is not None:
        return merged
    return moved if moved is not None else (out if changed else body)


def _copy_with(s: ast.stmt, fld: str, block: list[ast.stmt]) -> ast.stmt:
    new = copy.copy(s)
    setattr(new, fld, block)
    return new


def _direct(s: ast.stmt, sc: _Scope) -> ast.stmt | None:
    """``add_outer(buf, u, v)`` for ``buf += dot_grad_a(...)`` of the outer case."""
    if not (isinstance(s, ast.AugAssign) and isinstance(s.op, ast.Add)
            and isinstance(s.target, ast.Name)):
        return None
    f = sc.factors(s.value)
    return None if f is None else sc.update(s.target.id, f[0], f[1], s)


def _transposed(block: list[ast.stmt], sc: _Scope) -> list[ast.stmt] | None:
    """``block`` with each ``t = dot_grad_*(...)`` later added transposed into a buffer
    made ``add_outer`` of the swapped factors in its place (precondition 3); else None."""
    out = list(block)
    changed = False
    for q, s in enumerate(block):
        t, buf = _transpose_update(s, sc)
        if t is None or sc.reads.get(t) != 2:  # (its binding and this read)
            continue
        p = next((k for k in range(q) if _binds(out[k], t)), None)
        if p is None or not _quiet(out[p + 1:q], buf, sc):
            continue
        f = sc.factors(out[p].value)
        new = None if f is None else sc.update(buf, f[1], f[0], out[p])
        if new is None:
            continue
        out[p], out[q], changed = new, ast.Pass(), True
    return [s for s in out if not isinstance(s, ast.Pass)] if changed else None


def _merged(block: list[ast.stmt], sc: _Scope) -> list[ast.stmt] | None:
    """``block`` with two updates ``add_outer(buf, u1, v1)`` ... ``add_outer(buf, u2, v2)``
    made one pass over ``buf`` at the second, ``add_outers(buf, u1, v1, u2, v2)``
    (precondition 4); else None."""
    out = list(block)
    changed = False
    for q, s in enumerate(block):
        buf = sc.updated(s)
        if buf is None or len(s.value.args) != 3:
            continue
        p = next((k for k in range(q - 1, -1, -1) if sc.updated(out[k]) == buf
                  and len(out[k].value.args) == 3), None)
        if p is None or not _quiet(out[p + 1:q], buf, sc) \
                or not _unchanged(out[p + 1:q], out[p].value.args[1:], sc):
            continue
        call = ast.Call(func=ast.Name(id=sc.kernels, ctx=ast.Load()),
                        args=[*out[p].value.args, *s.value.args[1:]], keywords=[])
        out[p], out[q] = ast.Pass(), ast.copy_location(ast.Expr(value=call), s)
        changed = True
    return [s for s in out if not isinstance(s, ast.Pass)] if changed else None


def _unchanged(between: list[ast.stmt], operands: list[ast.expr], sc: _Scope) -> bool:
    """Precondition 4's middle: no statement of ``between`` binds an operand's name or
    writes into a buffer that may share it (an element, ``+=``, a call that may write what
    it is given; the updates made here write their first argument only)."""
    names = {a.id for a in operands}
    sharing = set().union(*(sc.flow.shares(a) for a in names)) | names
    for s in walk_stmts(between):
        bound = set(dataflow.binds(s))
        written = set(dataflow.binds(s, elements=True)) - bound
        if isinstance(s, ast.AugAssign):
            written |= bound
        if bound & names or written & sharing:
            return False
        if sc.updated(s) is not None:
            if names_in(s.value.args[0]) & sharing:
                return False
            continue
        if any(names_in(x) & sharing for n in dataflow.own_expressions(s)
               if isinstance(n, ast.Call) for x in _written_by(n, sc.env)):
            return False
    return True


def _written_by(n: ast.Call, env: dict[str, Any]) -> list[ast.expr]:
    """The arguments the call ``n`` may write into: the destination of an in-place copy
    (``copies_into``: ``restore_into(dst, src)``), every argument (and an array method's
    array) of a call that may write out of sight (``hides_writes``), else none."""
    fn = called(n, env)
    into = copies_into(fn)
    if into is not None:
        return n.args[into[0]:into[0] + 1]
    if not hides_writes(fn):
        return []
    given = [*n.args, *(k.value for k in n.keywords)]
    if isinstance(n.func, ast.Attribute) and hasattr(np.ndarray, n.func.attr):
        given.append(n.func.value)  # (a list's ``pop``: no array's method)
    return given


def _transpose_update(s: ast.stmt, sc: _Scope) -> tuple[str | None, str]:
    """``(t, buf)`` where ``s`` is ``buf += transpose_back(t, None)``."""
    if isinstance(s, ast.AugAssign) and isinstance(s.op, ast.Add) \
            and isinstance(s.target, ast.Name) and isinstance(s.value, ast.Call):
        c = s.value
        if resolve(c.func, sc.env) is transpose_back and len(c.args) == 2 \
                and isinstance(c.args[0], ast.Name) and isinstance(c.args[1], ast.Constant) \
                and c.args[1].value is None and not c.keywords:
            return c.args[0].id, s.target.id
    return None, ""


def _binds(s: ast.stmt, t: str) -> bool:
    return isinstance(s, ast.Assign) and len(s.targets) == 1 \
        and isinstance(s.targets[0], ast.Name) and s.targets[0].id == t


def _quiet(between: list[ast.stmt], buf: str, sc: _Scope) -> bool:
    """Precondition 3's middle: nothing names ``buf``'s buffer but updates ``buf += e``
    (or ``add_outer(buf, u, v)``) whose other operands do not name it."""
    sharing = sc.flow.shares(buf) | {buf}
    for s in walk_stmts(between):
        if isinstance(s, ast.AugAssign) and isinstance(s.op, ast.Add) \
                and isinstance(s.target, ast.Name) and s.target.id == buf:
            if names_in(s.value) & sharing:
                return False
        elif sc.updated(s) == buf:
            if any(names_in(a) & sharing for a in s.value.args[1:]):
                return False
        elif isinstance(s, (ast.For, ast.While, ast.If)):
            test = s.test if isinstance(s, (ast.While, ast.If)) else s.iter
            if names_in(test) & sharing or isinstance(s, ast.For) and names_in(s.target) & sharing:
                return False
        elif names_in(s) & sharing:
            return False
    return True


__all__ = ["outer_updates"]
