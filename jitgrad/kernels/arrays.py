"""Numba-compilable helpers for the whole-array rules in ``jitgrad.rules.arrays``.

Numba's ``np.sum``/``np.mean``/``np.max``/``np.cumsum`` take no (or only some)
``axis`` argument, and it has no ``np.add.at``; the rules call these helpers
instead.  Each is a plain NumPy function (the eager runtime, ``jit=False``) plus
a ``numba.extending.overload`` that specialises on the argument types, so one
name works in both.  ``axis`` is None (the whole array) or an int, literal or
not, negative allowed; compiled code views ``x`` as a C-contiguous
``(pre, n, post)`` block with ``n`` the reduced axis, so one loop nest serves
every ndim.  Results keep the dtype of ``x`` (float32 in, float32 out).  The overloads
whose implementations are closure-free are ``cached_overload``s (compiled once per
machine).
"""

from __future__ import annotations

import functools

import numpy as np
from numba import literally, types
from numba.core.errors import TypingError
from numba.extending import overload, register_jitable
from numba.np.numpy_support import as_dtype
from numba.np.unsafe.ndarray import to_fixed_tuple

from .cached import cached_overload

__all__ = [
    "reduce_sum", "reduce_mean", "reduce_prod", "reduce_max", "reduce_min",
    "axis_count", "expand_along", "centered", "chooser_weights", "prod_others",
    "cumsum_along", "reshape_like", "transpose_back", "split_like", "scatter_add",
    "select", "dot_grad_a", "dot_grad_b", "mixed_dot", "mixed_solve", "in_dtype_of", "kept",
    "sort_along", "unsort",
    "flip_along", "diag_back", "spread", "argextreme", "extreme_at", "pick", "diff_back",
]


def _is_none(t) -> bool:
    return t is None or isinstance(t, (types.NoneType, types.Omitted))


def _check_axis(axis, fname: str) -> None:
    if not (_is_none(axis) or isinstance(axis, types.Integer)):
        raise TypingError(f"{fname}: axis must be None or an int in compiled code, got {axis}")


# --- the (pre, n, post) view that compiled code reduces over -------------------


@register_jitable
def _blocks(shape, axis):
    """``(pre, n, post, axis)``: sizes before, along and after ``axis`` (normalised)."""
    nd = len(shape)
    ax = axis + nd if axis < 0 else axis
    pre = 1
    post = 1
    for k in range(nd):
        if k < ax:
            pre *= shape[k]
        elif k > ax:
            post *= shape[k]
    return pre, shape[ax], post, ax


@register_jitable
def _as3(x, axis):
    """``x`` as a C-contiguous ``(pre, n, post)`` array, and the normalised axis."""
    pre, n, post, ax = _blocks(x.shape, axis)
    return np.ascontiguousarray(x).reshape((pre, n, post)), ax


def _np_blocks(shape, axis):
    ax = axis % len(shape)
    return (int(np.prod(shape[:ax])), shape[ax], int(np.prod(shape[ax + 1:])))


def _view3(x, axis):
    """``x`` as ``(pre, n, post)`` around ``axis``; axis None flattens to ``(1, size, 1)``."""
    x = np.asarray(x)
    return x.reshape(1, -1, 1) if axis is None else x.reshape(_np_blocks(x.shape, axis))


@cached_overload(_view3)
def _ol_view3(x, axis):
    _check_axis(axis, "_view3")
    if _is_none(axis):
        return lambda x, axis: np.ascontiguousarray(x).reshape((1, x.size, 1))
    return lambda x, axis: _as3(x, axis)[0]


@functools.cache
def _dropper(nd: int):
    """A compiled ``drop(shape, ax)``: ``shape`` without entry ``ax`` (a static-length tuple)."""

    m = nd - 1  # a closure constant: to_fixed_tuple needs a literal length

    @register_jitable
    def drop(shape, ax):
        out = np.empty(m, np.int64)
        k = 0
        for i in range(nd):
            if i != ax:
                out[k] = shape[i]
                k += 1
        return to_fixed_tuple(out, m)

    return drop


# --- reductions: forward values ------------------------------------------------


