"""The transpiler's public face: ``differentiate``, ``grad``, ``value_and_grad``, ``vjp``.

A ``Differentiated`` function keeps the user's function, its ``wrt`` and ``jit``
choice, and a cache of generated code per argument kinds (scalar or array, int or
float, ndim) and rule-registry version.  Calling it runs the user's own function
(their ``@numba.njit`` dispatcher, else ``numba.njit(func)``, else under
``jit=False`` the plain function); ``.grad`` and friends run one generated function
holding the forward and adjoint sweeps, on copies of the arguments.
"""

from __future__ import annotations

import functools
import inspect
import pickle
import sys
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from . import rules
from .errors import JitError
from .kernels import rng
from .runtime.tracked import Tracked
from .transpiler.analysis.effects import first_draw
from .transpiler.analysis.kinds import of_value
from .transpiler.backend import cache as disk
from .transpiler.backend import emit
from .transpiler.backend import jit as backend
from .transpiler.backend.lower import VARIANTS
from .transpiler.front.fence import fence, fence_entry
from .transpiler.front.kernel import refuse_on_cpu
from .transpiler.front.parse import parse_function, python_function
from .transpiler.pipeline import STAGES, Generated, Prepared, generate, prepare, show_body
from .transpiler.pipeline import stage as stage_source

Wrt = int | str | tuple

#: held while any function is transformed or its generated code built: CPython's syntax-tree
#: conversion keeps per-interpreter state that two threads parsing at once corrupt
#: ("SystemError: AST constructor recursion depth mismatch", seen with concurrent first calls)
_TRANSFORMING = threading.RLock()


