"""The global random generators' state, saved and restored: replayed draws.

Code that runs a step again (a ``jg.checkpointed`` loop's recomputation from a snapshot,
a checkpointed region rerun by the reverse sweep, a ``vjp`` pullback) must draw the same
numbers the first run drew.  Generated code keeps the generators' state next to the
state it recomputes from: ``rng_reserve(buf, k)`` makes room for ``k`` states in a 1-d
``uint8`` storage, ``rng_store(buf, i)`` copies the state into entry ``i`` and
``rng_load(buf, i)`` makes it the generators' state again; a checkpointed region tapes
``rng_saved()`` (a new one-entry storage) at its entry.

Which generators: with ``jit=False`` NumPy's global ``RandomState`` (``np.random.*``) and
Python's ``random`` module; compiled, Numba's own per-thread generators for the same two
(``numba_get_np_random_state``/``..._py_...``: ``np.random.seed`` in compiled code seeds
them, NumPy's does not).  Each state is stored in the layout of Numba's ``rnd_state_t``
(``index``, ``mt[624]``, ``has_gauss``, ``gauss``, ``is_initialized``: 2520 bytes),
NumPy's and ``random``'s packed into it the same way, so that one storage and one
generated text serve both modes.  ``capture``/``restore`` do the same from Python for all
four generators (the API's replays: ``vjp``'s pullback, ``jacfwd``'s columns).
"""

from __future__ import annotations

import contextlib
import ctypes
import random
from collections.abc import Iterator

import numpy as np
from llvmlite import ir
from numba import carray, types
from numba._helperlib import rnd_get_np_state_ptr, rnd_get_py_state_ptr
from numba.cpython import randomimpl
from numba.extending import intrinsic, overload, register_jitable

__all__ = ["RNG_BYTES", "STATE_BYTES", "capture", "restore", "rng_load", "rng_reserve",
           "replaying", "rng_saved", "rng_store"]

#: one generator's state in ``rnd_state_t``'s layout; two generators per entry
STATE_BYTES = 2520
RNG_BYTES = 2 * STATE_BYTES
_MT = 624
_INDEX, _KEYS, _HAS_GAUSS, _GAUSS, _INIT = 0, 4, 4 + 4 * _MT, 2504, 2512


def _state_ptr(which: str):
    """An intrinsic: the calling thread's Numba ``which`` ("np"/"py") generator state, as
    a ``uint8`` pointer."""

    @intrinsic
    def ptr(typingctx):
        def codegen(context, builder, sig, args):
            if context.get_abi_sizeof(randomimpl.rnd_state_t) != STATE_BYTES:
                raise RuntimeError("Numba's rnd_state_t is not the layout jitgrad knows")
            p = randomimpl.get_state_ptr(context, builder, which)
            return builder.bitcast(p, ir.IntType(8).as_pointer())

        return types.CPointer(types.uint8)(), codegen

    return ptr


_np_state = _state_ptr("np")
_py_state = _state_ptr("py")


# --- plain Python: NumPy's and random's state packed in the same layout --------------

def _pack(row: np.ndarray, index: int, keys, has_gauss: int, gauss: float) -> None:
    row[_INDEX:_INDEX + 4].view(np.int32)[0] = index
    row[_KEYS:_KEYS + 4 * _MT].view(np.uint32)[:] = keys
    row[_HAS_GAUSS:_HAS_GAUSS + 4].view(np.int32)[0] = has_gauss
    row[_GAUSS:_GAUSS + 8].view(np.float64)[0] = gauss
    row[_INIT:_INIT + 4].view(np.int32)[0] = 1


def _unpack(row: np.ndarray) -> tuple[int, np.ndarray, int, float]:
    return (int(row[_INDEX:_INDEX + 4].view(np.int32)[0]),
            row[_KEYS:_KEYS + 4 * _MT].view(np.uint32).copy(),
            int(row[_HAS_GAUSS:_HAS_GAUSS + 4].view(np.int32)[0]),
            float(row[_GAUSS:_GAUSS + 8].view(np.float64)[0]))


def _python_store(row: np.ndarray) -> None:
    _, keys, pos, has_gauss, gauss = np.random.get_state(legacy=True)
    _pack(row[:STATE_BYTES], pos, keys, has_gauss, gauss)
    version, internal, gauss_next = random.getstate()
    _pack(row[STATE_BYTES:], internal[-1], internal[:-1], gauss_next is not None,
          gauss_next or 0.0)


