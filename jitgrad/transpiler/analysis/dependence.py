"""Dependence: may the iterations of a loop run in any order or at once, and if not, why.

The one dependence analysis of the backend.  ``independent`` answers for a loop (and,
with ``only``, for some of its names) with a ``Verdict``: a reason and the statement
behind it when the iterations depend on each other, and the facts a pass needs to act
on the answer either way: the scalar sums Numba's parfor pass recognises (``s += e``),
the scalars reset at the end of each trip (``zeroed``), the arrays several iterations
only accumulate into (``collisions``).  The passes keep their policies: ``prange``
runs an independent loop in parallel (``backend/prange.py``), ``Dataflow``-based
callers build their ``Names`` with ``Names.of``; ``order_free`` tells the loop fusion
whether a loop only sums into arrays nothing else reads (``backend/fuse.py``); element
indices are compared here only (``apart``, ``constants_apart``, ``own_slot``; and for the
CUDA lowering, ``private_arrays``: the arrays each thread reads only at its own index);
``overwritten`` and ``reset`` tell which arrays made outside a loop carry nothing between
its trips (every trip sets them in full before reading them, or leaves them zero).

An iteration may run at once with the others when it writes only its own elements of
any array (``a[i]``, ``a[i, j]``, ``t[c + i]``), every name it binds is iteration-local
(bound before it is read, not read after the loop), a sum, or reset, and nothing runs
for its effect.  Example (the loop index is ``i``)::

    for i in range(n):            independent: out[i] is the iteration's own, s a sum
        t = x[i - 1] * x[i + 1]
        out[i] = t
        s = s + t

    for i in range(n):            not: several iterations accumulate into the same
        dx[i] += a                element of 'dx' ('dx[i + 1]'); collisions ("dx",)
        dx[i + 1] += b
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from ...rules.primitives import (
    allocates_shape,
    draws,
    fresh_result,
    mutating,
    query_attrs,
    reads_shape_of,
    shape_of,
)
from ..astutil import exposed_reads, resolve
from ..nodes import loaded_ids, own_expressions, this_loop, walk_stmts
from ..notes import COMMENT, ZEROING
from . import dataflow


@dataclass(frozen=True)
class Verdict:
    """Whether a loop's iterations may run at once (``reason`` empty), and what that needs."""

    #: why they may not ("" when they may)
    reason: str = ""
    #: the statement that makes it so
    node: ast.AST | None = None
    #: scalars that hold 0.0 when every iteration starts (reset at the top of the body)
    zeroed: tuple[str, ...] = ()
    #: when ``reason`` is only that: the arrays several iterations accumulate into
    #: (``dx[i + 1] += ...``; every access of theirs in the loop is such a ``+=``)
    collisions: tuple[str, ...] = ()
    #: the scalar sums (and products) the loop makes: name -> "+" or "*"
    sums: tuple[tuple[str, str], ...] = ()

    @property
    def ok(self) -> bool:
        return not self.reason


def _never(n: str) -> bool:
    return False


@dataclass(frozen=True)
class Names:
    """What ``independent`` needs to know of the names around a loop."""

    #: names read after the loop before being bound again (``live_after``)
    live_after: frozenset[str]
    #: is a name an array (None: unknown)
    is_array: Callable[[str], bool | None]
    #: the names that may share memory with an array (itself included)
    group: Callable[[str], set[str]]
    #: does an expression make a new array (so writes into it are the iteration's own)
    fresh: Callable[[ast.expr], bool]
    #: may a call write into what it is given (a hook, ``out=``, ``list.append``)
    effect: Callable[[ast.Call], bool]
    #: does a scalar hold 0.0 when the loop starts
    zero_before: Callable[[str], bool] = _never
    #: may the loop write into arrays it makes (False for generated code: Numba may hoist
    #: an allocation out of a prange loop and share it, numba/numba#9529)
    local_arrays: bool = True
    #: more names that take a different value in each iteration (as the index does; the
    #: index of a chunk's own iterations, see ``backend/prange.py``)
    indices: tuple[str, ...] = ()
    #: tapes the loop writes at slots of each iteration's own by construction
    slotted: frozenset[str] = field(default_factory=frozenset)

    @staticmethod
    def of(flow: dataflow.Dataflow, loop: ast.stmt) -> Names:
        """The names around ``loop`` as the body's ``Dataflow`` knows them (buffers shared
        by ``flow.shares``; a call that draws runs in the iterations' order)."""
        return Names(flow.live_after(loop), flow.is_array or (lambda n: None), flow.shares,
                     lambda e: isinstance(e, (ast.Call, ast.BinOp)) and not
                     dataflow.may_alias(e, flow.modules, flow.env),
                     lambda c: _draws_or_writes(c, flow.env))


