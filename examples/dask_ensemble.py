"""Fit the Lorenz parameters to an ensemble of noisy observations, gradients on Dask.

    pip install -e ".[dask]"
    python examples/dask_ensemble.py

Each ensemble member is one trajectory from its own initial state, observed with
noise; the loss is the members' mean misfit (``lorenz_fit.misfit``).  Two ways to
spread the gradients over the workers of a ``LocalCluster`` (2 processes, 1 thread
each):

* **one task per member** (``member_tasks``): ``client.map`` sends the parameters and
  each member's data, a worker returns that member's (value, gradient), and the
  client sums them; Dask's progress bar follows the tasks;
* **data-parallel** (``DataParallel``): the members are split into shards that are
  ``client.scatter``-ed once and stay on the workers; each step sends only the three
  parameters and gets back one summed (value, gradient) per shard.

What travels to the workers is a *reference* to the gradient (``lorenz_fit.misfit``
plus options), never code: each worker imports ``lorenz_fit``, and with
``cache=True`` loads the generated module and Numba's machine code from the on-disk
cache the client filled (``examples/__pycache__/jitgrad``) instead of transforming
and compiling again.  The same code runs on a real cluster with
``Client("scheduler:8786")`` (see docs/distributed.md).
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # lorenz_fit, for the client

import lorenz_fit  # noqa: E402  (workers import it by name too)

import jitgrad as jg  # noqa: E402

#: (value, (dsigma, drho, dbeta)) of one member's misfit: what workers run
member_value_and_grad = jg.value_and_grad(lorenz_fit.misfit, wrt=(0, 1, 2), cache=True)


def make_ensemble(members: int, steps: int = 100, dt: float = 0.01, noise: float = 0.05,
                  seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """``members`` (initial state, noisy observed trajectory) pairs from the true model."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(members):
        state0 = np.array([-8.0, 7.0, 27.0]) + rng.normal(0.0, 1.0, 3)
        obs = lorenz_fit.trajectory(*lorenz_fit.TRUE, state0, steps, dt)
        out.append((state0, obs + rng.normal(0.0, noise, obs.shape)))
    return out


def shard_value_and_grad(shard: list, theta: np.ndarray, dt: float) -> tuple[float, np.ndarray]:
    """Summed value and gradient over the members of one shard (runs on a worker)."""
    total, grad = 0.0, np.zeros(3)
    for state0, obs in shard:
        value, g = member_value_and_grad(*theta, state0, obs, dt)
        total += value
        grad += g
    return total, grad


def local_value_and_grad(ensemble: list, theta: np.ndarray,
                         dt: float = 0.01) -> tuple[float, np.ndarray]:
    """The same sum in this process: the reference for the distributed versions."""
    return shard_value_and_grad(ensemble, theta, dt)


def member_tasks(client, ensemble: list, theta: np.ndarray, dt: float = 0.01,
                 show_progress: bool = False) -> tuple[float, np.ndarray]:
    """One task per member; the client sums the members' values and gradients."""
    from distributed import progress

    futures = client.map(member_value_and_grad, *([float(t)] * len(ensemble) for t in theta),
                         [s for s, _ in ensemble], [o for _, o in ensemble],
                         [dt] * len(ensemble), pure=False)
    if show_progress:
        progress(futures)
        print()
    results = client.gather(futures)
    return sum(v for v, _ in results), np.sum([g for _, g in results], axis=0)


class DataParallel:
    """Shards of the ensemble live on the workers; each step only parameters go out and
    per-shard sums of values and gradients come back."""

    def __init__(self, client, ensemble: list, dt: float = 0.01):
        workers = list(client.scheduler_info()["workers"])
        shards = [ensemble[i::len(workers)] for i in range(len(workers))]
        self.client, self.dt = client, dt
        self.shards = [client.scatter(s, workers=[w]) for s, w in zip(shards, workers,
                                                                      strict=True)]

    def __call__(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        futures = [self.client.submit(shard_value_and_grad, s, theta, self.dt, pure=False)
                   for s in self.shards]
        results = self.client.gather(futures)
        return sum(v for v, _ in results), np.sum([g for _, g in results], axis=0)


def fit(value_and_grad, members: int, iterations: int, lr: float = 0.2) -> np.ndarray:
    """Adam on the ensemble's mean misfit, as in lorenz_fit.py."""
    theta = np.array([7.0, 24.0, 2.0])
    m, v, b1, b2 = np.zeros(3), np.zeros(3), 0.9, 0.999
    for t in range(1, iterations + 1):
        total, g = value_and_grad(theta)
        loss, g = total / members, g / members
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        theta = theta - lr * (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + 1e-8)
        if t == 1 or t % 50 == 0:
            print(f"step {t:4d}  loss {loss:.6f}  sigma {theta[0]:7.4f}  rho {theta[1]:7.4f}  "
                  f"beta {theta[2]:6.4f}")
    return theta


def main(members: int = 16, iterations: int = 200, workers: int = 2) -> np.ndarray:
    from distributed import Client, LocalCluster

    ensemble = make_ensemble(members)
    theta0 = np.array([7.0, 24.0, 2.0])
    t = time.perf_counter()
    # fills the on-disk cache before the workers start, so they load instead of compiling
    local_value_and_grad(ensemble[:1], theta0)
    print(f"client: first gradient (transform + compile, or cache) "
          f"{time.perf_counter() - t:.2f} s")
    with LocalCluster(n_workers=workers, threads_per_worker=1, dashboard_address=None,
                      processes=True) as cluster, Client(cluster) as client:
        t = time.perf_counter()
        total, g = member_tasks(client, ensemble, theta0, show_progress=True)
        print(f"one task per member: {members} gradients in {time.perf_counter() - t:.2f} s "
              f"(each worker's first call loads from the on-disk cache)")
        want = local_value_and_grad(ensemble, theta0)[1]
        print(f"summed gradient {np.array2string(g, precision=4)}  "
              f"max |difference| vs one process {np.max(np.abs(g - want)):.1e}")

        step = DataParallel(client, ensemble)
        t = time.perf_counter()
        theta = fit(step, members, iterations)
        print(f"data-parallel fit: {iterations} steps in {time.perf_counter() - t:.2f} s")
    s, r, b = theta
    ts, tr, tb = lorenz_fit.TRUE
    print(f"recovered sigma={s:.3f} rho={r:.3f} beta={b:.3f}  (true {ts:.3f}, {tr:.3f}, "
          f"{tb:.3f})")
    return theta


if __name__ == "__main__":
    main()
