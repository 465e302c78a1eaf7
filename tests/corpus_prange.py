"""numba.prange loops (user-style code), compiled with parallel=True: the generated sweeps
keep prange where the iterations are independent (jitgrad/transpiler/backend/prange.py)."""

import math

import numba
import numpy as np
from numba import prange


@numba.njit(parallel=True)
def reduction(x, k):
    s = 0.0
    for i in prange(x.shape[0]):
        s += k * math.sin(x[i])
    return s


@numba.njit(parallel=True)
def elementwise(x, w):
    out = np.zeros(x.shape[0])
    for i in numba.prange(x.shape[0]):
        out[i] = w * x[i] * x[i] + math.cos(x[i])
    return np.sum(out * out)


@numba.njit(parallel=True)
def stencil(x, k):
    n = x.shape[0]
    out = np.zeros(n)
    for i in prange(1, n - 1):
        out[i] = x[i - 1] * x[i + 1] + k * math.sin(x[i])
    return np.sum(out * out)


@numba.njit(parallel=True)
def inner_loop(x, k):
    s = 0.0
    for i in prange(x.shape[0]):
        v = x[i]
        for t in range(3):
            v = math.sin(v * k) + 0.5 * v
        s += v * v
    return s


@numba.njit(parallel=True)
def nested_2d(a, w):
    m, n = a.shape
    out = np.zeros((m, n))
    for i in prange(m):
        for j in range(n):
            out[i, j] = a[i, j] * w[j] + math.tanh(a[i, j])
    return np.sum(out * out)


@numba.njit(parallel=True)
def product(x, k):
    p = 1.0
    for i in prange(x.shape[0]):
        p *= 1.0 + k * x[i] * x[i]
    return p


@numba.njit(parallel=True)
def gather(x, idx, k):
    out = np.zeros(idx.shape[0])
    for i in prange(idx.shape[0]):
        out[i] = k * x[idx[i]] * x[idx[i]]
    return np.sum(out)


@numba.njit(parallel=True)
def recurrence(x):
    y = np.zeros(x.shape[0])
    for i in prange(1, x.shape[0]):
        y[i] = y[i - 1] + x[i]
    return np.sum(y)


@numba.njit(parallel=True)
def carried(x):
    t = 0.0
    s = 0.0
    for i in prange(x.shape[0]):
        s += t * x[i]
        t = x[i]
    return s


@numba.njit(fastmath=True, error_model="numpy", boundscheck=True)
def fast(x, k):
    s = 0.0
    for i in range(x.shape[0]):
        s += math.exp(k * x[i]) / (1.0 + x[i] * x[i])
    return s


def plain(x, k):
    s = 0.0
    for i in prange(x.shape[0]):
        s += k * x[i] * x[i]
    return s


@numba.njit(parallel=True)
def branchy(x, k):
    s = 0.0
    for i in prange(x.shape[0]):
        if x[i] > 0.0:
            s += math.exp(k * x[i])
        else:
            s += -k * x[i] * x[i]
    return s


@numba.njit(parallel=True)
def rows(a, w):
    m, n = a.shape
    out = np.zeros(m)
    for i in prange(m):
        acc = 0.0
        for j in range(n):
            acc += a[i, j] * w[j] * a[i, j]
        out[i] = acc * acc
    return np.sum(out)


@numba.njit(parallel=True)
def heat(u0, alpha):
    n = u0.shape[0]
    u = u0.copy()
    v = np.zeros(n)
    for t in range(4):
        for i in prange(1, n - 1):
            v[i] = u[i] + alpha * (u[i - 1] - 2.0 * u[i] + u[i + 1]) + 0.1 * math.sin(u[i])
        v[0] = u[0]
        v[n - 1] = u[n - 1]
        u, v = v, u
    return np.sum(u * u)


@numba.njit(parallel=True)
def last_value(x, k):
    out = np.zeros(x.shape[0])
    t = 0.0
    for i in prange(x.shape[0]):
        t = k * x[i]
        out[i] = t * t
    return np.sum(out) + t


@numba.njit(parallel=True)
def in_place(x, k):
    y = x.copy()
    for i in prange(y.shape[0]):
        y[i] = math.sin(k * y[i]) * y[i]
    s = 0.0
    for i in prange(y.shape[0]):
        s += y[i] * y[i]
    return s


