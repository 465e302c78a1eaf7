"""The CPU backend: load lowered functions, compile them with Numba, call them.

``build`` turns the lowered sources of one specialisation into callables: under
``jit=True`` each variant is compiled with ``emit.njit`` (and the functions hooks
call are compiled alongside); under ``jit=False`` the plain functions run with
IEEE results in a NumPy-backed namespace.  ``call`` runs one variant and turns
Numba failures into ``JitError``s that quote the generated line.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any

from . import emit


@dataclass
class Compiled:
    """The callables of one specialisation, per variant."""

    sources: dict[str, str]
    functions: dict[str, Any]
    namespace: dict[str, Any]
    jit: bool
    callables: frozenset[str] = frozenset()
    jitted: dict[str, Any] = field(default_factory=dict)


def build(sources: dict[str, str], names: dict[str, str], namespace: dict[str, Any],
          qualname: str, jit: bool, callables: frozenset[str] = frozenset()) -> Compiled:
    """Exec each variant's source into ``namespace``; compile them when ``jit``."""
    fns = {v: emit.load(src, names[v], namespace, qualname) for v, src in sources.items()}
    out = Compiled(sources, fns, namespace, jit, callables)
    if jit:
        for c in callables:  # functions hooks call run compiled too
            if inspect.isfunction(namespace.get(c)):
                namespace[c] = emit.njit(namespace[c])
        out.jitted = {v: emit.njit(f) for v, f in fns.items()}
    else:
        emit.ieee_namespace(namespace)
    return out


def call(compiled: Compiled, variant: str, args: tuple) -> Any:
    """Run ``variant`` on ``args`` (the seed last)."""
    if compiled.jit:
        hint = ("hook functions must be Numba-compilable with jit=True "
                f"({', '.join(sorted(compiled.callables))})" if compiled.callables else "")
        return emit.call_compiled(compiled.jitted[variant], compiled.sources[variant], args,
                                  hint)
    return emit.ieee_call(compiled.functions[variant], args)


__all__ = ["Compiled", "build", "call"]
