"""Tool adapters: everything timed is a zero-argument thunk built per (tool, workload, args).

Tools:
    primal    ``numba.njit(workload.primal)`` -- the baseline every ratio divides by
    adjoint   hand-written ``@njit`` adjoint from ``benchmarks/workloads``
    jitgrad   ``jitgrad.grad(workload.primal, wrt=workload.wrt)``
    jax, torch, autograd   peers via :mod:`harness.peers`
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import metadata
from typing import Any

import numpy as np
from workloads.base import Workload

from harness.peers import PEER_BACKENDS, Backend

TOOL_ORDER = ("primal", "adjoint", "jitgrad", "jax", "torch", "autograd")
GRADIENT_TOOLS = TOOL_ORDER[1:]


class ToolError(RuntimeError):
    """A tool could not build or run a workload (reported as a skip, never fatal)."""


def _as_tuple(raw: Any) -> tuple:
    return tuple(raw) if isinstance(raw, (tuple, list)) else (raw,)


class Tool:
    """Base adapter. ``build`` returns a synchronous thunk; ``to_numpy`` normalises output."""

    name = "?"
    #: exceptions from this tool become skips instead of aborting the run
    tolerate_errors = False
    #: the first call at a new input shape includes compilation
    compiles_per_shape = False
    #: its memory comes from Python's allocator, which ``tracemalloc`` sees byte for byte
    #: (Numba's runtime allocates through ``PyMem_RawMalloc``, NumPy registers its data)
    allocations_traced = True

    def __init__(self, threads: int) -> None:
        self.threads = threads

    def unavailable(self) -> str | None:
        """``None`` if usable, else the reason it is skipped."""
        return None

    def build(self, wl: Workload, args: tuple) -> Callable[[], Any]:
        raise NotImplementedError

    def to_numpy(self, raw: Any) -> tuple[np.ndarray, ...]:
        return tuple(np.asarray(g, dtype=np.float64) for g in _as_tuple(raw))

    def version(self) -> str:
        return ""


class NumbaPrimal(Tool):
    """The workload's source compiled by ``numba.njit`` (one dispatcher per workload)."""

    name = "primal"

    def __init__(self, threads: int) -> None:
        super().__init__(threads)
        import numba

        self.numba = numba
        self._compiled: dict[str, Any] = {}
        # Pay Numba's one-off process initialisation here, not in the first measured compile.
        numba.njit(lambda x: x + 1.0)(1.0)

    def build(self, wl, args):
        if wl.name not in self._compiled:
            self._compiled[wl.name] = self.numba.njit(wl.primal)
        f = self._compiled[wl.name]
        return lambda: f(*args)

    def version(self):
        return metadata.version("numba")


class HandAdjoint(Tool):
    """Hand-written Numba adjoint (reference gradient)."""

    name = "adjoint"

    def build(self, wl, args):
        return lambda: wl.adjoint(*args)


class Jitgrad(Tool):
    """jitgrad gradient of the unchanged primal source."""

    name = "jitgrad"
    tolerate_errors = True

    def __init__(self, threads: int) -> None:
        super().__init__(threads)
        self._grads: dict[str, Any] = {}
        try:
            import jitgrad

            self.jg = jitgrad
        except Exception as exc:  # noqa: BLE001 - report any import failure as a skip
            self.jg, self._import_error = None, f"import failed: {exc!r}"

    def unavailable(self):
        if self.jg is None:
            return self._import_error
        if not hasattr(self.jg, "grad"):
            return "jitgrad.grad not implemented yet"
        return None

    def build(self, wl, args):
        if wl.name not in self._grads:
            try:
                self._grads[wl.name] = self.jg.grad(wl.primal, wrt=wl.wrt)
            except Exception as exc:
                raise ToolError(f"jitgrad.grad raised {type(exc).__name__}: {exc}") from exc
        g = self._grads[wl.name]

        def thunk():
            try:
                return g(*args)
            except Exception as exc:
                raise ToolError(f"gradient call raised {type(exc).__name__}: {exc}") from exc

        return thunk

    def version(self):
        try:
            return metadata.version("jitgrad")
        except metadata.PackageNotFoundError:
            return getattr(self.jg, "__version__", "source tree")


class Peer(Tool):
    """A peer framework; imported on first use, skipped if not installed."""

    def __init__(self, name: str, threads: int) -> None:
        super().__init__(threads)
        self.name = name
        self._backend: Backend | None = None
        self._error: str | None = None
        self.compiles_per_shape = name == "jax"
        self.allocations_traced = name == "autograd"  # (XLA's and PyTorch's allocators: RSS)

    @property
    def backend(self) -> Backend:
        if self._backend is None and self._error is None:
            try:
                self._backend = PEER_BACKENDS[self.name](self.threads)
            except ImportError as exc:
                self._error = f"not installed ({exc.name}); pip install {self.name}"
        if self._backend is None:
            raise ToolError(self._error)
        return self._backend

    def unavailable(self):
        try:
            self.backend  # noqa: B018 - triggers the lazy import
        except ToolError as exc:
            return str(exc)
        return None

    def build(self, wl, args):
        b = self.backend
        return b.grad_thunk(wl.peer_loss(b, args), [args[i] for i in wl.wrt])

    def to_numpy(self, raw):
        return self.backend.to_numpy(raw)

    def version(self):
        return self.backend.version()


def make_tools(names: tuple[str, ...], threads: int) -> dict[str, Tool]:
    """Instantiate the requested tools (in ``TOOL_ORDER``)."""
    factories: dict[str, Callable[[], Tool]] = {
        "primal": lambda: NumbaPrimal(threads),
        "adjoint": lambda: HandAdjoint(threads),
        "jitgrad": lambda: Jitgrad(threads),
    }
    return {
        n: factories[n]() if n in factories else Peer(n, threads)
        for n in TOOL_ORDER
        if n in names
    }

