"""Peak memory of one gradient call, measured in a subprocess (one per tool).

A worker compiles the tool at the verification size, then makes one call at the timed
size.  For tools whose memory comes from Python's allocator (``Tool.allocations_traced``:
Numba's runtime allocates through ``PyMem_RawMalloc``, NumPy registers its buffers) the
figure is the peak of the bytes allocated during the call that :mod:`tracemalloc` traced:
exact, where resident-set counters are kept per CPU and batched, so that ``VmHWM`` is
off by up to 64 pages per counter (the 0.46 MiB trajectory of Lorenz's hand adjoint read
as 0.15-0.35 MiB).  For
the others (XLA's and PyTorch's own allocators) it is the rise of the peak resident set:
the worker resets the high-water mark (``echo 5 > /proc/self/clear_refs``), records
``VmRSS``, makes the call and reports ``VmHWM - VmRSS_before``.  Numba-based tools are
measured on their first call at that size (buffers a tool keeps between calls are
counted); peers get one warm-up call there first (JAX compiles per shape).  The figure
includes the returned gradient arrays (about the size of the inputs) and, for jitgrad,
its tape.  glibc is told to serve blocks >= 64 KiB by ``mmap`` so freed memory goes back
to the OS and is not silently reused.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent.parent
_WORKER = ("import sys; sys.path[:0] = [sys.argv[1], sys.argv[1] + '/..']; "
           "from harness.memory import worker_main; worker_main(sys.argv[2:])")


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def _reset_peak() -> None:
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")


def unsupported_reason() -> str | None:
    """Why peak-RSS measurement is impossible here, or ``None``."""
    if not os.path.exists("/proc/self/status"):
        return "no /proc/self/status (Linux only)"
    try:
        _reset_peak()
    except OSError as exc:
        return f"cannot reset VmHWM via /proc/self/clear_refs ({exc.strerror})"
    return None


def worker_main(argv: list[str]) -> None:
    """Subprocess entry: ``threads scale workload,... tool,...``; prints JSON."""
    threads, scale, wl_names, tool_names = int(argv[0]), argv[1], argv[2], argv[3]
    from harness.threads import configure_env

    configure_env(threads)
    import gc

    from workloads import WORKLOADS

    from harness.threads import configure_runtime
    from harness.tools import ToolError, make_tools

    configure_runtime(threads)
    tools = make_tools(tuple(tool_names.split(",")), threads)
    out: dict[str, dict[str, float | str]] = {}
    for name in wl_names.split(","):
        wl = WORKLOADS[name]
        args = wl.args(scale)
        out[name] = {}
        for tname, tool in tools.items():
            reason = tool.unavailable()
            if reason:
                out[name][tname] = f"n/a: {reason}"
                continue
            try:
                tool.build(wl, wl.args("verify"))()  # compile
                thunk = tool.build(wl, args)
                if tool.compiles_per_shape:
                    thunk()  # JAX re-traces per shape: keep compilation out of the peak
                gc.collect()
                if tool.allocations_traced:
                    tracemalloc.start()
                    result = thunk()
                    peak = tracemalloc.get_traced_memory()[1]
                    tracemalloc.stop()
                    out[name][tname] = peak / 2.0**20
                else:
                    _reset_peak()
                    before = _status_kb("VmRSS")
                    result = thunk()
                    out[name][tname] = (_status_kb("VmHWM") - before) / 1024.0
                del result
            except ToolError as exc:
                out[name][tname] = f"n/a: {exc}"
    print(json.dumps(out))


def _run_worker(workloads: list[str], tool: str, scale: str, threads: int,
                timeout: float) -> dict[str, float | str]:
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="65536", MALLOC_TRIM_THRESHOLD_="0")
    cmd = [sys.executable, "-c", _WORKER, str(BENCH_DIR), str(threads), scale,
           ",".join(workloads), tool]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return dict.fromkeys(workloads, f"n/a: worker timed out after {timeout:.0f} s")
    if proc.returncode == 0:
        return {w: r[tool] for w, r in json.loads(proc.stdout.strip().splitlines()[-1]).items()}
    tail = (proc.stderr.strip().splitlines() or ["?"])[-1]
    return dict.fromkeys(workloads, f"n/a: worker failed: {tail}")


def measure_peak_rss(workloads: list[str], tools: list[str], scale: str, threads: int,
                     timeout: float = 900.0) -> dict[str, dict[str, float | str]]:
    """Peak memory of one call (MiB, see the module docstring) per workload and tool;
    strings explain missing values.

    One subprocess per tool: allocator state left behind by one framework (e.g. the
    many small tensors of eager PyTorch) would otherwise hide later peaks.
    """
    reason = unsupported_reason()
    out: dict[str, dict[str, float | str]] = {w: {} for w in workloads}
    for tool in tools:
        res = (dict.fromkeys(workloads, f"n/a: {reason}") if reason
               else _run_worker(workloads, tool, scale, threads, timeout))
        for w, value in res.items():
            out[w][tool] = value
    return out
