"""Snapshots of arrays (the list tapes of generated gradient code) in memory kept between
calls.

A list tape of array copies (``_tape_u.append(snapshot(u))``) allocated every copy afresh
on every call.  Where the lowering keeps them (``backend/snapshots.py``) the copies of one
call go, one after the other, into a 1-d float64 *store* the caller keeps per thread
(``backend.jit.call``, as the storage of adjoint buffers): ``ws_snapshot(store, used, u)``
copies ``u``'s elements into ``store[used:used + u.size]`` and returns that part shaped
like ``u``; the cursor ``used`` only grows during a call, so no two copies of one call
share memory.  A copy that does not fit is made afresh, and the call ends with
``ws_grow(store, used)``, which replaces a store too small for what the call copied by a
bigger one (not copied: nothing in it is live after the call), so the next call fits.
Arrays other than float64 are copied as before.
"""

from __future__ import annotations

import numpy as np
from numba import types
from numba.extending import overload

from .revolve import copy_elements

__all__ = ["ws_snapshot", "ws_grow"]


def ws_snapshot(store, used, x):
    """``x``'s elements in ``store`` after its first ``used`` (module docstring), shaped like
    ``x``; a new copy where they do not fit or ``x`` is not a float64 array; a scalar as it
    is."""
    if not isinstance(x, np.ndarray):
        return x
    n = x.size
    if x.dtype != np.float64 or used + n > store.shape[0]:
        return x.copy()
    out = store[used:used + n].reshape(x.shape)
    np.copyto(out, x)
    return out


@overload(ws_snapshot)
def _ol_ws_snapshot(store, used, x):
    if not isinstance(x, types.Array):
        return lambda store, used, x: x
    if x.dtype != types.float64:
        return lambda store, used, x: x.copy()

    def impl(store, used, x):
        n = x.size
        if used + n > store.shape[0]:
            return x.copy()
        out = store[used:used + n].reshape(x.shape)
        copy_elements(out, x)
        return out
    return impl


def ws_grow(store, used):
    """``store``, or a new one (doubling) where a call copied ``used`` elements, more than
    it holds (its contents are not kept: the copies of a call are dead after it)."""
    if used <= store.shape[0]:
        return store
    return np.empty(max(used, 2 * store.shape[0]))


@overload(ws_grow)
def _ol_ws_grow(store, used):
    return ws_grow  # the Python twin compiles as it is
