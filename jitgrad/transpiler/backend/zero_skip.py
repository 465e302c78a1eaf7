"""Skipping reversed loops whose only cotangent is zero: ``if dv != 0.0:`` around them.

A loop of the adjoint sweep nested in a reversed loop runs once per outer trip; where
everything it leaves behind is a sum of terms each linear in one scalar cotangent ``dv``
that it reads from outside, a trip on which ``dv`` is zero adds only zeros, and the
loop is skipped.  kmeans is the case: the distance loop's adjoint runs for every
centroid, but only the nearest one's ``ddist`` is nonzero (the ``min`` hands the
cotangent to the value it selected).  ``zero_guards`` wraps such a loop::

    for c in range(d - 1, -1, -1):              # skipped where ddist is 0 ...
        ddiff = (ddist + ddist) * diff    ->    if ddist != 0.0:
        dcentroids[j, c] += -ddiff                  for c in range(d - 1, -1, -1): ...

Preconditions, checked on the loop (``skippable``), each on the safe side:

- it lies in the adjoint sweep: inside a reversed loop (``notes.SWEEP``), never the
  forward sweep, whose values are the function's;
- every name it binds that a later statement may read (``Dataflow.live_after``) is only
  added to (``+=``, ``-=``) by terms zero where ``dv`` is, and so is every element it
  writes; but for a tape cursor (or counter) that a ``for`` over ``range`` without
  ``break`` steps by a constant once per trip, at the top of its body and nowhere else
  in it: skipped, the loop steps it over all its trips at once (``else: _tape_n -=
  len(range(...))``), so later pops read what they did.  A pop under an ``if``, a list
  tape's ``.pop()`` or a snapshot restored (a call for its effect) is never skipped;
- a term is zero where ``dv`` is by ``is_zero``: a product or quotient with such a
  factor (in the numerator), a sum or difference of two, a negation, an element of such
  an array, a call with such an argument that it is linear in (the table's
  ``linear_in``); and names the loop binds only to such terms, before any read;
- it calls nothing but pure functions (``front.purity.call_pure``: the primitive table's
  ``pure`` fact): no effect is lost by skipping it.

Zeros and non-finite partials: skipped, a trip adds nothing where it would have added
``0 * partial``: the same where the partial is finite (a ``-0.0`` sum may read ``+0.0``
or the other way), and 0, not NaN, where it is infinite or NaN.  That is the choice
``kernels.helpers.guard`` made for the rules' partials: a zero cotangent contributes
zero.  A NaN or infinite ``dv`` is not zero, and runs the loop.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Collection
from typing import Any

from ...rules.primitives import linear_in
from ..analysis import dataflow
from ..astutil import exposed_reads
from ..front.purity import call_pure, called
from ..nodes import clone, loaded_ids, rewrite_blocks, walk, walk_stmts, with_blocks
from ..notes import SWEEP, is_prange
from . import emit


def zero_guards(body: list[ast.stmt], cotangents: Collection[str], env: dict[str, Any],
                shared: dict[str, str] | None = None) -> list[ast.stmt]:
    """``body`` with each loop of the adjoint sweep that ``skippable`` admits for one of
    ``cotangents`` (float scalar adjoints) under ``if dv != 0.0:``; statements on the way
    to one are copied, the rest shared; ``body`` itself where none is."""
    if not cotangents:
        return body
    flow = dataflow.Dataflow(body, shared, env=env)
    return _rewrite(body, False, False, _Guarding(flow, frozenset(cotangents), env))


class _Guarding:
    """What the walk needs: the body's dataflow, the candidate cotangents, the namespace."""

    def __init__(self, flow: dataflow.Dataflow, cotangents: frozenset[str], env: dict):
        self.flow, self.cotangents, self.env = flow, cotangents, env

    def guard(self, loop: ast.stmt) -> tuple[str, list[ast.stmt]] | None:
        """The cotangent ``loop`` may be skipped on and what runs instead, else None."""
        live = self.flow.live_after(loop)
        for dv in sorted(exposed_reads([loop]) & self.cotangents):
            plan = skip_plan(loop, dv, live, self.env, self.flow.shares)
            if plan is not None:
                return dv, plan
        return None


