"""CLI: ``python -m benchmarks.gradbench [--quick] [--evals gmm,ode] [--repeats K]``.

Prints progress on stderr and the Markdown table on stdout.  One thread everywhere.
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
    a = p.parse_args(argv)
    configure_env(1)
    from benchmarks.gradbench import jaxtools
    from benchmarks.gradbench.evals import EVALS
    from benchmarks.gradbench.report import table
    from benchmarks.gradbench.runner import log, run_eval
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
    jax_v = jaxtools.version() if jaxtools.available() is None else "absent"
    print(f"GradBench evals, {scale} sizes, median of {repeats}, 1 thread; "
          f"{datetime.date.today()}, Python {platform.python_version()}, numba "
          f"{numba.__version__}, jax {jax_v}\n")
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
