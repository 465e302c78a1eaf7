"""Module-level functions for the pickling, multiprocessing and Dask tests: workers
import them by name (a pickled gradient is a reference to its function)."""

import numba
import numpy as np

import jitgrad as jg


def loss(x, a):
    s = 0.0
    for i in range(x.shape[0]):
        s += a * np.sin(x[i]) * x[i]
    return s


@jg.differentiate(wrt=(0, 1), cache=True)
def dloss(x, a):
    s = 0.0
    for i in range(x.shape[0]):
        s += (x[i] - a) ** 2
    return s


@numba.njit
def nloss(x):
    return np.sum(x * x) * 0.5


def with_info(g, *args):
    """``g(*args)`` in a worker, and whether it came from the on-disk cache."""
    return g(*args), g.cache_info()
