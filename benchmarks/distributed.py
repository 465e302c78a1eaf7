"""Ensemble gradients in one process vs a 2-worker Dask cluster, cold and warm.

Usage::

    python benchmarks/distributed.py [--members 64] [--steps 20000] [--repeats 3]

The workload is ``workloads.lorenz`` (RK4, 20k steps): one gradient per ensemble
member (its own initial state), w.r.t. sigma, rho, beta and the initial state,
with ``jg.grad(..., cache=True)``.  Timed:

* **one process**: the members one after another (compiled code warm);
* **cluster cold**: a fresh ``LocalCluster(n_workers=2, threads_per_worker=1)`` with an
  empty on-disk cache, one task per member (each worker transforms and compiles);
* **cluster warm**: fresh workers, cache filled (they load the generated module and
  Numba's machine code), one task per member; then the same again on the now-warm
  workers (**hot**), and with the members in one task per worker (**batched**);
* **per-task overhead**: tasks of one RK4 step each, on the hot workers.

Cluster start-up is reported apart from the task times.  Prints medians and ratios.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
# this file is named like the ``distributed`` package: its folder must not be on the path,
# so ``workloads`` is reached through a link in a folder of its own (workers, spawned,
# inherit sys.path and import ``workloads.lorenz`` by name)
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
_LINKS = Path(tempfile.gettempdir()) / "jitgrad-benchmarks-path"
_LINKS.mkdir(exist_ok=True)
if not (_LINKS / "workloads").exists():
    (_LINKS / "workloads").symlink_to(HERE / "workloads")
sys.path.insert(0, str(_LINKS))
sys.path.insert(0, str(HERE.parent))  # the source-tree jitgrad

import numpy as np  # noqa: E402
from workloads.lorenz import lorenz  # noqa: E402

import jitgrad as jg  # noqa: E402

GRAD = jg.grad(lorenz, wrt=(0, 1, 2, 3), cache=True)
PARAMS = (10.0, 28.0, 8.0 / 3.0)


def members(n: int, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [np.array([1.0, 1.0, 1.0]) + rng.normal(0.0, 0.1, 3) for _ in range(n)]


def batch(s0s: list[np.ndarray], dt: float, steps: int) -> np.ndarray:
    """The summed gradient of several members (one task per worker)."""
    return np.sum([np.hstack(GRAD(*PARAMS, s0, dt, steps)) for s0 in s0s], axis=0)


def one_process(s0s, dt, steps) -> float:
    t = time.perf_counter()
    for s0 in s0s:
        GRAD(*PARAMS, s0, dt, steps)
    return time.perf_counter() - t


def tasks(client, s0s, dt, steps) -> float:
    t = time.perf_counter()
    client.gather(client.map(GRAD, *([p] * len(s0s) for p in PARAMS), s0s,
                             [dt] * len(s0s), [steps] * len(s0s), pure=False))
    return time.perf_counter() - t


def batched(client, s0s, dt, steps) -> float:
    workers = list(client.scheduler_info()["workers"])
    t = time.perf_counter()
    client.gather([client.submit(batch, s0s[i::len(workers)], dt, steps, workers=[w],
                                 pure=False) for i, w in enumerate(workers)])
    return time.perf_counter() - t


def cluster():
    from distributed import Client, LocalCluster

    t = time.perf_counter()
    lc = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None)
    client = Client(lc)
    client.wait_for_workers(2)
    return lc, client, time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--members", type=int, default=64)
    ap.add_argument("--steps", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    dt, s0s = 0.001, members(a.members)
    folder = Path(GRAD.cache_info()["dir"])
    rows: dict[str, float] = {}

    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    lc, client, start = cluster()
    rows["cluster start-up"] = start
    rows["cluster cold (empty cache)"] = tasks(client, s0s, dt, a.steps)
    client.close()
    lc.close()

    t = time.perf_counter()
    GRAD(*PARAMS, s0s[0], dt, a.steps)  # this process: loads from the cache just filled
    rows["one process, first call (cache warm)"] = time.perf_counter() - t
    rows["one process"] = statistics.median(one_process(s0s, dt, a.steps)
                                            for _ in range(a.repeats))

    lc, client, start = cluster()
    rows["cluster warm (cache filled, fresh workers)"] = tasks(client, s0s, dt, a.steps)
    rows["cluster hot, one task per member"] = statistics.median(
        tasks(client, s0s, dt, a.steps) for _ in range(a.repeats))
    rows["cluster hot, one task per worker"] = statistics.median(
        batched(client, s0s, dt, a.steps) for _ in range(a.repeats))
    tiny = statistics.median(tasks(client, s0s, dt, 1) for _ in range(a.repeats))
    client.close()
    lc.close()

    base = rows["one process"]
    print(f"{a.members} Lorenz RK4 gradients, {a.steps} steps each "
          f"(median of {a.repeats} where repeated)\n")
    print(f"| {'setting':44s} | {'seconds':>8s} | {'one process / this':>18s} |")
    print(f"|{'-' * 46}|{'-' * 10}|{'-' * 20}|")
    for name, sec in rows.items():
        ratio = f"{base / sec:.2f}x" if "start-up" not in name and "first" not in name else ""
        print(f"| {name:44s} | {sec:8.3f} | {ratio:>18s} |")
    print(f"\nper-task overhead (one-step tasks on hot workers): "
          f"{tiny / a.members * 1e3:.2f} ms per task ({a.members} tasks, 2 workers)")


if __name__ == "__main__":
    main()
