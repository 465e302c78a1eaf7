"""Transform time (source to generated gradient, before Numba) against the size of a loop body.

Usage::

    python benchmarks/transform_time.py [--repeat K] [150 300 600 1200]

Writes a function whose loop body repeats four scalar statements (the shape of an
unrolled integrator step) to a temporary module, then times ``prepare`` (parse,
inline, desugar, normalize) and ``transform`` (kinds, analyse, reverse, optimize,
emit) separately; prints seconds (the median of K runs, default 1), milliseconds
per statement, the ratio of each total to the previous size's (2.0 for a doubled
body means linear) and generated lines.  The CPU column is process time, less
disturbed than wall time when other work shares the machine.  The time per
statement should stay flat as the body grows.
"""

from __future__ import annotations

import importlib
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the source-tree jitgrad

import numpy as np  # noqa: E402

from jitgrad.transpiler.analysis.kinds import of_value  # noqa: E402
from jitgrad.transpiler.pipeline import prepare, transform  # noqa: E402

BODY = ("a = a * 0.9 + math.sin(b) * x[i] + 3.0 * c",
        "b = b + a * 0.1 - math.cos(a) * 0.02",
        "t = a * b + x[i] * x[i]",
        "s = s + t * 0.5 + math.exp(-b * b)")


def module_source(n: int) -> str:
    """A function of four arguments whose loop body has ``n`` statements."""
    lines = ["import math", "", "", "def f(x, a, b, c):", "    s = 0.0", "    t = 0.0",
             "    for i in range(len(x)):"]
    lines += ["        " + BODY[k % len(BODY)] for k in range(n)]
    lines.append("    return s")
    return "\n".join(lines) + "\n"


def timed(fn, kinds) -> tuple[float, float, float, int]:
    """One run: prepare seconds, transform seconds, CPU seconds, generated lines."""
    t0, c0 = time.perf_counter(), time.process_time()
    prep = prepare(fn)
    t1 = time.perf_counter()
    gen = transform(prep, ["x", "a"], kinds)
    t2, c2 = time.perf_counter(), time.process_time()
    return t1 - t0, t2 - t1, c2 - c0, len(gen.sources['grad'].splitlines())


def main(sizes: list[int], repeat: int = 1) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="jitgrad_tt_"))
    sys.path.insert(0, str(tmp))
    args = (np.ones(3), 0.5, 0.3, 0.2)
    kinds = {p: of_value(v) for p, v in zip("xabc", args, strict=True)}
    print("| statements | prepare (s) | transform (s) | total (s) | CPU (s) | ms / statement "
          "| ratio | lines |")
    print("|---|---|---|---|---|---|---|---|")
    prev = None
    for n in sizes:
        (tmp / f"tt{n}.py").write_text(module_source(n))
        fn = importlib.import_module(f"tt{n}").f
        runs = [timed(fn, kinds) for _ in range(repeat)]
        prep, tr, cpu = (statistics.median(r[k] for r in runs) for k in range(3))
        total = prep + tr
        ratio = f"{total / prev:.2f}" if prev else "-"
        prev = total
        print(f"| {n} | {prep:.2f} | {tr:.2f} | {total:.2f} | {cpu:.2f} | "
              f"{1e3 * total / n:.2f} | {ratio} | {runs[0][3]} |", flush=True)


if __name__ == "__main__":
    argv = sys.argv[1:]
    k = 1
    if "--repeat" in argv:
        i = argv.index("--repeat")
        k = int(argv[i + 1])
        del argv[i:i + 2]
    main([int(a) for a in argv] or [150, 300, 600, 1200], k)
