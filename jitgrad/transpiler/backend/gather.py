"""Gather form: scatter accumulations of a reversed loop turned into one write per element.

The adjoint of ``y += f(x[i], x[i + 1])`` over ``i`` accumulates ``dx[i] += a_i`` and
``dx[i + 1] += b_i`` in every iteration: each element is read, added to and written
twice, and the loop carries a dependence through ``dx`` that stops LLVM from
vectorising it.  When every write of an adjoint array in the loop is such an
accumulation at ``i + c`` for constants ``c``, the loop can run over the output index
``j`` instead, each iteration computing the terms that land on ``dx[j]`` (``a_j`` and
``b_{j-1}``) and writing ``dx[j]`` once, the way an expert writes the adjoint of a
stencil::

    for i in range(n - 1, -1, -1):          for i in range(_j0, _j1):   # all terms exist
        <a, b from x[i], x[i + 1]>              <a at i>; _i1 = i - 1; <b at _i1>
        dx[i] += a                   ->         dx[i] += a + b_1
        dx[i + 1] += b                      + the few edge indices, each term guarded

It applies only where it is exact: a straight-line body whose statements are pure
(element reads, arithmetic, calls of NumPy/``math`` functions), no value carried from
one iteration to the next except sums into scalars (``dk += e``, each iteration's made
once; in a serial loop only where it resets the adjoint element it starts from,
``dv[i] = 0.0``: a loop whose sums' seed is known before it runs is the fuse step's,
which runs each iteration's adjoint right after it), no element written except the
gathered accumulations (and ``dv[i] = 0.0`` resets at the iteration's own index, moved to
a loop of their own after it), gathered and reset arrays that are freshly allocated
buffers (``distinct_buffers``), gathered ones the body does not read, and tape reads whose
cursor moves by one per iteration (read at ``base + i`` instead).  Anything else stays
a scatter.  Sums are formed in another order: results agree to round-off.

So that LLVM vectorises the main loop (``for i in range(_inner_lo, _inner_hi)``): a sum
into a scalar there would chain every iteration's addition to the previous one's, so
its terms go to a buffer of partial sums instead (``_lanes_dk[i - _inner_lo] = e``,
grown once and kept for the sweep), added to ``dk`` after the loop by ``lane_sum`` (four
interleaved sums); and a tape is read through a view from the loop's first entry,
``tape_get(_tape_x_at, i - _lo)``, an index LLVM sees is never negative (at ``base + i``
Numba's wrap of a negative index, a select per read, kept the loop scalar; measured on
the heat equation in ``docs/long-loops.md``).

A loop the user wrote over ``numba.prange``, compiled with ``parallel=True``, is gathered
with its sums into scalars too (each iteration's made once, with the terms at one
offset): its main loop keeps the prange note, so ``backend/prange.py`` runs it in
parallel, each thread writing only its own ``dx[j]`` and ``dk`` a reduction, where its
scatter would need a partial buffer per thread.  Its main range then starts at 0 at the
lowest (``dx[j]`` with ``j < 0`` is element ``j + n``, which another ``j`` writes); the
edges run serially.
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from ...kernels import helpers
from ...rules.primitives import allocates, copies, zeros_shaped_like
from ..analysis import dataflow
from ..astutil import exposed_reads
from ..front.desugar import assign, const, name
from ..front.inline import rename
from ..front.purity import builtins_unshadowed, called, is_pure, resolve_name
from ..naming import Namer, names_in
from ..nodes import clone, loaded_ids, stmts_by_depth, walk, with_blocks
from ..notes import COMMENT, carry, is_prange
from .emit import comment as emit_comment


def gather_form(stmts: list[ast.stmt], before: list[ast.stmt], env: dict[str, Any],
                namer: Namer, shared: dict[str, str], keep: set[str],
                parallel: bool = False, kept: frozenset[str] = frozenset()
                ) -> tuple[list[ast.stmt], set[str]]:
    """``stmts`` (the adjoint sweep) with each qualifying reversed loop in gather form,
    and the arrays whose every element it writes once, whose zeroing in
    ``before`` may become ``np.empty_like``; ``before``: the statements run before the
    sweep (where adjoint buffers are allocated); ``keep``: names read after the sweep (the
    gradients); ``parallel``: compiled with ``parallel=True``, where a prange loop's gather
    form may sum into scalars too (see ``_Rewrite``); ``kept``: buffers zeroed in workspace
    memory (they stay zeroed).  The input is not changed."""
    wanted = scattered_arrays(stmts)
    if not wanted or not builtins_unshadowed(env, ("min", "max", "range")):
        return list(stmts), set()  # nothing to gather, or the module shadows a builtin
    every = [*before, *stmts]
    top = list(stmts)
    fresh = distinct_buffers(every, shared, env, wanted)
    # (a prange loop's buffers: workspace buffers and copies count, as backend/prange.py's)
    own = distinct_buffers(every, shared, env, copies=True) if parallel else fresh
    rw = _Rewrite(env, namer, fresh, own if parallel else None, _ReadsOutside(top, keep))
    rw.unzeroed = _zeroed_untouched(before, fresh - kept, env)
    out = rw.block(top, top=True)
    return rw.prelude + out, rw.written_once


def _zeroed_untouched(before: list[ast.stmt], fresh: set[str], env: dict[str, Any]
                      ) -> set[str]:
    """The arrays of ``fresh`` that ``before`` binds once, to ``np.zeros_like(v)`` (the
    table's ``zeros_shaped_like``), and does not touch after that: the first writer of such
    an array may write instead of add."""
    allocs = [s for s in before if _allocates(s, env) and s.targets[0].id in fresh
              and zeros_shaped_like(resolve_name(s.value.func, env))]
    if not allocs:
        return set()
    mentions: dict[str, int] = {}  # name -> how many statements of ``before`` name it
    for x in before:
        for n in names_in(x):
            mentions[n] = mentions.get(n, 0) + 1
    return {s.targets[0].id for s in allocs if mentions.get(s.targets[0].id) == 1}


class _Rewrite:
    """The walk that puts each qualifying loop in gather form.  A loop the user wrote over
    ``prange`` (``parallel`` is the set of distinct buffers then; None: serial code) may also
    sum into scalars (``dk += e``): its gathered loop runs in parallel, where Numba makes
    that sum a reduction, so the gather form pays for itself there."""

    def __init__(self, env, namer: Namer, fresh: set[str], parallel: set[str] | None,
                 outside: _ReadsOutside):
        self.env, self.namer, self.fresh, self.parallel = env, namer, fresh, parallel
        self.outside = outside
        #: zeroed before the sweep and untouched since (``_zeroed_untouched``)
        self.unzeroed: set[str] = set()
        #: of those, the ones a gathered loop writes once per element (no zeroing needed)
        self.written_once: set[str] = set()
        #: statements run before the sweep: the buffers of partial sums made empty
        self.prelude: list[ast.stmt] = []

    def block(self, stmts: list[ast.stmt], top: bool = False) -> list[ast.stmt]:
        """``stmts`` with their qualifying loops (at any depth) in gather form; ``top``:
        the sweep's own statements (run once: a loop there can be an array's first
        writer)."""
        out: list[ast.stmt] = []
        for k, s in enumerate(stmts):
            if isinstance(s, ast.For):
                par = self.parallel is not None and is_prange(s)
                plan = _plan(s, self.env, self.parallel if par else self.fresh, self.outside,
                             stmts, parallel=par)
                if plan is not None:
                    once = self._first_writes(plan, stmts[:k]) if top else set()
                    self.written_once |= once
                    out += _emit(s, plan, self.namer, once, self._lanes(plan), self._tapes(
                        plan))
                    continue
                if any(isinstance(x, (ast.For, ast.While)) for x in s.body):
                    out.append(with_blocks(s, self.block, ("body",)))  # (notes kept)
                    continue
            elif isinstance(s, (ast.If, ast.While)) and any(
                    isinstance(x, (ast.For, ast.While, ast.If)) for x in s.body + s.orelse):
                out.append(with_blocks(s, self.block))
                continue
            out.append(s)
        return out


    def _lanes(self, p: _Plan) -> _Lanes | None:
        """For a serial loop's sums into scalars: each scalar's buffer of partial sums
        (``_lanes_dk``), made empty at the start of the sweep (``prelude``)."""
        if p.parallel or not p.sums:
            return None
        g = self.namer.global_name
        out = _Lanes(g(self.env, "np_empty", np.empty),
                     g(self.env, "lane_sum", helpers.lane_sum))
        for t in dict.fromkeys(x.target.id for x in p.sums):
            out.buffers[t] = self.namer.fresh("_lanes_" + t.lstrip("_"))
            self.prelude.append(assign(out.buffers[t], _call(out.empty, const(0))))
        return out

    def _tapes(self, p: _Plan) -> tuple[str, str]:
        """The names of ``tape_get`` and ``tape_from`` (where ``p`` reads tapes)."""
        if not p.cursors:
            return "", ""
        g = self.namer.global_name
        return (g(self.env, "tape_get", helpers.tape_get),
                g(self.env, "tape_from", helpers.tape_from))

    def _first_writes(self, p: _Plan, earlier: list[ast.stmt]) -> set[str]:
        """The arrays the gather form of ``p`` writes every element of once, the first
        writer since their zeroing (``earlier``: the sweep's statements before it): where
        the output indices ``lo + cmin .. hi + cmax - 1`` cannot wrap (``lo`` a constant,
        ``lo + cmin >= 0``), each is a different element."""
        if not (isinstance(p.lo, ast.Constant) and type(p.lo.value) is int):
            return set()
        cmin = min(c for _, c, _ in p.adds)
        if p.lo.value + cmin < 0:
            return set()
        touched = set().union(*(names_in(x) for x in earlier)) if earlier else set()
        return {a for a, _, _ in p.adds if a in self.unzeroed and a not in touched}


@dataclasses.dataclass
class _Lanes:
    """A serial gathered loop's sums into scalars: its main loop writes each iteration's
    term of ``dk`` to ``buffers[dk][i - lo]``, summed after it (``lane_sum``): one sum
    chain through a scalar would stall each iteration on the previous one's addition."""

    empty: str                                  # ``np.empty``
    total: str                                  # ``lane_sum(buf, m)``
    buffers: dict[str, str] = dataclasses.field(default_factory=dict)  # scalar -> buffer


class _ReadsOutside:
    """Which names some statement outside a given loop may read before binding them: the
    loop's own temporaries must not be (their values after it would change)."""

    def __init__(self, top: list[ast.stmt], keep: set[str]):
        self.top = top
        self.keep = keep

    def any_read(self, names: set[str], loop: ast.For, where: list[ast.stmt]) -> bool:
        """Does code outside ``loop`` (an element of ``where``) read one of ``names``?"""
        k = next(k for k, x in enumerate(where) if x is loop)
        where[k] = ast.Pass()  # (restored at once)
        try:
            exposed = exposed_reads(self.top)
        finally:
            where[k] = loop
        return bool(names & (exposed | self.keep))


def distinct_buffers(stmts: list[ast.stmt], shared: dict[str, str],
                     env: dict[str, Any], names: set[str] | None = None,
                     copies: bool = False) -> set[str]:
    """Names that always hold an array of their own: each binding allocates a new array
    (``np.zeros_like(x)``...) or permutes such names (``du, dv = dv, du``).  Two of them
    are never the same array, and none is any other name's array or a view of one.
    ``names``: only these are asked about (and what they are permuted with); ``copies``:
    ``x.copy()``, ``np.copy(x)`` and ``store, d = ws_zeros_like(store, x)`` (one store per
    buffer) allocate too."""
    every = stmts_by_depth(stmts)
    perms = [s for s in every if _permutes(s)]
    if names is not None:  # what a permutation ties to an asked name is asked about too
        names = set(names)
        grown = True
        while grown:
            grown = False
            for s in perms:
                group = {e.id for e in s.targets[0].elts}
                if group & names and not group <= names:
                    names |= group
                    grown = True
    binds: dict[str, list[ast.stmt]] = {}
    # (with ``copies``, ``d += e`` is taken to update an array in place, as NumPy does)
    binding = (ast.Assign, ast.For) if copies else (ast.Assign, ast.For, ast.AugAssign)
    for s in every:
        if isinstance(s, binding):
            for n in dataflow.binds(s):
                if names is None or n in names:
                    binds.setdefault(n, []).append(s)
    views = set(shared) | set(shared.values())
    stores: dict[str, set[str]] = {}  # workspace store -> the buffers zeroed in it
    for s in every:
        if copies and _ws_zeros(s, env):
            stores.setdefault(s.targets[0].elts[0].id, set()).add(s.targets[0].elts[1].id)
    own = {d for ds in stores.values() if len(ds) == 1 for d in ds}
    good = {n for n, ss in binds.items() if n not in views and all(
        _allocates(s, env) or _permutes(s) or (copies and _copies(s, env))
        or (n in own and _ws_zeros(s, env) and s.targets[0].elts[1].id == n) for s in ss)}
    changed = True
    while changed:  # a permutation with a name outside the set puts that one's array in
        changed = False
        for n in sorted(good):
            for s in binds[n]:
                if _permutes(s) and not {e.id for e in s.value.elts} <= good:
                    good.discard(n)
                    changed = True
                    break
    return good


def scattered_arrays(stmts: list[ast.stmt]) -> set[str]:
    """The arrays that some reversed loop's own statements accumulate into (``a[...] +=``):
    the only ones the gather and promote passes may rewrite."""
    out: set[str] = set()
    for s in stmts_by_depth(stmts):
        if isinstance(s, ast.For) and _reversed_range(s) is not None:
            for x in s.body:
                if isinstance(x, ast.AugAssign) and isinstance(x.target, ast.Subscript) \
                        and isinstance(x.target.value, ast.Name):
                    out.add(x.target.value.id)
    return out


def _allocates(s: ast.stmt, env: dict[str, Any]) -> bool:
    v = getattr(s, "value", None)
    return (isinstance(s, ast.Assign) and len(s.targets) == 1
            and isinstance(s.targets[0], ast.Name) and isinstance(v, ast.Call)
            and _fresh(resolve_name(v.func, env)))


def _ws_zeros(s: ast.stmt, env: dict[str, Any]) -> bool:
    """``store, d = ws_zeros_like(store, x)``: ``d`` a zeroed array in ``store``'s memory."""
    v = getattr(s, "value", None)
    return (isinstance(s, ast.Assign) and len(s.targets) == 1
            and isinstance(s.targets[0], ast.Tuple) and len(s.targets[0].elts) == 2
            and all(isinstance(e, ast.Name) for e in s.targets[0].elts)
            and isinstance(v, ast.Call) and resolve_name(v.func, env) is helpers.ws_zeros_like
            and len(v.args) == 2 and isinstance(v.args[0], ast.Name)
            and v.args[0].id == s.targets[0].elts[0].id)


def _copies(s: ast.stmt, env: dict[str, Any]) -> bool:
    """``t = x.copy()`` or ``t = np.copy(x)`` (a fresh copy: the table's ``copies`` of the
    function or array method called, ``purity.called``)."""
    v = getattr(s, "value", None)
    return (isinstance(s, ast.Assign) and len(s.targets) == 1
            and isinstance(s.targets[0], ast.Name) and isinstance(v, ast.Call)
            and copies(called(v, env)))


def _fresh(fn: Any) -> bool:
    """A call of ``fn`` allocates an array that is not a copy (``np.zeros_like``)."""
    return allocates(fn) and not copies(fn)


def _permutes(s: ast.stmt) -> bool:
    if not (isinstance(s, ast.Assign) and len(s.targets) == 1
            and isinstance(s.targets[0], ast.Tuple) and isinstance(s.value, ast.Tuple)):
        return False
    ts, vs = s.targets[0].elts, s.value.elts
    if not all(isinstance(e, ast.Name) for e in ts + vs):
        return False
    return sorted(e.id for e in ts) == sorted(e.id for e in vs) and len({e.id for e in ts}) \
        == len(ts)


# --- deciding ----------------------------------------------------------------------------


class _Plan:
    """What a loop's gather form needs: the loop's index range, its statements by kind."""

    def __init__(self) -> None:
        self.index = ""
        self.lo: ast.expr = const(0)
        self.hi: ast.expr = const(0)
        self.temps: list[ast.Assign] = []          # value statements, in order
        self.adds: list[tuple[str, int, ast.expr]] = []   # (array, offset, value)
        self.resets: list[ast.Assign] = []         # ``dv[i] = 0.0``, moved after the loop
        self.sums: list[ast.AugAssign] = []        # ``dk += e``
        self.parallel = False                      # a prange loop of parallel code
        self.cursors: dict[str, str] = {}          # tape cursor -> its tape
        self.order: list[ast.stmt] = []            # the body without resets and cursor moves


def _plan(loop: ast.For, env, fresh: set[str], outside: _ReadsOutside,
          where: list[ast.stmt], parallel: bool = False) -> _Plan | None:
    """The gather plan of ``loop``, or None where the scatter must stay (``parallel``: a
    prange loop of parallel code)."""
    rng = _reversed_range(loop)
    if rng is None or loop.orelse:
        return None
    p = _Plan()
    p.parallel = parallel
    p.index = loop.target.id
    p.lo, p.hi = rng
    body = [s for s in loop.body if not COMMENT.get(s)]
    sorted_ = _sort_statements(p, body, fresh)
    if sorted_ is None:
        return None
    assigned, reset_arrays = sorted_
    if not any(off for _, off, _ in p.adds):
        return None  # each array written at the iteration's own index: a gather already
    gathered = {a for a, _, _ in p.adds}
    summed = {s.target.id for s in p.sums}
    # (carried: a value carried from the previous iteration; sums: the gathered arrays
    # and summed scalars only added to, read nowhere else in the iteration)
    if not _tape_reads(p) or assigned & dataflow.carried(loop) \
            or (gathered | summed) - dataflow.sums(body) \
            or not _reads_made_here(p, env, reset_arrays) \
            or not _resets_read_first(p, body, gathered):
        return None
    if summed and not parallel and not p.resets:
        # (a serial loop whose seed is no adjoint element it resets: its sums' seed may be
        # known before the forward loop runs, where the backend's fuse step runs each
        # iteration's adjoint right after it, with no tape and no second loop)
        return None
    if summed & (gathered | assigned | set(p.cursors) | fresh) or outside.any_read(
            assigned | {p.index}, loop, where):
        return None
    return p


def _sort_statements(p: _Plan, body: list[ast.stmt], fresh: set[str]) \
        -> tuple[set[str], set[str]] | None:
    """Put each statement of the iteration in its place in ``p`` (a cursor move, a sum, an
    add into a fresh array, a temporary, a reset); the names assigned and the arrays reset,
    or None for a statement of no such kind."""
    assigned: set[str] = set()
    reset_arrays: set[str] = set()
    moved: set[str] = set()  # cursors moved so far in the iteration
    for s in body:
        if isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name):
            t = s.target.id
            if isinstance(s.op, ast.Sub) and isinstance(s.value, ast.Constant) \
                    and s.value.value == 1 and t not in p.cursors and t not in assigned:
                p.cursors[t] = ""  # a tape cursor moved down once per iteration
                moved.add(t)
                continue
            # a sum into a scalar (``dk += e``): made once per iteration (``_Lanes``)
            if not isinstance(s.op, ast.Add) or t in assigned or t == p.index:
                return None
            p.sums.append(s)
        elif isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Subscript):
            t = s.target
            off = dataflow.offset(t.slice, p.index)
            if (not isinstance(s.op, ast.Add) or not isinstance(t.value, ast.Name)
                    or off is None or t.value.id not in fresh):
                return None
            p.adds.append((t.value.id, off, s.value))
        elif isinstance(s, ast.Assign) and len(s.targets) == 1 \
                and isinstance(s.targets[0], ast.Name):
            t = s.targets[0]
            if t.id in assigned or t.id == p.index or t.id in p.cursors:
                return None
            v = s.value
            if isinstance(v, ast.Subscript) and isinstance(v.slice, ast.Name) \
                    and v.slice.id in p.cursors and v.slice.id not in moved:
                return None  # a tape read before its cursor moved
            assigned.add(t.id)
            p.temps.append(s)
        elif isinstance(s, ast.Assign) and len(s.targets) == 1 and _is_reset(s, fresh, p.index):
            reset_arrays.add(s.targets[0].value.id)
            p.resets.append(s)
            continue
        else:
            return None
        p.order.append(s)
    return assigned, reset_arrays


