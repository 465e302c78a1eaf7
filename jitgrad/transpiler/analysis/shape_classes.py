"""Shape classes: which arrays of a generated body provably have one shape.

Whole-array code makes every intermediate by an elementwise operation of arrays and
scalars; such a result has the shape its array operands share.  ``ShapeClasses`` follows
that through a variant's body: each array name gets a class (the name of the array whose
shape it has: an argument, or the result of a call that is not elementwise, ``np.dot``),
each scalar ``SCALAR``, anything else (a name bound to values of different shapes, a
tuple, an unknown call) nothing.  Elementwise: the operators, the calls the primitive
table marks ``elementwise``, ``unbroadcast(g, x)`` and ``expand_along(g, x, None)`` (shape
of ``x``), ``np.zeros_like(x)``...; a reduction (``np.sum(e)``, ``np.dot`` of vectors,
``unbroadcast`` to a scalar) is a scalar.

Two arguments an elementwise operation combines (``S / X``) may differ in shape
(broadcasting): they are *assumed* one class, and the assumption is listed
(``assumed``) for generated code to check at run time before relying on it.  Only
arguments the body never binds are assumed (their shapes hold throughout).
"""

from __future__ import annotations

import ast
from typing import Any

import numpy as np

from ...kernels import arrays as K
from ...kernels import helpers as H
from ...rules.primitives import allocates_shape, fact, shape_of, sums
from ..astutil import resolve
from ..nodes import walk_stmts
from . import dataflow

#: the class of a scalar
SCALAR = "<scalar>"
#: not known yet (names read before their binding, in a loop): taken as any class
_TOP = "<top>"


