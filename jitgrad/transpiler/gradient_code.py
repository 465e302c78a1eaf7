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
import builtins
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .analysis.kinds import FLOAT
from .backend import emit
from .backend import jit as backend
from .backend.as_parsed import Printed, as_parsed
from .backend.optimize import dead_code
from .backend.zero_skip import depending_on, zero_guards
from .front.desugar import assign, const
from .front.nested import inner_gradient
from .front.parse import Parsed, free_names
from .ir import result_expr
from .nodes import clone
from .notes import SOURCE_LINE


def gradient_code(d: Any, gen: Any, value: bool = False, tangents: bool = False) -> Any:
    """The gradient code ``gen`` of ``d`` as a Python function of ``(*params, _dret)``
    returning the gradients (``value``: the value, then the gradients, one flat tuple),
    kept in ``d``'s specialisation cache.  ``tangents``: for forward mode over it
    (``jg.hvp``), with its reversed loops skipped where a cotangent that keeps a zero
    tangent is zero (``_zero_guards``); reverse mode over it (a nested gradient,
    ``grad(grad)``) must see every loop."""
    gen = _inlined(d, gen)
    return d._specs.derived("gradient code", gen, (value, tangents),
                            lambda: _loaded(d, gen.unit, *_function(d, gen, value, tangents)))


def _inlined(d: Any, gen: Any) -> Any:
    """``gen``, or, where it calls split helpers, ``gen`` made again with them inlined."""
    if gen.unit.split and gen.unit.splits:  # differentiated again: its helpers inlined
        return _unsplit(d, gen)
    return gen


def _function(d: Any, gen: Any, value: bool,
              tangents: bool) -> tuple[str, list[str], list[ast.stmt]]:
    """The gradient code's name, parameters and body (``gradient_code``'s ``value`` and
    ``tangents``)."""
    u = gen.unit
    ir = u.ir
    grads = [ast.Name(id=g, ctx=ast.Load()) for g in ir.grads]
    out = ast.Tuple(elts=[clone(ir.results[0]), *grads], ctx=ast.Load()) if value \
        else result_expr(grads)
    body = dead_code(clone(ir.body()) + [ast.Return(value=out)], ir.shared, env=u.env)
    if tangents:
        body = _zero_guards(d, u, body)
    return u.namer.fresh(f"{u.name}_g_"), [*ir.params, ir.seed], body


def _loaded(d: Any, u: Any, fname: str, params: list[str], body: list[ast.stmt],
            printed: Printed | None = None) -> Any:
    """The function ``fname`` printed and loaded, its lines mapped to the user's
    (``user_lines``: a refusal of forward mode names the user's line)."""
    printed = printed or as_parsed(fname, params, body)
    src = emit.unparse(emit.function_def(fname, params, body))
    namespace = backend.imports({"g": src}, u.env)
    fn = emit.load(src, fname, namespace, d.func.__qualname__ + ".grad")
    fn.__module__ = getattr(d.func, "__module__", None)
    fn.user_lines = user_lines(printed.lines)
    return fn


@dataclass
class GradientTree:
    """Gradient code for forward mode to differentiate again (``gradient_tree``)."""

    #: the function: a stand-in of its signature that loads the code when called, where
    #: ``parsed`` is; else the code loaded (its source is parsed, as any function's)
    function: Any
    #: its tree as the parser gives it back (``as_parsed``), its names' values and file
    parsed: Parsed | None

    def differentiated(self, d: Any) -> Any:
        """A ``Differentiated`` of it with ``d``'s ``wrt`` and ``jit``, prepared from the
        tree (no source parsed or fenced: see ``pipeline.prepare_tree``)."""
        return d._plain(self.function, d.wrt, d.jit,
                        None if self.parsed is None else self._prepared)

    def _prepared(self, d2: Any) -> Any:
        return _GENERATE[1](self.function, self.parsed, parallel=emit.is_parallel(d2.options),
                            jit=bool(d2.jit))


def gradient_tree(d: Any, gen: Any, tangents: bool = False) -> GradientTree:
    """The gradient code ``gen`` of ``d`` (``gradient_code``'s, without the value) as the
    tree forward mode starts from, not printed, loaded and parsed again; kept in ``d``'s
    specialisation cache."""
    gen = _inlined(d, gen)
    return d._specs.derived("gradient tree", gen, (tangents,),
                            lambda: _gradient_tree(d, gen, tangents))


