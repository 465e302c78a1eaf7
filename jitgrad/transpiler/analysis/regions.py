"""Disjoint regions of one array: a view read at one fixed index, a write at another.

Multi-time-level arrays (``tke[i, j, ks:, tau]`` read, ``tke[i, j, ks:, taup1]``
written) keep each time level at a fixed index of one axis.  A write into one level
never changes a view of another, so the view needs no adjoint shared with its base.
Two indices are *fixed* when they hold the same value wherever the function reads
them: int constants, names bound once at the top level to one, and int arguments the
function never rebinds.  Constants are compared here; two argument indices are
distinct only where the function asserts so (``assert tau != taup1 and min(tau,
taup1) >= 0``), which ``distinct_guards`` writes at the top of the body before the
analysis and which the user may write too.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping

from ..nodes import walk_stmts
from ..notes import POS
from . import dataflow
from .dependence import constants_apart
from .kinds import Kind

#: an atom a fixed index may be: an int constant or a name (``ast.unparse`` text)
Fixed = int | str


def _entries(e: ast.expr) -> list[ast.expr]:
    return list(e.slice.elts) if isinstance(e.slice, ast.Tuple) else [e.slice]


def _plain(e: ast.expr, kinds: Mapping[str, Kind]) -> bool:
    """A basic index entry that takes exactly one axis: a slice or an int scalar."""
    if isinstance(e, ast.Slice):
        return True
    if isinstance(e, ast.Constant):
        return isinstance(e.value, int) and not isinstance(e.value, bool)
    names = [n for n in ast.walk(e) if isinstance(n, ast.Name)]
    return all(kinds.get(n.id) is not None and kinds[n.id].cls == "i"
               and kinds[n.id].ndim == 0 for n in names) and not any(
        isinstance(n, (ast.Slice, ast.Subscript, ast.Call, ast.Attribute))
        for n in ast.walk(e))


def _fixed(e: ast.expr, kinds: Mapping[str, Kind], defs: Mapping[str, list[ast.stmt]],
           top: set[int], before: int) -> Fixed | None:
    """The constant or unchanging int argument ``e`` is, else None (a name bound once,
    at the top level (``top``: those statements' ids) before position ``before``, to a
    constant is that constant)."""
    if isinstance(e, ast.Constant) and isinstance(e.value, int) \
            and not isinstance(e.value, bool):
        return e.value
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub) \
            and isinstance(e.operand, ast.Constant) and isinstance(e.operand.value, int):
        return -e.operand.value
    if not (isinstance(e, ast.Name) and kinds.get(e.id) is not None
            and kinds[e.id].cls == "i" and kinds[e.id].ndim == 0):
        return None
    ds = defs.get(e.id, [])
    if not ds:
        return e.id
    if len(ds) == 1 and id(ds[0]) in top and isinstance(ds[0], ast.Assign) \
            and POS.get(ds[0]) < before and isinstance(ds[0].value, ast.Constant):
        return _fixed(ds[0].value, kinds, defs, top, before)
    return None


def _apart(a: Fixed, b: Fixed, assumed: frozenset) -> bool:
    """Two constants apart (``dependence.constants_apart``) or two names asserted apart."""
    if isinstance(a, int) and isinstance(b, int):
        return constants_apart(a, b)
    return frozenset((a, b)) in assumed


def fixed_axes(view: ast.expr, target: ast.expr, kinds, defs, top: set[int], before: int):
    """Pairs of fixed indices at the same axis of two subscripts of one array."""
    a, b = _entries(view), _entries(target)
    for x, y in zip(a, b):  # noqa: B905 (the shorter one's axes)
        if not (_plain(x, kinds) and _plain(y, kinds)):
            return
        fx, fy = _fixed(x, kinds, defs, top, before), _fixed(y, kinds, defs, top, before)
        if fx is not None and fy is not None:
            yield fx, fy


def disjoint_regions(s: ast.stmt, w: ast.stmt, base: str, kinds, defs, top: set[int],
                     assumed: frozenset) -> bool:
    """Are the region ``s`` views (``t = base[...]``) and the one ``w`` writes
    (``base[...] = ...``) of ``base`` apart, at every execution of either?"""
    t = w.targets[0] if isinstance(w, ast.Assign) else getattr(w, "target", None)
    v = s.value
    if not (isinstance(v, ast.Subscript) and isinstance(v.value, ast.Name)
            and v.value.id == base and isinstance(t, ast.Subscript)
            and isinstance(t.value, ast.Name) and t.value.id == base):
        return False
    before = min(POS.get(s), POS.get(w))
    return any(_apart(x, y, assumed) for x, y in fixed_axes(v, t, kinds, defs, top, before))


def asserted_distinct(body: list[ast.stmt]) -> frozenset:
    """Pairs of names the top level asserts differ and are non-negative, before any
    other statement that could fail to run (``assert a != b and min(a, b) >= 0``)."""
    out = set()
    for s in body:
        if not isinstance(s, ast.Assert):
            break
        pair = _guard_pair(s.test)
        if pair is not None:
            out.add(frozenset(pair))
    return frozenset(out)


def _guard_pair(e: ast.expr) -> tuple[str, str] | None:
    if not (isinstance(e, ast.BoolOp) and isinstance(e.op, ast.And) and len(e.values) == 2):
        return None
    ne, ge = e.values
    if not (isinstance(ne, ast.Compare) and len(ne.ops) == 1 and isinstance(ne.ops[0], ast.NotEq)
            and isinstance(ge, ast.Compare) and len(ge.ops) == 1
            and isinstance(ge.ops[0], ast.GtE) and isinstance(ge.comparators[0], ast.Constant)
            and ge.comparators[0].value == 0 and isinstance(ge.left, ast.Call)
            and isinstance(ge.left.func, ast.Name) and ge.left.func.id == "min"):
        return None
    pair = [ne.left, ne.comparators[0]]
    if not all(isinstance(p, ast.Name) for p in pair) or \
            [ast.dump(a) for a in ge.left.args] != [ast.dump(p) for p in pair]:
        return None
    return pair[0].id, pair[1].id


def distinct_guards(body: list[ast.stmt], kinds: Mapping[str, Kind],
                    params: list[str]) -> list[ast.stmt]:
    """``assert a != b and min(a, b) >= 0`` for each pair of int arguments that index
    one axis of an array where a view of it is taken and where it is written: the
    gradient treats those regions as apart and checks so where it starts."""
    stmts = list(walk_stmts(body))
    defs: dict[str, list[ast.stmt]] = {}
    for s in stmts:
        for n in dataflow.binds(s, elements=True):
            defs.setdefault(n, []).append(s)
    views = [s.value for s in stmts if isinstance(s, ast.Assign)
             and isinstance(s.targets[0], ast.Name) and isinstance(s.value, ast.Subscript)
             and isinstance(s.value.value, ast.Name) and kinds.get(s.targets[0].id) is not None
             and kinds[s.targets[0].id].is_array]
    writes = [t for s in stmts if isinstance(s, (ast.Assign, ast.AugAssign))
              for t in [s.targets[0] if isinstance(s, ast.Assign) else s.target]
              if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name)]
    pairs: dict[frozenset, tuple[str, str, ast.expr]] = {}
    for v in views:
        for t in writes:
            if t.value.id != v.value.id:
                continue
            for a, b in _arg_pairs(v, t, kinds, defs, params):
                pairs.setdefault(frozenset((a, b)), (a, b, t))
    return [_guard(a, b, t) for a, b, t in pairs.values()]


def _arg_pairs(v, t, kinds, defs, params):
    for x, y in zip(_entries(v), _entries(t)):  # noqa: B905
        if not (_plain(x, kinds) and _plain(y, kinds)):
            return
        if isinstance(x, ast.Name) and isinstance(y, ast.Name) and x.id != y.id \
                and {x.id, y.id} <= set(params) and not (defs.get(x.id) or defs.get(y.id)):
            yield x.id, y.id


def _guard(a: str, b: str, where: ast.expr) -> ast.stmt:
    msg = (f"jitgrad: the gradient reads a view of '{where.value.id}' at index {a} while "
           f"writing it at index {b}, and needs {a} != {b} (both >= 0)")
    test = ast.parse(f"{a} != {b} and min({a}, {b}) >= 0", mode="eval").body
    s = ast.Assert(test=test, msg=ast.Constant(msg))
    return ast.fix_missing_locations(ast.copy_location(s, where))
