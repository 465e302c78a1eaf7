"""Forward mode and second order against the primal, as time ratios (one run, one table).

    PYTHONPATH=. python benchmarks/forward.py [--scale quick]

For each loop workload: the Numba-compiled primal, ``jg.jvp`` (one tangent direction,
compiled), the reverse-mode gradient, and ``jg.hvp`` (forward-over-reverse, compiled),
each timed as the best of several repeats after a warm-up call (compile time excluded).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))

from workloads import heat, lorenz, rosenbrock  # noqa: E402
from workloads.base import Workload  # noqa: E402

import jitgrad as jg  # noqa: E402


def best(fn, repeats: int = 7) -> float:
    fn()
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return min(out)


def row(w: Workload, scale: str) -> tuple:
    rng = np.random.default_rng(0)
    args = w.make_args(rng, **w.sizes[scale])
    wrt = tuple(w.wrt)
    vs = tuple(rng.standard_normal(np.shape(args[k])) if np.ndim(args[k]) else 1.0
               for k in wrt)
    d = jg.differentiate(w.primal, wrt=wrt)
    t_p = best(lambda: d(*args))
    t_j = best(lambda: d.jvp(args, vs))
    t_g = best(lambda: d.grad(*args))
    t_h = best(lambda: jg.hvp(d, args, vs, wrt=wrt))
    return w.name, t_p, t_j / t_p, t_g / t_p, t_h / t_p


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scale", default="quick")
    ns = p.parse_args()
    print(f"{'workload':12} {'primal':>10} {'jvp/primal':>11} {'grad/primal':>12} "
          f"{'hvp/primal':>11}")
    for mod in (heat, lorenz, rosenbrock):
        name, t_p, rj, rg, rh = row(mod.WORKLOAD, ns.scale)
        print(f"{name:12} {t_p * 1e3:8.3f}ms {rj:11.2f} {rg:12.2f} {rh:11.2f}")


if __name__ == "__main__":
    main()
