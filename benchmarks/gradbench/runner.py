"""One eval at a time: verify every tool's output, then time objective and gradient.

Per eval: jitgrad's gradient (``jit=True``) is checked against central differences at the
``test`` size; at the timed size the hand adjoint, JAX and PyTorch must agree with jitgrad;
then
objective and gradient of every tool are timed interleaved (median of repeats), and the
peak memory of one gradient call is measured.
"""

from __future__ import annotations

import sys
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass, field

import numba
import numpy as np

from benchmarks.gradbench import jaxtools, torchtools
from benchmarks.gradbench.evals import Eval, det_recursive_refused
from benchmarks.harness.checks import GradientMismatch, compare
from benchmarks.harness.timing import call_timed, interleaved, median

FD_RTOL, FD_ATOL_SCALE = 1e-5, 1e-6
#: a timing sample repeats a call that takes less than this, so that one sample lasts about
#: this long (a lone sub-millisecond JAX call after other tools ran read 10x its time)
MIN_SAMPLE_S = 0.02
#: the other AD tools run side by side: result key -> (module, name in notes); each module
#: has ``available()``, ``version()`` and ``make(name, args)`` (see jaxtools)
PEERS = {"jax": (jaxtools, "JAX"), "pytorch": (torchtools, "PyTorch")}
#: every tool of a result, in table order
TOOLS = ("jitgrad", "hand", *PEERS)


@dataclass
class ToolResult:
    """What one tool did on one eval (times in seconds, memory in MiB)."""

    objective_s: float | None = None
    gradient_s: float | None = None
    first_call_s: float | None = None
    peak_mib: float | None = None
    note: str = ""


@dataclass
class EvalResult:
    name: str
    size: str
    tools: dict[str, ToolResult] = field(default_factory=dict)
    refused: str = ""
    fd_error: float | None = None


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _numpy(out: tuple) -> tuple:
    return tuple(np.asarray(g, dtype=np.float64) for g in out)


def _peak_traced(thunk: Callable) -> float:
    """MiB allocated at the peak of one call, as tracemalloc sees it (NumPy and Numba's
    runtime both allocate through Python's allocator)."""
    tracemalloc.start()
    try:
        thunk()
        return tracemalloc.get_traced_memory()[1] / 2.0**20
    finally:
        tracemalloc.stop()


