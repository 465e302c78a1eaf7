"""numba.prange loops (user-style code): differentiated as range loops."""

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
