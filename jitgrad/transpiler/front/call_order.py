"""Python's evaluation order for helper calls inlined inside an expression.

Inlining puts a helper's body before the statement that calls it and leaves its returned
expression in the call's place.  For a helper with no effect outside its own locals that
is harmless; one that writes an array its caller can see (an argument, a global, through
an ``out=``) or draws random numbers must run where Python runs it: after the operands
to its left and before those to its right.  ``Ordered`` walks an expression in
evaluation order and, before the body of such a call, binds every operand already
evaluated (an earlier call's returned expression included) to a temporary, so that it is
read before the call's writes.  Such a call where Python may not evaluate it at all (the
right of ``and``/``or``, a branch of ``x if c else y``, a later link of a chained
comparison) is refused at its line.

Before::                               After::

    s = buf[0] + fill(buf, v)              _t = buf[0]
                                           buf[0] = v
                                           s = _t + buf[0] * 2.0
"""

from __future__ import annotations

import ast
import types
from collections.abc import Callable
from typing import Any

from ...rules.primitives import draws
from ..astutil import resolve
from ..naming import Namer
from ..nodes import node_fields, walk
from .desugar import assign, name
from .parse import Parsed
from .purity import call_pure, called

#: split-the-expression hint of the refusals below
SPLIT_HINT = ("split the expression into statements: call the helper in a statement of "
              "its own and use its result")

#: a place in the tree: (parent node, field, index in the field's list or None)
Slot = tuple[ast.AST, str, "int | None"]


def _target_names(t: ast.expr) -> set[str]:
    """The names whose contents an assignment target writes (``a[i]``, ``a[i][j]``: a)."""
    out: set[str] = set()
    for n in walk(t):
        if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store):
            base = n.value
            while isinstance(base, (ast.Subscript, ast.Attribute)):
                base = base.value
            if isinstance(base, ast.Name):
                out.add(base.id)
    return out


def _data_names(e: ast.AST, env: dict[str, Any]) -> set[str]:
    """Names ``e`` loads that may hold data (not modules, functions or classes)."""
    return {n.id for n in walk(e) if isinstance(n, ast.Name) and not (
        isinstance(env.get(n.id), (types.ModuleType, type)) or callable(env.get(n.id)))}


def _may_write(c: ast.Call, env: dict[str, Any]) -> set[str]:
    """The names whose contents a call not known pure may write: its ``out=`` and the
    object of a method (``xs.append(v)``).  (A function's array argument written as a
    statement is refused: ``analysis.effects.refuse_hidden_writes``.)"""
    f = c.func
    args = [k.value for k in c.keywords if k.arg == "out"]
    if isinstance(f, ast.Attribute) and resolve(f, env) is None:
        args.append(f.value)  # a method that may change its object
    return {a.id for a in args if isinstance(a, ast.Name)}


def has_effects(stmts: list[ast.stmt], env: dict[str, Any]) -> bool:
    """May ``stmts`` change state their caller sees: write into an array (or list) they
    did not make (directly, through a local bound to it, or by a call not known pure:
    ``purity.call_pure``), or draw from a random generator?"""
    written: set[str] = set()
    bound: set[str] = set()
    copies: list[tuple[str, ast.expr]] = []  # name = expression: the name may alias it
    for n in walk(ast.Module(body=list(stmts), type_ignores=[])):
        if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            for t in targets:
                written |= _target_names(t)
                for m in walk(t):
                    if isinstance(m, ast.Name) and isinstance(m.ctx, ast.Store):
                        bound.add(m.id)
                        copies.append((m.id, n.value))
        elif isinstance(n, ast.For):
            bound |= {m.id for m in walk(n.target) if isinstance(m, ast.Name)}
        elif isinstance(n, ast.Call) and not call_pure(n, env):
            if draws(called(n, env)):
                return True
            written |= _may_write(n, env)
    grew = True
    while grew:  # a local bound to a caller's array writes that array
        before = len(written)
        for t, v in copies:
            if t in written and v is not None:
                written |= _data_names(v, env)
        grew = len(written) > before
    return bool(written - bound)