def _reducer(np_reduce, name: str):
    """Plain twin and overload of ``np_reduce(x, axis=axis)`` for axis None or int."""

    def plain(x, axis):
        return np_reduce(x, axis=axis)

    plain.__name__ = plain.__qualname__ = name
    plain.__doc__ = f"``np.{np_reduce.__name__}(x, axis=axis)``, compilable for an int axis."

    @overload(plain)
    def _ol(x, axis):
        _check_axis(axis, name)
        if _is_none(axis) or x.ndim == 1:
            return lambda x, axis: np_reduce(x)
        drop = _dropper(x.ndim)

        def impl(x, axis):
            x3, ax = _as3(x, axis)
            out = np.empty((x3.shape[0], x3.shape[2]), dtype=x.dtype)
            for i in range(x3.shape[0]):
                for j in range(x3.shape[2]):
                    out[i, j] = np_reduce(x3[i, :, j])
            return out.reshape(drop(x.shape, ax))

        return impl

    return plain


reduce_sum = _reducer(np.sum, "reduce_sum")
reduce_mean = _reducer(np.mean, "reduce_mean")
reduce_prod = _reducer(np.prod, "reduce_prod")
reduce_max = _reducer(np.max, "reduce_max")
reduce_min = _reducer(np.min, "reduce_min")


def axis_count(x, axis, ddof):
    """Elements reduced over ``axis`` less ``ddof``, as a scalar of ``x``'s dtype."""
    n = np.size(x) if axis is None else np.shape(x)[axis]
    return x.dtype.type(n - ddof)


@cached_overload(axis_count)
def _ol_axis_count(x, axis, ddof):
    _check_axis(axis, "axis_count")
    if isinstance(x, types.Number):  # a reduction of a number reduces one element
        return lambda x, axis, ddof: np.float64(1 - ddof)
    if _is_none(axis):
        return lambda x, axis, ddof: x.dtype.type(x.size - ddof)
    return lambda x, axis, ddof: x.dtype.type(x.shape[axis] - ddof)


# --- reductions: pullback pieces -----------------------------------------------


def expand_along(dy, x, axis):
    """``dy`` (shaped like a reduction of ``x`` over ``axis``) broadcast back to ``x.shape``.

    ``dy`` may also keep the reduced axis (``keepdims=True``: as many dimensions as
    ``x``).  The result is a fresh writable array; its dtype is ``dy``'s.
    """
    dy = np.asarray(dy)
    if axis is not None and dy.ndim < np.ndim(x):
        dy = np.expand_dims(dy, axis)
    return np.broadcast_to(dy, np.shape(x)).copy()


@cached_overload(expand_along)
def _ol_expand_along(dy, x, axis):
    _check_axis(axis, "expand_along")
    if isinstance(x, types.Number):  # np.sum of a number is the number
        return lambda dy, x, axis: dy
    if isinstance(dy, types.Array) and dy.ndim == x.ndim:  # keepdims: the axis is kept
        return lambda dy, x, axis: np.broadcast_to(dy, x.shape).copy()
    if _is_none(axis) or x.ndim == 1:
        return lambda dy, x, axis: np.full(x.shape, dy)

    def impl(dy, x, axis):
        pre, n, post, _ = _blocks(x.shape, axis)
        d2 = np.ascontiguousarray(dy).reshape((pre, post))
        out = np.empty((pre, n, post), dtype=dy.dtype)
        for i in range(pre):
            for k in range(n):
                for j in range(post):
                    out[i, k, j] = d2[i, j]
        return out.reshape(x.shape)

    return impl


def centered(x, axis):
    """``x - mean(x, axis)`` with the mean broadcast back (the deviations of var/std)."""
    return x - expand_along(reduce_mean(x, axis), x, axis)


def chooser_weights(x, y, axis):
    """Where ``x`` attains its max/min ``y`` along ``axis``: 1/(number of ties), else 0.

    Ties split the gradient equally, so the weights along each reduced line sum to 1.
    """
    hit = (x == expand_along(y, x, axis)).astype(x.dtype)
    return hit / expand_along(reduce_sum(hit, axis), x, axis)


