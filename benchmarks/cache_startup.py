"""First gradient call in a fresh process, without and with the on-disk cache.

Usage::

    python benchmarks/cache_startup.py [--only NAME]

For every workload (and ``examples/quickstart.py``), three fresh Python processes
each time one first call of ``jg.grad(primal, wrt=..., cache=...)`` at the
verification size, after imports: without the cache, with ``cache=True`` and an
empty cache directory (transform + compile + write), and with it filled (load the
generated module and Numba's machine code).  The cache goes to a temporary
``NUMBA_CACHE_DIR``.  Prints a table of seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

CHILD = r'''
import json, sys, time
sys.path[:0] = [{root!r}, {here!r}, {examples!r}]
import numpy as np
import jitgrad as jg
name, cache = {name!r}, {cache!r}
if name == "quickstart":
    from quickstart import energy
    f, wrt, args = energy, (0, 1), (np.array([0.0, 0.9, 2.2, 2.8, 4.1]), 2.0)
else:
    from workloads import WORKLOADS
    w = WORKLOADS[name]
    f, wrt = w.primal, w.wrt
    args = w.make_args(np.random.default_rng(0), **w.sizes["verify"])
g = jg.grad(f, wrt=wrt, cache=cache)
t = time.perf_counter()
g(*args)
print(json.dumps({{"seconds": time.perf_counter() - t, **g.cache_info()}}))
'''


def first_call(name: str, cache: bool, env: dict) -> dict:
    code = CHILD.format(root=str(ROOT), here=str(HERE), examples=str(ROOT / "examples"),
                        name=name, cache=cache)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=600)
    if out.returncode:
        raise RuntimeError(out.stderr)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    sys.path.insert(0, str(HERE))
    from workloads import WORKLOADS

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", action="append")
    a = ap.parse_args()
    names = a.only or ["quickstart", *WORKLOADS]
    print(f"| {'workload':12s} | {'no cache':>9s} | {'cache, cold':>11s} | "
          f"{'cache, warm':>11s} | {'warm hit':>8s} |")
    print(f"|{'-' * 14}|{'-' * 11}|{'-' * 13}|{'-' * 13}|{'-' * 10}|")
    with tempfile.TemporaryDirectory() as cache_dir:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
        for name in names:
            plain = first_call(name, False, env)
            cold = first_call(name, True, env)
            warm = first_call(name, True, env)
            hit = "yes" if warm["hits"] and not warm["numba_misses"] else "no"
            print(f"| {name:12s} | {plain['seconds']:9.3f} | {cold['seconds']:11.3f} | "
                  f"{warm['seconds']:11.3f} | {hit:>8s} |")


if __name__ == "__main__":
    main()