def _conditional(node: ast.AST, field: str, index: int | None) -> bool:
    """Does Python evaluate this child of ``node`` only on some paths?"""
    return (isinstance(node, ast.BoolOp) and field == "values" and bool(index)) \
        or (isinstance(node, ast.IfExp) and field in ("body", "orelse")) \
        or (isinstance(node, ast.Compare) and field == "comparators" and bool(index))


def _children(node: ast.AST, skip_func: bool) -> list[Slot]:
    """The expression children of ``node``, in Python's evaluation order (the fields'
    order for every expression jitgrad accepts)."""
    out: list[Slot] = []
    for field in node_fields(node.__class__):
        if skip_func and field == "func":
            continue
        value = getattr(node, field, None)
        if isinstance(value, (ast.expr, ast.keyword)):
            out.append((node, field, None))
        elif isinstance(value, list):
            out += [(node, field, i) for i, v in enumerate(value)
                    if isinstance(v, (ast.expr, ast.keyword))]
    return out


def _get(slot: Slot) -> Any:
    node, field, i = slot
    v = getattr(node, field)
    return v if i is None else v[i]


def _put(slot: Slot, new: Any) -> None:
    node, field, i = slot
    if i is None:
        setattr(node, field, new)
    else:
        getattr(node, field)[i] = new


class Ordered:
    """Walks an expression in evaluation order; ``inline(call, stmts)`` inlines one call
    (its arguments done), appending its statements to ``stmts`` and returning what
    replaces it, or returns the call itself."""

    def __init__(self, inline: Callable[[ast.Call, list[ast.stmt]], ast.expr],
                 skip_func: Callable[[ast.Call], bool], parsed: Parsed, namer: Namer,
                 env: dict[str, Any], pre: list[ast.stmt]):
        self.inline, self.skip_func = inline, skip_func
        self.parsed, self.namer, self.env, self.pre = parsed, namer, env, pre
        #: operands evaluated whose value the expression has not used yet
        self.pending: list[Slot] = []
        self.conditional = 0
        #: an inlined call with effects was met (``has_effects``)
        self.effects = False

    def visit(self, node: ast.AST) -> ast.AST:
        mark = len(self.pending)
        for slot in _children(node, isinstance(node, ast.Call) and self.skip_func(node)):
            cond = _conditional(*slot)
            self.conditional += cond
            _put(slot, self.visit(_get(slot)))
            self.conditional -= cond
            self.pending.append(slot)
        del self.pending[mark:]
        if not isinstance(node, ast.Call):
            return node
        stmts: list[ast.stmt] = []
        out = self.inline(node, stmts)
        if stmts and has_effects(stmts, self.env):
            if self.conditional:
                raise self.parsed.error(
                    f"'{ast.unparse(node.func)}(...)' changes an array or draws random "
                    "numbers where Python may not call it (after 'and'/'or', in a branch "
                    "of 'x if c else y' or a chained comparison): jitgrad inlines it "
                    "ahead of the expression", node, SPLIT_HINT)
            self.effects = True
            self.hoist()
        self.pre += stmts
        return out

    def hoist(self) -> None:
        """Bind the pending operands to temporaries, in order (the callee of a pending
        method call stays, its object is bound)."""
        for slot in self.pending:
            node, field, _ = slot
            if field == "func":
                if not isinstance(node.func, ast.Attribute):
                    continue
                slot = (node.func, "value", None)
            e = _get(slot)
            if isinstance(e, ast.keyword):
                slot, e = (e, "value", None), e.value
            if isinstance(e, (ast.Name, ast.Constant, ast.Slice, ast.Starred)):
                continue
            t = self.namer.fresh("_t")
            self.pre.append(ast.copy_location(assign(t, e), e))
            _put(slot, ast.copy_location(name(t), e))
