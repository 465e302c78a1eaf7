"""Hand-written IR for the backend's steps: an ``Adjoint`` from source text, a ``Lowering``
of it, and one step run on it (``tests/backend/``)."""

from __future__ import annotations

import ast
import textwrap
from typing import Any

from jitgrad.transpiler.backend import emit
from jitgrad.transpiler.backend.passes import BACKEND, Context, Lowering, run
from jitgrad.transpiler.ir import Adjoint
from jitgrad.transpiler.notes import TAPED, ZEROING

STEPS = {p.name: p for p in BACKEND}


def stmts(src: str) -> tuple[ast.stmt, ...]:
    """The statements of ``src`` (dedented), comments as ``emit.comment`` markers; each
    ``d = np.zeros_like(v)`` marked a zeroing, and each push ``_tape_x[k] = v`` and pop
    ``v = _tape_x[k]`` marked taped, as the reverse pass marks its own (``ZEROING``,
    ``TAPED``)."""
    lines = []
    for line in textwrap.dedent(src).strip("\n").splitlines():
        text = line.lstrip()
        if text.startswith("# "):
            indent = line[:len(line) - len(text)]
            lines.append(f"{indent}{emit.comment(text[2:]).value.value!r}")
        else:
            lines.append(line)
    body = tuple(ast.parse("\n".join(lines)).body) if lines else ()
    for n in ast.walk(ast.Module(body=list(body), type_ignores=[])):
        if isinstance(n, ast.Assign) and len(n.targets) == 1 \
                and any(_taped(e) for e in (n.targets[0], n.value)):
            TAPED.set(n, True)
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call) \
                and isinstance(n.value.func, ast.Attribute) and n.value.func.attr == "zeros_like" \
                and len(n.value.args) == 1 and isinstance(n.value.args[0], ast.Name):
            ZEROING.set(n.value, True)
    return body


def _taped(e: ast.expr) -> bool:
    """Is ``e`` an element of a tape the reverse pass would make (``_tape_x[k]``)?"""
    return isinstance(e, ast.Subscript) and isinstance(e.value, ast.Name) \
        and e.value.id.startswith("_tape_")


def adjoint(forward: str = "", init: str = "", sweep: str = "", *, workspace: str = "",
            params: tuple[str, ...] = ("x",), results: tuple[str, ...] = ("y",),
            grads: tuple[str, ...] = ("dx",), **fields: Any) -> Adjoint:
    """An ``Adjoint`` record of ``f(*params)`` from the text of its parts."""
    return Adjoint("f", params, "_dret", (), stmts(workspace), stmts(forward), stmts(init),
                   stmts(sweep), tuple(ast.Name(id=r, ctx=ast.Load()) for r in results),
                   grads, **fields)


def context(ir: Adjoint, **kw: Any) -> Context:
    return Context(ir, {"grad": "f_grad", "grad_only": "f_gradonly"}, **kw)


def lowering(ctx: Context, body: str | None = None, variant: str = "grad",
             params: list[str] | None = None) -> Lowering:
    """The variant with ``body`` (default: the IR's whole body and the variant's return)."""
    stmts_ = list(stmts(body)) if body is not None else [*ctx.ir.body(),
                                                           ctx.returns(variant)]
    return Lowering(ctx, variant, ctx.names[variant], stmts_,
                    params if params is not None else [*ctx.ir.params, ctx.ir.seed])


def after(name: str, s: Lowering) -> str:
    """The function after running the one step ``name`` on ``s``, as ``stage`` shows it."""
    step = STEPS[name]
    run(s, steps=[step])
    return step.show(s)


def code(src: str) -> str:
    """``src`` dedented, as expected output."""
    return textwrap.dedent(src).strip("\n") + "\n"
