"""Second order by forward-over-reverse: the forward pass applied to generated gradient code.

``gradient_function(d, args)`` lowers the reverse-mode IR of ``d`` for these argument
kinds to the gradient code ``f_g(*params, _dret) -> grads`` as a tree
(``transpiler/gradient_code.gradient_tree``: the tree ``ast.parse`` would give back from
its text, ``backend/as_parsed.py``, made without printing or parsing it), which
``forward_mode`` wraps in a ``Differentiated`` with the same ``wrt``, prepared from that
tree (``pipeline.prepare_tree``: the front end's passes after ``parse``, no fence).  Its
``jvp`` is then the Hessian-vector product; the tangent code is one generated function
(primal, adjoint sweep and both tangents), compiled once with Numba.  Helpers the gradient
code calls have tangent rules in ``rules/second_order.py``; where one is missing, forward
mode refuses with a ``TransformError`` naming the generated line, which ``forward_mode``
maps to the user's (``user_lines``).
"""

from __future__ import annotations

from typing import Any

from .transpiler.gradient_code import GradientTree, gradient_code, gradient_tree, user_lines


def gradient_function(d: Any, args: tuple) -> GradientTree:
    """The gradient code of ``d`` at these argument kinds, a function of
    ``(*params, _dret)`` returning the gradients, as forward mode takes it (cached on
    ``d``)."""
    return gradient_tree(d, d._generated(args), tangents=True)


__all__ = ["gradient_code", "gradient_function", "user_lines"]
