"""What both bridges share: which arguments get gradients, and the ``Differentiated``
that computes them (one per set of positions, so each compiles once)."""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from ..api import Differentiated, _as_diff, _resolve_wrt
from ..transpiler.front.parse import python_function


class Bridge:
    """A function, its ``wrt`` (None: chosen per call) and its compiled gradients."""

    def __init__(self, func: Callable, wrt: Any, jit: bool):
        self.func = func
        self.jit = bool(jit)
        plain = python_function(func.func if isinstance(func, Differentiated) else func)
        self.name = plain.__name__
        self.params = list(inspect.signature(plain, follow_wrapped=False).parameters)
        self.wrt = None if wrt is None else _resolve_wrt(wrt, self.params, self.name)[0]
        self._made: dict[tuple[int, ...], Differentiated] = {}
        self._lock = threading.Lock()

    def diff(self, positions: tuple[int, ...]) -> Differentiated:
        """The ``Differentiated`` with ``wrt=positions`` (gradients as a tuple)."""
        with self._lock:
            d = self._made.get(positions)
            if d is None:
                d = self._made[positions] = _as_diff(self.func, positions, self.jit, "cpu")
        return d

    def check_positions(self, positions: tuple[int, ...], nargs: int) -> None:
        """Refuse a call with too few arguments for ``wrt``."""
        if any(i >= nargs for i in positions):
            raise TypeError(f"{self.name}: wrt names argument {max(positions)} but the call "
                            f"passes {nargs} arguments")


def plain(a: np.ndarray) -> Any:
    """A 0-d array as the Python scalar jitgrad takes; other arrays as they are."""
    a = np.asarray(a)
    return a.item() if a.ndim == 0 else a


def is_float(dtype: Any) -> bool:
    """A real floating dtype (numpy's or a framework's, by its name)."""
    try:
        return np.dtype(dtype).kind == "f"
    except TypeError:
        return "float" in str(dtype)


def bind(bridge: Bridge, args: tuple, kwargs: dict[str, Any]) -> tuple:
    """The call's arguments as one positional tuple (keywords placed, defaults filled)."""
    if not kwargs:
        return args
    return bridge.diff(()).bind(args, kwargs)
