"""Say what a first call is doing: the transform and Numba's compile of each specialisation.

Each finished step is logged at INFO on ``logging.getLogger("jitgrad")``; with
``jg.config.verbose`` (``JITGRAD_VERBOSE=1``) it is also printed to stderr, and so is
each long step as it starts.  ``compile_seconds`` reads what Numba measured itself.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from . import config

logger = logging.getLogger("jitgrad")


def _print(msg: str) -> None:
    if config.verbose:
        print(f"jitgrad: {msg}", file=sys.stderr, flush=True)


def starting(msg: str) -> None:
    """A long step begins (printed under ``config.verbose`` only)."""
    _print(msg + " ...")


def done(msg: str) -> None:
    """A step ended: logged at INFO, and printed under ``config.verbose``."""
    logger.info("%s", msg)
    _print(msg)


def _seconds(cres: Any) -> float:
    timers = getattr(cres, "metadata", None) or {}
    return float(timers.get("timers", {}).get("compiler_lock", 0.0))


def compile_seconds(compiled: Any) -> float:
    """Seconds Numba spent compiling the variants of ``compiled`` (every signature)."""
    jitted = getattr(compiled, "jitted", None) or {}
    return sum(_seconds(c) for d in jitted.values() for c in list(d.overloads.values()))


def compiling(jitted: Any) -> None:
    """A generated function's first call: Numba compiles it first."""
    starting(f"compiling {jitted.__name__} with Numba")


def compiled(jitted: Any) -> None:
    """``jitted`` was just compiled for new argument types (the newest overload)."""
    sig, cres = list(jitted.overloads.items())[-1]
    types = ", ".join(str(t) for t in sig)
    done(f"compiled {jitted.__name__}({types}) with Numba in {_seconds(cres):.2f} s")


__all__ = ["compile_seconds", "compiled", "compiling", "done", "logger", "starting"]
