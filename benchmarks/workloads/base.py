"""The :class:`Workload` record every benchmark module fills in."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

SCALES = ("verify", "quick", "full")


@dataclass(frozen=True)
class Workload:
    """One benchmark problem, written once in Numba style.

    Attributes:
        name: short identifier used by ``--only``.
        description: one line for the report.
        primal: plain Python function in Numba style; ``numba.njit(primal)`` is the
            primal baseline and ``jitgrad.grad(primal, wrt=wrt)`` the jitgrad entry.
        adjoint: hand-written ``@njit`` adjoint taking the same arguments as ``primal``
            and returning the tuple of gradients for ``wrt``.
        wrt: positional indices of the differentiable arguments.
        sizes: size parameters per scale (``verify``, ``quick``, ``full``).
        make_args: ``make_args(rng, **sizes[scale])`` -> argument tuple for ``primal``.
        work: ``work(**sizes[scale])`` -> relative amount of work, used to extrapolate
            peer run times from the verification size.
        peer_loss: ``peer_loss(backend, args)`` -> loss taking the ``wrt`` arguments
            (in order) and closing over the others; written once against the small
            array API of :class:`harness.peers.Backend`, so JAX, PyTorch and autograd
            share the source.
        peer_note: how the peers express the loops (vectorisation note for the report).
        tangent: hand-written ``@njit`` jvp taking ``(*args, *tangents)`` (one tangent per
            ``wrt`` argument) and returning ``(value, directional derivative)``: the
            expert's forward mode ``benchmarks/forward.py`` compares with; None if absent.
    """

    name: str
    description: str
    primal: Callable[..., float]
    adjoint: Callable[..., tuple]
    wrt: tuple[int, ...]
    sizes: dict[str, dict[str, Any]]
    make_args: Callable[..., tuple]
    work: Callable[..., float]
    peer_loss: Callable[..., Callable[..., Any]]
    peer_note: str = ""
    notes: dict[str, str] = field(default_factory=dict)
    tangent: Callable[..., tuple] | None = None

    def args(self, scale: str, seed: int = 0) -> tuple:
        """Deterministic arguments for ``scale``."""
        return self.make_args(np.random.default_rng(seed), **self.sizes[scale])

    def size_label(self, scale: str) -> str:
        """Human-readable size, e.g. ``n=1000000``."""
        return ", ".join(f"{k}={v}" for k, v in self.sizes[scale].items())

    def work_ratio(self, scale: str) -> float:
        """How much more work ``scale`` is than the verification size."""
        return self.work(**self.sizes[scale]) / self.work(**self.sizes["verify"])