class Differentiated:
    """A function with compiled gradients (see ``differentiate``)."""

    def __init__(self, func: Callable, wrt: Wrt = 0, jit: bool = True, target: str = "cpu",
                 cache: bool = False):
        if target != "cpu":
            refuse_target(target)
            raise ValueError("target='cuda' gives kernels and device functions, not CPU "
                             "gradients: use jg.differentiate(f, wrt=..., target='cuda') and "
                             "its .vjp[blocks, threads] or .device_grad (docs/cuda.md)")
        if isinstance(func, GradFunction):
            func = func.diff
        if isinstance(func, Differentiated):
            func = func._orig
        self.func = python_function(func)
        self._orig = func  # what the user passed (their Numba dispatcher, options and all)
        self._dispatcher = func if func is not self.func else None
        self.jit = bool(jit)
        self.wrt = wrt
        self.cache = bool(cache)  # on-disk cache of generated and compiled code (cache.py)
        #: the user's numba.njit options (fastmath, parallel...): the generated code's too
        self.options = emit.user_options(func)
        self._disk = disk.Store(self.func, self.jit, self.options) if self.cache else None
        # the signature of what was passed: a functools.wraps wrapper is not its __wrapped__
        sig = inspect.signature(self.func, follow_wrapped=False)
        self.params = list(sig.parameters)
        self._positional = all(p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
                               and p.default is inspect.Parameter.empty
                               for p in sig.parameters.values())
        self.wrt_positions, self.single = _resolve_wrt(wrt, self.params, self.func.__name__)
        self._prepared: Prepared | None = None
        self._prepared_version = -1
        self._entry_checked = False
        self._bridges: dict[tuple[int, ...], Differentiated] = {}
        self._primal = None
        self._uncompilable: set[tuple] = set()  # argument types Numba refused in the primal
        self._cache: dict[tuple, Generated] = {}
        #: argument signature (exact types, dtypes, ndims) -> (rules version, generated code):
        #: a repeated call skips the argument checks and the kinds (they follow from these)
        self._by_signature: dict[tuple, tuple[int, Generated]] = {}
        self._lock = threading.Lock()
        self._last: Generated | None = None
        functools.update_wrapper(self, self.func)

    # --- preparation and caching ------------------------------------------------

    def _prep(self) -> Prepared:
        """The kind-independent passes, redone when a rule is registered (helpers may
        become primitives)."""
        version = rules.version()
        if self._prepared is None or self._prepared_version != version:
            with _TRANSFORMING:
                if self._prepared is None or self._prepared_version != version:
                    if not self._entry_checked:  # refusals first, in the user's source
                        parsed = parse_function(self.func)
                        fence(parsed)
                        refuse_on_cpu(parsed)
                        fence_entry(parsed)
                        self._entry_checked = True
                    self._prepared = prepare(self.func,
                                             parallel=emit.is_parallel(self.options))
                    self._prepared_version = version
        return self._prepared

    def _draws(self) -> bool:
        """Does the function (its helpers inlined) draw from a global random generator?
        Then code that runs it again replays the generators (``kernels/rng.py``)."""
        prep = self._prep()
        return first_draw(prep.body, prep.env) is not None

    def _check_args(self, args: tuple) -> None:
        if len(args) != len(self.params):
            raise TypeError(f"{self.func.__name__}() takes {len(self.params)} positional "
                            f"arguments ({', '.join(self.params)}) but {len(args)} were given")

    def _check_inputs(self, args: tuple) -> None:
        """Refuse, up front and in both modes, arguments the generated code cannot take."""
        self._check_args(args)
        for i, a in enumerate(args):
            dt = a.dtype if isinstance(a, (np.ndarray, np.generic)) else None
            what = (f"argument {i} ('{self.params[i]}') of {self.func.__name__}")
            if isinstance(a, complex) or (dt is not None and dt.kind == "c"):
                raise TypeError(f"{what} is complex ({_describe(a)}): jitgrad differentiates "
                                "real-valued code only; pass the real and imaginary parts as "
                                "separate float arguments")
            if dt == np.float16:
                raise TypeError(f"{what} is float16 ({_describe(a)}): Numba has no float16 "
                                "arithmetic, so jitgrad does not support it in either mode; "
                                "pass x.astype(np.float32)")
            if isinstance(a, np.ndarray) and a.ndim == 0:
                raise TypeError(f"{what} is a 0-d array: pass a scalar ({self.params[i]}[()] "
                                "or float(...)) or a 1-element array")

    def _kinds(self, args: tuple, carry: str = "gradients") -> dict:
        """The argument kinds, after refusing what the generated code cannot take (arity,
        complex, float16, 0-d arrays, ``wrt`` arguments that cannot carry ``carry``)."""
        self._check_inputs(args)
        kinds = {p: of_value(a) for p, a in zip(self.params, args, strict=True)}
        for i in self.wrt_positions:
            k = kinds[self.params[i]]
            if not k.differentiable or k.cls == "o":
                what = "an integer" if k.cls in ("i", "b") else f"a {type(args[i]).__name__}"
                raise TypeError(f"wrt argument {i} ('{self.params[i]}') of "
                                f"{self.func.__name__} is {what}; only float scalars and float "
                                f"arrays carry {carry} (pass e.g. float(x) or x.astype(float))")
        return kinds

    def _generated(self, args: tuple) -> Generated:
        """The generated code for these arguments' kinds (transformed once, cached)."""
        sig = _signature(args)
        if sig is not None:
            hit = self._by_signature.get(sig)
            if hit is not None and hit[0] == rules.version():
                self._last = hit[1]
                return hit[1]
        gen = self._generated_for(args)
        if sig is not None:
            self._by_signature[sig] = (rules.version(), gen)
        return gen

    def _generated_for(self, args: tuple) -> Generated:
        """``_generated`` the long way: checks, kinds, and the cache keyed by kinds."""
        if not self.cache:  # (a cache hit needs no transform: reported when one runs)
            self._prep()  # unsupported source is reported before arity and kinds
        kinds = self._kinds(args)
        key = (tuple(sorted(kinds.items())), rules.version())
        with self._lock:
            gen = self._cache.get(key)
            if gen is None:
                gen = self._build(kinds)
                self._cache[key] = gen
            self._last = gen
        return gen

    def _build(self, kinds: dict) -> Generated:
        """Transform and compile one specialisation; with ``cache=True``, load it from the
        on-disk cache (no transform; Numba loads the machine code), or fill the cache."""
        wrt = [self.params[i] for i in self.wrt_positions]
        with _TRANSFORMING:
            gen = self._disk.load(wrt, kinds) if self._disk is not None else None
            if gen is None:
                gen = generate(self._prep(), wrt, kinds)
                u = gen.unit
                gen.compiled = (self._disk.save(gen) if self._disk is not None else None) or \
                    backend.build({v: u.sources[v] for v in VARIANTS}, u.names, u.env,
                                  self.func.__qualname__, self.jit, u.ir.callables, u.reads,
                                  u.workspaces, self.options)
        return gen

    def cache_info(self) -> dict[str, Any]:
        """What the on-disk cache did for this function (``cache=True``; see
        ``jitgrad.transpiler.backend.cache.Store.info``)."""
        with self._lock:
            gens = list(self._cache.values())
        return disk.Store.info(self._disk, gens)

    def release_workspaces(self) -> None:
        """Free the workspaces (tapes, adjoint buffers of local arrays) kept between
        gradient calls, on every thread: they are kept per thread and specialisation so
        that repeated calls allocate nothing; the next call allocates them again.
        Dropping the function frees them too."""
        with self._lock:
            gens = list(self._cache.values())
        gens += list(self.__dict__.get("_jvp_cache", {}).values())  # forward mode's
        for g in gens:
            for c in (g.compiled, g.__dict__.get("tangent")):
                release = getattr(c, "release", None)
                if release is not None:
                    release()
        for _, d2 in list(self.__dict__.get("_second_cache", {}).values()):
            d2.release_workspaces()  # hvp's: the forward mode of the gradient code
        for other in list(self._bridges.values()):  # what calls on tracked values compiled
            if other is not self:
                other.release_workspaces()

    def _run(self, gen: Generated, args: tuple, dy: Any, value: bool = True) -> tuple[Any, Any]:
        """Run the generated sweeps; ``value=False`` runs the gradient-only variant."""
        return backend.call(gen.compiled, "grad" if value else "grad_only", (*args, dy))

    def _primal_fn(self) -> Any:
        """The user's function as Numba compiles it: their dispatcher, else numba.njit."""
        if self._primal is None:
            with self._lock:
                if self._primal is None:
                    self._primal = self._dispatcher if self._dispatcher is not None \
                        else emit.primal(self.func)
        return self._primal

    def _value(self, args: tuple) -> Any:
        """The user's function's value for ``vjp`` and the runtime bridge: the primal, or,
        where Numba cannot compile the user's function for these argument types (the
        generated code may still compile), the function run as plain Python."""
        if not self.jit:
            return self.func(*args)
        key = tuple((type(a), getattr(a, "dtype", None), np.ndim(a)) for a in args)
        if key not in self._uncompilable:
            try:
                return emit.call_primal(self._primal_fn(), self.func, args)
            except JitError:
                self._uncompilable.add(key)
        return self.func(*args)

    # --- public ---------------------------------------------------------------------

    def __call__(self, *args: Any) -> Any:
        """The user's function: compiled with Numba when ``jit=True`` (their own
        ``@numba.njit`` dispatcher if they passed one), as plain Python otherwise."""
        for a in args:
            if isinstance(a, Tracked):
                from .runtime import track_call

                return track_call(self._vjp_all, args, self.func.__name__)
        if self._positional:
            self._check_args(args)
        if not self.jit:
            return self.func(*args)
        return emit.call_primal(self._primal_fn(), self.func, args)

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
        value, grads = self._run(gen, args, 1.0, want_value)
        if want_value and type(value) is not float and (np.ndim(value) != 0
                                                       or isinstance(value, tuple)):
            raise ValueError(f"grad of {self.func.__name__} needs a scalar output, got "
                             f"{_describe(value)}; use .vjp(...) for non-scalar outputs")
        return value, self._shape(grads)

    def grad(self, *args: Any) -> Any:
        """The gradient w.r.t. ``wrt`` (a tuple when ``wrt`` is a tuple)."""
        return self._value_and_grad(args, False)[1]

    def vjp(self, *args: Any) -> tuple[Any, Callable[[Any], Any]]:
        """``(f(*args), pullback)``; ``pullback(dy)`` reruns the sweeps with seed ``dy``.

        The value is the user's function run on copies of the arguments (compiled as
        ``self(...)`` runs it; as plain Python where Numba cannot compile it), so arrays
        the caller passed are never written; the pullback keeps copies of its own, and
        replays the random generators' state the value was computed from (its draws are
        the value's, and it leaves the generators as it found them).
        """
        self._generated(args)  # refusals before anything runs
        kept = _copies(args)
        drawn = rng.capture() if self._draws() else None  # the pullback draws the same
        value = self._value(_copies(args))

        def pullback(dy: Any) -> Any:
            if isinstance(value, np.ndarray) and value.ndim > 0:
                dy = np.array(dy, dtype=np.result_type(value.dtype, np.float32))
                if dy.shape != value.shape:
                    raise ValueError(f"pullback: dy has shape {dy.shape}, output has "
                                     f"{value.shape}")
            elif isinstance(value, tuple):
                dy = tuple(_copies(tuple(dy)))
            else:
                dy = float(dy)
            gen = self._generated(kept)
            # (the value-and-gradient variant: the gradient-only one of a scalar function
            # is written for the seed 1.0 that f.grad passes)
            with rng.replaying(drawn):
                return self._shape(self._run(gen, _copies(kept), dy, True)[1])

        return value, pullback

    def jvp(self, primals: tuple, tangents: Any) -> tuple[Any, Any]:
        """``(f(*primals), J @ tangents)`` by forward mode; ``tangents``: one per ``wrt``
        argument (a single value for a single ``wrt``), see ``jitgrad.jvp``."""
        from .forward_api import jvp_of

        return jvp_of(self, primals, tangents)

    def source(self, *example_args: Any, stage: str = "all", mode: str = "vjp") -> str:
        """Generated code: ``stage`` is ``"all"`` (the compiled function), ``"forward"``,
        ``"adjoint"`` (its sweeps), ``"normalized"``, or the name of any pass (what
        that pass produced; see ``jitgrad.transpiler.pipeline.PASSES``).

        With example arguments the code is specialised to their kinds; without,
        the most recent specialisation is shown (or one guessed from the source).
        ``mode="jvp"``: the forward-mode (tangent) code instead (``docs/forward.md``);
        ``mode="hvp"``: what ``jg.hvp`` runs, the tangent-only forward mode of the gradient
        code (``stage`` must be ``"all"``).
        """
        if mode == "jvp":
            from .forward_api import jvp_source

            return jvp_source(self, example_args, stage)
        if mode == "hvp":
            from .forward_api import hvp_source

            if stage != "all":
                raise ValueError("mode='hvp' shows the whole function only (stage='all')")
            return hvp_source(self, example_args)
        if mode != "vjp":
            raise ValueError(f"mode must be 'vjp', 'jvp' or 'hvp', got {mode!r}")
        if stage not in STAGES:
            raise ValueError(f"stage must be one of {', '.join(STAGES)}")
        if example_args:
            gen = self._generated(example_args)
        elif self._last is not None:
            gen = self._last
        else:
            gen = self._generated(tuple(_guess_args(self._prep(), self.params)))
        u = gen.unit
        if stage in ("forward", "adjoint", "all"):
            return u.sources["grad" if stage == "all" else stage]
        with _TRANSFORMING:
            if stage == "normalized":
                return show_body(self._prep())
            return stage_source(self.func, stage, u.wrt, u.arg_kinds,
                                parallel=emit.is_parallel(self.options))

    def _shape(self, grads: Any) -> Any:
        if self.single:
            return grads
        return grads if isinstance(grads, tuple) else (grads,)

    def _vjp_all(self, *args: Any):
        """(value, pullback) with one gradient per argument: the runtime's bridge."""
        floats = tuple(i for i, a in enumerate(args) if of_value(a).cls in ("f", "c"))
        other = self._bridges.get(floats)
        if other is None:  # one compiled specialisation per set of float arguments
            if not self.single and self.wrt_positions == floats:
                other = self
            else:
                other = Differentiated(self._orig, wrt=floats if floats else (), jit=self.jit)
                if self.jit:
                    other._primal = self._primal_fn()  # one compiled primal for both
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

    def __reduce__(self):
        """Pickled as a reference (module, qualified name) to the user's module-level
        function plus the options: no code, locks or compiled functions travel; the other
        side transforms again, or loads from the on-disk cache under ``cache=True``."""
        return _rebuild, (*_reference(self), self.wrt, self.jit, self.cache)


