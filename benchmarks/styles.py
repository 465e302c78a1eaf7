"""One computation in three styles: which compiles and runs well under jitgrad.

    python benchmarks/styles.py [--n 600] [--repeats 7]

The pairwise 1/r energy of ``n`` particles in 3-D written with scalar loops, with small
(3-element) arrays inside the pair loop (rows ``p[i] - p[j]``, whose size is known only at
run time, and a literal ``np.array`` of three differences, which jitgrad keeps as three
scalars: ``front/small_arrays.py``), and row-at-a-time with whole-array operations.
For each style: the Numba primal time, jitgrad's gradient time and their ratio (median
of ``repeats`` after warm-up, one thread), and the first gradient call (transform and
compile).  The gradients are checked against each other.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numba
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import jitgrad as jg  # noqa: E402


def scalar_loops(p):
    e = 0.0
    for i in range(p.shape[0]):
        for j in range(i + 1, p.shape[0]):
            dx = p[i, 0] - p[j, 0]
            dy = p[i, 1] - p[j, 1]
            dz = p[i, 2] - p[j, 2]
            e += 1.0 / math.sqrt(dx * dx + dy * dy + dz * dz + 1e-3)
    return e


def small_arrays(p):
    e = 0.0
    for i in range(p.shape[0]):
        for j in range(i + 1, p.shape[0]):
            d = p[i] - p[j]
            e += 1.0 / np.sqrt(np.sum(d * d) + 1e-3)
    return e


def small_literal(p):
    e = 0.0
    for i in range(p.shape[0]):
        for j in range(i + 1, p.shape[0]):
            d = np.array([p[i, 0] - p[j, 0], p[i, 1] - p[j, 1], p[i, 2] - p[j, 2]])
            e += 1.0 / np.sqrt(np.sum(d * d) + 1e-3)
    return e


def whole_rows(p):
    e = 0.0
    for i in range(p.shape[0] - 1):
        d = p[i + 1:] - p[i]
        e += np.sum(1.0 / np.sqrt(np.sum(d * d, axis=1) + 1e-3))
    return e


STYLES = {"scalar loops": scalar_loops, "small arrays in the loop": small_arrays,
          "3-element np.array literal": small_literal, "whole-array rows": whole_rows}


def median_time(call, repeats: int) -> float:
    call()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        call()
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=600)
    ap.add_argument("--repeats", type=int, default=7)
    a = ap.parse_args()
    numba.set_num_threads(1)
    p = np.random.default_rng(0).normal(size=(a.n, 3))
    grads = {}
    print(f"pairwise energy, n = {a.n}, median of {a.repeats}, numba {numba.__version__}")
    print(f"{'style':26} {'primal ms':>10} {'gradient ms':>12} {'ratio':>7} {'first call s':>13}")
    for name, f in STYLES.items():
        primal = numba.njit(f)
        g = jg.grad(f)
        t = time.perf_counter()
        try:
            grads[name] = g(p)
        except jg.JitError as e:
            print(f"{name:26} Numba refuses the generated gradient: {str(e).splitlines()[0]}")
            continue
        first = time.perf_counter() - t
        tp = median_time(lambda: primal(p), a.repeats)
        tg = median_time(lambda: g(p), a.repeats)
        print(f"{name:26} {tp * 1e3:10.2f} {tg * 1e3:12.2f} {tg / tp:6.2f}x {first:13.2f}")
    ref = grads["scalar loops"]
    for name, gr in grads.items():
        assert np.allclose(gr, ref, rtol=1e-9, atol=1e-12), name


if __name__ == "__main__":
    main()
