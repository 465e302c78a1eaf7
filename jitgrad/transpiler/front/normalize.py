"""Normalize: one differentiable operation per statement (A-normal form).

Compound expressions are split into temporaries; ``x += e`` becomes ``x = x + e``
(subscript ``u[i] += e`` stays, it has its own cheap adjoint); ternaries become
``if`` statements; tuple assignments are split unless they permute names (a
swap, whose adjoint is a swap); ``if``/``while`` tests and ``range`` bounds become
variables so the reverse sweep can read them.  Index expressions, comparisons and
arguments of non-differentiable calls stay whole: they carry no gradient.

Before::                       After::

    y = np.sin(x * a) + 1.0        _t = x * a
                                   _t2 = np.sin(_t)
                                   y = _t2 + 1.0
"""

from __future__ import annotations

import ast

import numpy as np

from ...rules import is_non_differentiable
from ...rules.primitives import query_attrs
from ..analysis.dataflow import view_base
from ..astutil import resolve
from ..naming import Namer
from ..nodes import clone, nodes_of, stmts_by_depth, walk
from ..notes import AUG, Checkpoint, carry, checkpoint
from .desugar import assign, name
from .parse import Parsed


def is_atom(e: ast.expr) -> bool:
    return isinstance(e, (ast.Name, ast.Constant))


def _foldable(e: ast.expr) -> bool:
    """Whether Numba may prove ``e`` constant: it reads no element and calls nothing."""
    return not any(isinstance(n, (ast.Subscript, ast.Call)) for n in nodes_of(e))