class GradFunction:
    """What ``jg.grad`` and ``jg.value_and_grad`` return: a callable with ``.source()``."""

    def __init__(self, diff: Differentiated, with_value: bool):
        self.diff = diff
        self.with_value = with_value
        functools.update_wrapper(self, diff.func)

    def __call__(self, *args: Any) -> Any:
        return self.diff.value_and_grad(*args) if self.with_value else self.diff.grad(*args)

    def source(self, *example_args: Any, stage: str = "all", mode: str = "vjp") -> str:
        return self.diff.source(*example_args, stage=stage, mode=mode)

    def cache_info(self) -> dict[str, Any]:
        return self.diff.cache_info()

    def release_workspaces(self) -> None:
        """See ``Differentiated.release_workspaces``."""
        self.diff.release_workspaces()

    def __reduce__(self):
        return GradFunction, (self.diff, self.with_value)


def _reference(d: Differentiated) -> tuple[str, str]:
    """``(module, qualname)`` under which another process finds ``d``'s function."""
    func = d.func
    mod, qual = func.__module__, func.__qualname__
    why = ""
    if func.__name__ == "<lambda>":
        why = "it is a lambda"
    elif "<locals>" in qual:
        why = "it is defined inside another function (a nested function or closure)"
    elif mod == "__main__" and not getattr(sys.modules.get("__main__"), "__file__", None):
        why = "it is defined in an interactive __main__ (a notebook, REPL or python -c)"
    elif _underlying(disk.attr_or_none(mod, qual)) is not func:
        why = f"{mod}.{qual} is not this function"
    if why:
        raise pickle.PicklingError(
            f"cannot pickle the jitgrad gradient of {qual}: {why}. jitgrad pickles a "
            "differentiated function as a reference to a module-level function (module and "
            "name), which the receiving process imports; define it with def at the top "
            "level of an importable module (a .py file on the workers' path, e.g. shipped "
            "with Dask's client.upload_file) and pass that")
    return mod, qual


