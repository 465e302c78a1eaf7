"""Interleaved wall-clock timing: one call of every tool per round, median over rounds."""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from typing import Any


def freeze_heap() -> None:
    """Move every object alive now (framework modules, compiled functions) to the GC's
    permanent generation so the per-call ``gc.collect`` below stays cheap."""
    gc.collect()
    gc.freeze()


def call_timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """Run ``fn`` once after a collection, with the cyclic GC paused (as :mod:`timeit`
    does).

    Returns ``(seconds, result)``.
    """
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        t0 = time.perf_counter()
        out = fn()
        return time.perf_counter() - t0, out
    finally:
        if enabled:
            gc.enable()


def interleaved(thunks: dict[str, Callable[[], Any]], repeats: int) -> dict[str, list[float]]:
    """Time every thunk ``repeats`` times, interleaving tools within each round.

    The starting tool rotates each round so slow drifts of the (noisy) machine are
    spread over all tools instead of hitting one.  Each call's result is dropped before
    the next call: a result kept alive meanwhile (8 MB of gradient) changes where the next
    tool's allocations land, which made one tool pay page faults in two rounds of three.
    """
    names = list(thunks)
    samples: dict[str, list[float]] = {n: [] for n in names}
    for r in range(repeats):
        k = r % len(names) if names else 0
        for name in names[k:] + names[:k]:
            samples[name].append(call_timed(thunks[name])[0])
    return samples


def median(xs: list[float]) -> float:
    """Median of the samples."""
    return statistics.median(xs)
