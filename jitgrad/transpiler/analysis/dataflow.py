"""Dataflow: what the statements of a generated body bind, read and write, and what its
loops carry; the one def/use, aliasing and dependence analysis the backend passes query.

Per statement (plain functions, syntax only):

- ``binds``: the names it binds itself (targets of ``=``, ``op=``, ``for``, ``with``),
  optionally with the arrays it writes elements of (``elements``) and the lists it
  appends to (``appends``); ``binds_in``: the same over blocks, nested ones included;
- ``must_binds``: the names bound on every path through it (both branches of an
  ``if``; a loop may not run, so it binds nothing for sure);
- ``reads``: the names it reads itself (a compound statement: its head only);
- ``accesses``: its element reads and writes, each index in affine form where it is
  one (``a[i + 1, j]`` over loops ``i, j`` -> ``(("i", 1), ("j", 0))``);
- ``fresh_binds``: each name it binds, with whether to a newly allocated array.

Per body (``Dataflow``, computed once): where each statement sits, the names that may
share a buffer (the adjoint-view map and the assignments that may alias), the names that
hold one array's buffer exactly (``moves``: views and swaps) and, given the names written
in place, the groups sharing a written buffer (``written_buffers``: the front analysis's
alias groups, ``Analysis.aliases``), liveness after a statement, and per loop: the
names carried from one iteration to the next, whether the iterations are independent
for a set of names, the first writer of an array and whether an expression is invariant
(whether its iterations are independent is ``dependence.independent``'s question, asked
with these facts).  Every answer errs on
the safe side: an index it cannot read is not affine, names it cannot tell apart share.

Example (``for i in range(n): t = s + x[i + 1]; s = t; y[i] = t``)::

    binds(stmt)                     ["t"], ["s"], [] (elements=True: ["y"])
    accesses(y[i] = t, ("i",))      [Access("y", (("i", 0),), write=True)]
    Dataflow(body).carried(loop)    {"s"}   (read before it is bound in an iteration)
    Dataflow(body).shares("y")      {"y", "t", "s"} (``y`` might be a list ``t`` is stored
                                    in); {"y"} where ``is_array`` says ``t`` is a scalar
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from ...rules.primitives import (
    allocates,
    allocating,
    fresh,
    fresh_result,
    method_function,
    pure,
    query_attrs,
    reads_shape_of,
    returns_view,
)
from ..astutil import exposed_reads, resolve
from ..nodes import SIMPLE_STMTS, loaded_ids, own_expressions, walk, walk_stmts
from ..notes import KIND
from .kinds import LIST

#: (loop variable, constant offset) of one index component; (None, c) is the constant c
Affine = tuple[str | None, int]
#: an index vector: one entry per component, None where that component is not affine
Index = tuple[Affine | None, ...]

_LOOPS = (ast.For, ast.AsyncFor, ast.While)


# --- per statement ------------------------------------------------------------------------


def binds(s: ast.stmt, elements: bool = False, appends: bool = False) -> list[str]:
    """The names ``s`` itself binds, in order, each once (not its blocks'); ``elements``: and
    the arrays it writes elements of (``a[i] = v``); ``appends``: and ``v`` of ``v.append(e)``."""
    cls = s.__class__
    if cls is ast.Assign:
        targets = s.targets
    elif cls in (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor):
        targets = [s.target]
    elif cls in (ast.With, ast.AsyncWith):
        targets = [w.optional_vars for w in s.items if w.optional_vars is not None]
    elif cls is ast.Expr and appends:
        v = s.value
        f = v.func if isinstance(v, ast.Call) else None
        return [f.value.id] if isinstance(f, ast.Attribute) and f.attr == "append" \
            and isinstance(f.value, ast.Name) else []
    else:
        return []
    if len(targets) == 1 and targets[0].__class__ is ast.Name:  # the usual case, quickly
        return [targets[0].id]
    out: list[str] = []
    for t in targets:
        _target_names(t, elements, out)
    return out


def plain_binding(s: ast.stmt) -> str | None:
    """``v`` where ``s`` is the plain assignment ``v = e`` (one target, a name)."""
    if s.__class__ is ast.Assign and len(s.targets) == 1 and s.targets[0].__class__ is ast.Name:
        return s.targets[0].id
    return None


def _target_names(t: ast.expr, elements: bool, out: list[str]) -> None:
    """Add to ``out`` the names the target ``t`` binds (and, with ``elements``, the array
    whose element it writes: the name under a chain of subscripts and attributes)."""
    if isinstance(t, ast.Name):
        if t.id not in out:
            out.append(t.id)
    elif isinstance(t, (ast.Tuple, ast.List)):
        for e in t.elts:
            _target_names(e, elements, out)
    elif isinstance(t, ast.Starred):
        _target_names(t.value, elements, out)
    elif elements and isinstance(t, ast.Subscript):
        b = base_name(t)
        if b is not None and b not in out:
            out.append(b)


def base_name(e: ast.expr) -> str | None:
    """The array an element access reaches (``a`` of ``a[i][j]``, ``a.T[i]``; none of
    ``a.shape[0]``, which reads no element)."""
    while isinstance(e, (ast.Subscript, ast.Attribute)):
        if isinstance(e, ast.Attribute) and e.attr in query_attrs():  # (the table's ``query``)
            return None
        e = e.value
    return e.id if isinstance(e, ast.Name) else None


def binds_in(stmts: Iterable[ast.stmt], elements: bool = True) -> set[str]:
    """Every name ``stmts`` bind, nested blocks included (``elements``: see ``binds``)."""
    out: set[str] = set()
    for s in walk_stmts(list(stmts)):
        out.update(binds(s, elements))
    return out


def must_binds(s: ast.stmt) -> set[str]:
    """The names ``s`` binds on every path through it (not element writes; a loop may not
    run; an ``if`` binds what both its branches bind)."""
    if isinstance(s, ast.If):
        yes = set().union(*map(must_binds, s.body))
        return yes & set().union(*map(must_binds, s.orelse)) if yes else set()
    if isinstance(s, (ast.With, ast.AsyncWith)):
        return set(binds(s)).union(*map(must_binds, s.body))
    if isinstance(s, ast.AnnAssign) and s.value is None or "body" in s._fields:
        return set()
    return set(binds(s))


def reads(s: ast.stmt) -> set[str]:
    """The names ``s`` itself reads: a compound statement's head (``for``'s iterable, the
    test), a simple one's expressions, and ``x`` of ``x op= e``."""
    if isinstance(s, (ast.For, ast.AsyncFor)):
        return loaded_ids(s.iter)
    if isinstance(s, (ast.If, ast.While)):
        return loaded_ids(s.test)
    out = loaded_ids(s)
    if isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name):
        out.add(s.target.id)
    return out