def prod_others(x, axis):
    """For each element, the product of the *other* elements along ``axis``.

    The gradient of ``prod``; built from exclusive cumulative products, so zeros
    in ``x`` give exact values rather than ``prod / x = 0 / 0``.
    """
    x3 = _view3(x, axis)
    ones = np.ones_like(x3[:, :1])
    left = np.cumprod(np.concatenate([ones, x3[:, :-1]], axis=1), axis=1)
    right = np.cumprod(np.concatenate([ones, x3[:, :0:-1]], axis=1), axis=1)[:, ::-1]
    return (left * right).reshape(np.shape(x))


@cached_overload(centered)
def _ol_centered(x, axis):
    return centered


@cached_overload(chooser_weights)
def _ol_chooser_weights(x, y, axis):
    if isinstance(x, types.Number):  # the max of a number is the number
        return lambda x, y, axis: 1.0
    return chooser_weights


@register_jitable
def _prod_others3(x3):
    out = np.empty_like(x3)
    one = x3.dtype.type(1)
    for i in range(x3.shape[0]):
        for j in range(x3.shape[2]):
            acc = one
            for k in range(x3.shape[1]):
                out[i, k, j] = acc
                acc *= x3[i, k, j]
            acc = one
            for k in range(x3.shape[1] - 1, -1, -1):
                out[i, k, j] *= acc
                acc *= x3[i, k, j]
    return out


@cached_overload(prod_others)
def _ol_prod_others(x, axis):
    if isinstance(x, types.Number):  # no other elements: the empty product
        return lambda x, axis: 1.0
    return lambda x, axis: _prod_others3(_view3(x, axis)).reshape(x.shape)


# --- cumulative sums -----------------------------------------------------------


def cumsum_along(x, axis, reverse):
    """``np.cumsum(x, axis)``; with ``reverse`` summed from the end (its own pullback)."""
    if axis is None:
        x, axis = np.ravel(x), 0
    if reverse:
        return np.flip(np.cumsum(np.flip(x, axis), axis=axis), axis)
    return np.cumsum(x, axis=axis)


@register_jitable
def _cumsum3(x3, reverse):
    out = np.empty_like(x3)
    n = x3.shape[1]
    for i in range(x3.shape[0]):
        for j in range(x3.shape[2]):
            acc = x3.dtype.type(0)
            for t in range(n):
                k = n - 1 - t if reverse else t
                acc += x3[i, k, j]
                out[i, k, j] = acc
    return out


@cached_overload(cumsum_along)
def _ol_cumsum_along(x, axis, reverse):
    if _is_none(axis):
        return lambda x, axis, reverse: _cumsum3(_view3(x, axis), reverse).reshape((x.size,))
    return lambda x, axis, reverse: _cumsum3(_view3(x, axis), reverse).reshape(x.shape)


# --- shape ---------------------------------------------------------------------


def reshape_like(dy, x):
    """``dy`` reshaped to ``x``'s shape (the pullback of reshape, ravel, expand_dims)."""
    return np.reshape(dy, np.shape(x))


@cached_overload(reshape_like)
def _ol_reshape_like(dy, x):
    return lambda dy, x: np.ascontiguousarray(dy).reshape(x.shape)


def shaped_like(dy, y):
    """``dy`` (as many elements as ``y``) with ``y``'s shape; a number for a number ``y``:
    the pullback of ``reshape_like`` and ``kept`` (nested differentiation)."""
    if np.ndim(y) == 0:
        return np.sum(dy)
    return dy if np.shape(dy) == np.shape(y) else np.reshape(dy, np.shape(y))


@cached_overload(shaped_like)
def _ol_shaped_like(dy, y):
    if not isinstance(y, types.Array):
        return (lambda dy, y: np.sum(dy)) if isinstance(dy, types.Array) else (lambda dy, y: dy)
    if isinstance(dy, types.Array) and dy.ndim == y.ndim:
        return lambda dy, y: dy
    return lambda dy, y: np.ascontiguousarray(dy).reshape(y.shape)


def transpose_back(dy, axes):
    """Undo ``np.transpose(x, axes)`` on the gradient ``dy``."""
    return np.transpose(dy, None if axes is None else np.argsort(np.mod(axes, np.ndim(dy))))


