"""Second order by forward-over-reverse: the forward pass applied to generated gradient code.

``gradient_function(d, args)`` lowers the reverse-mode IR of ``d`` for these argument
kinds to a plain Python function ``f_g(*params, _dret) -> grads``
(``transpiler/gradient_code.py``), which ``forward_mode`` wraps in a ``Differentiated``
with the same ``wrt``.  Its ``jvp`` is then the Hessian-vector product; the tangent code is one
generated function (primal, adjoint sweep and both tangents), compiled once with Numba.
Helpers the gradient code calls have tangent rules in ``rules/second_order.py``; where
one is missing, forward mode refuses with a ``TransformError`` naming the generated line.
"""

from __future__ import annotations

from typing import Any

from .transpiler.gradient_code import gradient_code, user_lines


def gradient_function(d: Any, args: tuple) -> Any:
    """The gradient of ``d`` at these argument kinds as a Python function of
    ``(*params, _dret)`` returning the gradients (cached on ``d``)."""
    return gradient_code(d, d._generated(args), tangents=True)


__all__ = ["gradient_code", "gradient_function", "user_lines"]