class Normalizer:
    """Rewrites statements into the normalized subset, creating temporaries."""

    def __init__(self, parsed: Parsed, env: dict, namer: Namer):
        self.parsed = parsed
        self.env = env
        self.namer = namer

    # --- expressions -------------------------------------------------------------

    def is_inert(self, e: ast.expr) -> bool:
        """Expressions kept whole: they cannot carry a gradient."""
        if is_atom(e):
            return True
        if isinstance(e, (ast.Compare, ast.BoolOp)):
            return True
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Not):
            return True
        if isinstance(e, ast.Attribute) and e.attr in query_attrs():
            return True
        if isinstance(e, ast.Subscript) and isinstance(e.value, ast.Attribute) \
                and e.value.attr in query_attrs():
            return True
        if isinstance(e, ast.Call):
            fn = resolve(e.func, self.env)
            if fn is not None and is_non_differentiable(fn) and fn is not np.copy:
                return True
        if isinstance(e, (ast.Tuple, ast.List)):
            return all(self.is_inert(x) for x in e.elts)
        if isinstance(e, ast.BinOp) and self.is_inert(e.left) and self.is_inert(e.right) \
                and self._int_constants(e):
            return True
        return False

    @staticmethod
    def _int_constants(e: ast.expr) -> bool:
        """Arithmetic on integer constants only (kept whole)."""
        return all(not isinstance(n, (ast.Name, ast.Constant)) or
                   (isinstance(n, ast.Constant) and isinstance(n.value, int))
                   for n in nodes_of(e))

    def atom(self, e: ast.expr, out: list[ast.stmt]) -> ast.expr:
        """``e`` as a name or constant, emitting a temporary if needed."""
        if is_atom(e):
            return e
        t = self.namer.temp()
        out += self.assign_expr(t, e, e)
        return name(t)

    def operand(self, e: ast.expr, out: list[ast.stmt]) -> ast.expr:
        return e if self.is_inert(e) else self.atom(e, out)

    def simple(self, e: ast.expr, out: list[ast.stmt]) -> ast.expr:
        """``e`` with at most one differentiable operation at its root."""
        if self.is_inert(e):
            return e
        if isinstance(e, ast.BinOp):
            return ast.BinOp(left=self.operand(e.left, out), op=e.op,
                             right=self.operand(e.right, out))
        if isinstance(e, ast.UnaryOp):
            return ast.UnaryOp(op=e.op, operand=self.operand(e.operand, out))
        if isinstance(e, ast.Call):
            func = e.func
            if isinstance(func, ast.Attribute) and resolve(func, self.env) is None:
                func = ast.Attribute(value=self.atom(func.value, out), attr=func.attr,
                                     ctx=ast.Load())
            args = [self.operand(a, out) if not isinstance(a, (ast.Tuple, ast.List))
                    else type(a)(elts=[self.operand(x, out) for x in a.elts], ctx=ast.Load())
                    for a in e.args]
            return ast.Call(func=func, args=args, keywords=e.keywords)
        if isinstance(e, ast.Subscript):
            base = e.value
            index = e.slice
            if isinstance(base, ast.Subscript) and not self._has_slice(base.slice) \
                    and not self._has_slice(index):
                # A[i][j] -> A[i, j]
                first = base.slice.elts if isinstance(base.slice, ast.Tuple) else [base.slice]
                second = index.elts if isinstance(index, ast.Tuple) else [index]
                index = ast.Tuple(elts=first + second, ctx=ast.Load())
                base = base.value
            return ast.Subscript(value=self.atom(base, out), slice=index,
                                 ctx=ast.Load())
        if isinstance(e, ast.Attribute):
            return ast.Attribute(value=self.atom(e.value, out), attr=e.attr, ctx=ast.Load())
        if isinstance(e, (ast.Tuple, ast.List)):
            return type(e)(elts=[self.operand(x, out) for x in e.elts], ctx=ast.Load())
        raise self.parsed.error(f"unsupported expression: {ast.unparse(e)}", e,
                                "split it into simpler statements")

    @staticmethod
    def _has_slice(idx: ast.expr) -> bool:
        return any(isinstance(n, ast.Slice) for n in nodes_of(idx))

    def assign_expr(self, target: str, e: ast.expr, where: ast.AST) -> list[ast.stmt]:
        """Statements computing ``e`` into ``target``."""
        out: list[ast.stmt] = []
        if isinstance(e, ast.IfExp):
            test = self.test(e.test, out)
            body = self.assign_expr(target, e.body, where)
            orelse = self.assign_expr(target, e.orelse, where)
            out.append(ast.copy_location(ast.If(test=test, body=body, orelse=orelse), where))
            return out
        v = self.simple(e, out)
        out.append(ast.copy_location(assign(target, v), where))
        carry(where, out[-1])  # (a helper's expression: messages name the helper's line)
        return out

    def opaque(self, e: ast.expr) -> ast.expr:
        """A branch test Numba cannot fold to a constant (``s = 0.0; if s > 1.0:``).

        Numba prunes a branch whose test it can prove constant, and then rejects the
        adjoint's reads of values that branch defines; ``bool(...)`` keeps it a branch.
        It also prunes the short circuit of ``and``/``or`` after an operand it can fold
        (``DEBUG and abs(s) < 0.4``, ``-0.4 > 0.2 or ...``), though the test reads arrays.
        """
        if not (_foldable(e) or any(_foldable(v) for b in walk(e)
                                    if isinstance(b, ast.BoolOp) for v in b.values[:-1])):
            return e
        self.env.setdefault("bool", bool)
        return ast.copy_location(ast.Call(func=name("bool"), args=[e], keywords=[]), e)

    def test(self, e: ast.expr, out: list[ast.stmt]) -> ast.expr:
        if isinstance(e, ast.Name) and self.opaque(e) is e:
            return e
        c = self.namer.fresh("_c")
        if self.is_inert(e):
            out.append(ast.copy_location(assign(c, self.opaque(e)), e))
        else:
            out += self.assign_expr(c, e, e)
        return name(c)

    # --- statements --------------------------------------------------------------

    def block(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for s in stmts:
            out += self.stmt(s)
        return out

    def stmt(self, s: ast.stmt) -> list[ast.stmt]:
        if isinstance(s, ast.AnnAssign):
            if s.value is None:
                return []
            s = ast.copy_location(ast.Assign(targets=[s.target], value=s.value), s)
        if checkpoint(s):
            return [Checkpoint.region(self.block(s.body) or [ast.Pass()], s)]
        kind = self._STATEMENTS.get(s.__class__)
        if kind is not None:
            return getattr(self, kind)(s)
        if isinstance(s, (ast.Break, ast.Pass, ast.Continue, ast.Assert, ast.Raise)):
            return [s]
        if isinstance(s, ast.Return):
            raise self.parsed.error("internal: return survived desugaring", s)
        raise self.parsed.error(f"unsupported statement {type(s).__name__}", s)

    #: the method normalizing each kind of statement (``stmt``)
    _STATEMENTS = {ast.Assign: "assign_", ast.AugAssign: "aug_assign", ast.If: "if_",
                   ast.While: "while_", ast.For: "for_", ast.Expr: "expr_stmt"}

    def assign_(self, s: ast.Assign) -> list[ast.stmt]:
        """``a = b = e`` as one assignment per target, each in three-address form."""
        if len(s.targets) > 1:
            first = s.targets[0]
            out = self.stmt(ast.copy_location(ast.Assign(targets=[first], value=s.value), s))
            for t in s.targets[1:]:
                out += self.stmt(ast.copy_location(
                    ast.Assign(targets=[t], value=clone(first)), s))
            return out
        out = self.assign_stmt(s.targets[0], s.value, s)
        if out and isinstance(out[-1], ast.Assign):
            carry(s, out[-1])  # for messages
        return out

    def aug_assign(self, s: ast.AugAssign) -> list[ast.stmt]:
        """``x op= e`` (marked: on an array it writes in place) and ``a[i] op= e``."""
        out: list[ast.stmt] = []
        t = s.target
        if isinstance(t, ast.Name):
            val = ast.BinOp(left=name(t.id), op=s.op, right=s.value)
            out = self.assign_stmt(name(t.id, True), val, s)
            # on an array, Python's ``x += e`` writes x's buffer in place
            AUG.set(out[-1], True)
            return out
        if not isinstance(t, ast.Subscript):
            raise self.parsed.error("unsupported augmented assignment target", s)
        base = self.subscript_base(t, out)
        if isinstance(s.op, (ast.Add, ast.Sub)):
            v = self.atom(s.value, out)
            out.append(ast.copy_location(ast.AugAssign(
                target=ast.Subscript(value=base, slice=t.slice, ctx=ast.Store()),
                op=s.op, value=v), s))
            return out
        cur = self.namer.temp()
        out.append(ast.copy_location(assign(cur, ast.Subscript(
            value=name(base.id), slice=clone(t.slice), ctx=ast.Load())), s))
        val = ast.BinOp(left=name(cur), op=s.op, right=s.value)
        new_t = ast.Subscript(value=name(base.id), slice=t.slice, ctx=ast.Store())
        return out + self.assign_stmt(new_t, val, s)

    def if_(self, s: ast.If) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        test = self.test(s.test, out)
        out.append(ast.copy_location(ast.If(test=test, body=self.block(s.body) or
                                            [ast.Pass()], orelse=self.block(s.orelse)), s))
        carry(s, out[-1])
        return out

    def while_(self, s: ast.While) -> list[ast.stmt]:
        """The test computed into a flag before the loop and again at the end of its body."""
        out: list[ast.stmt] = []
        c = self.namer.fresh("_c")
        pre = self.assign_expr(c, self.opaque(s.test), s)
        body = self.block(s.body) + [clone(x) for x in pre]
        out += pre
        out.append(ast.copy_location(ast.While(test=name(c), body=body, orelse=[]), s))
        carry(s, out[-1])
        return out

    def for_(self, s: ast.For) -> list[ast.stmt]:
        """The ``range`` arguments as atoms, computed before the loop."""
        out: list[ast.stmt] = []
        it = s.iter
        args = []
        for a in it.args:
            if is_atom(a):
                args.append(a)
            else:
                n = self.namer.fresh("_n")
                out.append(ast.copy_location(assign(n, a), s))
                args.append(name(n))
        new_iter = ast.Call(func=it.func, args=args, keywords=[])
        out.append(ast.copy_location(ast.For(target=s.target, iter=new_iter,
                                             body=self.block(s.body) or [ast.Pass()],
                                             orelse=[]), s))
        carry(s, out[-1])  # a checkpointed loop stays one
        return out

    def expr_stmt(self, s: ast.Expr) -> list[ast.stmt]:
        """A call for its effect, on atoms; a bare constant (a docstring) dropped."""
        if isinstance(s.value, ast.Constant):
            return []  # docstring or bare constant
        out: list[ast.stmt] = []
        v = self.simple(s.value, out) if not self.is_inert(s.value) else s.value
        out.append(ast.copy_location(ast.Expr(value=v), s))
        return out

    def subscript_base(self, t: ast.Subscript, out) -> ast.Name:
        if not isinstance(t.value, ast.Name):
            raise self.parsed.error("only writes into a named array are supported "
                                    "(e.g. 'u[i] = ...')", t, "bind the array to a name first")
        return t.value

    def assign_stmt(self, target: ast.expr, value: ast.expr, s: ast.stmt) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        if isinstance(target, ast.Name):
            return self.assign_expr(target.id, value, s)
        if isinstance(target, ast.Subscript):
            base = self.subscript_base(target, out)
            v = self.operand(value, out) if not isinstance(value, ast.IfExp) \
                else self.atom(value, out)
            out.append(ast.copy_location(ast.Assign(targets=[ast.Subscript(
                value=base, slice=target.slice, ctx=ast.Store())], value=v), s))
            return out
        if isinstance(target, (ast.Tuple, ast.List)):
            tnames = [t.id for t in target.elts if isinstance(t, ast.Name)]
            if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts):
                vnames = [v.id for v in value.elts if isinstance(v, ast.Name)]
                if (len(tnames) == len(target.elts) == len(vnames)
                        and sorted(tnames) == sorted(vnames) and len(set(tnames)) == len(tnames)):
                    perm = ast.Assign(targets=[ast.Tuple(elts=[name(n, True) for n in tnames],
                                                         ctx=ast.Store())],
                                      value=ast.Tuple(elts=[name(n) for n in vnames],
                                                      ctx=ast.Load()))
                    out.append(ast.copy_location(perm, s))
                    return out
                # every value is read before any target is bound (``a, s = b, a``)
                bound = {n.id for t in target.elts for n in walk(t)
                         if isinstance(n, ast.Name)}
                temps = []
                for v in value.elts:
                    if isinstance(v, ast.Name) and v.id in bound:
                        t = self.namer.temp()
                        out.append(ast.copy_location(assign(t, name(v.id)), s))
                        temps.append(name(t))
                    else:
                        temps.append(self.atom(v, out) if not isinstance(v, ast.Constant)
                                     else v)
                for t, v in zip(target.elts, temps, strict=True):
                    out += self.assign_stmt(t, v, s)
                return out
            if self.is_inert(value) or isinstance(value, ast.Attribute):
                out.append(ast.copy_location(ast.Assign(targets=[target], value=value), s))
                return out
            raise self.parsed.error("tuple unpacking of this value is not supported", s,
                                    "assign the elements one by one")
        raise self.parsed.error("unsupported assignment target", s)


