"""Python overhead of a compiled gradient call on a small function (issue 14, item 5).

Usage::

    python benchmarks/call_overhead.py [--calls N]

Times, in one process, the user's ``numba.njit`` function, the same function called
through ``@jg.differentiate``, the generated gradient function called directly (the
compiled code alone), ``jg.grad(f)(...)`` and ``jg.value_and_grad(f)(...)``, on a
5-element energy whose compiled work is well under a microsecond, so what is left is
the cost of getting there.  Prints the median microseconds per call over 7 interleaved
repetitions (with the spread) and each jitgrad call's overhead over what it runs.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the source-tree jitgrad

import numba  # noqa: E402
import numpy as np  # noqa: E402

import jitgrad as jg  # noqa: E402


def energy(x, k):
    e = 0.0
    for i in range(x.shape[0] - 1):
        d = x[i + 1] - x[i] - 1.0
        e += k * d * d
    return e


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=20000)
    n = ap.parse_args().calls
    x = np.linspace(0.0, 4.0, 5)
    d = jg.differentiate(energy, wrt=(0, 1))
    g, vg, prim = jg.grad(energy, wrt=(0, 1)), jg.value_and_grad(energy, wrt=(0, 1)), \
        numba.njit(energy)
    g(x, 2.0), vg(x, 2.0), d(x, 2.0), prim(x, 2.0)
    compiled = d._generated((x, 2.0)).compiled.jitted
    raw_only, raw_both = compiled["grad_only"], compiled["grad"]
    raw_only(x, 2.0, 1.0), raw_both(x, 2.0, 1.0)
    calls = {
        "numba.njit primal": lambda: prim(x, 2.0),
        "@differentiate primal": lambda: d(x, 2.0),
        "generated grad-only, called directly": lambda: raw_only(x, 2.0, 1.0),
        "generated value+grad, called directly": lambda: raw_both(x, 2.0, 1.0),
        "jg.grad(f)(x, k)": lambda: g(x, 2.0),
        "jg.value_and_grad(f)(x, k)": lambda: vg(x, 2.0),
    }
    times: dict[str, list[float]] = {k: [] for k in calls}
    for _ in range(7):  # interleaved, so drift on a noisy machine hits every row alike
        for name, fn in calls.items():
            t = time.perf_counter()
            for _ in range(n):
                fn()
            times[name].append((time.perf_counter() - t) / n * 1e6)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"{'call':42s} {'median us':>10s} {'spread':>14s}")
    for k, v in times.items():
        print(f"{k:42s} {med[k]:10.2f} {min(v):6.2f}-{max(v):6.2f}")
    print()
    print("overhead (us) over what the call runs:")
    print(f"  @differentiate primal - njit primal:      "
          f"{med['@differentiate primal'] - med['numba.njit primal']:6.2f}")
    print(f"  jg.grad - generated grad-only:            "
          f"{med['jg.grad(f)(x, k)'] - med['generated grad-only, called directly']:6.2f}")
    both = med["jg.value_and_grad(f)(x, k)"] - med["generated value+grad, called directly"]
    print(f"  jg.value_and_grad - generated value+grad: {both:6.2f}")


if __name__ == "__main__":
    main()
