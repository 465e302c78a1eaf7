"""Rules for whole-array NumPy: reductions, linear algebra, shape, indexing, selection.

Every rule body is also a template the transpiler inlines into Numba-compiled
code, so where Numba's NumPy lacks an argument (``axis=`` and ``keepdims=`` on
reductions, ``np.add.at``) the rule calls a helper from ``runtime.array_helpers``
that compiles.  Option parameters (``axis``, ``ddof``, ``axes``, ``keepdims``) come
after the differentiable ones, have defaults, and get no entry in the pullback's
tuple.  ``ndim_of`` (see ``rules.results``) tells kind inference the result's ndim;
``view=True`` marks functions whose result may share memory with their argument.
"""

import builtins
import operator

import numpy as np

from ..kernels.arrays import (
    argextreme,
    axis_count,
    centered,
    chooser_weights,
    cumsum_along,
    diag_back,
    diff_back,
    dot_grad_a,
    dot_grad_b,
    expand_along,
    extreme_at,
    flip_along,
    in_dtype_of,
    kept,
    mixed_dot,
    mixed_solve,
    pick,
    prod_others,
    reduce_max,
    reduce_mean,
    reduce_min,
    reduce_prod,
    reduce_sum,
    reshape_like,
    scatter_add,
    select,
    sort_along,
    split_like,
    spread,
    transpose_back,
    unsort,
)
from ..kernels.helpers import unbroadcast
from . import results
from .registry import grad_rule, non_differentiable

# --- reductions (axis: None or an int; keepdims: a literal) --------------------
# ``kept`` keeps the reduced axis (the identity when keepdims is False); ``expand_along``
# takes a gradient with or without it, so the pullbacks need no inverse.


@grad_rule(np.sum, np.ndarray.sum, ndim_of=results.reduced, float_result=True)
def sum_(x, axis=None, keepdims=False):
    def back(dy):
        return (expand_along(dy, x, axis),)
    return kept(reduce_sum(x, axis), x, axis, keepdims), back


@grad_rule(np.mean, np.ndarray.mean, ndim_of=results.reduced, float_result=True)
def mean(x, axis=None, keepdims=False):
    n = axis_count(x, axis, 0)
    def back(dy):
        return (expand_along(dy, x, axis) / n,)
    return kept(reduce_mean(x, axis), x, axis, keepdims), back


@grad_rule(np.prod, np.ndarray.prod, ndim_of=results.reduced, float_result=True)
def prod(x, axis=None, keepdims=False):
    def back(dy):
        return (expand_along(dy, x, axis) * prod_others(x, axis),)
    return kept(reduce_prod(x, axis), x, axis, keepdims), back


@grad_rule(np.max, np.amax, np.ndarray.max, ndim_of=results.reduced, float_result=True)
def max_(x, axis=None, keepdims=False):
    y = kept(reduce_max(x, axis), x, axis, keepdims)
    def back(dy):
        return (expand_along(dy, x, axis) * chooser_weights(x, y, axis),)
    return y, back


@grad_rule(np.min, np.amin, np.ndarray.min, ndim_of=results.reduced, float_result=True)
def min_(x, axis=None, keepdims=False):
    y = kept(reduce_min(x, axis), x, axis, keepdims)
    def back(dy):
        return (expand_along(dy, x, axis) * chooser_weights(x, y, axis),)
    return y, back


@grad_rule(np.var, np.ndarray.var, ndim_of=results.reduced, float_result=True)
def var(x, axis=None, ddof=0, keepdims=False):
    d = centered(x, axis)
    n = axis_count(x, axis, ddof)
    def back(dy):
        return (expand_along(dy, x, axis) * (d + d) / n,)
    return kept(reduce_sum(d * d, axis) / n, x, axis, keepdims), back


@grad_rule(np.std, np.ndarray.std, ndim_of=results.reduced, float_result=True)
def std(x, axis=None, ddof=0, keepdims=False):
    """Where the std is 0 all deviations are 0 and so is the gradient (not 0/0)."""
    d = centered(x, axis)
    n = axis_count(x, axis, ddof)
    y = kept(np.sqrt(reduce_sum(d * d, axis) / n), x, axis, keepdims)
    def back(dy):
        return (expand_along(dy / (y + (y == 0)), x, axis) * d / n,)
    return y, back


