"""Nested differentiation: a jitgrad transform called inside a differentiated function.

A call of a ``jg.grad``/``jg.value_and_grad`` result, of a ``@differentiate`` object's
``.grad``/``.value_and_grad``/``.jvp``, or of ``jg.jvp``/``jg.hvp``, inlines that
transform's generated code as a helper (``ENTRIES``: the gradient code, the tangent code,
or the tangent code of the gradient code), which the outer transform differentiates again
(reverse over reverse or over forward; forward over either for ``jvp``/``hvp``).  A
``jvp``/``hvp`` call is first made flat (``flat_call``): ``jg.jvp(f, (x, w), (v,))``
calls the helper as ``(x, w, v)``.  The generated code depends on the kinds of the call's
arguments, which are known only once the outer function is specialised, so preparing such
a function takes two rounds: the first (``probe``) binds each call's arguments to fresh
names and puts a stand-in of the right kind in place of the result (the wrt arguments
times ``0.0``; for a jvp ``(y, y * 0.0)``, ``y`` the inner function inlined); kind
inference on it gives the kinds at each call; the second inlines, at each call in the same
order, the generated code for those kinds (``pipeline.with_nested``, whose helpers come
from ``transpiler/gradient_code.NESTED_CODE``).

Before::                               After (the probe)::

    dU = jg.grad(U)                        _x_in = x * 2.0
    def f(x):                              g = _x_in * 0.0
        g = dU(x * 2.0)                    return g * x
        return g * x

A function whose nested calls are being inlined cannot call a gradient of itself, directly
or through another (``expanding``, ``refuse_recursion``): that is recursion, refused at
the call.
"""

from __future__ import annotations

import ast
import contextlib
import linecache
import threading
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ...errors import TransformError
from .desugar import assign, const
from .transforms import callee


@dataclass(frozen=True)
class Entry:
    """What a call of one jitgrad entry point inlines: ``code``, which generated code
    (``gradient_code.NESTED_CODE``); ``value``: the helper returns the value too."""

    code: str
    value: bool


#: inner entry point -> the generated code its call inlines
ENTRIES = {"grad": Entry("gradient", False), "value_and_grad": Entry("gradient", True),
           "jvp": Entry("tangent", True), "hvp": Entry("hvp", False)}
#: the entry points whose call inlines the gradient code: name -> returns the value too
_METHODS = {k: e.value for k, e in ENTRIES.items() if e.code == "gradient"}
#: the forward-mode entry points taking ``(primals, tangents)`` (``flat_call``)
_FORWARD = ("jvp", "hvp")


#: per thread: the functions whose nested gradient calls are being inlined, outermost first
_EXPANDING = threading.local()


@contextlib.contextmanager
def expanding(func: Any) -> Iterator[None]:
    """Inlining the nested gradient calls of ``func`` (see ``helper``'s recursion check)."""
    stack = _EXPANDING.__dict__.setdefault("funcs", [])
    stack.append(func)
    try:
        yield
    finally:
        stack.pop()


def _is(obj: Any, cls: str) -> bool:
    return type(obj).__name__ == cls and type(obj).__module__ == "jitgrad.api"


def inner_gradient(obj: Any) -> tuple[Any, bool] | None:
    """``(the Differentiated, does the call return the value too)`` if calling ``obj``
    runs a jitgrad gradient this module inlines, else None."""
    if _is(obj, "GradFunction"):
        return obj.diff, obj.with_value
    if isinstance(obj, types.MethodType) and obj.__name__ in _METHODS \
            and type(obj.__self__).__name__ == "Differentiated":
        return obj.__self__, _METHODS[obj.__name__]
    return None


def written_gradient(expr: ast.expr, env: dict[str, Any]) -> tuple[Any, bool] | None:
    """``inner_gradient`` of a gradient made where it is called, ``jg.grad(f, wrt=1)(x, y)``:
    ``f`` a name, the other arguments literals; else None."""
    if not isinstance(expr, ast.Call):
        return None
    fn = callee(expr.func, env)
    if getattr(fn, "__module__", None) != "jitgrad.api" \
            or getattr(fn, "__name__", None) not in _METHODS:
        return None
    try:
        args = [env[expr.args[0].id], *(ast.literal_eval(a) for a in expr.args[1:])]
        kwargs = {k.arg: ast.literal_eval(k.value) for k in expr.keywords}
    except (AttributeError, IndexError, KeyError, ValueError, TypeError):
        return None
    return inner_gradient(fn(*args, **kwargs))


