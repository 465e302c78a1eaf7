"""Extra first-call cases for ``first_call.py``: real-kernel shapes the six workloads lack.
Helpers are ``@njit`` functions, as in the user's own Numba code (jitgrad inlines them).

Each case is a module-level function in Numba style (jitgrad reads its source), a
maker of small arguments, its ``wrt``, and a JAX version of the same loss written as a
JAX user would (vectorised where that is natural) for JAX's first ``jit(grad)`` call.
"""

from __future__ import annotations

import numpy as np
from numba import njit


def filterbank(x, w):
    """Sum of squared correlations of a batch of images with a bank of filters: 7 loops."""
    nb = x.shape[0]
    nc = x.shape[1]
    nf = w.shape[0]
    kh = w.shape[2]
    kw = w.shape[3]
    ho = x.shape[2] - kh + 1
    wo = x.shape[3] - kw + 1
    total = 0.0
    for b in range(nb):
        for f in range(nf):
            for i in range(ho):
                for j in range(wo):
                    acc = 0.0
                    for c in range(nc):
                        for u in range(kh):
                            for v in range(kw):
                                acc += x[b, c, i + u, j + v] * w[f, c, u, v]
                    total += acc * acc
    return total


def filterbank_args(rng):
    return rng.standard_normal((2, 3, 10, 10)), rng.standard_normal((4, 3, 3, 3))


def filterbank_jax(jnp, x, w):
    kh, kw = w.shape[2], w.shape[3]
    ho, wo = x.shape[2] - kh + 1, x.shape[3] - kw + 1
    acc = 0.0
    for u in range(kh):
        for v in range(kw):
            acc = acc + jnp.einsum("bchw,fc->bfhw", x[:, :, u:u + ho, v:v + wo], w[:, :, u, v])
    return jnp.sum(acc * acc)


@njit
def gru_cell(h, x, Wz, Uz, Wr, Ur, Wh, Uh, b):
    """One GRU step (hidden state ``h``, input ``x``)."""
    z = 1.0 / (1.0 + np.exp(-(Wz @ x + Uz @ h + b[0])))
    r = 1.0 / (1.0 + np.exp(-(Wr @ x + Ur @ h + b[1])))
    c = np.tanh(Wh @ x + Uh @ (r * h) + b[2])
    return (1.0 - z) * h + z * c


def gru20(xs, h0, Wz, Uz, Wr, Ur, Wh, Uh, b):
    """A GRU unrolled over 20 steps, loss = sum of squares of the last state."""
    h = h0
    h = gru_cell(h, xs[0], Wz, Uz, Wr, Ur, Wh, Uh, b)
    h = gru_cell(h, xs[1], Wz, Uz, Wr, Ur, Wh, Uh, b)
    h = gru_cell(h, xs[2], Wz, Uz, Wr, Ur, Wh, Uh, b)
    h = gru_cell(h, xs[3], Wz, Uz, Wr, Ur, Wh, Uh, b)
    h = gru_cell(h, xs[4], Wz, Uz, Wr, Ur, Wh, Uh, b)
    h = gru_cell(h, xs[5], Wz, Uz, Wr, Ur, Wh, Uh, b)
    h = gru_cell(h, xs[6], Wz, Uz, Wr, Ur, Wh, Uh, b)
    h = gru_cell(h, xs[7], Wz, Uz, Wr, Ur, Wh, Uh, b)
    h = gru_cell(h, xs[8], Wz, Uz, Wr, Ur, Wh, Uh, b)
    h = gru_cell(h, xs[9], Wz, Uz, Wr, Ur, Wh, Uh, b)
    h = gru_cell(h, xs[10], Wz, Uz, Wr, Ur, Wh, Uh, b)
    h = gru_cell(h, xs[11], Wz, Uz, Wr, Ur, Wh, Uh, b)
    h = gru_cell(h, xs[12], Wz, Uz, Wr, Ur, Wh, Uh, b)
    h = gru_cell(h, xs[13], Wz, Uz, Wr, Ur, Wh, Uh, b)
    h = gru_cell(h, xs[14], Wz, Uz, Wr, Ur, Wh, Uh, b)
    h = gru_cell(h, xs[15], Wz, Uz, Wr, Ur, Wh, Uh, b)
    h = gru_cell(h, xs[16], Wz, Uz, Wr, Ur, Wh, Uh, b)
    h = gru_cell(h, xs[17], Wz, Uz, Wr, Ur, Wh, Uh, b)
    h = gru_cell(h, xs[18], Wz, Uz, Wr, Ur, Wh, Uh, b)
    h = gru_cell(h, xs[19], Wz, Uz, Wr, Ur, Wh, Uh, b)
    return np.sum(h * h)


def gru20_args(rng):
    nh, nx = 8, 4
    xs = rng.standard_normal((20, nx))
    mats = [rng.standard_normal(s) / 3 for s in ((nh, nx), (nh, nh)) * 3]
    return (xs, 0.1 * rng.standard_normal(nh), *mats, 0.1 * rng.standard_normal((3, nh)))


def gru20_jax(jnp, xs, h0, Wz, Uz, Wr, Ur, Wh, Uh, b):
    h = h0
    for k in range(20):
        x = xs[k]
        z = 1.0 / (1.0 + jnp.exp(-(Wz @ x + Uz @ h + b[0])))
        r = 1.0 / (1.0 + jnp.exp(-(Wr @ x + Ur @ h + b[1])))
        c = jnp.tanh(Wh @ x + Uh @ (r * h) + b[2])
        h = (1.0 - z) * h + z * c
    return jnp.sum(h * h)


