"""The two per-workload phases of a run: gradient verification and timing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from workloads.base import Workload

from harness.checks import GradientMismatch, check_against_fd, compare
from harness.timing import call_timed, interleaved, median
from harness.tools import Tool, ToolError

BASELINES = ("primal", "adjoint")
#: the verification-size extrapolation overestimates overhead-bound tools, so it only
#: skips clearly hopeless cases; the measured warm-up call decides the rest
ESTIMATE_SLACK = 3.0
Log = Callable[[str], None]


def _first_and_steady(tool: Tool, wl: Workload, args: tuple) -> tuple[float, float, Any]:
    """(build + first call seconds, second call seconds, result)."""
    first, thunk = call_timed(lambda: tool.build(wl, args))
    t1, _ = call_timed(thunk)
    t2, out = call_timed(thunk)
    return first + t1, t2, out


def verify_workload(wl: Workload, tools: dict[str, Tool], log: Log,
                    keep_going: bool = False) -> dict[str, dict]:
    """Check every tool's gradient at the ``verify`` size.

    The hand-written adjoint is checked against central differences of the Numba
    primal; every other gradient must match the adjoint to ``rtol=1e-6``. Raises
    :class:`GradientMismatch` (naming the tool) on disagreement; tools that raise
    :class:`ToolError` and tolerate errors (jitgrad) are recorded as errors.
    With ``keep_going`` a disagreeing non-baseline tool is recorded as ``mismatch``
    instead. Records first-call (compile) and steady per-call times at this size.
    """
    args = wl.args("verify")
    out: dict[str, dict] = {}
    ref = None
    for name, tool in tools.items():
        reason = tool.unavailable()
        if reason:
            out[name] = {"status": "skipped", "message": reason}
            continue
        try:
            first, steady, raw = _first_and_steady(tool, wl, args)
        except ToolError as exc:
            if not tool.tolerate_errors:
                raise
            log(f"[{wl.name}] {name}: {exc}")
            out[name] = {"status": "error", "message": str(exc)}
            continue
        entry = {"status": "ok", "first_call_s": first, "steady_s": steady}
        if name == "adjoint":
            ref = tool.to_numpy(raw)
            primal = tools["primal"]
            entry["max_rel_diff_vs_fd"] = check_against_fd(
                lambda *a: primal.build(wl, a)(), ref, args, wl.wrt)
        elif name != "primal":
            try:
                entry["max_rel_diff"] = compare(tool.to_numpy(raw), ref)
            except GradientMismatch as exc:
                msg = f"{name} vs hand-written adjoint: {exc}"
                if not keep_going:
                    raise GradientMismatch(msg) from exc
                log(f"[{wl.name}] MISMATCH (--keep-going) {msg}")
                entry = {"status": "mismatch", "message": f"WRONG GRADIENT: {msg}"}
        out[name] = entry
    ok = [f"{k}" for k, v in out.items() if v["status"] == "ok"]
    log(f"[{wl.name}] verified ({wl.size_label('verify')}): {', '.join(ok)} agree")
    return out


def time_workload(wl: Workload, tools: dict[str, Tool], verified: dict[str, dict], scale: str,
                  repeats: int, max_call: float, log: Log) -> tuple[dict, dict]:
    """Interleaved timing of all verified tools at ``scale``.

    A non-baseline tool is skipped when its per-call time extrapolated from the
    verification size by the workload's work ratio exceeds ``ESTIMATE_SLACK *
    max_call``, or its measured warm-up call exceeds ``max_call`` seconds.
    Returns ``(timing, jitgrad_vs)``.
    """
    args = wl.args(scale)
    ratio = wl.work_ratio(scale)
    timing: dict[str, dict] = {}
    thunks = {}
    for name, tool in tools.items():
        v = verified[name]
        if v["status"] != "ok":
            timing[name] = {"message": f"{name}: {v['message']}"}
            continue
        estimate = v["steady_s"] * ratio
        if name not in BASELINES and estimate > ESTIMATE_SLACK * max_call:
            timing[name] = {"message": f"{name} on {wl.name}: estimated {estimate:.0f} s per "
                                       f"call > {ESTIMATE_SLACK:g} x --max-call {max_call:g} s"}
            continue
        try:
            thunk = tool.build(wl, args)
            warm, _ = call_timed(thunk)
            if warm > max_call and tool.compiles_per_shape:  # warm-up included a compile
                warm, _ = call_timed(thunk)
        except ToolError as exc:
            if not tool.tolerate_errors:
                raise
            timing[name] = {"message": f"{name}: {exc}"}
            continue
        if name not in BASELINES and warm > max_call:
            timing[name] = {"message": f"{name} on {wl.name}: warm-up call took {warm:.0f} s "
                                       f"> --max-call {max_call:g} s"}
            continue
        timing[name] = {"warmup_s": warm}
        thunks[name] = thunk
    for entry in timing.values():
        if "message" in entry:
            log(f"[{wl.name}] skip {entry['message']}")

    samples = interleaved(thunks, repeats)
    primal = median(samples["primal"])
    for name, xs in samples.items():
        timing[name].update(median_s=median(xs), samples_s=xs,
                            ratio_to_primal=median(xs) / primal)
    jit = timing.get("jitgrad", {}).get("median_s")
    vs = {k: jit / e["median_s"] for k, e in timing.items()
          if jit and k not in ("primal", "jitgrad") and e.get("median_s")}
    log(f"[{wl.name}] timed ({wl.size_label(scale)}): " + ", ".join(
        f"{k} {e['ratio_to_primal']:.2f}x" for k, e in timing.items() if "median_s" in e))
    return timing, vs