# --- Python's sum, max and min ---------------------------------------------------


@grad_rule(builtins.sum, ndim_of=results.first_axis)
def sum_builtin(x, start=0.0):
    """``sum(x)`` of a 1-d array, a list or a tuple: every entry gets all of ``dy``."""
    def back(dy):
        return (spread(dy, x), dy)
    return builtins.sum(x, start), back


@grad_rule(builtins.max, ndim_of=results.extreme)
def max_builtin(a, b=None, c=None, d=None):
    """``max(a, b, ...)`` of up to four numbers, or ``max(x)`` of a 1-d array, list or tuple.

    As Python's ``max`` does, the first largest value is the result and gets all the
    gradient (a later value must be strictly larger; a leading NaN stays).
    """
    k = argextreme(a, b, c, d, True)
    def back(dy):
        return (pick(dy, a, k), select(k == 1, dy), select(k == 2, dy), select(k == 3, dy))
    return extreme_at(a, b, c, d, k), back


@grad_rule(builtins.min, ndim_of=results.extreme)
def min_builtin(a, b=None, c=None, d=None):
    """``min(a, b, ...)`` of up to four numbers, or ``min(x)``; see ``max_builtin``."""
    k = argextreme(a, b, c, d, False)
    def back(dy):
        return (pick(dy, a, k), select(k == 1, dy), select(k == 2, dy), select(k == 3, dy))
    return extreme_at(a, b, c, d, k), back


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


@grad_rule(np.vdot, ndim_of=results.scalar)
def vdot(a, b):
    """The dot product of the flattened (real) arrays."""
    def back(dy):
        return (dy * b, dy * a)
    return np.vdot(a, b), back


@grad_rule(np.outer)
def outer(a, b):
    def back(dy):
        return (in_dtype_of(mixed_dot(dy, b), a), in_dtype_of(mixed_dot(a, dy), b))
    return np.outer(a, b), back


@grad_rule(np.linalg.solve)
def solve(a, b):
    x = np.linalg.solve(a, b)
    def back(dy):
        gb = mixed_solve(a.T, dy)
        return (-dot_grad_a(gb, a, x), in_dtype_of(gb, b))
    return x, back


@grad_rule(np.linalg.inv)
def inv(a):
    y = np.linalg.inv(a)
    def back(dy):
        return (-in_dtype_of(mixed_dot(mixed_dot(y.T, dy), y.T), a),)
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


@grad_rule(np.ascontiguousarray, np.asfortranarray, ndim_of=results.same)
def contiguous(x):
    """The same values, perhaps in a new layout (a view when the layout is already right)."""
    def back(dy):
        return (dy,)
    return np.ascontiguousarray(x), back


@grad_rule(np.array, np.asarray, ndim_of=results.same)
def array(values, dtype=None):
    """``np.array([a, b, c])`` of numbers (entry ``j`` of the list gets ``dy[j]``), or of an
    array (``np.asarray`` of an array is a view; Numba's ``np.array`` takes lists and tuples
    only)."""
    def back(dy):
        return (dy, None)
    return np.array(values, dtype), back


@grad_rule(np.atleast_1d, ndim_of=results.at_least(1))
def atleast_1d(x):
    def back(dy):
        return (reshape_like(dy, x),)
    return np.atleast_1d(x), back


@grad_rule(np.atleast_2d, ndim_of=results.at_least(2))
def atleast_2d(x):
    def back(dy):
        return (reshape_like(dy, x),)
    return np.atleast_2d(x), back


@grad_rule(np.atleast_3d, ndim_of=results.at_least(3))
def atleast_3d(x):
    def back(dy):
        return (reshape_like(dy, x),)
    return np.atleast_3d(x), back


@grad_rule(np.broadcast_to, ndim_of=results.shaped)
def broadcast_to(x, shape):
    def back(dy):
        return (unbroadcast(dy, x), None)
    return np.broadcast_to(x, shape), back