def _gradient_tree(d: Any, gen: Any, tangents: bool) -> GradientTree:
    """``gradient_tree`` made: the tree as parsed, a stand-in function, the line map."""
    u = gen.unit
    fname, params, body = _function(d, gen, False, tangents)
    printed = as_parsed(fname, params, body)
    if printed.tree is None:  # (printed and parsed after all, and fenced)
        return GradientTree(_loaded(d, u, fname, params, body, printed), None)
    fn = emit.stand_in(fname, params, d.func.__qualname__ + ".grad",
                       lambda: _loaded(d, u, fname, params, body, printed))
    fn.__module__ = getattr(d.func, "__module__", None)
    fn.user_lines = user_lines(printed.lines)
    free = free_names(printed.tree)
    env = {n: u.env[n] if n in u.env else getattr(builtins, n) for n in free
           if n in u.env or hasattr(builtins, n)}
    text = functools.cache(lambda: emit.unparse(emit.function_def(fname, params, clone(body))))
    return GradientTree(fn, TreeParsed(fn, printed.tree, env, fn.__code__.co_filename, 1,
                                       free=free, text=text))


@dataclass
class TreeParsed(Parsed):
    """``Parsed`` of generated code made as a tree: its lines' text printed when a message
    first asks for one."""

    text: Callable[[], str] | None = None

    def source_line(self, line: int) -> str:
        if not self.lines and self.text is not None:
            self.lines = self.text().splitlines()
        return super().source_line(line)


#: reverse mode's code generator (``pipeline.generate``) and ``pipeline.prepare_tree``,
#: registered by that module: it imports this one
_GENERATE: list[Callable[..., Any]] = []


def register_generate(generate: Callable[..., Any], prepare_tree: Callable[..., Any]) -> None:
    """Set the generator ``_unsplit`` makes inlined reverse-mode code with, and the front
    end ``gradient_tree``'s code is prepared with (``pipeline.prepare_tree``)."""
    _GENERATE[:] = [generate, prepare_tree]


def _unsplit(d: Any, gen: Any) -> Any:
    """``gen`` made again with every helper inlined (no split calls, ``front/split.py``):
    the code second order and nested gradients differentiate once more (``d``'s
    specialisation cache keeps it)."""

    def make() -> Any:
        u = gen.unit
        user = {code: p for p, code in u.renamed.items()}
        kinds = {user.get(p, p): k for p, k in u.arg_kinds.items()}
        return _GENERATE[0](d._prep(), [d.params[i] for i in d.wrt_positions], kinds,
                            split=False)

    return d._specs.derived("unsplit", gen, (), make)


def _zero_guards(d: Any, u: Any, body: list[ast.stmt]) -> list[ast.stmt]:
    """``body`` with ``zero_skip``'s guards on the scalar cotangents that depend on no
    ``wrt`` argument: forward mode gives them no tangent, so a loop linear in one adds
    only zeros, tangents included, where it is zero (kmeans: ``ddist``)."""
    ir = u.ir
    wrt = [d.params[i] for i in d.wrt_positions]
    varied = depending_on(body, wrt, ir.shared, u.env)
    scalars = frozenset(a for n, a in u.namer.adjoints().items() if a not in varied
                        and (k := u.kinds.get(n)) is not None and k.cls == "f"
                        and k.ndim == 0)
    return zero_guards(body, scalars, u.env, ir.shared)


def tangent_function(d: Any, gen: Any, value: bool = True, seed: str | None = None) -> Any:
    """The forward-mode code ``gen`` of ``d`` as a Python function of ``(*params, *seeds)``
    returning ``(*values, *tangents)`` (``value``) or the tangents; ``seed``: a parameter
    fixed to 1.0 (the gradient code's ``_dret``: ``hvp``), kept in ``d``'s specialisation
    cache."""
    return d._specs.derived("tangent function", gen, (value, seed),
                            lambda: _tangent_function(d, gen, value, seed))