def reads_in(stmts: Iterable[ast.stmt]) -> set[str]:
    """Every name ``stmts`` read, nested blocks included."""
    out: set[str] = set()
    for s in walk_stmts(list(stmts)):
        out |= reads(s)
    return out


def sums(stmts: list[ast.stmt], whole: bool = True, skip: Collection[int] = ()) -> set[str]:
    """The names ``stmts`` only add to: ``v[k] += g``, ``v[k] -= g`` (and ``v += g`` with
    ``whole``) with ``g`` and ``k`` not reading ``v``, and no other read or binding of ``v``:
    sums over the iterations of a loop, whatever their order (``skip``: the ``id`` of
    statements to pass over)."""
    added: set[str] = set()
    other: set[str] = set()
    for s in walk_stmts(stmts):
        if id(s) in skip:
            continue
        t = getattr(s, "target", None)
        if isinstance(s, ast.AugAssign) and isinstance(s.op, (ast.Add, ast.Sub)) \
                and (whole or isinstance(t, ast.Subscript)):
            base = t.value if isinstance(t, ast.Subscript) else t
            if isinstance(base, ast.Name):
                added.add(base.id)
            other |= loaded_ids(s.value)
            if isinstance(t, ast.Subscript):
                other |= loaded_ids(t.slice)
        else:
            other |= reads(s) | set(binds(s, elements=True))
    return added - other


