"""Rules for whole-array NumPy: reductions, linear algebra, shape, indexing, selection.

Every rule body is also a template the transpiler inlines into Numba-compiled
code, so where Numba's NumPy lacks an argument (``axis=`` on reductions,
``np.add.at``) the rule calls a helper from ``runtime.array_helpers`` that
compiles.  Option parameters (``axis``, ``ddof``, ``axes``) come after the
differentiable ones, have defaults, and get no entry in the pullback's tuple.
"""

import operator

import numpy as np

from ..runtime.array_helpers import (
    axis_count,
    centered,
    chooser_weights,
    cumsum_along,
    dot_grad_a,
    dot_grad_b,
    expand_along,
    prod_others,
    reduce_max,
    reduce_mean,
    reduce_min,
    reduce_prod,
    reduce_sum,
    reshape_like,
    scatter_add,
    select,
    split_like,
    transpose_back,
)
from ..runtime.helpers import unbroadcast
from .registry import grad_rule

# --- reductions (axis: None or an int) -----------------------------------------


@grad_rule(np.sum, np.ndarray.sum)
def sum_(x, axis=None):
    def back(dy):
        return (expand_along(dy, x, axis),)
    return reduce_sum(x, axis), back


@grad_rule(np.mean, np.ndarray.mean)
def mean(x, axis=None):
    n = axis_count(x, axis, 0)
    def back(dy):
        return (expand_along(dy, x, axis) / n,)
    return reduce_mean(x, axis), back


@grad_rule(np.prod, np.ndarray.prod)
def prod(x, axis=None):
    def back(dy):
        return (expand_along(dy, x, axis) * prod_others(x, axis),)
    return reduce_prod(x, axis), back


@grad_rule(np.max, np.amax, np.ndarray.max)
def max_(x, axis=None):
    y = reduce_max(x, axis)
    def back(dy):
        return (expand_along(dy, x, axis) * chooser_weights(x, y, axis),)
    return y, back


@grad_rule(np.min, np.amin, np.ndarray.min)
def min_(x, axis=None):
    y = reduce_min(x, axis)
    def back(dy):
        return (expand_along(dy, x, axis) * chooser_weights(x, y, axis),)
    return y, back


@grad_rule(np.var, np.ndarray.var)
def var(x, axis=None, ddof=0):
    d = centered(x, axis)
    n = axis_count(x, axis, ddof)
    def back(dy):
        return (expand_along(dy, x, axis) * (d + d) / n,)
    return reduce_sum(d * d, axis) / n, back


@grad_rule(np.std, np.ndarray.std)
def std(x, axis=None, ddof=0):
    """Where the std is 0 all deviations are 0 and so is the gradient (not 0/0)."""
    d = centered(x, axis)
    n = axis_count(x, axis, ddof)
    y = np.sqrt(reduce_sum(d * d, axis) / n)
    def back(dy):
        return (expand_along(dy / (y + (y == 0)), x, axis) * d / n,)
    return y, back


@grad_rule(np.linalg.norm)
def norm(x):
    """Vector 2-norm or Frobenius norm; the gradient at ``x = 0`` is 0, not NaN.

    The cast keeps float32 float32: Numba's norm returns float64.
    """
    y = x.dtype.type(np.linalg.norm(x))
    def back(dy):
        return (x * (dy / (y + (y == 0))),)
    return y, back


# --- linear algebra (1-d and 2-d operands) -------------------------------------


@grad_rule(np.dot, np.matmul, operator.matmul, np.ndarray.dot)
def dot(a, b):
    def back(dy):
        return (dot_grad_a(dy, a, b), dot_grad_b(dy, a, b))
    return np.dot(a, b), back


@grad_rule(np.outer)
def outer(a, b):
    def back(dy):
        return (np.dot(dy, b), np.dot(a, dy))
    return np.outer(a, b), back


@grad_rule(np.linalg.solve)
def solve(a, b):
    x = np.linalg.solve(a, b)
    def back(dy):
        gb = np.linalg.solve(a.T, dy)
        return (-dot_grad_a(gb, a, x), gb)
    return x, back


