"""PyTorch versions of the evals, written as a PyTorch user writes them: whole float64
tensors on the CPU, one thread, a Python loop for time steps, ``torch.autograd.grad`` for
gradients, several after GradBench's own PyTorch tool
(``python/gradbench/gradbench/tools/pytorch``).  ``make(name, args)`` returns the objective
(under ``torch.no_grad``) and the gradient as zero-argument thunks; the gradient thunk
returns NumPy arrays in the layout of jitgrad's result.
"""

# ruff: noqa: E741 - ``l`` is GradBench's name for gmm's lower-triangle parameters

from __future__ import annotations

import math
from collections.abc import Callable
from itertools import permutations

import numpy as np

_torch = None


def _lib():
    global _torch
    if _torch is None:
        import torch

        torch.set_num_threads(1)
        _torch = torch
    return _torch


def available() -> str | None:
    """None if PyTorch imports, else why not."""
    try:
        _lib()
    except ImportError as exc:
        return f"PyTorch not installed ({exc.name})"
    return None


def version() -> str:
    return _lib().__version__


def _t(a):
    """A NumPy array (or number) as a float64 / int64 tensor sharing its memory."""
    return _lib().from_numpy(np.ascontiguousarray(a))


def _lse(x):
    return _lib().logsumexp(x, 0)


def _llsq(x, n):
    torch = _lib()
    t = -1.0 + torch.arange(n, dtype=torch.float64) * 2.0 / (n - 1)
    powers = t[:, None] ** torch.arange(x.shape[0], dtype=torch.float64)[None, :]
    sign = torch.sign(t)

    def f(x):
        r = sign - powers @ x
        return torch.sum(r * r) / 2.0

    return f, (x,)


def _ode(x, s):
    torch = _lib()
    h = 2.0 / s

    def rhs(x, y):
        return torch.cat([x[:1], x[1:] * y[:-1]])

    def f(x):
        y = torch.zeros_like(x)
        for _ in range(s):
            k1 = rhs(x, y)
            k2 = rhs(x, y + h * k1 / 2.0)
            k3 = rhs(x, y + h * k2 / 2.0)
            k4 = rhs(x, y + h * k3)
            y = y + h * (k1 + 2.0 * k2 + 2.0 * k3 + k4) / 6.0
        return y[-1]

    return f, (x,)


def _det(A, ell):
    torch = _lib()
    perms = np.array(list(permutations(range(ell))), dtype=np.int64)
    inv = np.array([sum(p[i] > p[j] for i in range(ell) for j in range(i + 1, ell))
                    for p in perms])
    sign = _t(np.where(inv % 2 == 0, 1.0, -1.0))
    idx = _t(np.arange(ell)[None, :] * ell + perms)

    def f(A):
        return torch.sum(sign * torch.prod(A[idx], dim=1))

    return f, (A,)


def _gmm(alpha, mu, q, l, x, gamma, m):
    torch = _lib()
    x = _t(x)
    n, d = x.shape
    k = alpha.shape[0]
    cols = np.repeat(np.arange(d - 1), np.arange(d - 1, 0, -1))
    rows = _t(np.concatenate([np.arange(c + 1, d) for c in range(d - 1)]) if d > 1 else cols)
    cols = _t(cols)
    nn = d + m + 1
    log_gamma_d = float(torch.special.multigammaln(torch.tensor(0.5 * nn, dtype=torch.float64), d))
    const = (-n * d * 0.5 * math.log(2.0 * math.pi)
             + k * (nn * d * math.log(gamma / math.sqrt(2.0)) - log_gamma_d))

    def f(alpha, mu, q, l):
        qdiag = torch.exp(q)
        sum_qs = torch.sum(q, 1)
        Ls = torch.zeros((k, d, d), dtype=torch.float64)
        Ls[:, rows, cols] = l
        xc = x[:, None, :] - mu[None, :, :]
        qx = qdiag * xc + torch.einsum("ijk,mik->mij", Ls, xc)
        inner = alpha + sum_qs - 0.5 * torch.sum(qx ** 2, 2)
        prior = torch.sum(0.5 * gamma * gamma * (torch.sum(qdiag ** 2, 1)
                                                 + torch.sum(l ** 2, 1)) - m * sum_qs)
        return (const + torch.sum(torch.logsumexp(inner, 1))
                - n * torch.logsumexp(alpha, 0) - prior)

    return f, (alpha, mu, q, l)