def affine(e: ast.expr, loop_vars: Collection[str]) -> Affine | None:
    """``(i, c)`` where ``e`` is ``i``, ``i + c``, ``c + i`` or ``i - c`` for a loop variable
    ``i`` of ``loop_vars`` and an integer ``c``; ``(None, c)`` for an integer constant."""
    if isinstance(e, ast.Name):
        return (e.id, 0) if e.id in loop_vars else None
    if isinstance(e, ast.Constant):
        return (None, e.value) if type(e.value) is int else None
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
        inner = affine(e.operand, ())
        return None if inner is None else (None, -inner[1])
    if not (isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Add, ast.Sub))):
        return None
    a, b = affine(e.left, loop_vars), affine(e.right, loop_vars)
    if a is None or b is None or (a[0] is not None and b[0] is not None):
        return None
    if isinstance(e.op, ast.Sub):
        return None if b[0] is not None else (a[0], a[1] - b[1])
    return (a[0] or b[0], a[1] + b[1])


def offset(e: ast.expr, i: str) -> int | None:
    """``c`` where ``e`` is ``i + c`` in affine form (``i``, ``i + c``, ``c + i``, ``i - c``)."""
    a = affine(e, (i,))
    return a[1] if a is not None and a[0] == i else None


def index_of(sub: ast.Subscript, loop_vars: Collection[str]) -> Index | None:
    """The affine form of each component of ``sub``'s index (``affine``); None where a
    component is a slice or the index is not written out (``a[k]`` with ``k`` a tuple)."""
    sl = sub.slice
    parts = sl.elts if isinstance(sl, ast.Tuple) else [sl]
    if any(isinstance(p, (ast.Slice, ast.Starred)) for p in parts):
        return None
    return tuple(affine(p, loop_vars) for p in parts)


@dataclass(frozen=True)
class Access:
    """One element access: the array's name (None: an expression's, ``f(x)[i]``), its index
    (``index_of``), the node; whether it writes (``a[i] = v``) and whether by ``op=``."""

    base: str | None
    index: Index | None
    node: ast.Subscript
    write: bool = False
    aug: bool = False


def accesses(s: ast.stmt, loop_vars: Collection[str] = ()) -> list[Access]:
    """The element reads and writes ``s`` itself makes (its head only, for a compound
    statement), with indices in affine form over ``loop_vars`` where they are."""
    out = []
    aug = isinstance(s, ast.AugAssign)
    for n in own_expressions(s):
        if isinstance(n, ast.Subscript):
            w = isinstance(n.ctx, ast.Store)
            out.append(Access(base_name(n), index_of(n, loop_vars), n, w, w and aug))
    return out


def fresh_binds(s: ast.stmt, env: dict[str, Any] | None = None
                ) -> tuple[tuple[str, bool], ...]:
    """The names an assignment binds, each with whether to a newly allocated array (or the
    array itself grown: ``buf = tape_reserve(buf, used, more)`` binds ``buf`` to ``buf`` or
    to a new array, so it stays as fresh as its other bindings make it); ``env``: the
    namespace, where known, by which a call is what it names (``zl = np.zeros_like``), else
    what it is spelled (``np.zeros``, ``x.copy``)."""
    if not isinstance(s, ast.Assign):
        return ()
    out = []
    v = s.value
    fn = resolve(v.func, env) if env is not None and isinstance(v, ast.Call) else None
    for t in s.targets:
        new = isinstance(t, ast.Name) and isinstance(v, ast.Call) and (
            (allocates(fn) if fn is not None else
             isinstance(v.func, ast.Attribute) and allocating(v.func.attr))
            or _regrows(v, t.id))
        names: list[str] = []
        _target_names(t, False, names)
        out += [(n, new) for n in names]
    return tuple(out)


def _regrows(call: ast.Call, n: str) -> bool:
    """Is ``call`` ``tape_reserve(n, ...)`` (the helper under its usual name)?"""
    return isinstance(call.func, ast.Name) and call.func.id == "tape_reserve" \
        and bool(call.args) and isinstance(call.args[0], ast.Name) and call.args[0].id == n