def _is_reset(s: ast.Assign, fresh: set[str], index: str) -> bool:
    """``a[i] = c``: an element of a fresh array set to a constant at the own index."""
    t = s.targets[0]
    return (isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name)
            and t.value.id in fresh and dataflow.offset(t.slice, index) == 0
            and isinstance(s.value, ast.Constant))


def _tape_reads(p: _Plan) -> bool:
    """Each cursor is read once, ``_t = _tape[cursor]``, right after it moved: its tape."""
    for s in p.temps:
        v = s.value
        if isinstance(v, ast.Subscript) and isinstance(v.slice, ast.Name) \
                and v.slice.id in p.cursors and isinstance(v.value, ast.Name):
            if p.cursors[v.slice.id]:
                return False  # two reads of one cursor in an iteration
            p.cursors[v.slice.id] = v.value.id
    return all(p.cursors.values())


def _reads_made_here(p: _Plan, env, reset_arrays: set[str]) -> bool:
    """Each value is made by pure code, each cursor read only as its tape's index, and
    arrays reset in the loop are read only at the own index."""
    for s in p.order:
        value = s.value
        for n in loaded_ids(value) | (loaded_ids(s.target.slice) if isinstance(
                s, ast.AugAssign) and isinstance(s.target, ast.Subscript) else set()):
            if n in p.cursors and not (isinstance(value, ast.Subscript)
                                       and _is_name(value.slice, n)):
                return False
        if not is_pure(value, env):
            return False
        for n in walk(value):  # arrays read: not written in the loop, except reset ones
            if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) \
                    and n.value.id in reset_arrays \
                    and dataflow.offset(n.slice, p.index) != 0:
                return False
    return True


