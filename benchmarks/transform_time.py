"""Transform time (source to generated gradient, before Numba) against the size of a loop body.

Usage::

    python benchmarks/transform_time.py [--repeat K] [--entry grad|value_and_grad]
                                        [150 300 600 1200]

Writes a function whose loop body repeats four scalar statements (the shape of an
unrolled integrator step) to a temporary module, then times what a user's first call of
the entry point (``f.grad``, the default, or ``f.value_and_grad``) pays before Numba
compiles: ``prepare`` (parse, inline, desugar, normalize), ``transform`` (kinds, analyse,
reverse, optimize..., up to the lowering's shared context) and ``lower``, the backend
steps of the one variant that entry point runs (the gradient-only variant for
``f.grad``; the value-and-gradient one for ``f.value_and_grad``; the other is lowered
only if it is called too).  Prints seconds (the median of K runs, default 1),
milliseconds per statement, the ratio of each total to the previous size's (2.0 for a
doubled body means linear) and the variant's lines.  The CPU column is process time,
less disturbed than wall time when other work shares the machine (the best of K runs).
The time per statement should stay flat as the body grows.
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


#: entry point -> the variant its first call lowers
VARIANT = {"grad": "grad_only", "value_and_grad": "grad"}


def timed(fn, kinds, variant: str) -> tuple[float, float, float, float, int]:
    """One run: prepare, transform and lowering seconds, CPU seconds, the variant's lines."""
    t0, c0 = time.perf_counter(), time.process_time()
    prep = prepare(fn)
    t1 = time.perf_counter()
    gen = transform(prep, ["x", "a"], kinds)
    t2 = time.perf_counter()
    src = gen.sources[variant]
    t3, c3 = time.perf_counter(), time.process_time()
    return t1 - t0, t2 - t1, t3 - t2, c3 - c0, len(src.splitlines())


def main(sizes: list[int], repeat: int = 1, entry: str = "grad") -> None:
    tmp = Path(tempfile.mkdtemp(prefix="jitgrad_tt_"))
    sys.path.insert(0, str(tmp))
    args = (np.ones(3), 0.5, 0.3, 0.2)
    kinds = {p: of_value(v) for p, v in zip("xabc", args, strict=True)}
    print(f"first f.{entry} call: lowers {VARIANT[entry]}")
    print("| statements | prepare (s) | transform (s) | lower (s) | total (s) | CPU (s) "
          "| ms / statement | ratio | lines |")
    print("|---|---|---|---|---|---|---|---|---|")
    prev = None
    for n in sizes:
        (tmp / f"tt{n}.py").write_text(module_source(n))
        fn = importlib.import_module(f"tt{n}").f
        runs = [timed(fn, kinds, VARIANT[entry]) for _ in range(repeat)]
        prep, tr, low = (statistics.median(r[k] for r in runs) for k in range(3))
        cpu = min(r[3] for r in runs)
        total = prep + tr + low
        ratio = f"{total / prev:.2f}" if prev else "-"
        prev = total
        print(f"| {n} | {prep:.2f} | {tr:.2f} | {low:.2f} | {total:.2f} | {cpu:.2f} | "
              f"{1e3 * total / n:.2f} | {ratio} | {runs[0][4]} |", flush=True)


if __name__ == "__main__":
    argv = sys.argv[1:]
    opts = {"--repeat": "1", "--entry": "grad"}
    for o in opts:
        if o in argv:
            i = argv.index(o)
            opts[o] = argv[i + 1]
            del argv[i:i + 2]
    main([int(a) for a in argv] or [150, 300, 600, 1200], int(opts["--repeat"]),
         opts["--entry"])
