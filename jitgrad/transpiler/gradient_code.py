"""Generated gradient code as a plain Python function of ``(*params, _dret)``.

``gradient_code(d, gen)`` lowers the reverse-mode IR of one specialisation of ``d`` to a
function returning the gradients (registered with ``linecache`` so it has a source, its
lines mapped back to the user's in ``user_lines``): what second order (``jg.hvp``)
differentiates with forward mode (``second_order.py``), and what a gradient called inside
a differentiated function inlines as a helper (``front/nested.py``, ``pipeline``).
``caller(g)`` is a function calling a gradient ``g``: what ``jg.grad(jg.grad(f))``
differentiates.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from typing import Any

from .backend import emit
from .backend import jit as backend
from .backend.optimize import dead_code
from .front.nested import inner_gradient
from .ir import result_expr
from .nodes import clone


def gradient_code(d: Any, gen: Any, value: bool = False) -> Any:
    """The gradient code ``gen`` of ``d`` as a Python function of ``(*params, _dret)``
    returning the gradients (``value``: the value, then the gradients, one flat tuple),
    cached on ``d``."""
    cache = d.__dict__.setdefault("_gradfn_cache", {})
    key = (id(gen), value)
    if key in cache and cache[key][0] is gen:
        return cache[key][1]
    u = gen.unit
    ir = u.ir
    grads = [ast.Name(id=g, ctx=ast.Load()) for g in ir.grads]
    out = ast.Tuple(elts=[clone(ir.results[0]), *grads], ctx=ast.Load()) if value \
        else result_expr(grads)
    body = dead_code(clone(ir.body()) + [ast.Return(value=out)], ir.shared)
    fname = u.namer.fresh(f"{u.name}_g_")
    src = emit.unparse(emit.function_def(fname, [*ir.params, ir.seed], body))
    namespace = backend.imports({"g": src}, u.env)
    fn = emit.load(src, fname, namespace, d.func.__qualname__ + ".grad")
    fn.__module__ = getattr(d.func, "__module__", None)
    fn.user_lines = user_lines(body, src)  # (a refusal of forward mode names the user's line)
    cache[key] = (gen, fn)
    return fn


_LINE = re.compile(r"line (\d+): ")


def user_lines(body: list[ast.stmt], src: str) -> dict[int, int]:
    """Line of ``src`` (``body`` unparsed) -> the user's line it comes from: the line of the
    last ``# line N:`` comment before it (the adjoint sweep), else the statement's own (the
    forward sweep); empty where the two do not pair up."""
    lines: list[int | None] = []
    current = None
    for s in _preorder(body):
        text = emit.comment_text(s)
        if text is not None:
            m = _LINE.match(text)
            current = int(m[1]) if m else current
            continue
        lines.append(current if current is not None else getattr(s, "lineno", None) or None)
    made = list(_preorder(ast.parse(src).body[0].body))
    if len(made) != len(lines):
        return {}
    out: dict[int, int] = {}
    for g, line in zip(made, lines, strict=True):
        last = g.lineno if any(getattr(g, f, None) for f in emit.BLOCK_FIELDS) else g.end_lineno
        for k in range(g.lineno, last + 1):
            if line:
                out[k] = line
    return out


def _preorder(stmts: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements under ``stmts`` in source order."""
    for s in stmts:
        yield s
        for f in emit.BLOCK_FIELDS:
            yield from _preorder(getattr(s, f, None) or [])


def caller(obj: Any) -> Any:
    """A function calling the gradient ``obj`` (see ``front.nested.inner_gradient``) with its
    function's parameters: what ``jg.grad(jg.grad(f))`` differentiates (the call inlined)."""
    diff, with_value = inner_gradient(obj)
    params = ", ".join(diff.params)
    name = f"{diff.func.__name__}_{'value_and_grad' if with_value else 'grad'}"
    src = f"def {name}({params}):\n    return _inner({params})\n"
    fn = emit.load(src, name, {"_inner": obj}, f"{diff.func.__qualname__}.grad")
    fn.__defaults__ = diff.func.__defaults__
    fn.__module__ = getattr(diff.func, "__module__", None)
    return fn


__all__ = ["caller", "gradient_code", "user_lines"]