def _resets_read_first(p: _Plan, body: list[ast.stmt], gathered: set[str]) -> bool:
    """A reset array is not gathered into and not read after its reset."""
    for r in p.resets:
        arr = r.targets[0].value.id
        if arr in gathered:
            return False
        k = body.index(r)
        if any(isinstance(n, ast.Subscript) and _is_name(n.value, arr)
               for s in body[k + 1:] for n in walk(s)):
            return False
    return True


def _reversed_range(loop: ast.For) -> tuple[ast.expr, ast.expr] | None:
    """``(lo, hi)`` of ``for i in range(hi - 1, lo - 1, -1)`` (i runs from hi - 1 down to lo)."""
    it = loop.iter
    if not (isinstance(loop.target, ast.Name) and isinstance(it, ast.Call)
            and isinstance(it.func, ast.Name) and it.func.id == "range"
            and len(it.args) == 3 and not it.keywords):
        return None
    start, stop, step = it.args
    if not (isinstance(step, ast.UnaryOp) and isinstance(step.op, ast.USub)
            and isinstance(step.operand, ast.Constant) and step.operand.value == 1) \
            and not (isinstance(step, ast.Constant) and step.value == -1):
        return None
    return _plus(stop, 1), _plus(start, 1)


def _plus(e: ast.expr, k: int) -> ast.expr:
    """``e + k``, folding constants (``n - 1`` plus 1 is ``n``)."""
    if isinstance(e, ast.Constant) and type(e.value) is int:
        return const(e.value + k)
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub) \
            and isinstance(e.operand, ast.Constant) and type(e.operand.value) is int:
        return const(-e.operand.value + k)
    if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Add, ast.Sub)) \
            and isinstance(e.right, ast.Constant) and type(e.right.value) is int:
        c = e.right.value if isinstance(e.op, ast.Add) else -e.right.value
        return _plus(clone(e.left), c + k) if c + k else clone(e.left)
    if k == 0:
        return clone(e)
    return ast.BinOp(left=clone(e), op=ast.Add() if k > 0 else ast.Sub(), right=const(abs(k)))


