"""Versions: a name rebound at the top level of the function gets a new name from there on.

A top-level assignment runs exactly once and kills every earlier value of its
target, so the value before it and the value after it are two variables.  Giving
them two names (``x`` then ``x_1``) makes the adjoint of an argument the adjoint of
the argument as passed (its shape too), lets a name change kind (``x = np.sum(x)``),
and leaves the reverse pass fewer overwritten values to store.  Rebinding inside a
loop or branch keeps the name of the version that reaches it.

Before::                       After::

    a = a * a                      a_1 = a * a
    s = a * a                      s = a_1 * a_1
"""

from __future__ import annotations

import ast

from ..naming import Namer
from ..notes import AUG
from .inline import rename, stored_names


def _top_targets(s: ast.stmt) -> list[str]:
    """Names a top-level statement rebinds unconditionally (plain and tuple assignment)."""
    if isinstance(s, ast.Assign) and not AUG.get(s):
        # (``x += e`` keeps its name: on an array it updates the same buffer)
        t = s.targets[0]
        if isinstance(t, ast.Name):
            return [t.id]
        if isinstance(t, ast.Tuple) and all(isinstance(e, ast.Name) for e in t.elts):
            return [e.id for e in t.elts]
    return []


def version_names(body: list[ast.stmt], returns: list[ast.expr], params: list[str],
                  namer: Namer) -> tuple[list[ast.stmt], list[ast.expr]]:
    """Rename each top-level rebinding of a name that already holds a value (see module doc)."""
    current: dict[str, str] = {}
    has_value: set[str] = set(params)
    out: list[ast.stmt] = []
    for s in body:
        targets = _top_targets(s)
        if targets:
            # the value is read with the names before this statement, the targets get new ones
            s.value = rename(s.value, dict(current))
            mapping = {}
            for n in targets:
                if n in has_value:
                    new = namer.version(n)
                    mapping[n] = new
                    current[n] = new
            s.targets = [rename(t, mapping) for t in s.targets]
            has_value.update(targets)
            parts = _split_moves(s)
            if parts:
                out += parts
                continue
        else:
            has_value.update(stored_names([s]))
            if current:
                s = rename(s, dict(current))
        out.append(s)
    rets = [rename(r, dict(current)) for r in returns]
    return out, rets


def _split_moves(s: ast.stmt) -> list[ast.stmt]:
    """``a_1, b_1 = (b, a)`` as ``a_1 = b`` and ``b_1 = a`` where the (renamed) targets are
    distinct and none is read on the right: the same bindings, spelled so that the alias
    analysis sees each name that now shares an array with another (``a_1`` with ``b``);
    [] for anything else (a swap of loop-carried names stays one statement)."""
    t, v = s.targets[0], s.value
    if not (isinstance(t, ast.Tuple) and isinstance(v, ast.Tuple)
            and len(t.elts) == len(v.elts) > 1
            and all(isinstance(e, ast.Name) for e in (*t.elts, *v.elts))):
        return []
    names = [e.id for e in t.elts]
    if len(set(names)) != len(names) or set(names) & {e.id for e in v.elts}:
        return []
    return [ast.copy_location(ast.Assign(targets=[ast.Name(id=n, ctx=ast.Store())],
                                         value=ast.Name(id=e.id, ctx=ast.Load())), s)
            for n, e in zip(names, v.elts, strict=True)]


#: the builtins generated code calls by name (loop bounds, tape sizes, flags)
GENERATED_BUILTINS = frozenset({"range", "len", "max", "min", "abs", "bool", "float", "int"})


def unshadowed_builtins(body: list[ast.stmt], params: list[str], namer: Namer
                        ) -> tuple[list[ast.stmt], list[str], dict[str, str]]:
    """``body`` and ``params`` with each name that is a builtin generated code calls (a
    running ``max``, a parameter ``len``) renamed to a version (``max_1``): the function
    never calls that builtin itself (the name is local throughout), generated code does.
    Also the renamed parameters, user name -> name in the code (specialisation keys and
    written arguments translate through it)."""
    shadowed = (stored_names(body) | set(params)) & GENERATED_BUILTINS
    if not shadowed:
        return body, params, {}
    mapping: dict[str, str | ast.expr] = {n: namer.version(n) for n in sorted(shadowed)}
    renamed = {p: str(mapping[p]) for p in params if p in mapping}
    return ([rename(s, mapping) for s in body], [renamed.get(p, p) for p in params],
            renamed)


__all__ = ["GENERATED_BUILTINS", "unshadowed_builtins", "version_names"]
