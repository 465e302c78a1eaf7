"""Gradients called from the user's own ``@numba.njit`` code.

A ``jg.grad``/``jg.value_and_grad`` result and a ``@differentiate`` object are Numba
types carrying the object (``typeof``).  Calling one in compiled code (``dfdx(x)``,
``f.grad(x)``, ``f.value_and_grad(x)``, ``f(x)``) specialises the gradient for the
argument types Numba sees, at typing time, and compiles to a direct call of the
generated, compiled function, as a kernel calls ``device_grad`` on the CUDA target.
Results are those of the Python-level call: the same generated code, seeded with 1.0.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit, types
from numba.core.errors import TypingError
from numba.core.imputils import lower_builtin, lower_constant
from numba.extending import (
    NativeValue,
    models,
    overload,
    overload_method,
    register_model,
    typeof_impl,
    unbox,
)

from .api import Differentiated, GradFunction
from .arguments import describe_params
from .errors import JitgradError
from .transpiler.backend.jit import BUFFER

__all__ = ["DifferentiatedType", "GradFunctionType"]


class GradFunctionType(types.Type):
    """The Numba type of one ``jg.grad``/``jg.value_and_grad`` result (it carries it)."""

    def __init__(self, obj: GradFunction):
        self.obj = obj
        what = "value_and_grad" if obj.with_value else "grad"
        super().__init__(name=f"jitgrad.{what}({obj.diff.func.__qualname__})#{id(obj):x}")


class DifferentiatedType(types.Type):
    """The Numba type of one ``@jitgrad.differentiate`` object (it carries it)."""

    def __init__(self, obj: Differentiated):
        self.obj = obj
        super().__init__(name=f"jitgrad.differentiate({obj.func.__qualname__})#{id(obj):x}")


@typeof_impl.register(GradFunction)
def _typeof_grad(val: GradFunction, c: Any) -> GradFunctionType:
    return GradFunctionType(val)


@typeof_impl.register(Differentiated)
def _typeof_diff(val: Differentiated, c: Any) -> DifferentiatedType:
    return DifferentiatedType(val)


for _t in (GradFunctionType, DifferentiatedType):
    register_model(_t)(models.OpaqueModel)  # no data: the type carries the object

    @lower_constant(_t)
    def _constant(context: Any, builder: Any, ty: Any, pyval: Any) -> Any:
        return context.get_constant_null(ty)

    @unbox(_t)
    def _unbox(typ: Any, obj: Any, c: Any) -> NativeValue:
        return NativeValue(c.context.get_constant_null(typ))

    @lower_builtin(_t, types.VarArg(types.Any))
    def _lower_call(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        """``obj(...)``: the ``__call__`` method's implementation (``overload_method``
        lowers ``obj.__call__(...)``, not a call of ``obj`` itself)."""
        fnty = context.typing_context.resolve_getattr(sig.args[0], "__call__")
        call = context.get_function(fnty, sig)
        context.add_linking_libs(getattr(call, "libs", ()))
        return call(builder, args)


# --- calls --------------------------------------------------------------------------------

@overload_method(GradFunctionType, "__call__")
def _call_grad(self, *args):
    g = self.obj
    what = "value_and_grad" if g.with_value else "grad"
    return _impl(g.diff, args, what, f"jg.{what}({g.diff.func.__name__})")


@overload_method(DifferentiatedType, "grad")
def _method_grad(self, *args):
    return _impl(self.obj, args, "grad", f"{self.obj.func.__name__}.grad")


@overload_method(DifferentiatedType, "value_and_grad")
def _method_value_and_grad(self, *args):
    return _impl(self.obj, args, "value_and_grad", f"{self.obj.func.__name__}.value_and_grad")


@overload_method(DifferentiatedType, "__call__")
def _call_primal(self, *args):
    d = self.obj
    if not d.jit:
        raise TypingError(_not_compiled(d.func.__name__))
    examples = _examples(d, args)
    defaults = _bound(d, examples)[len(examples):]
    return _make_impl({"_primal": d._primal_fn(), "_defaults": defaults},
                      "    return _primal(*(args + _defaults))")


def _impl(d: Differentiated, argtypes: tuple, what: str, spelled: str) -> Any:
    """The implementation of ``what`` (``grad`` or ``value_and_grad``) for these Numba
    argument types: the generated code's compiled function called on them."""
    if not d.jit:
        raise TypingError(_not_compiled(spelled))
    examples = _examples(d, argtypes)
    full = _bound(d, examples)
    try:
        gen = d._generated(full)
    except (JitgradError, TypeError, ValueError) as e:
        raise TypingError(f"jitgrad: {spelled} called from Numba code: {e}") from None
    _check_scalar(d, gen)
    variant = "grad" if what == "value_and_grad" or d.has_aux else "grad_only"
    gen.compiled.load(variant)
    dtypes = gen.compiled.workspaces.get(variant) or ()
    env = {"_g": gen.compiled.jitted[variant], "_defaults": full[len(examples):],
           "_tupled": _tupled, "_np": np, "_refuse_overlap": _refuse_overlap}
    env.update({f"_dt{i}": np.dtype(np.float64 if t == BUFFER else t)
                for i, t in enumerate(dtypes)})
    ws = "".join(f"_np.empty(0, _dt{i}), " for i in range(len(dtypes)))
    lines = ["    full = args + _defaults"]
    lines += _overlap_checks(d, gen, full, env)
    if dtypes:
        lines.append(f"    value, grads, _ws = _g(*(full + (1.0, ({ws}))))")
    else:
        lines.append("    value, grads = _g(*(full + (1.0,)))")
    if not d.single:
        lines.append("    grads = _tupled(grads)")
    lines.append("    return " + _result(d, what))
    return _make_impl(env, "\n".join(lines))


