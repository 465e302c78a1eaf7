"""The binomial (revolve) schedule of a ``jg.checkpointed`` loop, and its snapshot slots.

Griewank and Walther's result: with ``s`` snapshots and ``r`` repetitions (no step run
untaped more than ``r`` times) one can reverse ``beta(s, r) = C(s + r, s)`` steps, and the
fewest untaped step runs for ``l`` steps is ``r * l - C(s + r, s + 1)``.  The generated
code keeps a stack of snapshots (positions ``0 = p_0 < p_1 < ... < p_top``, the state
at each) and calls ``revolve_split`` to place the next one; the reverse sweep takes the
top segment ``(p_top, end)``: splits it again, or (one step left, or no free slot)
advances to its last step, runs that step with its tape and reverses it.

Slots are made where the loop starts, in storage the generated code declares once per
call (and keeps between calls, like its tapes) and grows with ``tape_reserve``: scalars in
a typed array of ``k`` entries, arrays in a ``(k,) + shape`` view of a 1-d storage
(``array_slots``, written by ``store_slot``, read back by ``load_slot``); references go
to a list of ``k`` (``ref_slots``).  A loop inside another loop reuses them every trip.
Under ``jg.hvp`` forward mode gives each its tangent twin: ``store_slot`` and ``load_slot``
copy the tangents too (``analyse.copy_args``), ``ref_slots`` holds the tangents'
references (``rules/second_order.py``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import types
from numba.extending import register_jitable

from .cached import cached_overload

__all__ = ["revolve_split", "snapshot_count", "checkpoint_pays", "each_step_pays",
           "block_split", "block_steps", "block_slots",
           "array_slots", "store_slot", "load_slot", "load_ref", "ref_slots", "copy_elements",
           "Schedule", "schedule", "simulate"]


@register_jitable
def _split(a, b, free):
    """Where to place the next snapshot in the segment ``[a, b)`` whose start is stored,
    with ``free`` more slots: a position ``a < m < b`` minimising the untaped step runs
    (revolve's binomial split), or ``b`` when there is nothing to split (one step left or
    no free slot)."""
    length = b - a
    if length <= 1 or free <= 0:
        return b
    s = min(free, length - 1) + 1  # slots for this segment, its start's included
    r = 0
    beta = 1  # C(s + r, s): steps reversible with s slots and r repetitions
    prev = 1  # C(s + r - 1, s)
    while beta < length:
        r += 1
        prev = beta
        beta = beta * (s + r) // r
    # an optimal first part j lies in [C(s+r-2, s), C(s+r-1, s)] and leaves at most
    # C(s+r-1, s-1) steps to the rest: take the largest such j
    j = min(prev, length - prev * s // (s + r - 1))
    return a + max(1, min(j, length - 1))


def revolve_split(a: int, b: int, free: int) -> int:
    """The next snapshot's position in ``[a, b)`` (``b``: none); see ``_split``."""
    return _split(a, b, free)


@cached_overload(revolve_split)
def _ol_revolve_split(a, b, free):
    return lambda a, b, free: _split(a, b, free)


@register_jitable
def _count(steps, snapshots):
    """See ``snapshot_count``."""
    if snapshots < 0:
        s = 1
        while (s + 2) * (s + 1) // 2 < steps:  # C(s + 2, 2): two repetitions
            s += 1
        return max(1, min(s, steps))
    return max(1, min(int(snapshots), steps))


def snapshot_count(steps: int, snapshots: int) -> int:
    """The number of snapshot slots for ``steps`` steps: ``snapshots`` (at most one per
    step, at least one), or where it is negative (``snapshots=None``) the fewest with which
    no step is recomputed more than once in the reverse sweep (about ``sqrt(2 * steps)``)."""
    return _count(steps, snapshots)


@cached_overload(snapshot_count)
def _ol_snapshot_count(steps, snapshots):
    return lambda steps, snapshots: _count(steps, snapshots)


@register_jitable
def _pays(tape_bytes, steps, state_bytes):
    """See ``checkpoint_pays``."""
    return 4 * _count(steps, -1) * state_bytes <= tape_bytes


