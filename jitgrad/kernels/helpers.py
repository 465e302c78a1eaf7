"""Type-generic helpers that generated code calls.

Each helper is a plain Python function (used with ``jit=False`` and by the
runtime) plus a ``numba.extending.overload`` so that Numba specialises it per
argument type inside compiled code.  The overloads are ``cached_overload``s: Numba
keeps their machine code on disk, so a process compiles a helper only the first time
the machine sees its argument types (not in every process's first gradient call).
"""

from __future__ import annotations

import numpy as np
from numba import types

from .cached import cached_overload, njit_cached

__all__ = ["unbroadcast", "broadcast_like", "zeros_like", "snapshot", "restore_into",
           "trip_count", "pow_log", "guard", "tape_reserve", "ws_zeros_like", "digamma",
           "shape_stand_in", "np_zeros_like", "np_empty_like", "np_matmul", "add_outer",
           "add_outers", "lane_sum", "tape_from", "copy_into"]


def _is_array(t) -> bool:
    return isinstance(t, types.Array)


# --- unbroadcast: sum a gradient back to the shape of the operand -----------

#: raised where an adjoint cannot have been broadcast from its value: the sign of an
#: array whose shape changed between the sweeps' views of it (a loop-carried array rebound
#: to a slice or concatenation of itself), never a silently wrong gradient
SHAPE_MISMATCH = ("jitgrad: a gradient does not have the shape of its value (an array that "
                  "changes shape from one loop trip to the next, e.g. 'u = u[1:] * c'? keep "
                  "one shape: preallocate the array and write into it)")


def unbroadcast(g, x):
    """Reduce ``g`` to the shape of ``x`` (reverse of NumPy broadcasting); a ``g`` that
    ``x`` cannot have been broadcast to raises ``ValueError`` (``SHAPE_MISMATCH``)."""
    xs = np.shape(x)
    gs = np.shape(g)
    if xs == gs:
        return g
    if len(xs) == 0:
        return np.sum(g)
    if len(gs) == 0:
        return np.full(xs, g, dtype=np.result_type(x, g))
    lead = len(gs) - len(xs)
    if lead < 0 or any(n != 1 and n != m for n, m in zip(xs, gs[lead:], strict=True)):
        raise ValueError(SHAPE_MISMATCH)
    if lead > 0:
        g = np.sum(g, axis=tuple(range(lead)))
    axes = tuple(i for i, n in enumerate(xs) if n == 1 and g.shape[i] != 1)
    if axes:
        g = np.sum(g, axis=axes, keepdims=True)
    return g


def _sum_to_shape(g, shape):
    """``g`` summed to ``shape`` (a tuple of one or more lengths that ``g`` was broadcast
    from): over its leading axes and where ``shape`` has length 1.  One loop nest for
    every rank: a row loop over ``g``'s last axis and an odometer over the others."""
    gnd = g.ndim
    lead = gnd - len(shape)
    step = np.zeros(gnd, np.intp)  # out's element stride along each axis of g; 0: summed
    size = 1
    for j in range(len(shape) - 1, -1, -1):
        n = shape[j]
        if n != 1 and n != g.shape[j + lead]:  # x cannot have been broadcast to g
            raise ValueError(SHAPE_MISMATCH)
        if n != 1:
            step[j + lead] = size
        size *= n
    out = np.zeros(size, dtype=g.dtype)
    flat = np.ascontiguousarray(g).reshape(g.size)
    inner, at, base = g.shape[gnd - 1], 0, 0
    s_inner = step[gnd - 1]  # 0 or 1
    idx = np.zeros(gnd, np.intp)
    while at < flat.shape[0]:
        row = flat[at:at + inner]  # indices from range: no wraparound, vectorised
        if s_inner == 0:  # the row summed into one element, in a register
            acc = out[base]
            for t in range(inner):
                acc += row[t]
            out[base] = acc
        else:
            dst = out[base:base + inner]
            for t in range(inner):
                dst[t] += row[t]
        at += inner
        k = gnd - 2  # the next row: step the odometer over the outer axes
        while k >= 0:
            idx[k] += 1
            base += step[k]
            if idx[k] < g.shape[k]:
                break
            base -= step[k] * g.shape[k]
            idx[k] = 0
            k -= 1
    return out.reshape(shape)


_sum_to_shape_jit = njit_cached(_sum_to_shape)


def _unbroadcast_small(g, x):
    out = np.zeros(x.shape, dtype=g.dtype)
    out += g
    return out


