"""Reverse mode's passes after the front end (``reverse``, ``optimize``, ``gather``,
``promote``, ``lower``; listed in ``pipeline.py``'s ``SPECIALISE``), and what the backend
list (``backend/passes.py``) needs of the unit: ``backend_context``."""

from __future__ import annotations

import ast
import copy
import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from ..kernels import helpers
from .analysis.dataflow import Dataflow
from .backend import emit, lower, passes
from .backend.gather import gather_form
from .backend.known_zero import known_zero_adds
from .backend.optimize import fold_scalar_adjoints, merge_accumulations
from .backend.prange import Parallel
from .backend.promote import promote_accumulations
from .backend.shape_only import shape_reading_names
from .front.inline import resolve
from .front.purity import builtins_unshadowed
from .front.split import call_helpers
from .ir import Adjoint
from .modes.reverse import Sweeps, reverse
from .nodes import clone
from .notes import ZEROING
from .unit import Unit


def reverse_(u: Unit) -> None:
    """Reverse mode: the forward sweep with pushes, the adjoint sweep with pops (the IR).
    A value the adjoint reads that the next trip overwrites is recomputed where that costs
    no more than a tape round trip, and stored otherwise (``analysis/cost.py``); comments
    say which and why, and which user line each adjoint is of:

    >>> print(example("reverse", '''
    ... def f(x, n):
    ...     s = 0.0
    ...     for i in range(n):
    ...         r = math.sqrt(x[i] + 1.0)
    ...         t = math.exp(r)
    ...         s = s + t * r
    ...     return s
    ... ''', args=(np.ones(3), 3)))
    def f_grad(x, n, _dret):
        _tape_t_1 = np.empty(0, np.float64)
        _tape_t_1n = 0
        s = 0.0
        _tape_t_1 = tape_reserve(_tape_t_1, _tape_t_1n, n)
        for i in range(n):
            _t2 = x[i]
            _t = _t2 + 1.0
            r = math.sqrt(_t)
            t = math.exp(r)
            # stored t: math.exp costs 20 > tape 16
            _tape_t_1[_tape_t_1n] = t
            _tape_t_1n += 1
            _t3 = t * r
            s = s + _t3
        dx = np.zeros_like(x)
        ds = 0.0
        ds += _dret
        for i in range(n - 1, -1, -1):
            # line 6: s = s + t * r
            _dt3 = ds
            # recomputed r from x (cost 6 <= tape 16, the rest shared with earlier lines)
            _t = x[i] + 1.0
            r = math.sqrt(_t)
            _tape_t_1n -= 1
            t = _tape_t_1[_tape_t_1n]
            dt = _dt3 * r
            dr = _dt3 * t
            # line 5: t = math.exp(r)
            dr += dt * t
            # line 4: r = math.sqrt(x[i] + 1.0)
            _dt = guard(dr, dr * 0.5 / r)
            dx[i] += _dt
        return (s, dx)
    """
    seeded = u.returns[:1] if u.aux else u.returns  # has_aux: aux carries no gradient
    sw = reverse(u.parsed, u.body, u.analysis, u.env, u.namer, u.params, u.wrt, seeded,
                 u.auto_checkpoint)
    u.ir = _adjoint_ir(u, sw, _kept_results(u, sw))


def _kept_results(u: Unit, sw: Sweeps) -> list[ast.expr]:
    """The returned values, each one the adjoint sweep may restore (``sw.restored``) first
    kept aside under a fresh name at the end of the forward sweep."""
    results = []
    for r in u.returns:
        if isinstance(r, ast.Name) and r.id in sw.restored:
            keep = u.namer.fresh("_value")
            sw.forward.append(ast.Assign(targets=[ast.Name(id=keep, ctx=ast.Store())],
                                         value=ast.Name(id=r.id, ctx=ast.Load())))
            results.append(ast.Name(id=keep, ctx=ast.Load()))
        else:
            results.append(r)
    return results


def _adjoint_ir(u: Unit, sw: Sweeps, results: list[ast.expr]) -> Adjoint:
    """The IR record of reverse mode's sweeps ``sw`` (helpers split off called as such)."""
    sw.compiled |= call_helpers([*sw.prologue, *sw.workspace, *sw.forward, *sw.init,
                                 *sw.adjoint], u.env, u.namer)
    return Adjoint(u.name, tuple(u.params), u.namer.seed, tuple(sw.prologue),
                   tuple(sw.workspace), tuple(sw.forward), tuple(sw.init), tuple(sw.adjoint),
                   tuple(results), tuple(sw.grads), dict(sw.shared), frozenset(sw.callables),
                   tuple(sw.reused), tuple(sw.buffers), tuple(sw.schedules), sw.snapshots,
                   u.namer.workspace, u.namer.global_name(u.env, "np", np),
                   shape_reading_names(u.env), frozenset(sw.compiled))


