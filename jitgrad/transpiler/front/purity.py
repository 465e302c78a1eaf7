"""Which expressions only compute a value: reads, arithmetic, and calls of functions that
neither write nor draw (the primitive table's ``pure`` fact: NumPy ufuncs, ``math``, the
primitives with gradient rules, the read-only helpers of generated code).

``call_pure`` is the one question every pass asks of a call: the gather form and
``last_taken`` (which evaluate an expression at another point than the user did),
``zero_skip`` (which skips loops), ``split`` (which compiles a helper on its own) and
``call_order`` (which orders calls with effects).
"""

from __future__ import annotations

import ast
import builtins
import types
from typing import Any

from ...rules.primitives import method_function, pure
from ..astutil import resolve
from ..nodes import walk


def resolve_name(f: ast.expr, env: dict[str, Any]) -> Any:
    """What ``f`` names in the code's namespace (which falls back to builtins)."""
    if isinstance(f, ast.Name) and f.id not in env:
        return getattr(builtins, f.id, None)
    return resolve(f, env)


def builtins_unshadowed(env: dict[str, Any], names: tuple[str, ...]) -> bool:
    """The module does not shadow any of the builtins ``names`` (generated code calls
    them by name: ``max``, ``range``...)."""
    return all(resolve_name(ast.Name(id=b, ctx=ast.Load()), env) is getattr(builtins, b)
               for b in names)


def called(c: ast.Call, env: dict[str, Any]) -> Any:
    """The function call ``c`` runs: what its name refers to (builtins included), or the
    one an array method spells (``x.sum()``: ``np.sum``); None where unknown."""
    fn = resolve_name(c.func, env)
    f = c.func
    if fn is None and isinstance(f, ast.Attribute) \
            and not isinstance(resolve_name(f.value, env), types.ModuleType):
        return method_function(f.attr)
    return fn


def call_pure(c: ast.Call, env: dict[str, Any]) -> bool:
    """Does call ``c`` only compute a value: the table says its function is ``pure``, and
    it passes no ``out=``?"""
    return not any(k.arg == "out" for k in c.keywords) and pure(called(c, env))


def is_pure(e: ast.expr, env: dict[str, Any]) -> bool:
    """Only reads and arithmetic, and calls that compute a value (``call_pure``)."""
    for n in walk(e):
        if isinstance(n, (ast.NamedExpr, ast.Lambda, ast.Await, ast.Yield, ast.YieldFrom)):
            return False
        if isinstance(n, ast.Call) and not call_pure(n, env):
            return False
    return True


__all__ = ["builtins_unshadowed", "call_pure", "called", "is_pure", "resolve_name"]
