"""Lowering: from the IR to Python function definitions for the CPU target.

One function per variant, all from the same ``Adjoint`` record:

- ``"grad"``: ``f_grad(*params, seed) -> (value, grads)``, both sweeps;
- ``"grad_only"``: ``(None, grads)``, without the forward work that only served
  the returned value;
- ``"forward"`` and ``"adjoint"``: one sweep each, for reading (``stage=``), not run.

Dead code is removed per variant, since what is live depends on what is returned.
The CPU's variants are written by the steps of ``backend/passes.py`` (``BACKEND``), which
call the functions here; ``lower`` writes the one-sweep functions and a device's variants.
A variant that keeps typed tapes (or zeroes adjoint buffers of local arrays, or copies
arrays onto list tapes) takes them as one more parameter, ``_ws``, and returns them,
grown, after the gradients (``with_workspace``): the caller keeps them for its next call,
so a call allocates them only when they must grow.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Collection
from typing import Any

from ..front.inline import renamed_copy
from ..ir import Adjoint, Tangent, result_expr
from ..naming import Namer
from ..nodes import clone, mentions, rewrite_blocks, with_blocks
from ..notes import TAPED, ZEROING
from . import emit, jvp_workspace
from .jit import BUFFER
from .optimize import dead_code, dead_loops
from .snapshots import keep_snapshots
from .workspace import through_workspace, zeroing

VARIANTS = ("grad", "grad_only")
PARTS = ("forward", "adjoint")


def result_return(ir: Adjoint, variant: str) -> ast.Return:
    """``return (value, grads)``, or ``(None, grads)`` for the gradient-only variant."""
    grads = result_expr([ast.Name(id=g, ctx=ast.Load()) for g in ir.grads])
    value = result_expr(clone(list(ir.results))) if variant == "grad" else ast.Constant(None)
    return ast.Return(value=ast.Tuple(elts=[value, grads], ctx=ast.Load()))


def with_workspace(ir: Adjoint, body: list[ast.stmt]) -> tuple[list[ast.stmt], tuple[str, ...]]:
    """``body`` (ending in its return) taking from ``_ws`` the typed tapes it still declares
    and the storage of the adjoint buffers it still zeroes (``dv = np.zeros_like(v)``
    becomes ``_ws_dv, dv = ws_zeros_like(_ws_dv, v)``), and returning them after the
    gradients; with what the caller passes the first time: a tape's dtype, or ``"buffer"``
    (an empty float64 storage: of the adjoint buffers, or of the copies pushed on list
    tapes, ``backend/snapshots.py``).  Unchanged without either."""
    decls = {id(st): st for st in ir.workspace}
    dtypes = dict(ir.reused)
    stores = {d: (store, helper) for d, store, helper in ir.buffers}
    kept: list[str] = []
    kinds: list[str] = []
    out: list[ast.stmt] = []
    # not with hooks, as adjoint buffers: what a hook is given may be kept
    snaps = keep_snapshots(body, ir.snapshots) if ir.snapshots and not ir.callables else None
    if snaps is not None:
        body = snaps
    for st in body:
        if decls.get(id(st)) is st and st.targets[0].id in dtypes:
            kept.append(st.targets[0].id)
            kinds.append(dtypes[st.targets[0].id])
            continue
        like = _zeroing(st, stores)
        if like is not None:
            d = st.targets[0].id
            store, helper = stores.pop(d)  # the first zeroing only
            kept.append(store)
            kinds.append(BUFFER)
            st = zeroing(store, d, helper, like)
        out.append(st)
    if snaps is not None:  # float64 storage, dropped where a returned array shares it
        kept.append(ir.snapshots.store)
        kinds.append(BUFFER)
    if not kept:
        return body, ()
    return through_workspace(out, kept, kept, ir.ws), tuple(kinds)


def _zeroing(st: ast.stmt, stores: dict[str, tuple[str, str]]) -> ast.expr | None:
    """``v`` where ``st`` is ``dv = np.zeros_like(v)`` for an adjoint ``dv`` in ``stores``."""
    if not (isinstance(st, ast.Assign) and len(st.targets) == 1
            and isinstance(st.targets[0], ast.Name) and st.targets[0].id in stores):
        return None
    v = st.value
    if ZEROING.get(v) and isinstance(v.args[0], ast.Name):  # (the reverse pass's mark)
        return ast.Name(id=v.args[0].id, ctx=ast.Load())
    return None


def lower_tangent(ir: Tangent, fname: str,
                  workspaces: dict[str, tuple[str, ...]] | None = None,
                  keep: tuple[dict[str, Any], Namer] | None = None,
                  variant: str = "jvp") -> ast.FunctionDef:
    """Forward mode's ``"jvp"`` variant, ``f_jvp(*params, *seeds) -> (value, tangent)``, or
    its ``"tangent"`` variant, ``(None, tangent)``, without the primal work only the value
    needed (what ``hvp`` runs: the gradient's own accumulations are dead there).  With
    ``keep`` (the code's namespace and namer), the typed tapes the code declares (hvp:
    those of the gradient code, and their tangents) come from a workspace, as the reverse
    mode's do (``jvp_workspace``)."""
    value = result_expr(clone(list(ir.results))) if variant == "jvp" else ast.Constant(None)
    ret = ast.Return(value=ast.Tuple(elts=[value, result_expr(clone(list(ir.tangents)))],
                                     ctx=ast.Load()))
    body = _without_dead_loops(dead_code(clone(ir.body()) + [ret], {}), {})
    dtypes: tuple[str, ...] = ()
    if keep is not None:
        body, dtypes = jvp_workspace.tape_workspace(body, *keep)
    if workspaces is not None:
        workspaces[variant] = dtypes
    ws = [keep[1].workspace] if keep is not None and dtypes else []  # (tape_workspace's)
    return emit.function_def(fname, [*ir.params, *ir.seeds] + ws, body)


def with_unit_seed(body: list[ast.stmt], seed: str) -> list[ast.stmt]:
    """``body`` with the constant 1.0 for every read of the scalar ``seed``: Numba then
    folds ``g * 1.0``, ``guard(1.0, g)`` and the like away (Rosenbrock's gradient: 0.59 ->
    0.54 ms, the hand adjoint's).  Statements that read it are copied (the variants and
    the IR share the others)."""
    one = ast.Constant(value=1.0)
    return [renamed_copy(s, {seed: one}) if mentions(s, seed, 1) else s for s in body]


def unchecked_tapes(body: list[ast.stmt], tapes: Collection[str], get: str, put: str,
                    done: dict[int, tuple[ast.stmt, ast.stmt]] | None = None) -> list[ast.stmt]:
    """``body`` with each element write and read of the typed ``tapes`` through the helpers
    ``put`` and ``get`` (``tape_put``, ``tape_get``), which Numba compiles without the bounds
    check the rest of the generated code keeps: a tape's cursor stays within the room
    ``tape_reserve`` made, and the check cost 10-15% of a tape-bound sweep.  Only in the
    statements the reverse pass marked as its pushes and pops (``notes.TAPED``), of the
    tapes it made: a user's ``_tape1`` is never one.  ``_tape_x[k] = v`` becomes
    ``put(_tape_x, k, v)``, a read ``_tape_x[k]`` becomes ``get(_tape_x, k)``.  Only the
    statements that change are copied, with the blocks holding them (``done``: those
    rewritten so far, by the id of the original; the variants share statements)."""
    if not tapes:
        return body
    return _Accessors(frozenset(tapes), get, put, {} if done is None else done).block(body)


class _Accessors:
    """The tape accessors of one function (see ``unchecked_tapes``)."""

    def __init__(self, tapes: frozenset[str], get: str, put: str,
                 done: dict[int, tuple[ast.stmt, ast.stmt]]) -> None:
        self.tapes, self.get, self.put, self.done = tapes, get, put, done

    def block(self, body: list[ast.stmt]) -> list[ast.stmt]:
        return rewrite_blocks(body, self.stmt, _BLOCKS)

    def stmt(self, s: ast.stmt) -> ast.stmt:
        hit = self.done.get(id(s))
        if hit is not None and hit[0] is s:
            return hit[1]
        new = self.node(s) if TAPED.get(s) else with_blocks(s, self.block, _BLOCKS)
        self.done[id(s)] = (s, new)
        return new

    def access(self, n: ast.AST) -> bool:
        """Is ``n`` an element of a tape at a cursor expression (no slice or element in it)?"""
        v = getattr(n, "value", None)
        return n.__class__ is ast.Subscript and v.__class__ is ast.Name \
            and v.id in self.tapes and not any(isinstance(x, _NOT_A_CURSOR)
                                               for x in ast.walk(n.slice))

    def node(self, n: ast.AST) -> ast.AST:
        """``n`` with its tape accesses through the helpers (``n`` itself without any; the
        nodes on the way to one copied)."""
        cls = n.__class__
        if cls is ast.Subscript and n.ctx.__class__ is ast.Load and self.access(n):
            return ast.copy_location(_call(self.get, [n.value, *_parts(n.slice)]), n)
        if cls is ast.Assign and len(n.targets) == 1 and self.access(n.targets[0]):
            t = n.targets[0]
            return ast.copy_location(ast.Expr(value=_call(
                self.put, [t.value, *_parts(t.slice), self.node(n.value)])), n)
        new = None
        for f in cls._fields:
            v = getattr(n, f, None)
            if v.__class__ is list:
                w = [self.node(x) if isinstance(x, ast.AST) else x for x in v]
                if all(x is y for x, y in zip(v, w, strict=True)):
                    continue
            elif isinstance(v, ast.AST):
                w = self.node(v)
                if w is v:
                    continue
            else:
                continue
            new = new or copy.copy(n)
            setattr(new, f, w)
        return new or n


#: the blocks a statement holds that may hold tape pushes and pops
_BLOCKS = ("body", "orelse", "finalbody")
_NOT_A_CURSOR = (ast.Slice, ast.Subscript, ast.List, ast.Dict, ast.Set, ast.Lambda,
                 ast.ListComp, ast.DictComp, ast.SetComp, ast.GeneratorExp, ast.Starred)


def _parts(sl: ast.expr) -> list[ast.expr]:
    return list(sl.elts) if isinstance(sl, ast.Tuple) else [sl]


def _call(f: str, args: list[ast.expr]) -> ast.Call:
    return ast.Call(func=ast.Name(id=f, ctx=ast.Load()), args=args, keywords=[])


def _without_dead_loops(body: list[ast.stmt], shared: dict[str, str]) -> list[ast.stmt]:
    """``body`` without loops whose results are all bound again before they are read
    (``dead_loops``), and then without what only those loops read."""
    kept = dead_loops(body, shared)
    return body if len(kept) == len(body) else dead_code(kept, shared)


def lower(ir: Adjoint | Tangent, variant: str, fname: str) -> ast.FunctionDef:
    """The function ``fname`` computing ``variant`` (one of ``VARIANTS`` or ``PARTS``, or
    ``"jvp"`` for a ``Tangent`` record).  A variant of ``VARIANTS`` is lowered here as for a
    device (the CUDA lowering): without dead code, its tapes declared in the function;
    the CPU's variants go through the backend list (``backend/passes.py``)."""
    if variant == "jvp":
        return lower_tangent(ir, fname)
    if variant in VARIANTS:
        # dead_code copies what it changes: the variants share the IR's simple statements
        body = dead_code(ir.body() + [result_return(ir, variant)], ir.shared)
        body = _without_dead_loops(body, ir.shared)
        return emit.function_def(fname, [*ir.params, ir.seed], body)
    if variant == "forward":
        return emit.function_def(fname, list(ir.params), [*ir.prologue, *ir.workspace,
                                                          *ir.forward])
    if variant == "adjoint":
        return emit.function_def(fname, [ir.seed], [*ir.init, *ir.adjoint])
    raise ValueError(f"unknown variant {variant!r}: one of {', '.join(VARIANTS + PARTS)}")


__all__ = ["PARTS", "VARIANTS", "lower", "lower_tangent", "unchecked_tapes",
           "with_unit_seed", "with_workspace"]
