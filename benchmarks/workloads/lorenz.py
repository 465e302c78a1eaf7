"""Lorenz-63 system integrated with classical RK4.

Loss: sum over the trajectory of |state|^2; gradient w.r.t. sigma, rho, beta and
the 3-vector initial state.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from workloads.base import Workload


def lorenz(sigma, rho, beta, s0, dt, nsteps):
    """RK4 trajectory of the Lorenz system in scalar Numba style."""
    x = s0[0]
    y = s0[1]
    z = s0[2]
    h2 = 0.5 * dt
    h6 = dt / 6.0
    total = 0.0
    for _ in range(nsteps):
        k1x = sigma * (y - x)
        k1y = x * (rho - z) - y
        k1z = x * y - beta * z
        x2 = x + h2 * k1x
        y2 = y + h2 * k1y
        z2 = z + h2 * k1z
        k2x = sigma * (y2 - x2)
        k2y = x2 * (rho - z2) - y2
        k2z = x2 * y2 - beta * z2
        x3 = x + h2 * k2x
        y3 = y + h2 * k2y
        z3 = z + h2 * k2z
        k3x = sigma * (y3 - x3)
        k3y = x3 * (rho - z3) - y3
        k3z = x3 * y3 - beta * z3
        x4 = x + dt * k3x
        y4 = y + dt * k3y
        z4 = z + dt * k3z
        k4x = sigma * (y4 - x4)
        k4y = x4 * (rho - z4) - y4
        k4z = x4 * y4 - beta * z4
        x = x + h6 * (k1x + 2.0 * k2x + 2.0 * k3x + k4x)
        y = y + h6 * (k1y + 2.0 * k2y + 2.0 * k3y + k4y)
        z = z + h6 * (k1z + 2.0 * k2z + 2.0 * k3z + k4z)
        total += x * x + y * y + z * z
    return total


@njit(inline="always")
def _rhs(x, y, z, sigma, rho, beta):
    return sigma * (y - x), x * (rho - z) - y, x * y - beta * z


@njit(inline="always")
def _rhs_vjp(x, y, z, sigma, rho, beta, a, b, c):
    """Cotangent (a, b, c) of the right-hand side pulled back to (x, y, z, sigma, rho, beta)."""
    return (
        -sigma * a + (rho - z) * b + y * c,
        sigma * a - b + x * c,
        -x * b - beta * c,
        (y - x) * a,
        x * b,
        -z * c,
    )


@njit(cache=True)
def lorenz_adjoint(sigma, rho, beta, s0, dt, nsteps):
    """Forward sweep stores only the state per step; reverse sweep recomputes the RK4
    stages of one step from it and back-propagates through them."""
    traj = np.empty((nsteps + 1, 3))
    traj[0, 0], traj[0, 1], traj[0, 2] = s0[0], s0[1], s0[2]
    h2, h6 = 0.5 * dt, dt / 6.0
    x, y, z = s0[0], s0[1], s0[2]
    for t in range(nsteps):
        k1x, k1y, k1z = _rhs(x, y, z, sigma, rho, beta)
        k2x, k2y, k2z = _rhs(x + h2 * k1x, y + h2 * k1y, z + h2 * k1z, sigma, rho, beta)
        k3x, k3y, k3z = _rhs(x + h2 * k2x, y + h2 * k2y, z + h2 * k2z, sigma, rho, beta)
        k4x, k4y, k4z = _rhs(x + dt * k3x, y + dt * k3y, z + dt * k3z, sigma, rho, beta)
        x += h6 * (k1x + 2.0 * k2x + 2.0 * k3x + k4x)
        y += h6 * (k1y + 2.0 * k2y + 2.0 * k3y + k4y)
        z += h6 * (k1z + 2.0 * k2z + 2.0 * k3z + k4z)
        traj[t + 1, 0], traj[t + 1, 1], traj[t + 1, 2] = x, y, z

    gx = gy = gz = 0.0  # adjoint of the state after the current step
    gs = gr = gb = 0.0
    for t in range(nsteps - 1, -1, -1):
        gx += 2.0 * traj[t + 1, 0]
        gy += 2.0 * traj[t + 1, 1]
        gz += 2.0 * traj[t + 1, 2]
        x, y, z = traj[t, 0], traj[t, 1], traj[t, 2]
        k1x, k1y, k1z = _rhs(x, y, z, sigma, rho, beta)
        x2, y2, z2 = x + h2 * k1x, y + h2 * k1y, z + h2 * k1z
        k2x, k2y, k2z = _rhs(x2, y2, z2, sigma, rho, beta)
        x3, y3, z3 = x + h2 * k2x, y + h2 * k2y, z + h2 * k2z
        k3x, k3y, k3z = _rhs(x3, y3, z3, sigma, rho, beta)
        x4, y4, z4 = x + dt * k3x, y + dt * k3y, z + dt * k3z
        # k4 stage
        a, b, c = h6 * gx, h6 * gy, h6 * gz
        dx, dy, dz, ds, dr, db = _rhs_vjp(x4, y4, z4, sigma, rho, beta, a, b, c)
        gs, gr, gb = gs + ds, gr + dr, gb + db
        sx, sy, sz = dx, dy, dz
        # k3 stage: cotangent 2*h6*g plus dt * (pullback of x4)
        a, b, c = 2.0 * h6 * gx + dt * dx, 2.0 * h6 * gy + dt * dy, 2.0 * h6 * gz + dt * dz
        dx, dy, dz, ds, dr, db = _rhs_vjp(x3, y3, z3, sigma, rho, beta, a, b, c)
        gs, gr, gb = gs + ds, gr + dr, gb + db
        sx, sy, sz = sx + dx, sy + dy, sz + dz
        # k2 stage
        a, b, c = 2.0 * h6 * gx + h2 * dx, 2.0 * h6 * gy + h2 * dy, 2.0 * h6 * gz + h2 * dz
        dx, dy, dz, ds, dr, db = _rhs_vjp(x2, y2, z2, sigma, rho, beta, a, b, c)
        gs, gr, gb = gs + ds, gr + dr, gb + db
        sx, sy, sz = sx + dx, sy + dy, sz + dz
        # k1 stage
        a, b, c = h6 * gx + h2 * dx, h6 * gy + h2 * dy, h6 * gz + h2 * dz
        dx, dy, dz, ds, dr, db = _rhs_vjp(x, y, z, sigma, rho, beta, a, b, c)
        gs, gr, gb = gs + ds, gr + dr, gb + db
        gx, gy, gz = gx + sx + dx, gy + sy + dy, gz + sz + dz
    g0 = np.empty(3)
    g0[0], g0[1], g0[2] = gx, gy, gz
    return gs, gr, gb, g0


@njit(cache=True, inline="always")
def _rhs_tangent(x, y, z, tx, ty, tz, sigma, rho, beta, ts, tr, tb):
    """The Lorenz field at (x, y, z) and its tangent (parameter tangents ts, tr, tb)."""
    fx = sigma * (y - x)
    fy = x * (rho - z) - y
    fz = x * y - beta * z
    gx = ts * (y - x) + sigma * (ty - tx)
    gy = tx * (rho - z) + x * (tr - tz) - ty
    gz = tx * y + x * ty - tb * z - beta * tz
    return fx, fy, fz, gx, gy, gz


@njit(cache=True)
def lorenz_tangent(sigma, rho, beta, s0, dt, nsteps, ts, tr, tb, ds0):
    """RK4 with the tangent of every stage beside it (the expert's forward mode)."""
    x, y, z = s0[0], s0[1], s0[2]
    tx, ty, tz = ds0[0], ds0[1], ds0[2]
    h2 = 0.5 * dt
    h6 = dt / 6.0
    total = 0.0
    dtotal = 0.0
    for _ in range(nsteps):
        k1x, k1y, k1z, l1x, l1y, l1z = _rhs_tangent(x, y, z, tx, ty, tz, sigma, rho, beta,
                                                    ts, tr, tb)
        k2x, k2y, k2z, l2x, l2y, l2z = _rhs_tangent(
            x + h2 * k1x, y + h2 * k1y, z + h2 * k1z, tx + h2 * l1x, ty + h2 * l1y,
            tz + h2 * l1z, sigma, rho, beta, ts, tr, tb)
        k3x, k3y, k3z, l3x, l3y, l3z = _rhs_tangent(
            x + h2 * k2x, y + h2 * k2y, z + h2 * k2z, tx + h2 * l2x, ty + h2 * l2y,
            tz + h2 * l2z, sigma, rho, beta, ts, tr, tb)
        k4x, k4y, k4z, l4x, l4y, l4z = _rhs_tangent(
            x + dt * k3x, y + dt * k3y, z + dt * k3z, tx + dt * l3x, ty + dt * l3y,
            tz + dt * l3z, sigma, rho, beta, ts, tr, tb)
        x = x + h6 * (k1x + 2.0 * k2x + 2.0 * k3x + k4x)
        y = y + h6 * (k1y + 2.0 * k2y + 2.0 * k3y + k4y)
        z = z + h6 * (k1z + 2.0 * k2z + 2.0 * k3z + k4z)
        tx = tx + h6 * (l1x + 2.0 * l2x + 2.0 * l3x + l4x)
        ty = ty + h6 * (l1y + 2.0 * l2y + 2.0 * l3y + l4y)
        tz = tz + h6 * (l1z + 2.0 * l2z + 2.0 * l3z + l4z)
        total += x * x + y * y + z * z
        dtotal += 2.0 * (x * tx + y * ty + z * tz)
    return total, dtotal


def _make_args(rng, nsteps, dt):
    s0 = np.array([1.0, 1.0, 1.05]) + 0.01 * rng.standard_normal(3)
    return (10.0, 28.0, 8.0 / 3.0, s0, dt, nsteps)


def _peer_loss(b, args):
    dt, nsteps = args[4], args[5]

    def rhs(s, sigma, rho, beta):
        x, y, z = s[0], s[1], s[2]
        return b.stack((sigma * (y - x), x * (rho - z) - y, x * y - beta * z))

    def loss(sigma, rho, beta, s0):
        def step(carry):
            s, total = carry
            k1 = rhs(s, sigma, rho, beta)
            k2 = rhs(s + 0.5 * dt * k1, sigma, rho, beta)
            k3 = rhs(s + 0.5 * dt * k2, sigma, rho, beta)
            k4 = rhs(s + dt * k3, sigma, rho, beta)
            s = s + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
            return s, total + b.sum(s * s)

        return b.loop(step, (s0, b.zero()), nsteps)[1]

    return loss


WORKLOAD = Workload(
    name="lorenz",
    description="Lorenz RK4, grad wrt sigma, rho, beta, s0",
    primal=lorenz,
    adjoint=lorenz_adjoint,
    wrt=(0, 1, 2, 3),
    sizes={
        "verify": {"nsteps": 200, "dt": 0.01},
        "quick": {"nsteps": 2_000, "dt": 0.01},
        "full": {"nsteps": 20_000, "dt": 0.01},
    },
    make_args=_make_args,
    work=lambda nsteps, dt: nsteps,
    peer_loss=_peer_loss,
    peer_note="peers: per-step 3-vector ops; lax.scan (JAX), Python loop (torch, autograd)",
    tangent=lorenz_tangent,
)
