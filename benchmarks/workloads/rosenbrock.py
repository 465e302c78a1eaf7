"""Loop-form extended Rosenbrock function, gradient w.r.t. ``x``."""

from __future__ import annotations

import numpy as np
from numba import njit

from workloads.base import Workload


def rosenbrock(x):
    """sum_i 100 (x[i+1] - x[i]^2)^2 + (1 - x[i])^2, as a scalar loop."""
    n = x.shape[0]
    total = 0.0
    for i in range(n - 1):
        a = x[i + 1] - x[i] * x[i]
        b = 1.0 - x[i]
        total += 100.0 * a * a + b * b
    return total


@njit(cache=True)
def rosenbrock_adjoint(x):
    """The adjoint of the sum is a pure map: each g[i] reads its three neighbours, no
    stored intermediates and no loop-carried dependency, so LLVM vectorises it."""
    n = x.shape[0]
    g = np.empty(n)
    a0 = x[1] - x[0] * x[0]
    g[0] = -400.0 * a0 * x[0] - 2.0 * (1.0 - x[0])
    for i in range(1, n - 1):
        xi = x[i]
        a_prev = xi - x[i - 1] * x[i - 1]
        a = x[i + 1] - xi * xi
        g[i] = 200.0 * a_prev - 400.0 * a * xi - 2.0 * (1.0 - xi)
    g[n - 1] = 200.0 * (x[n - 1] - x[n - 2] * x[n - 2])
    return (g,)


@njit(cache=True)
def rosenbrock_tangent(x, dx):
    """The sum and its directional derivative in one pass."""
    n = x.shape[0]
    total = 0.0
    dtotal = 0.0
    for i in range(n - 1):
        a = x[i + 1] - x[i] * x[i]
        b = 1.0 - x[i]
        total += 100.0 * a * a + b * b
        dtotal += 200.0 * a * (dx[i + 1] - 2.0 * x[i] * dx[i]) - 2.0 * b * dx[i]
    return total, dtotal


def _make_args(rng, n):
    return (rng.uniform(-1.5, 1.5, n),)


def _peer_loss(b, args):
    def loss(x):
        return b.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)

    return loss


WORKLOAD = Workload(
    name="rosenbrock",
    description="loop-form Rosenbrock, grad wrt x",
    primal=rosenbrock,
    adjoint=rosenbrock_adjoint,
    wrt=(0,),
    sizes={"verify": {"n": 1000}, "quick": {"n": 200_000}, "full": {"n": 1_000_000}},
    make_args=_make_args,
    work=lambda n: n,
    peer_loss=_peer_loss,
    peer_note="peers: whole-array slices",
    tangent=rosenbrock_tangent,
)
