"""The transpiler's public face: ``differentiate``, ``grad``, ``value_and_grad``, ``vjp``.

A ``Differentiated`` function keeps the user's function, its ``wrt`` and ``jit``
choice, and a cache of generated code per argument kinds (scalar or array, int or
float, ndim) and rule-registry version.  Calls run the compiled primal; ``.grad``
and friends run one generated function holding the forward and adjoint sweeps.
"""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from . import rules
from .transpiler import emit
from .transpiler.kinds import of_value
from .transpiler.parse import python_function
from .transpiler.pipeline import STAGES, Generated, Prepared, load_primal, prepare, transform

Wrt = int | str | tuple


class Differentiated:
    """A function with compiled gradients (see ``differentiate``)."""

    def __init__(self, func: Callable, wrt: Wrt = 0, jit: bool = True, target: str = "cpu"):
        if target != "cpu":
            raise NotImplementedError(f"target={target!r}: only 'cpu' is available")
        self.func = python_function(func)
        self.jit = bool(jit)
        self.params = list(inspect.signature(self.func).parameters)
        self.wrt_positions, self.single = _resolve_wrt(wrt, self.params, self.func.__name__)
        self._prepared: Prepared | None = None
        self._prepared_version = -1
        self._bridges: dict[tuple[int, ...], Differentiated] = {}
        self._primal = None
        self._cache: dict[tuple, Generated] = {}
        self._lock = threading.Lock()
        self._last: Generated | None = None
        functools.update_wrapper(self, self.func)

    # --- preparation and caching ------------------------------------------------

    def _prep(self) -> Prepared:
        """The kind-independent passes, redone when a rule is registered (helpers may
        become primitives)."""
        version = rules.version()
        if self._prepared is None or self._prepared_version != version:
            self._prepared = prepare(self.func)
            self._prepared_version = version
            self._primal = None
        return self._prepared

    def _check_args(self, args: tuple) -> None:
        if len(args) != len(self.params):
            raise TypeError(f"{self.func.__name__}() takes {len(self.params)} positional "
                            f"arguments ({', '.join(self.params)}) but {len(args)} were given")

    def _generated(self, args: tuple) -> Generated:
        self._check_args(args)
        kinds = {p: of_value(a) for p, a in zip(self.params, args, strict=True)}
        for i in self.wrt_positions:
            k = kinds[self.params[i]]
            if not k.differentiable or k.cls == "o":
                what = "an integer" if k.cls in ("i", "b") else f"a {type(args[i]).__name__}"
                raise TypeError(f"wrt argument {i} ('{self.params[i]}') of "
                                f"{self.func.__name__} is {what}; only float scalars and float "
                                "arrays carry gradients (pass e.g. float(x) or x.astype(float))")
        key = (tuple(sorted(kinds.items())), rules.version())
        with self._lock:
            gen = self._cache.get(key)
            if gen is None:
                wrt = [self.params[i] for i in self.wrt_positions]
                gen = transform(self._prep(), wrt, kinds)
                if self.jit:
                    for c in gen.callables:  # functions hooks call run compiled too
                        if inspect.isfunction(gen.namespace.get(c)):
                            gen.namespace[c] = emit.njit(gen.namespace[c])
                    gen.jitted = emit.njit(gen.grad_fn)
                    gen.grad_only_jitted = emit.njit(gen.grad_only_fn)
                self._cache[key] = gen
            self._last = gen
        return gen

    def _run(self, args: tuple, dy: Any, value: bool = True) -> tuple[Any, Any]:
        """Run the generated sweeps; ``value=False`` runs the gradient-only variant."""
        gen = self._generated(args)
        if self.jit:
            fn, src = (gen.jitted, gen.grad_src) if value else (gen.grad_only_jitted,
                                                                gen.grad_only_src)
            hint = ("hook functions must be Numba-compilable with jit=True "
                    f"({', '.join(sorted(gen.callables))})" if gen.callables else "")
            return emit.call_compiled(fn, src, (*args, dy), hint)
        return (gen.grad_fn if value else gen.grad_only_fn)(*args, dy)

    # --- public ---------------------------------------------------------------------

    def __call__(self, *args: Any) -> Any:
        """The primal, compiled with Numba when ``jit=True``."""
        from . import runtime

        if any(runtime.istracked(a) for a in args):
            return runtime.track_call(self._vjp_all, args)
        self._check_args(args)
        prep = self._prep()
        if self._primal is None:
            fn = load_primal(prep)
            if self.jit:
                ns = fn.__globals__
                for n in list(ns):  # user primitives with rules are called: compile them too
                    obj = ns[n]
                    if inspect.isfunction(obj) and n in prep.primal_src and \
                            rules.lookup(obj) is not None:
                        ns[n] = emit.njit(obj)
            self._primal = emit.njit(fn) if self.jit else fn
        if self.jit:
            return emit.call_compiled(self._primal, self._prep().primal_src, args)
        return self._primal(*args)

    def value_and_grad(self, *args: Any) -> tuple[Any, Any]:
        """``(f(*args), gradient)`` for a scalar-valued ``f``."""
        return self._value_and_grad(args, True)

    def _value_and_grad(self, args: tuple, want_value: bool) -> tuple[Any, Any]:
        gen = self._generated(args)
        rk = gen.return_kinds
        if len(rk) != 1 or (rk[0] is not None and rk[0].ndim != 0):
            what = f"{len(rk)} values" if len(rk) != 1 else "an array"
            raise ValueError(f"grad of {self.func.__name__} needs a scalar output, but it "
                             f"returns {what}; use .vjp(...) for non-scalar outputs")
        value, grads = self._run(args, 1.0, want_value)
        if want_value and (np.ndim(value) != 0 or isinstance(value, tuple)):
            raise ValueError(f"grad of {self.func.__name__} needs a scalar output, got "
                             f"{_describe(value)}; use .vjp(...) for non-scalar outputs")
        return value, self._shape(grads)

    def grad(self, *args: Any) -> Any:
        """The gradient w.r.t. ``wrt`` (a tuple when ``wrt`` is a tuple)."""
        return self._value_and_grad(args, False)[1]

    def vjp(self, *args: Any) -> tuple[Any, Callable[[Any], Any]]:
        """``(f(*args), pullback)``; ``pullback(dy)`` reruns the sweeps with seed ``dy``."""
        value = self(*args)
        args = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)

        def pullback(dy: Any) -> Any:
            if isinstance(value, np.ndarray):
                dy = np.asarray(dy, dtype=np.result_type(value.dtype, np.float32))
                if dy.shape != value.shape:
                    raise ValueError(f"pullback: dy has shape {dy.shape}, output has "
                                     f"{value.shape}")
            elif isinstance(value, tuple):
                dy = tuple(dy)
            else:
                dy = float(dy)
            return self._shape(self._run(args, dy, False)[1])

        return value, pullback

    def source(self, *example_args: Any, stage: str = "all") -> str:
        """Generated code: ``stage`` is one of normalized, forward, adjoint, all.

        With example arguments the code is specialised to their kinds; without,
        the most recent specialisation is shown (or one guessed from the source).
        """
        if stage not in STAGES:
            raise ValueError(f"stage must be one of {', '.join(STAGES)}")
        if example_args:
            gen = self._generated(example_args)
        elif self._last is not None:
            gen = self._last
        else:
            gen = self._generated(tuple(_guess_args(self._prep(), self.params)))
        return {"normalized": gen.normalized_src, "forward": gen.forward_src,
                "adjoint": gen.adjoint_src, "all": gen.grad_src}[stage]

    def _shape(self, grads: Any) -> Any:
        if self.single:
            return grads
        return grads if isinstance(grads, tuple) else (grads,)

    def _vjp_all(self, *args: Any):
        """(value, pullback) with one gradient per argument: the runtime's bridge."""
        floats = tuple(i for i, a in enumerate(args) if of_value(a).cls in ("f", "c"))
        other = self._bridges.get(floats)
        if other is None:  # one compiled specialisation per set of float arguments
            other = Differentiated(self.func, wrt=floats if floats else (), jit=self.jit)
            self._bridges[floats] = other
        value, pb = other.vjp(*args)

        def pullback(dy):
            g = pb(dy) if floats else ()
            out = [None] * len(args)
            for i, gi in zip(floats, g, strict=True):
                out[i] = gi
            return tuple(out)

        return value, pullback

    def __repr__(self) -> str:
        return f"<jitgrad.differentiate {self.func.__qualname__} wrt={self.wrt_positions}>"


