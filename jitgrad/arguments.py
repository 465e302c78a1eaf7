"""The arguments of a differentiated function: ``wrt``, argument kinds in words, example
arguments, aliasing checks and the cheap signature a call's generated code is cached by.

Shared by the reverse-mode (``api.py``), forward-mode (``forward_mode.py``) and CUDA
(``cuda_api.py``) entry points, which import it and not each other.
"""

from __future__ import annotations

import ast
import inspect
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from .transpiler.pipeline import Generated, Prepared

Wrt = int | str | tuple

#: held while any function is transformed or its generated code built: CPython's syntax-tree
#: conversion keeps per-interpreter state that two threads parsing at once corrupt
#: ("SystemError: AST constructor recursion depth mismatch", seen with concurrent first calls)
TRANSFORMING = threading.RLock()

#: calls with tuple arguments (``structured.py``: ``flat``, ``flat_tangents``,
#: ``value_and_grad``, ``vjp``), which that module puts here when loaded (``import jitgrad``
#: loads it): it subclasses ``api.Differentiated``, so ``api`` and ``forward_mode`` reach it
#: through this table, not by importing it
STRUCTURED: dict[str, Callable[..., Any]] = {}


def resolve_wrt(wrt: Wrt, params: list[str], fname: str) -> tuple[tuple[int, ...], bool]:
    single = not isinstance(wrt, (tuple, list))
    items = [wrt] if single else list(wrt)
    out = []
    for w in items:
        if isinstance(w, str):
            if w not in params:
                raise ValueError(f"wrt={w!r}: {fname} has no parameter named {w!r} "
                                 f"(parameters: {', '.join(params)})")
            out.append(params.index(w))
        elif isinstance(w, (int, np.integer)) and not isinstance(w, bool):
            if not -len(params) <= w < len(params):
                raise ValueError(f"wrt={w}: {fname} has {len(params)} parameters")
            out.append(int(w) % len(params))
        else:
            raise TypeError(f"wrt must be an int, a parameter name, or a tuple of them; got "
                            f"{w!r}")
    if len(set(out)) != len(out):
        raise ValueError(f"wrt={wrt!r} names a parameter twice")
    return tuple(out), single


def describe_kinds(kinds: dict) -> str:
    """``x: float 1-d array, n: int``: a specialisation's argument kinds, for messages."""
    return ", ".join(f"{p}: {kind_text(k)}" for p, k in kinds.items())


def kind_text(k: Any) -> str:
    """``float 1-d array``, ``int``: one argument kind in words."""
    names = {"f": "float", "i": "int", "b": "bool"}
    cls, ndim = getattr(k, "cls", None), getattr(k, "ndim", 0)
    return names[cls] + (f" {ndim}-d array" if ndim else "") if cls in names else str(k)


def describe_params(sig: inspect.Signature) -> str:
    """``x, k, dt=0.01``: the parameters, with their defaults."""
    return ", ".join(p.name if p.default is p.empty else f"{p.name}={p.default!r}"
                     for p in sig.parameters.values())


def describe(v: Any) -> str:
    if isinstance(v, np.ndarray):
        return f"an array of shape {v.shape}" + (f" and dtype {v.dtype}"
                                                 if v.dtype != np.float64 else "")
    return f"a {type(v).__name__}"


def guess_args(prep: Prepared, params: list[str]) -> list[Any]:
    """Example arguments guessed from how the source uses each parameter."""
    ndims: dict[str, int] = {}
    ints: set[str] = set()
    for n in ast.walk(prep.parsed.tree):
        if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name):
            k = len(n.slice.elts) if isinstance(n.slice, ast.Tuple) else 1
            ndims[n.value.id] = max(ndims.get(n.value.id, 0), k)
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) \
                and n.attr in ("shape", "size", "T", "sum", "mean", "copy"):
            ndims.setdefault(n.value.id, 1)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("range",
                                                                                   "len"):
            for a in n.args:
                if isinstance(a, ast.Name):
                    if n.func.id == "range":
                        ints.add(a.id)
                    else:
                        ndims.setdefault(a.id, 1)
    out = []
    for p in params:
        if p in ints and p not in ndims:
            out.append(3)
        elif p in ndims:
            out.append(np.ones((3,) * ndims[p]))
        else:
            out.append(1.0)
    return out


def pick_wrt(wrt: Wrt | None, argnums: Wrt | None, who: str) -> Wrt:
    """``wrt``, or JAX's spelling ``argnums`` (not both); None when neither is given (a
    ``jg.differentiate`` object's own ``wrt``, else 0: ``_as_diff``)."""
    if wrt is not None and argnums is not None:
        raise TypeError(f"jg.{who}: pass wrt= or argnums= (JAX's name for it), not both")
    return wrt if wrt is not None else argnums


def refuse_aliased(d: Any, gen: Generated, args: tuple) -> None:
    """Refuse arguments that share memory when the generated code writes one of them: it
    writes a copy of that one (the caller's arrays are never written), which would no longer
    be the other, so value and gradient would not be those of ``f(*args)``."""
    if not gen.written:
        return
    arrays = [(i, a) for i, a in enumerate(args) if isinstance(a, np.ndarray)]
    for i, a in arrays:
        if d.params[i] not in gen.written:
            continue
        for j, b in arrays:
            if j != i and _overlap(a, b):
                f, pi, pj = d.func.__name__, d.params[i], d.params[j]
                lo, hi = min(i, j), max(i, j)
                raise ValueError(
                    f"arguments {lo} ('{d.params[lo]}') and {hi} ('{d.params[hi]}') of {f} "
                    f"share memory and {f} writes '{pi}' in place; jitgrad differentiates "
                    f"each argument as a separate input, so it cannot follow the write into "
                    f"'{pj}': pass separate arrays (e.g. {pj}.copy())")


def _overlap(a: np.ndarray, b: np.ndarray) -> bool:
    """Do ``a`` and ``b`` share memory (views too)?  True where the exact answer is too
    costly to find."""
    if not np.may_share_memory(a, b):
        return False
    try:
        return bool(np.shares_memory(a, b, max_work=1 << 16))
    except getattr(np, "exceptions", np).TooHardError:
        return True


def copies(args: tuple) -> tuple:
    """The arguments with every array copied (the caller's arrays are never written)."""
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


#: argument types whose kind follows from the type alone (arrays: from dtype and ndim)
_SCALAR_TYPES = frozenset({float, int, bool, np.float64, np.float32, np.int64, np.int32,
                           np.bool_})


def tupled(args: tuple) -> bool:
    """Is any argument a tuple (run on its entries: ``structured.py``)?"""
    for a in args:
        if isinstance(a, tuple):
            return True
    return False


def signature(args: tuple) -> tuple | None:
    """What a call's generated code depends on, cheaply: each argument's exact type, and an
    array's dtype and ndim; None for anything else (tuples, subclasses: the long way)."""
    out = []
    for a in args:
        t = type(a)
        if t is np.ndarray:
            out.append((a.dtype, a.ndim))
        elif t in _SCALAR_TYPES:
            out.append(t)
        else:
            return None
    return tuple(out)