def _draws_or_writes(call: ast.Call, env: dict[str, Any] | None) -> bool:
    """A method of an object that is no name (``np.random.rand()``), or a function the
    primitive table says draws (``primitives.draws``: ``random.random``, however the
    module is spelled), found through ``env``; without ``env``, ``random.f()`` (the name
    generated code reaches the module by, ``dataflow.MODULES``)."""
    f = call.func
    if not isinstance(f, ast.Attribute):
        return False
    if not isinstance(f.value, ast.Name):
        return True
    return f.value.id == "random" if env is None else draws(resolve(f, env))


# --- the loop ------------------------------------------------------------------------------


def independent(loop: ast.For, names: Names, only: Collection[str] | None = None) -> Verdict:
    """May the iterations of ``loop`` run at once (see the module docstring)?  ``only``: as
    far as these names go (the loop's own control and effects always count)."""
    if not isinstance(loop.target, ast.Name):
        return Verdict("its index is not a single name", loop)
    i = loop.target.id
    if i in names.live_after:
        return Verdict(f"the loop index '{i}' is read after the loop", loop)
    binds = _binds_without_effects(loop.body, names)
    if isinstance(binds, Verdict):
        return binds
    carried = dataflow.carried(loop)
    scalars = _scalars(loop, i, binds, carried, names, only)
    if not scalars.ok:
        return scalars
    return _arrays(loop.body, i, binds, set(binds) - carried, names, only, scalars)


def _binds_without_effects(body: list[ast.stmt], names: Names) \
        -> dict[str, list[ast.stmt]] | Verdict:
    """Name -> the statements of ``body`` binding it; or why the body may not run out of
    order (it breaks out, returns, or runs something for its effect)."""
    for s in this_loop(body):
        if isinstance(s, ast.Break):
            return Verdict("it may break out of the loop", s)
    binds: dict[str, list[ast.stmt]] = {}
    for s in walk_stmts(body):
        if isinstance(s, ast.Return):
            return Verdict("it returns from inside the loop", s)
        if isinstance(s, ast.Expr) and not COMMENT.get(s):
            return Verdict(f"'{ast.unparse(s)}' runs for its effect", s)
        for n in own_expressions(s):
            if isinstance(n, ast.Call) and (names.effect(n) or (
                    isinstance(n.func, ast.Attribute) and mutating(n.func.attr))
                    or any(k.arg == "out" for k in n.keywords)):
                return Verdict(f"'{ast.unparse(n)}' may write into what it is given", s)
        for t in dataflow.binds(s):
            binds.setdefault(t, []).append(s)
    return binds


def _scalars(loop: ast.For, i: str, binds: dict[str, list[ast.stmt]], carried: set[str],
             names: Names, only: Collection[str] | None) -> Verdict:
    """Each name the loop binds: a sum, reset, or iteration-local (else why not;
    ``carried``: the names the loop carries)."""
    loads = _load_counts(loop.body)
    zeroed: list[str] = []
    sums: list[tuple[str, str]] = []
    for n, sts in binds.items():
        if n == i:
            return Verdict(f"it rebinds the loop index '{i}'", sts[0])
        if only is not None and n not in only:
            continue
        family = _reduction(n, sts, loads)
        if family:
            if names.is_array(n) is not False:
                return Verdict(f"'{n}' is not a scalar sum", sts[0])
            sums.append((n, family))
            continue
        if n not in carried:
            if n in names.live_after:
                return Verdict(f"'{n}' is bound in the loop and read after it (its value "
                               "would be any iteration's)", sts[-1])
            continue
        if names.is_array(n) is False and names.zero_before(n) and _zero_at_end(n, loop.body):
            zeroed.append(n)  # a reset adjoint: zero when each iteration starts
            continue
        return Verdict(f"'{n}' carries a value from one iteration to the next", sts[0])
    return Verdict(zeroed=tuple(zeroed), sums=tuple(sums))