def depending_on(body: list[ast.stmt], seeds: Collection[str],
                 shared: dict[str, str] | None = None,
                 env: dict[str, Any] | None = None) -> set[str]:
    """The names of ``body`` whose values may depend on ``seeds`` through data (not through
    branch tests: forward mode's activity), buffers shared included (syntax only, flow
    insensitive: on the safe side).  What forward mode over gradient code (``jg.hvp``) may
    give a tangent; a cotangent outside it keeps a zero tangent, and its guard holds
    (``env``: the namespace, where known: ``Dataflow``)."""
    flow = dataflow.Dataflow(body, shared, env=env)
    stmts = list(walk_stmts(body))
    out = set(seeds)
    while True:
        more: set[str] = set()
        for s in stmts:
            if not dataflow.reads(s) & out:
                continue
            bound = set(dataflow.binds(s, elements=True, appends=True))
            if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call):  # it may write them
                bound |= {a.id for a in s.value.args if isinstance(a, ast.Name)}
            for n in bound - out:
                more |= flow.shares(n)
        if not more - out:
            return out
        out |= more


def _rewrite(stmts: list[ast.stmt], reverse: bool, nested: bool, g: _Guarding
             ) -> list[ast.stmt]:
    return rewrite_blocks(stmts, lambda s: _statement(s, reverse, nested, g))


def _statement(s: ast.stmt, reverse: bool, nested: bool, g: _Guarding) -> ast.stmt:
    """``s`` guarded, or with guards inside it (a copy), or ``s`` itself.  ``reverse``:
    ``s`` is in a reversed loop; ``nested``: in some loop (run once per trip of it)."""
    if not isinstance(s, (ast.For, ast.While, ast.If)) or is_prange(s):
        return s  # (under prange: Numba's reductions of a parallel loop must stay unguarded)
    note = SWEEP.get(s)
    own = note is not None and note[1] in ("reverse", "adjoint")  # ("adjoint": fused)
    loop = isinstance(s, (ast.For, ast.While))
    if loop and nested and (reverse or own):
        plan = g.guard(s)
        if plan is not None:
            return _guarded(s, *plan)
    return with_blocks(s, lambda b: _rewrite(b, reverse or own, nested or loop, g))


def _guarded(loop: ast.stmt, dv: str, instead: list[ast.stmt]) -> ast.stmt:
    test = ast.Compare(left=ast.Name(id=dv, ctx=ast.Load()), ops=[ast.NotEq()],
                       comparators=[ast.Constant(value=0.0)])
    note = emit.comment(f"skipped where {dv} is 0: all it adds is linear in {dv}"
                        + (", its tape cursors stepped over it" if instead else ""))
    return ast.copy_location(ast.If(test=test, body=[note, loop], orelse=instead), loop)


def skippable(loop: ast.stmt, dv: str, live: Collection[str], env: dict[str, Any],
              shares: Callable[[str], set[str]] = lambda n: {n}) -> bool:
    """Does skipping ``loop`` where ``dv == 0`` leave every value a later statement reads
    as it was, its cursor steps made up (module docstring: the preconditions)?  ``live``:
    the names read after it; ``shares``: the names that may share a name's buffer."""
    return skip_plan(loop, dv, live, env, shares) is not None


def skip_plan(loop: ast.stmt, dv: str, live: Collection[str], env: dict[str, Any],
              shares: Callable[[str], set[str]] = lambda n: {n}) -> list[ast.stmt] | None:
    """What runs instead of ``loop`` where ``dv == 0`` (its tape cursors stepped over all
    its trips at once: ``_tape_n -= len(range(...))``), or None where it may not be
    skipped (``skippable``)."""
    stmts = list(walk_stmts([loop]))
    if any(isinstance(s, (ast.Return, ast.Raise, ast.Try, ast.With)) for s in stmts):
        return None
    if not all(call_pure(c, env) for s in stmts for c in walk(s) if isinstance(c, ast.Call)):
        return None
    zero = _zeros(loop, dv, env)
    if zero is None:
        return None
    steps = _cursor_steps(loop, live)
    for s in stmts:
        if isinstance(s, ast.Expr) and not emit.comment_text(s):
            return None  # a call made for its effect
        if id(s) not in steps and not _harmless(s, dv, live, zero, env, shares):
            return None
    trips = ast.Call(func=ast.Name(id="len", ctx=ast.Load()), args=[clone(loop.iter)],
                     keywords=[])
    return [ast.AugAssign(target=ast.Name(id=s.target.id, ctx=ast.Store()), op=s.op,
                          value=trips if s.value.value == 1 else
                          ast.BinOp(left=clone(s.value), op=ast.Mult(), right=clone(trips)))
            for s in steps.values()]