def show_ir(u: Unit) -> str:
    """The IR as the value-and-gradient function, before optimisation."""
    fn = emit.function_def(f"{u.name}_grad", [*u.ir.params, u.ir.seed],
                           clone(u.ir.body()) + [lower.result_return(u.ir, "grad")])
    return emit.unparse(fn)


def optimize_(u: Unit) -> None:
    """Accumulations into one adjoint in a row become one statement, and a scalar adjoint
    zeroed just before its first contribution, or known zero on every path to it (through
    loops and branches: ``backend/known_zero.py``), is assigned it; a scalar adjoint's
    zeroing nothing reads goes (other dead code goes at lowering, per variant).

    >>> print(example("optimize", '''
    ... def f(x, n):
    ...     s = 0.0
    ...     for i in range(n):
    ...         s = s + x[i] * x[i]
    ...     return s
    ... ''', args=(np.ones(3), 3)))
    def f_grad(x, n, _dret):
        s = 0.0
        for i in range(n):
            _t2 = x[i]
            _t3 = x[i]
            _t = _t2 * _t3
            s = s + _t
        dx = np.zeros_like(x)
        ds = _dret
        for i in range(n - 1, -1, -1):
            # line 4: s = s + x[i] * x[i]
            _dt = ds
            _t2 = x[i]
            _t3 = x[i]
            _dt2 = _dt * _t3
            _dt3 = _dt * _t2
            dx[i] += _dt3 + _dt2
        return (s, dx)
    """
    ir = u.ir
    adjoint = merge_accumulations(list(ir.adjoint), ir.shared)
    scalars = {d for n, d in u.namer.adjoints().items()
               if n in u.kinds and not u.kinds[n].is_array}
    stmts = [*ir.init, *adjoint]
    flow = Dataflow([*ir.forward, *stmts], ir.shared, is_array=_array_kinds(u), env=u.env)
    both = known_zero_adds(fold_scalar_adjoints(stmts, scalars, flow), scalars,
                           set(ir.grads))
    kept = 0  # the zeroings that stay are still the first statements
    while kept < len(both) and kept < len(ir.init) and both[kept] in ir.init:
        kept += 1
    u.ir = dataclasses.replace(ir, init=tuple(both[:kept]), adjoint=tuple(both[kept:]))


def gather_(u: Unit) -> None:
    """A reversed loop that scatters into ``dx[i + c]`` runs over the output index
    instead, writing each element once (``backend/gather.py``; edges guarded).

    >>> print(example("gather", '''
    ... def f(x, n):
    ...     s = 0.0
    ...     for i in range(n):
    ...         s = s + x[i] * x[i + 1]
    ...     return s
    ... ''', args=(np.ones(4), 3), variant="adjoint"))
    def f_adjoint(_dret):
        dx = np.empty_like(x)
        ds = _dret
        _lo = 0
        _hi = n
        _inner_lo = _lo + 1
        _inner_hi = max(_inner_lo, _hi)
        _head = _inner_lo - _lo
        _edges = _head + (_hi + 1 - _inner_hi)
        if _lo < _hi:
            # dx: each element written once (made empty); those no index reaches set to 0
            dx[_hi + 1:] = 0.0
            # line 4: s = s + x[i] * x[i + 1]
            for i in range(_inner_lo, _inner_hi):
                _dt = ds
                _t3 = x[i + 1]
                _dt2 = _dt * _t3
                _i_prev = i - 1
                _dt_prev = ds
                _t2_prev = x[_i_prev]
                _dt3_prev = _dt_prev * _t2_prev
                dx[i] = _dt2 + _dt3_prev
            for _e in range(_edges):
                i = _lo + _e if _e < _head else _inner_hi + (_e - _head)
                _gdx = 0.0
                if _lo <= i < _hi:
                    _dt = ds
                    _t3 = x[i + 1]
                    _dt2 = _dt * _t3
                    _gdx += _dt2
                if _lo <= i - 1 < _hi:
                    _i_prev = i - 1
                    _dt_prev = ds
                    _t2_prev = x[_i_prev]
                    _dt3_prev = _dt_prev * _t2_prev
                    _gdx += _dt3_prev
                dx[i] = _gdx
        else:
            dx[:] = 0.0
    """
    ir = u.ir
    before = [*ir.prologue, *ir.workspace, *ir.forward, *ir.init]
    adjoint, once = gather_form(list(ir.adjoint), before, u.env, u.namer, ir.shared,
                                set(ir.grads), parallel=u.parallel,
                                kept=frozenset(d for d, _, _ in ir.buffers))
    init = tuple(_made_empty(s) if isinstance(s, ast.Assign) and isinstance(
        s.targets[0], ast.Name) and s.targets[0].id in once else s for s in ir.init)
    u.ir = dataclasses.replace(ir, init=init, adjoint=tuple(adjoint))


