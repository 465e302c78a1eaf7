"""Loops over ``np.ndindex`` and over literal tuples, rewritten before ``desugar.loops``.

* ``for i, j in np.ndindex(a.shape)`` (or ``np.ndindex(n, m)``, ``np.ndindex(*shape)``,
  ``for idx in np.ndindex(n, m)`` with ``d[idx]``) becomes nested range loops; a
  ``break`` leaves the whole nest through a flag.
* ``for kr in (0, 1)`` (a literal tuple or list of constants or names) is unrolled:
  ``kr = 0`` and the body, then ``kr = 1`` and the body; a body that may ``break`` or
  ``continue`` becomes a range loop that picks the element with ``if``.

Before::                                After::

    for i, j in np.ndindex(a.shape):        for i in range(a.shape[0]):
        s += a[i, j]                            for j in range(a.shape[1]):
                                                    s += a[i, j]
"""

from __future__ import annotations

import ast

import numpy as np

from ..nodes import clone, clone_with, walk
from .build import assign, const, contains, name


def _stored(stmts: list[ast.stmt]) -> set[str]:
    """Names bound (not written in place) anywhere in ``stmts``."""
    return {n.id for n in walk(ast.Module(body=stmts, type_ignores=[]))
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _jumps(stmts: list[ast.stmt], kinds: tuple[type, ...]) -> bool:
    """Does ``stmts`` hold a jump of ``kinds`` of its own loop (not of a nested loop)?"""
    return contains(list(stmts), kinds, stop=(ast.For, ast.While))


def is_ndindex(node: ast.expr, env: dict) -> bool:
    """``np.ndindex(...)`` (through any name ``numpy`` or ``ndindex`` is bound to)."""
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    if isinstance(f, ast.Name):
        return env.get(f.id) is np.ndindex
    return isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) \
        and f.attr == "ndindex" and env.get(f.value.id) is np


def is_literal_seq(node: ast.expr) -> bool:
    """A tuple or list display of constants, negated constants and names."""
    def simple(e: ast.expr) -> bool:
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd)):
            e = e.operand
        return isinstance(e, (ast.Constant, ast.Name))
    return isinstance(node, (ast.Tuple, ast.List)) and bool(node.elts) \
        and all(simple(e) for e in node.elts)