def _is_name(e: ast.expr, n: str) -> bool:
    return isinstance(e, ast.Name) and e.id == n


# --- emitting ----------------------------------------------------------------------------


def _emit(loop: ast.For, p: _Plan, namer: Namer, once: set[str], lanes: _Lanes | None,
          tapes: tuple[str, str]) -> list[ast.stmt]:
    """The gather form of ``loop`` (see the module docstring); ``once``: arrays allocated
    empty, written (``=``) instead of added to, and zeroed where no index reaches;
    ``lanes``: where the main loop's sums into scalars go; ``tapes``: the names of
    ``tape_get`` and ``tape_from``."""
    i = p.index
    offsets = sorted({c for _, c, _ in p.adds})
    cmin, cmax = offsets[0], offsets[-1]
    lo, hi, j0, j1 = (namer.fresh(x) for x in ("_lo", "_hi", "_inner_lo", "_inner_hi"))
    pre: list[ast.stmt] = [assign(lo, p.lo), assign(hi, p.hi)]
    bases: dict[str, str] = {}
    for cur in p.cursors:  # the read of iteration i: base + i
        bases[cur] = namer.fresh(cur + "_base")
        pre.append(assign(bases[cur], ast.BinOp(left=name(cur), op=ast.Sub(), right=name(hi))))
    # [lo + cmin, hi + cmax): every output index; [j0, j1): those all terms reach
    first = _plus(name(lo), cmax)
    if p.parallel and not (
            isinstance(p.lo, ast.Constant) and p.lo.value + cmax >= 0):
        # (parallel, it may not wrap: j < 0 would be the element j + len that j + len is)
        first = ast.Call(func=name("max"), args=[first, const(0)], keywords=[])
    pre += [assign(j0, first),
            assign(j1, ast.Call(func=name("max"), args=[name(j0), _plus(name(hi), cmin)],
                                keywords=[]))]
    made: dict[tuple[str, int], str] = {}

    def names(n: str, c: int) -> str:  # one name per value and offset, in both loops
        if c == 0 and n in (i, *(s.targets[0].id for s in p.temps)):
            return n
        if (n, c) not in made:  # ``a`` at i - 1: ``_a_prev``; at i + 1: ``_a_next``
            word = ("prev" if c > 0 else "next") + (str(abs(c)) if abs(c) > 1 else "")
            made[n, c] = namer.fresh(f"_{n.lstrip('_')}_{word}" if c else n)
        return made[n, c]

    # the main loop reads each tape through a view from iteration lo's entry, at i - c - lo:
    # an index LLVM sees is never negative (Numba's wrap of one kept it from vectorising)
    views = {cur: (namer.fresh(p.cursors[cur] + "_at"), tapes[0], lo) for cur in p.cursors}
    main = _terms(p, offsets, i, views, names, guarded=None, once=once,
                  lanes=(lanes, j0) if lanes else None)
    edge_pre, edges = _edge_loop(p, offsets, bases, names, once, namer, (lo, hi, j0, j1))
    pre += edge_pre
    for_ = ast.For(target=name(i, True), iter=ast.Call(func=name("range"), args=[
        name(j0), name(j1)], keywords=[]), body=main, orelse=[])
    carry(loop, for_)  # (a prange loop's gathered loop writes each element once)
    post = _after_loop(loop, p, lo, hi)
    comments = [s for s in loop.body if COMMENT.get(s)][:1]
    fill, empty = _unreached(p, hi, cmin, cmax, once)
    grow, total = _lane_sums(lanes, j0, j1) if lanes else ([], [])
    grow += [assign(v, _call(tapes[1], name(p.cursors[cur]), ast.BinOp(
        left=name(bases[cur]), op=ast.Add(), right=name(lo)))) for cur, (v, _, _) in views.items()]
    guard = ast.If(test=ast.Compare(left=name(lo), ops=[ast.Lt()], comparators=[name(hi)]),
                   body=[*fill, *grow, *comments, for_, *total, edges, *post], orelse=empty)
    return [ast.copy_location(x, loop) for x in [*pre, guard]]


