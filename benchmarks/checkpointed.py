"""Long loops in bounded memory: ``jg.checkpointed`` against the plain loop's gradient.

Usage::

    python benchmarks/checkpointed.py [--steps 10000 100000 1000000] [--repeat 3]

For a Lorenz integrator (three loop-carried scalars) and a heat equation updated in
place (a 1,000-point array), each gradient runs in a fresh process at each T: the plain
``range`` loop, ``jg.checkpointed(range(T))`` (about sqrt(T) snapshots) and
``snapshots=32``.  Prints the median time of the compiled gradient (after a warm-up call
at small T) and the peak memory it added (peak RSS during the call minus RSS before it:
tapes, snapshots and adjoints), so the tape's growth with T is visible.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r'''
import json, resource, sys, time
sys.path.insert(0, {root!r})
import numpy as np
import jitgrad as jg

def lorenz(p, T, k):
    x, y, z = 1.0, 1.0, 1.0
    s, r, b = p[0], p[1], p[2]
    dt = 1e-4
    for t in {loop}:
        dx = s * (y - x)
        dy = x * (r - z) - y
        dz = x * y - b * z
        x = x + dt * dx
        y = y + dt * dy
        z = z + dt * dz
    return x + y + z

def heat(u0, a, T, k):
    u = u0.copy()
    n = u.shape[0]
    for t in {loop}:
        for i in range(1, n - 1):
            u[i] = u[i] + a * (u[i - 1] - 2.0 * u[i] + u[i + 1])
    return np.sum(u * u)

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()

work = {work!r}
T = {steps}
if work == "lorenz":
    g, args = jg.grad(lorenz), (np.array([10.0, 28.0, 8.0 / 3.0]),)
else:
    g, args = jg.grad(heat, wrt=(0, 1)), (np.sin(np.linspace(0, 3, 1000)), 0.1)
T_run = T if work == "lorenz" else T // 100  # heat: 1,000 points per step
g(*args, 50, 4)
times = []
before = rss()
for _ in range({repeat}):
    t0 = time.perf_counter()
    g(*args, T_run, 32)
    times.append(time.perf_counter() - t0)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({{"time": sorted(times)[len(times) // 2], "mem": max(0, peak - before),
                   "T": T_run}}))
'''

LOOPS = {"plain range": "range(T)", "checkpointed, ~sqrt(T)": "jg.checkpointed(range(T))",
         "checkpointed, snapshots=32": "jg.checkpointed(range(T), snapshots=k)"}


def run(work: str, loop: str, steps: int, repeat: int) -> dict:
    code = CHILD.format(root=str(ROOT), loop=loop, work=work, steps=steps, repeat=repeat)
    with tempfile.TemporaryDirectory() as tmp:  # jitgrad reads the source from a file
        child = Path(tmp) / "child.py"
        child.write_text(code)
        out = subprocess.run([sys.executable, str(child)], capture_output=True, text=True,
                             check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, nargs="*", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    print("| workload | T | loop | gradient time | vs plain | peak memory added |")
    print("|---|---|---|---|---|---|")
    for work in ("lorenz", "heat"):
        for steps in a.steps:
            base = None
            for label, loop in LOOPS.items():
                r = run(work, loop, steps, a.repeat)
                base = base or r["time"]
                print(f"| {work} | {r['T']:,} | {label} | {r['time'] * 1e3:.1f} ms | "
                      f"{r['time'] / base:.2f}x | {r['mem'] / 2**20:.1f} MiB |", flush=True)


if __name__ == "__main__":
    main()