@overload(transpose_back)
def _ol_transpose_back(dy, axes):
    if _is_none(axes):
        return lambda dy, axes: np.transpose(dy)
    nd = len(axes)

    def impl(dy, axes):
        inv = np.empty(nd, np.int64)
        for k in range(nd):
            inv[axes[k] + nd if axes[k] < 0 else axes[k]] = k
        return np.transpose(dy, to_fixed_tuple(inv, nd))

    return impl


def split_like(dy, arrays, axis):
    """Cut ``dy`` along ``axis`` into pieces shaped like ``arrays`` (a tuple of gradients).

    Serves concatenate (pieces of ``a.shape[axis]`` rows) and stack (one row each,
    the axis dropped): a piece has ``a.size / (pre * post)`` rows of ``dy``'s blocks.
    """
    dy = np.asarray(dy)
    pre, _, post = _np_blocks(dy.shape, axis)
    d3 = dy.reshape(pre, -1, post)
    grads, off = [], 0
    for a in arrays:
        m = np.size(a) // (pre * post) if pre * post else 0
        grads.append(d3[:, off:off + m, :].reshape(np.shape(a)))
        off += m
    return tuple(grads)


@register_jitable
def _piece(d3, a, off):
    pq = d3.shape[0] * d3.shape[2]
    m = a.size // pq if pq > 0 else 0
    return np.ascontiguousarray(d3[:, off:off + m, :]).reshape(a.shape), off + m


@functools.cache
def _splitter(k: int):
    """A compiled ``split_like`` for a tuple of ``k`` arrays (the tuple is unrolled)."""
    lines = ["def impl(dy, arrays, axis):",
             "    pre, n, post, _ = _blocks(dy.shape, axis)",
             "    d3 = np.ascontiguousarray(dy).reshape((pre, n, post))",
             "    off = 0"]
    lines += [f"    g{i}, off = _piece(d3, arrays[{i}], off)" for i in range(k)]
    lines.append("    return (" + "".join(f"g{i}, " for i in range(k)) + ")")
    ns = {"np": np, "_blocks": _blocks, "_piece": _piece}
    exec("\n".join(lines), ns)
    return ns["impl"]


@overload(split_like)
def _ol_split_like(dy, arrays, axis):
    _check_axis(axis, "split_like")
    if _is_none(axis) or not isinstance(arrays, types.BaseTuple):
        raise TypingError("split_like: needs a tuple of arrays and an int axis in compiled code")
    return _splitter(len(arrays))


# --- indexing ------------------------------------------------------------------


def scatter_add(dy, x, index):
    """Zeros shaped like ``x`` with ``dy`` added at ``x[index]``; repeated indices accumulate."""
    g = np.zeros(np.shape(x), dtype=np.result_type(x, dy))
    np.add.at(g, index, dy)
    return g


def _is_int_array(t) -> bool:
    return isinstance(t, types.Array) and isinstance(t.dtype, types.Integer)


@cached_overload(scatter_add)
def _ol_scatter_add(dy, x, index):
    if _is_int_array(index):
        if x.ndim == 1:
            def impl_flat(dy, x, index):
                g = np.zeros(x.shape, dtype=x.dtype)
                d = np.ravel(dy)
                for k, i in enumerate(np.ravel(index)):
                    g[i] += d[k]
                return g
            return impl_flat
        if index.ndim == 1:
            def impl_rows(dy, x, index):
                g = np.zeros(x.shape, dtype=x.dtype)
                for k in range(index.shape[0]):
                    g[index[k]] += dy[k]
                return g
            return impl_rows
        raise TypingError("scatter_add: an n-d integer index into an n-d array is not supported")
    parts = index.types if isinstance(index, types.BaseTuple) else (index,)
    if any(isinstance(p, types.Array) for p in parts):
        raise TypingError("scatter_add: integer arrays inside an index tuple are not supported; "
                          "index with one integer array, or with ints, slices and None")

    def impl_basic(dy, x, index):  # basic indexing never repeats an element
        g = np.zeros(x.shape, dtype=x.dtype)
        g[index] = dy
        return g

    return impl_basic


# --- selection -----------------------------------------------------------------