@cached_overload(unbroadcast)
def _ol_unbroadcast(g, x):
    if not _is_array(x):
        if _is_array(g):
            return lambda g, x: np.sum(g)
        return lambda g, x: g
    if not _is_array(g):
        return lambda g, x: np.full(x.shape, g)
    if g.ndim < x.ndim:
        return _unbroadcast_small
    if x.ndim == 0:
        return lambda g, x: np.full(x.shape, np.sum(g))
    if g.ndim == x.ndim:
        return lambda g, x: g if g.shape == x.shape else _sum_to_shape_jit(g, x.shape)
    return lambda g, x: _sum_to_shape_jit(g, x.shape)


def broadcast_like(dy, g):
    """``dy``, shaped like ``unbroadcast(g, x)``, made ``g``-shaped again: broadcast back
    where ``unbroadcast`` summed, summed where it broadcast (its pullback: nested
    differentiation differentiates generated gradient code)."""
    gs, ds = np.shape(g), np.shape(dy)
    if gs == ds:
        return dy
    if len(gs) == 0:
        return np.sum(dy)
    if len(ds) <= len(gs):
        return np.broadcast_to(dy, gs).copy()
    return unbroadcast(dy, g)


@cached_overload(broadcast_like)
def _ol_broadcast_like(dy, g):
    if not _is_array(g):
        return (lambda dy, g: np.sum(dy)) if _is_array(dy) else (lambda dy, g: dy)
    if not _is_array(dy):
        return lambda dy, g: np.full(g.shape, dy)
    if dy.ndim <= g.ndim:
        return lambda dy, g: np.broadcast_to(dy, g.shape).copy()
    return lambda dy, g: unbroadcast(dy, g)


# --- shape_stand_in: an array's shape and dtype, holding no memory -------------------

def shape_stand_in(x):
    """A read-only array of ``x``'s shape and dtype that holds no memory of its own (one
    zero, broadcast): what the adjoint reads of an array it needs only the shape of
    (``backend/shape_only.py``, the tape policy's shape-only tapes), so that the array
    itself can be freed.  Cached: NumPy's ``broadcast_to`` and ``zeros`` inline were two
    implementations for Numba to compile in every process."""
    return np.broadcast_to(np.zeros((), x.dtype), x.shape)


@cached_overload(shape_stand_in)
def _ol_shape_stand_in(x):
    return shape_stand_in


# --- NumPy calls of compiled gradient code, cached (backend/cached_calls.py) ---------

def np_zeros_like(x):
    """``np.zeros_like(x)``, its machine code kept on disk (``backend/cached_calls.py``)."""
    return np.zeros_like(x)


def np_empty_like(x):
    """``np.empty_like(x)``, its machine code kept on disk."""
    return np.empty_like(x)


def np_matmul(a, b):
    """``a @ b``, its machine code kept on disk."""
    return a @ b


@cached_overload(np_zeros_like)
def _ol_np_zeros_like(x):
    return np_zeros_like


@cached_overload(np_empty_like)
def _ol_np_empty_like(x):
    return np_empty_like


@cached_overload(np_matmul)
def _ol_np_matmul(a, b):
    return np_matmul


# --- zeros_like: the zero adjoint of a value --------------------------------

def zeros_like(x):
    """A zero of the same kind as ``x``: 0.0 for scalars, a zero array for arrays."""
    if isinstance(x, np.ndarray):
        return np.zeros_like(x, dtype=np.result_type(x.dtype, np.float32))
    return 0.0


@cached_overload(zeros_like)
def _ol_zeros_like(x):
    if _is_array(x):
        if isinstance(x.dtype, types.Float):
            return lambda x: np.zeros_like(x)
        return lambda x: np.zeros(x.shape)
    return lambda x: 0.0


# --- same_shape: an array restored from a tape fits its adjoint buffer ------

def same_shape(value, adjoint):
    """Raise ``ValueError`` (``SHAPE_MISMATCH``) unless ``value``, a value of an array that
    the adjoint sweep restores from a tape, has the shape of its one adjoint buffer (a
    loop-carried array that grows by broadcasting, ``y = y * x`` from a ``y`` of one
    element, would otherwise have its adjoint broadcast into the buffer, silently)."""
    if np.shape(value) != np.shape(adjoint):
        raise ValueError(SHAPE_MISMATCH)


