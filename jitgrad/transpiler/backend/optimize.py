"""Optimize: clean-ups on the generated function that Numba/LLVM cannot do for us.

* ``dead_code``: mark-and-sweep over the structured body; a gradient-only variant
  drops the forward work that only served the returned value.
* ``merge_accumulations``: in each straight-line run, ``dx[i] += a; ...; dx[i] += b``
  becomes one ``dx[i] += a + b`` after the scalar work.  Numba cannot prove that
  ``dx`` and ``x`` do not alias, so every store would otherwise force reloads.

Before::                                 After::

    _dt3 = _dt2 * x[i]                       _dt3 = _dt2 * x[i]
    dx[i] += _dt3                            _dt4 = _dt2 * x[i]
    _dt4 = _dt2 * x[i]                       dx[i] += _dt3 + _dt4
    dx[i] += _dt4
"""

from __future__ import annotations

import ast
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...rules.primitives import copies_into, hides_writes, mutating
from ..analysis import dataflow
from ..analysis.dataflow import view_root
from ..astutil import exposed_reads
from ..front.inline import rename
from ..front.purity import call_pure, called, resolve_name
from ..nodes import loaded_ids, nodes_of, replace_names, walk, walk_stmts
from ..notes import CHECK, COMMENT, DECISION, DRAW, SCALAR_RESULT


def _droppable(s: ast.stmt, defines: set[str]) -> bool:
    """May the simple statement ``s`` go where nothing live reads what it ``defines``: an
    assignment, or a call that only fills what it defines (``xs.append(v)``)?  A statement
    test, not a call's purity (draws are kept by ``notes.DRAW``)."""
    if isinstance(s, (ast.Assign, ast.AugAssign)):
        return True
    if isinstance(s, ast.Expr):
        return bool(defines)
    return isinstance(s, ast.Pass)


def _fresh_arrays(stmts: list[ast.stmt], facts: list) -> set[str]:
    """Names only ever bound to newly allocated arrays (writes to them touch nothing else),
    in ``stmts`` (every statement, nested ones included: ``_preorder``; ``facts``: theirs)."""
    fresh: dict[str, bool] = {}
    for s, f in zip(stmts, facts, strict=True):
        if f is not None:
            for n, ok in f[3]:
                fresh[n] = fresh.get(n, True) and ok
        elif isinstance(s, ast.For):
            fresh[s.target.id] = False
    return {n for n, ok in fresh.items() if ok}


#: per simple statement, kept between ``dead_code`` runs on the same statements:
#: id -> [the statement, what it defines, what it needs (None until needed), what it binds
#: (``dataflow.fresh_binds``), ``_live_key``, the namespace its calls were resolved in]
Facts = dict[int, list]
_COMPOUND = (ast.For, ast.While, ast.If)


def dead_code(body: list[ast.stmt], shared: dict[str, str] | None = None,
              memo: Facts | None = None, env: dict[str, Any] | None = None
              ) -> list[ast.stmt]:
    """Remove statements whose results nothing live reads (the final return is live).

    ``body`` is not changed: the result shares its kept simple statements and holds
    copies of the compound ones whose blocks lost statements.  ``memo``: the facts of
    each simple statement, shared by the runs over the variants of one function (a
    statement must not change between them); ``env``: the code's namespace, where known
    (a call is what it names: ``dataflow.fresh_binds``).

    Element writes stay unless their array is freshly allocated: another name may
    share the array.  A loop or ``if`` stays when any statement under it does.
    Liveness is propagated once along a worklist (each statement and name at most once).
    """
    roots = set().union(*(loaded_ids(s) for s in body if isinstance(s, ast.Return)))
    return dead_code_variants(body, [roots], shared, memo, env)[0]