def select(cond, dy):
    """``dy`` where ``cond`` holds, else 0, in ``dy``'s dtype.

    The pullback of a choice (``where``, ``clip``): only the taken side's mask
    touches ``dy``, so an inf or NaN on the untaken side never reaches it.
    """
    out = np.where(cond, dy, np.zeros_like(dy))
    return out if out.ndim else out[()]


@overload(select)
def _ol_select(cond, dy):
    if isinstance(dy, types.Array):
        if isinstance(cond, types.Array):
            return lambda cond, dy: np.where(cond, dy, np.zeros_like(dy))
        return lambda cond, dy: dy.copy() if cond else np.zeros_like(dy)
    if isinstance(cond, types.Array):
        raise TypingError("select: an array condition needs an array gradient")
    scalar = dy  # a Numba number type, called inside compiled code to make a typed zero
    return lambda cond, dy: dy if cond else scalar(0)


# --- linear algebra ------------------------------------------------------------

def mixed_dot(x, y):
    """``np.dot(x, y)`` of float32 and float64 operands in NumPy's common dtype (Numba's
    ``np.dot`` takes one dtype: compiled code converts the other operand first)."""
    return np.dot(x, y)


def mixed_solve(a, b):
    """``np.linalg.solve(a, b)`` in the operands' common dtype, as ``mixed_dot``."""
    return np.linalg.solve(a, b)


def _dtype_of(t):
    """The NumPy dtype of a Numba array or number type."""
    return as_dtype(t.dtype if isinstance(t, types.Array) else t)


def _in_common_dtype(fn):
    """An overload of a two-operand ``fn`` that first converts the operands whose dtype is
    not their common one (NumPy's promotion)."""

    def typer(x, y):
        to = np.result_type(_dtype_of(x), _dtype_of(y)).type
        if _dtype_of(x) == to and _dtype_of(y) == to:
            return lambda x, y: fn(x, y)
        return lambda x, y: fn(np.asarray(x).astype(to), np.asarray(y).astype(to))

    return typer


overload(mixed_dot)(_in_common_dtype(np.dot))
overload(mixed_solve)(_in_common_dtype(np.linalg.solve))


def in_dtype_of(g, a):
    """The gradient ``g`` in the dtype of the float array ``a`` it is the gradient of
    (float32 in, float32 out); ``g`` itself when the dtypes agree or ``a`` is no float."""
    dt = np.asarray(a).dtype
    if dt.kind != "f" or np.asarray(g).dtype == dt:
        return g
    return g.astype(dt) if isinstance(g, np.ndarray) else dt.type(g)


@overload(in_dtype_of)
def _ol_in_dtype_of(g, a):
    if not isinstance(a, types.Array) or not isinstance(a.dtype, types.Float) \
            or _dtype_of(g) == _dtype_of(a):
        return lambda g, a: g
    to = as_dtype(a.dtype).type
    if isinstance(g, types.Array):
        return lambda g, a: g.astype(to)
    return lambda g, a: to(g)


# Gradients of np.dot(a, b) by (a.ndim, b.ndim); NumPy code, so plain and compiled share it.
_DOT_GRAD_A = {
    (1, 1): lambda dy, a, b: in_dtype_of(dy * b, a),
    (2, 1): lambda dy, a, b: in_dtype_of(np.outer(dy, b), a),
    (1, 2): lambda dy, a, b: in_dtype_of(mixed_dot(b, dy), a),
    (2, 2): lambda dy, a, b: in_dtype_of(mixed_dot(dy, b.T), a),
}
_DOT_GRAD_B = {
    (1, 1): lambda dy, a, b: in_dtype_of(dy * a, b),
    (2, 1): lambda dy, a, b: in_dtype_of(mixed_dot(a.T, dy), b),
    (1, 2): lambda dy, a, b: in_dtype_of(np.outer(a, dy), b),
    (2, 2): lambda dy, a, b: in_dtype_of(mixed_dot(a.T, dy), b),
}


def _dot_impl(table, a, b, where: str, error=TypingError):
    impl = table.get((a.ndim, b.ndim))
    if impl is None:
        raise error(f"{where}: supports 1-d and 2-d operands, got {a.ndim}-d and {b.ndim}-d")
    return impl


