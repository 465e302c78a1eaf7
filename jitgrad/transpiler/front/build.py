"""Small syntax-tree builders the front end's passes share (``name``, ``assign``...)."""

from __future__ import annotations

import ast

#: the contexts every built name shares (they hold no state: the parser shares them too)
_LOAD, _STORE = ast.Load(), ast.Store()


def name(id_: str, store: bool = False) -> ast.Name:
    return ast.Name(id=id_, ctx=_STORE if store else _LOAD)


def assign(target: str | ast.expr, value: ast.expr) -> ast.Assign:
    t = name(target, True) if isinstance(target, str) else target
    return ast.Assign(targets=[t], value=value, lineno=getattr(value, "lineno", 0))


def const(v) -> ast.Constant:
    return ast.Constant(value=v)


def not_(e: ast.expr) -> ast.expr:
    return ast.UnaryOp(op=ast.Not(), operand=e)


def contains(stmts: list[ast.stmt], kinds: tuple[type, ...], stop=()) -> bool:
    """Does a node of ``kinds`` occur in ``stmts`` (not looking inside nodes of ``stop``)?"""
    stack = list(stmts)
    while stack:
        n = stack.pop()
        if isinstance(n, kinds):
            return True
        if isinstance(n, stop):
            continue
        stack.extend(ast.iter_child_nodes(n))
    return False