def dead_code_variants(body: list[ast.stmt], roots: list[set[str]],
                       shared: dict[str, str] | None = None,
                       memo: Facts | None = None, env: dict[str, Any] | None = None
                       ) -> list[list[ast.stmt]]:
    """``dead_code`` of ``body`` once per set of names live at its end (each set holding
    the one before it: a variant returns more than the one before), in one propagation:
    the statements that the first set needs, then those the second one adds, ...

    ``body``'s own top-level ``return`` statements appear in every result; their names
    are live in none unless a root set names them."""
    shared = shared or {}
    memo = {} if memo is None else memo
    every = _preorder(body)
    facts = [None if isinstance(s, _COMPOUND) else _facts(s, memo, env) for s in every]
    fresh = _fresh_arrays(every, facts)
    live: set[str] = set()
    keep: set[int] = set()
    parent: dict[int, ast.stmt] = {}
    definers: dict[str, list[ast.stmt]] = {}
    work: list[ast.stmt] = []
    for s, fs in zip(every, facts, strict=True):
        if fs is None or _has_blocks(s):
            for f in ("body", "orelse"):
                for c in getattr(s, f, []) or []:
                    parent[id(c)] = s
        if fs is None:
            if isinstance(s, ast.For):  # the loop binds its target (read after the loop)
                for n in walk(s.target):
                    if isinstance(n, ast.Name):
                        definers.setdefault(n.id, []).append(s)
            continue
        key = fs[4]
        # kept whatever is live: effects, breaks, writes into arrays that may be shared
        if key is True or (key is not None and key not in fresh):
            work.append(s)
        else:  # a write into an adjoint that is a view of another is a write into that one
            for n in fs[1]:
                definers.setdefault(n, []).append(s)
                if n in shared and (m := view_root(n, shared)) != n:
                    definers.setdefault(m, []).append(s)
    out = []
    for names in roots:
        _make_live(names, live, definers, work)
        while work:
            s = work.pop()
            while s is not None and id(s) not in keep:  # the statement, then what encloses it
                keep.add(id(s))
                if isinstance(s, _COMPOUND):
                    needs = dataflow.reads(s)
                else:
                    fs = _facts(s, memo, env)
                    needs = fs[2]
                    if needs is None:
                        needs = fs[2] = dataflow.reads(s)
                _make_live(needs, live, definers, work)
                s = parent.get(id(s))
        bound = {id(s) for s in every if isinstance(s, ast.For) and id(s) in keep
                 and any(isinstance(n, ast.Name) and n.id in live for n in walk(s.target))}
        out.append(_sweep(body, keep, bound))
    return out


_BLOCKS: dict[type, bool] = {}


def _has_blocks(s: ast.stmt) -> bool:
    """Does the class of ``s`` have ``body`` or ``orelse`` fields (cached per class)?"""
    has = _BLOCKS.get(s.__class__)
    if has is None:
        has = _BLOCKS[s.__class__] = bool({"body", "orelse"} & set(s._fields))
    return has


def _facts(s: ast.stmt, memo: Facts, env: dict[str, Any] | None) -> list:
    """The facts of a simple statement (see ``Facts``) in the namespace ``env``, kept in
    ``memo`` (the statement and ``env`` are kept too, so an id is never reused meanwhile
    and facts found in one namespace never answer for another)."""
    hit = memo.get(id(s))
    if hit is not None and hit[0] is s and hit[5] is env:
        return hit
    defines = set(dataflow.binds(s, elements=True, appends=True))
    hit = memo[id(s)] = [s, defines, None, dataflow.fresh_binds(s, env),
                         _live_key(s, defines), env]
    return hit


def _live_key(s: ast.stmt, defines: set[str]) -> bool | str | None:
    """True for a simple statement kept whatever is live (effects, breaks, random draws:
    ``notes.DRAW``), the array
    whose element it writes (kept unless that array is fresh), else None."""
    if isinstance(s, ast.Break) or DRAW.get(s) or not _droppable(s, defines):
        return True
    t = s.targets[0] if isinstance(s, ast.Assign) else getattr(s, "target", None)
    if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
        return t.value.id
    return None


def _preorder(stmts: list[ast.stmt]) -> list[ast.stmt]:
    """Every statement of ``stmts`` and of the blocks under them, each before its blocks'
    (``walk_stmts``' order), without a generator per level."""
    out: list[ast.stmt] = []
    todo = [iter(stmts)]
    while todo:
        s = next(todo[-1], None)
        if s is None:
            todo.pop()
            continue
        out.append(s)
        orelse = getattr(s, "orelse", None)
        if orelse:
            todo.append(iter(orelse))
        body = getattr(s, "body", None)
        if body:
            todo.append(iter(body))
    return out