# --- per body -----------------------------------------------------------------------------

#: the names generated code reaches modules by (not arrays: ``np.sin(x)`` is no method call)
MODULES = frozenset({"np", "math", "numpy", "numba", "random"})


def may_alias(e: ast.expr, modules: Collection[str] = MODULES,
              env: dict[str, Any] | None = None) -> set[str]:
    """The names whose buffer the value of ``e`` may share (a name, an element or a slice,
    a view or an unknown call of them); none for arithmetic and fresh allocations
    (``modules``: names of modules, ``np.f(x)`` is no method of an array ``np``; ``env``:
    the namespace, where known, by which a call is what it names, ``mk = np.zeros`` too,
    else what it is spelled, and a module is one under any name: ``onp.reshape(x, n)``;
    a call's argument the primitive table says it reads only for its shape, ``x`` of
    ``unbroadcast(g, x)``, shares nothing with its result)."""
    if isinstance(e, ast.Name):
        return {e.id}
    if isinstance(e, (ast.Subscript, ast.Starred)):
        return may_alias(e.value, modules, env)
    if isinstance(e, ast.Attribute):
        return set() if e.attr in query_attrs() else may_alias(e.value, modules, env)
    if isinstance(e, (ast.Tuple, ast.List)):
        return set().union(*(may_alias(x, modules, env) for x in e.elts))
    if isinstance(e, ast.IfExp):
        return may_alias(e.body, modules, env) | may_alias(e.orelse, modules, env)
    if not isinstance(e, ast.Call):
        return set()  # arithmetic, comparisons, constants: a new value
    f = e.func
    spelled = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) \
        else ""
    fn = resolve(f, env) if env is not None else None
    if (fresh_result(fn) if fn is not None else fresh(spelled)) \
            and not any(k.arg == "out" for k in e.keywords):
        return set()
    obj = f.value.id if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) \
        and f.value.id not in modules and not (
            env is not None and isinstance(env.get(f.value.id), ModuleType)) else None
    fn = fn if fn is not None else method_function(spelled)
    if fn is not None and returns_view(fn):  # ``x.reshape(n)``, ``np.reshape(x, n)``
        return {obj} if obj else may_alias(e.args[0], modules, env) if e.args else set()
    # (an argument the table says is read only for its shape, ``x`` of
    # ``unbroadcast(g, x)``, is in no result)
    args = [x for k, x in enumerate(e.args) if fn is None or not reads_shape_of(fn, k)]
    out = set().union(*(may_alias(x, modules, env)
                        for x in [*args, *(k.value for k in e.keywords)]))
    return out | ({obj} if obj else set())


def view_base(v: ast.expr, env: dict[str, Any] | None) -> str | None:
    """The array whose buffer the value ``v`` is, or a view of: a name itself, an element
    or slice of it (not a list's entry), ``.T``, ``.real``, ``.imag``, a call the table
    says returns a view of its first operand (``reshape``, ``ravel``...); else None."""
    if isinstance(v, ast.Name):
        return v.id
    if isinstance(v, ast.Subscript) and isinstance(v.value, ast.Name):
        return None if KIND.get(v.value) == LIST else v.value.id
    if isinstance(v, ast.Attribute) and v.attr in ("T", "real", "imag") \
            and isinstance(v.value, ast.Name):
        return v.value.id
    if isinstance(v, ast.Call):
        fn, args = resolve(v.func, env or {}), list(v.args)
        if fn is None and isinstance(v.func, ast.Attribute):
            fn, args = method_function(v.func.attr), [v.func.value, *args]
        if fn is not None and returns_view(fn) and args and isinstance(args[0], ast.Name):
            return args[0].id
    return None


def view_root(n: str, shared: Mapping[str, str]) -> str:
    """The adjoint that ``n`` is a view of (of a view of ...), following the adjoint-view
    map ``shared`` (adjoint -> the adjoint it is a view of); ``n`` itself if none."""
    while n in shared:
        n = shared[n]
    return n


