"""Central-difference references the gradients are checked against at small sizes."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from benchmarks.gradbench import ba as ba_mod


def _with(args: tuple, pos: int, value) -> tuple:
    return args[:pos] + (value,) + args[pos + 1:]


def fd_grad(f: Callable, args: tuple, wrt: Sequence[int], eps: float = 1e-6) -> tuple:
    """Every entry of the gradient of scalar f w.r.t. the arguments ``wrt``."""
    out = []
    for a in wrt:
        base = np.asarray(args[a], dtype=np.float64)
        g = np.empty(base.shape)
        for i in range(base.size):
            h = eps * max(1.0, abs(base.flat[i]))
            plus, minus = base.copy(), base.copy()
            plus.flat[i] += h
            minus.flat[i] -= h
            if base.ndim == 0:  # a scalar argument stays a float
                plus, minus = float(plus), float(minus)
            g.flat[i] = (f(*_with(args, a, plus)) - f(*_with(args, a, minus))) / (2.0 * h)
        out.append(g)
    return tuple(out)


def fd_jacobian(f: Callable, args: tuple, wrt: int, eps: float = 1e-6) -> np.ndarray:
    """Jacobian of array-valued f w.r.t. 1-d argument ``wrt``: shape out.shape + (n,)."""
    base = np.asarray(args[wrt], dtype=np.float64)
    cols = []
    for j in range(base.size):
        plus, minus = base.copy(), base.copy()
        plus[j] += eps
        minus[j] -= eps
        cols.append((f(*_with(args, wrt, plus)) - f(*_with(args, wrt, minus))) / (2 * eps))
    return np.stack(cols, axis=-1)


def kmeans_fd(cost: Callable, points: np.ndarray, centroids: np.ndarray) -> tuple:
    """(J, diag H) of the k-means cost: central first and second differences (the cost
    is quadratic between reassignments, so the second difference is exact there)."""
    (J,) = fd_grad(cost, (points, centroids), (1,))
    H = np.empty(centroids.shape)
    c0 = cost(points, centroids)
    h = 1e-4
    for i in range(centroids.size):
        plus, minus = centroids.copy(), centroids.copy()
        plus.flat[i] += h
        minus.flat[i] -= h
        H.flat[i] = (cost(points, plus) - 2.0 * c0 + cost(points, minus)) / (h * h)
    return J, H


def ba_fd(cams, X, w, obs, feats, eps: float = 1e-6) -> tuple:
    """The (p, 2, 15) blocks by central differences, all observations at once (each
    residual pair depends only on its own gathered row)."""
    cg, xg = ba_mod.gather(cams, X, obs)
    p = obs.shape[0]
    J = np.empty((p, 2, 15))

    def residuals(C, XX, W):
        r = np.empty((p, 2))
        for i in range(p):
            u, v = ba_mod.project(C[i], XX[i])
            r[i] = W[i] * (u - feats[i, 0]), W[i] * (v - feats[i, 1])
        return r

    for c in range(15):
        shifted = []
        for s in (eps, -eps):
            C, XX, W = cg.copy(), xg.copy(), w.copy()
            if c < 11:
                C[:, c] += s
            elif c < 14:
                XX[:, c - 11] += s
            else:
                W += s
            shifted.append(residuals(C, XX, W))
        J[:, :, c] = (shifted[0] - shifted[1]) / (2 * eps)
    return J, -2.0 * w
