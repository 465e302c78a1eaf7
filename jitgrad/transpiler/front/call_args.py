"""Call arguments of an inlined helper: keywords put in place, defaults filled in.

Before::                                 After (the arguments ``inline.py`` binds)::

    def rhs(y, k, c=0.1): ...
    rhs(y, k)                                [y, k, 0.1]
    rhs(y, c=c2, k=k)                        [y, k, c2]

A default is the value Python stored when the ``def`` ran (``rhs.__defaults__``): a
number becomes a literal, anything else (an array, a module-level object) a name in the
generated code's globals.  Wrong calls are refused at the call, with Python's wording.
"""

from __future__ import annotations

import ast
from typing import Any

import numpy as np

from ..naming import Namer
from .parse import Parsed

#: default values written as literals in the generated code (others: a global name)
_LITERAL = (bool, int, float, np.float64, np.int64, np.bool_)


def call_arguments(fn: Any, params: list[str], node: ast.Call, caller: Parsed,
                   env: dict[str, Any], namer: Namer) -> tuple[list[ast.expr], set[str]]:
    """The argument expressions of ``node`` in ``fn``'s parameter order (``params``), and
    the parameters given their default."""
    name = fn.__name__
    defaults = fn.__defaults__ or ()
    first = len(params) - len(defaults)
    sig = ", ".join(params[:first] + [f"{p}={_show(v)}" for p, v in zip(params[first:],
                                                                         defaults, strict=True)])
    if len(node.args) > len(params):
        raise caller.error(f"{name}() takes {len(params)} positional arguments but "
                           f"{len(node.args)} were given", node, f"its parameters: {sig}")
    given: dict[str, ast.expr] = dict(zip(params, node.args, strict=False))
    for k in node.keywords:  # (a ``**kwargs`` argument is refused by fence.py)
        if k.arg not in params:
            raise caller.error(f"{name}() got an unexpected keyword argument {k.arg!r}", node,
                               f"its parameters: {sig}")
        if k.arg in given:
            raise caller.error(f"{name}() got multiple values for argument {k.arg!r}", node)
        given[k.arg] = k.value
    missing = [p for p in params[:first] if p not in given]
    if missing:
        raise caller.error(f"{name}() missing {len(missing)} required argument"
                           f"{'s' if len(missing) > 1 else ''}: "
                           f"{', '.join(repr(p) for p in missing)}", node,
                           f"its parameters: {sig}")
    filled = {p for p in params[first:] if p not in given}
    for i, p in enumerate(params[first:]):
        if p in filled:
            given[p] = ast.copy_location(_default(name, p, defaults[i], env, namer), node)
    return [given[p] for p in params], filled


def _default(fname: str, param: str, value: Any, env: dict[str, Any],
             namer: Namer) -> ast.expr:
    """The default ``value`` of ``fname``'s ``param`` as an expression."""
    if type(value) in _LITERAL:
        return ast.Constant(value=value.item() if isinstance(value, np.generic) else value)
    base = f"{fname}_{param}"
    alias = next((k for k, v in env.items() if v is value and k.startswith(base)), None)
    if alias is None:  # (one name per default, however many calls use it)
        alias = namer.fresh(base)
        env[alias] = value
    return ast.Name(id=alias, ctx=ast.Load())


def _show(v: Any) -> str:
    """A default value in a message: a number as written, else its type."""
    return repr(v.item() if isinstance(v, np.generic) else v) if type(v) in _LITERAL \
        else f"<{type(v).__name__}>"