def inner_call(node: ast.Call, env: dict[str, Any],
               parsed: Any) -> tuple[Any, str, ast.Call] | None:
    """``(the Differentiated, its entry point in ENTRIES, the call with flat arguments)``
    if ``node`` (its arguments already visited) calls a jitgrad transform this module
    inlines, else None."""
    obj = callee(node.func, env)
    got = inner_gradient(obj)
    if got is not None:
        return got[0], "value_and_grad" if got[1] else "grad", node
    if isinstance(obj, types.MethodType) and obj.__name__ == "jvp" \
            and _is(obj.__self__, "Differentiated"):
        return obj.__self__, "jvp", flat_call(obj.__self__, node, node.args, parsed)
    if getattr(obj, "__module__", None) != "jitgrad.forward_api" \
            or getattr(obj, "__name__", None) not in _FORWARD or not node.args:
        return None
    diff = _static_diff(obj, node, env, parsed)
    return diff, obj.__name__, flat_call(diff, node, node.args[1:], parsed)


def _static_diff(obj: Any, node: ast.Call, env: dict[str, Any], parsed: Any) -> Any:
    """The ``Differentiated`` a ``jg.jvp(f, ...)``/``jg.hvp(f, ...)`` call differentiates:
    ``f`` a name, ``wrt`` (and ``jit``) literals."""
    f = callee(node.args[0], env)
    try:
        opts = {k.arg: ast.literal_eval(k.value) for k in node.keywords}
    except ValueError:
        opts = None
    if f is None or opts is None or set(opts) - {"wrt", "jit"}:
        raise parsed.error(f"'{ast.unparse(node)}' (nested differentiation) needs a function "
                           "given by name and literal wrt= (no keyword arguments of f)", node,
                           f"write jg.{obj.__name__}(f, (x, y), (v,), wrt=0)")
    return _MAKE_DIFF[0](f, opts.get("wrt"), True)  # (inlined: jit= is the outer's)


#: how a function becomes its ``Differentiated`` (``forward_api._diff``): registered by
#: the api, which imports the transpiler (the transpiler imports nothing of the api)
_MAKE_DIFF: list[Callable[..., Any]] = []


def register_differentiator(make: Callable[..., Any]) -> None:
    """Set how the ``f`` of a nested ``jg.jvp(f, ...)`` becomes a ``Differentiated``."""
    _MAKE_DIFF[:] = [make]


def make_differentiated(f: Any, wrt: Any, jit: bool) -> Any:
    """``f``'s ``Differentiated`` (``jit``: compiled with Numba), made by the api."""
    return _MAKE_DIFF[0](f, wrt, jit)


def flat_call(diff: Any, node: ast.Call, rest: list[ast.expr], parsed: Any) -> ast.Call:
    """``node`` (``jvp``/``hvp`` of ``diff`` with ``rest``: ``(primals, tangents)``) as a
    call of the primals and then one tangent per wrt argument."""
    primals = rest[0] if len(rest) == 2 else None
    tans = rest[-1] if rest else None
    k = len(diff.wrt_positions)
    if isinstance(tans, ast.Tuple) and (len(tans.elts) == 1 or not diff.single):
        tans = tans.elts
    elif tans is not None:
        tans = [tans] if diff.single else None
    if not isinstance(primals, ast.Tuple) or len(primals.elts) != len(diff.params) \
            or tans is None or len(tans) != k or any(isinstance(t, ast.Starred)
                                                    for t in [*primals.elts, *tans]):
        raise parsed.error(f"'{ast.unparse(node.func)}' (nested differentiation) needs its "
                           f"primals as a tuple of all {len(diff.params)} arguments "
                           f"({', '.join(diff.params)}) and {k} tangent"
                           f"{'s' if k > 1 else ''} written out", node,
                           "write (x, w) and (v,) in the call itself, defaults included")
    return ast.copy_location(ast.Call(func=node.func, args=[*primals.elts, *tans],
                                      keywords=[]), node)


def refuse_unsupported(diff: Any, node: ast.Call, parsed: Any) -> None:
    """Refuse, at the call, what the inlined gradient code cannot stand for."""
    name = ast.unparse(node.func)
    why = None
    if diff.has_aux:
        why = "its function has has_aux=True"
    elif not diff.single and len(diff.wrt_positions) == 1:
        why = "its wrt is a one-element tuple (the gradient a 1-tuple)"
    elif diff._tuples or any(p.kind is not p.POSITIONAL_OR_KEYWORD
                             for p in diff._sig.parameters.values()):
        why = "its function takes tuple, *args or keyword-only parameters"
    if why is not None:
        raise parsed.error(f"'{name}' is a jitgrad gradient called inside a differentiated "
                           f"function (nested differentiation), but {why}", node,
                           "call a gradient of a function of plain float and array "
                           "parameters (wrt=0 rather than (0,)), or pass the inner "
                           "derivative in as an argument")