class Groups:
    """Names joined into groups (a union-find, complete once made): ``of(n)`` is ``n`` and
    every name joined with it, directly or through others."""

    def __init__(self, pairs: Iterable[tuple[str, str]] = ()) -> None:
        self._root: dict[str, str] = {}
        for a, b in pairs:
            ra, rb = self._find(a), self._find(b)
            if ra != rb:
                self._root[ra] = rb
        members: dict[str, set[str]] = {}
        for m in set(self._root) | set(self._root.values()):
            members.setdefault(self._find(m), set()).add(m)
        self._members = {r: frozenset(ms) for r, ms in members.items()}

    def _find(self, n: str) -> str:
        while self._root.get(n, n) != n:
            n = self._root[n]
        return n

    def of(self, n: str) -> frozenset[str]:
        """``n`` and the names joined with it."""
        return self._members.get(self._find(n), frozenset()) | {n}


def loop_index(loop: ast.stmt) -> str | None:
    """The index of a ``for`` over ``range``/``prange`` (distinct in every iteration)."""
    if not (isinstance(loop, ast.For) and isinstance(loop.target, ast.Name)
            and isinstance(loop.iter, ast.Call) and isinstance(loop.iter.func, ast.Name)
            and loop.iter.func.id in ("range", "prange") and not loop.orelse):
        return None
    return loop.target.id


