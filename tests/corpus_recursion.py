"""Recursive functions, refused at the recursive call (issue 29 item 9)."""

import numba
import numpy as np


def shrink(a, depth):
    if depth == 0:
        return a
    return shrink(np.sin(a) * 1.1, depth - 1)


def relax(x, n):
    """A tail call in the if, the base case in the else."""
    if n > 0:
        return relax(0.5 * x + 0.25 * x * x, n - 1)
    else:
        return np.sum(x * x)


@numba.njit
def jit_shrink(a, depth):
    if depth == 0:
        return a
    return jit_shrink(np.sin(a) * 1.1, depth - 1)


def power(a, n):
    if n == 0:
        return 1.0
    return a * power(a, n - 1)


def series(x, k):
    if k > 0:
        return series(x, k - 1) + np.sin(k * x) / k
    return 0.0


def fib(a, n):
    if n < 2:
        return a
    return fib(a * 0.9, n - 1) + fib(a, n - 2)


def calls_fib(a):
    return fib(a, 3) + a


def ping(x, n):
    if n <= 0:
        return x
    return pong(x * 0.5, n)


def pong(x, n):
    return ping(x + 1.0, n - 1)


def mutual(x):
    return ping(x, 3) * 2.0
