"""The eager (Tracker) versions of ``jitgrad.markers``: nodes that change how gradients
flow.  Users call ``jg.hook``/``jg.checkpoint``/``jg.nobacksies`` (the markers), which
call these."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import RuleError
from ..kernels import rng
from ..markers import EAGER
from .backprop import BackpropError, Node, mark, propagate, seed
from .tracked import Tracked, _slots, _state, data, istracked, paused, record, recording

__all__ = ["checkpoint", "hook", "nobacksies"]


def hook(fn: Callable[[Any], Any], x: Any) -> Any:
    """``x`` unchanged, but the gradient arriving through this use of it passes through ``fn``.

    ``hook(lambda g: -g, x)`` reverses the sign of the gradient sent to ``x`` from here;
    other uses of ``x`` are unaffected. Untracked ``x`` is returned as is.
    """
    if not istracked(x):
        return x
    return record(x.data, lambda dy: (fn(dy),), (x,), "hook")


def nobacksies(msg: str, x: Any) -> Any:
    """``x`` unchanged; differentiating through it raises ``BackpropError(msg)``.

    Marks values whose gradient is not defined (e.g. nested AD); maps over tuples.
    """
    if isinstance(x, tuple):
        return tuple(nobacksies(msg, v) for v in x)
    if not istracked(x):
        return x

    def refuse(dy: Any) -> tuple:
        raise BackpropError(str(msg))

    return record(x.data, refuse, (x,), "nobacksies")


def checkpoint(f: Callable[..., Any], *args: Any) -> Any:
    """``f(*args)`` without storing its intermediates; ``f`` runs again in the reverse pass.

    The first run records nothing but notes every tracked value ``f`` reads, its
    arguments and anything captured in its closure, so all of them receive
    gradients (Tracker drops the captured ones). The recompute sees the same numpy
    and ``random`` global RNG state as the first run (and Numba's, for compiled code it
    calls), so random draws match.
    """
    if not _state.on:  # inside another checkpoint's first run: nothing is recorded anyway
        return f(*args)
    drawn = rng.capture()
    with paused() as touched:
        value = data(f(*args))
    nodes = {id(t.node): t.node for _, _, t in _slots(args)}
    nodes.update(touched)
    if not nodes:
        return value
    if isinstance(value, (tuple, list)):
        raise RuleError("checkpoint records single-output functions only")
    parents = tuple(nodes.values())

    def recompute(dy: Any) -> tuple:
        with rng.replaying(drawn), recording():
            start = mark()
            y = f(*args)
        if not isinstance(y, Tracked):
            return (None,) * len(parents)
        if y.node.shape != np.shape(value):
            raise BackpropError(f"the checkpointed function returned shape {y.node.shape} in "
                                f"its recompute but {np.shape(value)} in its first run")
        out = propagate(y.node, seed(y.node.shape, dy),
                        sink=lambda n: n.leaf or n.id < start)
        wanted = {id(p) for p in parents}
        if any(n.id < start and key not in wanted for key, (n, _) in out.items()):
            raise BackpropError("the checkpointed function read tracked values in its "
                                "recompute that it did not read in its first run; "
                                "checkpoint needs f to be deterministic")
        return tuple(out[id(p)][1] if id(p) in out else None for p in parents)

    return Tracked(value, Node(recompute, parents, np.shape(value), "checkpoint"))


EAGER.update(hook=hook, nobacksies=nobacksies, checkpoint=checkpoint)  # (markers' eager side)
