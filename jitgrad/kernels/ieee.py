"""Plain-Python stand-ins of ``math`` functions with IEEE results (inf/nan, never raising).

Generated code run with ``jit=False`` calls these where it names ``math`` (each
``math`` function's record holds its stand-in: the primitive table's ``ieee`` fact,
``rules/facts.py``), so that ``math.log(0.0)`` is ``-inf`` as in compiled code rather
than a ``ValueError``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def np1(ufunc: Any) -> Any:
    """``math``'s one-argument function as NumPy's ``ufunc`` of a float64."""
    def f(x):
        return ufunc(np.float64(x))
    f.__name__ = getattr(ufunc, "__name__", "f")
    return f


def np2(ufunc: Any) -> Any:
    """``math``'s two-argument function as NumPy's ``ufunc`` of two float64s."""
    def f(x, y):
        return ufunc(np.float64(x), np.float64(y))
    f.__name__ = getattr(ufunc, "__name__", "f")
    return f


def log(x, base=None):
    r = np.log(np.float64(x))
    return r if base is None else r / np.log(np.float64(base))


def guarded(fn: Any) -> Any:
    """A ``math`` function without a NumPy twin: nan/inf where it would raise."""
    def f(*args):
        try:
            return np.float64(fn(*args))
        except ValueError:
            return np.float64(np.nan)
        except OverflowError:
            return np.float64(np.inf)
    f.__name__ = fn.__name__
    return f


def gamma(x):
    x = float(x)
    try:
        return np.float64(math.gamma(x))
    except ValueError:  # the poles: +-inf at +-0 (IEEE tgamma), nan at negative integers
        return np.float64(math.copysign(math.inf, x) if x == 0 else math.nan)
    except OverflowError:
        return np.float64(math.inf)


def lgamma(x):
    try:
        return np.float64(math.lgamma(x))
    except (ValueError, OverflowError):  # the poles
        return np.float64(math.inf)


def ldexp(x, i):
    return np.ldexp(np.float64(x), int(i))


__all__ = ["gamma", "guarded", "ldexp", "lgamma", "log", "np1", "np2"]