def _make_live(names: set[str], live: set[str], definers: dict[str, list[ast.stmt]],
               work: list[ast.stmt]) -> None:
    """Mark ``names`` live and queue the statements defining any newly live one."""
    for n in names - live:
        live.add(n)
        work.extend(definers.pop(n, ()))


def _shallow_copy(s: ast.stmt) -> ast.stmt:
    """A new node with the same fields and attributes as ``s`` (its children shared)."""
    new = s.__class__.__new__(s.__class__)
    new.__dict__.update(s.__dict__)
    return new


def _sweep(stmts: list[ast.stmt], keep: set[int],
           bound: frozenset[int] | set[int] = frozenset()) -> list[ast.stmt]:
    """The kept statements; a loop whose body is all dead stays as ``for ...: pass`` where
    its target is read after it (``bound``), else it goes."""
    out = _sweep_all(stmts, keep, bound)
    # a comment stays only if the statements under it do (past the decision comments
    # that head them: ``# line 4: ...``, ``# recomputed r ...``, statements)
    return [s for k, s in enumerate(out) if not COMMENT.get(s) or _heads(out, k + 1)]


def _heads(out: list[ast.stmt], j: int) -> bool:
    """Does a statement follow at ``j``, past decision comments only?"""
    while j < len(out) and COMMENT.get(out[j]) and DECISION.get(out[j]):
        j += 1
    return j < len(out) and not COMMENT.get(out[j]) and not isinstance(out[j], ast.Return)


def _sweep_all(stmts: list[ast.stmt], keep: set[int], bound) -> list[ast.stmt]:
    out = []
    for s in stmts:
        if isinstance(s, ast.Break):
            out.append(s)
            continue
        if id(s) not in keep and not isinstance(s, ast.Return):
            continue
        if "body" in s._fields:
            needed = id(s) in bound
            s = _shallow_copy(s)  # the input is left as it is (the variants share it)
            for f in ("body", "orelse"):
                sub = getattr(s, f, None)
                if sub:
                    setattr(s, f, _sweep(sub, keep, bound))
            if isinstance(s, (ast.For, ast.While)) and not s.body:
                if not needed:
                    continue
                s.body = [ast.Pass()]
            if isinstance(s, ast.If) and not s.body:
                s.body = [ast.Pass()]
        out.append(s)
    return out


def merge_accumulations(stmts: list[ast.stmt],
                        shared: dict[str, str] | None = None) -> list[ast.stmt]:
    """Sink and merge element accumulations ``a[idx] += e`` to the end of straight runs.

    ``shared`` maps an adjoint that is a view of another to that one: a statement
    touching either keeps the pending accumulations into both in order.
    """
    out: list[ast.stmt] = []
    run: list[ast.stmt] = []
    for s in stmts:
        for f in ("body", "orelse"):
            sub = getattr(s, f, None)
            if sub:
                setattr(s, f, merge_accumulations(sub, shared))
        if isinstance(s, (ast.Assign, ast.AugAssign, ast.Expr)):
            run.append(s)
        else:
            out += _merge_run(run, shared or {})
            run = []
            out.append(s)
    out += _merge_run(run, shared or {})
    return out


#: most terms merged into one accumulation (deeper sums only slow the compilers down)
_MERGE_MAX = 8


def writes_names_only(body: list[ast.stmt], tapes: set[str] = frozenset(),
                      aliased: set[str] = frozenset()) -> bool:
    """``body`` writes names and ``tapes`` only (and calls nothing for its effect, draws no
    random number): no array of the program changes, nor the generators' state, so moving
    or dropping it can change no array and no later draw.
    ``aliased``: names whose array another name shares (an adjoint view and its base):
    ``dv += e`` on one of them writes the array the other names too."""
    for s in walk_stmts(body):
        if COMMENT.get(s):
            continue
        if DRAW.get(s):
            return False  # a random draw changes the generator's state, and so later draws
        if isinstance(s, ast.Expr):
            v = s.value
            if not (isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute)
                    and v.func.attr == "append" and isinstance(v.func.value, ast.Name)
                    and v.func.value.id in tapes):
                return False
        elif isinstance(s, (ast.Assign, ast.AugAssign)):
            targets = s.targets if isinstance(s, ast.Assign) else [s.target]
            for t in targets:
                for e in t.elts if isinstance(t, ast.Tuple) else [t]:
                    if isinstance(e, ast.Subscript):
                        if not (isinstance(e.value, ast.Name) and e.value.id in tapes):
                            return False
                    elif not isinstance(e, ast.Name) or (
                            isinstance(s, ast.AugAssign) and e.id in aliased):
                        return False
            if writes_through_call(s.value, tapes):
                return False
        elif not isinstance(s, (ast.For, ast.If, ast.While, ast.Pass, ast.Break, ast.Continue)):
            return False
    return True


