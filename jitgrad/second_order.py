"""Second order by forward-over-reverse: the forward pass applied to generated gradient code.

``gradient_function(d, args)`` lowers the reverse-mode IR of ``d`` for these argument
kinds to a plain Python function ``f_g(*params, _dret) -> grads`` (registered with
``linecache`` so it has a source), and wraps it in a ``Differentiated`` with the same
``wrt``.  Its ``jvp`` is then the Hessian-vector product; the tangent code is one
generated function (primal, adjoint sweep and both tangents), compiled once with Numba.
Helpers the gradient code calls have tangent rules in ``rules/second_order.py``; where
one is missing, forward mode refuses with a ``TransformError`` naming the generated line.
"""

from __future__ import annotations

import ast
from typing import Any

from .transpiler.backend import emit
from .transpiler.backend import jit as backend
from .transpiler.backend.optimize import dead_code
from .transpiler.ir import result_expr
from .transpiler.nodes import clone


def gradient_function(d: Any, args: tuple) -> Any:
    """The gradient of ``d`` at these argument kinds as a Python function of
    ``(*params, _dret)`` returning the gradients (cached on ``d``)."""
    gen = d._generated(args)
    cache = d.__dict__.setdefault("_gradfn_cache", {})
    key = id(gen)
    if key in cache and cache[key][0] is gen:
        return cache[key][1]
    u = gen.unit
    ir = u.ir
    ret = ast.Return(value=result_expr([ast.Name(id=g, ctx=ast.Load()) for g in ir.grads]))
    body = dead_code(clone(ir.body()) + [ret], ir.shared)
    fname = u.namer.fresh(f"{u.name}_g_")
    src = emit.unparse(emit.function_def(fname, [*ir.params, ir.seed], body))
    namespace = backend.imports({"g": src}, u.env)
    fn = emit.load(src, fname, namespace, d.func.__qualname__ + ".grad")
    fn.__module__ = getattr(d.func, "__module__", None)
    cache[key] = (gen, fn)
    return fn
