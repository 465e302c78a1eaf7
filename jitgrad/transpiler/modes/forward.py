"""Forward mode: the primal with tangent statements interleaved (a ``Tangent`` IR record).

Every active value ``x`` (one that depends on a ``wrt`` argument and reaches an output,
``analysis.analyse``) gets one tangent variable, named ``x_dot`` (``x_dot_`` if the user
already has an ``x_dot``; ``_t_dot`` for the temporary ``_t``).  Each statement's tangent
statement comes next to it, so no tape is needed: the tangent of ``y = x * y`` reads the
old ``y`` and is computed into a temporary before the primal overwrites it.

Arrays have tangent arrays that follow the same references: ``r = A[i]`` gives
``r_dot = A_dot[i]`` (a view of a view), ``u[i] = e`` gives ``u_dot[i] = e_dot``,
``u, v = v, u`` swaps the tangents too, and a fresh result gets a fresh tangent.  Loops,
``while``, ``break``/``continue``, early returns (``single_exit``) and branches run as in
the primal with their tangent statements inside.  ``jg.hook``, ``jg.nobacksies`` and
``jg.checkpoint`` are identities in forward mode (the tangent passes through; the
checkpointed region runs once).  Arguments written in place are copied first, tangent
arguments too: the caller's arrays are never written.  Whatever this pass cannot
differentiate raises a ``TransformError`` at the user's line.
"""

from __future__ import annotations

import ast
from typing import Any

import numpy as np

from ...errors import RuleError
from ...kernels import helpers
from ...kernels.tangents import fit
from ...rules import is_non_differentiable, lookup
from ...rules.primitives import is_library, shaped_like
from ...rules.tangents import UNSUPPORTED, how_tangent
from ..analysis.analyse import (
    Analysis,
    copy_args,
    is_permutation,
    operand_names,
    primitive_of,
)
from ..analysis.kinds import list_tape_call
from ..astutil import names_of, resolve, walk_values
from ..front.desugar import assign, const, name
from ..front.parse import Parsed
from ..ir import Tangent
from ..naming import Namer
from ..notes import checkpoint
from .fused import reciprocal_sqrt
from .tangent import tangent_code


def tangent_name(namer: Namer, n: str) -> str:
    """The tangent variable of ``n``: ``x_dot`` (see ``Namer.tangent``)."""
    return namer.tangent(n)