def _arrays(body: list[ast.stmt], i: str, binds: dict[str, list[ast.stmt]], local: set[str],
            names: Names, only: Collection[str] | None, scalars: Verdict) -> Verdict:
    """Each array the loop writes: made in it (``local``: the names bound in each iteration
    before they are read), or written at elements of the iteration's own (else why not;
    ``scalars``: the verdict on the names, whose facts it keeps)."""
    done: set[str] = set()
    collided: list[tuple[str, str, ast.stmt]] = []
    for s in walk_stmts(body):
        for t in (x.node for x in dataflow.accesses(s) if x.write):
            if not isinstance(t.value, ast.Name):
                return Verdict(f"'{ast.unparse(t)}' is written through an expression", s)
            a = t.value.id
            if a in done or a in names.slotted or (only is not None and a not in only):
                continue
            done.add(a)
            if a in local:
                why = _local_write(a, binds[a], names)
                if why:
                    return Verdict(why, s)
                continue
            why, collision = _shared_write(a, t, body, i, names, set(binds))
            if collision:
                collided.append((a, why, s))
            elif why:
                return Verdict(why, s)
    if collided:
        return Verdict(collided[0][1], collided[0][2], scalars.zeroed,
                       tuple(a for a, _, _ in collided), scalars.sums)
    return scalars


def _local_write(a: str, sts: list[ast.stmt], names: Names) -> str:
    """Why writing into ``a``, an array the loop makes, races ("" if it does not)."""
    if not names.local_arrays:
        return (f"it writes into '{a}', an array it makes (Numba may share such an array "
                "between iterations)")
    if not all(isinstance(b, ast.Assign) and names.fresh(b.value) for b in sts):
        return f"'{a}' is made in the loop from an array other iterations may use, and written"
    return ""


def _load_counts(body: list[ast.stmt]) -> dict[str, int]:
    out: dict[str, int] = {}
    for s in walk_stmts(body):
        for n in own_expressions(s):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                out[n.id] = out.get(n.id, 0) + 1
    return out


_SUM = (ast.Add, ast.Sub)


def _reduction(n: str, sts: list[ast.stmt], loads: dict[str, int]) -> str:
    """``"+"`` (``"*"``) where every binding of ``n`` in the loop is a sum (product) update
    ``n = n + e`` / ``n += e`` (in an inner loop or branch too: Numba sums those), all with
    the same operator and form, with no other read of ``n``; else ``""``."""
    family: set[str] = set()
    own_reads = 0
    for s in sts:
        if isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name):
            op, other = s.op, s.value
        elif isinstance(s, ast.Assign) and len(s.targets) == 1 \
                and isinstance(s.targets[0], ast.Name) and isinstance(s.value, ast.BinOp):
            v = s.value
            if isinstance(v.left, ast.Name) and v.left.id == n:
                op, other = v.op, v.right
            elif isinstance(v.right, ast.Name) and v.right.id == n \
                    and isinstance(v.op, (ast.Add, ast.Mult)):
                op, other = v.op, v.left
            else:
                return ""
            own_reads += 1
        else:
            return ""
        if n in loaded_ids(other):
            return ""
        # (Numba refuses a sum updated with two operators, += in one branch, -= in another)
        family.add(f"{type(s).__name__}.{type(op).__name__}")
    if len(family) != 1 or loads.get(n, 0) != own_reads:
        return ""
    op = family.pop().split(".")[1]
    return "+" if op in ("Add", "Sub") else "*" if op == "Mult" else ""


def _zero_at_end(n: str, body: list[ast.stmt]) -> bool:
    """Does the body end with ``n`` zero: its last top-level statement binding ``n`` is
    ``n = 0.0`` (no statement after it binds ``n``)?"""
    for s in reversed(body):
        if n in dataflow.binds_in([s], elements=False):
            return isinstance(s, ast.Assign) and len(s.targets) == 1 \
                and isinstance(s.targets[0], ast.Name) and isinstance(s.value, ast.Constant) \
                and s.value.value == 0 and not isinstance(s.value.value, bool)
    return False


def _shared_write(a: str, written: ast.Subscript, body: list[ast.stmt], i: str, names: Names,
                  bound: set[str]) -> tuple[str, bool]:
    """Why writing elements of the array ``a`` (not made in the loop; ``written``: the first
    write) races ("" if not), and whether only because several iterations accumulate into
    one element."""
    for b in names.group(a) - {a}:
        if any(isinstance(n, ast.Name) and n.id == b for s in walk_stmts(body)
               for n in own_expressions(s)):
            return f"'{a}' and '{b}' may share memory, and the loop writes '{a}'", False
    subs, whole = _element_uses(a, body)
    if whole > len(subs):
        return f"'{a}' is written element by element and used whole in the loop", False
    indices = (i, *names.indices)
    where = {own_slot(n.slice, indices, bound) for n in subs}
    if len(where) == 1 and None not in where:
        return "", False
    aug = {id(s.target) for s in walk_stmts(body) if isinstance(s, ast.AugAssign)
           and isinstance(s.op, _SUM)}
    mine = own_slot(written.slice, indices, bound)
    other = next((n for n in subs if own_slot(n.slice, indices, bound) != mine
                  or mine is None), written)
    if all(id(n) in aug for n in subs):
        return (f"several iterations accumulate into the same element of '{a}' "
                f"('{ast.unparse(other)}')"), True
    return (f"'{a}' is written and accessed at '{ast.unparse(other)}', which another "
            f"iteration may write or read"), False


