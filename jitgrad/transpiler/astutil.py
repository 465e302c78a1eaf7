"""Small AST helpers shared by the reverse pass and its tape and control-flow parts
(syntax only: nothing here reads an analysis)."""

from __future__ import annotations

import ast
import types
from collections.abc import Callable
from typing import Any

from .nodes import loaded_ids, nodes_of, walk


def binop(a: ast.expr, op: ast.operator, b: ast.expr) -> ast.expr:
    return ast.BinOp(left=a, op=op, right=b)


def names_of(e: ast.AST) -> list[str]:
    return [n.id for n in nodes_of(e) if isinstance(n, ast.Name)]


def exposed_reads(stmts: list[ast.stmt], ids: Callable[[ast.AST], set[str]] = loaded_ids
                  ) -> set[str]:
    """The names a block may read before it binds them on the way there: its inputs (a
    loop body's names read before they are bound in the body count, as in the first trip).
    ``ids``: the names a statement or expression reads (``dataflow.content_ids``: only
    those whose values it reads)."""
    out: set[str] = set()
    _exposed(stmts, set(), out, ids)
    return out


def _exposed(stmts: list[ast.stmt], bound: set[str], out: set[str],
             loaded_ids: Callable[[ast.AST], set[str]] = loaded_ids) -> None:
    for s in stmts:
        if isinstance(s, (ast.For, ast.While)):
            head = s.iter if isinstance(s, ast.For) else s.test
            out |= loaded_ids(head) - bound
            inner = set(bound)
            if isinstance(s, ast.For):
                inner |= {n.id for n in walk(s.target) if isinstance(n, ast.Name)}
            _exposed(s.body, inner, out, loaded_ids)  # (it may not run: binds nothing after)
            _exposed(s.orelse, set(bound), out, loaded_ids)
        elif isinstance(s, ast.If):
            out |= loaded_ids(s.test) - bound
            yes, no = set(bound), set(bound)
            _exposed(s.body, yes, out, loaded_ids)
            _exposed(s.orelse, no, out, loaded_ids)
            bound |= yes & no
        else:
            out |= loaded_ids(s) - bound
            if isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name) \
                    and s.target.id not in bound:
                out.add(s.target.id)  # x += e reads x
            if isinstance(s, ast.Assign):
                t = s.targets[0]
                if t.__class__ is ast.Name:  # (the usual target, without a walk)
                    if isinstance(t.ctx, ast.Store):
                        bound.add(t.id)
                else:
                    bound |= {n.id for n in walk(t)
                              if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def walk_values(e: ast.AST):
    """Nodes of ``e`` whose values matter (not inside len(...), x.shape and other queries)."""
    stack = [e]
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, (ast.Call, ast.Attribute)):
            continue
        stack.extend(ast.iter_child_nodes(n))


def resolve(expr: ast.expr, env: dict[str, Any]) -> Any:
    """The object a ``Name`` or dotted ``Attribute`` expression refers to, else None."""
    if isinstance(expr, ast.Name):
        return env.get(expr.id)
    if isinstance(expr, ast.Attribute):
        base = resolve(expr.value, env)
        if base is not None and isinstance(base, types.ModuleType):
            return getattr(base, expr.attr, None)
    return None
