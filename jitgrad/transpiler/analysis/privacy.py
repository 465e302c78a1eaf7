"""Privacy: which elements and names one thread (or one loop iteration) has to itself.

Two consumers share the rule that an element indexed by the thread's own index, at
the same position in every access of that array, is reached by no other thread:

- ``private_arrays``: the CUDA lowering's thread-privacy analysis (an adjoint array
  whose primal is read only at the thread's own index keeps a plain ``+=``);
- ``independent``: whether the iterations of a ``numba.prange`` loop may run at once.
  They may when each iteration writes only its own elements of any array (``a[i]``,
  ``a[i, j]``), every name it binds is either iteration-local (bound before it is read,
  not read after the loop) or a reduction Numba's parfor pass recognises (``s = s + e``,
  ``s += e``, no other read of ``s``), and nothing runs for its effect.

Example (the loop index is ``i``)::

    for i in range(n):            independent: out[i] is the iteration's own, s a sum
        t = x[i - 1] * x[i + 1]
        out[i] = t
        s = s + t

    for i in range(n):            not: dx[i + 1] is accumulated by two iterations
        dx[i] += a
        dx[i + 1] += b
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

from ...rules.primitives import mutating, query_attrs
from ..nodes import loaded_ids, own_expressions, this_loop, walk_stmts
from ..notes import COMMENT
from . import dataflow


def grid_positions(sl: ast.expr, index: tuple[str, ...]) -> tuple[int, ...] | None:
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


def access_positions(body: list[ast.stmt], index: tuple[str, ...]) \
        -> dict[str, tuple[int, ...] | None]:
    """Per array subscripted in ``body``: where the indices of ``index`` sit in every access
    (``grid_positions``), None where two accesses disagree or one is not the own index."""
    places: dict[str, tuple[int, ...] | None] = {}
    for s in walk_stmts(body):
        for n in own_expressions(s):
            if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name):
                where = grid_positions(n.slice, index)
                a = n.value.id
                if a not in places:
                    places[a] = where
                elif places[a] != where:
                    places[a] = None
    return places


def private_arrays(body: list[ast.stmt], arrays: list[str], index: tuple[str, ...]) \
        -> frozenset[str]:
    """The arrays of ``arrays`` whose every element one thread's part reads no other thread
    reads (their adjoints need no atomics): each read holds every grid index once as a
    whole component, at the same position in every read of that array (``x[i]``;
    ``a[i, t]``, thread ``i``'s row).  Any other read makes the array shared."""
    places = access_positions(body, index)
    return frozenset(a for a in arrays if places.get(a, ()) is not None)


# --- prange loops ------------------------------------------------------------------------


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
    zero_before: Callable[[str], bool] = lambda n: False
    #: may the loop write into arrays it makes (False for generated code: Numba may hoist
    #: an allocation out of a prange loop and share it, numba/numba#9529)
    local_arrays: bool = True
    #: more names that take a different value in each iteration (as the index does; the
    #: index of a chunk's own iterations, see ``backend/prange.py``)
    indices: tuple[str, ...] = ()
    #: tapes the loop writes at slots of each iteration's own by construction
    slotted: frozenset[str] = frozenset()


def independent(loop: ast.For, names: Names) -> Verdict:
    """May the iterations of ``loop`` run at once (see the module docstring)?"""
    if not isinstance(loop.target, ast.Name):
        return Verdict("its index is not a single name", loop)
    i = loop.target.id
    body = loop.body
    if i in names.live_after:
        return Verdict(f"the loop index '{i}' is read after the loop", loop)
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
    carried = dataflow.carried(loop)
    loads = _load_counts(body)
    zeroed: list[str] = []
    sums: list[tuple[str, str]] = []
    for n, sts in binds.items():
        if n == i:
            return Verdict(f"it rebinds the loop index '{i}'", sts[0])
        family = _reduction(n, sts, loads, body)
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
        if names.is_array(n) is False and names.zero_before(n) and _zero_at_end(n, body):
            zeroed.append(n)  # a reset adjoint: zero when each iteration starts
            continue
        return Verdict(f"'{n}' carries a value from one iteration to the next", sts[0])
    local = set(binds) - carried
    done: set[str] = set()
    collided: list[tuple[str, str, ast.stmt]] = []
    for s in walk_stmts(body):
        for t in (x.node for x in dataflow.accesses(s) if x.write):
            if not isinstance(t.value, ast.Name):
                return Verdict(f"'{ast.unparse(t)}' is written through an expression", s)
            a = t.value.id
            if a in done or a in names.slotted:
                continue
            done.add(a)
            if a in local:
                if not names.local_arrays:
                    return Verdict(f"it writes into '{a}', an array it makes (Numba may "
                                   "share such an array between iterations)", s)
                if not all(isinstance(b, ast.Assign) and names.fresh(b.value)
                           for b in binds[a]):
                    return Verdict(f"'{a}' is made in the loop from an array other "
                                   "iterations may use, and written", s)
                continue
            why, collision = _shared_write(a, t, body, i, names, set(binds))
            if collision:
                collided.append((a, why, s))
            elif why:
                return Verdict(why, s)
    if collided:
        return Verdict(collided[0][1], collided[0][2], tuple(zeroed),
                       tuple(a for a, _, _ in collided), tuple(sums))
    return Verdict(zeroed=tuple(zeroed), sums=tuple(sums))


def _load_counts(body: list[ast.stmt]) -> dict[str, int]:
    out: dict[str, int] = {}
    for s in walk_stmts(body):
        for n in own_expressions(s):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                out[n.id] = out.get(n.id, 0) + 1
    return out


_SUM = (ast.Add, ast.Sub)


def _reduction(n: str, sts: list[ast.stmt], loads: dict[str, int],
               body: list[ast.stmt]) -> str:
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


def _shared_write(a: str, written: ast.Subscript, body: list[ast.stmt], i: str, names: Names,
                  bound: set[str]) -> tuple[str, bool]:
    """Why writing elements of the array ``a`` (not made in the loop; ``written``: the first
    write) races ("" if not), and whether only because several iterations accumulate into
    one element."""
    for b in names.group(a) - {a}:
        if any(isinstance(n, ast.Name) and n.id == b for s in walk_stmts(body)
               for n in own_expressions(s)):
            return f"'{a}' and '{b}' may share memory, and the loop writes '{a}'", False
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


__all__ = ["Names", "Verdict", "access_positions", "grid_positions",
           "independent", "own_slot", "private_arrays"]
