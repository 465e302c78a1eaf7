"""Snapshots of arrays (the list tapes of generated gradient code) in memory kept between
calls.

A list tape of array copies (``_tape_u.append(snapshot(u))``) allocated every copy afresh
on every call.  Where the lowering keeps them (``backend/snapshots.py``) each push writes
into buffer ``k`` of a *store*, a list of 1-d float64 buffers the caller keeps per thread
(``backend.jit.call``): ``ws_snapshot(store, k, u)`` returns a view of that buffer shaped
like ``u`` holding its elements, growing or appending the buffer where it is too small
or missing.  One call's pushes use buffers ``0, 1, 2, ...`` in order, each once, so the
views a call keeps on its tapes never share memory; the next call writes them again.
Arrays other than float64 are copied as before.
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.extending import overload, register_jitable

from .revolve import copy_elements

__all__ = ["ws_snapshot", "empty_store", "store_overlaps"]


@register_jitable
def _buffer_view(store, k, x):
    """Buffer ``k`` of ``store`` (made or grown to hold ``x``), viewed in ``x``'s shape."""
    n = x.size
    if k < len(store):
        buf = store[k]
        if buf.shape[0] < n:
            buf = np.empty(n)
            store[k] = buf
    else:
        buf = np.empty(n)
        store.append(buf)
    return buf[:n].reshape(x.shape)


def ws_snapshot(store, k, x):
    """A copy of ``x`` in buffer ``k`` of ``store`` (module docstring); scalars are returned
    as they are, arrays other than float64 copied afresh."""
    if not isinstance(x, np.ndarray):
        return x
    if x.dtype != np.float64:
        return x.copy()
    out = _buffer_view(store, k, x)
    np.copyto(out, x)
    return out


@overload(ws_snapshot)
def _ol_ws_snapshot(store, k, x):
    if not isinstance(x, types.Array):
        return lambda store, k, x: x
    if x.dtype != types.float64:
        return lambda store, k, x: x.copy()

    def impl(store, k, x):
        out = _buffer_view(store, k, x)
        copy_elements(out, x)
        return out
    return impl


def empty_store(jit: bool):
    """The store a first call gets: a typed list of 1-d float64 buffers (compiled code),
    or a list."""
    if not jit:
        return []
    from numba.typed import List

    return List.empty_list(types.float64[::1])


def _overlaps(store, lo, hi):
    """Whether a buffer of ``store`` shares a byte of ``[lo, hi)``."""
    for b in store:
        start = b.ctypes.data
        if start < hi and lo < start + b.size * 8:
            return True
    return False


_overlaps_compiled = njit(cache=False)(_overlaps)


def store_overlaps(store, x: np.ndarray, jit: bool) -> bool:
    """Whether the array ``x`` shares memory with a buffer of ``store`` (a returned array
    that does is the caller's: the store is not kept)."""
    if not jit:
        return any(np.may_share_memory(b, x) for b in store)
    lo, hi = np.lib.array_utils.byte_bounds(x)
    return bool(_overlaps_compiled(store, lo, hi))
