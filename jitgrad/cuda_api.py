"""The CUDA target's public face: ``differentiate(..., target="cuda")``.

A kernel (``i = cuda.grid(1)`` plus a guard) gets ``step[blocks, threads](...)`` (the
primal launch) and ``step.vjp[blocks, threads](..., cotangents={...})``: the adjoint
kernel launched on the same grid, on fresh gradient buffers and copies of what the
kernel writes, so the caller's arrays are never written.  A scalar function gets
``f.device_grad``, a CUDA device function ``(a, b, dret) -> (value, (da, db))`` for
the user's own kernels.  ``numba.cuda`` is imported only when something is compiled.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from . import rules
from .arguments import TRANSFORMING, Wrt, guess_args, resolve_wrt
from .errors import JitError
from .specialise import Specialisations
from .transpiler.analysis.kinds import Kind, of_value
from .transpiler.cuda_pipeline import (
    CUDA_PREPARE,
    CUDA_SPECIALISE,
    Built,
    build,
    capacities,
    prepare_cuda,
    transform_cuda,
)
from .transpiler.front.fence import fence
from .transpiler.front.parse import parse_function
from .transpiler.pipeline import Unit, show_body


def _python_function(func: Any) -> Any:
    """The plain function behind a ``cuda.jit`` or ``numba.njit`` dispatcher."""
    py = getattr(func, "py_func", None)
    if py is not None and type(func).__module__.split(".")[0] in ("numba", "numba_cuda"):
        return py
    if callable(func) and hasattr(func, "__code__"):
        return func
    raise TypeError(f"target='cuda' differentiates Python functions (a def, or a "
                    f"numba.cuda.jit kernel or device function); got {func!r}")


def _is_device_array(a: Any) -> bool:
    """A ``numba.cuda`` device array (the simulator's too), by what it offers."""
    return (hasattr(a, "__cuda_array_interface__") or hasattr(a, "copy_to_host")) \
        and not isinstance(a, np.ndarray)


def _kind(a: Any) -> Kind:
    if _is_device_array(a):
        return of_value(np.empty((1,) * len(a.shape), dtype=a.dtype))
    return of_value(a)


class CudaDifferentiated:
    """A CUDA kernel or device function with its adjoint (see ``differentiate``)."""

    def __init__(self, func: Callable, wrt: Wrt = 0):
        self._orig = func
        self.func = _python_function(func)
        self._dispatcher = func if func is not self.func else None
        self.wrt = wrt
        self.params = list(self.func.__code__.co_varnames[:self.func.__code__.co_argcount])
        self.wrt_positions, self.single = resolve_wrt(wrt, self.params, self.func.__name__)
        #: the specialisations (``"cuda"``: units per kinds; ``"cuda build"``: compiled per
        #: unit and tape capacities), in the cache every mode uses (``specialise.py``)
        self._specs = Specialisations()
        self._lock = self._specs.lock
        self._prepared: Unit | None = None
        self._version = -1
        self._primal: Any = None
        self._last: tuple[Unit, Built] | None = None
        #: per specialisation: the capacities checked tapes needed in earlier launches
        self._checked: dict[int, dict[str, int]] = {}
        functools.update_wrapper(self, self.func)

    # --- transformation -----------------------------------------------------------

    def _prep(self) -> Unit:
        version = rules.version()
        with self._lock, TRANSFORMING:  # (parsing is not thread-safe: see api)
            if self._prepared is None or self._version != version:
                fence(parse_function(self.func))
                prep = prepare_cuda(self.func)
                self._check_wrt(prep)
                self._prepared, self._version = prep, version
        return self._prepared

    def _check_wrt(self, prep: Unit) -> None:
        """A ``wrt`` array the kernel writes is refused (its gradient would need the values
        before the write, which other threads' writes make unknowable)."""
        shape = prep.kernel
        if shape is None:
            return
        for i in self.wrt_positions:
            p = self.params[i]
            if p in shape.outputs:
                node = next((n for n in ast.walk(prep.parsed.tree) if isinstance(n, ast.Subscript)
                             and isinstance(n.ctx, ast.Store) and isinstance(n.value, ast.Name)
                             and n.value.id == p), prep.parsed.tree)
                raise prep.parsed.error(
                    f"'{p}' is both differentiated (in wrt) and written in place by the "
                    "kernel", node, f"write the result into another array than '{p}', or "
                    f"leave '{p}' out of wrt")

    @property
    def is_kernel(self) -> bool:
        """True for a kernel (it calls ``cuda.grid``), False for a device function."""
        return self._prep().kernel is not None

    @property
    def outputs(self) -> tuple[str, ...]:
        """The parameters the kernel writes: the keys ``cotangents`` takes."""
        shape = self._prep().kernel
        return () if shape is None else shape.outputs

    def _unit(self, args: tuple) -> Unit:
        prep = self._prep()
        if len(args) != len(self.params):
            raise TypeError(f"{self.func.__name__}() takes {len(self.params)} arguments "
                            f"({', '.join(self.params)}) but {len(args)} were given")
        kinds = {p: _kind(a) for p, a in zip(self.params, args, strict=True)}
        for i in self.wrt_positions:
            k = kinds[self.params[i]]
            if k.cls != "f":
                raise TypeError(f"wrt argument {i} ('{self.params[i]}') of "
                                f"{self.func.__name__} is not a float scalar or float array; "
                                "only those carry gradients")
        if prep.kernel is not None:
            kinds.update({n: of_value(0) for n in prep.kernel.index})
        wrt = [self.params[i] for i in self.wrt_positions]
        with self._lock, TRANSFORMING:
            return self._specs.entry("cuda", tuple(sorted(kinds.items())),
                                     lambda: transform_cuda(prep, wrt, kinds))

    def _built_for(self, args: tuple) -> tuple[Unit, Built]:
        """The specialisation and compiled code for these arguments (kernel launch
        arguments, or a device function's example arguments)."""
        u = self._unit(args)
        values = dict(zip(self.params, args, strict=True)) if u.kernel is not None else {}
        return u, self._compiled(u, values)

    def _compiled(self, u: Unit, values: dict[str, Any]) -> Built:
        caps = capacities(u, values, self._checked.get(id(u)))
        with self._lock:
            b = self._specs.derived("cuda build", u, tuple(sorted(caps.items())),
                                    lambda: build(u, caps, self.func.__qualname__))
            self._last = (u, b)
        return b

    # --- kernels ------------------------------------------------------------------

    def __getitem__(self, config: Any) -> Any:
        """``step[blocks, threads](...)``: the user's kernel, launched as it is."""
        if not self.is_kernel:
            raise TypeError(f"{self.func.__name__} is a device function, not a kernel: call "
                            "its device_grad from your own kernel")
        if self._primal is None:
            from numba import cuda

            self._primal = self._dispatcher if self._dispatcher is not None \
                else cuda.jit(self.func)
        return self._primal[config]

    @property
    def vjp(self) -> _VJP:
        """``step.vjp[blocks, threads](*args, cotangents={"out": dout})`` -> the gradients in
        ``wrt`` order (arrays placed as the inputs were, scalars as Python floats)."""
        if not self.is_kernel:
            raise TypeError(f"{self.func.__name__} is a device function: use device_grad")
        return _VJP(self)

    def _launch_args(self, args: tuple, cotangents: dict | None) \
            -> tuple[Built, list[Any], Callable[[], Any]]:
        """The adjoint kernel, its arguments for these inputs and seeds, and a function
        collecting the gradients after the launch."""
        u, built = self._built_for(args)
        low = u.lowered
        shape = u.kernel
        values = dict(zip(self.params, args, strict=True))
        cot = dict(cotangents or {})
        unknown = sorted(set(cot) - set(shape.outputs))
        if unknown:
            raise ValueError(f"cotangents for {', '.join(map(repr, unknown))}: "
                             f"{self.func.__name__} writes only "
                             f"{', '.join(map(repr, shape.outputs))}")
        on_device = any(_is_device_array(a) for a in args)
        _refuse_overlap(values, shape.outputs)
        kargs = [_copy(a) if p in low.writes else a for p, a in values.items()]
        grads: list[tuple[Any, bool]] = []
        for w in [self.params[i] for i in self.wrt_positions]:
            _, scalar = low.grads[w]
            buf = _zeros((1,), np.float64, on_device) if scalar else \
                _zeros(values[w].shape, values[w].dtype, _is_device_array(values[w]))
            grads.append((buf, scalar))
            kargs.append(buf)
        need = None
        for o in shape.outputs:
            out = values[o]
            seed = cot.get(o)
            if seed is None:
                kargs.append(_zeros(out.shape, out.dtype, _is_device_array(out)))
                continue
            if tuple(seed.shape) != tuple(out.shape):
                raise ValueError(f"cotangents[{o!r}] has shape {tuple(seed.shape)}, "
                                 f"'{o}' has {tuple(out.shape)}")
            kargs.append(_copy(seed, out.dtype) if low.seeds[o] in low.writes
                         else _as(seed, out.dtype))
        if low.need:
            need = _zeros((len(low.checked),), np.int64, on_device)
            kargs.append(need)

        def finish() -> Any:
            if need is not None:
                self._grow(u, built, _host(need))
            res = tuple(float(_host(b)[0]) if scalar else b for b, scalar in grads)
            return res[0] if self.single else res

        return built, kargs, finish

    def _vjp(self, config: Any, *args: Any, cotangents: dict | None = None) -> Any:
        for _ in range(3):
            built, kargs, finish = self._launch_args(args, cotangents)
            built.dispatcher[config](*kargs)
            try:
                return finish()
            except _Overflow:  # a checked tape was too short: again, with room for it
                continue
        raise RuntimeError(f"the adjoint of {self.func.__name__} kept overflowing its tapes")

    def _grow(self, u: Unit, built: Built, need: np.ndarray) -> None:
        """After a launch: where a thread needed a longer checked tape than it had, remember
        the length (rounded up to a power of two) and discard the launch's results."""
        over = {cap: int(need[k]) for cap, k in u.lowered.checked.items()
                if int(need[k]) > built.caps[cap]}
        if over:
            grown = dict(self._checked.get(id(u), {}))
            for cap, n in over.items():
                grown[cap] = 1 << max(0, n - 1).bit_length()
            self._checked[id(u)] = grown
            raise _Overflow()

    # --- device functions -----------------------------------------------------------

    @property
    def device_grad(self) -> Any:
        """The CUDA device function ``(*args, dret) -> (value, grads)`` (floats; a
        parameter used as a ``range`` bound is taken to be an int)."""
        return self.device_function()

    def device_function(self, *example_args: Any) -> Any:
        """``device_grad`` specialised for the kinds of ``example_args`` (ints, float32)."""
        if self.is_kernel:
            raise TypeError(f"{self.func.__name__} is a kernel: use .vjp[blocks, threads]")
        args = example_args or tuple(guess_args(self._prep(), self.params))
        return self._compiled(self._unit(args), {}).dispatcher

    def __call__(self, *args: Any) -> Any:
        """A device function run on the host as plain Python (kernels are launched)."""
        if self.is_kernel:
            raise TypeError(f"launch the kernel {self.func.__name__} as "
                            f"{self.func.__name__}[blocks, threads](...)")
        return self.func(*args)

    # --- reading and checking the generated code ---------------------------------------

    def source(self, *example_args: Any, stage: str = "all") -> str:
        """The generated adjoint kernel or device function (``stage="all"``), or what any
        pass of ``CUDA_PREPARE``/``CUDA_SPECIALISE`` produced; with a kernel's launch
        arguments, the tape capacities are those of that launch."""
        if stage == "normalized":
            return show_body(self._prep())
        names = [p.name for p in CUDA_PREPARE + CUDA_SPECIALISE]
        if stage not in ("all", *names):
            raise ValueError(f"stage must be one of all, normalized, {', '.join(names)}")
        if stage in [p.name for p in CUDA_PREPARE]:
            u = prepare_cuda(self.func, until=stage)
            return next(p for p in CUDA_PREPARE if p.name == stage).show(u)
        if not example_args and self._last is not None:
            u, b = self._last
        elif self.is_kernel:
            if not example_args:
                raise TypeError("source() of a kernel needs its launch arguments")
            u, b = self._built_for(example_args)
        else:
            args = example_args or tuple(guess_args(self._prep(), self.params))
            u, b = self._built_for(args)
        if stage == "all":
            return b.source
        return transform_cuda_stage(self._prep(), u, stage)

    def ptx(self, *example_args: Any, cc: tuple[int, int] = (9, 0)) -> str:
        """PTX of the adjoint kernel (for these launch arguments) or of the device function
        (for these example arguments), compiled for compute capability ``cc`` without a
        GPU (``numba.cuda.compile_ptx``)."""
        import numba
        from numba import cuda

        if numba.config.ENABLE_CUDASIM:
            raise JitError("ptx() needs Numba's CUDA compiler (the toolkit's NVVM); the CUDA "
                           "simulator (NUMBA_ENABLE_CUDASIM=1) has none")
        if self.is_kernel:
            built, kargs, _ = self._launch_args(example_args, None)
            types = tuple(numba.typeof(a) for a in kargs)
            ptx, _ = cuda.compile_ptx(built.pyfunc, types, cc=cc)
            return ptx
        args = example_args or tuple(guess_args(self._prep(), self.params))
        u = self._unit(args)
        built = self._compiled(u, {})
        types = tuple(numba.typeof(a) for a in args) + (numba.typeof(1.0),)
        ptx, _ = cuda.compile_ptx(built.pyfunc, types, device=True, cc=cc)
        return ptx

    def __repr__(self) -> str:
        what = "kernel" if self._prepared is not None and self._prepared.kernel else "function"
        return f"<jitgrad.differentiate target='cuda' {what} {self.func.__qualname__} " \
               f"wrt={self.wrt_positions}>"


def transform_cuda_stage(prep: Unit, u: Unit, stage: str) -> str:
    """What the specialising pass ``stage`` produced for ``u``'s kinds."""
    again = transform_cuda(prep, u.wrt, u.arg_kinds, until=stage)
    return next(p for p in CUDA_SPECIALISE if p.name == stage).show(again)


class _Overflow(Exception):
    """A checked tape overflowed in a launch (its results are discarded)."""


class _VJP:
    """``step.vjp``: indexed by the launch configuration, like the kernel."""

    def __init__(self, d: CudaDifferentiated):
        self._d = d

    def __getitem__(self, config: Any) -> Callable[..., Any]:
        return functools.partial(self._d._vjp, config)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("launch the adjoint on a grid: step.vjp[blocks, threads](...)")


def _refuse_overlap(values: dict[str, Any], outputs: tuple[str, ...]) -> None:
    """An output passed as another array argument too would be read by other threads
    while written: refused (the adjoint assumes they are distinct arrays)."""
    for o in outputs:
        for p, a in values.items():
            b = values[o]
            if p == o or not hasattr(a, "shape") or not hasattr(b, "shape"):
                continue
            same = a is b or (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)
                              and np.may_share_memory(a, b))
            if not same and _is_device_array(a) and _is_device_array(b):
                ia = getattr(a, "__cuda_array_interface__", None)
                ib = getattr(b, "__cuda_array_interface__", None)
                same = ia is not None and ib is not None and ia["data"][0] == ib["data"][0]
            if same:
                raise ValueError(f"the output '{o}' and the argument '{p}' are the same "
                                 "array: pass distinct arrays (the adjoint kernel treats "
                                 f"'{p}' as an input no thread writes)")


def _zeros(shape: tuple, dtype: Any, on_device: bool) -> Any:
    z = np.zeros(shape, dtype=dtype)
    if on_device:
        from numba import cuda

        return cuda.to_device(z)
    return z


def _copy(a: Any, dtype: Any = None) -> Any:
    """A copy of ``a`` where it is (NumPy or device), as ``dtype`` where given."""
    if _is_device_array(a):
        from numba import cuda

        if dtype is None or a.dtype == dtype:
            out = cuda.device_array_like(a)
            out.copy_to_device(a)
            return out
        return cuda.to_device(a.copy_to_host().astype(dtype))
    return np.array(a, dtype=dtype if dtype is not None else np.asarray(a).dtype, copy=True)


def _as(a: Any, dtype: Any) -> Any:
    """``a`` itself where it has ``dtype`` (the kernel only reads it), else a copy."""
    if getattr(a, "dtype", None) == dtype and (_is_device_array(a) or isinstance(a, np.ndarray)):
        return a
    return _copy(a, dtype)


def _host(a: Any) -> np.ndarray:
    return a.copy_to_host() if _is_device_array(a) else np.asarray(a)


__all__ = ["CudaDifferentiated", "transform_cuda_stage"]