def writes_through_call(e: ast.expr, tapes: set[str] = frozenset()) -> bool:
    """A call that may write an array it is given (``out=``, or a method that changes its
    object, the primitive table's ``mutates``: ``a.sort()``, ``xs.pop()``), other than a
    method of one of ``tapes`` (``v = _tape.pop()``)."""
    for n in ast.walk(e):
        if isinstance(n, ast.Call):
            if any(k.arg == "out" for k in n.keywords):
                return True
            if isinstance(n.func, ast.Attribute) and mutating(n.func.attr) and not (
                    isinstance(n.func.value, ast.Name) and n.func.value.id in tapes):
                return True
    return False


def _popped(s: ast.stmt) -> set[str]:
    """The lists ``s`` pops (``xs`` of ``v = xs.pop()``: a list tape, which no other name
    shares)."""
    return {n.value.func.value.id for n in walk_stmts([s]) if isinstance(n, ast.Assign)
            and isinstance(n.value, ast.Call) and isinstance(n.value.func, ast.Attribute)
            and n.value.func.attr == "pop" and isinstance(n.value.func.value, ast.Name)}


@dataclass
class _Pending:
    """One accumulation being merged: its first statement, the values summed so far, the
    array (root of its views) it stores into, the names its index reads and its values read."""

    first: ast.AugAssign
    values: list[ast.expr]
    base: str
    idx: set[str]
    reads: set[str]


def _merge_run(run: list[ast.stmt], shared: dict[str, str]) -> list[ast.stmt]:
    pending: dict[str, _Pending] = {}
    order: list[str] = []
    head: list[ast.stmt] = []
    for s in run:
        accum = (isinstance(s, ast.AugAssign) and isinstance(s.op, ast.Add)
                 and isinstance(s.target, ast.Subscript) and isinstance(s.target.value, ast.Name))
        if accum:
            # one that reads an array with pending stores (or its own) runs where it is
            value_loads, idx_names = loaded_ids(s.value), loaded_ids(s.target.slice)
            reads = {view_root(n, shared) for n in value_loads | idx_names}
            accum = not (reads & ({pending[k].base for k in order}
                                  | {view_root(s.target.value.id, shared)}))
        if accum:
            key = ast.unparse(s.target)
            # a later statement may not touch the array or change the index names
            if key in pending and len(pending[key].values) >= _MERGE_MAX:
                head.append(_emit(pending.pop(key)))  # keep each sum a few terms deep
                order.remove(key)
            value_reads = {view_root(n, shared) for n in value_loads}
            if key in pending:
                p = pending[key]
                p.values.append(s.value)
                p.reads |= value_reads  # same target text: same array and index names
            else:
                pending[key] = _Pending(s, [s.value], view_root(s.target.value.id, shared),
                                        idx_names, value_reads)
                order.append(key)
            continue
        defines = set(dataflow.binds(s, elements=True, appends=True))
        touched = {view_root(n, shared) for n in loaded_ids(s) | defines}
        defined = defines | {view_root(n, shared) for n in defines}
        flush = [k for k in order if pending[k].base in touched
                 or pending[k].idx & defines
                 or pending[k].reads & defined]
        for k in flush:
            head.append(_emit(pending.pop(k)))
            order.remove(k)
        head.append(s)
    for k in order:
        head.append(_emit(pending[k]))
    return head


def _emit(p: _Pending) -> ast.AugAssign:
    total = p.values[0]
    for v in p.values[1:]:
        total = ast.BinOp(left=total, op=ast.Add(), right=v)
    return ast.AugAssign(target=p.first.target, op=ast.Add(), value=total)


