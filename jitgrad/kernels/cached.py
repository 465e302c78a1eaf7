"""Overloads and jitted functions whose machine code Numba keeps on disk.

Generated gradient code calls jitgrad's runtime helpers (``helpers.py``, ``arrays.py``);
compiled in every process, they were a large share of a first gradient call.  With
Numba's on-disk cache a machine compiles each helper once per argument types and
every later process loads it.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any

from numba.extending import overload

__all__ = ["DISK_CACHE", "cached_overload", "njit_cached"]


def _disk_cache_works() -> bool:
    """Can Numba keep this module's compiled functions on disk?  Its locators try a
    writable ``__pycache__`` next to the file, then ``NUMBA_CACHE_DIR`` or its user-wide
    cache directory; where none works, helpers are compiled in every process."""
    from numba.core.caching import FunctionCache

    try:
        FunctionCache(_disk_cache_works)
    except Exception:  # noqa: BLE001 - Numba raises RuntimeError; any failure: no cache
        return False
    return True


#: whether helpers' compiled code is kept on disk (``cached_overload``)
DISK_CACHE = _disk_cache_works()


def cached_overload(func: Callable, **jit_options: Any) -> Callable[[Callable], Callable]:
    """``numba.extending.overload(func)`` whose implementations Numba caches on disk
    (``DISK_CACHE``).  Every implementation the typer returns must be a function defined
    in a file, without free variables (Numba keys its cache by the function's file, line
    and bytecode, and a closure's cells by their pickle: a dispatcher's differs in every
    process); one with free variables raises ``AssertionError`` when it is typed.  They
    may call only NumPy, Numba and functions of their own module: Numba finds a cached
    entry stale by the module file's time stamp alone."""

    def register(typer):
        @functools.wraps(typer)
        def checked(*args, **kws):
            impl = typer(*args, **kws)
            code = getattr(impl, "__code__", None)
            if code is not None and (impl.__closure__ is not None
                                     or not os.path.exists(code.co_filename)):
                raise AssertionError(f"{typer.__qualname__}: a cached_overload "
                                     "implementation has free variables or no file")
            return impl

        overload(func, jit_options={**jit_options, "cache": DISK_CACHE})(checked)
        return typer

    return register


def njit_cached(fn: Callable) -> Any:
    """``numba.njit(fn)``, its machine code cached on disk (``DISK_CACHE``)."""
    import numba

    return numba.njit(cache=DISK_CACHE)(fn)