def _tangent_function(d: Any, gen: Any, value: bool, seed: str | None) -> Any:
    """``tangent_function`` made: the function's source, loaded."""
    u = gen.unit
    ir = u.ir
    outs = [*(ir.results if value else ()), *ir.tangents]
    pre = [] if seed is None else [assign(seed, const(1.0))]
    body = dead_code(pre + clone(ir.body()) + [ast.Return(value=result_expr(clone(outs)))],
                     env=u.env)
    fname = u.namer.fresh(f"{u.name}_t_")
    params = [p for p in ir.params if p != seed]
    src = emit.unparse(emit.function_def(fname, [*params, *ir.seeds], body))
    namespace = backend.imports({"t": src}, u.env)
    fn = emit.load(src, fname, namespace, d.func.__qualname__ + ".jvp")
    fn.__module__ = getattr(d.func, "__module__", None)
    return fn


def _gradient_helper(d: Any, kinds: dict, reverse: Any) -> tuple[Any, Any]:
    """A nested gradient: ``d``'s gradient code, ``_dret`` defaulting to 1.0."""
    gen = reverse()

    def make(value: bool) -> Any:
        fn = gradient_code(d, gen, value=value)
        fn.__defaults__ = (*(d.func.__defaults__ or ()), 1.0)
        return fn
    return gen, make


#: forward mode's code generator (``forward_pipeline.generate_jvp``), registered by that
#: module: it imports the pipeline, which imports this one
_GENERATE_JVP: list[Callable[..., Any]] = []


def register_generate_jvp(generate: Callable[..., Any]) -> None:
    """Set the forward-mode generator nested jvp and hvp calls inline code from."""
    _GENERATE_JVP[:] = [generate]


def _tangent_helper(d: Any, kinds: dict, reverse: Any) -> tuple[Any, Any]:
    """A nested jvp: ``d``'s forward-mode code."""
    generate_jvp = _GENERATE_JVP[0]
    gen = generate_jvp(d._prep(), [d.params[i] for i in d.wrt_positions], kinds)
    return gen, lambda value: tangent_function(d, gen, value)


def _hvp_helper(d: Any, kinds: dict, reverse: Any) -> tuple[Any, Any]:
    """A nested hvp: the forward-mode code of ``d``'s gradient code (forward over reverse,
    as ``jg.hvp`` runs it), its seed ``_dret`` 1.0."""
    generate_jvp = _GENERATE_JVP[0]
    gen = reverse()

    def make(value: bool) -> Any:
        d2 = gradient_tree(d, gen).differentiated(d)
        seed = gen.unit.ir.seed
        wrt = [d.params[i] for i in d.wrt_positions]
        gen2 = generate_jvp(d2._prep(), wrt, {**kinds, seed: FLOAT})
        return tangent_function(d2, gen2, value=False, seed=seed)
    return gen, make


#: the generated code each kind of nested call inlines (``front/nested.ENTRIES``):
#: ``(d, kinds, reverse)`` -> (the code generated first, for its checks; making the
#: helper, given whether it returns the value too); ``reverse()``: d's reverse mode
NESTED_CODE = {"gradient": _gradient_helper, "tangent": _tangent_helper, "hvp": _hvp_helper}


def user_lines(lines: list[tuple[int, ast.stmt, int | None]]) -> dict[int, int]:
    """Line of the printed gradient code -> the user's line it comes from, from
    ``as_parsed``'s ``lines``: the line of the last ``# line N:`` comment before it (the
    adjoint sweep, ``notes.SOURCE_LINE``), else the statement's own (the forward sweep)."""
    out: dict[int, int] = {}
    current = None
    for line, s, own in lines:
        if emit.comment_text(s) is not None:
            current = SOURCE_LINE.get(s) or current
        elif current is not None or own:
            out[line] = current if current is not None else own
    return out


def caller(obj: Any) -> Any:
    """A function calling the gradient ``obj`` (see ``front.nested.inner_gradient``) with its
    function's parameters: what ``jg.grad(jg.grad(f))`` differentiates (the call inlined)."""
    diff, with_value = inner_gradient(obj)  # (a gradient, not a jvp: see api.py)
    params = ", ".join(diff.params)
    name = f"{diff.func.__name__}_{'value_and_grad' if with_value else 'grad'}"
    src = f"def {name}({params}):\n    return _inner({params})\n"
    fn = emit.load(src, name, {"_inner": obj}, f"{diff.func.__qualname__}.grad")
    fn.__defaults__ = diff.func.__defaults__
    fn.__module__ = getattr(diff.func, "__module__", None)
    return fn


__all__ = ["NESTED_CODE", "GradientTree", "TreeParsed", "caller", "gradient_code",
           "gradient_tree", "register_generate", "tangent_function", "user_lines"]
