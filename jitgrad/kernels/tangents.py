"""Helpers that generated tangent (forward-mode) code calls.

Each is a plain Python function (``jit=False``, eager tangent rules) plus a
``numba.extending.overload`` so compiled code specialises it per argument type.
"""

from __future__ import annotations

import numpy as np
from numba import types
from numba.extending import overload, register_jitable

from .arrays import _check_axis, _is_none, _view3, select

__all__ = ["fit", "pick_tangent", "prod_others_tangent", "sort_tangent", "trigamma"]


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


def sort_tangent(dx, x, axis):
    """The tangent of ``np.sort(x, axis)``: the entries of ``dx`` in the order the sort
    put ``x`` (stable for ties, as ``unsort``, the gradient, sends them back)."""
    x = np.asarray(x)
    if axis is None:
        x, dx, axis = x.ravel(), np.ravel(dx), 0
    order = np.argsort(x, axis=axis, kind="stable")
    return np.take_along_axis(np.asarray(dx), order, axis=axis)


@register_jitable
def _sorted3(d3, x3):
    out = np.empty_like(d3)
    for i in range(x3.shape[0]):
        for j in range(x3.shape[2]):
            order = np.argsort(x3[i, :, j], kind="mergesort")
            for t in range(x3.shape[1]):
                out[i, t, j] = d3[i, order[t], j]
    return out


@overload(sort_tangent)
def _ol_sort_tangent(dx, x, axis):
    _check_axis(axis, "sort_tangent")
    if _is_none(axis):
        return lambda dx, x, axis: _sorted3(_view3(dx, axis), _view3(x, axis)).reshape(
            (x.size,))
    return lambda dx, x, axis: _sorted3(_view3(dx, axis), _view3(x, axis)).reshape(x.shape)


def trigamma(x):
    """``psi'(x)``, the derivative of ``digamma``, of a float: NaN at the poles (0, -1, ...)
    and at -inf, 0 at inf; never raises.

    Reflection ``psi'(x) = pi^2 / sin^2(pi x) - psi'(1 - x)`` for ``x < 0``, the recurrence
    ``psi'(x) = psi'(x + 1) + 1/x^2`` up to 10, then the asymptotic series (relative error
    below 1e-15).  NumPy scalar arithmetic, so the plain-Python twin follows IEEE rules.
    """
    x = np.float64(x)
    if np.isnan(x) or x == -np.inf:
        return np.nan
    if x == np.inf:
        return np.float64(0.0)
    if x <= 0.0 and x == np.floor(x):
        return np.nan
    sign = np.float64(1.0)
    acc = np.float64(0.0)
    if x < 0.0:
        s = np.sin(np.pi * x)
        acc = np.pi * np.pi / (s * s)
        sign = np.float64(-1.0)
        x = 1.0 - x
    rec = np.float64(0.0)
    while x < 10.0:
        rec += 1.0 / (x * x)
        x += 1.0
    inv = 1.0 / x
    inv2 = inv * inv
    tail = inv + 0.5 * inv2 + inv * inv2 * (1.0 / 6 - inv2 * (1.0 / 30 - inv2 * (
        1.0 / 42 - inv2 * (1.0 / 30 - inv2 * (5.0 / 66 - inv2 * (691.0 / 2730))))))
    return acc + sign * (rec + tail)


@overload(trigamma)
def _ol_trigamma(x):
    return trigamma  # the Python twin compiles as it is


@register_jitable
def _prod_others_t3(d3, x3):
    """``t[i] = sum_{j != i} d[j] prod_{k != i, j} x[k]`` along axis 1 (exclusive products
    of ``x`` with entry ``i`` set to 1: exact with zeros in ``x``)."""
    out = np.zeros_like(x3)
    n = x3.shape[1]
    w = np.empty(n, dtype=x3.dtype)
    left = np.empty(n, dtype=x3.dtype)
    for p in range(x3.shape[0]):
        for q in range(x3.shape[2]):
            for i in range(n):
                for k in range(n):
                    w[k] = x3[p, k, q]
                w[i] = 1.0
                acc = x3.dtype.type(1)
                for k in range(n):
                    left[k] = acc
                    acc *= w[k]
                acc = x3.dtype.type(1)
                total = x3.dtype.type(0)
                for k in range(n - 1, -1, -1):
                    if k != i:
                        total += d3[p, k, q] * left[k] * acc
                    acc *= w[k]
                out[p, i, q] = total
    return out


def prod_others_tangent(dx, x, axis):
    """The tangent of ``prod_others(x, axis)`` (the gradient of ``prod``) along ``dx``."""
    x3 = np.ascontiguousarray(_view3(np.asarray(x, dtype=float), axis))
    d3 = np.ascontiguousarray(_view3(np.asarray(dx, dtype=float), axis))
    return _prod_others_t3(d3, x3).reshape(np.shape(x))


@overload(prod_others_tangent)
def _ol_prod_others_tangent(dx, x, axis):
    _check_axis(axis, "prod_others_tangent")
    return lambda dx, x, axis: _prod_others_t3(_view3(dx, axis), _view3(x, axis)).reshape(
        x.shape)
