"""Pair loops over the rows of a 2-d array with a row-difference vector (``d = pos[i] -
pos[j]``): the adjoint of a row read accumulates a row, never a scalar
(``tests/test_rows_and_rule_locals.py``)."""

import numba
import numpy as np
from numba import prange


def energy_sum(pos):
    e = 0.0
    n = pos.shape[0]
    for i in range(n):
        for j in range(i + 1, n):
            d = pos[i] - pos[j]
            r2 = np.sum(d * d)
            e += 1.0 / r2
    return e


def energy_components(pos):
    e = 0.0
    n = pos.shape[0]
    for i in range(n):
        for j in range(i + 1, n):
            d = pos[i] - pos[j]
            r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2]
            e += 1.0 / r2
    return e


def energy_dot(pos):
    e = 0.0
    n = pos.shape[0]
    for i in range(n):
        for j in range(i + 1, n):
            d = pos[i] - pos[j]
            e += 1.0 / np.dot(d, d)
    return e


def dist2(a, b):
    d = a - b
    return np.sum(d * d)


def energy_helper(pos):
    e = 0.0
    n = pos.shape[0]
    for i in range(n):
        for j in range(i + 1, n):
            e += dist2(pos[i], pos[j])
    return e


def lennard_jones(pos, eps, sigma):
    e = 0.0
    n = pos.shape[0]
    for i in range(n):
        for j in range(i + 1, n):
            d = pos[i] - pos[j]
            r2 = np.dot(d, d)
            s6 = (sigma * sigma / r2) ** 3
            e += 4.0 * eps * (s6 * s6 - s6)
    return e


@numba.njit(parallel=True)
def lennard_jones_prange(pos, eps, sigma):
    e = 0.0
    n = pos.shape[0]
    for i in prange(n):
        for j in range(i + 1, n):
            d = pos[i] - pos[j]
            r2 = np.dot(d, d)
            s6 = (sigma * sigma / r2) ** 3
            e += 4.0 * eps * (s6 * s6 - s6)
    return e


def forces(pos, k):
    n = pos.shape[0]
    f = np.zeros_like(pos)
    for i in range(n):
        for j in range(i + 1, n):
            d = pos[i] - pos[j]
            g = k * d / np.sum(d * d)
            f[i] += g
            f[j] -= g
    return np.sum(f * f)


def rows_of_3d(a):
    e = 0.0
    n = a.shape[0]
    for i in range(n):
        for j in range(i + 1, n):
            d = a[i, 0] - a[j, 1]
            e += np.sum(d * d * d)
    return e


def element_pairs(pos):
    e = 0.0
    n = pos.shape[0]
    for i in range(n):
        for j in range(i + 1, n):
            dx = pos[i, 0] - pos[j, 0]
            dy = pos[i, 1] - pos[j, 1]
            e += 1.0 / (dx * dx + dy * dy)
    return e


_RNG = np.random.default_rng(11)
_POS = np.array([[0.0, 0.1, 0.2], [1.1, 0.0, 0.3], [0.2, 1.2, 0.1], [1.0, 1.1, 1.3]]) \
    + _RNG.uniform(-0.05, 0.05, (4, 3))
# (function, primals, wrt)
CASES = [
    (energy_sum, (_POS,), (0,)), (energy_components, (_POS,), (0,)),
    (energy_dot, (_POS,), (0,)), (energy_helper, (_POS,), (0,)),
    (lennard_jones, (_POS, 0.7, 0.9), (0, 1, 2)),
    (lennard_jones_prange, (_POS, 0.7, 0.9), (0, 1, 2)),
    (forces, (_POS, 0.8), (0, 1)), (rows_of_3d, (_RNG.uniform(0.0, 1.0, (3, 2, 2)),), (0,)),
    (element_pairs, (_POS,), (0,)),
]


@numba.njit(parallel=True)
def pair_dot_prange(pos, w):
    e = 0.0
    n = pos.shape[0]
    for i in prange(n):
        for j in range(n):
            e += w * np.tanh(np.dot(pos[i], pos[j]))
    return e


CASES.append((pair_dot_prange, (_POS, 0.6), (0, 1)))