def _edge_loop(p: _Plan, offsets: list[int], bases: dict[str, str], names: Callable,
               once: set[str], namer: Namer, bounds: tuple[str, str, str, str]
               ) -> tuple[list[ast.stmt], ast.For]:
    """The statements before it and the loop over the output indices some term does not
    reach (``bounds``: ``lo, hi`` of ``p``'s loop, ``[j0, j1)`` the main loop's): the
    head's ``[lo + cmin, j0)``, then the tail's ``[j1, hi + cmax)``, each term guarded."""
    lo, hi, j0, j1 = bounds
    cmin, cmax, i = offsets[0], offsets[-1], p.index
    e, m, head = (namer.fresh(x) for x in ("_e", "_edges", "_head"))
    pre = [assign(head, ast.BinOp(left=name(j0), op=ast.Sub(), right=_plus(name(lo), cmin))),
           assign(m, ast.BinOp(left=name(head), op=ast.Add(), right=ast.BinOp(
               left=_plus(name(hi), cmax), op=ast.Sub(), right=name(j1))))]
    pick = ast.IfExp(test=ast.Compare(left=name(e), ops=[ast.Lt()], comparators=[name(head)]),
                     body=ast.BinOp(left=_plus(name(lo), cmin), op=ast.Add(), right=name(e)),
                     orelse=ast.BinOp(left=name(j1), op=ast.Add(), right=ast.BinOp(
                         left=name(e), op=ast.Sub(), right=name(head))))
    edge = [assign(i, pick), *_terms(p, offsets, i, bases, names, guarded=(lo, hi),
                                     once=once)]
    return pre, ast.For(target=name(e, True), iter=ast.Call(
        func=name("range"), args=[name(m)], keywords=[]), body=edge, orelse=[])


