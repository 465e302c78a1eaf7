"""Heat (``workloads/heat.py``): the primal, the hand adjoint and jitgrad's gradient with its
tape and with ``auto_checkpoint=True``, in one process (medians of interleaved calls).

    python benchmarks/heat_steps.py [n] [nsteps] [repeats]     # default 2000 200 21
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np
from numba import njit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from workloads.heat import heat, heat_adjoint  # noqa: E402

import jitgrad as jg  # noqa: E402


def main(n: int = 2000, nsteps: int = 200, repeats: int = 21) -> dict[str, float]:
    """Median milliseconds per tool, after each tool's gradient is checked against the hand
    adjoint's."""
    u0 = np.random.default_rng(0).uniform(0.0, 1.0, n)
    alpha = 0.25
    primal = njit(heat)
    tape = jg.differentiate(heat, wrt=(0, 1))
    auto = jg.differentiate(heat, wrt=(0, 1), auto_checkpoint=True)
    tools = {"primal": lambda: primal(u0, alpha, nsteps),
             "hand": lambda: heat_adjoint(u0, alpha, nsteps),
             "tape": lambda: tape.value_and_grad(u0, alpha, nsteps),
             "auto": lambda: auto.value_and_grad(u0, alpha, nsteps)}
    du0, dalpha = heat_adjoint(u0, alpha, nsteps)
    for name in ("tape", "auto"):
        _, (g0, ga) = tools[name]()
        np.testing.assert_allclose(g0, du0, rtol=1e-9, atol=1e-12, err_msg=name)
        np.testing.assert_allclose(ga, dalpha, rtol=1e-9, err_msg=name)
    times: dict[str, list[float]] = {k: [] for k in tools}
    for _ in range(repeats):
        for name, f in tools.items():
            t = time.perf_counter()
            f()
            times[name].append(time.perf_counter() - t)
    med = {k: float(np.median(v)) * 1e3 for k, v in times.items()}
    print(f"heat n={n} nsteps={nsteps}: " + ", ".join(
        f"{k} {med[k]:.3f} ms ({med[k] / med['primal']:.1f}x, "
        f"{med[k] * 1e6 / (n * nsteps):.2f} ns per point-step)" for k in tools))
    return med


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:4]))