class Dataflow:
    """The facts of one body, computed once: where each statement sits, which names may
    share a buffer (``shared``: adjoint -> the adjoint it is a view of), liveness and the
    per-loop queries.  A pass that rewrites the body builds a new one for the new body.
    Names the body never binds (parameters) are distinct buffers unless ``shared`` joins
    them: generated code writes no argument (the prologue copies those it writes).
    ``is_array``: the kinds, where known (False: a scalar, which shares no buffer; without
    them ``a[i] = t`` may store the array ``t`` in a list ``a``); ``env``: the namespace,
    where known (``may_alias``: a call is what it names, not what it is spelled)."""

    def __init__(self, body: list[ast.stmt], shared: dict[str, str] | None = None,
                 modules: Collection[str] = MODULES,
                 is_array: Callable[[str], bool | None] | None = None,
                 env: dict[str, Any] | None = None) -> None:
        self.body = body
        self.modules = modules
        self.env = env
        self.is_array = is_array
        self._at: dict[int, tuple[list[ast.stmt], int, ast.stmt | None]] = {}
        self._place(body, None)
        self._shared = dict(shared or {})
        self._groups: Groups | None = None  # the alias forest, made when first asked
        self._moves: list[tuple[str, str, ast.Assign, bool]] | None = None
        #: id of a loop -> (the loop, ``_changed_in`` it)
        self._loops: dict[int, tuple[ast.stmt, frozenset[str] | None]] = {}

    def _place(self, block: list[ast.stmt], owner: ast.stmt | None) -> None:
        at = self._at
        for k, s in enumerate(block):
            at[id(s)] = (block, k, owner)
            if s.__class__ in SIMPLE_STMTS:  # (no block to read)
                continue
            for f in ("body", "orelse"):
                sub = getattr(s, f, None)
                if isinstance(sub, list):
                    self._place(sub, s)

    def _sharing(self) -> Groups:
        """The alias forest: ``shared``'s pairs and those the statements make (``_alias``)."""
        if self._groups is None:
            pairs = list(self._shared.items())
            for s in walk_stmts(self.body):
                pairs += self._alias(s)
            self._groups = Groups(pairs)
        return self._groups

    def _alias(self, s: ast.stmt) -> list[tuple[str, str]]:
        """The names ``s`` binds, each with a name whose buffer the bound value may share."""
        if isinstance(s, ast.Assign):
            pairs = [(t, s.value) for t in s.targets]
        elif isinstance(s, (ast.For, ast.AsyncFor)):
            pairs = [(s.target, s.iter)]  # ``for row in a``: each row a view of ``a``
        elif isinstance(s, (ast.With, ast.AsyncWith)):
            pairs = [(w.optional_vars, w.context_expr) for w in s.items if w.optional_vars]
        elif isinstance(s, ast.Expr) and binds(s, appends=True):
            pairs = [(s.value.func.value, s.value.args[0])] if s.value.args else []
        else:
            return []
        out = []
        for t, v in pairs:
            if isinstance(t, (ast.Tuple, ast.List)) and isinstance(v, (ast.Tuple, ast.List)) \
                    and len(t.elts) == len(v.elts):
                pairs += list(zip(t.elts, v.elts, strict=True))
                continue
            if isinstance(t, ast.Subscript) and isinstance(v, ast.Subscript):
                continue  # an element copied into an array (a list's element: not a view)
            names: list[str] = []
            _target_names(t, True, names)
            for n in names:
                for m in may_alias(v, self.modules, self.env):
                    if self.is_array is None or (self.is_array(n) is not False
                                                 and self.is_array(m) is not False):
                        out.append((n, m))
        return out

    def moves(self) -> list[tuple[str, str, ast.Assign, bool]]:
        """The plain assignments by which two names hold one array's buffer exactly, in
        order: ``(t, base, s, False)`` for ``t = base`` or a view of it (``view_base``),
        ``t`` an array (``is_array``, where known); ``(a, b, s, True)`` for each target
        ``a`` of a swap ``a, b = b, a`` (names only) and the name ``b`` it takes."""
        if self._moves is None:
            self._moves = []
            for s in walk_stmts(self.body):
                if not isinstance(s, ast.Assign):
                    continue
                t, v = s.targets[0], s.value
                if isinstance(t, ast.Name):
                    base = view_base(v, self.env)
                    if base is not None and (self.is_array is None
                                             or self.is_array(t.id) is not False):
                        self._moves.append((t.id, base, s, False))
                elif isinstance(t, ast.Tuple) and isinstance(v, ast.Tuple) \
                        and len(t.elts) == len(v.elts) \
                        and all(isinstance(e, ast.Name) for e in t.elts + v.elts):
                    self._moves += [(a.id, b.id, s, True)
                                    for a, b in zip(t.elts, v.elts, strict=True)]
        return self._moves

    def written_buffers(self, written: Collection[str]) -> tuple[set[str], Groups]:
        """``written`` grown to every name that may hold a written buffer, and the groups
        of names sharing one: the names ``moves`` joins to a written name, directly or
        through others.  A view and its base share a group only where that buffer is
        written (of one nothing writes, neither name's rebinding changes the other's
        values); the names of a swap always do."""
        moves = self.moves()
        every = Groups((a, b) for a, b, _, _ in moves)
        out = {m for n in written for m in every.of(n)}
        return out, Groups((a, b) for a, b, _, swap in moves if swap or a in out)

    def alone(self, n: str, names: Collection[str]) -> bool:
        """Does no other name of ``names`` share ``n``'s buffer?"""
        return not (self.shares(n) - {n}) & set(names)

    def shares(self, n: str) -> set[str]:
        """The names of the body that may share ``n``'s buffer (``n`` included)."""
        return set(self._sharing().of(n))

    def live_after(self, s: ast.stmt, contents: bool = False) -> frozenset[str]:
        """The names a statement after ``s`` may read before binding them (a later trip of
        an enclosing loop counts as after); ``contents``: only those it may read the
        values of, not only the shape (``content_ids``)."""
        if id(s) not in self._at:
            raise ValueError("the statement is not in the body")
        ids = (lambda n: content_ids(n, self.env)) if contents else loaded_ids
        out: set[str] = set()
        owner: ast.stmt | None = s
        while owner is not None:
            block, k, owner = self._at[id(owner)]
            out |= exposed_reads(block[k + 1:], ids)
            if isinstance(owner, _LOOPS):  # the next trip, from its start
                out |= exposed_reads(owner.body, ids)
                out |= ids(owner.test if isinstance(owner, ast.While) else owner.iter)
        return frozenset(out)

    # --- per loop -------------------------------------------------------------------------

    def carried(self, loop: ast.stmt, contents: bool = False) -> set[str]:
        """The names an iteration of ``loop`` may read as an earlier iteration left them:
        bound in the body and read there before being bound (or read by a ``while`` test);
        ``contents``: only those whose values it may read so (``content_ids``)."""
        return carried(loop, (lambda n: content_ids(n, self.env)) if contents else loaded_ids)

    def first_writer(self, array: str, stmts: list[ast.stmt] | None = None) -> ast.stmt | None:
        """The first statement of ``stmts`` (the body by default; nested ones included, in
        order) that binds ``array``, writes an element of it or appends to it."""
        for s in walk_stmts(self.body if stmts is None else stmts):
            if array in binds(s, elements=True, appends=True):
                return s
        return None

    def invariant(self, loop: ast.stmt, e: ast.expr) -> bool:
        """Does ``e`` take the same value in every iteration of ``loop``: it calls nothing
        and reads no name the loop binds, nor a buffer the loop writes (under any name)?"""
        if any(isinstance(n, ast.Call) for n in walk(e)):
            return False
        changed = self._changed_in(loop)
        return changed is not None and not (loaded_ids(e) & changed)

    def written_in(self, loop: ast.stmt) -> set[str] | None:
        """The names sharing a buffer ``loop`` writes into (elements, appends, handed whole
        to a call); None where it writes into an expression's value."""
        written = _written(loop.body)
        if None in written:
            return None
        if self.is_array is not None:  # a scalar handed to a call has no buffer
            written = {n for n in written if self.is_array(n) is not False}
        return set().union(*(self.shares(n) for n in written))

    def same_each_trip(self, loop: ast.stmt, e: ast.expr) -> bool:
        """Does ``e``, read inside ``loop``, take the same value wherever it is read in
        every trip?  It calls nothing, and each name it reads is ``invariant``; or is
        bound in the loop only by plain ``n = v``, ``v`` itself the same in every trip,
        and no trip reads it before binding it (not ``carried``); or is an array the loop
        writes elements of but never binds, read only for its shape (``a.shape[0]``).
        Weaker than ``invariant``: such an ``e`` cannot be evaluated before the loop."""
        return self._same(loop, e, frozenset())

    def _same(self, loop: ast.stmt, e: ast.expr, seen: frozenset[str]) -> bool:
        if any(isinstance(n, ast.Call) for n in walk(e)):
            return False
        changed = self._changed_in(loop)
        if changed is None:
            return False
        here = loaded_ids(e) & changed
        if not here:
            return True
        bound = binds_in([loop], elements=False)
        values = content_ids(e, self.env)
        for n in here:
            if n not in bound:  # written into: its shape only, and no method may resize it
                if n in values or _method_object(loop, n):
                    return False
                continue
            defs = [x for x in walk_stmts([loop]) if n in binds(x)]
            if n in seen or n in carried(loop) or not all(
                    plain_binding(x) == n and self._same(loop, x.value, seen | {n})
                    for x in defs):
                return False
        return True

    def _changed_in(self, loop: ast.stmt) -> frozenset[str] | None:
        """The names ``loop`` binds and those sharing a buffer it writes (None: it writes
        into an expression's value), found once per loop (the body is not rewritten while
        this dataflow is asked: asked per stored value, a walk each time was quadratic)."""
        hit = self._loops.get(id(loop))
        if hit is not None and hit[0] is loop:
            return hit[1]
        touched = self.written_in(loop)
        changed = None
        if touched is not None:
            changed = frozenset(binds_in([loop], elements=False) | touched)
        self._loops[id(loop)] = (loop, changed)
        return changed