def _result(d: Differentiated, what: str) -> str:
    """What the call returns, as ``Differentiated.grad``/``value_and_grad`` return it."""
    if not d.has_aux:
        return "value, grads" if what == "value_and_grad" else "grads"
    aux = "value[1:]" if d._aux_structure() else "value[1]"
    return f"(value[0], {aux}), grads" if what == "value_and_grad" else f"grads, {aux}"


def _make_impl(env: dict[str, Any], body: str) -> Any:
    """``impl(self, *args)`` with ``body``, reading the names in ``env``."""
    ns = dict(env)
    exec(compile(f"def impl(self, *args):\n{body}\n", "<jitgrad.njit_call>", "exec"), ns)
    return ns["impl"]


# --- typing checks ------------------------------------------------------------------------

def _not_compiled(what: str) -> str:
    return (f"jitgrad: {what} was made with jit=False (plain Python), "
            "which Numba-compiled code cannot call; make it with jit=True (the default) to "
            "call it from @numba.njit code, or call it from Python")


def _examples(d: Differentiated, argtypes: tuple) -> tuple:
    """A value of each Numba argument type, from which the generated code's kinds follow."""
    if len(argtypes) == 1 and isinstance(argtypes[0], (types.StarArgTuple, types.StarArgUniTuple)):
        argtypes = tuple(argtypes[0])  # (as lowering a call of the object passes them)
    out = []
    for i, t in enumerate(argtypes):
        v = _example(types.unliteral(t))
        if v is None:
            name = d.params[i] if i < len(d.params) else str(i)
            raise TypingError(
                f"jitgrad: argument {i} ('{name}') of {d.func.__name__} is {t} in Numba code; "
                "gradients called from @numba.njit code take float, int and bool scalars and "
                "arrays (and tuples of them)")
        out.append(v)
    return tuple(out)


def _example(t: types.Type) -> Any:
    """An example value of Numba type ``t`` (None for a type jitgrad does not take)."""
    from numba.np.numpy_support import as_dtype

    if isinstance(t, types.Boolean):
        return True
    if isinstance(t, (types.Integer, types.Float, types.Complex)):
        return as_dtype(t).type(1)
    if isinstance(t, types.Array):
        return np.zeros((1,) * t.ndim, dtype=as_dtype(t.dtype))
    if isinstance(t, types.BaseTuple):
        parts = tuple(_example(x) for x in t)
        return None if any(p is None for p in parts) else parts
    return None


def _bound(d: Differentiated, examples: tuple) -> tuple:
    """The arguments with the omitted ones filled from the function's defaults."""
    try:
        return d.bind(examples)
    except TypeError as e:
        raise TypingError(f"jitgrad: {e} (keywords cannot be passed from Numba code: pass "
                          f"every argument before the last one you give by position: "
                          f"{d.func.__name__}({describe_params(d._sig)}))") from None


def _check_scalar(d: Differentiated, gen: Any) -> None:
    """Refuse, at typing time, a function whose output is not a scalar."""
    rk = gen.return_kinds
    first = rk[0] if rk else None
    if (not d.has_aux and len(rk) != 1) or (first is not None and first.ndim != 0):
        raise TypingError(f"jitgrad: the gradient of {d.func.__name__} needs a scalar "
                          "output; call .vjp(...) from Python for non-scalar outputs")


def _overlap_checks(d: Differentiated, gen: Any, full: tuple, env: dict) -> list[str]:
    """Lines refusing array arguments that share memory when the generated code writes one
    of them (as ``api.refuse_aliased`` does for Python calls)."""
    arrays = [i for i, a in enumerate(full) if isinstance(a, np.ndarray)]
    lines = []
    for i in arrays:
        if d.params[i] not in gen.written:
            continue
        for j in arrays:
            if j != i:
                env[f"_msg{i}_{j}"] = (
                    f"arguments {min(i, j)} and {max(i, j)} of {d.func.__name__} share "
                    f"memory and it writes '{d.params[i]}' in place: pass separate arrays")
                lines.append(f"    _refuse_overlap(full[{i}], full[{j}], _msg{i}_{j})")
    return lines


# --- helpers the implementations call -----------------------------------------------------

def _tupled(g: Any) -> Any:
    """``g`` if it is a tuple, else ``(g,)``: gradients for a tuple ``wrt``."""
    return g if isinstance(g, tuple) else (g,)


@overload(_tupled)
def _tupled_compiled(g):
    if isinstance(g, types.BaseTuple):
        return lambda g: g
    return lambda g: (g,)


@njit(cache=False)
def _extent(a: Any) -> tuple[int, int]:
    """The address range ``a``'s elements lie in (empty: ``lo == hi``)."""
    lo = hi = a.ctypes.data
    for k in range(a.ndim):
        if a.shape[k] == 0:
            return lo, lo
        step = (a.shape[k] - 1) * a.strides[k]
        if step > 0:
            hi += step
        else:
            lo += step
    return lo, hi + a.itemsize


@njit(cache=False)
def _refuse_overlap(a: Any, b: Any, msg: str) -> None:
    """Raise ``ValueError(msg)`` if ``a`` and ``b`` may share memory."""
    alo, ahi = _extent(a)
    blo, bhi = _extent(b)
    if alo < bhi and blo < ahi:
        raise ValueError(msg)

