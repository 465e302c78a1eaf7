"""The refusal of recursion, with the loop that replaces it where that loop is mechanical.

A function that returns either a base value or a call of itself (a tail call) is a
``while`` loop over its parameters (one that returns ``e * f(...)`` or ``e + f(...)``:
the loop also multiplies or adds up ``e``); the hint prints that loop, written with the
user's own names and expressions::

    def tail(a, depth):              hint: ... the function's body becomes
        if depth == 0:                         while depth != 0:
            return a                               a, depth = a * 1.1, depth - 1
        return tail(a * 1.1, depth - 1)        return a

Other recursions (mutual, several calls, a call's value used otherwise) get the general
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
    (either branch the call, the other ``return`` after the if or in its else), or plus
    ``return e * name(...)`` (``+``; either order): then the loop multiplies (adds) ``e``."""
    body = tree.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    if not body or not isinstance(body[0], ast.If):
        return None
    test, rets = body[0].test, body[0].body + (body[0].orelse or body[1:])
    if len(body) != (1 if body[0].orelse else 2) or len(rets) != 2 \
            or not all(isinstance(r, ast.Return) and r.value is not None for r in rets):
        return None
    found = [_recursive_part(r.value, name) for r in rets]
    if found[0] is not None and found[1] is None:  # recurse while the test holds
        (call, factor), base = found[0], rets[1].value
    elif found[1] is not None and found[0] is None:
        (call, factor), base, test = found[1], rets[0].value, _negate(test)
    else:
        return None
    step = _step(tree.args, call)
    if step is None or any(_self_call(n, name) for n in ast.walk(base)):
        return None
    if factor is None:
        return [f"while {ast.unparse(test)}:", f"    {step}", f"return {ast.unparse(base)}"]
    op, e = factor
    acc = "acc"
    while acc in {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} \
            | {a.arg for a in tree.args.args}:
        acc += "_"
    times = lambda v: ast.unparse(ast.BinOp(left=ast.Name(id=acc), op=op, right=v))  # noqa: E731
    return [f"{acc} = {'1.0' if isinstance(op, ast.Mult) else '0.0'}",
            f"while {ast.unparse(test)}:", f"    {acc} = {times(e)}", f"    {step}",
            f"return {times(base)}"]


def _recursive_part(e: ast.expr, name: str) -> tuple | None:
    """(the call, None) for ``name(...)``; (the call, (op, other)) for ``other * name(...)``
    or ``name(...) + other`` (``*``, ``+``; ``other`` without the call); else None."""
    if _self_call(e, name):
        return e, None
    if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Mult, ast.Add)):
        for call, other in ((e.right, e.left), (e.left, e.right)):
            if _self_call(call, name) and not any(_self_call(n, name) for n in ast.walk(other)):
                return call, (e.op, other)
    return None


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
