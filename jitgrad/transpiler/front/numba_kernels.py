"""Numba's kernel decorators in differentiated code: ``@numba.vectorize`` and ``@numba.stencil``.

Both wrap a scalar Python function jitgrad can differentiate.  A vectorize ufunc called
on numbers is its scalar function, inlined like a helper (its arguments are bound to
names the kinds pass checks are numbers: ``refuse_elementwise_arrays``).  A stencil
call ``k(a)`` / ``k(a, out=b)`` becomes a generated helper looping over the interior,
with the kernel's relative indices ``a[-1, 0]`` shifted to ``a[i0 - 1, i1 + 0]``; the
border holds ``cval`` (0 by default) in a new array, and is left as it is in ``out``.
"""

from __future__ import annotations

import ast
import inspect
import itertools
import linecache
import textwrap
from typing import Any

import numpy as np

from ..nodes import walk_stmts
from ..notes import ELEMENTWISE
from .desugar import assign

_GENERATED = itertools.count()


def is_vectorized(obj: Any) -> bool:
    """A ``@numba.vectorize`` ufunc (a DUFunc; its ``_dispatcher.py_func`` is the scalar)."""
    return type(obj).__name__ == "DUFunc" and type(obj).__module__.startswith("numba") \
        and getattr(getattr(obj, "_dispatcher", None), "py_func", None) is not None


def is_stencil(obj: Any) -> bool:
    """A ``@numba.stencil`` kernel (a StencilFunc; ``kernel_ir.func_id.func`` is the kernel)."""
    return type(obj).__name__ == "StencilFunc" and type(obj).__module__.startswith("numba")


def kernel_function(obj: Any) -> Any:
    """The Python function behind a vectorize ufunc or a stencil (what the cache digests),
    else None."""
    if is_vectorized(obj):
        return obj._dispatcher.py_func
    if is_stencil(obj):
        return obj.kernel_ir.func_id.func
    return None


def kernel_call(inliner, obj: Any, node: ast.Call, parsed, pre: list[ast.stmt]):
    """The inlined expression for a call of a vectorize ufunc or a stencil, else None."""
    if is_vectorized(obj):
        return _vectorized(inliner, obj, node, parsed, pre)
    if is_stencil(obj):
        return _stencil(inliner, obj, node, parsed, pre)
    return None


def _vectorized(inliner, obj: Any, node: ast.Call, parsed, pre: list[ast.stmt]):
    py = obj._dispatcher.py_func
    if node.keywords:
        raise parsed.error(f"the @numba.vectorize ufunc '{py.__name__}' is called with "
                           "keywords; jitgrad inlines calls with positional arguments", node)
    params = [a.arg for a in ast.parse(_source(py)).body[0].args.args]
    names = []
    for i, a in enumerate(node.args):
        n = inliner.namer.fresh(params[i] if i < len(params) else f"_{py.__name__}_arg{i}")
        bind = ast.copy_location(assign(n, a), node)
        ELEMENTWISE.set(bind, py.__name__)
        pre.append(bind)
        names.append(ast.Name(id=n, ctx=ast.Load()))
    fname = inliner.namer.fresh(f"_{py.__name__}_scalar")
    parsed.env[fname] = py
    call = ast.copy_location(ast.Call(func=ast.Name(id=fname, ctx=ast.Load()), args=names,
                                      keywords=[]), node)
    return inliner.call(py, call, parsed, pre)


def _source(py: Any) -> str:
    return textwrap.dedent(inspect.getsource(py))


def refuse_elementwise_arrays(body: list[ast.stmt], kinds: dict, parsed) -> None:
    """A vectorize ufunc's argument that is an array: refused (its scalar is inlined)."""
    for s in walk_stmts(body):
        ufunc = ELEMENTWISE.get(s)
        if ufunc is None or not (isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name)):
            continue
        k = kinds.get(s.targets[0].id)
        if k is not None and k.is_array:
            raise parsed.error(
                f"the @numba.vectorize ufunc '{ufunc}' is called on an array; jitgrad "
                "differentiates its scalar function on numbers", s,
                f"loop over the elements and call '{ufunc}' on each, e.g. 'for i in "
                f"range(len(x)): y[i] = {ufunc}(x[i], ...)'")


# --- stencils ------------------------------------------------------------------------