def _lane_sums(lanes: _Lanes, j0: str, j1: str) -> tuple[list[ast.stmt], list[ast.stmt]]:
    """Before the main loop over ``[j0, j1)``: room in each buffer of partial sums for its
    iterations; after it: each scalar's sum of them."""
    m = ast.BinOp(left=name(j1), op=ast.Sub(), right=name(j0))
    grow: list[ast.stmt] = [ast.If(test=ast.Compare(  # (grown once: kept for every trip)
        left=ast.Subscript(value=ast.Attribute(value=name(b), attr="shape", ctx=ast.Load()),
                           slice=const(0), ctx=ast.Load()), ops=[ast.Lt()],
        comparators=[clone(m)]), body=[assign(b, _call(lanes.empty, clone(m)))], orelse=[])
        for b in lanes.buffers.values()]
    total = [ast.AugAssign(target=name(t, True), op=ast.Add(),
                           value=_call(lanes.total, name(b), clone(m)))
             for t, b in lanes.buffers.items()]
    return grow, total


def _after_loop(loop: ast.For, p: _Plan, lo: str, hi: str) -> list[ast.stmt]:
    """The statements after the gathered loops: each tape cursor moved past the loop's
    trips, and the loop's resets (``dv[i] = 0.0``) in a loop of their own."""
    i = p.index
    post: list[ast.stmt] = []
    trips = ast.Call(func=name("max"), args=[const(0), ast.BinOp(
        left=name(hi), op=ast.Sub(), right=name(lo))], keywords=[])
    for cur in p.cursors:
        post.append(ast.AugAssign(target=name(cur, True), op=ast.Sub(), value=clone(trips)))
    if p.resets:
        post.append(ast.For(target=name(i, True), iter=ast.Call(func=name("range"), args=[
            name(lo), name(hi)], keywords=[]), body=[clone(r) for r in p.resets], orelse=[]))
        carry(loop, post[-1])  # (each iteration resets its own element)
    return post


