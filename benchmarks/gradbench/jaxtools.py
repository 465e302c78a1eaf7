"""JAX versions of the evals, written as a JAX user writes them (whole arrays, ``lax.scan``
for time loops, ``vmap``), several after GradBench's own JAX tool
(``python/gradbench/gradbench/tools/jax``).  ``make(name, args)`` returns the jitted
objective and gradient as zero-argument thunks over device arrays; their results are
converted to NumPy outside the timed call.
"""

# ruff: noqa: E741 - ``l`` is GradBench's name for gmm's lower-triangle parameters

from __future__ import annotations

import math
from collections.abc import Callable
from itertools import permutations

import numpy as np

_jax = None


def _lib():
    global _jax
    if _jax is None:
        import jax

        jax.config.update("jax_enable_x64", True)
        _jax = jax
    return _jax


def available() -> str | None:
    """None if JAX imports, else why not."""
    try:
        _lib()
    except ImportError as exc:
        return f"JAX not installed ({exc.name})"
    return None


def version() -> str:
    return _lib().__version__


def _lse(x):
    jnp = _lib().numpy
    a = jnp.max(x)
    return jnp.log(jnp.sum(jnp.exp(x - a))) + a


def _lse_eval(x):
    return _lse, (x,), (0,)


def _llsq_eval(x, n):
    jnp = _lib().numpy
    t = -1.0 + jnp.arange(n) * 2.0 / (n - 1)
    powers = t[:, None] ** jnp.arange(x.shape[0])[None, :]

    def f(x):
        r = jnp.sign(t) - powers @ x
        return jnp.sum(r * r) / 2.0

    return f, (x,), (0,)


def _ode_eval(x, s):
    jax = _lib()
    jnp = jax.numpy
    h = 2.0 / s

    def f(x):
        def rhs(y):
            return jnp.concatenate([x[:1], x[1:] * y[:-1]])

        def step(y, _):
            k1 = rhs(y)
            k2 = rhs(y + h * k1 / 2.0)
            k3 = rhs(y + h * k2 / 2.0)
            k4 = rhs(y + h * k3)
            return y + h * (k1 + 2.0 * k2 + 2.0 * k3 + k4) / 6.0, None

        y, _ = jax.lax.scan(step, jnp.zeros_like(x), None, length=s)
        return y[-1]

    return f, (x,), (0,)


def _det_eval(A, ell):
    jnp = _lib().numpy
    perms = np.array(list(permutations(range(ell))), dtype=np.int64)
    inv = np.array([sum(p[i] > p[j] for i in range(ell) for j in range(i + 1, ell))
                    for p in perms])
    sign = jnp.asarray(np.where(inv % 2 == 0, 1.0, -1.0))
    idx = jnp.asarray(np.arange(ell)[None, :] * ell + perms)

    def f(A):
        return jnp.sum(sign * jnp.prod(A[idx], axis=1))

    return f, (A,), (0,)


def _kmeans_cost(points, centroids):
    jnp = _lib().numpy
    d2 = (jnp.sum(points ** 2, 1)[:, None] + jnp.sum(centroids ** 2, 1)[None, :]
          - 2.0 * points @ centroids.T)
    return jnp.sum(jnp.min(d2, axis=1))


def _gmm_objective(alpha, mu, q, l, x, gamma, m):
    jax = _lib()
    jnp = jax.numpy
    from jax.scipy.special import logsumexp, multigammaln

    n, d = x.shape
    k = alpha.shape[0]
    qdiag = jnp.exp(q)
    sum_qs = jnp.sum(q, axis=1)
    cols = np.repeat(np.arange(d - 1), np.arange(d - 1, 0, -1))
    rows = np.concatenate([np.arange(c + 1, d) for c in range(d - 1)]) if d > 1 else cols
    Ls = jnp.zeros((k, d, d)).at[:, rows, cols].set(l)
    xc = x[:, None, :] - mu[None, :, :]
    qx = qdiag * xc + jnp.einsum("ijk,mik->mij", Ls, xc)
    inner = alpha + sum_qs - 0.5 * jnp.sum(qx ** 2, axis=2)
    nn = d + m + 1
    prior = (k * (nn * d * jnp.log(gamma / math.sqrt(2.0)) - multigammaln(0.5 * nn, d))
             - jnp.sum(0.5 * gamma * gamma * (jnp.sum(qdiag ** 2, 1) + jnp.sum(l ** 2, 1))
                       - m * sum_qs))
    return (-n * d * 0.5 * math.log(2.0 * math.pi) + jnp.sum(logsumexp(inner, axis=1))
            - n * logsumexp(alpha) + prior)


def _gmm_eval(alpha, mu, q, l, x, gamma, m):
    def f(alpha, mu, q, l):
        return _gmm_objective(alpha, mu, q, l, x, gamma, m)

    return f, (alpha, mu, q, l), (0, 1, 2, 3)


