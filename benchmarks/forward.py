"""Forward mode and second order against the primal, as time ratios (one run, one table).

    PYTHONPATH=. python benchmarks/forward.py [--scale quick] [--no-jax]

For each loop workload (heat, Lorenz, pairwise energy, Rosenbrock): the Numba-compiled
primal, ``jg.jvp`` (one tangent direction, compiled), the reverse-mode gradient, and
``jg.hvp`` (forward-over-reverse, compiled), each timed as the best of several repeats
after a warm-up call (compile time excluded);
where JAX is installed, also ``jax.jit(jax.jvp(f))`` and ``jax.jit(jax.jvp(jax.grad(f)))``
on the workload's JAX version (loops as ``lax.scan``), in the same process, as ratios to
the same Numba primal.  ``jvp/hand jvp`` compares with the workload's hand-written
``@njit`` tangent (``Workload.tangent``: primal and tangent fused in one sweep), checked
against jitgrad's jvp first; ``hvp/grad`` is what the second order adds to the gradient.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))

from workloads import heat, lorenz, pairwise, rosenbrock  # noqa: E402
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
    t_hand = float("nan")
    if w.tangent is not None:  # the expert's jvp, checked against jitgrad's first
        want, got = d.jvp(args, vs), w.tangent(*args, *vs)
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
        t_hand = best(lambda: w.tangent(*args, *vs))
    t_g = best(lambda: d.grad(*args))
    t_h = best(lambda: jg.hvp(d, args, vs, wrt=wrt))
    return w.name, t_p, t_j / t_p, t_j / t_hand, t_g / t_p, t_h / t_p, args, vs


def jax_ratios(w: Workload, args: tuple, vs: tuple, t_p: float) -> tuple[float, float]:
    """JAX's jvp and hvp time over the Numba primal's (``nan`` where JAX is missing)."""
    try:
        from harness.peers import JaxBackend

        b = JaxBackend(1)
    except ImportError:
        return float("nan"), float("nan")
    jax, jnp = b.jax, b.jnp
    loss = w.peer_loss(b, args)
    k = len(w.wrt)
    xs = [jnp.asarray(np.asarray(args[i], dtype=np.float64)) for i in w.wrt]
    ts = [jnp.asarray(np.asarray(v, dtype=np.float64)) for v in vs]
    jvp = jax.jit(lambda *a: jax.jvp(loss, tuple(a[:k]), tuple(a[k:])))
    hvp = jax.jit(lambda *a: jax.jvp(jax.grad(loss, argnums=tuple(range(k))), tuple(a[:k]),
                                     tuple(a[k:]))[1])
    t_j = best(lambda: jax.block_until_ready(jvp(*xs, *ts)))
    t_h = best(lambda: jax.block_until_ready(hvp(*xs, *ts)))
    return t_j / t_p, t_h / t_p


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scale", default="quick")
    p.add_argument("--no-jax", action="store_true", help="skip the JAX columns")
    ns = p.parse_args()
    print("| workload | primal | jvp/primal | jvp/hand jvp | grad/primal | hvp/primal "
          "| hvp/grad | JAX jvp/primal | JAX hvp/primal | jvp: JAX/jitgrad "
          "| hvp: JAX/jitgrad |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for mod in (heat, lorenz, pairwise, rosenbrock):
        name, t_p, rj, rhand, rg, rh, args, vs = row(mod.WORKLOAD, ns.scale)
        jj, jh = (float("nan"),) * 2 if ns.no_jax else jax_ratios(mod.WORKLOAD, args, vs, t_p)
        print(f"| {name} | {t_p * 1e3:.3f} ms | {rj:.2f}x | {rhand:.2f}x | {rg:.2f}x "
              f"| {rh:.2f}x | {rh / rg:.2f}x | {jj:.1f}x | {jh:.1f}x | {jj / rj:.1f}x "
              f"| {jh / rh:.1f}x |", flush=True)


if __name__ == "__main__":
    main()
