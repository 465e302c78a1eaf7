"""Kept workspaces: gradient time and memory of loops whose tapes are array snapshots, and
of checkpointed loops inside another loop, for one or two source trees side by side.

Usage::

    python benchmarks/workspaces.py [--rounds 7] [--calls 7] [--only NAME] [--root DIR ...]

Workloads: ``whole_array`` (``u[1:-1] = u[1:-1] + c * lap`` on 2,000 points, 400 steps:
four array snapshots per step, ``tests/corpus_numpy.py``), ``sine_map`` (``u[:] =
np.sin(u) * 0.9 + 0.1`` on 20,000 points, 200 steps: one snapshot per step), and
``heat_epochs`` (three epochs of a 100-point heat equation, each a ``jg.checkpointed``
loop of ``T = 10,000`` steps with 32 snapshots, ``tests/test_checkpointed_nested.py``).
Each ``--root`` (a jitgrad source tree; default this one) runs in its own process per
round, the roots alternating, so that they see the same machine state; a process compiles,
warms up twice, and times ``--calls`` calls of the compiled gradient (their median).
Printed per root: the median over rounds of those medians, the spread (fastest and slowest
round), the same of process CPU time (less disturbed where other work shares the
machine), the minor page faults of a call (memory the call got from the system afresh),
and the traced peak (``tracemalloc``) of one
``jit=False`` call at a small size.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r'''
import json, resource, statistics, sys, time, tracemalloc
sys.path.insert(0, {root!r})
sys.path.insert(0, {tests!r})
import numpy as np
import jitgrad as jg
from corpus_numpy import loop_whole_array_update
from test_checkpointed_nested import heat_epochs
from workspaces_sine import sine_map


work = {work!r}
if work == "whole_array":
    f, wrt = loop_whole_array_update, (0, 1)
    big, small = (np.sin(np.linspace(0.0, 3.0, 2000)), 0.1, 400), (np.linspace(0, 1, 50), 0.1, 20)
elif work == "sine_map":
    f, wrt = sine_map, (0, 1)
    big, small = (np.linspace(-1.0, 1.0, 20000), 0.9, 200), (np.linspace(-1, 1, 50), 0.9, 20)
else:
    f, wrt = heat_epochs, (0, 1)
    u0 = np.sin(np.linspace(0.0, 3.0, 100))
    big, small = (u0, 0.2, 10000, 32), (u0, 0.2, 400, 4)
g = jg.grad(f, wrt=wrt)
g(*big)
g(*big)
times, cpu, faults = [], [], []
for _ in range({calls}):
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    t0, c0 = time.perf_counter(), time.process_time()
    out = g(*big)
    times.append(time.perf_counter() - t0)
    cpu.append(time.process_time() - c0)
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
plain = jg.grad(f, wrt=wrt, jit=False)
plain(*small)
tracemalloc.start()
plain(*small)
traced = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
check = float(np.ravel(out[0])[0])
print(json.dumps({{"time": statistics.median(times), "cpu": statistics.median(cpu),
                  "faults": statistics.median(faults), "traced": traced, "check": check}}))
'''

WORKS = ("whole_array", "sine_map", "heat_epochs")


SINE = """import numpy as np


def sine_map(u0, c, steps):
    u = u0.copy()
    for t in range(steps):
        u[:] = np.sin(u) * c + 0.1
    return np.sum(u * u)
"""


def run(root: str, work: str, calls: int, tmp: str) -> dict:
    """One process: the timings of ``work`` with the jitgrad of ``root``."""
    code = CHILD.format(root=root, tests=str(Path(root) / "tests"), work=work, calls=calls)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=root, env={**os.environ, "PYTHONPATH": tmp})
    if out.returncode:
        raise SystemExit(out.stderr)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    """Run the rounds and print one line per workload and root."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--calls", type=int, default=7)
    ap.add_argument("--only", action="append", choices=WORKS)
    ap.add_argument("--root", action="append", help="a jitgrad source tree (repeatable)")
    a = ap.parse_args()
    roots = a.root or [str(ROOT)]
    tmp = tempfile.mkdtemp(prefix="jitgrad_ws_")
    (Path(tmp) / "workspaces_sine.py").write_text(SINE)  # jitgrad reads the source
    for work in a.only or WORKS:
        res: dict[str, list[dict]] = {r: [] for r in roots}
        for _ in range(a.rounds):
            for r in roots:
                res[r].append(run(r, work, a.calls, tmp))
        for r in roots:
            ts = [x["time"] * 1e3 for x in res[r]]
            cs = [x["cpu"] * 1e3 for x in res[r]]
            print(f"{work:12s} {r}: {statistics.median(ts):8.2f} ms "
                  f"[{min(ts):.2f}, {max(ts):.2f}], CPU {statistics.median(cs):.2f} ms "
                  f"[{min(cs):.2f}, {max(cs):.2f}], page faults/call "
                  f"{statistics.median(x['faults'] for x in res[r]):.0f}, traced peak (jit=False, "
                  f"small) {res[r][0]['traced'] / 1e3:.0f} kB, check {res[r][0]['check']:.12g}")


if __name__ == "__main__":
    main()