def _underlying(obj: Any) -> Any:
    """The plain function behind a GradFunction, Differentiated or Numba dispatcher."""
    if isinstance(obj, GradFunction):
        obj = obj.diff
    if isinstance(obj, Differentiated):
        return obj.func
    return getattr(obj, "py_func", obj)


_REBUILT: dict[tuple, Differentiated] = {}


def _rebuild(mod: str, qual: str, wrt: Wrt, jit: bool, cache: bool) -> Differentiated:
    """Unpickle a ``Differentiated``: the object at ``mod.qual`` with these options (the
    decorated object itself where they match, so its compiled code is shared; one object
    per process for each reference and options, so a worker's tasks share compiled code)."""
    obj = disk.attr_or_none(mod, qual)
    key = (mod, qual, repr(wrt), bool(jit), bool(cache))
    hit = _REBUILT.get(key)
    if hit is not None and obj is not None and hit.func is _underlying(obj):
        return hit
    if obj is None:
        where = (" (defined in the sending process's __main__ script, which this process "
                 "does not run: move it to a module both can import)" if mod == "__main__"
                 else "")
        raise pickle.UnpicklingError(
            f"jitgrad: cannot find the differentiated function {mod}.{qual} in this "
            f"process{where}")
    out = _as_diff(obj.diff if isinstance(obj, GradFunction) else obj, wrt, jit, "cpu", cache)
    _REBUILT[key] = out
    return out


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
        return f"an array of shape {v.shape}" + (f" and dtype {v.dtype}"
                                                 if v.dtype != np.float64 else "")
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
                  target: str = "cpu", cache: bool = False) -> Any:
    """Decorator: ``@differentiate`` or ``@differentiate(wrt=(0, 2), jit=True)``.

    ``cache=True`` keeps each specialisation's generated code and Numba's machine code on
    disk (next to the source, where Numba caches), so another process skips both."""
    refuse_target(target)
    if target == "cuda":
        from .cuda_api import CudaDifferentiated

        if cache or not jit:
            raise ValueError("target='cuda' takes neither cache=True nor jit=False (it always "
                             "compiles with numba.cuda; run it in Numba's simulator, "
                             "NUMBA_ENABLE_CUDASIM=1, to execute it as Python)")

        if func is None:
            return lambda f: CudaDifferentiated(f, wrt)
        return CudaDifferentiated(func, wrt)
    if func is None:
        return lambda f: Differentiated(f, wrt, jit, target, cache)
    return Differentiated(func, wrt, jit, target, cache)