#: fields that never hold a node other than a stateless one (context, operator)
_NO_CHILD = frozenset({"ctx", "op", "ops", "id", "kind", "type_comment", "attr", "arg",
                       "name", "names", "module", "level", "is_async", "conversion", "simple"})
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def _child_fields(cls: type) -> tuple[str, ...]:
    """The fields of node class ``cls`` that may hold nodes with fields (cached per class)."""
    fields = _CHILD_FIELDS[cls] = tuple(f for f in cls._fields if f not in _NO_CHILD)
    return fields


class Simplify(ast.NodeTransformer):
    """Fold constants and drop no-op unbroadcast calls in inlined pullbacks; with
    ``scalar_result``, first note on each call whether it makes a scalar
    (``notes.SCALAR_RESULT``, in the same walk)."""

    def __init__(self, scalar: set[str], unb: str, scalar_result: bool | None = None):
        self.scalar = scalar
        self.unb = unb
        self.scalar_result = scalar_result

    def visit(self, node):
        """What ``NodeTransformer.visit`` does with these two visitors (children first,
        replaced in place), without a dispatch and a ``generic_visit`` per node."""
        for f in _CHILD_FIELDS.get(node.__class__) or _child_fields(node.__class__):
            v = getattr(node, f, None)
            if v.__class__ is list:
                for i, x in enumerate(v):
                    if isinstance(x, ast.AST):
                        v[i] = self.visit(x)
            elif isinstance(v, ast.AST):
                setattr(node, f, self.visit(v))
        if node.__class__ is ast.Call:
            if self.scalar_result is not None:
                SCALAR_RESULT.set(node, self.scalar_result)
            return self._call(node)
        if node.__class__ is ast.BinOp:
            return self._binop(node)
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        return self._call(node)

    def visit_BinOp(self, node):
        self.generic_visit(node)
        return self._binop(node)

    def _call(self, node):
        if (isinstance(node.func, ast.Name) and node.func.id == self.unb and len(node.args) == 2
                and isinstance(node.args[1], ast.Name) and node.args[1].id in self.scalar
                and SCALAR_RESULT.get(node)):
            return node.args[0]
        return node

    def _binop(self, node):
        a, b = node.left, node.right
        if isinstance(a, ast.Constant) and isinstance(b, ast.Constant) \
                and isinstance(a.value, (int, float)) and isinstance(b.value, (int, float)):
            try:
                return ast.Constant(value=eval(compile(ast.Expression(node), "", "eval")))
            except Exception:
                return node
        if isinstance(node.op, ast.Pow) and isinstance(b, ast.Constant) and b.value == 1:
            return a
        if isinstance(node.op, ast.Mult):
            if isinstance(b, ast.Constant) and b.value == 1 and not isinstance(b.value, bool):
                return a
            if isinstance(a, ast.Constant) and a.value == 1 and not isinstance(a.value, bool):
                return b
        return node



def propagate_copies(stmts: list[ast.stmt], protected: set[str], namer) -> list[ast.stmt]:
    """Drop ``a = b`` between adjoint names (``namer.is_adjoint``; ``a`` a pullback
    temporary) each assigned once: readers use ``b``."""
    counts: dict[str, int] = {}
    copies: list[ast.Assign] = []  # every ``name = name``, in ``ast.walk`` order
    for n in nodes_of(ast.Module(body=stmts, type_ignores=[])):
        cls = n.__class__
        if cls is ast.Name:
            if n.ctx.__class__ is ast.Store:
                counts[n.id] = counts.get(n.id, 0) + 1
        elif cls is ast.AugAssign:
            if n.target.__class__ is ast.Name:
                counts[n.target.id] = counts.get(n.target.id, 0) + 2
        elif (cls is ast.Assign and n.targets[0].__class__ is ast.Name
              and n.value.__class__ is ast.Name):
            copies.append(n)
    mapping: dict[str, str] = {}
    for n in copies:
        a, b = n.targets[0].id, n.value.id
        if (namer.is_adjoint_temp(a) and a not in protected and counts.get(a) == 1
                and (counts.get(b) == 1 or b == namer.seed) and namer.is_adjoint(b)):
            mapping[a] = mapping.get(b, b)
    if not mapping:
        return stmts

    def copied(s: ast.AST) -> bool:
        return (isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name)
                and s.targets[0].id in mapping)

    out = [x for x in stmts if not copied(x)]
    for s in walk_stmts(out):  # each nested block, after its own statements were filtered
        for f in ("body", "orelse"):
            sub = getattr(s, f, None)
            if sub and any(copied(x) for x in sub):
                sub[:] = [x for x in sub if not copied(x)]
    for x in out:
        replace_names(x, lambda n: ast.Name(id=mapping[n.id], ctx=n.ctx)
                      if n.id in mapping else n)
    return out