def _made_empty(s: ast.Assign) -> ast.Assign:
    """``d = np.empty_like(v)`` for the zeroing ``d = np.zeros_like(v)``."""
    new = clone(s)
    new.value.func.attr = "empty_like"
    ZEROING.set(new.value, False)
    return new


def promote_(u: Unit) -> None:
    """An inner loop's accumulations into one element (``dpos[i, k] += e`` with ``i`` from
    an outer loop) go to a scalar, added once after the loop (``backend/promote.py``).

    >>> print(example("promote", '''
    ... def f(x, n):
    ...     s = 0.0
    ...     for i in range(n):
    ...         for j in range(i + 1, n):
    ...             s = s + x[i] * x[j]
    ...     return s
    ... ''', args=(np.ones(3), 3), variant="adjoint"))
    def f_adjoint(_dret):
        dx = np.zeros_like(x)
        ds = _dret
        for i in range(n - 1, -1, -1):
            _n_1 = i + 1
            _dx_i_sum = 0.0
            for j in range(n - 1, _n_1 - 1, -1):
                # line 5: s = s + x[i] * x[j]
                _dt = ds
                _t2 = x[i]
                _t3 = x[j]
                _dt2 = _dt * _t3
                _dt3 = _dt * _t2
                dx[j] += _dt3
                _dx_i_sum += _dt2
            if n > _n_1:
                dx[i] += _dx_i_sum
    """
    ir = u.ir
    before = [*ir.prologue, *ir.workspace, *ir.forward, *ir.init]
    ndims = {d: u.kinds[n].ndim for n, d in u.namer.adjoints().items()
             if n in u.kinds and u.kinds[n].is_array and u.kinds[n].ndim is not None}
    adjoint = promote_accumulations(list(ir.adjoint), before, u.env, u.namer, ir.shared,
                                    ndims)
    u.ir = dataclasses.replace(ir, adjoint=tuple(adjoint))


def lower_(u: Unit) -> None:
    """One function per variant from the IR: value and gradient, gradient only (CPU; for a
    scalar function the gradient-only variant, which ``f.grad`` runs, has its seed 1.0),
    each through the steps of ``BACKEND`` (``backend/passes.py``).

    >>> print(example("lower", '''
    ... def f(x, y):
    ...     return x * y + math.sin(x)
    ... ''', variant="grad_only"))
    def f_gradonly_1(x, y, _dret):
        # line 2: return x * y + math.sin(x)
        dx = 1.0 * np.cos(x) + 1.0 * y
        dy = 1.0 * x
        return (None, (dx, dy))
    """
    ctx = backend_context(u)
    u.element_loops = None if ctx.ndims is not None else False  # (see ``_variant_text``)
    for v in lower.VARIANTS:  # (each written when first asked for: ``lowered``)
        u.sources.later[v] = functools.partial(_variant_text, u, ctx, v)
    for part in lower.PARTS:  # (for reading only)
        u.sources.later[part] = functools.partial(_sweep_text, ctx, part, f"{u.name}_{part}")


def _variant_text(u: Unit, ctx: passes.Context, variant: str) -> str:
    """The source of ``variant`` (``lower.VARIANTS``), lowered now: the same whichever
    variant is lowered first (``passes.lower_variant``)."""
    text = passes.lower_variant(ctx, variant).text
    if ctx.element_loops or all(v == variant or v not in u.sources.later
                                for v in lower.VARIANTS):
        u.element_loops = ctx.element_loops  # (known: one has them, or all are lowered)
    return text


def lowered(u: Unit) -> Unit:
    """``u`` with every one of ``lower.VARIANTS`` lowered (what the on-disk cache keeps,
    and ``element_loops`` knows all of)."""
    for v in lower.VARIANTS:
        u.sources[v]  # noqa: B018 (written by ``Sources.__missing__``)
    return u