def normalize(parsed: Parsed, body: list[ast.stmt], env: dict, namer: Namer) -> list[ast.stmt]:
    """Normalize a desugared, inlined body (see module docstring)."""
    return Normalizer(parsed, env, namer).block(body)


def inplace_updates(body: list[ast.stmt], kinds: dict, env: dict,
                    namer: Namer) -> list[ast.stmt]:
    """``u op= e`` on an array that views share becomes a write of the whole buffer.

    Normalizing ``u += e`` to ``u = u + e`` is exact while no other name sees ``u``'s
    buffer; where a view of ``u`` (or ``u`` as a view) is involved, Python's in-place
    update must stay one (``_t = u + e; u[:] = _t``) so the views see it.
    """
    viewed: set[str] = set()
    for n in stmts_by_depth(body):
        if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name):
            k = kinds.get(n.targets[0].id)
            base = view_base(n.value, env) if k is not None and k.is_array else None
            if base is not None:
                viewed |= {base, n.targets[0].id}
    if not viewed:
        return body

    def block(stmts: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for s in stmts:
            for f in ("body", "orelse"):
                sub = getattr(s, f, None)
                if sub:
                    setattr(s, f, block(sub))
            t = s.targets[0] if isinstance(s, ast.Assign) else None
            k = kinds.get(t.id) if isinstance(t, ast.Name) else None
            if AUG.get(s) and t.id in viewed and k is not None \
                    and k.ndim and isinstance(s.value, ast.BinOp) \
                    and isinstance(s.value.left, ast.Name) and s.value.left.id == t.id:
                tmp = namer.temp()
                kinds[tmp] = k
                whole = ast.Tuple(elts=[ast.Slice() for _ in range(k.ndim)], ctx=ast.Load()) \
                    if k.ndim > 1 else ast.Slice()
                out.append(ast.copy_location(assign(tmp, s.value), s))
                out.append(ast.copy_location(ast.Assign(targets=[ast.Subscript(
                    value=name(t.id), slice=whole, ctx=ast.Store())], value=name(tmp)), s))
                continue
            out.append(s)
        return out

    return block(body)