def _lstm(main_params, extra_params, state, sequence):
    torch = _lib()
    layers = main_params.shape[0] // 2
    c, b = sequence.shape
    seq, state = _t(sequence), _t(state)

    def f(main_params, extra_params):
        hid = [state[2 * lay] for lay in range(layers)]
        cell = [state[2 * lay + 1] for lay in range(layers)]
        outputs = []
        for t in range(c - 1):
            inp = seq[t] * extra_params[0]
            for lay in range(layers):
                w, bias = main_params[2 * lay], main_params[2 * lay + 1]
                gates = torch.sigmoid(torch.cat([inp, hid[lay], inp]) * w[:3 * b]
                                      + bias[:3 * b])
                change = torch.tanh(hid[lay] * w[3 * b:] + bias[3 * b:])
                cell[lay] = cell[lay] * gates[:b] + gates[b:2 * b] * change
                hid[lay] = gates[2 * b:] * torch.tanh(cell[lay])
                inp = hid[lay]
            outputs.append(inp)
        ypred = torch.stack(outputs) * extra_params[1] + extra_params[2]
        ynorm = ypred - torch.log(torch.sum(torch.exp(ypred), 1, keepdim=True) + 2.0)
        return -torch.sum(seq[1:] * ynorm) / ((c - 1) * b)

    return f, (main_params, extra_params)


def _ba_residuals(cams, X, w, feats):
    """(p, 2) weighted reprojection errors of the gathered cameras and points."""
    torch = _lib()
    rot, pt = cams[:, :3], X - cams[:, 3:6]
    theta = torch.sqrt(torch.sum(rot * rot, 1, keepdim=True))
    axis = rot / theta
    cos, sin = torch.cos(theta), torch.sin(theta)
    xc = (pt * cos + torch.linalg.cross(axis, pt, dim=1) * sin
          + axis * torch.sum(axis * pt, 1, keepdim=True) * (1.0 - cos))
    p = xc[:, :2] / xc[:, 2:]
    rsq = torch.sum(p * p, 1, keepdim=True)
    p = p * (1.0 + cams[:, 9:10] * rsq + cams[:, 10:11] * rsq * rsq)
    return w[:, None] * (p * cams[:, 6:7] + cams[:, 7:9] - feats)


def _ba_make(cams, X, w, obs, feats):
    """Both rows of every 2 x 15 block from two reverse sweeps over each observation's own
    copy of its camera and point (seed colouring, as jitgrad's version)."""
    torch = _lib()
    cams, X, w, feats, o = _t(cams), _t(X), _t(w), _t(feats), _t(obs)

    def objective():
        with torch.no_grad():
            return _ba_residuals(cams[o[:, 0]], X[o[:, 1]], w, feats), 1.0 - w * w

    def blocks():
        leaves = (cams[o[:, 0]].requires_grad_(), X[o[:, 1]].requires_grad_(),
                  w.clone().requires_grad_())
        r = _ba_residuals(*leaves, feats)
        rows = []
        for comp in (0, 1):
            dc, dx, dw = torch.autograd.grad(r[:, comp].sum(), leaves, retain_graph=comp == 0)
            rows.append(torch.cat([dc, dx, dw[:, None]], 1))
        return torch.stack(rows, 1).numpy(), (-2.0 * w).numpy()

    return objective, blocks


def _euler(tx, ty, tz):
    """(nb, 4, 4) homogeneous transforms Rz(tz) Ry(ty) Rx(tx), one per bone."""
    torch = _lib()
    cx, sx, cy, sy, cz, sz = (torch.cos(tx), torch.sin(tx), torch.cos(ty), torch.sin(ty),
                              torch.cos(tz), torch.sin(tz))
    R = torch.stack([cz * cy, -sz * cx + cz * sy * sx, sz * sx + cz * sy * cx,
                     sz * cy, cz * cx + sz * sy * sx, -cz * sx + sz * sy * cx,
                     -sy, cy * sx, cy * cx], 1).reshape(-1, 3, 3)
    corner = torch.zeros((4, 4), dtype=torch.float64)
    corner[3, 3] = 1.0
    return torch.nn.functional.pad(R, (0, 1, 0, 1)) + corner