def _python_load(row: np.ndarray) -> None:
    pos, keys, has_gauss, gauss = _unpack(row[:STATE_BYTES])
    np.random.set_state(("MT19937", keys, pos, has_gauss, gauss))
    index, keys, has_gauss, gauss = _unpack(row[STATE_BYTES:])
    random.setstate((3, (*(int(k) for k in keys), index), gauss if has_gauss else None))


# --- the helpers generated code calls ------------------------------------------------

def rng_reserve(buf: np.ndarray, k: int) -> np.ndarray:
    """``buf`` (1-d ``uint8`` storage) with room for ``k`` generator states."""
    if buf.shape[0] >= k * RNG_BYTES:
        return buf
    return np.empty(k * RNG_BYTES, dtype=np.uint8)


def rng_store(buf: np.ndarray, i: int) -> None:
    """Keep the generators' state in entry ``i`` of ``buf``."""
    _python_store(buf[i * RNG_BYTES:(i + 1) * RNG_BYTES])


def rng_load(buf: np.ndarray, i: int) -> None:
    """Make entry ``i`` of ``buf`` the generators' state again."""
    _python_load(buf[i * RNG_BYTES:(i + 1) * RNG_BYTES])


def rng_saved() -> np.ndarray:
    """The generators' state, in a new one-entry storage (``rng_load(it, 0)``)."""
    buf = np.empty(RNG_BYTES, dtype=np.uint8)
    rng_store(buf, 0)
    return buf


@register_jitable
def _copy_out(buf, at):
    a = carray(_np_state(), STATE_BYTES)
    b = carray(_py_state(), STATE_BYTES)
    for k in range(STATE_BYTES):
        buf[at + k] = a[k]
        buf[at + STATE_BYTES + k] = b[k]


@register_jitable
def _copy_in(buf, at):
    a = carray(_np_state(), STATE_BYTES)
    b = carray(_py_state(), STATE_BYTES)
    for k in range(STATE_BYTES):
        a[k] = buf[at + k]
        b[k] = buf[at + STATE_BYTES + k]


@overload(rng_reserve)
def _ol_rng_reserve(buf, k):
    def impl(buf, k):
        if buf.shape[0] >= k * RNG_BYTES:
            return buf
        return np.empty(k * RNG_BYTES, dtype=np.uint8)
    return impl


@overload(rng_saved)
def _ol_rng_saved():
    def impl():
        buf = np.empty(RNG_BYTES, dtype=np.uint8)
        _copy_out(buf, 0)
        return buf
    return impl


@overload(rng_store)
def _ol_rng_store(buf, i):
    return lambda buf, i: _copy_out(buf, i * RNG_BYTES)


@overload(rng_load)
def _ol_rng_load(buf, i):
    return lambda buf, i: _copy_in(buf, i * RNG_BYTES)


# --- from Python: all four generators (the API's replays) ----------------------------

def capture() -> tuple:
    """The state of NumPy's and ``random``'s global generators and of the calling thread's
    compiled ones (``restore`` makes it current again)."""
    compiled = ctypes.create_string_buffer(RNG_BYTES)
    ctypes.memmove(compiled, rnd_get_np_state_ptr(), STATE_BYTES)
    ctypes.memmove(ctypes.byref(compiled, STATE_BYTES), rnd_get_py_state_ptr(), STATE_BYTES)
    return np.random.get_state(legacy=True), random.getstate(), compiled.raw


def restore(state: tuple) -> None:
    """Make a ``capture`` the generators' state again."""
    np.random.set_state(state[0])
    random.setstate(state[1])
    ctypes.memmove(rnd_get_np_state_ptr(), state[2], STATE_BYTES)
    ctypes.memmove(rnd_get_py_state_ptr(), state[2][STATE_BYTES:], STATE_BYTES)


@contextlib.contextmanager
def replaying(state: tuple | None) -> Iterator[None]:
    """Run the block from the generators' ``state`` (a ``capture``; None: as they are),
    giving back afterwards the state they had before it: a rerun draws what the first
    run drew and consumes nothing."""
    if state is None:
        yield
        return
    now = capture()
    restore(state)
    try:
        yield
    finally:
        restore(now)