@cached_overload(same_shape)
def _ol_same_shape(value, adjoint):
    if not (_is_array(value) and _is_array(adjoint)) or value.ndim != adjoint.ndim:
        def mismatch(value, adjoint):
            raise ValueError(SHAPE_MISMATCH)
        return mismatch

    def impl(value, adjoint):
        if value.shape != adjoint.shape:
            raise ValueError(SHAPE_MISMATCH)
    return impl


# --- snapshot: a copy that later in-place writes cannot change --------------

def snapshot(x):
    """Arrays are copied, scalars returned as they are (for tape pushes)."""
    if isinstance(x, np.ndarray):
        return x.copy()
    return x


@cached_overload(snapshot)
def _ol_snapshot(x):
    if _is_array(x):
        return lambda x: x.copy()
    return lambda x: x


def restore_into(dst, src):
    """Write the snapshot ``src`` back into ``dst``'s own buffer (names sharing it see it)."""
    np.copyto(dst, src)


@cached_overload(restore_into)
def _ol_restore_into(dst, src):
    def impl(dst, src):
        for i in np.ndindex(dst.shape):
            dst[i] = src[i]
    return impl


# --- copy_into: an array assignment whose error message is compiled once --------

def copy_into(dst, src):
    """``dst[...] = src``, ``src`` broadcast to ``dst``'s shape, its memory apart from
    ``dst``'s (``backend/view_updates.py``: where the shapes differ; Numba compiles an
    array assignment's shape-mismatch message in every process, this once a machine)."""
    dst[...] = src


def _copy_broadcast(dst, src):
    src = np.broadcast_to(src, dst.shape)
    for i in np.ndindex(dst.shape):
        dst[i] = src[i]


def _fill(dst, src):
    for i in np.ndindex(dst.shape):
        dst[i] = src


@cached_overload(copy_into)
def _ol_copy_into(dst, src):
    return _copy_broadcast if _is_array(src) else _fill


# --- add_outer: a matrix adjoint's outer product, added in place -----------

def add_outer(acc, u, v):
    """``acc += np.outer(u, v)`` without the matrix of the product (``backend/
    outer_updates.py``): ``acc[i, j] += u[i] * v[j]``; shapes that differ raise."""
    add_outers(acc, u, v, u[:0], v[:0])


def add_outers(acc, u1, v1, u2, v2):
    """``acc += np.outer(u1, v1) + np.outer(u2, v2)``, one pass over ``acc`` (``u2`` and
    ``v2`` may be empty: no second product)."""
    if np.shape(acc) != (np.size(u1), np.size(v1)) or np.size(u2) and np.shape(acc) != (
            np.size(u2), np.size(v2)):
        raise ValueError(SHAPE_MISMATCH)
    acc += np.outer(u1, v1)
    if np.size(u2):
        acc += np.outer(u2, v2)


@njit_cached
def _span(a):
    """The first and one-past-last byte addresses ``a``'s elements may occupy."""
    lo = hi = a.ctypes.data
    for k in range(a.ndim):
        reach = (a.shape[k] - 1) * a.strides[k]
        if a.shape[k] == 0:
            return lo, lo
        if reach < 0:
            lo += reach
        else:
            hi += reach
    return lo, hi + a.itemsize


@njit_cached
def _apart(acc, x):
    """``x``, or a copy of it where its memory may overlap ``acc``'s (the update writes
    ``acc`` while it reads ``x``)."""
    a0, a1 = _span(acc)
    x0, x1 = _span(x)
    return x.copy() if x0 < a1 and a0 < x1 else x


@cached_overload(add_outer)
def _ol_add_outer(acc, u, v):
    def impl(acc, u, v):
        add_outers(acc, u, v, u[:0], v[:0])
    return impl


@cached_overload(add_outers)
def _ol_add_outers(acc, u1, v1, u2, v2):
    def impl(acc, u1, v1, u2, v2):
        m, n = acc.shape
        two = u2.shape[0] != 0
        if u1.shape[0] != m or v1.shape[0] != n or two and (
                u2.shape[0] != m or v2.shape[0] != n):
            raise ValueError(SHAPE_MISMATCH)
        u1, v1, u2, v2 = _apart(acc, u1), _apart(acc, v1), _apart(acc, u2), _apart(acc, v2)
        rows = acc.strides[0] >= acc.strides[1]  # rows of acc contiguous: j inner
        for i in range(m if rows else n):
            for j in range(n if rows else m):
                r, c = (i, j) if rows else (j, i)
                t = u1[r] * v1[c]
                if two:
                    t += u2[r] * v2[c]
                acc[r, c] += t
    return impl


# --- trip_count: iterations of range(start, stop, step) ---------------------