def _lstm_eval(main_params, extra_params, state, sequence):
    jax = _lib()
    jnp = jax.numpy
    layers = main_params.shape[0] // 2
    b = sequence.shape[1]
    sequence, state = jnp.asarray(sequence), jnp.asarray(state)

    def f(main_params, extra_params):
        def step(st, t):
            inp = sequence[t] * extra_params[0]
            new = []
            for lay in range(layers):
                w, bias = main_params[2 * lay], main_params[2 * lay + 1]
                hid, cell = st[2 * lay], st[2 * lay + 1]
                forget = jax.nn.sigmoid(inp * w[:b] + bias[:b])
                ingate = jax.nn.sigmoid(hid * w[b:2 * b] + bias[b:2 * b])
                outgate = jax.nn.sigmoid(inp * w[2 * b:3 * b] + bias[2 * b:3 * b])
                change = jnp.tanh(hid * w[3 * b:] + bias[3 * b:])
                cell = cell * forget + ingate * change
                hid = outgate * jnp.tanh(cell)
                new += [hid, cell]
                inp = hid
            ypred = inp * extra_params[1] + extra_params[2]
            ynorm = ypred - jnp.log(jnp.sum(jnp.exp(ypred)) + 2.0)
            return jnp.stack(new), jnp.sum(sequence[t + 1] * ynorm)

        _, totals = jax.lax.scan(step, state, jnp.arange(sequence.shape[0] - 1))
        return -jnp.sum(totals) / ((sequence.shape[0] - 1) * b)

    return f, (main_params, extra_params), (0, 1)


def _rodrigues(rot, pt):
    jnp = _lib().numpy
    theta = jnp.sqrt(jnp.sum(rot * rot))
    w = rot / theta
    return (pt * jnp.cos(theta) + jnp.cross(w, pt) * jnp.sin(theta)
            + w * jnp.dot(w, pt) * (1.0 - jnp.cos(theta)))


def _ba_residual(cam, X, w, feat):
    jnp = _lib().numpy
    xc = _rodrigues(cam[:3], X - cam[3:6])
    p = xc[:2] / xc[2]
    rsq = jnp.sum(p * p)
    p = p * (1.0 + cam[9] * rsq + cam[10] * rsq * rsq)
    return w * (p * cam[6] + cam[7:9] - feat)


def _ht_residuals(theta, rel, parents, inv, positions, weights, points, corr):
    jax = _lib()
    jnp = jax.numpy
    nb = parents.shape[0]
    pose = jnp.zeros((nb + 3, 3)).at[0].set(theta[:3]).at[1].set(1.0).at[2].set(theta[3:6])
    for f in range(5):
        base = 6 + 4 * f
        pose = pose.at[5 + 4 * f, 0].set(theta[base]).at[5 + 4 * f, 1].set(theta[base + 1])
        pose = pose.at[6 + 4 * f, 0].set(theta[base + 2]).at[7 + 4 * f, 0].set(theta[base + 3])
    absolutes = []
    for bone in range(nb):
        tx, tz, ty = pose[bone + 3]
        cx, sx, cy, sy, cz, sz = (jnp.cos(tx), jnp.sin(tx), jnp.cos(ty), jnp.sin(ty),
                                  jnp.cos(tz), jnp.sin(tz))
        R = jnp.array([[cz * cy, -sz * cx + cz * sy * sx, sz * sx + cz * sy * cx],
                       [sz * cy, cz * cx + sz * sy * sx, -cz * sx + sz * sy * cx],
                       [-sy, cy * sx, cy * cx]])
        tr = jnp.eye(4).at[:3, :3].set(R)
        relb = rel[bone] @ tr
        absolutes.append(relb if parents[bone] == -1 else absolutes[parents[bone]] @ relb)
    T = jnp.stack(absolutes) @ inv
    skinned = jnp.einsum("vb,bik,vk->vi", weights, T[:, :3, :], positions)
    aa = pose[0]
    nrm = jnp.sqrt(jnp.sum(aa * aa))
    x, y, z = aa / nrm
    s, c = jnp.sin(nrm), jnp.cos(nrm)
    Rg = jnp.array([[x * x + (1 - x * x) * c, x * y * (1 - c) - z * s, x * z * (1 - c) + y * s],
                    [x * y * (1 - c) + z * s, y * y + (1 - y * y) * c, y * z * (1 - c) - x * s],
                    [x * z * (1 - c) - y * s, z * y * (1 - c) + x * s, z * z + (1 - z * z) * c]])
    verts = skinned @ Rg.T + pose[2]
    return points - verts[corr]


def _kmeans_make(points, centroids):
    jax = _lib()
    P = jax.numpy.asarray(points)

    def cost(C):
        return _kmeans_cost(P, C)

    @jax.jit
    def jac_hess(C):
        return jax.jvp(jax.grad(cost), (C,), (jax.numpy.ones_like(C),))

    return jax.jit(cost), jac_hess, (jax.numpy.asarray(centroids),)


