"""Transform time (source to generated gradient, before Numba) against the size of a loop body.

Usage::

    python benchmarks/transform_time.py [150 300 600 1200]

Writes a function whose loop body repeats four scalar statements (the shape of an
unrolled integrator step) to a temporary module, then times ``prepare`` (parse,
inline, desugar, normalize) and ``transform`` (kinds, analyse, reverse, optimize,
emit) separately; prints seconds, milliseconds per statement and generated lines.
The time per statement should stay flat as the body grows.
"""

from __future__ import annotations

import importlib
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the source-tree jitgrad

import numpy as np  # noqa: E402

from jitgrad.transpiler.kinds import of_value  # noqa: E402
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


def main(sizes: list[int]) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="jitgrad_tt_"))
    sys.path.insert(0, str(tmp))
    args = (np.ones(3), 0.5, 0.3, 0.2)
    kinds = {p: of_value(v) for p, v in zip("xabc", args, strict=True)}
    print("| statements | prepare (s) | transform (s) | total (s) | ms / statement | lines |")
    print("|---|---|---|---|---|---|")
    for n in sizes:
        (tmp / f"tt{n}.py").write_text(module_source(n))
        fn = importlib.import_module(f"tt{n}").f
        t0 = time.perf_counter()
        prep = prepare(fn)
        t1 = time.perf_counter()
        gen = transform(prep, ["x", "a"], kinds)
        t2 = time.perf_counter()
        print(f"| {n} | {t1 - t0:.2f} | {t2 - t1:.2f} | {t2 - t0:.2f} | "
              f"{1e3 * (t2 - t0) / n:.1f} | {len(gen.sources['grad'].splitlines())} |", flush=True)


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [150, 300, 600, 1200])
