"""Workspaces for forward-mode code: the tapes a jvp function declares, kept between calls.

Forward mode applied to gradient code (``hvp``, ``hessian``) runs the gradient's tapes and
their tangent tapes.  Allocated afresh on every call they grow by doubling from empty, and
the page faults of that growth cost more than the sweeps (heat equation: 6.7 ms against
3.0 ms).  ``tape_workspace`` lets such a function take its tapes from ``_ws`` and return
them, grown, after its results, the protocol of the reverse mode's ``with_workspace``
(``lower.py``), so ``backend.jit.call`` keeps them per thread.

A *tape family* is a name declared at the top level as ``t = np.empty(0, dt)`` (or
``t_dot = np.zeros_like(t)`` of such a name before it grew), with the names it is
re-bound to at the top level by ``t1 = tape_reserve(t, used, more)``.  It is kept only
where every use is an element access, the buffer of a ``tape_reserve`` into the family,
or the ``zeros_like`` of a tangent declaration, and it is bound nowhere else than there
and by ``t = tape_reserve(t, ...)``.  That is sound because ``tape_reserve`` keeps only
the first ``used`` entries: what lies beyond them is garbage in a fresh tape and in a
reused one alike, and nothing reads a tape's length.  A tangent tape declared by
``np.zeros_like`` of a tape that has already grown (the zeros matter: entries below
``used`` are read) becomes ``ws_zeros_like`` on kept storage instead.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...kernels import helpers
from ...rules.primitives import allocates_shape, uninitialised, zeros_shaped_like
from ..analysis import dataflow
from ..astutil import resolve
from ..naming import Namer
from .jit import BUFFER
from .workspace import through_workspace, zeroing


@dataclass
class _Family:
    """One kept tape: its first name's declaration, its names, the last top-level one."""

    decl: int
    dtype: str
    root: str
    members: set[str] = field(default_factory=set)
    current: str = ""


def tape_workspace(body: list[ast.stmt], env: dict[str, Any], namer: Namer
                   ) -> tuple[list[ast.stmt], tuple[str, ...]]:
    """``body`` (ending in its return) taking its tape families from ``_ws`` and returning
    them after its results, with what the caller passes the first time for each entry (a
    dtype, or ``"buffer"``); unchanged where it declares none (module docstring)."""
    families, buffers = _scan(body, env)
    families = [f for f in families if _kept(f, body, env)]
    if not families and not buffers:
        return body, ()
    out = list(body)
    # (statement, name taken in, name returned, what to pass the first time)
    entries = [(f.decl, f.root, f.current, f.dtype) for f in families]
    drop = {f.decl for f in families}
    zeros = namer.global_name(env, "ws_zeros_like", helpers.ws_zeros_like)
    for k, (target, like) in buffers.items():
        store = namer.fresh(f"_ws_{target.lstrip('_')}")
        out[k] = zeroing(store, target, zeros, ast.Name(id=like, ctx=ast.Load()))
        entries.append((k, store, store, BUFFER))
    entries.sort()
    out = [st for k, st in enumerate(out) if k not in drop]
    return (through_workspace(out, [e[1] for e in entries], [e[2] for e in entries],
                               namer.workspace),
            tuple(e[3] for e in entries))


def _scan(body: list[ast.stmt], env: dict[str, Any]
          ) -> tuple[list[_Family], dict[int, tuple[str, str]]]:
    """The tape families declared at the top level, and the tangent tapes of grown ones
    (statement -> (tangent, tape)) to zero in kept storage."""
    families: list[_Family] = []
    of: dict[str, _Family] = {}
    buffers: dict[int, tuple[str, str]] = {}
    for k, st in enumerate(body):
        if not (isinstance(st, ast.Assign) and len(st.targets) == 1
                and isinstance(st.targets[0], ast.Name) and isinstance(st.value, ast.Call)
                and not st.value.keywords):
            continue
        t, fn, a = st.targets[0].id, resolve(st.value.func, env), st.value.args
        if t in of:
            continue
        if uninitialised(fn) and allocates_shape(fn) and len(a) == 2 \
                and isinstance(a[0], ast.Constant) and a[0].value == 0:
            dt = resolve(a[1], env)
            if isinstance(dt, type) and issubclass(dt, np.generic):
                f = _Family(k, np.dtype(dt).name, t, {t}, t)
                families.append(f)
                of[t] = f
        elif zeros_shaped_like(fn) and len(a) == 1 and isinstance(a[0], ast.Name) \
                and a[0].id in of:
            src = of[a[0].id]
            if a[0].id == src.current == src.root:
                f = _Family(k, src.dtype, t, {t}, t)  # zeros of an empty tape: empty
                families.append(f)
                of[t] = f
            elif src.dtype == "float64":
                buffers[k] = (t, a[0].id)
        elif _is_reserve(st.value, env) and isinstance(a[0], ast.Name) and a[0].id in of \
                and of[a[0].id].current == a[0].id:
            f = of[a[0].id]
            f.members.add(t)
            f.current = t
            of[t] = f
    return families, buffers


def _kept(f: _Family, body: list[ast.stmt], env: dict[str, Any]) -> bool:
    """Whether every binding and use of the family's names is one ``_scan`` allows."""
    allowed: set[int] = set()  # the Name nodes of allowed uses
    top = {id(st) for st in body}
    for st in ast.walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(st, ast.Subscript) and isinstance(st.value, ast.Name) \
                and not isinstance(st.slice, ast.Slice):
            allowed.add(id(st.value))
        if not isinstance(st, ast.stmt):
            continue
        bound = set(dataflow.binds(st))
        if not bound & f.members:
            continue
        if len(bound) != 1 or not isinstance(st, ast.Assign):
            return False
        t = next(iter(bound))
        v = st.value
        if isinstance(v, ast.Call) and _is_reserve(v, env) and isinstance(v.args[0], ast.Name) \
                and v.args[0].id in f.members and (v.args[0].id == t or id(st) in top):
            allowed.add(id(v.args[0]))
        elif not (id(st) in top and t == f.root):
            return False
    for st in body:  # tangent declarations and kept zeroings read a member: allowed
        if isinstance(st, ast.Assign) and isinstance(st.value, ast.Call) \
                and zeros_shaped_like(resolve(st.value.func, env)):
            allowed.update(id(a) for a in st.value.args if isinstance(a, ast.Name))
    for n in ast.walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in f.members \
                and id(n) not in allowed:
            return False
    return True


def _is_reserve(call: ast.Call, env: dict[str, Any]) -> bool:
    return len(call.args) == 3 and resolve(call.func, env) is helpers.tape_reserve


__all__ = ["tape_workspace"]