def drop_self_identity(rev: list[ast.stmt], g: str, d: str) -> list[ast.stmt]:
    """``_g = dx; dx = 0.0; ...; dx += _g`` (``x = x + e``) -> use ``dx`` as it is."""
    if len(rev) < 3:
        return rev
    adds = [k for k, x in enumerate(rev) if isinstance(x, ast.AugAssign)
            and isinstance(x.op, ast.Add) and isinstance(x.target, ast.Name)
            and x.target.id == d and isinstance(x.value, ast.Name) and x.value.id == g]
    if len(adds) != 1:
        return rev
    middle = rev[2:adds[0]] + rev[adds[0] + 1:]
    writes = dataflow.binds_in(middle, elements=False)
    if d in writes or g in writes:
        return rev
    return [rename(x, {g: d}) for x in middle]


def prune_unused(rev: list[ast.stmt], namer) -> list[ast.stmt]:
    """Drop pullback temporaries (made by ``namer``) that no contribution reads."""
    changed = True
    while changed:
        changed = False
        used = loaded_ids(ast.Module(body=rev, type_ignores=[]))
        keep = []
        for x in rev:
            if (isinstance(x, ast.Assign) and isinstance(x.targets[0], ast.Name)
                    and namer.is_temp(x.targets[0].id) and x.targets[0].id not in used
                    and not namer.is_adjoint_temp(x.targets[0].id)):
                changed = True
                continue
            keep.append(x)
        rev = keep
    return rev




#: most terms summed into one scalar adjoint statement
_SUM_MAX = 8


#: (may jump, names mentioned, names bound, arrays written into): see ``_touches``
Touches = tuple[bool, set[str], set[str], set[str]]

_JUMPS = (ast.Break, ast.Continue, ast.Return, ast.Raise)
_JUMP_CLASSES = frozenset(_JUMPS)


def _touches(s: ast.stmt, env: dict[str, Any] | None = None) -> Touches:
    """In one walk: does ``s`` contain a jump (its successors may not run), every name it
    mentions, the names it may bind anywhere inside and the arrays it may write elements
    of (or add to in place, ``v += e``, or hand to a call that may write them:
    ``call_writes``; ``env``: the namespace its calls resolve in)."""
    exits = False
    names: set[str] = set()
    bound: set[str] = set()
    into: set[str] = set()
    for n in nodes_of(s):
        cls = n.__class__
        if cls is ast.Name:
            names.add(n.id)
            if n.ctx.__class__ is ast.Store:
                bound.add(n.id)
        elif cls is ast.AugAssign:
            if n.target.__class__ is ast.Name:
                into.add(n.target.id)
        elif cls is ast.Subscript or cls is ast.Attribute:
            if n.ctx.__class__ is ast.Store and (b := dataflow.base_name(n)) is not None:
                into.add(b)
        elif cls is ast.Call:
            if (changed := _list_changed(n)) is not None:
                bound.add(changed)  # (a list changed: like a name bound again)
            else:
                into |= call_writes(n, env or {})
        elif cls in _JUMP_CLASSES:
            exits = True
    return exits, names, bound, into


def _list_changed(c: ast.Call) -> str | None:
    """The list a method call changes (``xs.pop()``, ``tape.append(v)``: a ``mutates``
    method that arrays lack, so its object is no array and the arrays in it keep their
    elements), else None."""
    f = c.func
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and mutating(f.attr) \
            and not hasattr(np.ndarray, f.attr):
        return f.value.id
    return None