def binds(args: list[ast.expr], names: list[str], node: ast.Call) -> list[ast.stmt]:
    """The probe's binds of ``args`` to ``names``."""
    out = [ast.copy_location(assign(n, a), node) for n, a in zip(names, args, strict=True)]
    for b in out:
        for m in ast.walk(b):
            if isinstance(m, (ast.stmt, ast.expr)) and not getattr(m, "lineno", None):
                ast.copy_location(m, node)
    return out


def probe(diff: Any, with_value: bool, names: list[str], node: ast.Call) -> ast.expr:
    """The stand-in of a gradient's (or Hessian-vector product's) result in the probe."""
    grads = [ast.BinOp(left=ast.Name(id=names[i], ctx=ast.Load()), op=ast.Mult(),
                       right=const(0.0)) for i in diff.wrt_positions]
    out: ast.expr = grads[0] if diff.single else ast.Tuple(elts=grads, ctx=ast.Load())
    if with_value:
        out = ast.Tuple(elts=[const(0.0), out], ctx=ast.Load())
    return ast.copy_location(out, node)


def site_kinds(diff: Any, names: list[str], kinds: dict[str, Any], node: ast.Call,
               parsed: Any) -> dict[str, Any]:
    """The kinds (``analysis.kinds.Kind``) of one call's arguments, by the inner function's
    parameters, from the probe's ``kinds``; refusing what its gradient cannot take (and
    tangents, the names after the parameters', unlike their primals)."""
    out = {}
    for i, n in zip(diff.wrt_positions, names[len(diff.params):], strict=False):
        k, want = kinds.get(n), kinds.get(names[i])
        if k is None or k.cls not in ("f", "i") or want is None or k.ndim != want.ndim:
            raise parsed.error(f"the tangent of '{diff.params[i]}' in the nested "
                               f"'{ast.unparse(node.func)}' is not a float of the primal's "
                               f"rank ({want})", node, "pass tangents shaped like their "
                               "primals")
    names = names[:len(diff.params)]
    for p, n in zip(diff.params, names, strict=True):
        k = kinds.get(n)
        if k is None or k.cls not in ("f", "i", "b") or (k.is_array and k.ndim is None):
            raise parsed.error(f"argument '{p}' of the nested gradient "
                               f"'{ast.unparse(node.func)}' has no known kind (a float, an "
                               "int or an array of known rank)", node,
                               "pass float scalars and arrays to a gradient called inside "
                               "a differentiated function")
        out[p] = k
    for i in diff.wrt_positions:
        k = out[diff.params[i]]
        if k.cls != "f":
            raise parsed.error(f"argument '{diff.params[i]}' of the nested gradient "
                               f"'{ast.unparse(node.func)}' is differentiated by it but is "
                               f"{'an integer' if k.cls in ('i', 'b') else 'not a float'}",
                               node, "pass a float (e.g. float(n)) to a wrt argument")
    return out


def refuse_recursion(diff: Any, node: ast.Call, parsed: Any) -> None:
    """Refuse a gradient of a function whose own nested calls are being inlined (it calls a
    gradient of itself, directly or through other gradients)."""
    if any(f is diff.func for f in getattr(_EXPANDING, "funcs", ())):
        raise parsed.error(f"recursion: '{ast.unparse(node.func)}' is a gradient of "
                           f"{diff.func.__name__}, which is being differentiated and calls "
                           "it (itself or through the functions it calls)", node,
                           "compute it outside and pass it in as an argument")


def blamed(e: TransformError) -> TransformError:
    """A refusal ``e`` of a line of inlined gradient code, at the user's call of that
    gradient (the first call site in the user's files ``e`` was reached through); ``e``
    itself where it is about the user's own code."""
    if not e.filename.startswith("<jitgrad:"):
        return e
    for k, site in enumerate(e.called_from):
        where = site.split(" at ", 1)[-1]
        filename, _, line = where.rpartition(":")
        if filename.startswith("<jitgrad:") or not line.isdigit():
            continue
        return TransformError(
            "a jitgrad transform called here (nested differentiation) cannot be "
            f"differentiated again: {e.msg} (in its generated line "
            f"'{e.source_line.strip()}')", filename=filename, lineno=int(line),
            source_line=linecache.getline(filename, int(line)),
            called_from=e.called_from[k + 1:],
            hint="f.source() of the inner gradient shows its code; pass the inner "
                 "derivative in as an argument, or write it as a helper the outer transform "
                 "differentiates")
    return e


__all__ = ["ENTRIES", "Entry", "binds", "blamed", "expanding", "flat_call", "inner_call",
           "inner_gradient", "make_differentiated", "probe", "refuse_recursion",
           "refuse_unsupported", "site_kinds", "written_gradient"]