class ShapeClasses:
    """The shape class of each name of ``body`` (see the module docstring); ``ndims``:
    name -> number of dimensions where known (0: a scalar), ``env``: what the body's
    names refer to, ``params``: the function's parameters."""

    def __init__(self, body: list[ast.stmt], ndims: dict[str, int], env: dict[str, Any],
                 params: list[str], loose: bool = False) -> None:
        #: take any two array classes of one number of dimensions an elementwise operation
        #: combines as one (not only arguments): for a user that compares, at run time,
        #: the shapes of arrays of the strict classes (``backend/elements.py``)
        self.loose = loose
        self.env = env
        self.ndims = ndims
        self.values: dict[str, list[ast.expr | None]] = {}
        #: list -> the values appended to it (a list tape: ``t.pop()`` is one of them)
        self.pushed: dict[str, list[ast.expr]] = {}
        for s in walk_stmts(body):
            for n, v in _bound_values(s):
                self.values.setdefault(n, []).append(v)
            t, v = _appended(s)
            if t is not None:
                self.pushed.setdefault(t, []).append(v)
        self.params = set(params)
        self.fixed = {p for p in params if p not in self.values}
        self._same: dict[str, str] = {}
        self.assumed: list[tuple[str, str]] = []
        self._forced: set[str] = set()
        self._settle()
        # a loop may read a value made in an earlier trip, of an array made afresh since
        carried = set().union(*(dataflow.carried(s) for s in walk_stmts(body)
                                if isinstance(s, (ast.For, ast.While))))
        self._forced = {n for n in carried if self.of(n) not in (None, SCALAR)
                        and self.of(n) not in self.fixed}
        if self._forced:
            self._settle()

    def _settle(self) -> None:
        """Each bound name's class, from ``_TOP`` down to a fixed point."""
        self._cls: dict[str, str | None] = {n: _TOP for n in self.values}
        for n in self._forced:
            self._cls[n] = None
        for _ in range(len(self.values) + 2):
            before = dict(self._cls)
            for n in self.values:
                if n not in self._forced:
                    self._cls[n] = self._name_class(n)
            if before == self._cls:
                break
        self._cls = {n: None if c == _TOP else c for n, c in self._cls.items()}

    def root(self, c: str | None) -> str | None:
        """The class ``c`` is, after the assumptions made so far."""
        while c is not None and c in self._same:
            c = self._same[c]
        return c

    def of(self, n: str) -> str | None:
        """The class of name ``n`` (None: not known to have one shape)."""
        if n in self.values:
            c = self._cls.get(n)
            return c if c == _TOP else self.root(c)
        if n in self.ndims:
            return SCALAR if self.ndims[n] == 0 else self.root(n)
        v = self.env.get(n)  # a global number (``RSQRT2PI``)
        return SCALAR if isinstance(v, (int, float)) and not isinstance(v, bool) else None

    def ndim(self, c: str) -> int | None:
        """The number of dimensions of class ``c``'s arrays."""
        return self.ndims.get(c)

    def _name_class(self, n: str) -> str | None:
        vals = self.values[n]
        if any(v is None for v in vals):
            return None
        got = {self.expr(v) for v in vals} - {_TOP}
        if n in self.params:  # (an argument bound again: its own shape, then the values')
            got.add(SCALAR if self.ndims.get(n) == 0 else n if self.ndims.get(n) else None)
        got = {self.root(c) for c in got}
        if len(got) == 1 and None not in got:
            return got.pop()
        if not got:
            return _TOP
        if len(vals) == 1 and n not in self.params and self.ndims.get(n, 0) \
                and _opaque(vals[0]) is not None and self.expr(vals[0]) is None:
            return n  # made by a call that is not elementwise: its own class
        return None

    def expr(self, e: ast.expr) -> str | None:
        """The class of the value of ``e``."""
        if isinstance(e, ast.Constant):
            return SCALAR if isinstance(e.value, (int, float, bool)) else None
        if isinstance(e, ast.Name):
            return self.of(e.id)
        if isinstance(e, ast.Subscript):
            return self._element(e)
        parts = elementwise_parts(e, self.env)
        if parts is not None:
            return self.combine([self.expr(p) for p in parts])
        if isinstance(e, ast.Call):
            return self._call(e)
        return None

    def _element(self, e: ast.Subscript) -> str | None:
        """A scalar where ``e`` is one element of an array (a scalar per dimension; the
        array's dimensions its own, or its class's: ``_g[_k]`` of ``_g = dy``)."""
        if not isinstance(e.value, ast.Name):
            return None
        nd = self.ndims.get(e.value.id)
        if nd is None and e.value.id in self.values:
            c = self.of(e.value.id)
            nd = None if c in (None, SCALAR, _TOP) else self.ndim(c)
        idx = e.slice.elts if isinstance(e.slice, ast.Tuple) else [e.slice]
        if not nd or len(idx) != nd or any(isinstance(i, ast.Slice) for i in idx):
            return None
        return SCALAR if all(self.expr(i) == SCALAR for i in idx) else None

    def _call(self, e: ast.Call) -> str | None:
        popped = self._popped(e)
        if popped is not None:  # one class for every value pushed (not broadcast: combine)
            got = {self.root(c) for c in {self.expr(v) for v in popped} - {_TOP}}
            return _TOP if not got else got.pop() if len(got) == 1 else None
        fn = resolve(e.func, self.env)
        if reduction_terms(e, self, self.env) is not None:
            return SCALAR
        if fn in (H.unbroadcast, K.expand_along) and len(e.args) >= 2:
            if fn is K.expand_along and not (len(e.args) == 3 and _is_none(e.args[2])):
                return None
            g, x = self.expr(e.args[0]), self.expr(e.args[1])
            if fn is H.unbroadcast and x not in (None, SCALAR):
                return x  # (the sum of ``g`` down to ``x``'s shape, whatever ``g``'s)
            return x if g is not None and g in (x, SCALAR, _TOP) else None
        like = shape_of(fn)
        if like is not None and len(e.args) > like:
            return self.expr(e.args[like])
        if allocates_shape(fn) and e.args:
            return self._allocated(e.args[0])
        if fn is np.broadcast_to and len(e.args) == 2 and isinstance(e.args[1], ast.Attribute) \
                and e.args[1].attr == "shape" and isinstance(e.args[1].value, ast.Name):
            return self.of(e.args[1].value.id)
        return None

    def _popped(self, e: ast.Call) -> list[ast.expr] | None:
        """The values appended to ``t`` where ``e`` is ``t.pop()`` of a list ``t`` bound
        only to ``[]`` and otherwise only appended to (its pop is one of them)."""
        f = e.func
        if not (isinstance(f, ast.Attribute) and f.attr == "pop" and not e.args
                and not e.keywords and isinstance(f.value, ast.Name)):
            return None
        t = f.value.id
        if t not in self.pushed or not all(isinstance(v, ast.List) and not v.elts
                                           for v in self.values.get(t, [None])):
            return None
        return self.pushed[t]

    def _allocated(self, shape: ast.expr) -> str | None:
        """The class of ``np.empty(shape)`` (``zeros``, ``full``...): the argument ``p`` the
        body never binds where ``shape`` is ``p.shape``, or ``p.shape[0], p.shape[1]...``
        in order (``len(p)`` for the first), each maybe through a name whose every
        binding is that expression (its value is the same wherever it is read)."""
        if isinstance(shape, ast.Attribute) and shape.attr == "shape" \
                and isinstance(shape.value, ast.Name) and shape.value.id in self.fixed:
            return shape.value.id
        dims = shape.elts if isinstance(shape, ast.Tuple) else [shape]
        got = {self._extent(d, k) for k, d in enumerate(dims)}
        if len(got) != 1 or None in got:
            return None
        p = got.pop()
        return p if self.ndims.get(p) == len(dims) else None

    def _extent(self, e: ast.expr, k: int, depth: int = 0) -> str | None:
        """``p`` where ``e`` is ``p.shape[k]`` (or ``len(p)``, ``k`` 0) of an argument the
        body never binds, directly or through names bound only to that."""
        if isinstance(e, ast.Name) and e.id in self.values and depth < 4:
            got = {None if v is None else self._extent(v, k, depth + 1)
                   for v in self.values[e.id]}
            return got.pop() if len(got) == 1 else None
        if isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and e.func.id == "len" \
                and k == 0 and len(e.args) == 1 and not e.keywords \
                and isinstance(e.args[0], ast.Name) and self.env.get("len") in (None, len):
            p = e.args[0].id
        elif isinstance(e, ast.Subscript) and isinstance(e.value, ast.Attribute) \
                and e.value.attr == "shape" and isinstance(e.value.value, ast.Name) \
                and isinstance(e.slice, ast.Constant) and e.slice.value == k:
            p = e.value.value.id
        else:
            return None
        return p if p in self.fixed and self.ndims.get(p) else None

    def combine(self, classes: list[str | None]) -> str | None:
        """The class of an elementwise operation of values of ``classes``: their one array
        class (assuming two arguments' classes one, where ``assume`` allows), else None."""
        if None in classes:
            return None
        if _TOP in classes:
            known = [c for c in classes if c != _TOP]
            return _TOP if not known else self.combine(known)
        arrays = {self.root(c) for c in classes if c != SCALAR}
        if not arrays:
            return SCALAR
        first, *rest = sorted(arrays)
        for c in rest:
            if not self._assume(first, c):
                return None
        return self.root(first)

    def _assume(self, a: str, b: str) -> bool:
        """Take classes ``a`` and ``b`` as one (checked at run time): only arguments the
        body never binds (any two classes where ``loose``), of one known number of
        dimensions."""
        if not (self.loose or {a, b} <= self.fixed) or self.ndims.get(a) != self.ndims.get(b) \
                or not self.ndims.get(a):
            return False
        self._same[b] = a
        self.assumed.append((a, b))
        return True

    def checks(self, c: str) -> list[tuple[str, str]]:
        """The assumed pairs of arguments class ``c`` relies on (one shape at run time)."""
        return [(a, b) for a, b in self.assumed if self.root(a) == self.root(c)]