def _angle_axis(aa):
    torch = _lib()
    nrm = torch.sqrt(torch.sum(aa * aa))
    x, y, z = aa / nrm
    s, c = torch.sin(nrm), torch.cos(nrm)
    return torch.stack([x * x + (1 - x * x) * c, x * y * (1 - c) - z * s,
                        x * z * (1 - c) + y * s, x * y * (1 - c) + z * s,
                        y * y + (1 - y * y) * c, y * z * (1 - c) - x * s,
                        x * z * (1 - c) - y * s, z * y * (1 - c) + x * s,
                        z * z + (1 - z * z) * c]).reshape(3, 3)


def _pose_index(nb: int, ntheta: int) -> np.ndarray:
    """Where each pose entry comes from in ``[theta, 1, 0]`` (GradBench's to_pose_params)."""
    one, zero = ntheta, ntheta + 1
    idx = np.full((nb + 3, 3), zero)
    idx[0], idx[1], idx[2] = range(3), one, range(3, 6)
    for f in range(5):
        base = 6 + 4 * f
        idx[5 + 4 * f, :2] = base, base + 1
        idx[6 + 4 * f, 0], idx[7 + 4 * f, 0] = base + 2, base + 3
    return idx


def _ht_make(theta, rel, parents, inv, positions, weights, points, corr):
    """The residuals' Jacobian in forward mode (26 columns), vectorised over the seeds."""
    torch = _lib()
    nb = parents.shape[0]
    rel, inv, positions, weights, points = map(_t, (rel, inv, positions, weights, points))
    idx, corr, theta = _t(_pose_index(nb, theta.shape[0])), _t(corr), _t(theta)
    tail = torch.tensor([1.0, 0.0], dtype=torch.float64)

    def f(theta):
        pose = torch.cat([theta, tail])[idx]
        local = rel @ _euler(pose[3:, 0], pose[3:, 2], pose[3:, 1])
        absolutes = []
        for bone in range(nb):
            parent = int(parents[bone])
            absolutes.append(local[bone] if parent == -1
                             else absolutes[parent] @ local[bone])
        T = torch.stack(absolutes) @ inv
        skinned = torch.einsum("vb,bik,vk->vi", weights, T[:, :3, :], positions)
        verts = (skinned * pose[1]) @ _angle_axis(pose[0]).T + pose[2]
        return points - verts[corr]

    def objective():
        with torch.no_grad():
            return f(theta)

    def jacobian():
        return (torch.autograd.functional.jacobian(
            f, theta, vectorize=True, strategy="forward-mode").numpy(),)

    return objective, jacobian


def _kmeans_make(points, centroids):
    """J and the Hessian-vector product with ones (double backward)."""
    torch = _lib()
    P, C = _t(points), _t(centroids).requires_grad_()

    def cost(C):
        d2 = (torch.sum(P ** 2, 1)[:, None] + torch.sum(C ** 2, 1)[None, :]
              - 2.0 * P @ C.T)
        return torch.sum(torch.min(d2, 1).values)

    def objective():
        with torch.no_grad():
            return cost(C)

    def jac_hess():
        (J,) = torch.autograd.grad(cost(C), C, create_graph=True)
        (H,) = torch.autograd.grad(J, C, grad_outputs=torch.ones_like(J))
        return J.detach().numpy(), H.numpy()

    return objective, jac_hess


def _gradient_make(f: Callable, wrt: tuple) -> tuple[Callable, Callable]:
    """Objective and ``torch.autograd.grad`` thunks of a scalar ``f`` of ``wrt``."""
    torch = _lib()
    leaves = tuple(_t(a).requires_grad_() for a in wrt)

    def objective():
        with torch.no_grad():
            return f(*leaves)

    def gradient():
        return tuple(g.numpy() for g in torch.autograd.grad(f(*leaves), leaves))

    return objective, gradient


_GRADIENT_EVALS = {"lse": lambda x: (_lse, (x,)), "llsq": _llsq, "ode": _ode, "det": _det,
                   "gmm": _gmm, "lstm": _lstm}
_OTHER = {"kmeans": _kmeans_make, "ba": _ba_make, "ht": _ht_make}


def make(name: str, args: tuple) -> tuple[Callable, Callable] | None:
    """(objective thunk, gradient thunk) for eval ``name`` at ``args``, or None if PyTorch
    has no version of it."""
    _lib()
    if name in _GRADIENT_EVALS:
        return _gradient_make(*_GRADIENT_EVALS[name](*args))
    if name in _OTHER:
        return _OTHER[name](*args)
    return None