def _status_kb(key: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise KeyError(key)


def _peak_rss(thunk: Callable) -> float | None:
    """MiB the resident set's high-water mark rises by during one call (XLA's allocator
    is not Python's); None where /proc does not allow resetting the mark."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        before = _status_kb("VmRSS")
    except OSError:
        return None
    thunk()
    return (_status_kb("VmHWM") - before) / 1024.0


def _numba_tools(ev: Eval, args: tuple, targs: tuple, res: EvalResult) -> dict:
    """Build objective, jitgrad and hand; first-call times at the test size."""
    thunks: dict[str, Callable] = {}
    t, obj = call_timed(lambda: numba.njit(ev.objective))
    t1, _ = call_timed(lambda: obj(*targs))
    res.tools["objective"] = ToolResult(first_call_s=t + t1)
    thunks["objective"] = lambda: obj(*args)
    t, grad = call_timed(lambda: ev.gradient(True))
    t1, out = call_timed(lambda: grad(*targs))
    res.tools["jitgrad"] = ToolResult(first_call_s=t + t1)
    res.fd_error = compare(_numpy(out), _numpy(ev.reference(*targs)),
                           rtol=FD_RTOL, atol_scale=FD_ATOL_SCALE)
    log(f"[{ev.name}] jitgrad matches central differences at {ev.size_label('test')} "
        f"(worst relative {res.fd_error:.1e}); first call {t + t1:.1f} s")
    thunks["jitgrad"] = lambda: grad(*args)
    if ev.hand is not None:
        t1, _ = call_timed(lambda: ev.hand(*targs))
        res.tools["hand"] = ToolResult(first_call_s=t1)
        thunks["hand"] = lambda: ev.hand(*args)
    return thunks


def _peer_tools(ev: Eval, args: tuple, res: EvalResult) -> dict:
    """Objective and gradient thunks of every peer tool that has a version of ``ev``; a
    missing or failing tool becomes a note in ``res``."""
    thunks: dict[str, Callable] = {}
    for key, (module, label) in PEERS.items():
        reason = module.available()
        made = None if reason else module.make(ev.name, args)
        if made is None:
            res.tools[key] = ToolResult(note=reason or f"no {label} version")
            continue
        obj, grad = made
        t0 = time.perf_counter()
        try:
            obj()
            grad()
        except Exception as exc:  # noqa: BLE001 - a peer failing is a note, not the end
            res.tools[key] = ToolResult(note=f"{label} failed: {type(exc).__name__}: {exc}"[:200])
            continue
        res.tools[key] = ToolResult(first_call_s=time.perf_counter() - t0)
        thunks.update({f"{key} objective": obj, key: grad})
    return thunks


def _cross_check(ev: Eval, thunks: dict, res: EvalResult) -> None:
    """Hand and the peers against jitgrad at the timed size; a disagreeing tool is dropped."""
    ref = _numpy(thunks["jitgrad"]())
    for name in TOOLS[1:]:
        if name not in thunks:
            continue
        try:
            err = compare(_numpy(thunks[name]()), ref)
            log(f"[{ev.name}] {name} agrees with jitgrad (worst relative {err:.1e})")
        except GradientMismatch as exc:
            res.tools[name].note = f"DISAGREES with jitgrad: {exc}"
            log(f"[{ev.name}] {name} {res.tools[name].note}")
            thunks.pop(name)
            thunks.pop(f"{name} objective", None)


def _batched(thunks: dict, repeats: int) -> dict[str, list[float]]:
    """Interleaved medians (harness.timing), each sample averaging ``n`` back-to-back
    calls, ``n`` chosen so that a sample lasts about :data:`MIN_SAMPLE_S`."""
    counts = {}
    for name, f in thunks.items():
        once = min(call_timed(f)[0] for _ in range(2))
        counts[name] = max(1, min(1000, int(MIN_SAMPLE_S / max(once, 1e-7))))

    def loop(f: Callable, n: int) -> Callable:
        return lambda: [f() for _ in range(n)][-1]

    samples = interleaved({k: loop(f, counts[k]) for k, f in thunks.items()}, repeats)
    return {k: [x / counts[k] for x in xs] for k, xs in samples.items()}


def _memory(thunks: dict, res: EvalResult) -> None:
    for name in ("jitgrad", "hand"):
        if name in thunks:
            res.tools[name].peak_mib = _peak_traced(thunks[name])
    for name in PEERS:
        if name in thunks:
            res.tools[name].peak_mib = _peak_rss(thunks[name])


def run_eval(ev: Eval, scale: str, repeats: int) -> EvalResult:
    """Verify, measure memory and time one eval at ``scale``."""
    if ev.refused is not None:
        res = EvalResult(ev.name, "-", refused=ev.refused(True))
        log(f"[{ev.name}] refused by jitgrad: {res.refused.splitlines()[0]}")
        return res
    args, targs = ev.args(scale), ev.args("test")
    res = EvalResult(ev.name, ev.size_label(scale))
    if ev.name == "det":
        res.refused = "recursive form: " + det_recursive_refused(True)
    thunks = _numba_tools(ev, args, targs, res)
    thunks.update(_peer_tools(ev, args, res))
    _memory(thunks, res)          # the first jitgrad call at this size allocates its tapes
    _cross_check(ev, thunks, res)
    samples = _batched(thunks, repeats)
    objective = median(samples["objective"])
    for name in ("jitgrad", "hand"):
        if name in samples:
            res.tools[name].objective_s = objective
            res.tools[name].gradient_s = median(samples[name])
    for name in PEERS:
        if name in samples:
            res.tools[name].objective_s = median(samples[f"{name} objective"])
            res.tools[name].gradient_s = median(samples[name])
    log(f"[{ev.name}] timed at {res.size}: " + ", ".join(
        f"{k} {v.gradient_s * 1e3:.3g} ms" for k, v in res.tools.items() if v.gradient_s))
    return res