def carried(loop: ast.stmt, ids: Callable[[ast.AST], set[str]] = loaded_ids) -> set[str]:
    """``Dataflow.carried`` (syntax only: a loop's body and head suffice)."""
    bound = binds_in(loop.body, elements=False)
    head = binds(loop) if isinstance(loop, (ast.For, ast.AsyncFor)) else []
    out = (bound & exposed_reads(loop.body, ids)) - set(head)
    if isinstance(loop, ast.While):
        out |= bound & ids(loop.test)
    return out


def writes(s: ast.stmt, env: dict[str, Any]) -> set[str | None]:
    """The arrays ``s`` (its blocks included) may write into: element writes (None: into
    an expression's value), appends, ``a += e`` (in place for an array), and what it hands
    whole to a call the primitive table does not say is pure (``env``: the namespace a
    call is found in)."""
    out = _written([s], env)
    out.update(x.target.id for x in walk_stmts([s])
               if isinstance(x, ast.AugAssign) and isinstance(x.target, ast.Name))
    return out


def content_ids(node: ast.AST, env: dict[str, Any] | None = None) -> set[str]:
    """The names ``node`` reads the values of: ``loaded_ids`` but for those read only for
    their shape (the object of a query, ``a.shape``; an argument a call reads only for its
    shape, ``np.zeros_like(a)``, ``len(a)``: ``reads_shape_of``, the callee found through
    ``env``, builtins without it)."""
    skip: set[int] = set()
    for n in walk(node):
        if isinstance(n, ast.Attribute) and n.attr in query_attrs():
            skip.add(id(n.value))
        elif isinstance(n, ast.Call):
            fn = resolve(n.func, env) if env is not None else None
            if fn is None and isinstance(n.func, ast.Name):
                fn = getattr(builtins, n.func.id, None)
            skip |= {id(a) for k, a in enumerate(n.args) if reads_shape_of(fn, k)}
    return {n.id for n in walk(node) if isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Load) and id(n) not in skip}


