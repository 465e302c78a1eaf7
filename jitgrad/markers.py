"""The calls differentiated code uses to steer gradients: ``hook``, ``nobacksies``,
``checkpoint``, ``checkpointed``.

The transpiler and the rule table recognise them by identity; called outside a
differentiated function they run the eager runtime's versions (``runtime/hooks.py``),
which that module puts in ``EAGER`` when it is loaded (``import jitgrad`` loads it): this
module imports nothing of jitgrad's, so neither the transpiler nor the rules reach the
runtime through it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from numba.extending import overload

__all__ = ["EAGER", "checkpoint", "checkpointed", "hook", "nobacksies"]

#: the eager runtime's ``hook``, ``nobacksies`` and ``checkpoint`` (``runtime/hooks.py``)
EAGER: dict[str, Callable[..., Any]] = {}


def hook(fn: Callable[[Any], Any], x: Any) -> Any:
    """``x`` unchanged, but the gradient arriving through this use of it passes through ``fn``.

    ``hook(lambda g: -g, x)`` reverses the sign of the gradient sent to ``x`` from here;
    other uses of ``x`` are unaffected. Untracked ``x`` is returned as is.
    """
    return EAGER["hook"](fn, x)


def nobacksies(msg: str, x: Any) -> Any:
    """``x`` unchanged; differentiating through it raises ``BackpropError(msg)``.

    Marks values whose gradient is not defined (e.g. nested AD); maps over tuples.
    """
    return EAGER["nobacksies"](msg, x)


def checkpoint(f: Callable[..., Any], *args: Any) -> Any:
    """``f(*args)`` without storing its intermediates; ``f`` runs again in the reverse pass.

    The first run records nothing but notes every tracked value ``f`` reads, its
    arguments and anything captured in its closure, so all of them receive
    gradients (Tracker drops the captured ones). The recompute sees the same numpy
    and ``random`` global RNG state as the first run, so random draws match.
    """
    return EAGER["checkpoint"](f, *args)


def checkpointed(r: range, snapshots: int | None = None) -> range:
    """``r`` itself; as the range of a ``for`` loop in a differentiated function, the loop's
    reverse sweep keeps at most ``snapshots`` copies of the loop-carried state instead of a
    tape of every step, placed by the binomial (revolve) schedule, and holds one step's
    tape at a time.  ``None``: the fewest snapshots with which no step is recomputed more
    than once (about sqrt(2 len(r))).  ``jg.schedule(len(r), snapshots)`` tells the cost."""
    return r


@overload(checkpointed)
def _checkpointed_compiled(r, snapshots=None):
    """In the user's own ``@numba.njit`` code (the primal), ``checkpointed(r)`` is ``r``."""

    def impl(r, snapshots=None):
        return r

    return impl
