"""1-D explicit heat equation with fixed (Dirichlet) ends.

Two buffers with element writes and a swap; loss = sum of the squared final
field; gradient w.r.t. the initial field and the diffusivity.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from workloads.base import Workload


def heat(u0, alpha, nsteps):
    """Explicit FTCS steps ``v[i] = u[i] + alpha * (u[i-1] - 2 u[i] + u[i+1])``."""
    n = u0.shape[0]
    u = u0.copy()
    v = u0.copy()
    for _ in range(nsteps):
        for i in range(1, n - 1):
            v[i] = u[i] + alpha * (u[i - 1] - 2.0 * u[i] + u[i + 1])
        u, v = v, u
    total = 0.0
    for i in range(n):
        total += u[i] * u[i]
    return total


@njit(cache=True)
def heat_adjoint(u0, alpha, nsteps):
    """Forward sweep writes each step straight into the stored trajectory (the only
    thing the alpha-gradient needs); the reverse sweep applies the transposed stencil
    and accumulates <v_bar, laplacian(u)> in the same pass."""
    n = u0.shape[0]
    traj = np.empty((nsteps + 1, n))
    traj[0] = u0
    for t in range(nsteps):
        u = traj[t]
        v = traj[t + 1]
        v[0] = u0[0]
        v[n - 1] = u0[n - 1]
        for i in range(1, n - 1):
            v[i] = u[i] + alpha * (u[i - 1] - 2.0 * u[i] + u[i + 1])

    vb = 2.0 * traj[nsteps]
    ub = np.empty(n)
    alpha_bar = 0.0
    for t in range(nsteps - 1, -1, -1):
        u = traj[t]
        b_first, b_last = vb[0], vb[n - 1]
        vb[0] = 0.0  # boundary entries of v are copies, not stencil outputs
        vb[n - 1] = 0.0
        for j in range(1, n - 1):
            ub[j] = vb[j] + alpha * (vb[j - 1] - 2.0 * vb[j] + vb[j + 1])
            alpha_bar += vb[j] * (u[j - 1] - 2.0 * u[j] + u[j + 1])
        ub[0] = b_first + alpha * vb[1]
        ub[n - 1] = b_last + alpha * vb[n - 2]
        ub, vb = vb, ub
    return vb, alpha_bar


@njit(cache=True)
def heat_tangent(u0, alpha, nsteps, du0, dalpha):
    """One fused sweep: each step updates the field and its tangent together."""
    n = u0.shape[0]
    u = u0.copy()
    v = u0.copy()
    ud = du0.copy()
    vd = du0.copy()
    for _ in range(nsteps):
        for i in range(1, n - 1):
            lap = u[i - 1] - 2.0 * u[i] + u[i + 1]
            vd[i] = ud[i] + dalpha * lap + alpha * (ud[i - 1] - 2.0 * ud[i] + ud[i + 1])
            v[i] = u[i] + alpha * lap
        u, v = v, u
        ud, vd = vd, ud
    total = 0.0
    dtotal = 0.0
    for i in range(n):
        total += u[i] * u[i]
        dtotal += 2.0 * u[i] * ud[i]
    return total, dtotal


def _make_args(rng, n, nsteps):
    return (rng.uniform(0.0, 1.0, n), 0.25, nsteps)


def _peer_loss(b, args):
    nsteps = args[2]

    def loss(u0, alpha):
        def step(u):
            inner = u[1:-1] + alpha * (u[:-2] - 2.0 * u[1:-1] + u[2:])
            return b.cat((u[:1], inner, u[-1:]))

        u = b.loop(step, u0, nsteps)
        return b.sum(u * u)

    return loss


WORKLOAD = Workload(
    name="heat",
    description="1-D heat FTCS, grad wrt u0, alpha",
    primal=heat,
    adjoint=heat_adjoint,
    wrt=(0, 1),
    sizes={
        "verify": {"n": 50, "nsteps": 60},
        "quick": {"n": 1_000, "nsteps": 500},
        "full": {"n": 2_000, "nsteps": 2_000},
    },
    make_args=_make_args,
    work=lambda n, nsteps: n * nsteps,
    peer_loss=_peer_loss,
    peer_note="peers: vectorised stencil per step; lax.scan (JAX), Python loop (torch, autograd)",
    tangent=heat_tangent,
)
