"""CLI: ``python -m benchmarks.gradbench [--quick] [--evals gmm,ode] [--repeats K]
[--plot FILE.svg]``.

Prints progress on stderr and the Markdown table on stdout; ``--plot`` also writes the
gradient times relative to jitgrad's as an SVG bar chart.  One thread everywhere.
"""

from __future__ import annotations

import argparse
import datetime
import platform
import sys

from benchmarks.harness.threads import configure_env

ORDER = "gmm,lstm,ba,ht,ode,kmeans,lse,llsq,det,particle,saddle"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.gradbench", description=__doc__)
    p.add_argument("--quick", action="store_true", help="small sizes, 3 repeats")
    p.add_argument("--evals", default=ORDER, help=f"comma-separated (default {ORDER})")
    p.add_argument("--repeats", type=int, default=None, help="timing rounds (7; quick 3)")
    p.add_argument("--plot", metavar="FILE.svg", help="also write a bar chart (SVG)")
    a = p.parse_args(argv)
    configure_env(1)
    from benchmarks.gradbench.evals import EVALS
    from benchmarks.gradbench.plot import svg
    from benchmarks.gradbench.report import table
    from benchmarks.gradbench.runner import PEERS, log, run_eval
    from benchmarks.harness.threads import configure_runtime
    from benchmarks.harness.timing import freeze_heap

    configure_runtime(1)
    names = [n for n in a.evals.split(",") if n]
    unknown = sorted(set(names) - set(EVALS))
    if unknown:
        p.error(f"unknown evals {unknown}; choose from {ORDER}")
    scale = "quick" if a.quick else "full"
    repeats = a.repeats or (3 if a.quick else 7)
    freeze_heap()
    results = []
    for name in names:
        log(f"[{name}] ...")
        results.append(run_eval(EVALS[name], scale, repeats))
    import numba
    peers = ", ".join(f"{key} {mod.version() if mod.available() is None else 'absent'}"
                      for key, (mod, _) in PEERS.items())
    print(f"GradBench evals, {scale} sizes, median of {repeats}, 1 thread; "
          f"{datetime.date.today()}, Python {platform.python_version()}, numba "
          f"{numba.__version__}, {peers}\n")
    print(table(results))
    if a.plot:
        with open(a.plot, "w") as fh:
            fh.write(svg(results, f"GradBench evals, {scale} sizes: gradient time / "
                                  "jitgrad's (log scale; lower is faster)"))
        log(f"wrote {a.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