def _cursor_steps(loop: ast.stmt, live: Collection[str]) -> dict[int, ast.AugAssign]:
    """The statements of a ``for`` loop over ``range`` (no ``break``, ``continue``) that
    step a name read after it by a constant once per trip (``_tape_n -= 1``, at the top of
    its body) and are its only bindings of that name: the loop's tape pops."""
    if dataflow.loop_index(loop) is None or any(
            isinstance(x, (ast.Break, ast.Continue)) for x in walk_stmts(loop.body)):
        return {}
    bound = [n for x in walk_stmts(loop.body) for n in dataflow.binds(x)]
    head = loaded_ids(loop.iter) | {loop.target.id}
    return {id(s): s for s in loop.body
            if isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name)
            and isinstance(s.op, (ast.Add, ast.Sub)) and isinstance(s.value, ast.Constant)
            and type(s.value.value) is int and s.target.id in live
            and bound.count(s.target.id) == 1 and s.target.id not in head}


def _harmless(s: ast.stmt, dv: str, live: Collection[str], zero: set[str], env,
              shares: Callable[[str], set[str]]) -> bool:
    """Does ``s`` change nothing read later where ``dv`` is 0: it binds only names dead
    after the loop, and adds only zero terms to the rest and to elements?"""
    if isinstance(s, ast.AugAssign):
        t = s.target
        if isinstance(t, ast.Name) and not shares(t.id) & set(live):
            return True  # (in place on an array: on no buffer read later)
        return isinstance(s.op, (ast.Add, ast.Sub)) and is_zero(s.value, zero, env)
    if isinstance(s, ast.Assign):
        for t in s.targets:
            elts = t.elts if isinstance(t, ast.Tuple) else [t]
            if not all(isinstance(x, ast.Name) for x in elts):
                return False  # an element written (``a[i] = v``): not an addition
            if any(x.id in live and not (x.id == dv and is_zero(s.value, zero, env))
                   for x in elts):
                return False
        return True
    if isinstance(s, ast.For):
        return not ({n.id for n in walk(s.target) if isinstance(n, ast.Name)} & set(live))
    return isinstance(s, (ast.If, ast.While, ast.Expr, ast.Pass, ast.Break, ast.Continue))


def _zeros(loop: ast.stmt, dv: str, env) -> set[str] | None:
    """The names that hold zero wherever ``loop`` reads them when ``dv`` is 0: ``dv`` and
    the names it binds, before reading them, only to zero terms; None where it binds ``dv``
    to another term."""
    exposed = exposed_reads([loop])
    zero = {dv} | (dataflow.binds_in([loop], elements=False) - exposed)
    while True:
        out = {n for s in walk_stmts([loop]) for n in _spoils(s, zero, env)}
        if dv in out:
            return None
        if not out:
            return zero
        zero -= out


def _spoils(s: ast.stmt, zero: set[str], env) -> list[str]:
    """The names of ``zero`` that ``s`` may bind to a term not (known) zero."""
    if isinstance(s, ast.Assign):
        if len(s.targets) == 1 and isinstance(s.targets[0], ast.Name):
            n = s.targets[0].id
            return [n] if n in zero and not is_zero(s.value, zero, env) else []
        return [m for m in dataflow.binds(s) if m in zero]
    if isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name):
        n = s.target.id
        keeps = is_zero(s.value, zero, env) if isinstance(s.op, (ast.Add, ast.Sub)) \
            else isinstance(s.op, (ast.Mult, ast.Div))
        return [n] if n in zero and not keeps else []
    return [m for m in dataflow.binds(s) if m in zero]


def is_zero(e: ast.expr, zero: Collection[str], env: dict[str, Any]) -> bool:
    """Is ``e`` zero wherever the names ``zero`` are (up to ``0 * inf``: the module
    docstring)?"""
    if isinstance(e, ast.Name):
        return e.id in zero
    if isinstance(e, ast.Constant):
        return type(e.value) in (int, float) and e.value == 0
    if isinstance(e, ast.UnaryOp):
        return isinstance(e.op, (ast.USub, ast.UAdd)) and is_zero(e.operand, zero, env)
    if isinstance(e, ast.BinOp):
        left, right = is_zero(e.left, zero, env), is_zero(e.right, zero, env)
        if isinstance(e.op, (ast.Mult, ast.MatMult)):
            return left or right
        if isinstance(e.op, ast.Div):
            return left
        return isinstance(e.op, (ast.Add, ast.Sub)) and left and right
    if isinstance(e, ast.Subscript):
        return is_zero(e.value, zero, env)
    if isinstance(e, ast.IfExp):
        return is_zero(e.body, zero, env) and is_zero(e.orelse, zero, env)
    if isinstance(e, ast.Call) and not e.keywords:
        args = linear_in(called(e, env))
        return any(k < len(e.args) and is_zero(e.args[k], zero, env) for k in args)
    return False


__all__ = ["depending_on", "is_zero", "skip_plan", "skippable", "zero_guards"]
