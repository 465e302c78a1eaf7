"""Long loops in bounded memory: ``jg.checkpointed`` against the plain loop's gradient and JAX.

Usage::

    python benchmarks/checkpointed.py [--steps 10000 100000 1000000] [--repeat 3] [--no-jax]

Two workloads: a Lorenz system integrated with RK4 (three loop-carried scalars, h = 1e-5)
and a heat equation on 100 points with two buffers swapped each step (``u, v = v, u``).  At
each T every variant runs in a fresh process: jitgrad's gradient of the plain ``range``
loop, of ``jg.checkpointed(range(T))`` (the default: about sqrt(2T) snapshots, no step
recomputed more than once) and of ``snapshots=32`` (revolve's binomial schedule: memory
independent of T beyond the 32 snapshots); and, when JAX is installed (it is not a
dependency of jitgrad), ``jax.grad`` of the same function written with ``lax.scan``
(the heat update vectorised) and of a scan of sqrt(T) segments, each segment a
``jax.checkpoint``-ed scan (the usual way to checkpoint a JAX time loop).

Times are the median of ``--repeat`` calls after a warm-up call (jitgrad: compiled, at
small T; JAX: ``jax.jit`` at the same T, so compile time is not counted).  Memory for
jitgrad is the peak RSS the calls added (tapes, snapshots, adjoints); for JAX it is XLA's
planned temporary buffers of the compiled gradient (``memory_analysis()``), the same
quantity (RSS is not usable there: XLA's allocator keeps memory).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

JITGRAD = r'''
import json, resource, sys, time
sys.path.insert(0, {root!r})
import numpy as np
import jitgrad as jg

def rate(x, y, z, s, r, b):
    return s * (y - x), x * (r - z) - y, x * y - b * z

def rk4(x, y, z, s, r, b, h):
    ax, ay, az = rate(x, y, z, s, r, b)
    bx, by, bz = rate(x + 0.5 * h * ax, y + 0.5 * h * ay, z + 0.5 * h * az, s, r, b)
    cx, cy, cz = rate(x + 0.5 * h * bx, y + 0.5 * h * by, z + 0.5 * h * bz, s, r, b)
    dx, dy, dz = rate(x + h * cx, y + h * cy, z + h * cz, s, r, b)
    return (x + h / 6.0 * (ax + 2.0 * bx + 2.0 * cx + dx),
            y + h / 6.0 * (ay + 2.0 * by + 2.0 * cy + dy),
            z + h / 6.0 * (az + 2.0 * bz + 2.0 * cz + dz))

def lorenz(p, T, k):
    x, y, z = 1.0, 1.0, 1.0
    for t in {loop}:
        x, y, z = rk4(x, y, z, p[0], p[1], p[2], 1e-5)
    return x + y + z

def heat(u0, a, T, k):
    u = u0.copy()
    v = u0.copy()
    n = u.shape[0]
    for t in {loop}:
        for i in range(1, n - 1):
            v[i] = u[i] + a * (u[i - 1] - 2.0 * u[i] + u[i + 1])
        u, v = v, u
    return np.sum(u * u)

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()

work, T = {work!r}, {steps}
if work == "lorenz":
    g, args = jg.value_and_grad(lorenz), (np.array([10.0, 28.0, 8.0 / 3.0]),)
else:
    g, args = jg.value_and_grad(heat, wrt=(0, 1)), (np.sin(np.linspace(0, 3, 100)), 0.2)
g(*args, 50, 4)
times = []
before = rss()
for _ in range({repeat}):
    t0 = time.perf_counter()
    val, grads = g(*args, T, 32)
    times.append(time.perf_counter() - t0)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
first = float(np.ravel(grads[0] if isinstance(grads, tuple) else grads)[0])
print(json.dumps({{"time": sorted(times)[len(times) // 2], "mem": max(0, peak - before),
                   "value": float(val), "grad0": first}}))
'''

JAX = r'''
import json, math, time
import jax
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp
import numpy as np
from jax import lax

work, T, checkpointed = {work!r}, {steps}, {checkpointed!r}

def lorenz_step(c, p):
    x, y, z = c
    s, r, b = p[0], p[1], p[2]
    h = 1e-5
    def f(x, y, z):
        return s * (y - x), x * (r - z) - y, x * y - b * z
    k1 = f(x, y, z)
    k2 = f(x + 0.5 * h * k1[0], y + 0.5 * h * k1[1], z + 0.5 * h * k1[2])
    k3 = f(x + 0.5 * h * k2[0], y + 0.5 * h * k2[1], z + 0.5 * h * k2[2])
    k4 = f(x + h * k3[0], y + h * k3[1], z + h * k3[2])
    return tuple(c[i] + h / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i])
                 for i in range(3))

def heat_step(u, a):
    return u.at[1:-1].set(u[1:-1] + a * (u[:-2] - 2.0 * u[1:-1] + u[2:]))

def run(step, c, theta):
    body = lambda c, _: (step(c, theta), None)
    if not checkpointed:
        return lax.scan(body, c, None, length=T)[0]
    seg = max(1, math.isqrt(T))
    segment = jax.checkpoint(lambda c, _: (lax.scan(body, c, None, length=seg)[0], None))
    c = lax.scan(segment, c, None, length=T // seg)[0]
    return lax.scan(body, c, None, length=T - (T // seg) * seg)[0]

if work == "lorenz":
    def loss(p):
        x, y, z = run(lorenz_step, (1.0, 1.0, 1.0), p)
        return x + y + z
    args = (jnp.array([10.0, 28.0, 8.0 / 3.0]),)
    g = jax.jit(jax.value_and_grad(loss))
else:
    def loss(u0, a):
        u = run(heat_step, u0, a)
        return jnp.sum(u * u)
    args = (jnp.sin(jnp.linspace(0.0, 3.0, 100)), jnp.float64(0.2))
    g = jax.jit(jax.value_and_grad(loss, argnums=(0, 1)))
mem = g.lower(*args).compile().memory_analysis().temp_size_in_bytes
jax.block_until_ready(g(*args))
times = []
for _ in range({repeat}):
    t0 = time.perf_counter()
    val, grads = jax.block_until_ready(g(*args))
    times.append(time.perf_counter() - t0)
first = float(np.ravel(grads[0] if isinstance(grads, tuple) else grads)[0])
print(json.dumps({{"time": sorted(times)[len(times) // 2], "mem": mem, "value": float(val),
                   "grad0": first}}))
'''

#: label -> (child script, its parameters)
VARIANTS = {
    "jitgrad, plain range": (JITGRAD, {"loop": "range(T)"}),
    "jitgrad, checkpointed (default)": (JITGRAD, {"loop": "jg.checkpointed(range(T))"}),
    "jitgrad, snapshots=32": (JITGRAD, {"loop": "jg.checkpointed(range(T), snapshots=k)"}),
    "JAX, scan": (JAX, {"checkpointed": False}),
    "JAX, checkpoint(scan) x sqrt(T)": (JAX, {"checkpointed": True}),
}


def run(template: str, params: dict, work: str, steps: int, repeat: int) -> dict:
    """One variant in a fresh process: its time, memory, value and first gradient entry."""
    code = template.format(root=str(ROOT), work=work, steps=steps, repeat=repeat, **params)
    with tempfile.TemporaryDirectory() as tmp:  # jitgrad reads the source from a file
        child = Path(tmp) / "child.py"
        child.write_text(code)
        out = subprocess.run([sys.executable, str(child)], capture_output=True, text=True,
                             check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _has_jax() -> bool:
    try:
        import jax  # noqa: F401
    except ImportError:
        return False
    return True


def main() -> None:
    """Print the table (markdown)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, nargs="*", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--work", nargs="*", default=["lorenz", "heat"])
    ap.add_argument("--no-jax", action="store_true")
    a = ap.parse_args()
    jax_ok = _has_jax() and not a.no_jax
    print("| workload | T | gradient | time | vs jitgrad plain | peak memory |")
    print("|---|---|---|---|---|---|")
    for work in a.work:
        for steps in a.steps:
            base = ref = None
            for label, (template, params) in VARIANTS.items():
                if template is JAX and not jax_ok:
                    continue
                r = run(template, params, work, steps, a.repeat)
                base = base or r["time"]
                ref = ref or r
                agree = abs(r["grad0"] - ref["grad0"]) <= 1e-6 * (1.0 + abs(ref["grad0"]))
                print(f"| {work} | {steps:,} | {label} | {r['time'] * 1e3:,.1f} ms | "
                      f"{r['time'] / base:.2f}x | {r['mem'] / 2**20:,.2f} MiB |"
                      + ("" if agree else f" (gradient differs: {r['grad0']:.6g} vs "
                         f"{ref['grad0']:.6g})"), flush=True)


if __name__ == "__main__":
    main()