def _unreached(p: _Plan, hi: str, cmin: int, cmax: int, once: set[str]) \
        -> tuple[list[ast.stmt], list[ast.stmt]]:
    """For the arrays of ``once`` (made empty): zeroing the elements no index reaches when
    the loop runs, and zeroing them all when it does not."""
    fill: list[ast.stmt] = []
    empty: list[ast.stmt] = []
    arrays = list(dict.fromkeys(a for a, _, _ in p.adds if a in once))
    if arrays:
        fill.append(emit_comment(f"{', '.join(arrays)}: each element written once (made "
                                 "empty); those no index reaches set to 0"))
    for a in arrays:  # [0, lo + cmin) and [hi + cmax, len) are reached by no index
        if p.lo.value + cmin > 0:
            fill.append(_zero_slice(a, None, const(p.lo.value + cmin)))
        fill.append(_zero_slice(a, _plus(name(hi), cmax), None))
        empty.append(_zero_slice(a, None, None))
    return fill, empty


def _zero_slice(a: str, start: ast.expr | None, stop: ast.expr | None,
                row: str | None = None) -> ast.Assign:
    """``a[start:stop] = 0.0`` (``a[row, start:stop] = 0.0`` with a ``row``)."""
    part = ast.Slice(lower=start, upper=stop, step=None)
    index = part if row is None else ast.Tuple(elts=[name(row), part], ctx=ast.Load())
    return ast.Assign(targets=[ast.Subscript(value=name(a), slice=index, ctx=ast.Store())],
                      value=const(0.0))