def dot_grad_a(dy, a, b):
    """Gradient of ``np.dot(a, b)`` (or ``a @ b``) with respect to ``a``, 1-d/2-d operands,
    in ``a``'s dtype."""
    return _dot_impl(_DOT_GRAD_A, np.asarray(a), np.asarray(b), "dot_grad_a", ValueError)(dy, a, b)


def dot_grad_b(dy, a, b):
    """Gradient of ``np.dot(a, b)`` (or ``a @ b``) with respect to ``b``, 1-d/2-d operands,
    in ``b``'s dtype."""
    return _dot_impl(_DOT_GRAD_B, np.asarray(a), np.asarray(b), "dot_grad_b", ValueError)(dy, a, b)


@cached_overload(dot_grad_a)
def _ol_dot_grad_a(dy, a, b):
    return _dot_impl(_DOT_GRAD_A, a, b, "dot_grad_a")


@cached_overload(dot_grad_b)
def _ol_dot_grad_b(dy, a, b):
    return _dot_impl(_DOT_GRAD_B, a, b, "dot_grad_b")


# --- keepdims ------------------------------------------------------------------


def _flag(keepdims, fname: str) -> bool | None:
    """The value of a literal ``keepdims`` (the result's ndim depends on it); None for a
    bool variable, which the overload then asks Numba to make literal (``literally``)."""
    if _is_none(keepdims):
        return False
    if isinstance(keepdims, (types.BooleanLiteral, types.IntegerLiteral)):
        return bool(keepdims.literal_value)
    if isinstance(keepdims, types.Boolean):
        return None
    raise TypingError(f"{fname}: keepdims must be True or False, got {keepdims}")


@functools.cache
def _keeper(nd: int):
    """A compiled ``keep(shape, ax)``: ``shape`` with entry ``ax`` set to 1."""

    @register_jitable
    def keep(shape, ax):
        out = np.empty(nd, np.int64)
        for i in range(nd):
            out[i] = 1 if i == ax else shape[i]
        return to_fixed_tuple(out, nd)

    return keep


def kept(y, x, axis, keepdims):
    """The reduction ``y`` of ``x`` over ``axis`` reshaped as ``keepdims=True`` would give it.

    ``keepdims=False`` returns ``y`` as it is.  In compiled code ``keepdims`` must be a
    literal (a bool argument is made one with ``numba.literally``).  The pullbacks need
    no inverse: ``expand_along`` accepts a gradient that kept the axis.
    """
    if not keepdims:
        return y
    if axis is None:
        return np.reshape(y, (1,) * np.ndim(x))
    return np.expand_dims(y, axis)


@overload(kept, prefer_literal=True)
def _ol_kept(y, x, axis, keepdims):
    _check_axis(axis, "kept")
    flag = _flag(keepdims, "kept")
    if flag is None:
        return lambda y, x, axis, keepdims: literally(keepdims)
    if not flag:
        return lambda y, x, axis, keepdims: y
    if _is_none(axis) or x.ndim == 1:
        ones = (1,) * x.ndim
        return lambda y, x, axis, keepdims: np.full(ones, y)
    keep = _keeper(x.ndim)

    def impl(y, x, axis, keepdims):
        ax = _blocks(x.shape, axis)[3]
        return np.ascontiguousarray(y).reshape(keep(x.shape, ax))

    return impl


# --- sort and flip along an axis -----------------------------------------------


def sort_along(x, axis):
    """``np.sort(x, axis)`` (axis None: the flattened array); compiles for an int axis."""
    return np.sort(x, axis=axis)


def unsort(dy, x, axis):
    """The gradient of ``np.sort(x, axis)``: each entry of ``dy`` goes back to the
    element of ``x`` that was sorted into its place (ties: to one of them)."""
    x = np.asarray(x)
    shape = x.shape
    if axis is None:
        x, dy, axis = x.ravel(), np.ravel(dy), 0
    order = np.argsort(x, axis=axis, kind="stable")
    g = np.empty_like(dy)
    np.put_along_axis(g, order, dy, axis=axis)
    return g.reshape(shape)


@register_jitable
def _sort3(x3):
    out = np.empty_like(x3)
    for i in range(x3.shape[0]):
        for j in range(x3.shape[2]):
            out[i, :, j] = np.sort(x3[i, :, j])
    return out