def refuse_target(target: str) -> None:
    """Refuse an unknown ``target=`` at once."""
    if target not in ("cpu", "cuda"):
        raise ValueError(f"target must be 'cpu' or 'cuda', got {target!r}")


def grad(func: Callable, wrt: Wrt = 0, *, jit: bool = True, target: str = "cpu",
         cache: bool | None = None) -> GradFunction:
    """Transform ``func`` into its gradient function (like ``jax.grad``).  ``cache``: see
    ``differentiate`` (None: as the ``Differentiated`` passed, else off)."""
    return GradFunction(_as_diff(func, wrt, jit, target, cache), with_value=False)


def value_and_grad(func: Callable, wrt: Wrt = 0, *, jit: bool = True,
                   target: str = "cpu", cache: bool | None = None) -> GradFunction:
    """Transform ``func`` into a function returning ``(value, gradient)``."""
    return GradFunction(_as_diff(func, wrt, jit, target, cache), with_value=True)


def vjp(func: Callable, *args: Any, wrt: Wrt = 0, jit: bool = True,
        cache: bool | None = None) -> tuple[Any, Callable]:
    """``(func(*args), pullback)`` where ``pullback(dy)`` gives the vector-Jacobian product."""
    return _as_diff(func, wrt, jit, "cpu", cache).vjp(*args)


