"""One differentiated function's specialisations, every mode's, in one cache.

A ``Differentiated`` (``api.py``) and a ``CudaDifferentiated`` (``cuda_api.py``) each own
one ``Specialisations``; reverse mode, forward mode (``forward_mode.py``), second order
and the gradient code (``transpiler/gradient_code.py``) ask it for their entry by a mode
tag (``"vjp"``, ``"jvp"``, ``"hvp"``, ...) instead of hanging dicts of their own on the
function.  Entries made from argument kinds are keyed by ``(mode, key, rules version)``:
registering a rule makes them stale, as it makes the prepared unit stale.  Entries derived
from another entry (``derived``) are keyed by that entry's identity.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from . import rules


class Specialisations:
    """Keyed, thread-safe cache of one function's generated and compiled code, all modes."""

    def __init__(self) -> None:
        #: (mode, key, rules version) -> entry; (mode, id(of), *key) -> (of, entry)
        self._entries: dict[tuple, Any] = {}
        #: (mode, exact argument signature) -> (rules version, entry): the fast path
        self._by_signature: dict[tuple, tuple[int, Any]] = {}
        #: held while an entry is made (reentrant: making one may ask for another)
        self.lock = threading.RLock()

    def get(self, mode: str, key: tuple) -> Any:
        """The ``mode`` entry for ``key`` at the current rules version, else None."""
        return self._entries.get((mode, key, rules.version()))

    def put(self, mode: str, key: tuple, entry: Any) -> Any:
        """Keep ``entry`` as the ``mode`` entry for ``key``; returns it."""
        self._entries[(mode, key, rules.version())] = entry
        return entry

    def entry(self, mode: str, key: tuple, make: Callable[[], Any]) -> Any:
        """The ``mode`` entry for ``key``, made by ``make()`` (under the lock) if missing."""
        with self.lock:
            found = self.get(mode, key)
            return found if found is not None else self.put(mode, key, make())

    def by_signature(self, mode: str, sig: tuple | None, make: Callable[[], Any]) -> Any:
        """The ``mode`` entry for a call with exact argument signature ``sig`` (types,
        dtypes, ndims; None: none) without redoing the checks ``make`` does."""
        version = rules.version()
        if sig is not None:
            hit = self._by_signature.get((mode, sig))
            if hit is not None and hit[0] == version:
                return hit[1]
        found = make()
        if sig is not None:
            self._by_signature[(mode, sig)] = (version, found)
        return found

    def derived(self, mode: str, of: Any, key: tuple, make: Callable[[], Any]) -> Any:
        """The ``mode`` entry made from the entry ``of`` (its gradient code, its tangent
        variant...) and ``key``, by ``make()`` if missing."""
        k = (mode, id(of), *key)
        with self.lock:
            hit = self._entries.get(k)
            if hit is None or hit[0] is not of:  # (an id reused by a dropped entry)
                hit = self._entries[k] = (of, make())
        return hit[1]

    def find(self, mode: str, of: Any, key: tuple = ()) -> Any:
        """The ``derived`` entry of ``mode`` made from ``of``, else None (nothing made)."""
        hit = self._entries.get((mode, id(of), *key))
        return hit[1] if hit is not None and hit[0] is of else None

    def entries(self, *modes: str) -> list[Any]:
        """The current entries of these modes (all modes: none given), oldest first."""
        with self.lock:
            items = list(self._entries.items())
        return [_value(k, v) for k, v in items if not modes or k[0] in modes]

    def clear(self) -> None:
        """Drop every entry of every mode: the next call transforms (or loads) again."""
        with self.lock:
            self._entries.clear()
            self._by_signature.clear()

    def __len__(self) -> int:
        return len(self._entries)


def _value(key: tuple, value: Any) -> Any:
    """An entry as kept: a derived entry is kept with what it was made from."""
    return value[1] if isinstance(key[1], int) else value