class Forwarder:
    """Builds the tangent sweep of a normalized, analysed body."""

    def __init__(self, parsed: Parsed, an: Analysis, env: dict, namer: Namer,
                 args: list[str], wrt: list[str]):
        self.parsed, self.an, self.env, self.namer = parsed, an, env, namer
        self.args, self.wrt = args, wrt

    # --- names -------------------------------------------------------------------

    def global_name(self, n: str, obj: Any) -> str:
        """Make ``obj`` reachable in the generated module, preferably as ``n``."""
        return self.namer.global_name(self.env, n, obj)

    def dot(self, n: str) -> str:
        return tangent_name(self.namer, n)

    def active(self, e: Any) -> bool:
        return isinstance(e, ast.Name) and e.id in self.an.active

    def tangent(self, e: ast.expr) -> ast.expr | None:
        """The tangent of an operand, None if it has none (inactive, constant); a list or
        tuple of tangents (zeros for inactive entries) for a list or tuple operand."""
        if isinstance(e, ast.Name):
            return name(self.dot(e.id)) if self.active(e) else None
        if isinstance(e, (ast.Tuple, ast.List)):
            if not any(self.active(x) for x in e.elts):
                return None
            return type(e)(elts=[self.tangent(x) or self.zero(x) for x in e.elts],
                           ctx=ast.Load())
        if isinstance(e, ast.Compare) or isinstance(e, ast.UnaryOp) and isinstance(
                e.op, ast.Not):
            return None  # a boolean: piecewise constant, no tangent
        if any(isinstance(n, ast.Name) and n.id in self.an.active
               for n in walk_values(e)):  # never drop a tangent silently
            raise RuleError(f"cannot take the tangent of '{ast.unparse(e)}'")
        return None

    def zero(self, e: ast.expr) -> ast.expr:
        """A zero tangent for an operand (0.0, or zeros shaped like the array)."""
        if isinstance(e, ast.Name) and self.an.kind(e.id).is_array:
            return self._zeros_like(e.id)
        if isinstance(e, ast.Name) and e.id in self.an.kinds:
            return const(0.0)
        if isinstance(e, ast.Constant):
            return const(0.0)
        zl = self.global_name("zeros_like", helpers.zeros_like)
        return ast.Call(func=name(zl), args=[e], keywords=[])

    def _zeros_like(self, n: str) -> ast.expr:
        k = self.an.kind(n)
        if k.ndim is not None and k.cls == "f":
            np_name = self.global_name("np", np)
            return ast.Call(func=ast.Attribute(value=name(np_name), attr="zeros_like",
                                               ctx=ast.Load()), args=[name(n)], keywords=[])
        zl = self.global_name("zeros_like", helpers.zeros_like)
        return ast.Call(func=name(zl), args=[name(n)], keywords=[])

    def _zero_after(self, tgt: str, v: ast.expr) -> ast.expr:
        """The zero tangent of ``tgt`` just after ``tgt = v``: shaped like ``u`` where ``v``
        is ``np.zeros_like(u)`` (or ``empty_like``, ``ones_like``, ``copy``) of an array of
        ``tgt``'s kind, so that the tangent alone does not keep ``tgt`` live (hvp: the
        gradient's own buffers are dead in its tangent-only code)."""
        if isinstance(v, ast.Call) and len(v.args) == 1 and not v.keywords \
                and isinstance(v.args[0], ast.Name) and v.args[0].id != tgt \
                and shaped_like(resolve(v.func, self.env)) \
                and self.an.kind(v.args[0].id) == self.an.kind(tgt):
            return self._zeros_like(v.args[0].id)
        return self.zero_of(tgt)

    def zero_of(self, n: str) -> ast.expr:
        if self.an.kind(n).cls == "l":
            return ast.List(elts=[], ctx=ast.Load())  # a list tape's tangent tape
        return self._zeros_like(n) if self.an.kind(n).is_array else const(0.0)

    # --- statements --------------------------------------------------------------

    def block(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for s in stmts:
            out += self.stmt(s)
        return out

    def stmt(self, s: ast.stmt) -> list[ast.stmt]:
        if checkpoint(s):  # a checkpointed region runs once, as its statements
            return self.block(s.body)
        if isinstance(s, (ast.If, ast.While)):
            s.body = self.block(s.body) or [ast.Pass()]
            s.orelse = self.block(s.orelse)
            return [s]
        if isinstance(s, ast.For):
            s.body = self.block(s.body) or [ast.Pass()]
            if s.orelse:
                s.orelse = self.block(s.orelse)
            return [s]
        if isinstance(s, ast.Assign):
            return self.assign(s)
        if isinstance(s, ast.AugAssign):
            return self.aug(s)
        if isinstance(s, ast.Expr):
            return self.expr_stmt(s)
        return [s]

    # --- list tapes (generated gradient code, under hvp) ---------------------------

    def expr_stmt(self, s: ast.Expr) -> list[ast.stmt]:
        """``X.append(v)`` pushes ``v``'s tangent on ``X``'s tangent tape (a zero one for an
        inactive ``v``, so the two stay in step); an in-place copy (``restore_into(u, snap)``,
        ``store_slot(buf, i, u)``, ``load_slot(u, buf, i)``: ``analyse.copy_args``) copies
        the tangent too.  Any other statement that reads an active value is refused."""
        v = s.value
        tape = list_tape_call(v, "append", self.an.kinds)
        if tape is not None:
            if tape not in self.an.active:
                return [s]
            push = ast.Call(func=ast.Attribute(value=name(self.dot(tape)), attr="append",
                                               ctx=ast.Load()),
                            args=[self.pushed(v.args[0], s)], keywords=[])
            return [s, ast.copy_location(ast.Expr(value=push), s)]
        copy = copy_args(v, self.env)
        if copy is not None:
            dst, src = copy
            if not self.active(dst):
                return [s]
            dsrc = self.tangent(src) or self.zero(src)
            tangent = ast.Call(func=v.func, args=[
                name(self.dot(dst.id)) if a is dst else dsrc if a is src else a
                for a in v.args], keywords=[])
            return [s, ast.copy_location(ast.Expr(value=tangent), s)]
        if any(isinstance(n, ast.Name) and n.id in self.an.active for n in walk_values(v)):
            raise self.parsed.error(f"forward mode cannot differentiate the statement "
                                    f"'{ast.unparse(v)}'", s,
                                    "assign the values it computes to variables")
        return [s]

    def pushed(self, e: ast.expr, s: ast.stmt) -> ast.expr:
        """The tangent of a value pushed on a list tape (a name, or a snapshot of one)."""
        if isinstance(e, ast.Name):
            return self.tangent(e) or self.zero(e)
        if (isinstance(e, ast.Call) and resolve(e.func, self.env) is helpers.snapshot
                and len(e.args) == 1 and isinstance(e.args[0], ast.Name)):
            return ast.Call(func=e.func, args=[self.tangent(e.args[0]) or self.zero(e.args[0])],
                            keywords=[])
        raise self.parsed.error(f"forward mode cannot push '{ast.unparse(e)}'", s)

    def check_index(self, idx: ast.expr, s: ast.stmt) -> None:
        for n in walk_values(idx):
            if isinstance(n, ast.Name) and n.id in self.an.active:
                raise self.parsed.error("an index depends on a differentiated value", s)

    def assign(self, s: ast.Assign) -> list[ast.stmt]:
        t, v = s.targets[0], s.value
        if is_permutation(s):
            pairs = [(a.id, b) for a, b in zip(t.elts, v.elts, strict=True)
                     if a.id in self.an.active]
            if not pairs:
                return [s]
            lhs = ast.Tuple(elts=[name(self.dot(a), True) for a, _ in pairs], ctx=ast.Store())
            rhs = ast.Tuple(elts=[self.tangent(b) or self.zero(b) for _, b in pairs],
                            ctx=ast.Load())
            return [ast.copy_location(ast.Assign(targets=[lhs], value=rhs), s), s]
        if isinstance(t, ast.Subscript):
            return self.write(s, t, v, None)
        if isinstance(t, ast.Tuple):
            if any(isinstance(e, ast.Name) and e.id in self.an.active for e in t.elts):
                raise self.parsed.error("unpacking a call's tuple result is not supported in "
                                        "forward mode", s, "assign the values one by one")
            return self.primal_only(s)
        tgt = t.id
        tape = list_tape_call(v, "pop", self.an.kinds)
        if tape is not None:  # the tangent tape is popped in step, whether or not tgt is active
            if tape not in self.an.active:
                return [s]
            pop = ast.Call(func=ast.Attribute(value=name(self.dot(tape)), attr="pop",
                                              ctx=ast.Load()), args=[], keywords=[])
            if tgt not in self.an.active:
                return [ast.copy_location(ast.Expr(value=pop), s), s]
            return [ast.copy_location(assign(self.dot(tgt), pop), s), s]
        if tgt not in self.an.active:
            return self.primal_only(s)
        prim = primitive_of(v, self.env)
        if isinstance(v, ast.Constant) or not (set(names_of(v)) & self.an.active) or (
                prim is not None and prim[0] is not None and is_non_differentiable(prim[0])):
            return [*self.primal_only(s), ast.copy_location(assign(self.dot(tgt),
                                                                   self._zero_after(tgt, v)), s)]
        if isinstance(v, ast.Name):
            return [ast.copy_location(assign(self.dot(tgt), self.tangent(v)), s), s]
        if isinstance(v, ast.Subscript):
            base = v.value
            if isinstance(base, ast.Name):
                self.check_index(v.slice, s)
                td = ast.Subscript(value=name(self.dot(base.id)), slice=_clone(v.slice),
                                   ctx=ast.Load()) if self.active(base) else None
                return self.finish(s, tgt, [], s, [], td, False, [base.id])
        fused = self._reciprocal_sqrt(s, tgt, v)
        if fused is not None:
            return fused
        return self.call(s, tgt, v, prim)

    def _reciprocal_sqrt(self, s: ast.Assign, tgt: str, v: ast.expr) -> list[ast.stmt] | None:
        """``t = c / r`` of ``r = sqrt(u)`` (``fused.reciprocal_sqrt``): the tangent
        ``-0.5 u_dot t / u`` (``-0.5 u_dot t^3`` for ``c = 1``), after ``t``, in place of
        the chain rule through ``r``'s tangent, which costs two divisions more."""
        chain = reciprocal_sqrt(s, tgt, self.an, self.env)
        if chain is None or not self.active(ast.Name(id=chain.u)):
            return None
        u = chain.u
        cube = f"({tgt} * {tgt} * {tgt})" if chain.c == 1 else f"{tgt} / {u}"
        gd = self.global_name("guard", helpers.guard)
        d = self.dot(u)
        tan = ast.parse(f"{gd}({d}, -0.5 * {d} * {cube})", mode="eval").body
        return [s, ast.copy_location(assign(self.dot(tgt), tan), s)]

    def primal_only(self, s: ast.Assign) -> list[ast.stmt]:
        """A statement without a tangent (a rule's forward where the call is not a library
        call Numba compiles as spelled)."""
        prim = primitive_of(s.value, self.env)
        if prim is None or prim[0] is None or not isinstance(s.targets[0], ast.Name):
            return [s]
        fn, args, kw = prim
        if lookup(fn) is None and how_tangent(fn) != "rule" or how_tangent(fn) is None:
            return [s]
        code = self._code(fn, args, kw, s)
        if not code.primal_pre and self.as_spelled(s.value, fn, code):
            return [s]
        return [*code.primal_pre, ast.copy_location(assign(s.targets[0].id, code.value), s)]

    def as_spelled(self, v: ast.expr, fn, code) -> bool:
        """Can the user's call stay as spelled (a library call Numba compiles, without
        options such as ``axis=``/``keepdims=`` Numba's NumPy may lack)?  Otherwise the
        rule's forward code computes the value, as in reverse mode."""
        if not is_library(fn):
            return False
        if not isinstance(v, ast.Call):
            return True
        method = isinstance(v.func, ast.Attribute) and resolve(v.func, self.env) is None
        return not v.keywords and len(v.args) + method <= code.positional

    def _code(self, fn, args, kw, s):
        try:
            return tangent_code(fn, args, kw, self.tangent, self.zero, self.namer,
                                self.global_name)
        except RuleError as exc:
            raise self.parsed.error(f"forward mode: {exc}", s, "register a tangent rule with "
                                    "jitgrad.rules.tangents.tangent_rule (docs/forward.md)") \
                from None

    def call(self, s: ast.Assign, tgt: str, v: ast.expr, prim) -> list[ast.stmt]:
        if prim is None:
            raise self.parsed.error(f"cannot differentiate '{ast.unparse(v)}' in forward mode",
                                    s, "split it into supported operations")
        fn, args, kw = prim
        label = ast.unparse(v.func) if isinstance(v, ast.Call) else type(v).__name__
        if fn in UNSUPPORTED:
            raise self.parsed.error(f"forward mode cannot differentiate '{label}': "
                                    f"{UNSUPPORTED[fn]}", s, "use reverse mode (jg.grad, "
                                    "jg.vjp, jg.jacrev) for this function")
        if fn is None or how_tangent(fn) is None:
            raise self.parsed.error(
                f"no tangent (forward-mode) rule for '{label}'", s,
                "register one with jitgrad.rules.tangents.tangent_rule (docs/forward.md), "
                "or compute this value outside the differentiated function")
        for kv in kw.values():
            if set(names_of(kv)) & self.an.active:
                raise self.parsed.error(f"keyword argument of '{label}' depends on a "
                                        "differentiated value", s,
                                        "pass differentiable values positionally")
        code = self._code(fn, args, kw, s)
        if code.primal_pre or not self.as_spelled(v, fn, code):
            primal = ast.copy_location(assign(tgt, code.value), s)
        else:
            primal = s
        return self.finish(s, tgt, code.primal_pre, primal, code.pre, code.expr,
                           code.broadcasts, operand_names(args), args)

    def finish(self, s, tgt: str, primal_pre: list[ast.stmt], primal: ast.stmt,
               pre: list[ast.stmt], expr: ast.expr | None, broadcasts: bool,
               operands: list[str], args: list[ast.expr] | None = None) -> list[ast.stmt]:
        """Primal and tangent statements of ``tgt = ...`` (tangent ``expr``; None: zero).

        ``primal_pre`` (a rule's forward statements) runs first; the tangent reads the
        operands' old values, so it is computed before ``primal`` overwrites ``tgt``."""
        d = self.dot(tgt)
        if expr is None:
            return [*primal_pre, primal, ast.copy_location(assign(d, self.zero_of(tgt)), s)]
        k = self.an.kind(tgt)
        if k.is_array and broadcasts and (isinstance(expr, ast.Name) or args is None or any(
                not self.active(a) or self.an.kind(a.id).ndim != k.ndim
                for a in args if isinstance(a, ast.Name)) or any(
                not isinstance(a, (ast.Name, ast.Constant)) for a in args)):
            f = self.global_name("fit", fit)
            if tgt in operands:
                tmp = self.namer.fresh("_tdot")
                return [*primal_pre, *pre, assign(tmp, expr), primal, ast.copy_location(
                    assign(d, ast.Call(func=name(f), args=[name(tmp), name(tgt)],
                                       keywords=[])), s)]
            return [*primal_pre, primal, *pre, ast.copy_location(assign(
                d, ast.Call(func=name(f), args=[expr, name(tgt)], keywords=[])), s)]
        return [*primal_pre, *pre, ast.copy_location(assign(d, expr), s), primal]

    def write(self, s, t: ast.Subscript, v: ast.expr, op) -> list[ast.stmt]:
        base = t.value.id
        if base not in self.an.active:
            return [s]
        self.check_index(t.slice, s)
        tv = self.tangent(v) if isinstance(v, ast.Name) else None
        target = ast.Subscript(value=name(self.dot(base)), slice=_clone(t.slice),
                               ctx=ast.Store())
        if op is None:
            out = ast.Assign(targets=[target], value=tv if tv is not None else const(0.0))
        elif tv is None:
            return [s]
        else:
            out = ast.AugAssign(target=target, op=op, value=tv)
        return [ast.copy_location(out, s), s]

    def aug(self, s: ast.AugAssign) -> list[ast.stmt]:
        if isinstance(s.target, ast.Subscript):
            if not isinstance(s.op, (ast.Add, ast.Sub)) and s.target.value.id in self.an.active:
                raise self.parsed.error("this in-place update is not supported in forward "
                                        "mode", s, "write 'u[i] = u[i] * e'")
            return self.write(s, s.target, s.value, s.op)
        if isinstance(s.target, ast.Name) and s.target.id in self.an.active:
            raise self.parsed.error("this augmented assignment is not supported in forward "
                                    "mode", s, "write 'x = x + e'")
        return [s]


def _clone(e: ast.expr) -> ast.expr:
    from ..nodes import clone

    return clone(e)


def forward(parsed: Parsed, body: list[ast.stmt], an: Analysis, env: dict, namer: Namer,
            args: list[str], wrt: list[str], returns: list[ast.expr], name_: str) -> Tangent:
    """The ``Tangent`` record of a normalized, analysed body (see the module docstring)."""
    fw = Forwarder(parsed, an, env, namer, args, wrt)
    seeds = [fw.dot(w) for w in wrt]
    prologue: list[ast.stmt] = []
    for a in args:
        if a in an.args_written:
            prologue.append(assign(a, _copy(a)))
            if a in an.active:
                prologue.append(assign(fw.dot(a), _copy(fw.dot(a))
                                       if a in wrt else fw.zero_of(a)))
    for a in args:  # arguments that become active by in-place writes start at zero
        if a in an.active and a not in wrt and a not in an.args_written:
            prologue.append(assign(fw.dot(a), fw.zero_of(a)))
    sweep = fw.block(body)
    results = tuple(returns)
    tangents = tuple(name(fw.dot(r.id)) if fw.active(r) else
                     (fw.zero_of(r.id) if isinstance(r, ast.Name) else const(0.0))
                     for r in returns)
    return Tangent(name_, tuple(args), tuple(seeds), tuple(prologue), tuple(sweep), results,
                   tangents, namer.workspace)


def _copy(n: str) -> ast.expr:
    return ast.Call(func=ast.Attribute(value=name(n), attr="copy", ctx=ast.Load()), args=[],
                    keywords=[])


__all__ = ["Forwarder", "forward", "tangent_name"]