#: the ``Differentiated`` the functional transforms made of a module-level function, per
#: options: ``jg.hvp(f, ...)`` called in a loop compiles once, as ``jg.grad(f)`` called
#: again does.  Only functions their module names (they live as long as it does); a
#: local function or lambda gets a new one each time, so nothing keeps it alive; with
#: ``cache=True`` the on-disk cache serves a new one.
_MADE: dict[tuple, tuple[Any, Differentiated]] = {}


def _as_diff(func, wrt, jit, target, cache=None) -> Differentiated:
    if cache is None:
        cache = isinstance(func, Differentiated) and func.cache
    if isinstance(func, Differentiated):
        same = wrt == func.wrt or (_resolve_wrt(wrt, func.params, func.func.__name__)
                                   == (func.wrt_positions, func.single))
        if same and bool(jit) == func.jit and target == "cpu" and bool(cache) == func.cache:
            return func  # the same function, wrt and mode: share its compiled code
        func = func._orig
    mod, qual = getattr(func, "__module__", None), getattr(func, "__qualname__", "")
    if cache or not isinstance(mod, str) or "<" in qual or mod not in sys.modules or \
            disk.attr_or_none(mod, qual) is not func:
        return Differentiated(func, wrt, jit, target, cache)
    key = (mod, qual, repr(wrt), bool(jit), target, bool(cache))
    hit = _MADE.get(key)
    if hit is None or hit[0] is not func:
        hit = _MADE[key] = (func, Differentiated(func, wrt, jit, target, cache))
    return hit[1]


def _copies(args: tuple) -> tuple:
    """The arguments with every array copied (the caller's arrays are never written)."""
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


#: argument types whose kind follows from the type alone (arrays: from dtype and ndim)
_SCALAR_TYPES = frozenset({float, int, bool, np.float64, np.float32, np.int64, np.int32,
                           np.bool_})


def _signature(args: tuple) -> tuple | None:
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
