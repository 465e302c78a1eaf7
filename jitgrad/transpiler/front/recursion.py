"""The refusal of recursion, with the loop that replaces it where that loop is mechanical.

A function that returns either a base value or a call of itself (a tail call) is a
``while`` loop over its parameters; the hint prints that loop, written with the user's
own names and expressions::

    def tail(a, depth):              hint: ... the function's body becomes
        if depth == 0:                         while depth != 0:
            return a                               a, depth = a * 1.1, depth - 1
        return tail(a * 1.1, depth - 1)        return a

Other recursions (mutual, or a call whose value is used further) get the general
advice and a pointer to the determinant example of ``docs/porting.md``.
"""

from __future__ import annotations

import ast
from typing import Any

from ...errors import TransformError
from .parse import Parsed, parse_function

_NEGATED = {ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Lt: ast.GtE, ast.GtE: ast.Lt,
            ast.Gt: ast.LtE, ast.LtE: ast.Gt}

GENERAL = ("rewrite the recursion as a loop: keep what each call passes down in "
           "variables that a while or for loop updates, or fill an array bottom-up, each "
           "entry from entries computed before it (the section 'Recursion' of "
           "docs/porting.md rewrites a Laplace-expansion determinant)")


def recursion_error(caller: Parsed, node: ast.Call, fn: Any, stack: list[Any]) -> TransformError:
    """The TransformError for ``node`` (in ``caller``), a call of ``fn``, already on ``stack``."""
    chain = [g.__name__ for g in stack[stack.index(fn):]] + [fn.__name__]
    what = f"{fn.__name__} calls itself" if len(chain) == 2 else " calls ".join(chain)
    loop = tail_loop(parse_function(fn).tree, fn.__name__) if len(chain) == 2 else None
    hint = GENERAL if loop is None else (
        "rewrite the recursion as a loop; the function's body becomes\n"
        + "\n".join(" " * 8 + line for line in loop))
    return caller.error(f"recursion ({what}) is not supported", node, hint)


def tail_loop(tree: ast.FunctionDef, name: str) -> list[str] | None:
    """The body's lines as a while loop, for ``if c: return base`` plus ``return name(...)``
    (either branch the call, the other ``return`` after the if or in its else)."""
    body = tree.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    if not body or not isinstance(body[0], ast.If):
        return None
    test, rets = body[0].test, body[0].body + (body[0].orelse or body[1:])
    if len(body) != (1 if body[0].orelse else 2) or len(rets) != 2 \
            or not all(isinstance(r, ast.Return) and r.value is not None for r in rets):
        return None
    calls = [_self_call(r.value, name) for r in rets]
    if calls[0] is not None and calls[1] is None:  # recurse while the test holds
        call, base = calls[0], rets[1].value
    elif calls[1] is not None and calls[0] is None:
        call, base, test = calls[1], rets[0].value, _negate(test)
    else:
        return None
    step = _step(tree.args, call)
    if step is None or any(_self_call(n, name) for n in ast.walk(base)):
        return None
    return [f"while {ast.unparse(test)}:", f"    {step}", f"return {ast.unparse(base)}"]


def _self_call(e: ast.AST, name: str) -> ast.Call | None:
    if isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and e.func.id == name:
        return e
    return None


def _step(args: ast.arguments, call: ast.Call) -> str | None:
    """``a, n = a * 1.1, n - 1``: the parameters the call changes, from its arguments."""
    params = [a.arg for a in args.args]
    if (args.posonlyargs or args.vararg or args.kwonlyargs or args.kwarg or call.keywords
            or len(call.args) != len(params)
            or any(isinstance(a, ast.Starred) for a in call.args)):
        return None
    changed = [(p, a) for p, a in zip(params, call.args, strict=True)
               if not (isinstance(a, ast.Name) and a.id == p)]
    if not changed:
        return None
    names = ", ".join(p for p, _ in changed)
    return f"{names} = {', '.join(ast.unparse(a) for _, a in changed)}"


def _negate(test: ast.expr) -> ast.expr:
    """``not test``, as a flipped comparison where it is one."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return test.operand
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in _NEGATED:
        return ast.Compare(left=test.left, ops=[_NEGATED[type(test.ops[0])]()],
                           comparators=test.comparators)
    return ast.UnaryOp(op=ast.Not(), operand=test)
