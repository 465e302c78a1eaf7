"""Small AST helpers shared by the reverse pass and its tape and control-flow parts
(syntax only: nothing here reads an analysis)."""

from __future__ import annotations

import ast

from .nodes import stmt_defs, walk, walk_stmts


def binop(a: ast.expr, op: ast.operator, b: ast.expr) -> ast.expr:
    return ast.BinOp(left=a, op=op, right=b)


def names_of(e: ast.AST) -> list[str]:
    return [n.id for n in walk(e) if isinstance(n, ast.Name)]


def all_defs(s: ast.stmt) -> set[str]:
    out = set(stmt_defs(s))
    for f in ("body", "orelse"):
        for x in walk_stmts(getattr(s, f, []) or []):
            out.update(stmt_defs(x))
    return out



def walk_values(e: ast.AST):
    """Nodes of ``e`` whose values matter (not inside len(...), x.shape and other queries)."""
    stack = [e]
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, (ast.Call, ast.Attribute)):
            continue
        stack.extend(ast.iter_child_nodes(n))
