"""Gradients of ``numba.prange`` workloads: serial versus parallel generated code.

    NUMBA_NUM_THREADS=2 PYTHONPATH=. python benchmarks/prange.py [--quick] [--repeats 7]

Each workload is written once with ``prange``.  "serial" differentiates it compiled with
``numba.njit`` (prange is range there, and so are the generated sweeps); "parallel" the
same function compiled with ``numba.njit(parallel=True)``, whose generated sweeps keep
``prange`` where the iterations are independent (``backend/prange.py``).  Both gradients
are checked against each other first; times are medians over interleaved rounds (the
primal's too), compile time excluded.  NUMBA_NUM_THREADS defaults to 2 here.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys

os.environ.setdefault("NUMBA_NUM_THREADS", "2")
sys.path.insert(0, os.path.dirname(__file__))

import numba  # noqa: E402
import numpy as np  # noqa: E402
from harness.timing import freeze_heap, interleaved  # noqa: E402
from numba import prange  # noqa: E402

import jitgrad as jg  # noqa: E402


def map_reduce(x, k):
    """Per element: a short serial loop (taped), summed: both sweeps prange."""
    s = 0.0
    for i in prange(x.shape[0]):
        a = x[i]
        b = k
        for _ in range(8):
            a, b = math.tanh(a * b + 0.1), a - 0.5 * b
        s += a * b
    return s


def stencil(x, k):
    """A five-point stencil: forward prange, adjoint a parallel gather over the output index
    (each thread writes only its own dx[j]; dk a reduction)."""
    n = x.shape[0]
    total = 0.0
    for i in prange(2, n - 2):
        lap = x[i - 2] - 4.0 * x[i - 1] + 6.0 * x[i] - 4.0 * x[i + 1] + x[i + 2]
        total += lap * lap + k * math.exp(-x[i] * x[i])
    return total


def branchy_stencil(x, k):
    """A three-point stencil under a branch (not in gather form): the adjoint's even chunks
    at once, then the odd ones, adding into dx directly (no partial buffers)."""
    n = x.shape[0]
    total = 0.0
    for i in prange(1, n - 1):
        if x[i] > 0.0:
            total += k * x[i - 1] * x[i + 1]
        else:
            total += math.sin(x[i + 1]) * x[i] - x[i - 1]
    return total


def rows(a, w):
    """Each row's log-sum of tanh terms (2-D): forward prange, adjoint in chunks (dw[j])."""
    m, n = a.shape
    total = 0.0
    for i in prange(m):
        row = 1.0
        for j in range(n):
            row += math.tanh(a[i, j] * w[j]) ** 2
        total += math.log(row)
    return total


def _empty(x):
    s = 0.0
    for i in prange(x.shape[0]):
        s += x[i]
    return s


def region_overhead(repeats: int) -> float:
    """The median time of a parallel loop over 16 elements: what each parallel region of
    generated code costs at least (high on a machine whose cores are busy)."""
    f = numba.njit(parallel=True)(_empty)
    x = np.ones(16)
    f(x)
    return statistics.median(interleaved({"f": lambda: f(x)}, repeats)["f"])


def workloads(quick: bool):
    n = 20_000 if quick else 2_000_000
    m = 200 if quick else 2_000
    rng = np.random.default_rng(0)
    return [
        ("map_reduce", map_reduce, (rng.uniform(-1, 1, n // 4), 0.7), (0, 1)),
        ("stencil", stencil, (rng.uniform(-1, 1, n), 0.6), (0, 1)),
        ("branchy_stencil", branchy_stencil, (rng.uniform(-1, 1, n), 0.6), (0, 1)),
        ("rows", rows, (rng.uniform(-1, 1, (m, m)), rng.uniform(0.2, 1, m)), (0, 1)),
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes")
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args(argv)
    print(f"threads: {numba.get_num_threads()} (NUMBA_NUM_THREADS), median of "
          f"{args.repeats}; an empty parallel loop takes "
          f"{region_overhead(args.repeats) * 1e3:.3f} ms here; load average "
          f"{os.getloadavg()[0]:.1f}\n")
    print("| workload | primal serial | primal parallel | grad serial | grad parallel "
          "| grad speed-up |")
    print("|---|---|---|---|---|---|")
    for label, fn, a, wrt in workloads(args.quick):
        serial, parallel = numba.njit(fn), numba.njit(parallel=True)(fn)
        gs = jg.grad(serial, wrt=wrt)
        gp = jg.grad(parallel, wrt=wrt)
        want, got = gs(*a), gp(*a)
        for g1, g2 in zip(want, got, strict=True):
            np.testing.assert_allclose(g2, g1, rtol=1e-9, atol=1e-12 * np.max(np.abs(g1)))
        serial(*a), parallel(*a)
        freeze_heap()
        t = interleaved({"ps": lambda: serial(*a), "pp": lambda: parallel(*a),
                         "gs": lambda: gs(*a), "gp": lambda: gp(*a)}, args.repeats)
        med = {k: statistics.median(v) for k, v in t.items()}
        print(f"| {label} | {med['ps'] * 1e3:.2f} ms | {med['pp'] * 1e3:.2f} ms "
              f"| {med['gs'] * 1e3:.2f} ms | {med['gp'] * 1e3:.2f} ms "
              f"| {med['gs'] / med['gp']:.2f}x |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
