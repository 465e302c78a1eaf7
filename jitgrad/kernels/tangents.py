"""Helpers that generated tangent (forward-mode) code calls.

Each is a plain Python function (``jit=False``, eager tangent rules) plus a
``numba.extending.overload`` so compiled code specialises it per argument type.
"""

from __future__ import annotations

import numpy as np
from numba import types
from numba.extending import overload

from .arrays import select

__all__ = ["fit", "pick_tangent"]


def fit(t, y):
    """The tangent ``t`` as a fresh array shaped like the primal ``y`` (broadcast, never
    aliasing ``t``); a scalar ``t`` for a scalar ``y``."""
    if isinstance(y, np.ndarray):
        return np.zeros_like(y) + t
    return t


@overload(fit)
def _ol_fit(t, y):
    if isinstance(y, types.Array):
        return lambda t, y: np.zeros_like(y) + t
    return lambda t, y: t


def pick_tangent(da, a, k):
    """The tangent of Python's ``max``/``min`` from its first argument: ``da[k]`` when ``a``
    is the sequence searched, else ``da`` if ``a`` (argument 0) was chosen, else 0."""
    if isinstance(a, (np.ndarray, list, tuple)):
        return da[k]
    return select(k == 0, da)


@overload(pick_tangent)
def _ol_pick_tangent(da, a, k):
    if isinstance(a, (types.Array, types.List, types.BaseTuple)):
        return lambda da, a, k: da[k]
    return lambda da, a, k: select(k == 0, da)