def _element_uses(a: str, body: list[ast.stmt]) -> tuple[list[ast.Subscript], int]:
    """The element accesses of ``a`` in ``body``, and how often it is named otherwise than
    by them and by shape queries (``a.shape``, ``len(a)``) plus how many accesses there are."""
    subs: list[ast.Subscript] = []
    whole = 0
    for s in walk_stmts(body):
        for n in own_expressions(s):
            if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) \
                    and n.value.id == a:
                subs.append(n)
            elif isinstance(n, ast.Name) and n.id == a:
                whole += 1
            elif isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) \
                    and n.value.id == a and n.attr in query_attrs():
                whole -= 1  # a shape or type query reads no element (the table's ``query``)
            elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) \
                    and n.func.id == "len" and len(n.args) == 1 \
                    and isinstance(n.args[0], ast.Name) and n.args[0].id == a:
                whole -= 1
    return subs, whole


# --- element indices -----------------------------------------------------------------------


def own_slot(sl: ast.expr, indices: tuple[str, ...], bound: set[str]) \
        -> tuple[int, str] | None:
    """(position, text) of the component of the subscript ``sl`` that tells iterations
    apart: an index ``i`` of ``indices``, or ``c + i``, ``i - c``, ``c + (i - d)`` with ``c``,
    ``d`` not bound in the loop (a tape slot); None without one."""
    elts = sl.elts if isinstance(sl, ast.Tuple) else [sl]
    if any(isinstance(e, ast.Slice) for e in elts):
        return None
    for k, e in enumerate(elts):
        if any(_injective(e, i, bound) for i in indices):
            return k, ast.dump(e)
    return None


def _injective(e: ast.expr, i: str, bound: set[str]) -> bool:
    """Is ``e`` the index ``i`` plus or minus terms that do not change in the loop?"""
    if isinstance(e, ast.Name):
        return e.id == i
    if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Add, ast.Sub)):
        fixed = [x for x in (e.left, e.right) if i not in loaded_ids(x)
                 and not loaded_ids(x) & bound]
        varying = [x for x in (e.left, e.right) if x not in fixed]
        if len(varying) != 1 or (isinstance(e.op, ast.Sub) and varying[0] is e.right):
            return False
        return _injective(varying[0], i, bound)
    return False


def private_arrays(body: list[ast.stmt], arrays: list[str], index: tuple[str, ...]) \
        -> frozenset[str]:
    """The arrays of ``arrays`` whose every element one CUDA thread's part reads no other
    thread reads (their adjoints need no atomics): each read holds every grid index of
    ``index`` once as a whole component, at the same position in every read of that array
    (``x[i]``; ``a[i, t]``, thread ``i``'s row).  Any other read makes the array shared."""
    places: dict[str, tuple[int, ...] | None] = {}
    for s in walk_stmts(body):
        for n in own_expressions(s):
            if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name):
                where = _grid_positions(n.slice, index)
                places[n.value.id] = where if places.get(n.value.id, where) == where else None
    return frozenset(a for a in arrays if places.get(a, ()) is not None)


def _grid_positions(sl: ast.expr, index: tuple[str, ...]) -> tuple[int, ...] | None:
    """The component position of each grid index in the subscript ``sl`` (in ``index``
    order), None unless each appears exactly once as a whole component."""
    elts = sl.elts if isinstance(sl, ast.Tuple) else [sl]
    if any(isinstance(e, ast.Slice) for e in elts):
        return None
    out = []
    for g in index:
        at = [k for k, e in enumerate(elts) if isinstance(e, ast.Name) and e.id == g]
        if len(at) != 1:
            return None
        out.append(at[0])
    return tuple(out)


def constants_apart(x: int, y: int) -> bool:
    """Are ``a[x]`` and ``a[y]`` different elements: two different integers of one sign
    (``a[-1]`` and ``a[n - 1]`` may be the same)."""
    return x != y and (x >= 0) == (y >= 0)