def checkpoint_pays(tape_bytes: int, steps: int, state_bytes: int) -> bool:
    """Do the snapshots of a loop of ``steps`` steps on the default binomial schedule
    (``snapshot_count(steps, -1)`` copies of ``state_bytes``) take at most a quarter of
    the ``tape_bytes`` its tape would (automatic checkpointing)?"""
    return _pays(tape_bytes, steps, state_bytes)


@cached_overload(checkpoint_pays)
def _ol_checkpoint_pays(tape_bytes, steps, state_bytes):
    return lambda tape_bytes, steps, state_bytes: _pays(tape_bytes, steps, state_bytes)


def each_step_pays(tape_bytes: int, steps: int, state_bytes: int) -> bool:
    """Does a snapshot before every one of ``steps`` steps (``state_bytes`` each, the
    arrays it refers to counted) take at most half the ``tape_bytes`` the tape would
    (automatic checkpointing, ``Binomial.loop(each_step=True)``)?"""
    return 2 * steps * state_bytes <= tape_bytes


@cached_overload(each_step_pays)
def _ol_each_step_pays(tape_bytes, steps, state_bytes):
    return lambda tape_bytes, steps, state_bytes: 2 * steps * state_bytes <= tape_bytes


@register_jitable
def _block_split(a, b, free, block):
    """``_split`` over blocks of ``block`` steps: ``a`` a block's first step, ``b`` the
    segment's end (a block's first step, or the trip count); a block's first step or ``b``."""
    if block <= 1:
        return _split(a, b, free)
    return min(b, _split(a // block, (b + block - 1) // block, free) * block)


def block_split(a: int, b: int, free: int, block: int) -> int:
    """The next snapshot's step in ``[a, b)`` on the binomial schedule over blocks of
    ``block`` steps (``b``: none); automatic checkpointing reverses a block at a time."""
    return _block_split(a, b, free, block)


@cached_overload(block_split)
def _ol_block_split(a, b, free, block):
    return lambda a, b, free, block: _block_split(a, b, free, block)


@register_jitable
def _block_steps(tape_bytes, steps, budget):
    """See ``block_steps``."""
    per_step = max(1, tape_bytes // max(1, steps))
    return max(1, min(steps, budget // per_step))


def block_steps(tape_bytes: int, steps: int, budget: int) -> int:
    """Steps per block of an automatically checkpointed loop: as many as keep the block's
    tape (``tape_bytes / steps`` each) within ``budget`` bytes, so that it stays in cache
    between the taped steps and their adjoints; at least one."""
    return _block_steps(tape_bytes, steps, budget)


@cached_overload(block_steps)
def _ol_block_steps(tape_bytes, steps, budget):
    return lambda tape_bytes, steps, budget: _block_steps(tape_bytes, steps, budget)


@register_jitable
def _block_slots(steps, block, state_bytes, tape_bytes):
    """See ``block_slots``."""
    blocks = (steps + block - 1) // block
    fit = tape_bytes // max(1, 4 * state_bytes)
    return max(1, min(blocks, max(_count(blocks, -1), fit)))


def block_slots(steps: int, block: int, state_bytes: int, tape_bytes: int) -> int:
    """Snapshot slots for ``steps`` steps in blocks of ``block``: one per block (no block
    recomputed) where those take at most a quarter of the ``tape_bytes`` the tape would,
    else as many as do, and at least the default count over the blocks (``snapshot_count``)."""
    return _block_slots(steps, block, state_bytes, tape_bytes)


@cached_overload(block_slots)
def _ol_block_slots(steps, block, state_bytes, tape_bytes):
    return lambda steps, block, state_bytes, tape_bytes: _block_slots(
        steps, block, state_bytes, tape_bytes)


def array_slots(x: np.ndarray, k: int, store: np.ndarray | None = None) -> np.ndarray:
    """A ``(k,) + x.shape`` buffer for ``k`` snapshots of ``x``'s elements: in the memory of
    the 1-d ``store`` where it has ``x``'s dtype and room (the generated code grows it
    first), else new."""
    n = k * x.size
    if store is not None and store.dtype == x.dtype and store.shape[0] >= n:
        return store[:n].reshape((k,) + x.shape)
    return np.empty((k,) + x.shape, x.dtype)


@cached_overload(array_slots)
def _ol_array_slots(x, k, store=None):
    if store is None or isinstance(store, (types.NoneType, types.Omitted)) \
            or store.dtype != x.dtype:
        return lambda x, k, store=None: np.empty((k,) + x.shape, x.dtype)

    def impl(x, k, store=None):
        n = k * x.size
        if store.shape[0] >= n:
            return store[:n].reshape((k,) + x.shape)
        return np.empty((k,) + x.shape, x.dtype)
    return impl


@register_jitable
def _same_shape(buf, x):
    """Refuse a snapshot of ``x`` in slots made for another shape."""
    if buf.shape[1:] != x.shape:
        raise ValueError("jg.checkpointed: an array of the loop's state changed shape "
                         "between steps; its snapshots need one shape (use a plain range)")


def store_slot(buf: np.ndarray, i: int, x: np.ndarray) -> None:
    """Copy ``x``'s elements into snapshot slot ``i`` of ``buf``."""
    _same_shape(buf, x)
    buf[i] = x


@register_jitable
def copy_elements(dst, src):
    """``dst[...] = src`` element by element (compiled: a slice assignment costs Numba
    seconds to compile)."""
    for idx in np.ndindex(src.shape):
        dst[idx] = src[idx]


@cached_overload(store_slot)
def _ol_store_slot(buf, i, x):
    def impl(buf, i, x):
        _same_shape(buf, x)
        copy_elements(buf[i], x)
    return impl


def load_slot(x: np.ndarray, buf: np.ndarray, i: int) -> None:
    """Copy snapshot slot ``i`` of ``buf`` back into ``x``'s own buffer (names sharing it
    see the restored elements)."""
    _same_shape(buf, x)
    x[...] = buf[i]


@cached_overload(load_slot)
def _ol_load_slot(x, buf, i):
    def impl(x, buf, i):
        _same_shape(buf, x)
        copy_elements(x, buf[i])
    return impl


def load_ref(refs: list, i: int, like):
    """The object slot ``i`` of ``refs`` holds (a rebound state name's, one shape each step:
    ``Binomial`` refuses a state whose shape changes); ``like``: that name now, whose shape
    it has (``analysis/shape_classes.py`` gives it ``like``'s class), checked."""
    x = refs[i]
    if isinstance(x, np.ndarray) and isinstance(like, np.ndarray) and x.shape != like.shape:
        raise ValueError("a snapshot of the loop's state has another shape than the state")
    return x


@cached_overload(load_ref)
def _ol_load_ref(refs, i, like):
    if isinstance(like, types.Array):
        def impl(refs, i, like):
            x = refs[i]
            if x.shape != like.shape:
                raise ValueError("a snapshot of the loop's state has another shape")
            return x
        return impl
    return lambda refs, i, like: refs[i]


def ref_slots(x, k: int) -> list:
    """A list of ``k`` references (the object a rebound name holds at each snapshot)."""
    return [x] * k


@cached_overload(ref_slots)
def _ol_ref_slots(x, k):
    def impl(x, k):
        out = [x]
        for _ in range(k - 1):
            out.append(x)
        return out
    return impl


# --- the schedule, counted (reports and tests) ------------------------------------------

def simulate(steps, k, order, runs, block=1):
    """Run the generated code's driver without the steps: (untaped step runs, the forward
    sweep's included; taped step runs; most snapshots live at once).  ``order`` (length
    ``steps``, or 0 to skip) receives the steps in the order they are reversed, ``runs``
    (the same) how often each step runs untaped; ``block``: steps reversed at a time
    (automatic checkpointing's driver, ``binomial._REVERSE_BLOCKS``)."""
    pos = np.zeros(max(k, 1), np.int64)
    top, j, untaped, peak = 0, 0, 0, 1 if steps > 0 else 0
    while j < steps:  # the forward sweep: snapshots where the schedule puts them
        m = _block_split(j, steps, k - 1 - top, block)
        untaped += m - j
        if runs.shape[0]:
            runs[j:m] += 1
        j = m
        if j < steps:
            top += 1
            pos[top] = j
            peak = max(peak, top + 1)
    end, taped = steps, 0
    while end > 0:  # the reverse sweep
        a = pos[top]
        m = _block_split(a, end, k - 1 - top, block)
        if m < end:  # advance to m, keep a snapshot there
            untaped += m - a
            if runs.shape[0]:
                runs[a:m] += 1
            top += 1
            pos[top] = m
            peak = max(peak, top + 1)
        else:  # advance to the segment's last block, run it with its tape, reverse it
            m = max(a, (end - 1) // block * block)
            untaped += m - a
            if runs.shape[0]:
                runs[a:m] += 1
            for t in range(end - 1, m - 1, -1):
                if order.shape[0]:
                    order[taped] = t
                taped += 1
            end = m
            if end == a:
                top -= 1
    return untaped, taped, peak


@dataclass(frozen=True)
class Schedule:
    """The binomial schedule of a checkpointed loop of ``steps`` steps (``jg.schedule``)."""

    steps: int
    snapshots: int  #: snapshot slots (each a copy of the loop-carried state)
    untaped: int  #: step runs without a tape, the forward sweep's included
    taped: int  #: step runs with their tape (one per step)
    peak_snapshots: int  #: the most snapshots live at once
    repetitions: int  #: the most times one step runs untaped
    state_bytes: int = 0
    step_tape_bytes: int = 0

    @property
    def recompute_factor(self) -> float:
        """Step runs per step (a plain reverse loop runs each step once, with its tape)."""
        return (self.untaped + self.taped) / self.steps if self.steps else 0.0

    @property
    def peak_tape_bytes(self) -> int:
        """The largest tape: one step's (``step_tape_bytes``), whatever the number of steps."""
        return self.step_tape_bytes if self.steps else 0

    @property
    def peak_bytes(self) -> int:
        """Snapshots plus the one step's tape."""
        return self.peak_snapshots * self.state_bytes + self.peak_tape_bytes

    def __str__(self) -> str:
        """One line: steps, snapshots, recompute factor, peak memory."""
        mem = ""
        if self.state_bytes or self.step_tape_bytes:
            mem = (f"; peak memory {self.peak_snapshots} x {self.state_bytes} B of state + "
                   f"{self.peak_tape_bytes} B of tape (one step)")
        return (f"{self.steps} steps, {self.snapshots} snapshots (binomial schedule): "
                f"{self.untaped} untaped + {self.taped} taped step runs, recompute factor "
                f"{self.recompute_factor:.2f}, each step run untaped at most "
                f"{self.repetitions} times{mem}")


_FAST = None


def schedule(steps: int, snapshots: int | None = None, *, state_bytes: int = 0,
             step_tape_bytes: int = 0) -> Schedule:
    """The schedule ``for t in jg.checkpointed(range(steps), snapshots=...)`` runs: its
    snapshots, untaped and taped step runs, recompute factor and (given the bytes of one
    state and of one step's tape) peak memory."""
    global _FAST
    steps = int(steps)
    if steps < 0:
        raise ValueError("steps must be >= 0")
    k = snapshot_count(steps, -1 if snapshots is None else int(snapshots))
    run = simulate
    if steps > 20000:
        if _FAST is None:
            import numba
            _FAST = numba.njit(simulate)
        run = _FAST
    none = np.zeros(0, np.int64)
    untaped, taped, peak = run(steps, k, none, none)
    reps = 0
    if steps > 1:
        s = min(k, steps)
        while math.comb(s + reps, s) < steps:
            reps += 1
    return Schedule(steps, k, untaped, taped, peak, reps, int(state_bytes),
                    int(step_tape_bytes))
