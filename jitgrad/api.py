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
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from . import config, report, rules
from .arguments import (
    STRUCTURED,
    TRANSFORMING,
    Wrt,
    copies,
    describe,
    describe_kinds,
    describe_params,
    guess_args,
    kind_text,
    pick_wrt,
    refuse_aliased,
    resolve_wrt,
    signature,
    tupled,
)
from .cuda_api import CudaDifferentiated
from .errors import JitError
from .forward_mode import hvp_source, jvp_of, jvp_source
from .kernels import rng
from .runtime.tracked import Tracked
from .specialise import Specialisations
from .transpiler.analysis.effects import first_draw
from .transpiler.analysis.kinds import of_value
from .transpiler.backend import cache as disk
from .transpiler.backend import emit
from .transpiler.backend import jit as backend
from .transpiler.front.aux import aux_size
from .transpiler.front.fence import fence, fence_entry
from .transpiler.front.kernel import refuse_on_cpu
from .transpiler.front.nested import inner_gradient
from .transpiler.front.parse import parse_function, python_function
from .transpiler.front.split import split_sources
from .transpiler.gradient_code import caller as nested_caller
from .transpiler.pipeline import (
    STAGES,
    Generated,
    Prepared,
    all_float64,
    generate,
    prepare,
    show_body,
)
from .transpiler.pipeline import stage as stage_source