def _method_object(loop: ast.stmt, n: str) -> bool:
    """Is ``n`` the object of a method call in ``loop`` (``a.resize(...)``)?"""
    return any(isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)
               and isinstance(c.func.value, ast.Name) and c.func.value.id == n
               for s in walk_stmts([loop]) for c in own_expressions(s))


def _written(body: list[ast.stmt], env: dict[str, Any] | None = None) -> set[str | None]:
    """The arrays ``body`` may write into: element writes (None: into an expression's
    value), appends, and what it hands whole to a call (``env`` given: but a pure one)."""
    out: set[str | None] = set()
    for s in walk_stmts(body):  # (one walk of each statement's expressions)
        for n in own_expressions(s):
            if isinstance(n, ast.Subscript):
                if isinstance(n.ctx, ast.Store):  # (``accesses``' writes)
                    out.add(base_name(n))
            elif isinstance(n, ast.Call) and not (env is not None
                                                  and pure(resolve(n.func, env))):
                parts = [*n.args, *(k.value for k in n.keywords)]
                if isinstance(n.func, ast.Attribute):
                    parts.append(n.func.value)
                out |= {p.id for p in parts if isinstance(p, ast.Name)}
        if isinstance(s, ast.Expr):
            out.update(binds(s, appends=True))
    return out


def elements_read_only(body: list[ast.stmt], a: str) -> bool:
    """Does ``body`` leave the array ``a`` alone but for element reads and shape queries
    (no binding, element write, append, or use of it whole: passed to a call, bound to
    another name, a method's object)?"""
    return a not in binds_in(body, elements=True) and not _used_whole(body, a) and not any(
        a in binds(s, appends=True) for s in walk_stmts(body))


def _used_whole(body: list[ast.stmt], a: str) -> bool:
    """Is ``a`` read in ``body`` other than by an element access or a shape query
    (``a.shape``, ``len(a)``): passed to a call, bound to another name, a method's object?"""
    inside: set[int] = set()  # the Name nodes of element accesses and shape queries
    for s in walk_stmts(body):
        for n in own_expressions(s):
            if isinstance(n, ast.Subscript) or (isinstance(n, ast.Attribute)
                                                and n.attr in query_attrs()):
                inside.add(id(n.value))
            elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) \
                    and n.func.id == "len" and len(n.args) == 1:
                inside.add(id(n.args[0]))
    return any(isinstance(n, ast.Name) and n.id == a and id(n) not in inside
               for s in walk_stmts(body) for n in own_expressions(s))


__all__ = ["Access", "Affine", "Dataflow", "Groups", "Index", "accesses", "affine",
           "base_name", "binds", "binds_in", "carried", "content_ids", "elements_read_only",
           "fresh_binds", "index_of", "loop_index", "may_alias", "must_binds", "offset", "reads",
           "reads_in", "sums", "view_base", "view_root", "writes"]