def call_writes(c: ast.Call, env: dict[str, Any]) -> set[str]:
    """The arrays call ``c`` may write into, by the primitive table: an ``out=``, the
    destination of an in-place copy (``copies_into``: ``restore_into(dst, src)``), the
    object of a method that changes it (``mutates``), nothing for a ``call_pure`` call or
    one that writes nothing it is given (``hides_writes`` False: a gradient rule's
    primitive, ``print``); else every name it is handed whole, its method's object too."""
    out = {b for k in c.keywords if k.arg == "out"
           and (b := dataflow.base_name(k.value)) is not None}
    fn = called(c, env)
    at = copies_into(fn)
    if at is not None and len(c.args) > at[0] and not c.keywords \
            and (b := dataflow.base_name(c.args[at[0]])) is not None:
        return out | {b}
    f = c.func
    method = isinstance(f, ast.Attribute) and not isinstance(resolve_name(f.value, env),
                                                             types.ModuleType)
    if method and mutating(f.attr):
        b = dataflow.base_name(f.value)
        return out | ({b} if b is not None else set())
    if at is None and (call_pure(c, env) or (fn is not None and not hides_writes(fn))):
        return out
    parts = [*c.args, *(k.value for k in c.keywords)] + ([f.value] if method else [])
    return out | {b for p in parts if (b := dataflow.base_name(p)) is not None}


def _compound_touches(s: ast.stmt, memo: dict[int, tuple[ast.stmt, Touches]],
                      env: dict[str, Any] | None = None) -> Touches:
    """``_touches(s, env)`` of a loop or branch whose blocks are folded: the union of its
    header's and of each statement's of its blocks (from ``memo`` where there)."""
    parts: list[Touches] = []
    for f in s._fields:
        v = getattr(s, f, None)
        if f in ("body", "orelse"):
            for x in v or ():
                hit = memo.get(id(x))
                parts.append(hit[1] if hit is not None and hit[0] is x else _touches(x, env))
        elif isinstance(v, ast.AST):
            parts.append(_touches(v, env))
        elif isinstance(v, list):
            parts.extend(_touches(x, env) for x in v if isinstance(x, ast.AST))
    return (any(p[0] for p in parts), set().union(*(p[1] for p in parts)),
            set().union(*(p[2] for p in parts)), set().union(*(p[3] for p in parts)))


def fold_scalar_adjoints(stmts: list[ast.stmt], scalars: set[str],
                         flow: dataflow.Dataflow | None = None) -> list[ast.stmt]:
    """``dc = 0.0; dc += a; ...; dc += b`` -> ``dc = a + b`` for scalar adjoints ``scalars``.

    A pending ``dc = 0.0``, assignment or accumulation sinks to the next accumulation into ``dc``
    in the same statement list when nothing between reads or writes ``dc``, writes
    what its terms read or a name sharing its buffer (``flow.shares``: adjoint views, and
    e.g. a view of a buffer that a checkpointed loop's reverse recomputes into; without
    ``flow``, the names alone) by assignment or through a call (``call_writes``, its
    callee resolved in ``flow.env``: ``restore_into(dst, snap)`` in a loop), or may jump;
    sums stay a few terms deep.
    """
    if flow is None:
        return _fold(stmts, scalars, {}, lambda n: {n}, {})
    flow.shares("")  # (the groups of the body as it is, before the fold rewrites it)
    return _fold(stmts, scalars, {}, flow.shares, flow.env or {})


