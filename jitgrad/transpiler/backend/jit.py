"""The CPU backend: load lowered functions, compile them with Numba, call them.

``build`` turns the lowered sources of one specialisation into callables: under
``jit=True`` each variant is compiled with ``emit.njit`` (and the functions hooks
call are compiled alongside); under ``jit=False`` the plain functions run with
IEEE results in a NumPy-backed namespace.  ``call`` runs one variant and turns
Numba failures into ``JitError``s that quote the generated line.
"""

from __future__ import annotations

import ast
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


def imports(sources: dict[str, str], env: dict[str, Any]) -> dict[str, Any]:
    """The module namespace the generated code runs in: exactly the global names it reads
    (the user's modules, constants and helpers, and jitgrad's), taken from ``env``."""
    read: set[str] = set()
    for src in sources.values():
        fn = ast.parse(src).body[0]
        local = {a.arg for a in fn.args.args}
        for n in ast.walk(fn):
            if isinstance(n, ast.Name):
                (read if isinstance(n.ctx, ast.Load) else local).add(n.id)
        read -= local
    return {n: env[n] for n in sorted(read) if n in env}


def build(sources: dict[str, str], names: dict[str, str], env: dict[str, Any],
          qualname: str, jit: bool, callables: frozenset[str] = frozenset()) -> Compiled:
    """Exec each variant's source into a namespace of what it reads from ``env``; compile
    them when ``jit``."""
    namespace = imports(sources, env)
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
        if not compiled.callables:
            return emit.call_compiled(compiled.jitted[variant], compiled.sources[variant], args)
        hint = ("hook functions must be Numba-compilable with jit=True "
                f"({', '.join(sorted(compiled.callables))})")
        return emit.call_compiled(compiled.jitted[variant], compiled.sources[variant], args,
                                  hint)
    return emit.ieee_call(compiled.functions[variant], args)


__all__ = ["Compiled", "build", "call"]
