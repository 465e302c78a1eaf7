"""``jg.grad_and_hvp``: the gradient and the Hessian-vector product from one
forward-over-reverse pass, against closed forms, central differences of the gradient and
``jg.grad`` / ``jg.hvp``; single, tuple and structured ``wrt``; both jit modes."""

import math

import numpy as np
import pytest

import jitgrad as jg

R = np.random.default_rng(34)


def nearest_cost(points, centroids):
    """A piecewise quadratic with a loop-carried min (k-means' cost)."""
    cost = 0.0
    for i in range(points.shape[0]):
        closest = np.inf
        for j in range(centroids.shape[0]):
            dist = 0.0
            for c in range(points.shape[1]):
                diff = points[i, c] - centroids[j, c]
                dist += diff * diff
            if dist < closest:
                closest = dist
        cost += closest
    return cost


def energy(x, a):
    """Overwrites in a loop, a transcendental and a product of the two arguments."""
    y = x.copy()
    s = 0.0
    for i in range(1, x.shape[0]):
        y[i] = math.sin(a * y[i - 1]) + x[i] * x[i]
        s += y[i] * a
    return s + a * a * x[0]


def pair(p):
    """A tuple argument: (w, b)."""
    w, b = p
    return np.sum(np.tanh(w * b) ** 2) + b * b * b


def _fd_grad_dir(f, args, wrts, v, eps=1e-6):
    """Central differences of jg.grad along v (tuple per wrt): H @ v."""
    g = jg.grad(f, wrt=wrts, jit=False)
    hi, lo = list(args), list(args)
    for k, w in enumerate(wrts):
        hi[w] = args[w] + eps * v[k]
        lo[w] = args[w] - eps * v[k]
    gh, gl = g(*hi), g(*lo)
    gh, gl = (gh, gl) if isinstance(gh, tuple) else ((gh,), (gl,))
    return tuple((np.asarray(a) - np.asarray(b)) / (2 * eps) for a, b in zip(gh, gl, strict=True))


def _fd_grad(f, args, w, eps=1e-6):
    x = np.asarray(args[w], dtype=float)
    out = np.zeros(np.shape(x))
    for j in range(out.size):
        e = np.zeros(np.shape(x))
        e.flat[j] = eps
        hi, lo = list(args), list(args)
        hi[w] = x + e if np.ndim(x) else float(x + eps)
        lo[w] = x - e if np.ndim(x) else float(x - eps)
        out.flat[j] = (f(*hi) - f(*lo)) / (2 * eps)
    return out if np.ndim(x) else float(out)


@pytest.mark.parametrize("jit", [False, True])
def test_single_wrt_matches_grad_hvp_and_differences(jit):
    P, C = R.normal(size=(12, 3)), R.normal(size=(4, 3))
    v = R.normal(size=C.shape)
    g, hv = jg.grad_and_hvp(nearest_cost, (P, C), v, wrt=1, jit=jit)
    np.testing.assert_allclose(g, _fd_grad(nearest_cost, (P, C), 1), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(g, jg.grad(nearest_cost, wrt=1, jit=jit)(P, C), rtol=1e-13)
    np.testing.assert_allclose(hv, jg.hvp(nearest_cost, (P, C), v, wrt=1, jit=jit),
                               rtol=1e-13)
    # H is diagonal: 2 * (points nearest centroid j) on each of j's coordinates
    near = np.argmin(((P[:, None, :] - C[None]) ** 2).sum(-1), axis=1)
    counts = np.bincount(near, minlength=C.shape[0])[:, None]
    np.testing.assert_allclose(hv, 2.0 * counts * v, rtol=1e-12)


@pytest.mark.parametrize("jit", [False, True])
def test_tuple_wrt_against_central_differences(jit):
    x, a = R.normal(size=5), 0.8
    v = (R.normal(size=5), 0.3)
    g, hv = jg.grad_and_hvp(energy, (x, a), v, wrt=(0, 1), jit=jit)
    assert isinstance(g, tuple) and isinstance(hv, tuple) and len(g) == len(hv) == 2
    np.testing.assert_allclose(g[0], _fd_grad(energy, (x, a), 0), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(g[1], _fd_grad(energy, (x, a), 1), rtol=1e-6, atol=1e-7)
    fd = _fd_grad_dir(energy, (x, a), (0, 1), v)
    np.testing.assert_allclose(hv[0], fd[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(hv[1], fd[1], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("jit", [False, True])
def test_structured_argument_keeps_its_structure(jit):
    w, b = R.normal(size=4), 0.6
    vw, vb = R.normal(size=4), -0.4
    g, hv = jg.grad_and_hvp(pair, ((w, b),), (vw, vb), jit=jit)
    ref_g = jg.grad(pair, jit=jit)((w, b))
    ref_hv = jg.hvp(pair, ((w, b),), (vw, vb), jit=jit)
    assert isinstance(g, tuple) and isinstance(hv, tuple)
    np.testing.assert_allclose(g[0], ref_g[0], rtol=1e-13)
    np.testing.assert_allclose(g[1], ref_g[1], rtol=1e-13)
    np.testing.assert_allclose(hv[0], ref_hv[0], rtol=1e-13)
    np.testing.assert_allclose(hv[1], ref_hv[1], rtol=1e-13)
    # closed form of d/db: sum(2 tanh(wb) sech^2(wb) w) + 3 b^2
    t = np.tanh(w * b)
    np.testing.assert_allclose(g[1], np.sum(2 * t * (1 - t * t) * w) + 3 * b * b, rtol=1e-12)


def test_refuses_non_scalar_output():
    with pytest.raises(ValueError, match="scalar output"):
        jg.grad_and_hvp(doubled, (np.ones(3),), np.ones(3), jit=False)


def doubled(x):
    return x * 2.0