def _ba_make(cams, X, w, obs, feats):
    jax = _lib()
    jnp = jax.numpy
    c, o = jnp.asarray(cams), jnp.asarray(obs)

    def blocks(cams, X, w):
        cg, xg = cams[o[:, 0]], X[o[:, 1]]
        jc, jx, jw = jax.vmap(jax.jacrev(_ba_residual, argnums=(0, 1, 2)))(
            cg, xg, w, jnp.asarray(feats))
        return jnp.concatenate([jc, jx, jw[:, :, None]], axis=2), -2.0 * w

    def objective(cams, X, w):
        cg, xg = cams[o[:, 0]], X[o[:, 1]]
        return jax.vmap(_ba_residual)(cg, xg, w, jnp.asarray(feats)), 1.0 - w * w

    args = (c, jnp.asarray(X), jnp.asarray(w))
    return jax.jit(objective), jax.jit(blocks), args


def _ht_make(theta, *model):
    jax = _lib()
    consts = tuple(m if m.dtype == np.int64 else jax.numpy.asarray(m) for m in model)

    def f(theta):
        return _ht_residuals(theta, *consts)

    return jax.jit(f), jax.jit(jax.jacfwd(f)), (jax.numpy.asarray(theta),)


def _saddle_f(p1, p2):
    return (p1[0] * p1[0] + p1[1] * p1[1]) - (p2[0] * p2[0] + p2[1] * p2[1])


def _saddle_eval(p1, start):
    """The inner ascent as ``lax.fori_loop`` (eta's doubling a ``where``), ``jax.grad``
    inside ``jax.grad``: reverse over reverse, as GradBench's ``rr``."""
    jax = _lib()
    jnp = jax.numpy
    inner = jax.grad(_saddle_f, argnums=1)
    s = jnp.asarray(start)

    def r1_cost(p1):
        def step(_, carry):
            p2, eta = carry
            p2 = p2 + eta * inner(p1, p2)
            return p2, jnp.where(eta < 0.1, eta * 2.0, eta)

        p2, _ = jax.lax.fori_loop(0, 1000, step, (s, 1e-5))
        return _saddle_f(p1, p2)

    return r1_cost, (p1,), (0,)


#: Euler steps particle's scan runs (the particle crosses the axis after 352 at w=0; the
#: steps after the crossing leave the state as it is)
PARTICLE_STEPS = 1024


def _particle_eval(w):
    """The Euler loop until the particle crosses the x axis as a ``lax.scan`` of a fixed
    length whose steps after the crossing keep the state (``jax.jit`` cannot trace a
    value-dependent ``break``, and ``while_loop`` has no reverse mode); the force is
    ``jax.grad`` of the potential inside: reverse over reverse."""
    jax = _lib()
    jnp = jax.numpy

    def potential(x0, x1, w):
        d1 = jnp.sqrt((x0 - 10.0) ** 2 + (x1 - (10.0 - w)) ** 2)
        d2 = jnp.sqrt((x0 - 10.0) ** 2 + x1 ** 2)
        return 1.0 / d1 + 1.0 / d2

    force = jax.grad(potential, argnums=(0, 1))
    dt = 0.1

    def naive_euler(w):
        def step(state, _):
            x0, x1, v0, v1, done = state
            g0, g1 = force(x0, x1, w)
            stop = done | (x1 + dt * v1 <= 0.0)
            new = (x0 + dt * v0, x1 + dt * v1, v0 - dt * g0, v1 - dt * g1)
            kept = tuple(jnp.where(stop, a, b) for a, b in zip((x0, x1, v0, v1), new,
                                                               strict=True))
            return (*kept, stop), None

        start = (jnp.float64(0.0), jnp.float64(8.0), jnp.float64(0.75), jnp.float64(0.0),
                 jnp.bool_(False))
        (x0, x1, v0, v1, done), _ = jax.lax.scan(step, start, None, length=PARTICLE_STEPS)
        t_f = -x1 / v1
        return jnp.where(done, (x0 + t_f * v0) ** 2, jnp.nan)  # (nan: more steps needed)

    return naive_euler, (w,), (0,)


_GRADIENT_EVALS = {"lse": _lse_eval, "llsq": _llsq_eval, "ode": _ode_eval, "det": _det_eval,
                   "gmm": _gmm_eval, "lstm": _lstm_eval, "saddle": _saddle_eval,
                   "particle": _particle_eval}
_OTHER = {"kmeans": _kmeans_make, "ba": _ba_make, "ht": _ht_make}


def make(name: str, args: tuple) -> tuple[Callable, Callable] | None:
    """(objective thunk, gradient thunk) for eval ``name`` at ``args``, or None if JAX has
    no version of it.  The gradient thunk returns a tuple of NumPy arrays in the layout of
    jitgrad's result; it blocks until the device is done."""
    jax = _lib()
    if name in _GRADIENT_EVALS:
        f, wrt_args, argnums = _GRADIENT_EVALS[name](*args)
        dev = tuple(jax.numpy.asarray(a) for a in wrt_args)
        obj, grad = jax.jit(f), jax.jit(jax.grad(f, argnums=argnums))
    elif name in _OTHER:
        obj, grad, dev = _OTHER[name](*args)
    else:
        return None

    def objective():
        return jax.block_until_ready(obj(*dev))

    def gradient():
        out = jax.block_until_ready(grad(*dev))
        return out if isinstance(out, tuple) else (out,)

    return objective, gradient
