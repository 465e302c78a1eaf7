"""Vector forward mode: the ``Tangent`` IR pushing ``nd`` tangent directions through one run
of the primal (Tapenade's multi-directional tangent mode; JAX's ``vmap(jvp)``).

Layout, direction innermost: a scalar's tangent ``s_dot`` is a vector of ``nd`` (allocated
once, in the prologue, and only written element by element, so an assignment keeps the
value semantics of a float); an array's tangent has a trailing axis of ``nd``
(``u.shape + (nd,)``), so views and whole-row writes of the tangent arrays (``A_dot =
B_dot[i]``, ``B_dot[i] = A_dot``) stay as they are, each direction loop runs over contiguous
memory, and a returned tangent is the Jacobian block ``out.shape + (nd,)`` itself.

Each scalar tangent statement becomes a loop over the directions, ``s_dot = e`` ->
``for _k in range(_nd): s_dot[_k] = e[_k]`` (each tangent scalar ``t_dot`` read as
``t_dot[_k]``, each element ``A_dot[i, j]`` as ``A_dot[i, j, _k]``), its subexpressions
that read no tangent computed once before the loop.  Direction ``k`` thus runs exactly the
scalar jvp's tangent statements on its own tangents, beside the one primal.

Preconditions, checked; otherwise ``VectorRefused`` says why and ``jacfwd`` runs one jvp
per column: no prange loop (the vectors of the scalar tangents are shared); every tangent
name is the tangent of a value (no rule temporaries, no list tapes); an array tangent is
bound only to another one, a view of one by ints and slices, a copy of one, or zeros;
an element write of an array tangent has a full integer index (or writes 0.0, or a whole
tangent array of the row's rank); no other statement (``restore_into``...) reads a tangent.
Whole-array tangent expressions (``y_dot = x_dot * c``) are refused: their operands'
primal arrays would need the trailing axis broadcast.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..analysis.analyse import Analysis
from ..astutil import names_of
from ..front.build import assign, name
from ..ir import Tangent
from ..naming import Namer
from ..nodes import clone


class VectorRefused(Exception):
    """Vector forward mode does not apply; the message says why (``jacfwd`` falls back)."""


class Vectorizer:
    """Rewrites one ``Tangent`` IR to carry ``_nd`` directions (see the module docstring)."""

    def __init__(self, ir: Tangent, an: Analysis, namer: Namer, env: dict, parallel: bool):
        if parallel:
            raise VectorRefused("the code has prange loops (the scalar tangents' vectors "
                                "would be shared between threads)")
        self.ir, self.an, self.namer = ir, an, namer
        self.primal = {namer.tangent_names().get(n): n for n in an.active}
        self.primal.pop(None, None)
        tangents = _tangent_valued([*ir.prologue, *ir.sweep], set(ir.seeds) | set(self.primal))
        stray = sorted(tangents - set(self.primal) - set(ir.seeds))
        if stray:
            raise VectorRefused(f"tangent temporaries of a rule ({', '.join(stray)})")
        self.ndim = {t: self.an.kind(p).ndim for t, p in self.primal.items()}
        odd = sorted(t for t, p in self.primal.items()
                     if self.an.kind(p).cls not in "fib" or self.ndim[t] is None)
        if odd:  # list tapes, tuples, complex, values of unknown kind or rank
            raise VectorRefused(f"a tangent of a value that is no float or float array "
                                f"({', '.join(odd)})")
        self.nd, self.k = namer.fresh("_nd"), namer.fresh("_k")
        self.np = namer.global_name(env, "np", np)

    def scalar(self, t: str) -> bool:
        return self.ndim.get(t) == 0

    # --- statements ----------------------------------------------------------------

    def block(self, stmts: list[ast.stmt] | tuple[ast.stmt, ...]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for s in stmts:
            out += self.stmt(s)
        return out

    def stmt(self, s: ast.stmt) -> list[ast.stmt]:
        if isinstance(s, (ast.If, ast.While, ast.For)):
            head = s.iter if isinstance(s, ast.For) else s.test
            if isinstance(s, ast.For) and "prange" in ast.unparse(s.iter) \
                    or set(names_of(head)) & set(self.ndim):
                raise self.refused(s, "a prange loop, or a loop or test reading a tangent")
            s = clone(s)
            s.body = self.block(s.body) or [ast.Pass()]
            s.orelse = self.block(s.orelse)
            return [s]
        if not set(names_of(s)) & set(self.primal):
            return [s]
        if isinstance(s, ast.Assign) and len(s.targets) == 1:
            t = s.targets[0]
            if isinstance(t, ast.Name):
                return self.bind(s, t.id, s.value)
            if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
                return self.write(s, t, s.value, None)
            if isinstance(t, ast.Tuple):
                return self.swap(s, t)
        if isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Subscript) \
                and isinstance(s.target.value, ast.Name):
            return self.write(s, s.target, s.value, s.op)
        raise self.refused(s, "a statement of tangents that is not an assignment")

    def refused(self, s: ast.stmt, why: str) -> VectorRefused:
        return VectorRefused(f"{why}: '{ast.unparse(s)}' (line {getattr(s, 'lineno', '?')})")

    def bind(self, s: ast.Assign, t: str, v: ast.expr) -> list[ast.stmt]:
        """``t = v`` for a tangent ``t``: a loop over the directions for a scalar; for an
        array, the same reference, view or copy of a tangent array, or zeros."""
        if self.scalar(t):
            return self.per_direction(s, ast.Subscript(value=name(t), slice=name(self.k),
                                                       ctx=ast.Store()), v, None)
        if self.array_ref(v):
            return [s]
        zeros = self.zeros(v)
        if zeros is None:
            raise self.refused(s, "a whole-array tangent expression")
        return [ast.copy_location(assign(t, zeros), s)]

    def array_ref(self, v: ast.expr) -> bool:
        """Is ``v`` a tangent array, a basic view of one, or its copy?"""
        if isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) \
                and v.func.attr == "copy" and not v.args and not v.keywords:
            v = v.func.value
        if isinstance(v, ast.Subscript):
            if not self._basic(v.slice):
                return False
            v = v.value
        return isinstance(v, ast.Name) and v.id in self.ndim and not self.scalar(v.id)

    def _basic(self, idx: ast.expr) -> bool:
        """An index of ints and slices reading no tangent and no array (no fancy indexing)."""
        elts = idx.elts if isinstance(idx, ast.Tuple) else [idx]
        return all(not (set(names_of(e)) & set(self.ndim)) and self._no_array(e)
                   for e in elts)

    def _no_array(self, e: ast.expr) -> bool:
        """Does ``e`` (part of an index) read no array as a whole: arrays only through
        attributes (``x.shape[0]``) or full element reads (``parents[b]``)?"""
        if isinstance(e, ast.Attribute) or isinstance(e, ast.Subscript) \
                and isinstance(e.value, ast.Attribute) and e.value.attr == "shape" \
                or isinstance(e, ast.Call) and isinstance(e.func, ast.Name) \
                and e.func.id == "len" and len(e.args) == 1 and not e.keywords:
            return True
        if isinstance(e, ast.Name):
            return not (e.id in self.an.kinds and self.an.kind(e.id).is_array)
        if isinstance(e, ast.Subscript) and isinstance(e.value, ast.Name):
            k = self.an.kind(e.value.id) if e.value.id in self.an.kinds else None
            idx = e.slice.elts if isinstance(e.slice, ast.Tuple) else [e.slice]
            return k is not None and k.ndim == len(idx) and not any(
                isinstance(i, ast.Slice) for i in idx) and all(self._no_array(i) for i in idx)
        if isinstance(e, (ast.List, ast.Tuple, ast.Compare, ast.Subscript, ast.Call)):
            return False
        return all(self._no_array(c) for c in ast.iter_child_nodes(e)
                   if isinstance(c, ast.expr))

    def zeros(self, v: ast.expr) -> ast.expr | None:
        """``v`` (zeros shaped like ``u``: ``np.zeros_like(u)``, ``zeros_like(u)``) with the
        trailing axis: ``np.zeros(u.shape + (_nd,))``; None for anything else."""
        if set(names_of(v)) & set(self.ndim) or not isinstance(v, ast.Call) \
                or len(v.args) != 1 or v.keywords or not isinstance(v.args[0], ast.Name):
            return None
        fn = v.func.attr if isinstance(v.func, ast.Attribute) else getattr(v.func, "id", "")
        if fn.lstrip("_").rstrip("0123456789") != "zeros_like":
            return None
        u = v.args[0].id
        shape = ast.BinOp(left=ast.Attribute(value=name(u), attr="shape", ctx=ast.Load()),
                          op=ast.Add(), right=ast.Tuple(elts=[name(self.nd)], ctx=ast.Load()))
        return ast.parse(f"{self.np}.zeros({ast.unparse(shape)})", mode="eval").body

    def write(self, s: ast.stmt, t: ast.Subscript, v: ast.expr, op: Any) -> list[ast.stmt]:
        """``u_dot[i] = v`` (or ``+=``, ``-=``): a loop over the directions for a full
        integer index; a fill with a constant, or a whole row written from a tangent array
        of its rank, as it is."""
        base = t.value.id
        if base not in self.ndim:
            raise self.refused(s, "a write into a value that is not a tangent array")
        idx = t.slice.elts if isinstance(t.slice, ast.Tuple) else [t.slice]
        full = len(idx) == self.ndim[base] and self._basic(t.slice) \
            and not any(isinstance(e, ast.Slice) for e in idx)
        if full and not self._tangent_arrays(v):
            target = ast.Subscript(value=name(base), slice=ast.Tuple(
                elts=[clone(e) for e in idx] + [name(self.k)], ctx=ast.Load()), ctx=ast.Store())
            return self.per_direction(s, target, v, op)
        if isinstance(v, ast.Constant) and op is None and self._basic(t.slice):
            return [s]
        if isinstance(v, ast.Name) and v.id in self.ndim and not self.scalar(v.id) \
                and self._basic(t.slice) and not any(isinstance(e, ast.Slice) for e in idx) \
                and len(idx) + self.ndim[v.id] == self.ndim[base]:
            return [s]
        raise self.refused(s, "a tangent array written but not element by element")

    def swap(self, s: ast.Assign, t: ast.Tuple) -> list[ast.stmt]:
        """``a_dot, b_dot = b_dot, a_dot``: arrays swap references; scalars swap per
        direction (their vectors hold values)."""
        names = [e.id for e in t.elts if isinstance(e, ast.Name)]
        if len(names) != len(t.elts) or not isinstance(s.value, ast.Tuple):
            raise self.refused(s, "an unpacking of tangents")
        if not any(self.scalar(n) for n in names):
            if all(self.array_ref(e) for e in s.value.elts):
                return [s]
            raise self.refused(s, "an unpacking of tangents")
        if not all(self.scalar(n) for n in names):
            raise self.refused(s, "an unpacking of scalar and array tangents")
        target = ast.Tuple(elts=[ast.Subscript(value=name(n), slice=name(self.k),
                                               ctx=ast.Store()) for n in names], ctx=ast.Store())
        return self.per_direction(s, target, s.value, None)

    def _tangent_arrays(self, v: ast.expr) -> bool:
        """Does ``v`` read a tangent array other than through a full element index?"""
        try:
            self.element(clone(v), None)
        except VectorRefused:
            return True
        return False

    # --- one loop over the directions -------------------------------------------------

    def per_direction(self, s: ast.stmt, target: ast.expr, v: ast.expr,
                      op: Any) -> list[ast.stmt]:
        """``for _k in range(_nd): target = v[_k]`` (``op``: ``target op= v[_k]``), the
        parts of ``v`` that read no tangent computed once before the loop."""
        hoisted: list[ast.stmt] = []
        try:
            value = self.element(clone(v), hoisted)
        except VectorRefused as e:
            raise self.refused(s, str(e)) from None
        body = ast.Assign(targets=[target], value=value) if op is None else \
            ast.AugAssign(target=target, op=op, value=value)
        loop = ast.For(target=name(self.k, True), iter=ast.Call(
            func=name("range"), args=[name(self.nd)], keywords=[]), body=[body], orelse=[])
        return [ast.copy_location(h, s) for h in hoisted] + [ast.copy_location(loop, s)]

    def element(self, e: ast.expr, hoisted: list[ast.stmt]) -> ast.expr:
        """``e`` for direction ``_k``: tangent scalars and full elements of tangent arrays
        indexed by ``_k``; a maximal part reading no tangent (a call, an operation) bound
        to a temporary in ``hoisted`` (none under a conditional expression)."""
        mentioned = set(names_of(e)) & set(self.ndim)
        if not mentioned:
            if isinstance(e, (ast.Name, ast.Constant)) or hoisted is None:
                return e
            if isinstance(e, ast.UnaryOp) and isinstance(e.operand, ast.Constant):
                return e
            tmp = self.namer.fresh("_h")
            hoisted.append(assign(tmp, e))
            return name(tmp)
        if isinstance(e, ast.Name):
            if not self.scalar(e.id):
                raise VectorRefused(f"the tangent array '{e.id}' in a scalar expression")
            return ast.Subscript(value=e, slice=name(self.k), ctx=ast.Load())
        if isinstance(e, ast.Subscript) and isinstance(e.value, ast.Name) \
                and e.value.id in self.ndim:
            idx = e.slice.elts if isinstance(e.slice, ast.Tuple) else [e.slice]
            if self.scalar(e.value.id) or len(idx) != self.ndim[e.value.id] \
                    or not self._basic(e.slice) or any(isinstance(i, ast.Slice) for i in idx):
                raise VectorRefused(f"'{ast.unparse(e)}' is not one element of a tangent")
            e.slice = ast.Tuple(elts=[*idx, name(self.k)], ctx=ast.Load())
            return e
        if isinstance(e, ast.Call) and any(set(names_of(kw.value)) & set(self.ndim)
                                           for kw in e.keywords):
            raise VectorRefused("a tangent passed by keyword")
        if isinstance(e, (ast.IfExp, ast.BoolOp, ast.Lambda)):
            hoisted = None  # evaluated conditionally: nothing moves out of it
        for field, old in ast.iter_fields(e):
            if isinstance(old, list):
                setattr(e, field, [self.element(x, hoisted) if isinstance(x, ast.expr) else x
                                   for x in old])
            elif isinstance(old, ast.expr) and not (isinstance(e, ast.Call) and field == "func"):
                setattr(e, field, self.element(old, hoisted))
        return e

    # --- the function -------------------------------------------------------------------

    def tangent(self) -> Tangent:
        """The vector ``Tangent`` IR: ``_nd`` from the first seed, copies of the scalar
        seeds (the caller's vectors are never written), a vector per scalar tangent."""
        ir = self.ir
        if not ir.seeds:
            raise VectorRefused("no wrt argument")
        axis = self.ndim.get(ir.seeds[0], -1)  # (its trailing axis by number: the bounds
        # pass reads ``_nd`` as that extent, so ``[_k]`` of it is in range)
        pro: list[ast.stmt] = [assign(self.nd, ast.parse(f"{ir.seeds[0]}.shape[{axis}]",
                                                         mode="eval").body)]
        bound = {n.id for s in ast.walk(ast.Module(body=[*ir.prologue, *ir.sweep],
                                                   type_ignores=[]))
                 if isinstance(s, ast.Assign) for t in s.targets for n in ast.walk(t)
                 if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        for t in ir.seeds:
            if self.scalar(t) and t in bound:  # (written: the caller's vector is not)
                pro.append(assign(t, ast.parse(f"{t}.copy()", mode="eval").body))
        for t in sorted(self.ndim):
            if self.scalar(t) and t not in ir.seeds:
                pro.append(assign(t, ast.parse(f"{self.np}.zeros({self.nd})", mode="eval").body))
        pro += self.block(ir.prologue)
        sweep = self.block(ir.sweep)
        tangents = tuple(self.result(r, t) for r, t in zip(ir.results, ir.tangents,
                                                              strict=True))
        return replace(ir, prologue=tuple(pro), sweep=tuple(sweep), tangents=tangents)

    def result(self, r: ast.expr, t: ast.expr) -> ast.expr:
        """A returned tangent: itself, or zeros with the trailing axis for an inactive one."""
        if isinstance(t, ast.Name):
            return t
        zeros = self.zeros(t)
        if zeros is not None:
            return zeros
        if isinstance(t, ast.Constant):
            return ast.parse(f"{self.np}.zeros({self.nd})", mode="eval").body
        raise VectorRefused(f"the returned tangent '{ast.unparse(t)}'")


def _tangent_valued(stmts: list[ast.stmt], seeds: set[str]) -> set[str]:
    """The names bound from a value that reads a tangent (``seeds`` and what reads them,
    to a fixed point): the tangent names of the code."""
    found = set(seeds)
    assigns = [s for top in stmts for s in ast.walk(top) if isinstance(s, ast.Assign)]
    while True:
        new = {n for s in assigns if set(names_of(s.value)) & found
               for t in s.targets for n in names_of(t) if not isinstance(t, ast.Subscript)}
        if new <= found:
            return found
        found |= new


@dataclass(frozen=True)
class VectorForm:
    """The vector ``Tangent`` IR, its loops' direction variable ``k`` and count ``nd``, and
    its scalar tangents (each a vector of ``nd``)."""

    ir: Tangent
    k: str
    nd: str
    scalars: frozenset[str]
    #: the primal's arrays (a statement writing one, or calling, stays before a loop
    #: that reads one: it may be a view of another)
    arrays: frozenset[str] = frozenset()


def vectorize(ir: Tangent, an: Analysis, namer: Namer, env: dict, parallel: bool
              ) -> VectorForm:
    """The vector form of the ``Tangent`` IR ``ir`` (raises ``VectorRefused``)."""
    v = Vectorizer(ir, an, namer, env, parallel)
    return VectorForm(v.tangent(), v.k, v.nd,
                      frozenset(t for t in v.ndim if v.scalar(t) and t not in ir.seeds),
                      frozenset(n for n, k in an.kinds.items() if k.is_array) - set(v.ndim))


# --- fusing the direction loops ---------------------------------------------------------


def fuse(form: VectorForm) -> VectorForm:
    """The direction loops of each straight run of statements fused into one: a loop
    moves down past a statement that reads no tangent and binds nothing it reads (the
    primal never reads a tangent, so only the loop's own reads matter) into the next
    loop; then a scalar tangent used in one fused loop only, written there before it is
    read, is a float local to that loop (no vector, no memory traffic)."""
    body = _Fuser(form).block(list(form.ir.sweep))
    uses: dict[str, list[int]] = {}
    loops = [s for top in body for s in ast.walk(top) if _is_direction_loop(s, form)]
    for i, loop in enumerate(loops):
        for n in ast.walk(loop):
            if isinstance(n, ast.Name) and n.id in form.scalars:
                uses.setdefault(n.id, []).append(i)
    allocations = [s for s in form.ir.prologue if isinstance(s, ast.Assign)
                   and isinstance(s.targets[0], ast.Name) and s.targets[0].id in form.scalars]
    outside = _names_outside([s for s in form.ir.prologue if s not in allocations], None) \
        | _names_outside(body, form) | _names_outside(list(form.ir.tangents), None)
    local: set[str] = set()
    for i, loop in enumerate(loops):
        local |= _localize(loop, form, {t for t, at in uses.items()
                                        if set(at) == {i} and t not in outside})
    prologue = [s for s in form.ir.prologue if not (
        isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name)
        and s.targets[0].id in local)]
    return replace(form, ir=replace(form.ir, prologue=tuple(prologue), sweep=tuple(body)),
                   scalars=form.scalars - local)


def _names_outside(nodes: list[ast.AST], form: VectorForm | None) -> set[str]:
    """The names in ``nodes`` outside the direction loops of ``form`` (None: all)."""
    out: set[str] = set()
    stack = list(nodes)
    while stack:
        n = stack.pop()
        if form is not None and _is_direction_loop(n, form):
            continue
        if isinstance(n, ast.Name):
            out.add(n.id)
        stack.extend(ast.iter_child_nodes(n))
    return out


def _is_direction_loop(s: ast.AST, form: VectorForm) -> bool:
    return isinstance(s, ast.For) and isinstance(s.target, ast.Name) \
        and s.target.id == form.k and isinstance(s.iter, ast.Call) \
        and ast.unparse(s.iter) == f"range({form.nd})"


class _Fuser:
    """Fuses the direction loops of each block (see ``fuse``)."""

    def __init__(self, form: VectorForm) -> None:
        self.form = form
        self.tangents = form.scalars | {
            n.id for s in [*form.ir.prologue, *form.ir.sweep] for n in ast.walk(s)
            if isinstance(n, ast.Name) and n.id.endswith("_dot")} | set(form.ir.seeds)

    def block(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        pending: ast.For | None = None
        moved: list[ast.stmt] = []
        for s in stmts:
            if _is_direction_loop(s, self.form):
                if pending is None:
                    pending = clone(s)
                else:
                    pending.body += clone(s).body
                continue
            if isinstance(s, (ast.If, ast.While, ast.For)):
                s = clone(s)
                s.body = self.block(s.body) or [ast.Pass()]
                s.orelse = self.block(s.orelse)
            if pending is not None and self.movable(s, pending):
                moved.append(s)
                continue
            if pending is not None:
                out += [*moved, pending]
                pending, moved = None, []
            out.append(s)
        if pending is not None:
            out += [*moved, pending]
        return out

    def movable(self, s: ast.stmt, loop: ast.For) -> bool:
        """Can ``s`` run before ``loop`` (a simple statement whose value reads no tangent:
        a primal statement or a tangent array's allocation, binding nothing the loop
        reads; if it writes an element or calls, the loop reads no primal array, which
        could be a view of what it writes)?"""
        if not isinstance(s, (ast.Assign, ast.AugAssign)):
            return False
        names = {n.id for n in ast.walk(s.value) if isinstance(n, ast.Name)}
        if names & self.tangents or isinstance(s, ast.AugAssign) \
                and {n.id for n in ast.walk(s.target) if isinstance(n, ast.Name)} & self.tangents:
            return False
        targets = s.targets if isinstance(s, ast.Assign) else [s.target]
        bound = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        reads = {n.id for n in ast.walk(loop) if isinstance(n, ast.Name)}
        writes = not all(isinstance(t, ast.Name) for t in targets) or any(
            isinstance(n, ast.Call) for n in ast.walk(s.value))
        return not bound & reads and not (writes and reads & self.form.arrays)


def _localize(loop: ast.For, form: VectorForm, cands: set[str]) -> set[str]:
    """The candidates whose first use in ``loop`` (straight-line) is a whole write
    ``t[_k] = ...``, each ``t[_k]`` there replaced by the float ``t``."""
    ok: set[str] = set()
    seen: set[str] = set()
    for s in loop.body:
        reads = {n.value.id for n in ast.walk(s.value if isinstance(s, ast.Assign) else s)
                 if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name)
                 and isinstance(n.ctx, ast.Load)}
        seen |= reads
        if isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Subscript):
            t = s.targets[0].value
            if isinstance(t, ast.Name) and t.id in cands and t.id not in seen:
                ok.add(t.id)
            seen.add(getattr(t, "id", ""))
    for n in ast.walk(loop):
        for field, old in ast.iter_fields(n):
            if isinstance(old, list):
                setattr(n, field, [_scalar(x, ok, form.k) for x in old])
            else:
                setattr(n, field, _scalar(old, ok, form.k))
    return ok


def _scalar(e: Any, ok: set[str], k: str) -> Any:
    """``t[_k]`` as the float ``t`` for ``t`` in ``ok``."""
    if isinstance(e, ast.Subscript) and isinstance(e.value, ast.Name) and e.value.id in ok \
            and isinstance(e.slice, ast.Name) and e.slice.id == k:
        return ast.Name(id=e.value.id, ctx=e.ctx)
    return e


__all__ = ["VectorForm", "VectorRefused", "Vectorizer", "fuse", "vectorize"]