def trip_count(start, stop, step):
    """Number of iterations of ``range(start, stop, step)``."""
    if step > 0:
        return max(0, (stop - start + step - 1) // step)
    return max(0, (start - stop - step - 1) // (-step))


@cached_overload(trip_count)
def _ol_trip_count(start, stop, step):
    return trip_count


# --- pow_log: log(a) where a > 0, else 0 (exponent gradient of a ** b) ------

def pow_log(a):
    """``log(a)`` where ``a > 0`` and 0 elsewhere, so ``0 ** b`` gives no NaN."""
    if isinstance(a, np.ndarray):
        return np.log(np.where(a > 0, a, 1.0))
    return float(np.log(a)) if a > 0 else 0.0


@cached_overload(pow_log)
def _ol_pow_log(a):
    if _is_array(a):
        return lambda a: np.log(np.where(a > 0, a, 1.0))
    return lambda a: np.log(a) if a > 0 else 0.0


# --- guard: a zero adjoint gives a zero contribution, even at singular points --

def guard(dy, g):
    """``g`` where ``dy != 0``, else 0: keeps ``0 * inf`` NaNs out of masked branches.

    Where ``g`` is already zero (either sign) wherever ``dy`` is, that is ``g`` itself,
    returned as it is (the rules pass a temporary): the common case (finite partials)
    costs one read of ``dy`` and ``g``, not a new array.  Scalars compile to a select."""
    if isinstance(g, np.ndarray) and np.shape(dy) in ((), g.shape) and \
            not np.any((np.asarray(dy) == 0) & (g != 0)):
        return g
    if isinstance(g, np.ndarray) or isinstance(dy, np.ndarray):
        return np.where(np.asarray(dy) != 0, g, 0.0)
    return g if dy != 0 else 0.0 * g if np.isfinite(g) else 0.0


def _masked_zero(dy, g):
    """``g`` is zero wherever ``dy`` is (``dy`` an array of ``g``'s shape).  No early exit:
    a branch per element mispredicts where zeros are scattered; this loop vectorises."""
    a = dy.ravel()
    b = g.ravel()
    bad = False
    for i in range(a.shape[0]):
        bad |= (a[i] == 0) & (b[i] != 0)
    return not bad


def _all_zero(g):
    """Every element of ``g`` is zero (either sign)."""
    b = g.ravel()
    bad = False
    for i in range(b.shape[0]):
        bad |= b[i] != 0
    return not bad


_all_zero_jit = njit_cached(_all_zero)
_masked_zero_jit = njit_cached(_masked_zero)


@cached_overload(guard)
def _ol_guard(dy, g):
    # g itself where it is zero wherever dy is; only where np.where gives g's type anyway
    same = _is_array(g) and g.dtype == types.float64
    if same and not _is_array(dy):
        return lambda dy, g: g if dy != 0 or _all_zero_jit(g) else np.where(dy != 0, g, 0.0)
    if same and dy.ndim == g.ndim:
        return lambda dy, g: g if dy.shape == g.shape and _masked_zero_jit(dy, g) \
            else np.where(dy != 0, g, 0.0)
    if _is_array(g) or _is_array(dy):
        return lambda dy, g: np.where(dy != 0, g, 0.0)
    return lambda dy, g: g if dy != 0 else 0.0


# --- typed tapes: a growable buffer of scalars with a cursor -----------------

def tape_reserve(buf, used, more):
    """``buf`` with room for ``more`` entries after its first ``used`` (doubling when it
    grows; only those ``used`` are copied: a reused tape's tail holds nothing live)."""
    needed = used + more
    if needed <= buf.shape[0]:
        return buf
    new = np.empty(max(needed, 2 * buf.shape[0]), dtype=buf.dtype)
    for k in range(used):  # a loop: slice assignment costs Numba ~2 s to compile
        new[k] = buf[k]
    return new


@cached_overload(tape_reserve)
def _ol_tape_reserve(buf, used, more):
    return tape_reserve  # the Python twin compiles as it is


def tape_get(buf, k):
    """``buf[k]``, compiled without a bounds check: a tape's cursor stays within the
    entries ``tape_reserve`` made room for and the forward sweep wrote."""
    return buf[k]


def tape_put(buf, k, v):
    """``buf[k] = v``, compiled without a bounds check (see ``tape_get``)."""
    buf[k] = v


def tape_from(buf, k):
    """The tape's entries from the ``k``-th on (a view: read with ``tape_get`` at an index
    counted from ``k``)."""
    return buf[k:]


@cached_overload(tape_from)
def _ol_tape_from(buf, k):
    return tape_from


def _tape_get_at(buf, k):
    # the cursor is never negative: indexed unsigned, Numba adds no negative-index wrap
    # (a select on every access), and a loop reading the tape at ``cursor + j`` vectorises
    return buf[np.uintp(k)]


def _tape_put_at(buf, k, v):
    buf[np.uintp(k)] = v


@cached_overload(tape_get, boundscheck=False)
def _ol_tape_get(buf, k):
    return _tape_get_at


@cached_overload(tape_put, boundscheck=False)
def _ol_tape_put(buf, k, v):
    return _tape_put_at


# --- ws_zeros_like: an adjoint buffer zeroed in memory kept between calls ------------

def ws_zeros_like(store, like):
    """``(store, zeros)``: a zero float64 array shaped like ``like`` in the memory of the
    1-d float64 ``store`` (grown, doubling, when too small); a new ``np.zeros_like(like)``
    for other dtypes.  The caller keeps ``store`` for its next call."""
    if like.dtype != np.float64:
        return store, np.zeros_like(like)
    n = like.size
    if store.shape[0] < n:
        store = np.empty(max(n, 2 * store.shape[0]))
    out = store[:n].reshape(like.shape)
    out[...] = 0.0
    return store, out


@cached_overload(ws_zeros_like)
def _ol_ws_zeros_like(store, like):
    if like.dtype != types.float64:
        return lambda store, like: (store, np.zeros_like(like))

    def impl(store, like):
        n = like.size
        if store.shape[0] < n:
            store = np.empty(max(n, 2 * store.shape[0]))
        for k in range(n):
            store[k] = 0.0
        return store, store[:n].reshape(like.shape)
    return impl


# --- lanes: a sum into a scalar split over a loop's iterations (backend/gather.py) ---

def lane_sum(buf, m):
    """The sum of ``buf[:m]`` in four interleaved partial sums (independent chains of
    additions: no wait on the previous addition, where one running sum waits on each);
    compiled, in as many as LLVM vectorises it into (another order: round-off apart)."""
    a0 = 0.0
    a1 = 0.0
    a2 = 0.0
    a3 = 0.0
    q = m // 4
    for k in range(q):
        a0 += buf[4 * k]
        a1 += buf[4 * k + 1]
        a2 += buf[4 * k + 2]
        a3 += buf[4 * k + 3]
    for k in range(4 * q, m):
        a0 += buf[k]
    return (a0 + a1) + (a2 + a3)


def _lane_sum_reassoc(buf, m):
    # compiled with ``fastmath={"reassoc"}`` (reassociation only): LLVM splits the sum
    # over vector lanes and unrolled chains, as many as the target runs at once
    s = 0.0
    for k in range(m):
        s += buf[k]
    return s


@cached_overload(lane_sum, boundscheck=False, fastmath={"reassoc"})
def _ol_lane_sum(buf, m):
    return _lane_sum_reassoc  # m <= buf.shape[0]: the caller made the room


# --- digamma: the derivative of log|Gamma| (math.gamma and math.lgamma rules) ---

def digamma(x):
    """``psi(x) = d/dx log|Gamma(x)|`` of a float: NaN at the poles (0, -1, -2, ...) and
    at -inf, inf at inf; never raises.

    Reflection for ``x < 0``, the recurrence ``psi(x) = psi(x + 1) - 1/x`` up to 10,
    then the asymptotic series (relative error below 1e-15).  NumPy scalar arithmetic,
    so the plain-Python twin follows IEEE rules too.
    """
    x = np.float64(x)
    if np.isnan(x) or x == -np.inf:
        return np.nan
    if x == np.inf:
        return np.inf
    if x <= 0.0 and x == np.floor(x):
        return np.nan
    acc = np.float64(0.0)
    if x < 0.0:  # psi(x) = psi(1 - x) - pi / tan(pi x)
        acc = -np.pi / np.tan(np.pi * x)
        x = 1.0 - x
    while x < 10.0:
        acc -= 1.0 / x
        x += 1.0
    inv = 1.0 / (x * x)
    tail = inv * (1.0 / 12 - inv * (1.0 / 120 - inv * (1.0 / 252 - inv * (
        1.0 / 240 - inv * (1.0 / 132 - inv * (691.0 / 32760))))))
    return acc + np.log(x) - 0.5 / x - tail


@cached_overload(digamma)
def _ol_digamma(x):
    return digamma  # the Python twin compiles as it is
