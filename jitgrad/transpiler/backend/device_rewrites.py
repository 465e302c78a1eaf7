"""How device code writes the primitives that are no renamed call: the table's
``device_rewrite`` facts for NumPy's scalar spellings CUDA has no function for, and for
the helpers of generated code that are expressions on scalars.

Each rewrite takes the call's arguments and the names device code gives its modules
(``names["numba"]``, ``names["math"]``) and returns the expression that replaces the call
(``np.square(x)``: ``x * x``).  They live beside the CUDA lowering, which asks for them
through ``primitives.device_rewrite``, because they build syntax (the rules do not
import the transpiler).
"""

from __future__ import annotations

import ast

import numpy as np

from ...kernels import helpers
from ...rules.primitives import declare
from ..nodes import clone


def _zero_cmp(x: ast.expr, op: ast.cmpop) -> ast.expr:
    return ast.Compare(left=x, ops=[op], comparators=[ast.Constant(value=0.0)])


def _zero(args: list[ast.expr], names: dict[str, str]) -> ast.expr:
    """``zeros_like(x)``: ``0.0`` (scalars only on the device)."""
    return ast.Constant(value=0.0)


def _first(args: list[ast.expr], names: dict[str, str]) -> ast.expr:
    """``unbroadcast(g, x)``: ``g`` (scalars only on the device)."""
    return args[0]


def guard(args: list[ast.expr], names: dict[str, str]) -> ast.expr:
    """``guard(dy, g)``: ``g if dy != 0.0 else 0.0``."""
    return ast.IfExp(test=_zero_cmp(args[0], ast.NotEq()), body=args[1],
                     orelse=ast.Constant(value=0.0))


def pow_log(args: list[ast.expr], names: dict[str, str]) -> ast.expr:
    """``pow_log(a)``: ``math.log(a) if a > 0.0 else 0.0``."""
    log = ast.Attribute(value=ast.Name(id=names["math"], ctx=ast.Load()), attr="log",
                        ctx=ast.Load())
    return ast.IfExp(test=_zero_cmp(args[0], ast.Gt()),
                     body=ast.Call(func=log, args=[clone(args[0])], keywords=[]),
                     orelse=ast.Constant(value=0.0))


def float32(args: list[ast.expr], names: dict[str, str]) -> ast.expr:
    """``np.float32(x)``: ``numba.float32(x)``."""
    func = ast.Attribute(value=ast.Name(id=names["numba"], ctx=ast.Load()), attr="float32",
                         ctx=ast.Load())
    return ast.Call(func=func, args=list(args), keywords=[])


def square(args: list[ast.expr], names: dict[str, str]) -> ast.expr:
    """``np.square(x)``: ``x * x``."""
    return ast.BinOp(left=args[0], op=ast.Mult(), right=clone(args[0]))


def reciprocal(args: list[ast.expr], names: dict[str, str]) -> ast.expr:
    """``np.reciprocal(x)``: ``1.0 / x``."""
    return ast.BinOp(left=ast.Constant(value=1.0), op=ast.Div(), right=args[0])


def sign(args: list[ast.expr], names: dict[str, str]) -> ast.expr:
    """``np.sign(x)``: ``1.0 if x > 0.0 else (-1.0 if x < 0.0 else x * 0.0)`` (nan stays nan)."""
    x = args[0]
    zero = ast.BinOp(left=clone(x), op=ast.Mult(), right=ast.Constant(value=0.0))
    return ast.IfExp(test=_zero_cmp(x, ast.Gt()), body=ast.Constant(value=1.0),
                     orelse=ast.IfExp(test=_zero_cmp(clone(x), ast.Lt()),
                                      body=ast.Constant(value=-1.0), orelse=zero))


for _fn, _rewrite in [(np.float32, float32), (np.square, square),
                      (np.reciprocal, reciprocal), (np.sign, sign), (helpers.guard, guard),
                      (helpers.pow_log, pow_log), (helpers.unbroadcast, _first),
                      (helpers.zeros_like, _zero)]:
    declare(_fn, device_rewrite=_rewrite)

__all__ = ["float32", "guard", "pow_log", "reciprocal", "sign", "square"]
