"""Which expressions only compute a value: reads, arithmetic, and calls of functions that
neither write nor draw (NumPy ufuncs, ``math``, a few builtins and generated helpers).

Passes that evaluate an expression at another point than the user did (the gather form
at a neighbouring index, ``last_taken`` after its loop) may do so only for these.
"""

from __future__ import annotations

import ast
import builtins
from typing import Any

import numpy as np

from ...rules.primitives import pure
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


def is_pure(e: ast.expr, env: dict[str, Any]) -> bool:
    """Only reads and arithmetic, and calls of functions that compute a value (the
    primitive table's ``pure`` fact; no keyword arguments to a ufunc: ``out=`` writes)."""
    for n in walk(e):
        if isinstance(n, (ast.NamedExpr, ast.Lambda, ast.Await, ast.Yield, ast.YieldFrom)):
            return False
        if isinstance(n, ast.Call):
            fn = resolve_name(n.func, env)
            if fn is None or not pure(fn) or (isinstance(fn, np.ufunc) and n.keywords):
                return False
    return True


__all__ = ["is_pure", "resolve_name"]