def _fold(stmts: list[ast.stmt], scalars: set[str], memo: dict[int, tuple[ast.stmt, Touches]],
          shares: Callable[[str], set[str]], env: dict[str, Any]) -> list[ast.stmt]:
    """``fold_scalar_adjoints`` of one block; ``memo`` keeps what each statement touches
    (``_touches``), so a loop or branch is not walked again whole: its facts are its
    header's and its folded blocks' statements'."""
    out: list[ast.stmt | None] = []
    # adjoint -> (index in out, "set" or "add", [(sign, term)], names the terms read, and
    # the names sharing their buffers)
    pending: dict[str, tuple[int, str, list, set[str], set[str]]] = {}
    for s in stmts:
        compound = isinstance(s, (ast.If, ast.For, ast.While))
        for f in ("body", "orelse"):
            sub = getattr(s, f, None)
            if sub and compound:
                setattr(s, f, _fold(sub, scalars, memo, shares, env) or [ast.Pass()])
        t = getattr(s, "target", None)
        fold = (isinstance(s, ast.AugAssign) and isinstance(t, ast.Name) and t.id in scalars
                and isinstance(s.op, (ast.Add, ast.Sub)))
        if fold:
            value_loads = loaded_ids(s.value)
            fold = t.id not in value_loads
        # what ``s`` reads or writes keeps the pending statements it touches where they are
        touched = _compound_touches(s, memo, env) if compound else _touches(s, env)
        memo[id(s)] = (s, touched)
        exits, names, bound, into = touched
        if exits or (isinstance(s, ast.Expr) and not COMMENT.get(s) and not CHECK.get(s)):
            pending.clear()
        else:
            for d in [d for d, p in pending.items()
                      if (d in names and not (fold and d == t.id)) or p[3] & bound or p[4] & into]:
                del pending[d]
        if fold:
            d, sign = t.id, 1 if isinstance(s.op, ast.Add) else -1
            buffers = set().union(*map(shares, value_loads))
            prev = pending.pop(d, None)
            if prev is not None and len(prev[2]) < _SUM_MAX:
                i, how, terms, prev_loads, prev_buffers = prev
                out[i] = None
                terms = terms + [(sign, s.value)]
                new = _scalar_sum(d, how, terms)
                pending[d] = (len(out), how, terms, prev_loads | value_loads,
                              prev_buffers | buffers)
            else:
                new = s
                pending[d] = (len(out), "add", [(sign, s.value)], value_loads, buffers)
            out.append(ast.copy_location(new, s))
            continue
        if (isinstance(s, ast.Assign) and len(s.targets) == 1
                and isinstance(s.targets[0], ast.Name) and s.targets[0].id in scalars
                and s.targets[0].id not in (value_loads := loaded_ids(s.value))):
            v = s.value
            if isinstance(v, ast.Constant) and v.value == 0.0 and not isinstance(v.value, bool):
                pending[s.targets[0].id] = (len(out), "set", [], set(), set())
            else:
                pending[s.targets[0].id] = (len(out), "set", [(1, v)], value_loads,
                                            set().union(*map(shares, value_loads)))
        out.append(s)
    return [s for s in out if s is not None]


def _scalar_sum(d: str, how: str, terms: list) -> ast.stmt:
    """``d = t1 + t2 - t3`` (``how == "set"``) or ``d += t1 + t2 - t3``."""
    sign, total = terms[0]
    if sign < 0:
        total = ast.UnaryOp(op=ast.USub(), operand=total)
    for sign, e in terms[1:]:
        total = ast.BinOp(left=total, op=ast.Add() if sign > 0 else ast.Sub(), right=e)
    if how == "set":
        return ast.Assign(targets=[ast.Name(id=d, ctx=ast.Store())], value=total)
    return ast.AugAssign(target=ast.Name(id=d, ctx=ast.Store()), op=ast.Add(), value=total)


def dead_loops(body: list[ast.stmt], shared: dict[str, str] | None = None) -> list[ast.stmt]:
    """``body`` without its top-level loops whose every result is bound again before
    anything reads it (``dead_code`` goes by names, and their names are read later: the
    forward loop of a gradient whose adjoint recomputes all it needs).  Only loops that
    write names alone (``writes_names_only``; ``shared``: adjoint views and their bases,
    where ``dt += e`` writes the base's array)."""
    aliased = set(shared or {}) | set((shared or {}).values())
    candidates = [k for k, s in enumerate(body)  # (a list it pops counts as bound by it)
                  if isinstance(s, (ast.For, ast.While)) and writes_names_only(
                      [s], _popped(s), aliased=aliased)]
    if not candidates:
        return body
    first = candidates[0]
    out: list[ast.stmt] = []
    exposed: set[str] = set()  # what the statements after the current one read first
    for k in range(len(body) - 1, first - 1, -1):
        s = body[k]
        if k in candidates and not ((dataflow.binds_in([s]) | _popped(s)) & exposed):
            continue
        exposed -= dataflow.must_binds(s)  # (in place: a long body stays linear)
        exposed |= exposed_reads([s])
        out.append(s)
    out.reverse()
    return body[:first] + out