class GradFunction:
    """What ``jg.grad`` and ``jg.value_and_grad`` return: a callable with ``.source()``."""

    def __init__(self, diff: Differentiated, with_value: bool):
        self.diff = diff
        self.with_value = with_value
        functools.update_wrapper(self, diff.func)

    def __call__(self, *args: Any) -> Any:
        return self.diff.value_and_grad(*args) if self.with_value else self.diff.grad(*args)

    def source(self, *example_args: Any, stage: str = "all") -> str:
        return self.diff.source(*example_args, stage=stage)


def _resolve_wrt(wrt: Wrt, params: list[str], fname: str) -> tuple[tuple[int, ...], bool]:
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


def _describe(v: Any) -> str:
    if isinstance(v, np.ndarray):
        return f"an array of shape {v.shape}"
    return f"a {type(v).__name__}"


def _guess_args(prep: Prepared, params: list[str]) -> list[Any]:
    """Example arguments guessed from how the source uses each parameter."""
    import ast

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


def differentiate(func: Callable | None = None, *, wrt: Wrt = 0, jit: bool = True,
                  target: str = "cpu") -> Any:
    """Decorator: ``@differentiate`` or ``@differentiate(wrt=(0, 2), jit=True)``."""
    if func is None:
        return lambda f: Differentiated(f, wrt, jit, target)
    return Differentiated(func, wrt, jit, target)


def grad(func: Callable, wrt: Wrt = 0, *, jit: bool = True, target: str = "cpu") -> GradFunction:
    """Transform ``func`` into its gradient function (like ``jax.grad``)."""
    return GradFunction(_as_diff(func, wrt, jit, target), with_value=False)


def value_and_grad(func: Callable, wrt: Wrt = 0, *, jit: bool = True,
                   target: str = "cpu") -> GradFunction:
    """Transform ``func`` into a function returning ``(value, gradient)``."""
    return GradFunction(_as_diff(func, wrt, jit, target), with_value=True)


def vjp(func: Callable, *args: Any, wrt: Wrt = 0, jit: bool = True) -> tuple[Any, Callable]:
    """``(func(*args), pullback)`` where ``pullback(dy)`` gives the vector-Jacobian product."""
    return _as_diff(func, wrt, jit, "cpu").vjp(*args)


def _as_diff(func, wrt, jit, target) -> Differentiated:
    if isinstance(func, Differentiated):
        func = func.func
    return Differentiated(func, wrt, jit, target)