def _stencil(inliner, obj: Any, node: ast.Call, parsed, pre: list[ast.stmt]):
    py = obj.kernel_ir.func_id.func
    options = dict(obj.options)
    cval = options.pop("cval", 0)
    kw = {k.arg: k.value for k in node.keywords}
    if options or set(kw) - {"out"} or getattr(obj, "mode", "constant") != "constant":
        raise parsed.error(
            f"the @numba.stencil kernel '{py.__name__}' uses options jitgrad does not "
            f"rewrite ({sorted(options) + sorted(set(kw) - {'out'})}); it rewrites the "
            "default constant border, 'cval' and 'out='", node,
            "write the loop over the interior yourself")
    try:
        helper = _stencil_helper(py, cval, "out" in kw)
    except _Refused as e:
        raise parsed.error(f"the @numba.stencil kernel '{py.__name__}': {e}", node,
                           "write the loop over the interior yourself") from None
    fname = inliner.namer.fresh(f"_{py.__name__}_stencil")
    parsed.env[fname] = helper
    args = list(node.args) + ([kw["out"]] if "out" in kw else [])
    call = ast.copy_location(ast.Call(func=ast.Name(id=fname, ctx=ast.Load()), args=args,
                                      keywords=[]), node)
    return inliner.call(helper, call, parsed, pre)


class _Refused(Exception):
    pass


def _stencil_helper(py: Any, cval: Any, with_out: bool) -> Any:
    """A Python function ``k_stencil(*params[, out])`` looping ``py``'s body over the
    interior, compiled from generated source jitgrad can read back."""
    tree = ast.parse(_source(py)).body[0]
    params = [a.arg for a in tree.args.args]
    shift = _Shift(set(params))
    tree = shift.visit(tree)
    if not shift.offsets:
        raise _Refused("it reads no neighbour of its array arguments")
    nd = len(shift.offsets[0])
    if any(len(o) != nd for o in shift.offsets):
        raise _Refused("its relative indices have different numbers of axes")
    lo = [-min(0, *(o[d] for o in shift.offsets)) for d in range(nd)]
    hi = [max(0, *(o[d] for o in shift.offsets)) for d in range(nd)]
    idx = [f"_i{d}" for d in range(nd)]
    arr = next(p for p in params if p in shift.arrays)
    name = py.__name__
    tree.name = f"{name}_point"
    tree.args.args += [ast.arg(arg=i) for i in idx]
    tree.decorator_list = []
    sig = ", ".join(params + (["out"] if with_out else []))
    lines = [f"def {name}_stencil({sig}):"]
    if not with_out:
        lines.append(f"    out = np.full({arr}.shape, {float(cval)!r})")
    for d, i in enumerate(idx):
        lines.append(f"{'    ' * (d + 1)}for {i} in range({lo[d]}, {arr}.shape[{d}] - {hi[d]}):")
    point = ", ".join(params + idx)
    lines.append(f"{'    ' * (nd + 1)}out[{', '.join(idx)}] = {name}_point({point})")
    lines.append("    return out")
    text = ast.unparse(ast.fix_missing_locations(tree)) + "\n\n\n" + "\n".join(lines) + "\n"
    fname = f"<jitgrad-stencil-{name}-{next(_GENERATED)}>"
    linecache.cache[fname] = (len(text), None, text.splitlines(True), fname)
    ns = dict(py.__globals__)
    ns.setdefault("np", np)
    exec(compile(text, fname, "exec"), ns)
    return ns[f"{name}_stencil"]


class _Shift(ast.NodeTransformer):
    """``a[c0, c1]`` on a parameter ``a`` -> ``a[_i0 + c0, _i1 + c1]``; notes the offsets."""

    def __init__(self, params: set[str]):
        self.params = params
        self.offsets: list[tuple[int, ...]] = []
        self.arrays: set[str] = set()

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        self.generic_visit(node)
        if not (isinstance(node.value, ast.Name) and node.value.id in self.params):
            return node
        elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        offs = [_int_constant(e) for e in elts]
        if any(o is None for o in offs):
            raise _Refused(f"'{ast.unparse(node)}' is not a relative index of constants")
        self.offsets.append(tuple(offs))
        self.arrays.add(node.value.id)
        new = [ast.BinOp(left=ast.Name(id=f"_i{d}", ctx=ast.Load()), op=ast.Add(),
                         right=ast.Constant(o)) for d, o in enumerate(offs)]
        node.slice = ast.Tuple(elts=new, ctx=ast.Load()) if len(new) > 1 else new[0]
        return node


def _int_constant(e: ast.expr) -> int | None:
    if isinstance(e, ast.Constant) and isinstance(e.value, int) and not isinstance(e.value, bool):
        return e.value
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
        v = _int_constant(e.operand)
        return None if v is None else -v
    return None