@njit
def eos_rho(s, t, p):
    """Density from a 48-term rational equation of state (24 + 24 terms)."""
    num = (1.000000e+03 + 7.944276e-02 * p + 5.513714e-02 * t - 5.495856e-02 * s
           - 3.996674e-03 * p * p + 7.471069e-03 * t * p - 9.894694e-03 * t * t
           + 6.424568e-03 * s * p + 5.941389e-03 * s * t - 6.413009e-04 * s * s
           - 3.939351e-04 * p * p * p - 4.431488e-04 * t * p * p
           - 4.902608e-04 * t * t * p - 1.098474e-04 * t * t * t
           + 9.096518e-06 * s * p * p + 1.069947e-04 * s * t * p
           + 9.910006e-04 * s * t * t + 5.853238e-04 * s * s * p
           + 2.443585e-04 * s * s * t + 9.779203e-04 * s * s * s
           - 5.693826e-05 * t * p * p * p - 6.795759e-05 * t * t * p * p
           + 2.250792e-05 * t * t * t * p - 9.121160e-05 * s * p * p * p)
    den = (1.000000e+00 + 2.977764e-03 * p - 6.758795e-03 * t + 8.343355e-02 * s
           + 2.584525e-03 * p * p + 2.823529e-04 * t * p - 6.253129e-05 * t * t
           - 5.049702e-03 * s * p - 9.764119e-03 * s * t - 6.151957e-03 * s * s
           + 3.840642e-04 * p * p * p - 5.987866e-04 * t * p * p
           - 2.609274e-04 * t * t * p - 9.925315e-04 * t * t * t
           + 6.600955e-04 * s * p * p - 6.910778e-04 * s * t * p
           - 4.648014e-04 * s * t * t + 7.606643e-04 * s * s * p
           + 1.958162e-05 * s * s * t + 6.943005e-04 * s * s * s
           + 2.794343e-05 * t * p * p * p + 4.835419e-05 * t * t * p * p
           - 8.170088e-05 * t * t * t * p + 8.228764e-06 * s * p * p * p)
    return num / den


def eos48(S, T, P):
    """Mean density of a column of water from ``eos_rho`` at each point."""
    total = 0.0
    for i in range(S.shape[0]):
        total += eos_rho(S[i], T[i], P[i])
    return total / S.shape[0]


def eos48_args(rng):
    n = 64
    return (35.0 + rng.standard_normal(n), 10.0 + 5.0 * rng.standard_normal(n),
            100.0 * rng.uniform(0.0, 1.0, n))


def eos48_jax(jnp, S, T, P):
    return jnp.mean(eos_rho.py_func(S, T, P))


def rk4_small(p, y0, dt, nsteps):
    """Lorenz RK4 on a 3-vector state built with np.array at every stage."""
    y = y0.copy()
    total = 0.0
    for _ in range(nsteps):
        k1 = np.array([p[0] * (y[1] - y[0]), y[0] * (p[1] - y[2]) - y[1],
                       y[0] * y[1] - p[2] * y[2]])
        a = y + 0.5 * dt * k1
        k2 = np.array([p[0] * (a[1] - a[0]), a[0] * (p[1] - a[2]) - a[1],
                       a[0] * a[1] - p[2] * a[2]])
        b = y + 0.5 * dt * k2
        k3 = np.array([p[0] * (b[1] - b[0]), b[0] * (p[1] - b[2]) - b[1],
                       b[0] * b[1] - p[2] * b[2]])
        c = y + dt * k3
        k4 = np.array([p[0] * (c[1] - c[0]), c[0] * (p[1] - c[2]) - c[1],
                       c[0] * c[1] - p[2] * c[2]])
        y = y + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        total += np.sum(y * y)
    return total


def rk4_small_args(rng):
    return np.array([10.0, 28.0, 8.0 / 3.0]), np.array([1.0, 1.0, 1.0]), 0.01, 50


def rk4_small_jax(jnp, p, y0, dt=0.01, nsteps=50):
    import jax

    def rhs(y):
        return jnp.stack([p[0] * (y[1] - y[0]), y[0] * (p[1] - y[2]) - y[1],
                          y[0] * y[1] - p[2] * y[2]])

    def step(carry, _):
        y, total = carry
        k1 = rhs(y)
        k2 = rhs(y + 0.5 * dt * k1)
        k3 = rhs(y + 0.5 * dt * k2)
        k4 = rhs(y + dt * k3)
        y = y + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        return (y, total + jnp.sum(y * y)), None

    return jax.lax.scan(step, (y0, 0.0), None, length=nsteps)[0][1]


#: name -> (function, argument maker, wrt, JAX loss of the wrt arguments then the rest)
CASES = {
    "filterbank7": (filterbank, filterbank_args, (0, 1), filterbank_jax),
    "gru20": (gru20, gru20_args, (1, 2, 3, 4, 5, 6, 7, 8), gru20_jax),
    "eos48": (eos48, eos48_args, (0, 1), eos48_jax),
    "rk4_small": (rk4_small, rk4_small_args, (0, 1), rk4_small_jax),
}