@numba.njit(parallel=True)
def columns(a, w):
    m, n = a.shape
    out = np.zeros((m, n))
    for j in prange(n):
        for i in range(m):
            out[i, j] = math.exp(a[i, j] * w[j]) - a[i, j]
    return np.sum(out * out)


@numba.njit(parallel=True)
def gather_rows(a, idx, w):
    m = idx.shape[0]
    n = a.shape[1]
    out = np.zeros((m, n))
    for i in prange(m):
        for j in range(n):
            out[i, j] = a[idx[i], j] * w[j] + a[idx[i], j] ** 2
    return np.sum(out * out)


@numba.njit(parallel=True)
def branch_store(x, k):
    """A value stored under an ``if`` that some iterations take (none in the else)."""
    out = np.zeros(x.shape[0])
    for i in prange(x.shape[0]):
        v = x[i] * k
        if x[i] > 0.1:
            v = math.exp(v) * x[i]
        out[i] = v * v
    return np.sum(out)


@numba.njit(parallel=True)
def branch_nested(x, k):
    """Values stored in nested branches, the conditions on a value computed in the loop."""
    s = 0.0
    for i in prange(x.shape[0]):
        t = math.tanh(k * x[i])
        if t > 0.0:
            if x[i] > 0.5:
                s += math.exp(t * x[i])
            else:
                s += math.sin(t) * math.log(1.0 + x[i] * x[i])
        else:
            s += t * t
    return s


@numba.njit(parallel=True)
def branch_steps(x, k):
    """A branchy prange loop inside a serial time loop over two swapped buffers."""
    n = x.shape[0]
    u = x.copy()
    v = np.zeros(n)
    for t in range(3):
        for i in prange(n):
            if u[i] > 0.0:
                v[i] = math.exp(k * u[i]) - 1.0
            else:
                v[i] = u[i] * k
        u, v = v, u
    return np.sum(u * u)


@numba.njit(parallel=True)
def wraps(x, k):
    """``x[i - 1]`` at ``i = 0`` is the last element (a stencil whose gather wraps)."""
    s = 0.0
    for i in prange(x.shape[0]):
        s += x[i - 1] * math.sin(k * x[i])
    return s


@numba.njit(parallel=True)
def wraps_only(x, k):
    """Only ``x[i - 1]`` and ``x[i - 2]``, one trip more than there are elements: the element
    ``n - 1`` is both ``x[-1]`` (i = 0) and ``x[n - 1]`` (i = n)."""
    s = 0.0
    for i in prange(x.shape[0] + 1):
        s += k * x[i - 1] * x[i - 1] * x[i - 2]
    return s


@numba.njit(parallel=True)
def branch_stencil(x, k):
    """A stencil with a branch (not in gather form): the even chunks, then the odd ones."""
    n = x.shape[0]
    s = 0.0
    for i in prange(1, n - 1):
        if x[i] > 0.0:
            s += k * x[i - 1] * x[i + 1]
        else:
            s += math.sin(x[i + 1]) * x[i]
    return s


@numba.njit(parallel=True)
def branch_gather(x, idx, k):
    """Reads through an index array under a branch: partial buffers, sums per chunk."""
    s = 0.0
    for i in prange(idx.shape[0]):
        v = x[idx[i]]
        if v > 0.0:
            s += k * v * v
        else:
            s += math.sin(k * v)
    return s


@numba.njit(parallel=True)
def row_chain(x, c):
    """A whole-array chain in each iteration (under jit=True an element loop in the body)."""
    out = np.zeros(c.shape[0])
    for i in prange(c.shape[0]):
        r = x * c[i]
        s = r + x
        out[i] = np.sum(s)
    return np.sum(out * out)


@numba.njit(parallel=True)
def branch_chain(x, c):
    """A whole-array chain under an ``if`` in each iteration."""
    out = np.zeros(c.shape[0])
    for i in prange(c.shape[0]):
        if c[i] > 0.6:
            r = x * c[i]
            out[i] = np.sum(r + x)
        else:
            out[i] = c[i] * c[i]
    return np.sum(out * out)