def apart(a: list[ast.expr], b: list[ast.expr], j: str, lo: ast.expr, hi: ast.expr,
          outer: Collection[str], binds: dict[str, ast.expr]) -> bool:
    """Are ``x[a]`` and ``x[b]`` different elements in every iteration of the loop over
    ``j`` in ``[lo, hi)``?  Yes where some component is two different non-negative
    constants, or an enclosing loop's non-negative index ``i`` (of ``outer``) against ``j``
    while ``j >= i + 1`` (``lo`` is ``i + c``, ``c >= 1``, possibly through a name bound to
    it in ``binds``), or ``0 <= j < i``: two different non-negative integers (a negative
    index would wrap around to the end)."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if (isinstance(x, ast.Constant) and isinstance(y, ast.Constant)
                and type(x.value) is int and type(y.value) is int
                and x.value >= 0 and constants_apart(x.value, y.value)):
            return True
        if isinstance(x, ast.Name) and x.id in outer and isinstance(y, ast.Name) and y.id == j:
            nonneg = isinstance(lo, ast.Constant) and type(lo.value) is int and lo.value >= 0
            low, high = offset_through(lo, x.id, binds), offset_through(hi, x.id, binds)
            if (low is not None and low >= 1) or (nonneg and high is not None and high <= 0):
                return True
    return False


def offset_through(e: ast.expr, i: str | None, binds: dict[str, ast.expr]) -> int | None:
    """``c`` where ``e`` is ``i + c`` or ``i - c`` (constants on the right, through names
    bound to such a sum in ``binds``; ``i=None``: any name), else None."""
    for _ in range(4):
        if isinstance(e, ast.Name) and e.id in binds:
            e = binds[e.id]
            continue
        break
    if isinstance(e, ast.Name) and (i is None or e.id == i):
        return 0
    if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Add, ast.Sub)) \
            and isinstance(e.right, ast.Constant) and type(e.right.value) is int:
        inner = offset_through(e.left, i, binds)
        if inner is None:
            return None
        return inner + (e.right.value if isinstance(e.op, ast.Add) else -e.right.value)
    return None


# --- arrays an iteration makes for itself --------------------------------------------------


def iteration_arrays(body: list[ast.stmt], flow: dataflow.Dataflow,
                     outside: Collection[str] = ()) -> set[str]:
    """The arrays each iteration of a loop over ``body`` makes for itself: every binding of
    them in ``body`` is ``v = e`` with ``e`` a new value (an allocation, arithmetic) or a
    view of another of them (``dataflow.may_alias``), or ``v op= e`` (in place: the buffer
    stays ``v``'s; or a new value), none is read in an iteration before
    it is bound there (nothing is carried), every name that may share their buffer
    (``flow.shares``) is one of them, and none is named in ``outside``.  An iteration's
    writes into them reach no other iteration (scalars bound so come too: harmless)."""
    carried = dataflow.binds_in(body, elements=False) & exposed_reads(body)
    made: dict[str, list[ast.stmt]] = {}
    for s in walk_stmts(body):
        for n in dataflow.binds(s):
            made.setdefault(n, []).append(s)
    out = {n for n, sts in made.items() if n not in carried and n not in outside
           and all(dataflow.plain_binding(b) == n or _updates(b, n) for b in sts)}
    while True:  # drop those bound otherwise, or sharing a buffer with something else
        keep = {n for n in out if flow.shares(n) <= out
                and all(_updates(b, n) or dataflow.may_alias(b.value, flow.modules, flow.env)
                        <= out
                        for b in made[n])}
        if keep == out:
            return out
        out = keep


def _updates(s: ast.stmt, n: str) -> bool:
    """Is ``s`` ``n op= e`` (the name ``n``)?"""
    return isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name) and s.target.id == n


def kept_apart_arrays(written: Collection[str], flow: dataflow.Dataflow,
                      elsewhere: Collection[str]) -> set[str]:
    """Those of the arrays ``written`` that only what keeps its order touches: every
    binding of them in ``flow.body`` is a new allocation (``dataflow.fresh_binds``: so every
    name that may share their buffer is bound in the body and known to ``flow``), they are
    arrays by the kinds, and no name that may share their buffer (``flow.shares``) is
    named in ``elsewhere`` (the statements whose order changes)."""
    if flow.is_array is None:
        return set()
    made: dict[str, list[bool]] = {}
    for s in walk_stmts(flow.body):
        fresh = dict(dataflow.fresh_binds(s, flow.env))
        for n in dataflow.binds(s):
            made.setdefault(n, []).append(fresh.get(n, False))
    return {n for n in written if made.get(n) and all(made[n]) and flow.is_array(n) is True
            and not flow.shares(n) & set(elsewhere)}


# --- arrays every trip sets in full ------------------------------------------------------
#
# An array made once outside a loop carries nothing from one trip to the next where every
# trip writes all of it before reading any of it (``overwritten``: a scratch array, gmm's
# centred point ``xc``), or where it holds zeros when the loop starts and every trip leaves
# it all zero again (``reset``: an adjoint buffer zeroed as each trip's adjoint ends).
# "All of it": ``a[...] = e`` or ``a[:] = e``, or ``for j in range(E)`` (also
# ``range(0, E)``, ``range(E - 1, -1, -1)``) with ``a[j] = e`` among the top-level
# statements of its body, where ``a`` was made ``np.empty(E)``/``np.zeros(E)`` (or like an
# array so made) and the names of ``E`` are bound once (``full_sizes``).  Such a write
# loop has no ``break``/``continue``; a loop nested in the trip counts as reading nothing
# stale where the same holds for its own trips.  Callers add what the loop's order
# needs beside it: nothing else names the array but for its shape, no name shares it.


def full_sizes(flow: dataflow.Dataflow) -> dict[str, str]:
    """Array -> the ``ast.dump`` of its length ``E``, for the 1-D arrays bound once in
    ``flow.body``, to ``np.empty(E)``/``np.zeros(E)`` (the table's ``allocates_shape``) or
    ``np.*_like(b)`` of such a ``b`` (``shape_of`` 0), the callee found through
    ``flow.env`` (none without it), the names of ``E`` bound once and nowhere in a loop
    (one length all along)."""
    binds: dict[str, list[ast.stmt]] = {}
    in_loops: set[str] = set()
    for s in walk_stmts(flow.body):
        for n in dataflow.binds(s):
            binds.setdefault(n, []).append(s)
        if isinstance(s, (ast.For, ast.While)):
            in_loops |= dataflow.binds_in(s.body, elements=False)
    out: dict[str, str] = {}
    for _ in range(3):  # (``*_like`` of ``*_like``)
        for n, sts in binds.items():
            v = sts[0].value if len(sts) == 1 and dataflow.plain_binding(sts[0]) == n \
                and n not in in_loops else None
            if not (isinstance(v, ast.Call) and len(v.args) == 1 and not v.keywords
                    and flow.env is not None):
                continue
            e, fn = v.args[0], resolve(v.func, flow.env)
            if allocates_shape(fn) and not isinstance(e, (ast.Tuple, ast.List)) \
                    and all(len(binds.get(m, ())) <= 1 and m not in in_loops
                            for m in loaded_ids(e)):
                out[n] = ast.dump(e)
            elif fresh_result(fn) and shape_of(fn) == 0 and isinstance(e, ast.Name) \
                    and e.id in out:
                out[n] = out[e.id]
    return out


def overwritten(a: str, body: list[ast.stmt], size: str | None,
                env: dict[str, Any] | None = None) -> bool:
    """Does every trip of a loop over ``body`` write all of the array ``a`` (of length
    ``size``, ``full_sizes``; None: only whole assignments count) before it reads any
    element of it (see above)?  ``a`` is bound in no trip; ``env``: see ``beyond_shape``."""
    if a in dataflow.binds_in(body, elements=False):
        return False
    for s in body:
        if _full_write(s, a, size, overwrite=True, env=env):
            return True
        if not _names(s, a, env):
            continue
        if not (_nested_loop(s) and overwritten(a, s.body, size, env)):
            return False
    return True


def reset(a: str, body: list[ast.stmt], size: str | None) -> bool:
    """Does every trip of a loop over ``body`` that finds the array ``a`` all zero leave it
    all zero: the last top-level statement writing it sets all of it to 0.0, or is a loop
    whose trips do so and no statement before it writes ``a`` (see above)?"""
    if a in dataflow.binds_in(body, elements=False):
        return False
    writers = [k for k, s in enumerate(body) if a in dataflow.binds_in([s])]
    if not writers:
        return True
    last = body[writers[-1]]
    if _full_write(last, a, size, overwrite=False):
        return True
    return len(writers) == 1 and _nested_loop(last) and reset(a, last.body, size)


def _nested_loop(s: ast.stmt) -> bool:
    """A ``for`` over ``range`` without ``else``, ``break`` or ``continue`` of its own, and
    not ``prange``."""
    return isinstance(s, ast.For) and not s.orelse and dataflow.loop_index(s) is not None \
        and isinstance(s.iter.func, ast.Name) and s.iter.func.id == "range" \
        and not any(isinstance(x, (ast.Break, ast.Continue)) for x in this_loop(s.body))


def _full_write(s: ast.stmt, a: str, size: str | None, overwrite: bool,
                env: dict[str, Any] | None = None) -> bool:
    """Is ``s`` a write of every element of ``a``: ``a[...] = e``/``a[:] = e``, or a loop
    over ``range(E)`` (``size``) setting ``a[j]`` at its top level?  ``overwrite``: and
    nothing else in it names ``a``; else: it sets 0.0 and writes ``a`` nowhere else (it
    may read it)."""
    if isinstance(s, ast.Assign) and len(s.targets) == 1 and _whole(s.targets[0], a):
        return _sets(s, overwrite) and a not in loaded_ids(s.value)
    if not (_nested_loop(s) and size is not None and _covers(s, size)):
        return False
    j = s.target.id
    hits = [x for x in s.body if isinstance(x, ast.Assign) and len(x.targets) == 1
            and isinstance(x.targets[0], ast.Subscript) and isinstance(x.targets[0].value,
                                                                       ast.Name)
            and x.targets[0].value.id == a and isinstance(x.targets[0].slice, ast.Name)
            and x.targets[0].slice.id == j and _sets(x, overwrite)]
    if not hits or j in dataflow.binds_in(s.body, elements=False):
        return False
    if overwrite:  # nothing else in the loop names ``a`` (a read would see a stale element)
        return all(x is hits[0] or not _names(x, a, env) for x in s.body) \
            and a not in loaded_ids(hits[0].value)
    return all(x is hits[0] or a not in dataflow.binds_in([x]) for x in s.body)


def _whole(t: ast.expr, a: str) -> bool:
    """Is ``t`` ``a[...]`` or ``a[:]``?"""
    if not (isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id == a):
        return False
    sl = t.slice
    return (isinstance(sl, ast.Constant) and sl.value is Ellipsis) or (
        isinstance(sl, ast.Slice) and sl.lower is None and sl.upper is None and sl.step is None)


def _sets(s: ast.Assign, overwrite: bool) -> bool:
    """Any value where ``overwrite``, else 0.0 (a float zero constant)."""
    v = s.value
    return overwrite or (isinstance(v, ast.Constant) and type(v.value) in (float, int)
                         and not isinstance(v.value, bool) and v.value == 0)


def _covers(loop: ast.For, size: str) -> bool:
    """Is ``loop`` over ``range(E)``, ``range(0, E)`` or ``range(E - 1, -1, -1)`` with
    ``E`` the ``ast.dump`` ``size``?"""
    args = loop.iter.args
    if loop.iter.keywords:
        return False
    if len(args) == 1 or (len(args) == 2 and _const(args[0], 0)):
        return ast.dump(args[-1]) == size
    return len(args) == 3 and _const(args[1], -1) and _const(args[2], -1) \
        and isinstance(args[0], ast.BinOp) and isinstance(args[0].op, ast.Sub) \
        and _const(args[0].right, 1) and ast.dump(args[0].left) == size


def _const(e: ast.expr, k: int) -> bool:
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
        return _const(e.operand, -k)
    return isinstance(e, ast.Constant) and type(e.value) is int and e.value == k


def _names(s: ast.stmt, a: str, env: dict[str, Any] | None) -> bool:
    """Does ``s`` (nested blocks included) name ``a`` other than for a shape?"""
    return a in beyond_shape([s], env)


def beyond_shape(stmts: list[ast.stmt], env: dict[str, Any] | None = None) -> set[str]:
    """The names ``stmts`` use other than by a shape query, nested blocks included.  A
    shape query: an attribute the table calls a query (``a.shape``), the zeroing of an
    adjoint buffer the reverse pass marked (``notes.ZEROING``), ``len(a)`` (a builtin the
    code cannot shadow, ``versions.GENERATED_BUILTINS``), or, found through the namespace
    ``env``, a call of one argument the primitive table says it reads only for its shape
    (``reads_shape_of``: ``np.zeros_like(a)``, ``np.empty_like(a)`` however numpy is
    spelled).  Without ``env`` a user's call counts as a use."""
    inside: set[int] = set()
    out: set[str] = set()
    for s in walk_stmts(stmts):
        for n in own_expressions(s):
            if isinstance(n, ast.Attribute) and n.attr in query_attrs():
                inside.add(id(n.value))
            elif isinstance(n, ast.Call) and len(n.args) == 1 and not n.keywords \
                    and _shape_call(n, env):
                inside.add(id(n.args[0]))
        out |= {n.id for n in own_expressions(s) if isinstance(n, ast.Name)
                and id(n) not in inside}
    return out


def _shape_call(n: ast.Call, env: dict[str, Any] | None) -> bool:
    """Does the call ``n`` read its first argument only for its shape (``beyond_shape``)?"""
    if ZEROING.get(n) or isinstance(n.func, ast.Name) and n.func.id == "len":
        return True
    return env is not None and reads_shape_of(resolve(n.func, env), 0)


# --- order-free sums ----------------------------------------------------------------------


def order_free(stmts: list[ast.stmt], around: list[ast.stmt], shared: dict[str, str],
               effect: Callable[[ast.expr], bool], private: Collection[str] = (),
               is_array: Callable[[str], bool | None] | None = None,
               env: dict[str, Any] | None = None) -> Verdict:
    """Do ``stmts`` (a loop's body) bind names and write arrays only by adding to their
    elements (``dz[i, j] += g``), call nothing for its effect (``effect``: may evaluating an
    expression write into something), and neither they nor ``around`` read an element of
    those arrays or of their views (``shared``: adjoint -> the adjoint it is a view of):
    sums whose order does not matter?  ``private``: arrays each iteration makes for itself
    (``iteration_arrays``), written and read freely; ``is_array``: the kinds, where known
    (``v = a[i]`` binds a view of ``a``, not one of its elements, where ``v`` is an array);
    ``env``: the namespace, where known (``Dataflow``)."""
    summed: set[str] = set()
    for s in walk_stmts(stmts):
        why = "" if COMMENT.get(s) else _sum_or_local(s, summed, effect, private)
        if why:
            return Verdict(why, s)
    # the arrays summed into, their views
    flow = dataflow.Dataflow([*around, *stmts], shared, is_array=is_array, env=env)
    family = set().union(*(flow.shares(n) for n in summed))
    views = {id(s) for s in walk_stmts(stmts) if _binds_view(s, is_array)}
    touched = _names_but(stmts, views)  # other than as a sum (a view binding reads no element)
    both = family & (touched - dataflow.sums(stmts, whole=False, skip=views))
    if both:
        return Verdict(f"'{min(both)}' is summed into and used otherwise", stmts[0])
    both = family & (dataflow.reads_in(around) | dataflow.binds_in(around))
    if both:
        return Verdict(f"'{min(both)}' is summed into and used around the loop", stmts[0])
    return Verdict()


def _binds_view(s: ast.stmt, is_array: Callable[[str], bool | None] | None) -> bool:
    """Is ``s`` ``v = a[...]`` (a chain of subscripts of the name ``a``) with ``v`` known to
    be an array: a view of ``a``, no element read?"""
    v = dataflow.plain_binding(s)
    return v is not None and is_array is not None and is_array(v) is True \
        and isinstance(s.value, ast.Subscript) and dataflow.base_name(s.value) is not None


def _names_but(stmts: list[ast.stmt], views: set[int]) -> set[str]:
    """The names ``stmts`` read or bind, nested blocks included, but for the view bindings
    (``views``: their ``id``), of which only what the index reads counts."""
    out: set[str] = set()
    for s in walk_stmts(stmts):
        if id(s) in views:
            out |= loaded_ids(s.value.slice)
        else:
            out |= dataflow.reads(s) | set(dataflow.binds(s, elements=True))
    return out


def _sum_or_local(s: ast.stmt, summed: set[str], effect: Callable[[ast.expr], bool],
                  private: Collection[str] = ()) -> str:
    """Why ``s`` is neither a binding of names, nor a sum into an element (added to
    ``summed``), nor a write into a ``private`` array, nor control flow ("" when it is one
    of them)."""
    if isinstance(s, ast.Expr):
        return f"'{ast.unparse(s)}' runs for its effect"
    if isinstance(s, ast.Assign):
        if any(not isinstance(e, ast.Name) and dataflow.base_name(e) not in private
               for t in s.targets for e in (t.elts if isinstance(t, ast.Tuple) else [t])):
            return "it binds something other than names"
    elif isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Subscript):
        if dataflow.base_name(s.target) in private:
            pass
        elif not (isinstance(s.op, _SUM) and isinstance(s.target.value, ast.Name)):
            return f"'{ast.unparse(s.target)}' is updated other than by a sum"
        else:
            summed.add(s.target.value.id)
    elif not isinstance(s, (ast.AugAssign, ast.For, ast.If, ast.While, ast.Pass, ast.Break,
                            ast.Continue)):
        return f"'{type(s).__name__}' is not a sum"
    if isinstance(s, (ast.Assign, ast.AugAssign)) and effect(s.value):
        return f"'{ast.unparse(s.value)}' may write into what it is given"
    return ""


__all__ = ["Names", "Verdict", "apart", "beyond_shape", "constants_apart", "full_sizes",
           "independent", "iteration_arrays", "offset_through", "order_free", "overwritten",
           "own_slot", "private_arrays", "reset"]
