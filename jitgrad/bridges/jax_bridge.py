"""``jitgrad.to_jax``: a jitgrad function as a JAX function with a custom VJP.

The value is the user's function (compiled as a ``@differentiate`` object calls it) and
the VJP jitgrad's pullback, both run on the host through ``jax.pure_callback``, so the
function works under ``jax.jit``, ``jax.grad`` and ``jax.vmap`` (whose rule loops over
the batch, ``vmap_method="sequential"``).  The shape of a scalar output follows from the
generated code; an array output's from one run on the arguments, with ones in place of
the values ``jax.jit`` traces (an output shape that depends on a traced value is an error
when the callback returns: pass such values, e.g. a step count, as Python ints).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from ..api import Differentiated
from .common import Bridge, bind, is_float, plain


def jax_function(func: Callable, wrt: Any, jit: bool) -> Callable:
    """See ``jitgrad.to_jax``."""
    bridge = Bridge(func, wrt, jit)

    @jax.custom_vjp
    def call(*args: Any) -> Any:
        return _value(bridge, args)

    def fwd(*args: Any) -> tuple[Any, tuple]:
        return _value(bridge, args), args

    def bwd(args: tuple, dy: Any) -> tuple:
        return _cotangents(bridge, args, dy)

    call.defvjp(fwd, bwd)

    @functools.wraps(getattr(func, "func", func))
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return call(*bind(bridge, args, kwargs))

    return wrapper


def _positions(bridge: Bridge, args: tuple) -> tuple[int, ...]:
    """``wrt``, else every float argument."""
    if bridge.wrt is not None:
        bridge.check_positions(bridge.wrt, len(args))
        return bridge.wrt
    return tuple(i for i, a in enumerate(args) if is_float(jax.numpy.result_type(a)))


def _value(bridge: Bridge, args: tuple) -> Any:
    """The function's value, computed on the host."""
    d = bridge.diff(_positions(bridge, args))
    spec = _out_spec(d, args)

    def host(*values: Any) -> Any:
        return _cast(d(*(plain(v) for v in values)), spec)

    return jax.pure_callback(host, spec, *args, vmap_method="sequential")


def _cotangents(bridge: Bridge, args: tuple, dy: Any) -> tuple:
    """One cotangent per argument: jitgrad's pullback of ``dy`` for the ``wrt`` ones,
    None (zero) for the others."""
    positions = _positions(bridge, args)
    d = bridge.diff(positions)
    specs = tuple(jax.ShapeDtypeStruct(np.shape(args[i]), jax.numpy.result_type(args[i]))
                  for i in positions)

    def host(values: tuple, seed: Any) -> tuple:
        _, pullback = d.vjp(*(plain(v) for v in values))
        seed = jax.tree_util.tree_map(plain, seed)
        return _cast(pullback(seed), specs)

    grads = jax.pure_callback(host, specs, args, dy, vmap_method="sequential")
    out: list[Any] = [None] * len(args)
    for i, g in zip(positions, grads, strict=True):
        out[i] = g
    return tuple(out)


def _out_spec(d: Differentiated, args: tuple) -> Any:
    """The output's shape and dtype: a float of the arguments' precision for a scalar
    function; else those of one run (on the values, ones where they are traced)."""
    examples = tuple(_example(a) for a in args)
    rk = d._generated(examples).return_kinds
    floats = [jax.numpy.result_type(a) for a in args if is_float(jax.numpy.result_type(a))]
    dtype = jax.numpy.result_type(*floats) if floats else jax.numpy.result_type(float)
    if len(rk) == 1 and rk[0] is not None and rk[0].ndim == 0:
        return jax.ShapeDtypeStruct((), dtype)
    value = d(*examples)
    return jax.tree_util.tree_map(
        lambda v: jax.ShapeDtypeStruct(np.shape(v), np.asarray(v).dtype if np.ndim(v)
                                       else dtype), value)


def _example(a: Any) -> Any:
    """``a``'s value where it is known (not traced), else ones of its shape and dtype; a
    0-d one as a Python scalar."""
    if not isinstance(a, jax.core.Tracer):
        return plain(np.asarray(a))
    return plain(np.ones(np.shape(a), dtype=jax.numpy.result_type(a)))


def _cast(value: Any, spec: Any) -> Any:
    """``value`` as the arrays ``spec`` declares (pure_callback's contract)."""
    return jax.tree_util.tree_map(lambda v, s: np.asarray(v, dtype=s.dtype).reshape(s.shape),
                                  value, spec)
