"""Benchmark jitgrad against a Numba primal, hand-written Numba adjoints and peer AD tools.

Usage::

    python benchmarks/run.py [--only NAME] [--quick] [--threads N] [--json PATH]

Phases: (1) every tool's gradient is checked against the hand-written adjoint at a
small size (the adjoint itself against central finite differences) -- any
disagreement aborts; (2) interleaved timing, median of ``--repeats`` runs after a
warm-up; (3) peak memory of one call in a subprocess; (4) Markdown to stdout + JSON.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))
sys.path.insert(1, str(BENCH_DIR.parent))  # the source-tree jitgrad, if not installed

from harness.threads import configure_env  # noqa: E402  (no heavy imports)

ALL_TOOLS = ("primal", "adjoint", "jitgrad", "jax", "torch", "autograd")
WORKLOAD_NAMES = ("rosenbrock", "lorenz", "heat", "mlp", "pairwise", "softmax_ce")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command-line options."""
    p = argparse.ArgumentParser(description="jitgrad benchmark suite")
    p.add_argument("--only", action="append", choices=WORKLOAD_NAMES, metavar="NAME",
                   help=f"run only this workload (repeatable): {', '.join(WORKLOAD_NAMES)}")
    p.add_argument("--quick", action="store_true",
                   help="smaller sizes and fewer repeats (well under a minute)")
    p.add_argument("--threads", type=int, default=1, help="threads for every runtime (1)")
    p.add_argument("--json", type=Path,
                   help="JSON output (default benchmarks/results/<scale>.json)")
    p.add_argument("--repeats", type=int, help="timed runs per tool (default 7, quick 3)")
    p.add_argument("--tools", default=",".join(ALL_TOOLS),
                   help="comma-separated subset of " + ",".join(ALL_TOOLS))
    p.add_argument("--max-call", type=float,
                   help="skip a tool whose single call would exceed this many seconds "
                        "(default 30, quick 2)")
    p.add_argument("--plot", type=Path, metavar="FILE.png",
                   help="also draw the table as a grouped bar chart (needs matplotlib)")
    p.add_argument("--keep-going", action="store_true",
                   help="on a gradient disagreement, drop that tool for the workload and "
                        "continue instead of aborting (the report flags it)")
    p.add_argument("--memory-tools", default="primal,adjoint,jitgrad",
                   help="tools whose peak memory is measured ('' to skip the memory phase)")
    opts = p.parse_args(argv)
    opts.scale = "quick" if opts.quick else "full"
    opts.repeats = opts.repeats or (3 if opts.quick else 7)
    opts.max_call = opts.max_call or (2.0 if opts.quick else 30.0)
    opts.tools = tuple(t for t in opts.tools.split(",") if t)
    unknown = set(opts.tools) - set(ALL_TOOLS)
    if unknown or not {"primal", "adjoint"} <= set(opts.tools):
        p.error(f"--tools must include primal and adjoint; unknown: {sorted(unknown)}")
    opts.json = opts.json or BENCH_DIR / "results" / f"{opts.scale}.json"
    return opts


_T0 = time.perf_counter()


def log(msg: str) -> None:
    """Progress messages go to stderr so stdout stays a clean Markdown report."""
    print(f"{time.perf_counter() - _T0:6.1f}s {msg}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    """Run the suite; return the process exit status (2 on a gradient mismatch)."""
    opts = parse_args(argv)
    configure_env(opts.threads)

    from harness.checks import GradientMismatch
    from harness.memory import measure_peak_rss
    from harness.phases import time_workload, verify_workload
    from harness.report import markdown, write_json
    from harness.threads import configure_runtime
    from harness.timing import freeze_heap
    from harness.tools import make_tools
    from workloads import WORKLOADS

    t_start = time.perf_counter()
    thread_info = configure_runtime(opts.threads)
    tools = make_tools(opts.tools, opts.threads)
    for name, tool in list(tools.items()):
        reason = tool.unavailable()
        if reason:
            log(f"[skip] {name}: {reason}")
    freeze_heap()
    selected = [WORKLOADS[n] for n in WORKLOAD_NAMES if not opts.only or n in opts.only]

    records = []
    for wl in selected:
        try:
            records.append({"name": wl.name, "description": wl.description,
                            "size": wl.size_label(opts.scale), "peer_note": wl.peer_note,
                            "verify": verify_workload(wl, tools, log, opts.keep_going)})
        except GradientMismatch as exc:
            log(f"ABORT: gradient disagreement in {wl.name}: {exc}")
            return 2
    freeze_heap()
    for wl, rec in zip(selected, records, strict=True):
        rec["timing"], rec["jitgrad_vs"] = time_workload(
            wl, tools, rec["verify"], opts.scale, opts.repeats, opts.max_call, log)

    mem_tools = [t for t in opts.memory_tools.split(",") if t in tools]
    if mem_tools:
        log(f"[memory] peak memory of one call ({', '.join(mem_tools)}) in a subprocess")
        peaks = measure_peak_rss([w.name for w in selected], mem_tools, opts.scale,
                                 opts.threads)
    else:
        peaks = {}
    for rec in records:
        rec["peak_rss_mib"] = {
            t: v if rec["verify"][t]["status"] == "ok" else "n/a: failed verification"
            for t, v in peaks.get(rec["name"], {}).items()}

    versions = {"python": platform.python_version()}
    for name, tool in tools.items():
        if not tool.unavailable():
            versions[name if name != "primal" else "numba"] = tool.version()
    versions.pop("adjoint", None)
    results = {
        "meta": {"scale": opts.scale, "threads": opts.threads, "threading": thread_info,
                 "repeats": opts.repeats, "max_call_s": opts.max_call, "tools": list(tools),
                 "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
                 "versions": versions, "wall_s": time.perf_counter() - t_start},
        "workloads": records,
    }
    write_json(results, opts.json)
    print(markdown(results))
    if opts.plot:
        from harness.plot import plot

        plot(results, opts.plot)
        log(f"[plot] {opts.plot}")
    log(f"[done] {time.perf_counter() - t_start:.1f} s; JSON written to {opts.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