def _sweep_text(ctx: passes.Context, part: str, fname: str) -> str:
    """The source of the one-sweep function ``part`` (``lower.PARTS``) of ``ctx``'s IR."""
    return passes.sweep_text(ctx, lower.lower(ctx.ir, part, fname))


def _fuses_elements(u: Unit) -> bool:
    """Run whole-array chains as element loops: compiled for float64 arguments
    (``transform``'s ``elements``), not second order's input (jitgrad's own gradient code,
    differentiated again), and no narrower float named in the code."""
    return u.jit and not u.parsed.filename.startswith("<jitgrad:") and not _narrow_floats(u)


#: what a narrower float dtype is named by (``np.float32``, ``"f4"``, ``"single"``...)
_NARROW = frozenset(np.dtype(t) for t in (np.float16, np.float32))


def _narrow_floats(u: Unit) -> bool:
    """Does the code name a float dtype narrower than float64?  Element loops make their
    arrays float64 where every float is (``np.empty_like`` of a float64 array)."""
    def narrow(v: Any) -> bool:
        try:
            return isinstance(v, (type, str, np.dtype)) and np.dtype(v) in _NARROW
        except (TypeError, ValueError):
            return False

    def named(e: ast.AST) -> Any:
        return e.value if isinstance(e, ast.Constant) else \
            resolve(e, u.env) if isinstance(e, (ast.Name, ast.Attribute)) else None

    return any(narrow(named(e)) for s in u.body for e in ast.walk(s))


def all_float64(args: Any) -> bool:
    """Are the floats among ``args`` (arrays, NumPy scalars, in tuples and lists) all
    float64?  Then element loops may run (``transform``'s ``elements``)."""
    if isinstance(args, list):  # (one type of element, as Numba's lists have)
        return not args or all_float64(args[0])
    if isinstance(args, tuple):
        return all(all_float64(a) for a in args)
    dt = getattr(args, "dtype", None)
    return not isinstance(dt, np.dtype) or dt.kind != "f" or dt == np.float64


def _scalar_cotangents(u: Unit) -> frozenset[str]:
    """The adjoints of float scalars (``backend/zero_skip.py`` guards loops on them)."""
    return frozenset(d for n, d in u.namer.adjoints().items()
                     if (k := u.kinds.get(n)) is not None and k.cls == "f" and k.ndim == 0)


def _array_kinds(u: Unit) -> Callable[[str], bool | None]:
    """Whether a name (or its adjoint) is an array, where the kinds know; else None."""
    kind = _kinds(u)
    return lambda n: None if (k := kind(n)) is None else k.is_array


def _kinds(u: Unit) -> Callable[[str], Any]:
    """A name's kind, an adjoint's its primal's (``backend/bounds.py``); None where unknown."""
    known = dict(u.kinds)
    for n, d in u.namer.adjoints().items():
        if n in known:
            known.setdefault(d, known[n])
    return known.get


def _rewrites(u: Unit) -> Callable[[], Parallel]:
    """Makes a prange rewrite per variant, each naming with a copy of the namer as it is
    now (so a variant's names do not depend on which variant was lowered first)."""
    names = copy.deepcopy(u.namer)
    return lambda: Parallel(u, copy.deepcopy(names))


def backend_context(u: Unit) -> passes.Context:
    """What the backend list needs of the unit, shared by its variants (names them)."""
    u.names = {"grad": u.namer.fresh(f"{u.name}_grad_"),
               "grad_only": u.namer.fresh(f"{u.name}_gradonly_")}
    ret = u.returns[0] if len(u.returns) == 1 else None
    scalar = isinstance(ret, ast.Constant) or (
        isinstance(ret, ast.Name) and ret.id in u.kinds and not u.kinds[ret.id].is_array
        and u.kinds[ret.id].cls in ("f", "i", "b"))
    arrays = frozenset(n for n, k in u.kinds.items() if k.cls == "f" and k.ndim)
    return passes.Context(
        u.ir, u.names, u.workspaces, unit_seed=scalar, reads=u.reads,
        once=builtins_unshadowed(u.env, ("max", "range", "len")), arrays=arrays,
        cotangents=_scalar_cotangents(u), is_array=_array_kinds(u),
        ndims=u.float_ndims(scalar) if _fuses_elements(u) else None, env=u.env,
        parallel=_rewrites(u) if u.parallel else None,
        cached_calls=u.jit and not u.parallel,
        kinds=_kinds(u) if u.jit and not u.parallel else None,
        accessor=lambda n: u.namer.global_name(u.env, n, getattr(helpers, n)))