def _terms(p: _Plan, offsets: list[int], i: str, bases: dict[str, Any],
           names: Callable[[str, int], str], guarded: tuple[str, str] | None,
           once: set[str], lanes: tuple[_Lanes, str] | None = None) -> list[ast.stmt]:
    """One output index's statements: per offset ``c``, the loop body's values at
    ``i - c`` that its terms need, then one accumulation per gathered array (a write for
    those in ``once``); with ``guarded = (lo, hi)``, each offset's part only where
    ``lo <= i - c < hi``.  ``names(n, c)``: the name of the body's ``n`` at offset ``c``;
    ``lanes``: the sums into scalars written to their buffers at ``i - j0`` instead."""
    out: list[ast.stmt] = []
    arrays = list(dict.fromkeys(a for a, _, _ in p.adds))
    totals: dict[str, list[ast.expr]] = {a: [] for a in arrays}
    accs = {a: names("_g" + a, 0) for a in arrays}
    if guarded:
        out += [assign(accs[a], const(0.0)) for a in arrays]
    home = 0 if 0 in offsets else offsets[0]  # where each iteration's sums are made
    for c in offsets:
        at = names(i, c)
        wanted = [(a, v) for a, off, v in p.adds if off == c]
        sums = p.sums if c == home else []
        roots = set().union(*(loaded_ids(v) for _, v in wanted),
                            *(loaded_ids(s.value) for s in sums))
        need = _slice(p.temps, roots)
        mapping = {} if c == 0 else {i: at} | {
            s.targets[0].id: names(s.targets[0].id, c) for s in p.temps if id(s) in need}
        part: list[ast.stmt] = [] if c == 0 else [assign(at, _plus(name(i), -c))]
        part += [_tape_read(rename(clone(s), mapping), bases, at)
                 for s in p.temps if id(s) in need]
        part += _sums(sums, mapping, i, lanes)
        for a, v in wanted:
            term = rename(clone(v), mapping)
            if guarded:
                part.append(ast.AugAssign(target=name(accs[a], True), op=ast.Add(),
                                          value=term))
            else:
                totals[a].append(term)
        if guarded:  # ``lo <= i - c < hi`` (written before ``i - c`` has its name)
            lo, hi = guarded
            test = ast.Compare(left=name(lo), ops=[ast.LtE(), ast.Lt()],
                               comparators=[_plus(name(i), -c), name(hi)])
            out.append(ast.If(test=test, body=part, orelse=[]))
        else:
            out += part
    for a in arrays:
        value: ast.expr = name(accs[a]) if guarded else _sum(totals[a])
        target = ast.Subscript(value=name(a), slice=name(i), ctx=ast.Store())
        out.append(ast.Assign(targets=[target], value=value) if a in once else
                   ast.AugAssign(target=target, op=ast.Add(), value=value))
    return out


def _sums(sums: list[ast.AugAssign], mapping: dict[str, str], i: str,
          lanes: tuple[_Lanes, str] | None) -> list[ast.stmt]:
    """An iteration's sums into scalars, ``dk += e`` (renamed by ``mapping``); with
    ``lanes = (buffers, j0)``, each scalar's terms written to ``buffer[i - j0]``."""
    if lanes is None:
        return [rename(clone(s), mapping) for s in sums]
    out: list[ast.stmt] = []
    for t, b in lanes[0].buffers.items():
        terms = [rename(clone(s.value), mapping) for s in sums if s.target.id == t]
        if not terms:
            continue
        at = ast.BinOp(left=name(i), op=ast.Sub(), right=name(lanes[1]))
        out.append(ast.Assign(targets=[ast.Subscript(value=name(b), slice=at,
                                                     ctx=ast.Store())], value=_sum(terms)))
    return out


def _tape_read(s: ast.Assign, bases: dict[str, Any], at: str) -> ast.Assign:
    """``_t = _tape[cursor]`` read at ``base + at`` (the cursor is not moved in the loop);
    where ``bases[cursor]`` is ``(view, get, lo)``: ``_t = get(view, at - lo)``."""
    v = s.value
    if isinstance(v, ast.Subscript) and isinstance(v.slice, ast.Name) and v.slice.id in bases:
        b = bases[v.slice.id]
        if isinstance(b, tuple):
            s.value = _call(b[1], name(b[0]), ast.BinOp(left=name(at), op=ast.Sub(),
                                                         right=name(b[2])))
        else:
            v.slice = ast.BinOp(left=name(b), op=ast.Add(), right=name(at))
    return s


def _slice(temps: list[ast.Assign], roots: set[str]) -> set[int]:
    """The value statements the names ``roots`` depend on (by id)."""
    need: set[int] = set()
    want = set(roots)
    for s in reversed(temps):
        if s.targets[0].id in want:
            need.add(id(s))
            want |= loaded_ids(s.value)
    return need


def _call(f: str, *args: ast.expr) -> ast.Call:
    return ast.Call(func=name(f), args=list(args), keywords=[])


def _sum(terms: list[ast.expr]) -> ast.expr:
    out = terms[0]
    for t in terms[1:]:
        out = ast.BinOp(left=out, op=ast.Add(), right=t)
    return out


__all__ = ["distinct_buffers", "gather_form", "scattered_arrays"]
