"""Pairwise soft-Coulomb energy sum_{i<j} 1 / sqrt(r_ij^2 + eps) of particles in 3-D."""

from __future__ import annotations

import numpy as np
from numba import njit

from workloads.base import Workload


def pairwise(pos, eps):
    """Double loop over i < j."""
    n = pos.shape[0]
    total = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            dx = pos[i, 0] - pos[j, 0]
            dy = pos[i, 1] - pos[j, 1]
            dz = pos[i, 2] - pos[j, 2]
            total += 1.0 / np.sqrt(dx * dx + dy * dy + dz * dz + eps)
    return total


@njit(cache=True)
def pairwise_adjoint(pos, eps):
    """Single sweep over pairs; particle i's force is kept in registers, j's written."""
    n = pos.shape[0]
    g = np.zeros((n, 3))
    for i in range(n):
        xi, yi, zi = pos[i, 0], pos[i, 1], pos[i, 2]
        gx = gy = gz = 0.0
        for j in range(i + 1, n):
            dx = xi - pos[j, 0]
            dy = yi - pos[j, 1]
            dz = zi - pos[j, 2]
            inv = 1.0 / np.sqrt(dx * dx + dy * dy + dz * dz + eps)
            w = -inv * inv * inv
            gx += w * dx
            gy += w * dy
            gz += w * dz
            g[j, 0] -= w * dx
            g[j, 1] -= w * dy
            g[j, 2] -= w * dz
        g[i, 0] += gx
        g[i, 1] += gy
        g[i, 2] += gz
    return (g,)


@njit(cache=True)
def pairwise_tangent(pos, eps, dpos):
    """The energy and its directional derivative: d(r^-1/2 stuff) = -inv^3 (d . dd)."""
    n = pos.shape[0]
    total = 0.0
    dtotal = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            dx = pos[i, 0] - pos[j, 0]
            dy = pos[i, 1] - pos[j, 1]
            dz = pos[i, 2] - pos[j, 2]
            tx = dpos[i, 0] - dpos[j, 0]
            ty = dpos[i, 1] - dpos[j, 1]
            tz = dpos[i, 2] - dpos[j, 2]
            inv = 1.0 / np.sqrt(dx * dx + dy * dy + dz * dz + eps)
            total += inv
            dtotal -= inv * inv * inv * (dx * tx + dy * ty + dz * tz)
    return total, dtotal


def _make_args(rng, n, eps):
    return (rng.uniform(0.0, 1.0, (n, 3)), eps)


def _peer_loss(b, args):
    n = args[0].shape[0]
    eps = args[1]
    upper = b.const(np.triu(np.ones((n, n)), k=1))

    def loss(pos):
        diff = pos[:, None, :] - pos[None, :, :]
        r2 = b.sum(diff * diff, axis=2)
        return b.sum(upper / b.sqrt(r2 + eps))

    return loss


WORKLOAD = Workload(
    name="pairwise",
    description="pairwise 1/sqrt(r^2+eps) energy, grad wrt positions",
    primal=pairwise,
    adjoint=pairwise_adjoint,
    wrt=(0,),
    sizes={
        "verify": {"n": 60, "eps": 1e-2},
        "quick": {"n": 600, "eps": 1e-2},
        "full": {"n": 2_000, "eps": 1e-2},
    },
    make_args=_make_args,
    work=lambda n, eps: n * n,
    peer_loss=_peer_loss,
    tangent=pairwise_tangent,
    peer_note="peers: dense n x n x 3 broadcast with an upper-triangle mask",
)