@register_jitable
def _unsort3(d3, x3):
    g = np.empty_like(d3)
    for i in range(x3.shape[0]):
        for j in range(x3.shape[2]):
            order = np.argsort(x3[i, :, j], kind="mergesort")
            for t in range(x3.shape[1]):
                g[i, order[t], j] = d3[i, t, j]
    return g


@cached_overload(sort_along)
def _ol_sort_along(x, axis):
    _check_axis(axis, "sort_along")
    if _is_none(axis):
        return lambda x, axis: _sort3(_view3(x, axis)).reshape((x.size,))
    return lambda x, axis: _sort3(_view3(x, axis)).reshape(x.shape)


@cached_overload(unsort)
def _ol_unsort(dy, x, axis):
    _check_axis(axis, "unsort")
    return lambda dy, x, axis: _unsort3(_view3(dy, axis), _view3(x, axis)).reshape(x.shape)


def flip_along(x, axis):
    """``np.flip(x, axis)`` (axis None: every axis); compiles for an int axis too."""
    return np.flip(x, axis)


@cached_overload(flip_along)
def _ol_flip_along(x, axis):
    _check_axis(axis, "flip_along")
    if _is_none(axis):
        return lambda x, axis: np.flip(x)
    return lambda x, axis: np.ascontiguousarray(_view3(x, axis)[:, ::-1, :]).reshape(x.shape)


# --- diagonals -------------------------------------------------------------------


def diag_back(dy, v, k):
    """The gradient of ``np.diag(v, k)``: for a 1-d ``v`` the ``k``-th diagonal of ``dy``;
    for a 2-d ``v`` zeros shaped like ``v`` with ``dy`` on its ``k``-th diagonal."""
    if np.ndim(v) == 1:
        return np.diag(dy, k).copy()
    g = np.zeros(np.shape(v), dtype=np.asarray(dy).dtype)
    n = np.size(dy)
    g[max(-k, 0) + np.arange(n), max(k, 0) + np.arange(n)] = dy
    return g


@cached_overload(diag_back)
def _ol_diag_back(dy, v, k):
    if v.ndim == 1:
        return lambda dy, v, k: np.diag(dy, k)

    def impl(dy, v, k):
        g = np.zeros(v.shape, dtype=dy.dtype)
        r0 = max(-k, 0)
        c0 = max(k, 0)
        for i in range(dy.shape[0]):
            g[r0 + i, c0 + i] = dy[i]
        return g

    return impl


# --- Python's sum, max and min -------------------------------------------------


def _is_seq(t) -> bool:
    return isinstance(t, (types.Array, types.List, types.UniTuple))


def spread(dy, x):
    """The gradient of Python's ``sum(x)`` with respect to ``x`` (an array, list or tuple).

    ``sum`` adds up the entries of ``x`` along its first axis, so each gets all of ``dy``.
    """
    if isinstance(x, np.ndarray):
        return expand_along(dy, x, 0)
    return np.full(len(x), dy)


@cached_overload(spread)
def _ol_spread(dy, x):
    if isinstance(x, types.Array):
        return lambda dy, x: expand_along(dy, x, 0)
    if isinstance(x, (types.List, types.BaseTuple)):
        return lambda dy, x: np.full(len(x), dy)
    raise TypingError(f"spread: sum() of {x} is not supported")


def _beats(v, best, largest):
    return v > best if largest else v < best


def argextreme(a, b, c, d, largest):
    """Where Python's ``max`` (``largest``) or ``min`` finds its value among the arguments
    ``a, b, c, d`` that are not None, or among the entries of ``a`` when it is the only one.

    As in Python, a later value wins only if it is strictly larger (smaller): ties keep
    the first, and a NaN in front stays.
    """
    if b is None and (isinstance(a, (np.ndarray, list, tuple))):
        vals = list(a)
    else:
        vals = [v for v in (a, b, c, d) if v is not None]
    k = 0
    for i in range(1, len(vals)):
        if _beats(vals[i], vals[k], largest):
            k = i
    return k


def extreme_at(a, b, c, d, k):
    """The value ``argextreme`` found: argument ``k``, or ``a[k]`` when ``a`` is the only one."""
    if b is None and (isinstance(a, (np.ndarray, list, tuple))):
        return a[k]
    return (a, b, c, d)[k]