class Iterables:
    """The rewrites; ``expand`` answers the statements replacing one ``for`` (or None)."""

    def __init__(self, parsed, env: dict, namer, root: list[ast.stmt]):
        self.parsed = parsed
        self.env = env
        self.namer = namer
        self.root = root  # the function's body

    def expand(self, s: ast.For) -> list[ast.stmt] | None:
        if is_ndindex(s.iter, self.env):
            return self.ndindex(s)
        if is_literal_seq(s.iter):
            return self.literal(s)
        return None

    # --- np.ndindex ----------------------------------------------------------------

    def extents(self, s: ast.For) -> list[ast.expr]:
        it = s.iter
        hint = "unpack the index, 'for i, j in np.ndindex(a.shape):', and index a[i, j]"
        if it.keywords or not it.args:
            raise self.parsed.error("unsupported np.ndindex loop", s, hint)
        args = [a.value if isinstance(a, ast.Starred) else a for a in it.args]
        if len(args) > 1 and not any(isinstance(a, ast.Starred) for a in it.args):
            return args
        shape = args[0]
        if isinstance(shape, (ast.Tuple, ast.List)) and len(it.args) == 1:
            return list(shape.elts)
        if isinstance(shape, ast.Constant) and isinstance(shape.value, int):
            return [shape]
        if not isinstance(s.target, ast.Tuple) or len(it.args) > 1:
            raise self.parsed.error("np.ndindex of a shape whose length jitgrad cannot see",
                                    s, hint)
        return [ast.Subscript(value=clone(shape), slice=const(k), ctx=ast.Load())
                for k in range(len(s.target.elts))]

    def loads(self, n: str, stmts: list[ast.stmt] | None = None) -> int:
        """How often ``n`` is read in ``stmts`` (the whole function by default)."""
        tree = ast.Module(body=self.root if stmts is None else stmts, type_ignores=[])
        return sum(isinstance(m, ast.Name) and m.id == n and isinstance(m.ctx, ast.Load)
                   for m in walk(tree))

    def ndindex(self, s: ast.For) -> list[ast.stmt]:
        extents = self.extents(s)
        body, pre = list(s.body), []
        tgt = s.target
        if isinstance(tgt, ast.Tuple) and all(isinstance(e, ast.Name) for e in tgt.elts) \
                and len(tgt.elts) == len(extents):
            idx = [e.id for e in tgt.elts]
        elif isinstance(tgt, ast.Name) and tgt.id not in _stored(body) \
                and self.loads(tgt.id) == self.loads(tgt.id, body):
            idx = [self.namer.fresh("_i") for _ in extents]
            whole = tgt.id
            body = [clone_with(b, lambda n: ast.copy_location(ast.Tuple(
                elts=[name(i) for i in idx], ctx=ast.Load()), n) if n.id == whole else clone(n))
                for b in body]
        else:
            raise self.parsed.error("unsupported np.ndindex loop target (one name, rebound "
                                    "in the loop or read after it)", s,
                                    f"write 'for {', '.join('ijk'[:len(extents)])} in "
                                    "np.ndindex(...)' with one name per dimension")
        rebound = _stored(body)
        if any(isinstance(n, ast.Name) and n.id in rebound
               for e in extents for n in walk(e)):
            # Python sizes the nest before the loop: fix the extents there
            fixed = [self.namer.fresh("_n") for _ in extents]
            pre = [ast.copy_location(assign(f, e), s) for f, e in zip(fixed, extents,
                                                                          strict=True)]
            extents = [name(f) for f in fixed]
        stop = self.namer.fresh("_stop") if _jumps(body, (ast.Break,)) else None
        if stop:
            body = self.leave_all(body, stop)
            pre.append(ast.copy_location(assign(stop, const(False)), s))
        self.env.setdefault("range", range)
        for k in range(len(extents) - 1, -1, -1):
            loop = ast.For(target=name(idx[k], True),
                           iter=ast.Call(func=name("range"), args=[extents[k]], keywords=[]),
                           body=body, orelse=[])
            ast.copy_location(loop, s)
            body = [loop]
            if stop and k > 0:
                body.append(ast.copy_location(ast.If(test=name(stop), body=[ast.Break()],
                                                     orelse=[]), s))
        return pre + body

    def leave_all(self, stmts: list[ast.stmt], stop: str) -> list[ast.stmt]:
        """Each ``break`` of this loop also sets ``stop`` (the outer loops test it)."""
        out: list[ast.stmt] = []
        for st in stmts:
            if isinstance(st, ast.Break):
                out.append(ast.copy_location(assign(stop, const(True)), st))
            elif isinstance(st, (ast.If, ast.With, ast.Try)):
                for f in ("body", "orelse"):
                    if getattr(st, f, None):
                        setattr(st, f, self.leave_all(getattr(st, f), stop))
            out.append(st)
        return out

    # --- literal tuples ------------------------------------------------------------

    def literal(self, s: ast.For) -> list[ast.stmt]:
        elts = list(s.iter.elts)
        rebound = _stored(s.body) | _stored([ast.Assign(targets=[s.target], value=const(0))])
        pre: list[ast.stmt] = []
        for k, e in enumerate(elts):
            if any(isinstance(n, ast.Name) and n.id in rebound for n in walk(e)):
                v = self.namer.fresh("_v")  # Python reads the tuple before the loop
                pre.append(ast.copy_location(assign(v, e), s))
                elts[k] = name(v)
        if not _jumps(s.body, (ast.Break, ast.Continue)):
            out = pre
            for e in elts:
                out.append(ast.copy_location(assign(clone(s.target), clone(e)), s))
                out += clone(s.body)
            return out
        k = self.namer.fresh("_k")
        pick: list[ast.stmt] = []
        for j in range(len(elts) - 1, -1, -1):
            choose = [ast.copy_location(assign(clone(s.target), elts[j]), s)]
            pick = choose if not pick else [ast.copy_location(ast.If(
                test=ast.Compare(left=name(k), ops=[ast.Eq()], comparators=[const(j)]),
                body=choose, orelse=pick), s)]
        self.env.setdefault("range", range)
        loop = ast.For(target=name(k, True), iter=ast.Call(
            func=name("range"), args=[const(len(elts))], keywords=[]),
            body=pick + s.body, orelse=[])
        return pre + [ast.copy_location(loop, s)]
