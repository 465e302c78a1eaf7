"""NumPy calls of compiled gradient code that call a helper cached on disk instead.

Numba compiles an implementation of each NumPy function a jitted function calls, per
argument types, in every process: ``np.zeros_like(W1)`` (the adjoint buffers),
``np.empty_like`` and ``X @ W1`` cost the MLP's first gradient call about 0.5 s of its
2.4 s.  Under ``jit=True`` the generated code calls, for these, helpers of
``kernels.helpers`` that do only that call (``np_zeros_like``, ``np_empty_like``,
``np_matmul``): ``cached_overload``s, whose machine code a machine compiles once per
argument types and every later process loads::

    dW1 = np.zeros_like(W1)         dW1 = np_zeros_like(W1)
    _t2 = X @ W1                    _t2 = np_matmul(X, W1)

The same values: each helper is the NumPy call, compiled by Numba.  Only the forms
written here are rewritten (one positional argument, no keywords; a binary ``@``, not
``@=``), only after every other step (no step sees the helpers), and not under
``parallel=True`` (Numba's parfors take ``np.zeros_like`` and friends apart themselves).
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from typing import Any

from ...rules.primitives import cached_twin
from ..astutil import resolve
from ..front.desugar import name
from ..nodes import clone, walk


def cached_calls(body: list[ast.stmt], env: dict[str, Any],
                 helper: Callable[[str], str]) -> list[ast.stmt]:
    """``body`` with the calls of one argument that the primitive table gives a cached
    twin (``cached_as``: ``np.zeros_like``, however NumPy is spelled) and every ``a @ b``
    calling the cached helpers, named in generated code by ``helper``.  The
    statements of ``body`` are not changed (the variants share them): those that change
    are copied."""
    out = []
    for s in body:
        if any(_helper_of(n, env) for n in walk(s)):
            s = _Rewrite(env, helper).visit(clone(s))
        out.append(s)
    return out


def _helper_of(n: ast.AST, env: dict[str, Any]) -> str | None:
    """The helper that ``n`` becomes a call of, else None."""
    if isinstance(n, ast.BinOp) and isinstance(n.op, ast.MatMult):
        return cached_twin(operator.matmul)
    if isinstance(n, ast.Call) and len(n.args) == 1 and not n.keywords \
            and not isinstance(n.args[0], ast.Starred):
        return cached_twin(resolve(n.func, env))
    return None


class _Rewrite(ast.NodeTransformer):
    """Rewrites the nodes ``_helper_of`` names a helper for, inner ones first."""

    def __init__(self, env: dict[str, Any], helper: Callable[[str], str]):
        self.env, self.helper = env, helper

    def generic_visit(self, node: ast.AST) -> ast.AST:
        node = super().generic_visit(node)
        h = _helper_of(node, self.env)
        if h is None:
            return node
        args = [node.left, node.right] if isinstance(node, ast.BinOp) else node.args
        return ast.copy_location(ast.Call(func=name(self.helper(h)), args=args,
                                          keywords=[]), node)


__all__ = ["cached_calls"]