def pick(dy, a, k):
    """The gradient of ``max``/``min`` with respect to its first argument ``a``: ``dy`` at
    position ``k`` of a sequence ``a`` (zeros elsewhere), or ``dy`` if ``k == 0`` for a number."""
    if isinstance(a, (np.ndarray, list, tuple)):
        dt = np.result_type(np.asarray(a).dtype, np.asarray(dy).dtype, np.float32)
        g = np.zeros(np.shape(a), dtype=dt)
        g[k] = dy
        return g
    return select(k == 0, dy)


_beats_jit = register_jitable(_beats)


def _arity(*ts) -> int:
    return sum(not _is_none(t) for t in ts)


@register_jitable
def _argextreme3(a, b, c, largest):
    k = 0
    best = a + 0.0
    if _beats_jit(b, best, largest):
        k, best = 1, b + 0.0
    if _beats_jit(c, best, largest):
        k = 2
    return k


@register_jitable
def _argextreme4(a, b, c, d, largest):
    k = _argextreme3(a, b, c, largest)
    best = a + 0.0 if k == 0 else (b + 0.0 if k == 1 else c + 0.0)
    return 3 if _beats_jit(d, best, largest) else k


@cached_overload(argextreme)
def _ol_argextreme(a, b, c, d, largest):
    n = 1 + _arity(b, c, d)
    if _is_seq(a) and n == 1:
        def impl_seq(a, b, c, d, largest):
            k = 0
            for i in range(1, len(a)):
                if _beats_jit(a[i], a[k], largest):
                    k = i
            return k
        return impl_seq
    if n == 2:
        return lambda a, b, c, d, largest: 1 if _beats_jit(b, a, largest) else 0
    if n == 3:
        return lambda a, b, c, d, largest: _argextreme3(a, b, c, largest)
    return _argextreme4


@cached_overload(extreme_at)
def _ol_extreme_at(a, b, c, d, k):
    n = 1 + _arity(b, c, d)
    if _is_seq(a) and n == 1:
        return lambda a, b, c, d, k: a[k]
    if n == 2:
        return lambda a, b, c, d, k: b if k == 1 else a
    if n == 3:
        return lambda a, b, c, d, k: c if k == 2 else (b if k == 1 else a)
    return lambda a, b, c, d, k: d if k == 3 else (c if k == 2 else (b if k == 1 else a))


@cached_overload(pick)
def _ol_pick(dy, a, k):
    if isinstance(a, types.Array):
        def impl_array(dy, a, k):
            g = np.zeros(a.shape, a.dtype)
            g[k] = dy
            return g
        return impl_array
    if isinstance(a, (types.List, types.UniTuple)):
        def impl_seq(dy, a, k):
            g = np.zeros(len(a))
            g[k] = dy
            return g
        return impl_seq
    return lambda dy, a, k: select(k == 0, dy)


# --- differences -----------------------------------------------------------------


def diff_back(dy, x, n):
    """The gradient of ``np.diff(x, n)`` (along the last axis): the adjoint of the first
    difference applied ``n`` times."""
    m = np.shape(x)[-1]
    if n > m:
        return np.zeros(np.shape(x), dtype=np.asarray(dy).dtype)
    g = np.asarray(dy)
    for _ in range(n):
        z = np.zeros(g.shape[:-1] + (g.shape[-1] + 1,), dtype=g.dtype)
        z[..., 1:] += g
        z[..., :-1] -= g
        g = z
    return g


@cached_overload(diff_back)
def _ol_diff_back(dy, x, n):
    def impl(dy, x, n):
        m = x.shape[-1]
        if n > m or m == 0:
            return np.zeros(x.shape, dtype=dy.dtype)
        rows = x.size // m
        g = np.ascontiguousarray(dy).reshape((rows, m - n))
        for _ in range(n):
            w = g.shape[1]
            z = np.zeros((rows, w + 1), dtype=g.dtype)
            for r in range(rows):
                for j in range(w):
                    z[r, j + 1] += g[r, j]
                    z[r, j] -= g[r, j]
            g = z
        return g.reshape(x.shape)

    return impl
