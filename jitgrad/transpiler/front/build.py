"""Small syntax-tree builders the front end's passes share (``name``, ``assign``...)."""

from __future__ import annotations

import ast

#: the contexts every built name shares (they hold no state: the parser shares them too)
_LOAD, _STORE = ast.Load(), ast.Store()
_NEW = ast.AST.__new__  # (a node of the class given, no field set)


def name(id_: str, store: bool = False) -> ast.Name:
    """``ast.Name(id=id_, ctx=...)``, its dictionary given whole (the constructor's keyword
    handling costs more than the node)."""
    n = _NEW(ast.Name)
    n.__dict__ = {"id": id_, "ctx": _STORE if store else _LOAD}
    return n


def assign(target: str | ast.expr, value: ast.expr) -> ast.Assign:
    """``ast.Assign(targets=[target], value=value, lineno=...)`` (the line of ``value``, 0
    without one), built as ``name`` builds a name."""
    t = name(target, True) if isinstance(target, str) else target
    n = _NEW(ast.Assign)
    n.__dict__ = {"targets": [t], "value": value, "lineno": getattr(value, "lineno", 0)}
    return n


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