@grad_rule(np.linalg.inv)
def inv(a):
    y = np.linalg.inv(a)
    def back(dy):
        return (-np.dot(np.dot(y.T, dy), y.T),)
    return y, back


@grad_rule(np.linalg.det)
def det(a):
    """The cast keeps float32 float32: Numba's det returns float64."""
    y = a.dtype.type(np.linalg.det(a))
    def back(dy):
        return (dy * y * np.linalg.inv(a).T,)
    return y, back


@grad_rule(np.trace, np.ndarray.trace)
def trace(a):
    def back(dy):
        return (dy * np.eye(a.shape[0], a.shape[1], dtype=a.dtype),)
    return np.trace(a), back


# --- shape ---------------------------------------------------------------------


@grad_rule(np.reshape)
def reshape(x, shape):
    def back(dy):
        return (reshape_like(dy, x), None)
    return np.reshape(x, shape), back


@grad_rule(np.ravel, np.ndarray.ravel)
def ravel(x):
    def back(dy):
        return (reshape_like(dy, x),)
    return np.ravel(x), back


@grad_rule(np.expand_dims)
def expand_dims(x, axis):
    def back(dy):
        return (reshape_like(dy, x), None)
    return np.expand_dims(x, axis), back


@grad_rule(np.transpose, np.ndarray.transpose)
def transpose(x, axes=None):
    """``np.transpose(x)``, ``x.T``, or a permutation ``axes`` (a tuple of ints)."""
    def back(dy):
        return (transpose_back(dy, axes),)
    return np.transpose(x, axes), back


@grad_rule(np.concatenate)
def concatenate(arrays, axis=0):
    """``arrays`` is a tuple; its gradient is a tuple of pieces of ``dy``."""
    def back(dy):
        return (split_like(dy, arrays, axis),)
    return np.concatenate(arrays, axis=axis), back


@grad_rule(np.stack)
def stack(arrays, axis=0):
    def back(dy):
        return (split_like(dy, arrays, axis),)
    return np.stack(arrays, axis=axis), back


@grad_rule(np.hstack)
def hstack(arrays):
    """Joins 1-d arrays along axis 0 and n-d arrays along axis 1."""
    def back(dy):
        return (split_like(dy, arrays, min(arrays[0].ndim - 1, 1)),)
    return np.hstack(arrays), back


@grad_rule(np.vstack)
def vstack(arrays):
    """Joins along axis 0 (1-d arrays become rows)."""
    def back(dy):
        return (split_like(dy, arrays, 0),)
    return np.vstack(arrays), back


@grad_rule(np.copy, np.ndarray.copy)
def copy(x):
    def back(dy):
        return (dy,)
    return np.copy(x), back


# --- indexing ------------------------------------------------------------------


@grad_rule(operator.getitem)
def getitem(x, index):
    """Basic indices (ints, slices, None, tuples of them) or one integer array.

    Repeated integer indices accumulate their gradients.
    """
    def back(dy):
        return (scatter_add(dy, x, index), None)
    return x[index], back


# --- selection and cumulative sums ---------------------------------------------


@grad_rule(np.where)
def where(cond, a, b):
    """The three-argument ``where``; the gradient reaches only the side taken."""
    def back(dy):
        return (None, unbroadcast(select(cond, dy), a),
                unbroadcast(select(np.logical_not(cond), dy), b))
    return np.where(cond, a, b), back


@grad_rule(np.clip, np.ndarray.clip)
def clip(x, lo, hi):
    """Both bounds given (scalars or arrays); ``x`` on a bound gets the gradient.

    The forward is spelled with maximum/minimum: Numba's ``np.clip`` does not
    broadcast ``x`` up to the shape of array bounds.
    """
    def back(dy):
        return (unbroadcast(select(np.logical_and(x >= lo, x <= hi), dy), x),
                unbroadcast(select(x < lo, dy), lo), unbroadcast(select(x > hi, dy), hi))
    return np.minimum(np.maximum(x, lo), hi), back


@grad_rule(np.cumsum, np.ndarray.cumsum)
def cumsum(x, axis=None):
    """Flattened (axis None) or along an int axis; the pullback sums from the end."""
    def back(dy):
        return (reshape_like(cumsum_along(dy, axis, True), x),)
    return cumsum_along(x, axis, False), back