class Differentiated:
    """A function with compiled gradients (see ``differentiate``)."""

    def __init__(self, func: Callable, wrt: Wrt = 0, jit: bool = True, target: str = "cpu",
                 cache: bool | None = None, has_aux: bool = False,
                 auto_checkpoint: bool | None = None):
        if target != "cpu":
            refuse_target(target)
            raise ValueError("target='cuda' gives kernels and device functions, not CPU "
                             "gradients: use jg.differentiate(f, wrt=..., target='cuda') and "
                             "its .vjp[blocks, threads] or .device_grad (docs/cuda.md)")
        if inner_gradient(func) is not None:  # jg.grad(jg.grad(f)): differentiates a
            func = nested_caller(func)  # function calling the gradient (front/nested.py)
        if isinstance(func, Differentiated):
            func = func._orig
        self.func = python_function(func)
        self._orig = func  # what the user passed (their Numba dispatcher, options and all)
        self._dispatcher = func if func is not self.func else None
        self.jit = bool(jit)
        self.wrt = wrt
        #: on-disk cache of generated and compiled code (cache.py); None: as the user's
        #: dispatcher (``@numba.njit(cache=True)`` caches its gradient too) or ``jg.config``
        self.cache = (emit.user_caches(func) or config.cache) if cache is None else bool(cache)
        #: ``func`` returns ``(out, aux)``: ``out`` is differentiated, ``aux`` passed back
        self.has_aux = bool(has_aux)
        #: checkpoint time loops whose tape would not fit in cache (None: ``jg.config``'s
        #: choice when the function is transformed; ``modes/auto_checkpoint.py``)
        self.auto_checkpoint = auto_checkpoint
        self._aux_size: int | None = None  # values in aux (0: one value); see front/aux.py
        #: the user's numba.njit options (fastmath, parallel...): the generated code's too
        self.options = emit.user_options(func)
        self._disk = disk.Store(self.func, self.jit, self.options, self.has_aux,
                                checkpoint=self._checkpoint_key) if self.cache else None
        # the signature of what was passed: a functools.wraps wrapper is not its __wrapped__
        sig = inspect.signature(self.func, follow_wrapped=False)
        self.params = list(sig.parameters)
        self._arity = len(self.params)
        self._sig = sig
        #: plain parameters only (others are refused by the transform, fence.py): calls are
        #: bound to the full positional tuple the generated code takes (``bind``)
        self._bindable = all(p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
                             for p in sig.parameters.values())
        self._positional = self._bindable and all(p.default is inspect.Parameter.empty
                                                  for p in sig.parameters.values())
        self.wrt_positions, self.single = resolve_wrt(wrt, self.params, self.func.__name__)
        self._prepared: Prepared | None = None
        self._prepared_version = -1
        #: makes the prepared unit of generated code given as a tree (``_plain``)
        self._made: Callable[[Differentiated], Prepared] | None = None
        #: tuple arguments passed as their entries (``structured.Flat``): the ``tuples``
        #: pass's input (``transpiler/front/tuples.py``); None for other functions
        self._tuples: dict[str, tuple] | None = None
        self._entry_checked = False
        #: (the prepared unit, does it draw): ``_draws``'s answer, redone with ``_prep``
        self._draws_of: tuple[Prepared, bool] | None = None
        self._bridges: dict[tuple[int, ...], Differentiated] = {}
        self._primal = None
        self._uncompilable: set[tuple] = set()  # argument types Numba refused in the primal
        #: every mode's specialisations (reverse, forward, second order: ``specialise.py``)
        self._specs = Specialisations()
        self._lock = threading.Lock()
        self._last: Generated | None = None
        functools.update_wrapper(self, self.func)

    # --- preparation and caching ------------------------------------------------

    def _checkpoint_key(self) -> str:
        """The on-disk cache's record of the automatic checkpointing the code is made with."""
        return f"checkpoint={config.checkpoint_threshold(self.auto_checkpoint)}"

    def _plain(self, func: Callable, wrt: Wrt, jit: bool,
               prepared: Callable[[Differentiated], Prepared] | None = None) -> Differentiated:
        """A plain ``Differentiated`` of ``func`` whatever this one's class (a tuple
        arguments' ``structured.Flat`` too): what ``forward_mode._second`` differentiates
        again, without importing this module.  ``prepared``: makes its prepared unit
        (generated code given as a tree: no source of ``func`` is read)."""
        d = Differentiated(func, wrt=wrt, jit=jit)
        d._made = prepared
        return d

    def _prep(self) -> Prepared:
        """The kind-independent passes, redone when a rule is registered (helpers may
        become primitives)."""
        version = rules.version()
        if self._prepared is None or self._prepared_version != version:
            with TRANSFORMING:
                if self._prepared is None or self._prepared_version != version:
                    self._prepared = self._made(self) if self._made is not None \
                        else self._prepare_source()
                    self._prepared_version = version
        return self._prepared

    def _prepare_source(self) -> Prepared:
        """``_prep``'s passes on the function's source, its refusals first (once: the
        source they parse and fence is the one the passes start from)."""
        parsed = None
        if not self._entry_checked:  # refusals first, in the user's source
            parsed = parse_function(self.func)
            fence(parsed)
            refuse_on_cpu(parsed)
            fence_entry(parsed)
            if self.has_aux:
                self._aux_size = aux_size(parsed)
            self._entry_checked = True
        return prepare(self.func, parallel=emit.is_parallel(self.options), aux=self.has_aux,
                       tuples=self._tuples, jit=bool(self.jit), parsed=parsed)

    def bind(self, args: tuple, kwargs: dict[str, Any] | None = None) -> tuple:
        """A call's arguments as the full positional tuple the generated code takes:
        keywords put in place, the omitted ones filled from the defaults (``f.__defaults__``,
        evaluated when the ``def`` ran, as Python does); Python's TypeError otherwise."""
        if not kwargs and (len(args) == len(self.params) or self._positional
                           or not self._bindable):
            return args  # (an arity error is _check_args's, after the source's refusals)
        try:
            bound = self._sig.bind(*args, **(kwargs or {}))
        except TypeError as e:
            raise TypeError(f"{self.func.__name__}({describe_params(self._sig)}): {e}") \
                from None
        bound.apply_defaults()
        return tuple(bound.args)

    def _draws(self) -> bool:
        """Does the function (its helpers inlined) draw from a global random generator?
        Then code that runs it again replays the generators (``kernels/rng.py``).  Asked
        on every call of vjp, jacfwd, jacrev and hessian: read once per prepared unit (a
        registered rule prepares the function again, and so asks again)."""
        prep = self._prep()
        known = self._draws_of
        if known is None or known[0] is not prep:
            known = self._draws_of = (prep, first_draw(prep.body, prep.env) is not None)
        return known[1]

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
                raise TypeError(f"{what} is complex ({describe(a)}): jitgrad differentiates "
                                "real-valued code only; pass the real and imaginary parts as "
                                "separate float arguments")
            if dt == np.float16:
                raise TypeError(f"{what} is float16 ({describe(a)}): Numba has no float16 "
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
        """The generated code for these arguments' kinds (transformed once, cached; a
        repeated call with the same argument types skips the checks and the kinds)."""
        gen = self._specs.by_signature("vjp", signature(args),
                                       lambda: self._generated_for(args))
        self._last = gen
        return gen

    def _generated_for(self, args: tuple) -> Generated:
        """``_generated`` the long way: checks, kinds, and the cache keyed by kinds."""
        if not self.cache:  # (a cache hit needs no transform: reported when one runs)
            self._prep()  # unsupported source is reported before arity and kinds
        elif self.has_aux:
            self._aux_structure()
        return self._generated_kinds(self._kinds(args), all_float64(args))

    def _generated_kinds(self, kinds: dict, float64: bool = False) -> Generated:
        """The generated code for these argument kinds (transformed once, cached): also
        what a call of this gradient inside another differentiated function inlines
        (``transpiler/front/nested.py``); ``float64``: the arguments' floats are all
        float64 (element loops may run, ``backend/elements.py``)."""
        key: tuple = tuple(sorted(kinds.items()))
        specs = self._specs
        with specs.lock:
            gen = specs.get("vjp", key)  # (made for float64: other floats share it unless
            if not float64 and (gen is None or gen.float64):  # it has element loops)
                key = (*key, "any floats")
                gen = specs.get("vjp", key)
            if gen is None:
                gen = specs.put("vjp", key, self._build(kinds, float64))
            self._last = gen
        return gen

    def _build(self, kinds: dict, float64: bool = False) -> Generated:
        """Transform and compile one specialisation; with ``cache=True``, load it from the
        on-disk cache (no transform; Numba loads the machine code), or fill the cache.
        The time it took is kept on it and reported (``jitgrad.report``)."""
        what = f"{self.func.__qualname__}({describe_kinds(kinds)})"
        report.starting(f"transforming {what}")
        start = time.perf_counter()
        gen = self._build_timed(kinds, float64)
        gen.transform_seconds = time.perf_counter() - start
        report.done(f"transformed {what} in {gen.transform_seconds:.2f} s")
        load = gen.compiled.loader
        if load is not None:  # a variant lowered when first called: its time counted too
            gen.compiled.loader = functools.partial(_timed_load, gen, load)
        return gen

    def _build_timed(self, kinds: dict, float64: bool) -> Generated:
        wrt = [self.params[i] for i in self.wrt_positions]
        with TRANSFORMING:
            gen = self._disk.load(wrt, kinds, float64) if self._disk is not None else None
            if gen is None:
                gen = generate(self._prep(), wrt, kinds, self.auto_checkpoint, float64)
                u = gen.unit
                gen.compiled = (self._disk.save(gen) if self._disk is not None else None) or \
                    backend.build(u.sources, u.names, u.env, self.func.__qualname__, self.jit,
                                  u.ir.callables | u.ir.compiled, u.reads, u.workspaces,
                                  self.options)  # (a variant lowered when first called)
        return gen

    def cache_info(self) -> dict[str, Any]:
        """What the on-disk cache did for this function (``cache=True``; see
        ``jitgrad.transpiler.backend.cache.Store.info``), and what each specialisation cost
        (``specialisations``; ``transform_seconds`` and ``compile_seconds``, summed)."""
        gens = self._specs.entries("vjp")
        gens += [g for k, b in list(self._bridges.items()) if k[:1] == ("tuples",)
                 for g in b._specs.entries("vjp")]  # tuple arguments' (structured.Flat)
        info = disk.Store.info(self._disk, gens)
        specs = [_cost(g, "vjp", self._specs) for g in gens] + \
            [_cost(g, "jvp", self._specs) for g in self._specs.entries("jvp")]
        info["specialisations"] = specs
        for k in ("transform_seconds", "compile_seconds"):
            info[k] = sum(sp[k] for sp in specs)
        return info

    def release_workspaces(self) -> None:
        """Free the workspaces (tapes, adjoint buffers of local arrays) kept between
        gradient calls, on every thread: they are kept per thread and specialisation so
        that repeated calls allocate nothing; the next call allocates them again.
        Dropping the function frees them too."""
        for entry in self._specs.entries():  # every mode's compiled code
            _release(entry)
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
        key = tuple((type(a), getattr(a, "dtype", None), getattr(a, "ndim", 0)) for a in args)
        if key not in self._uncompilable:
            try:
                return emit.call_primal(self._primal_fn(), self.func, args)
            except JitError:
                self._uncompilable.add(key)
        return self.func(*args)

    # --- public ---------------------------------------------------------------------

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """The user's function: compiled with Numba when ``jit=True`` (their own
        ``@numba.njit`` dispatcher if they passed one), as plain Python otherwise."""
        if kwargs or len(args) != self._arity:
            args = self.bind(args, kwargs)
        for a in args:
            if isinstance(a, Tracked):
                from .runtime import track_call

                return track_call(self._vjp_all, args, self.func.__name__)
        if self._positional:
            self._check_args(args)
        if not self.jit:
            return self.func(*args)
        return emit.call_primal(self._primal_fn(), self.func, args)

    def value_and_grad(self, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
        """``(f(*args, **kwargs), gradient)`` for a scalar-valued ``f``."""
        if kwargs or len(args) != self._arity:
            args = self.bind(args, kwargs)
        return self._value_and_grad(args, True)

    def _value_and_grad(self, args: tuple, want_value: bool) -> tuple[Any, Any]:
        if tupled(args):
            return STRUCTURED["value_and_grad"](self, args, want_value)  # (structured.py)
        gen = self._generated(args)
        refuse_aliased(self, gen, args)
        rk = gen.return_kinds
        if self.has_aux:
            return self._aux_value_and_grad(gen, args)
        if len(rk) != 1 or (rk[0] is not None and rk[0].ndim != 0):
            what = f"{len(rk)} values" if len(rk) != 1 else "an array"
            raise ValueError(f"grad of {self.func.__name__} needs a scalar output, but it "
                             f"returns {what}; use .vjp(...) for non-scalar outputs")
        value, grads = self._run(gen, args, 1.0, want_value)
        if want_value and type(value) is not float and (np.ndim(value) != 0
                                                       or isinstance(value, tuple)):
            raise ValueError(f"grad of {self.func.__name__} needs a scalar output, got "
                             f"{describe(value)}; use .vjp(...) for non-scalar outputs")
        return value, self._shape(grads)

    def grad(self, *args: Any, **kwargs: Any) -> Any:
        """The gradient w.r.t. ``wrt`` (a tuple when ``wrt`` is a tuple); with ``has_aux``,
        ``(gradient, aux)``."""
        if kwargs or len(args) != self._arity:
            args = self.bind(args, kwargs)
        if self.has_aux:
            (_, aux), g = self._value_and_grad(args, True)
            return g, aux
        return self._value_and_grad(args, False)[1]

    def _aux_value_and_grad(self, gen: Generated, args: tuple) -> tuple[Any, Any]:
        """``((out, aux), gradient of out)`` for ``has_aux``: one run, aux as computed."""
        rk = gen.return_kinds
        if rk[0] is not None and rk[0].ndim != 0:
            raise ValueError(f"grad of {self.func.__name__} needs a scalar output, but the "
                             "first of the pair it returns is an array; use "
                             ".vjp(...) for non-scalar outputs")
        value, grads = self._run(gen, args, 1.0, True)
        return (value[0], self._aux_of(value[1:])), self._shape(grads)

    def _aux_structure(self) -> int:
        """How many values ``aux`` holds (0: one value); refuses a function that does not
        return a pair, at its return line (also where the on-disk cache skips the transform)."""
        if self._aux_size is None:
            self._aux_size = aux_size(parse_function(self.func))
        return self._aux_size

    def _aux_of(self, flat: tuple) -> Any:
        """``aux`` rebuilt from the generated code's flat outputs after ``out``."""
        return tuple(flat) if self._aux_structure() else flat[0]

    def vjp(self, *args: Any, **kwargs: Any) -> tuple[Any, Callable[[Any], Any]]:
        """``(f(*args), pullback)``; ``pullback(dy)`` reruns the sweeps with seed ``dy``.

        The value is the user's function run on copies of the arguments (compiled as
        ``self(...)`` runs it; as plain Python where Numba cannot compile it), so arrays
        the caller passed are never written; the pullback keeps copies of its own, and
        replays the random generators' state the value was computed from (its draws are
        the value's, and it leaves the generators as it found them).
        """
        if kwargs or len(args) != self._arity:
            args = self.bind(args, kwargs)
        if tupled(args):
            return STRUCTURED["vjp"](self, args)  # (structured.py)
        refuse_aliased(self, self._generated(args), args)  # refusals before anything runs
        kept = copies(args)
        drawn = rng.capture() if self._draws() else None  # the pullback draws the same
        value = self._value(copies(args))
        out = value[0] if self.has_aux else value  # (the pair, checked by front/aux.py)

        def pullback(dy: Any) -> Any:
            dy = _seed_like(out, dy)
            gen = self._generated(kept)
            # (the value-and-gradient variant: the gradient-only one of a scalar function
            # is written for the seed 1.0 that f.grad passes)
            with rng.replaying(drawn):
                return self._shape(self._run(gen, copies(kept), dy, True)[1])

        if self.has_aux:
            return out, pullback, value[1]  # as jax.vjp(f, *args, has_aux=True)
        return value, pullback

    def jvp(self, primals: tuple, tangents: Any, **kwargs: Any) -> tuple[Any, Any]:
        """``(f(*primals, **kwargs), J @ tangents)`` by forward mode; ``tangents``: one per
        ``wrt`` argument (a single value for a single ``wrt``), see ``jitgrad.jvp``."""
        return jvp_of(self, primals, tangents, kwargs)

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
            return jvp_source(self, example_args, stage)
        if mode == "hvp":
            if stage != "all":
                raise ValueError("mode='hvp' shows the whole function only (stage='all')")
            return hvp_source(self, example_args)
        if mode != "vjp":
            raise ValueError(f"mode must be 'vjp', 'jvp' or 'hvp', got {mode!r}")
        if stage not in STAGES:
            raise ValueError(f"stage must be one of {', '.join(STAGES)}")
        if example_args and tupled(self.bind(example_args)):
            f, fargs = STRUCTURED["flat"](self, self.bind(example_args))[:2]  # (structured.py)
            return f.source(*fargs, stage=stage, mode=mode)
        args = self.bind(example_args) if example_args else None
        if args is None and self._last is not None:
            gen = self._last
        else:
            args = args if args is not None else tuple(guess_args(self._prep(), self.params))
            gen = self._generated(args)
        u = gen.unit
        # (made for float64 arguments: with element loops and cached calls under jit=True)
        float64 = all_float64(args) if args is not None else gen.float64 or u.jit
        if stage in ("forward", "adjoint", "all"):
            helpers = split_sources(u.ir.compiled, u.env) \
                if stage == "all" and u.ir is not None else ""
            return u.sources["grad" if stage == "all" else stage] + helpers
        with TRANSFORMING:
            if stage == "normalized":
                return show_body(self._prep())
            return stage_source(self.func, stage, u.wrt, u.arg_kinds,
                                parallel=emit.is_parallel(self.options), tuples=self._tuples,
                                jit=bool(self.jit) and float64)

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
                other = Differentiated(self._orig, wrt=floats if floats else (), jit=self.jit,
                                       auto_checkpoint=self.auto_checkpoint)
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
        return _rebuild, (*_reference(self), self.wrt, self.jit, self.cache, self.has_aux,
                          self.auto_checkpoint)


class GradFunction:
    """What ``jg.grad`` and ``jg.value_and_grad`` return: a callable with ``.source()``."""

    def __init__(self, diff: Differentiated, with_value: bool):
        self.diff = diff
        self.with_value = with_value
        functools.update_wrapper(self, diff.func)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        d = self.diff
        return d.value_and_grad(*args, **kwargs) if self.with_value else d.grad(*args, **kwargs)

    def source(self, *example_args: Any, stage: str = "all", mode: str = "vjp") -> str:
        return self.diff.source(*example_args, stage=stage, mode=mode)

    def cache_info(self) -> dict[str, Any]:
        return self.diff.cache_info()

    def release_workspaces(self) -> None:
        """See ``Differentiated.release_workspaces``."""
        self.diff.release_workspaces()

    def __reduce__(self):
        return GradFunction, (self.diff, self.with_value)


def _timed_load(gen: Generated, load: Callable[[str], None], variant: str) -> None:
    """``load(variant)`` (its source written, with ``TRANSFORMING`` held, then loaded), its
    time added to ``gen.transform_seconds``."""
    start = time.perf_counter()
    with TRANSFORMING:
        load(variant)
    gen.transform_seconds += time.perf_counter() - start


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


def _rebuild(mod: str, qual: str, wrt: Wrt, jit: bool, cache: bool,
             has_aux: bool = False, auto_checkpoint: bool | None = None) -> Differentiated:
    """Unpickle a ``Differentiated``: the object at ``mod.qual`` with these options (the
    decorated object itself where they match, so its compiled code is shared; one object
    per process for each reference and options, so a worker's tasks share compiled code)."""
    obj = disk.attr_or_none(mod, qual)
    key = (mod, qual, repr(wrt), bool(jit), bool(cache), bool(has_aux), auto_checkpoint)
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
    out = _as_diff(obj.diff if isinstance(obj, GradFunction) else obj, wrt, jit, "cpu", cache,
                   has_aux, auto_checkpoint)
    _REBUILT[key] = out
    return out


def _release(entry: Any) -> None:
    """Free the workspaces of one entry of the specialisation cache: compiled code (a
    ``Generated``'s, a tangent variant) or hvp's ``Differentiated`` gradient code."""
    if isinstance(entry, Differentiated):
        entry.release_workspaces()
        return
    release = getattr(getattr(entry, "compiled", entry), "release", None)
    if release is not None:
        release()


def _cost(gen: Generated, mode: str, specs: Specialisations) -> dict[str, Any]:
    """One specialisation's entry in ``cache_info`` (with its tangent-only variant's)."""
    compiled = [gen.compiled, specs.find("tangent", gen)]
    kinds = {p: kind_text(k) for p, k in gen.unit.arg_kinds.items()}
    return {"mode": mode, "wrt": list(gen.unit.wrt), "kinds": kinds,
            "transform_seconds": gen.transform_seconds,
            "compile_seconds": sum(report.compile_seconds(c) for c in compiled if c)}


def _seed_like(value: Any, dy: Any) -> Any:
    """``dy`` as the seed of the output ``value``: an array of its shape, a tuple of
    copies, or a float."""
    if isinstance(value, np.ndarray) and value.ndim > 0:
        dy = np.array(dy, dtype=np.result_type(value.dtype, np.float32))
        if dy.shape != value.shape:
            raise ValueError(f"pullback: dy has shape {dy.shape}, output has {value.shape}")
        return dy
    if isinstance(value, tuple):
        return tuple(copies(tuple(dy)))
    return float(dy)


def differentiate(func: Callable | None = None, *, wrt: Wrt = 0, jit: bool = True,
                  target: str = "cpu", cache: bool | None = None, has_aux: bool = False,
                  auto_checkpoint: bool | None = None) -> Any:
    """Decorator: ``@differentiate`` or ``@differentiate(wrt=(0, 2), jit=True)``.

    ``cache=True`` keeps each specialisation's generated code and Numba's machine code on
    disk (next to the source, where Numba caches), so another process skips both (None:
    as the user's ``@numba.njit(cache=...)`` dispatcher, else ``jg.config.cache``, off
    unless ``JITGRAD_CACHE=1``);
    ``has_aux=True``: ``func`` returns ``(out, aux)`` (see ``grad``);
    ``auto_checkpoint=True``: a time loop whose tape would not fit in cache runs on the
    binomial schedule over cache-sized blocks of steps instead of keeping its whole tape
    (False: never; None: ``jg.config.auto_checkpoint``, off unless
    ``JITGRAD_AUTO_CHECKPOINT=1``; ``docs/long-loops.md``)."""
    refuse_target(target)
    if target == "cuda":
        if cache or not jit or has_aux:
            raise ValueError("target='cuda' takes neither cache=True, has_aux=True nor "
                             "jit=False (it always "
                             "compiles with numba.cuda; run it in Numba's simulator, "
                             "NUMBA_ENABLE_CUDASIM=1, to execute it as Python)")

        if func is None:
            return lambda f: CudaDifferentiated(f, wrt)
        return CudaDifferentiated(func, wrt)
    if func is None:
        return lambda f: Differentiated(f, wrt, jit, target, cache, has_aux, auto_checkpoint)
    return Differentiated(func, wrt, jit, target, cache, has_aux, auto_checkpoint)


def refuse_target(target: str) -> None:
    """Refuse an unknown ``target=`` at once."""
    if target not in ("cpu", "cuda"):
        raise ValueError(f"target must be 'cpu' or 'cuda', got {target!r}")


def grad(func: Callable, wrt: Wrt | None = None, *, argnums: Wrt | None = None,
         has_aux: bool = False, jit: bool = True, target: str = "cpu",
         cache: bool | None = None, auto_checkpoint: bool | None = None) -> GradFunction:
    """Transform ``func`` into its gradient function (like ``jax.grad``).  ``argnums``:
    JAX's name for ``wrt``; ``has_aux=True``: ``func`` returns ``(out, aux)`` and the
    result is ``(gradient of out, aux)``.  ``cache``, ``auto_checkpoint``: see
    ``differentiate`` (None: as the ``Differentiated`` passed, else the default)."""
    d = _as_diff(func, pick_wrt(wrt, argnums, "grad"), jit, target, cache, has_aux,
                 auto_checkpoint)
    return GradFunction(d, with_value=False)


def value_and_grad(func: Callable, wrt: Wrt | None = None, *, argnums: Wrt | None = None,
                   has_aux: bool = False, jit: bool = True, target: str = "cpu",
                   cache: bool | None = None, auto_checkpoint: bool | None = None
                   ) -> GradFunction:
    """Transform ``func`` into a function returning ``(value, gradient)``; with
    ``has_aux=True``, ``((out, aux), gradient)`` as JAX returns them."""
    d = _as_diff(func, pick_wrt(wrt, argnums, "value_and_grad"), jit, target, cache, has_aux,
                 auto_checkpoint)
    return GradFunction(d, with_value=True)


def vjp(func: Callable, *args: Any, wrt: Wrt | None = None, argnums: Wrt | None = None,
        has_aux: bool = False, jit: bool = True, cache: bool | None = None,
        auto_checkpoint: bool | None = None, **kwargs: Any) -> tuple[Any, ...]:
    """``(func(*args, **kwargs), pullback)`` where ``pullback(dy)`` gives the
    vector-Jacobian product; keywords other than vjp's own go to ``func``.  With
    ``has_aux=True``, ``(out, pullback, aux)`` as ``jax.vjp`` returns them."""
    d = _as_diff(func, pick_wrt(wrt, argnums, "vjp"), jit, "cpu", cache, has_aux,
                 auto_checkpoint)
    return d.vjp(*args, **kwargs)


#: the ``Differentiated`` the functional transforms made of a module-level function, per
#: options: ``jg.hvp(f, ...)`` called in a loop compiles once, as ``jg.grad(f)`` called
#: again does.  Only functions their module names (they live as long as it does); a
#: local function or lambda gets a new one each time, so nothing keeps it alive; with
#: ``cache=True`` the on-disk cache serves a new one.
_MADE: dict[tuple, tuple[Any, Differentiated]] = {}


def _cache_choice(func: Any, cache: bool | None) -> tuple[bool, bool]:
    """``(cache, by_config)``: the ``cache`` asked for, else a Differentiated's own
    choice, else the user's dispatcher's, else ``jg.config.cache`` (then ``by_config``:
    such a function stays in ``_as_diff``'s memo, one object, not a disk load per call)."""
    if cache is not None:
        return bool(cache), False
    if emit.user_caches(func):
        return True, False
    on = bool(config.cache) and not isinstance(func, (Differentiated, GradFunction))
    return on, on


def _as_diff(func, wrt, jit, target, cache=None, has_aux=False,
             auto_checkpoint=None) -> Differentiated:
    if wrt is None:  # a jg.differentiate object's (or jg.grad result's) own wrt, else 0
        wrt = getattr(func, "diff", func).wrt if isinstance(func, (Differentiated,
                                                                   GradFunction)) else 0
    cache, by_config = _cache_choice(func, cache)
    if isinstance(func, Differentiated):
        same = wrt == func.wrt or (resolve_wrt(wrt, func.params, func.func.__name__)
                                   == (func.wrt_positions, func.single))
        if auto_checkpoint is None:
            auto_checkpoint = func.auto_checkpoint
        if same and bool(jit) == func.jit and target == "cpu" and bool(cache) == func.cache \
                and bool(has_aux) == func.has_aux and auto_checkpoint == func.auto_checkpoint:
            return func  # the same function, wrt and mode: share its compiled code
        func = func._orig
    mod, qual = getattr(func, "__module__", None), getattr(func, "__qualname__", "")
    if (cache and not by_config) or not isinstance(mod, str) or "<" in qual \
            or mod not in sys.modules or disk.attr_or_none(mod, qual) is not func:
        return Differentiated(func, wrt, jit, target, cache, has_aux, auto_checkpoint)
    key = (mod, qual, repr(wrt), bool(jit), target, bool(cache), bool(has_aux), auto_checkpoint)
    hit = _MADE.get(key)
    if hit is None or hit[0] is not func:
        hit = _MADE[key] = (func, Differentiated(func, wrt, jit, target, cache, has_aux,
                                                 auto_checkpoint))
    return hit[1]