@grad_rule(np.swapaxes, ndim_of=results.same)
def swapaxes(x, axis1, axis2):
    def back(dy):
        return (np.swapaxes(dy, axis1, axis2), None, None)
    return np.swapaxes(x, axis1, axis2), back


@grad_rule(np.diag, ndim_of=results.diag)
def diag(v, k=0):
    """A 1-d ``v`` gives a matrix with ``v`` on diagonal ``k``; a 2-d ``v`` gives that diagonal."""
    def back(dy):
        return (diag_back(dy, v, k),)
    return np.diag(v, k), back


@grad_rule(np.tril, ndim_of=results.same)
def tril(m, k=0):
    def back(dy):
        return (unbroadcast(np.tril(dy, k), m),)
    return np.tril(m, k), back


@grad_rule(np.triu, ndim_of=results.same)
def triu(m, k=0):
    def back(dy):
        return (unbroadcast(np.triu(dy, k), m),)
    return np.triu(m, k), back


# --- order ---------------------------------------------------------------------


@grad_rule(np.flip, ndim_of=results.same)
def flip(x, axis=None):
    """Every axis (axis None) or one int axis; flipping is its own pullback."""
    def back(dy):
        return (flip_along(dy, axis),)
    return flip_along(x, axis), back


@grad_rule(np.fliplr, ndim_of=results.same)
def fliplr(x):
    def back(dy):
        return (np.fliplr(dy),)
    return np.fliplr(x), back


@grad_rule(np.flipud, ndim_of=results.same)
def flipud(x):
    def back(dy):
        return (np.flipud(dy),)
    return np.flipud(x), back


@grad_rule(np.roll, ndim_of=results.same)
def roll(x, shift):
    """The flattened roll (Numba's ``np.roll`` takes no axis); undone by rolling back."""
    def back(dy):
        return (np.roll(dy, -shift), None)
    return np.roll(x, shift), back


@grad_rule(np.sort, ndim_of=results.sorted_)
def sort(x, axis=-1):
    """Along ``axis`` (None: flattened); each gradient entry goes back to the element
    sorted into its place."""
    def back(dy):
        return (unsort(dy, x, axis),)
    return sort_along(x, axis), back


@grad_rule(np.diff, ndim_of=results.same)
def diff(x, n=1):
    """``n``-th differences along the last axis."""
    def back(dy):
        return (diff_back(dy, x, n),)
    return np.diff(x, n), back


# --- arrays made from scalars ----------------------------------------------------


@grad_rule(np.full)
def full(shape, fill_value, dtype=None):
    """The fill value gets the sum of ``dy``."""
    def back(dy):
        return (None, unbroadcast(dy, fill_value), None)
    return np.full(shape, fill_value, dtype), back


@grad_rule(np.full_like)
def full_like(a, fill_value, dtype=None):
    def back(dy):
        return (None, unbroadcast(dy, fill_value), None)
    return np.full_like(a, fill_value, dtype), back


@grad_rule(np.linspace)
def linspace(start, stop, num=50):
    """Point ``k`` is ``start + t_k (stop - start)`` with ``t = linspace(0, 1, num)``."""
    def back(dy):
        t = np.linspace(0.0, 1.0, num)
        return (np.sum(dy * (1.0 - t)), np.sum(dy * t), None)
    return np.linspace(start, stop, num), back


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


# --- no gradient: integer, boolean or index results, and constant arrays ---------

non_differentiable(
    np.all, np.any, np.allclose, np.array_equal, np.count_nonzero, np.nonzero,
    np.flatnonzero, np.argwhere, np.argpartition, np.searchsorted, np.digitize, np.isin,
    np.nanargmax, np.nanargmin, np.indices, np.ndindex, np.tri, np.tril_indices,
    np.triu_indices, np.tril_indices_from, np.triu_indices_from, np.broadcast_shapes,
    np.bartlett, np.blackman, np.hamming, np.hanning, np.frombuffer,
    np.linalg.matrix_rank, pure=True,
)
