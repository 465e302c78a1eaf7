"""Calls of jitgrad's own transforms inside differentiated code.

A ``jg.differentiate`` object called as a function is the user's function: it inlines
like any helper.  A ``jg.grad``/``jg.value_and_grad`` result, a ``@differentiate``
object's ``.grad``/``.value_and_grad``/``.jvp``, ``jg.jvp`` and ``jg.hvp`` inline their
generated code (``nested.py``).  Every other transform (``jg.vjp`` and ``.vjp``: their
pullback is a function value; a ``jg.jacfwd`` result...) is refused at the call, by name,
before kind inference meets its result (which blamed an unrelated line).
"""

from __future__ import annotations

import ast
import types
from typing import Any

from .parse import Parsed

#: the modules whose functions and objects are jitgrad's transforms
_TRANSFORM_MODULES = frozenset({"jitgrad.api", "jitgrad.forward_api", "jitgrad.cuda_api",
                                "jitgrad.second_order", "jitgrad.runtime.params"})


def _module(obj: Any) -> str:
    if isinstance(obj, (types.FunctionType, types.MethodType, types.ModuleType)):
        return getattr(obj, "__module__", None) or getattr(obj, "__name__", "") or ""
    return type(obj).__module__ or ""


def _differentiated(obj: Any) -> bool:
    return type(obj).__name__ == "Differentiated" and _module(obj) == "jitgrad.api"


def callee(expr: ast.expr, env: dict[str, Any]) -> Any:
    """The object a called ``Name`` or dotted ``Attribute`` refers to (through modules and
    jitgrad's objects, ``d.grad``), else None."""
    if isinstance(expr, ast.Name):
        return env.get(expr.id)
    if isinstance(expr, ast.Attribute):
        base = callee(expr.value, env)
        if isinstance(base, types.ModuleType) or _module(base) in _TRANSFORM_MODULES:
            return getattr(base, expr.attr, None)
    return None


def primal_of(obj: Any) -> Any:
    """What a call of ``obj`` runs as a helper: a ``jg.differentiate`` object's function
    (the one the user passed), else ``obj``."""
    return obj._orig if _differentiated(obj) else obj


def refuse_transform(node: ast.Call, obj: Any, parsed: Parsed) -> None:
    """Refuse a call of a jitgrad transform other than a gradient (``nested.py``) at its
    line."""
    if obj is None or _differentiated(obj) or isinstance(obj, types.ModuleType) \
            or _module(obj) not in _TRANSFORM_MODULES:
        return
    vjp = getattr(obj, "__name__", "") == "vjp"
    raise parsed.error(
        f"'{ast.unparse(node.func)}' is {_describe(obj)}: calling this jitgrad transform "
        "inside a differentiated function (nested differentiation) is not supported"
        f"{' (its pullback is a function value)' if vjp else ''}", node,
        (_VJP_HINT if vjp else "") + "jg.grad/jg.value_and_grad results, a "
        "jg.differentiate object's .grad/.value_and_grad/.jvp, jg.jvp and jg.hvp called "
        "here are differentiated again; for other transforms compute the result outside "
        "the function and pass it in as an argument, or write the derivative you need as "
        "a helper")


#: how to write a vjp inside a differentiated function
_VJP_HINT = ("for the vjp with a cotangent ct, call jg.grad of a helper "
             "'def fc(x, w, ct): return np.sum(ct * f(x, w))' (jg.grad(fc)(x, w, ct)), or "
             "ct * jg.grad(f)(x, w) for a scalar f; ")


def _describe(obj: Any) -> str:
    """How the refusal names a transform."""
    func = getattr(getattr(obj, "diff", None), "func", None)
    if func is not None:  # a jg.grad / jg.value_and_grad result
        kind = "value_and_grad" if getattr(obj, "with_value", False) else "grad"
        return f"jg.{kind} of {func.__name__}"
    owner = getattr(obj, "__self__", None)
    if owner is not None and hasattr(owner, "func"):
        return (f"the .{obj.__name__} method of the jg.differentiate object of "
                f"{owner.func.__name__}")
    name = getattr(obj, "__name__", type(obj).__name__)
    if isinstance(obj, types.FunctionType) and "<locals>" in obj.__qualname__:
        return f"a function made by jg.{obj.__qualname__.split('.')[0]}"
    return f"jitgrad's {name}"


__all__ = ["callee", "primal_of", "refuse_transform"]
