"""Aliasing, views, buffer swaps and control flow for forward mode (tests/test_forward.py):
tangent arrays must follow the same references as the arrays."""

import math

import numpy as np


def view_write(x, a):
    u = x * 1.0
    r = u[1:]
    r[0] = a * r[0] * 2.0
    return np.sum(u * u)


def alias_arg(x, a):
    u = x
    u[0] = a * 3.0
    return np.sum(u * x)


def out_arg(x, out):
    out[:] = x * 2.0
    return np.sum(out * out)


def transpose_write(A, a):
    B = A.copy()
    C = B.T
    C[0, 1] = a * C[1, 0]
    return np.sum(B * A)


def fresh_then_write(x, a):
    y = x + 0.0
    y[0] = a
    return np.sum(y * x)


def pos_then_write(x, a):
    y = +x
    y[0] = a * y[1]
    return np.sum(y * x)


def swap_loop(x, a, n):
    u = x.copy()
    v = np.zeros_like(x)
    for t in range(n):
        for i in range(x.shape[0]):
            v[i] = math.sin(u[i]) * a + u[(i + 1) % x.shape[0]]
        u, v = v, u
    return np.sum(u * v)


def while_newton(a, x0):
    x = x0
    k = 0
    while k < 30:
        x = x - (x * x - a) / (2.0 * x)
        k += 1
        if abs(x * x - a) < 1e-14:
            break
    return x


def early_ret(x, a):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * a
        if s > 1.0:
            return s * s
    return s


def strided(x, a):
    y = x.copy()
    z = y[::2]
    z[:] = z * a
    return np.sum(y * x)


def row_view_loop(A, a):
    B = A.copy()
    for i in range(B.shape[0]):
        r = B[i]
        for j in range(B.shape[1]):
            r[j] = r[j] * a + A[i, j] ** 2
    return np.sum(B * B)


def inplace_aug(x, a):
    u = x.copy()
    u += a * x
    u *= x
    return np.sum(u)


def outer_slices(x, a):
    M = np.zeros((x.shape[0], x.shape[0]))
    for i in range(x.shape[0]):
        M[i, :] = x * x[i] * a
    return np.sum(M @ x)


R = np.random.default_rng(21)
CASES = [
    (view_write, lambda: (R.normal(size=4), 0.7), (0, 1)),
    (alias_arg, lambda: (R.normal(size=4), 0.7), (0, 1)),
    (out_arg, lambda: (R.normal(size=4), np.zeros(4)), 0),
    (out_arg, lambda: (R.normal(size=4), np.ones(4)), (0, 1)),
    (transpose_write, lambda: (R.normal(size=(3, 3)), 0.7), (0, 1)),
    (fresh_then_write, lambda: (R.normal(size=4), 0.7), (0, 1)),
    (pos_then_write, lambda: (R.normal(size=4), 0.7), (0, 1)),
    (swap_loop, lambda: (R.normal(size=4), 0.7, 3), (0, 1)),
    (while_newton, lambda: (2.0, 1.0), (0, 1)),
    (early_ret, lambda: (np.abs(R.normal(size=5)), 0.7), (0, 1)),
    (strided, lambda: (R.normal(size=5), 0.7), (0, 1)),
    (row_view_loop, lambda: (R.normal(size=(3, 2)), 0.7), (0, 1)),
    (inplace_aug, lambda: (R.normal(size=4), 0.7), (0, 1)),
    (outer_slices, lambda: (R.normal(size=4), 0.7), (0, 1)),
]
