"""Lowering: from the IR to Python function definitions for the CPU target.

One function per variant, all from the same ``Adjoint`` record:

- ``"grad"``: ``f_grad(*params, seed) -> (value, grads)``, both sweeps;
- ``"grad_only"``: ``(None, grads)``, without the forward work that only served
  the returned value;
- ``"forward"`` and ``"adjoint"``: one sweep each, for reading (``stage=``), not run.

Dead code is removed per variant, since what is live depends on what is returned.
"""

from __future__ import annotations

import ast

from ..ir import Adjoint, Tangent, result_expr
from ..nodes import clone, loaded_ids
from . import emit
from .optimize import Facts, dead_code, dead_code_variants

VARIANTS = ("grad", "grad_only")
PARTS = ("forward", "adjoint")


def result_return(ir: Adjoint, variant: str) -> ast.Return:
    """``return (value, grads)``, or ``(None, grads)`` for the gradient-only variant."""
    grads = result_expr([ast.Name(id=g, ctx=ast.Load()) for g in ir.grads])
    value = result_expr(clone(list(ir.results))) if variant == "grad" else ast.Constant(None)
    return ast.Return(value=ast.Tuple(elts=[value, grads], ctx=ast.Load()))


def lower_tangent(ir: Tangent, fname: str) -> ast.FunctionDef:
    """Forward mode's ``"jvp"`` variant: ``f_jvp(*params, *seeds) -> (value, tangent)``."""
    ret = ast.Return(value=ast.Tuple(elts=[result_expr(clone(list(ir.results))),
                                           result_expr(clone(list(ir.tangents)))],
                                     ctx=ast.Load()))
    body = dead_code(clone(ir.body()) + [ret], {})
    return emit.function_def(fname, [*ir.params, *ir.seeds], body)


def lower_variants(ir: Adjoint, fnames: dict[str, str]) -> dict[str, ast.FunctionDef]:
    """``lower`` of every one of ``VARIANTS`` (``fnames``: their names), with one dead-code
    propagation: what the gradients need, then what the value adds."""
    rets = {v: result_return(ir, v) for v in ("grad_only", "grad")}
    roots = [loaded_ids(rets["grad_only"]), loaded_ids(rets["grad"])]
    bodies = dict(zip(rets, dead_code_variants(ir.body(), roots, ir.shared), strict=True))
    return {v: emit.function_def(fnames[v], [*ir.params, ir.seed], [*bodies[v], rets[v]])
            for v in VARIANTS}


def lower(ir: Adjoint | Tangent, variant: str, fname: str,
          memo: Facts | None = None) -> ast.FunctionDef:
    """The function ``fname`` computing ``variant`` (one of ``VARIANTS`` or ``PARTS``, or
    ``"jvp"`` for a ``Tangent`` record); ``memo``: what dead-code removal learnt of the IR's
    statements in another variant."""
    if variant == "jvp":
        return lower_tangent(ir, fname)
    if variant in VARIANTS:
        # dead_code copies what it changes: the variants share the IR's simple statements
        body = dead_code(ir.body() + [result_return(ir, variant)], ir.shared, memo)
        return emit.function_def(fname, [*ir.params, ir.seed], body)
    if variant == "forward":
        return emit.function_def(fname, list(ir.params), [*ir.prologue, *ir.workspace,
                                                          *ir.forward])
    if variant == "adjoint":
        return emit.function_def(fname, [ir.seed], [*ir.init, *ir.adjoint])
    raise ValueError(f"unknown variant {variant!r}: one of {', '.join(VARIANTS + PARTS)}")


__all__ = ["PARTS", "VARIANTS", "lower", "lower_tangent", "lower_variants"]