def elementwise_parts(e: ast.expr, env: dict[str, Any]) -> list[ast.expr] | None:
    """The operands of ``e`` where it maps elements on their own (an operator, a call the
    primitive table marks elementwise, without keywords), else None."""
    if isinstance(e, ast.BinOp) and not isinstance(e.op, ast.MatMult):
        return [e.left, e.right]
    if isinstance(e, ast.UnaryOp):
        return [e.operand]
    if isinstance(e, ast.Compare) and len(e.ops) == 1:
        return [e.left, *e.comparators]
    if isinstance(e, ast.Call) and not e.keywords and e.args \
            and not any(isinstance(a, ast.Starred) for a in e.args):
        rec = fact(resolve(e.func, env))
        if rec is not None and rec.elementwise and rec.pure:
            return list(e.args)
    return None


def reduction_terms(e: ast.expr, shapes: ShapeClasses, env: dict[str, Any]
                    ) -> list[ast.expr] | None:
    """Where ``e`` sums the elements of an array into a scalar, the array's elementwise
    factors (``np.sum(a)``: [a]; ``np.dot(a, b)`` of vectors of one class: [a, b];
    ``unbroadcast(g, s)`` to a scalar ``s``: [g]); else None."""
    if not isinstance(e, ast.Call) or e.keywords:
        return None
    fn = resolve(e.func, env)
    if sums(fn) and len(e.args) == 1:
        c = shapes.expr(e.args[0])
        return [e.args[0]] if c not in (None, SCALAR) else None
    if fn is np.dot and len(e.args) == 2:
        a, b = (shapes.expr(x) for x in e.args)
        if a is not None and a == b and a != SCALAR and shapes.ndim(a) == 1:
            return list(e.args)
        return None
    if fn is H.unbroadcast and len(e.args) == 2 and shapes.expr(e.args[1]) == SCALAR:
        c = shapes.expr(e.args[0])
        return [e.args[0]] if c not in (None, SCALAR) else None
    return None


def _bound_values(s: ast.stmt) -> list[tuple[str, ast.expr | None]]:
    """(name, the value bound to it) for each name ``s`` binds (None: a value not known,
    a tuple's element, a loop variable, an element write...)."""
    if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name):
        return [(s.targets[0].id, s.value)]
    if isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name):
        return [(s.target.id, ast.BinOp(left=ast.Name(id=s.target.id, ctx=ast.Load()),
                                        op=s.op, right=s.value))]
    if isinstance(s, (ast.For, ast.AsyncFor)) and dataflow.loop_index(s):
        return [(s.target.id, ast.Constant(value=0))]
    return [(n, None) for n in dataflow.binds(s)]


def _appended(s: ast.stmt) -> tuple[str | None, ast.expr | None]:
    """``(t, v)`` where ``s`` is ``t.append(v)``."""
    c = s.value if isinstance(s, ast.Expr) else None
    if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) \
            and c.func.attr == "append" and isinstance(c.func.value, ast.Name) \
            and len(c.args) == 1 and not c.keywords:
        return c.func.value.id, c.args[0]
    return None, None


def _opaque(e: ast.expr) -> ast.expr | None:
    """``e`` where it is a call (a value of a shape of its own), else None."""
    return e if isinstance(e, (ast.Call, ast.Attribute, ast.Subscript, ast.BinOp)) else None


def _is_none(e: ast.expr) -> bool:
    return isinstance(e, ast.Constant) and e.value is None


__all__ = ["SCALAR", "ShapeClasses", "elementwise_parts", "reduction_terms"]
