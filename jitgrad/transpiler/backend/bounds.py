"""Index bounds proved by explicit checks, once per loop, so Numba compiles without its
per-access check (``jit=True``).

Numba's ``boundscheck=True`` tests every element access; an out-of-range index raises
``IndexError`` instead of reading or writing past an array, at a cost of up to a fifth of
a stencil's time.  This step checks every integer subscript of an array in the generated
function itself.  Numba's semantics: an index ``e`` into a dimension of size ``s`` is in
range when ``-s <= e < s`` (negative indices wrap); slices clamp and need nothing.  Where
an index is affine in the indices of the enclosing ``range`` loops (constant integer
coefficients and steps; a name the loop binds to such a form, ``_i_next = i + 1``,
counts as the form), its other terms and the inner loops' bounds are not bound in the
outermost of those loops, nor is the array's name, and every trip of each loop runs the
statement (it is directly in their bodies: no ``if`` in between, no ``break``, not on
one side of ``and``/``or``/``if``-``else``), one check before that loop tests the least
and the greatest value the index takes, when every loop runs at least once (then the
primal reaches both)::

    for i in range(1, _n):          # u[i - 1], u[i + 1], v[i] checked once before the loop over i
        v[i] = u[i - 1] + u[i + 1]  if _n - 1 > 0 and (_n >= u.shape[0] or _n - 1 >= v.shape[0]):
                                        raise IndexError('u[i - 1], ... out of range (line 3, ...)')
                                    for i in range(1, _n): ...

Any other index of integer scalars (``x[i * i]``, an index read in an ``if``, one whose
array is bound again in the loop) is checked right before its statement.  Each check
costs Numba compile time (about 25 ms a process for an ``if`` that raises), so the
checks before one statement are one ``if``, a check made again in a block while nothing
it reads is bound again goes, and a high end ``n - 1`` where ``n`` is the extent of the
array's dimension by the shape classes (``analysis/shape_classes.py``: ``_n =
x.shape[0]`` over ``dx = np.zeros_like(x)``, a parameter's or a top-level array's
class, assumed equal to no other) needs no test.  An element of an integer array
parameter used as an index (``a[idx[i]]``, ht's ``absolutes[parents[b]]``) is checked
before its statement, after ``idx[i]`` itself, where the body writes no element of an
integer array (so it cannot change in between).  A subscript that cannot be checked so
(an index array or another element used as an index, an array of unknown rank, a subscript
of an expression, an index in a ``while`` test) leaves the whole function as it was,
compiled with Numba's checks, and a comment says why.  A proved function starts with
the comment ``MARK``, by which ``emit.njit`` compiles it with ``boundscheck=False`` (the
user's own ``boundscheck=`` wins).  Subscripts of tuples and lists need nothing: Numba
checks those always.  No later step may add a subscript (``cached_calls`` rewrites
calls only).
"""

from __future__ import annotations

import ast
import copy
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from ..analysis.dataflow import binds, binds_in, loop_index, plain_binding
from ..analysis.kinds import Kind
from ..analysis.shape_classes import ShapeClasses
from ..astutil import resolve
from ..naming import names_in
from ..nodes import loaded_ids, own_expressions, this_loop, walk, walk_stmts
from ..notes import BOUNDS_TEST
from . import emit

#: the first line of a function whose every index is checked explicitly
MARK = "every index is checked explicitly (below): compiled with boundscheck=False"
#: the comment that starts a function left to Numba's checks
UNPROVED = "bounds: Numba checks each index"

#: statements that run straight on to the next (a local check may stand before them)
_SIMPLE = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Pass)
#: the comment before the adjoint of a user's line
_LINE = re.compile(r"line (\d+): ")
#: an index term's key (its text) -> (coefficient, the term's node)
Terms = dict[str, tuple[int, ast.expr]]


@dataclass(frozen=True)
class Lin:
    """An integer expression as ``const + sum(coef * term)``: terms are names or pure
    integer expressions (``n // 2``, ``x.shape[0]``), keyed by their text."""

    terms: tuple[tuple[str, int, ast.expr], ...] = ()
    const: int = 0

    def plus(self, other: Lin, sign: int = 1) -> Lin:
        acc: dict[str, list[Any]] = {k: [c, n] for k, c, n in self.terms}
        for k, c, n in other.terms:
            acc.setdefault(k, [0, n])[0] += sign * c
        return Lin(tuple((k, c, n) for k, (c, n) in acc.items() if c),
                   self.const + sign * other.const)

    def times(self, c: int) -> Lin:
        return Lin(tuple((k, c * t, n) for k, t, n in self.terms if c * t), c * self.const)

    def names(self) -> set[str]:
        return set().union(*(loaded_ids(n) for _, _, n in self.terms))

    def key(self) -> tuple[tuple[str, int], ...]:
        return tuple(sorted((k, c) for k, c, _ in self.terms))

    def text(self) -> str:
        out = ""
        for k, c, n in self.terms:
            k = k if isinstance(n, (ast.Name, ast.Subscript, ast.Call)) else f"({k})"
            mag = k if abs(c) == 1 else f"{abs(c)} * {k}"
            out += (f"-{mag}" if c < 0 else mag) if not out else \
                f" {'-' if c < 0 else '+'} {mag}"
        if not out:
            return str(self.const)
        return out + (f" {'-' if self.const < 0 else '+'} {abs(self.const)}" if self.const
                      else "")


@dataclass(frozen=True)
class Scope:
    """What the names of an index are: ``kinds``; ``ints``, names known to be integers
    besides those the kinds say are; ``calls``, the names of pure integer functions
    (``len`` of an array, ``max``, ``trip_count``); ``consts``, names only ever bound to
    one constant."""

    kinds: Callable[[str], Any]
    ints: frozenset[str] = frozenset()
    calls: frozenset[str] = frozenset()
    consts: dict[str, int] = field(default_factory=dict)

    def having(self, ints: frozenset[str]) -> Scope:
        return Scope(self.kinds, ints, self.calls, self.consts)


@dataclass
class _Loop:
    """An enclosing ``range`` loop whose trips a check may stand for (``ok``)."""

    node: ast.For
    var: str
    ok: bool
    first: Lin = field(default_factory=Lin)
    last: Lin = field(default_factory=Lin)
    #: the test that it runs at least once ("": always)
    nonempty: str = ""
    names: set[str] = field(default_factory=set)
    #: the step is positive: ``first <= last``
    up: bool = True


@dataclass
class _Check:
    """One array dimension's range, checked before ``at`` when ``guards`` hold."""

    at: ast.stmt
    guards: tuple[str, ...]
    loops: tuple[str, ...]
    array: str
    dim: int
    lo: Lin
    hi: Lin
    what: str
    line: int | None
    #: the loops the check stands in (their indices are in their ranges there)
    around: tuple[_Loop, ...] = ()
    #: the index checked (a node of the body; ``unsigned`` reads it)
    index: ast.expr | None = None


class Unproved(Exception):
    """A subscript the step cannot check: the function keeps Numba's checks."""


class _Prover:
    """The checks of one function body (``bounds_checks``)."""

    def __init__(self, scope: Scope, plain: frozenset[str], ranges: bool) -> None:
        self.scope = scope
        self.kinds = scope.kinds
        self.plain = plain  # names whose subscripts Numba checks itself (tuples)
        self.ranges = ranges  # ``range`` and ``len`` are the builtins
        self.checks: list[_Check] = []
        self.line = 0  # the user's line of the last ``# line N:`` comment
        self.run: list[ast.stmt] = []  # (``block``: the statements ``earliest`` may pass)
        #: statements standing in more than one place of the body (a comment made once and
        #: placed twice): a check is never planned before one (``earliest``)
        self.repeated: set[int] = set()
        self.around: list[_Loop] = []  # the enclosing loops whose index keeps its range
        #: names only ever bound to ``a[i]`` of a parameter ``a`` never bound (its rows) ->
        #: (``a``, the number of integer indices): their extents are ``a``'s after those
        self.rows: dict[str, tuple[str, int]] = {}
        #: integer arrays whose elements may be indices (``element``: parameters, no
        #: integer array element written in the body)
        self.tables: frozenset[str] = frozenset()
        #: names bound once per trip of an enclosing loop to an affine form (``alias``)
        self.aliases: dict[str, Lin] = {}
        #: counters (``counters``) -> the loop whose entry value their name stands for
        self.counters: dict[str, ast.For] = {}
        #: the id of a counter's step -> (the counter, what it adds)
        self.steps: dict[int, tuple[str, int]] = {}
        self._bound: dict[int, set[str]] = {}

    def bound(self, loop: ast.stmt) -> set[str]:
        """The names ``loop`` binds, its index and nested blocks included (once per loop)."""
        hit = self._bound.get(id(loop))
        if hit is None:
            hit = self._bound[id(loop)] = binds_in([loop], elements=False)
        return hit

    def block(self, body: list[ast.stmt], chain: list[_Loop], ints: frozenset[str]) -> None:
        made: list[str] = []
        run: list[ast.stmt] = []  # the simple statements just before this one
        for s in body:
            if BOUNDS_TEST.get(s):
                continue  # (a check made already: it reads extents only)
            m = _LINE.match(emit.comment_text(s) or "")
            if m:  # the user's line the statements after it differentiate
                self.line = int(m.group(1))
            self.run = run
            self.statement(s, chain, ints)
            if id(s) in self.steps:  # (after it, the counter is one step further)
                v, c = self.steps[id(s)]
                self.aliases[v] = self.aliases[v].plus(Lin(const=c))
            run = [*run, s] if isinstance(s, _SIMPLE) else []
            if chain and self.alias(s, chain, ints):
                made.append(s.targets[0].id)
            var = loop_index(s) if self.ranges else None
            if var is not None and s.iter.func.id == "range":
                inner = ints | {var}
                loop = self.loop(s, var, inner)
                self.around += [loop] if loop.ok else []
                counted = self.count(loop, inner) if loop.ok else []
                self.block(s.body, [*chain, loop] if loop.ok else [], inner)
                self.around = [x for x in self.around if x is not loop]
                for v in counted:
                    del self.aliases[v], self.counters[v]
                continue
            for f in ("body", "orelse"):
                sub = getattr(s, f, None)
                if isinstance(sub, list) and sub:
                    self.block(sub, [], ints)
        for n in made:
            del self.aliases[n]

    def alias(self, s: ast.stmt, chain: list[_Loop], ints: frozenset[str]) -> bool:
        """Note ``v = e`` (``_i_next = i + 1``) directly in the innermost loop of ``chain``,
        ``e`` affine, where the loop binds ``v`` to ``e`` only (a recomputation in the
        adjoint) and none of ``e``'s names but the indices of ``chain``: ``v`` equals
        ``e`` in the rest of the trip."""
        v = plain_binding(s)
        e = None if v is None else linear(s.value, self.scope.having(ints))
        loop = chain[-1].node
        if e is None or v in self.aliases or not all(
                plain_binding(x) == v and _same(linear(x.value, self.scope.having(ints)), e)
                for x in walk_stmts(loop.body) if v in binds(x)):
            return False
        own = {c.var for c in chain}
        if (e.names() - own) & self.bound(loop):
            return False
        self.aliases[v] = e
        return True

    def count(self, loop: _Loop, ints: frozenset[str]) -> list[str]:
        """Note each counter of ``loop``: an integer ``v`` the loop binds only by one
        ``v = v + c`` (``v += c``, ``c`` an int constant) directly in its body, which has no
        ``continue``, the step 1 or -1.  At the start of the trip of index ``i``, ``v`` is
        its value at the loop's entry plus ``c * (i - first) * step`` (and ``c`` more after
        its step): an index of ``v`` is checked once before the loop, where ``v`` holds
        that entry value (``idx`` of a packed triangle, GradBench gmm)."""
        s, step = loop.node, (1 if loop.up else -1)
        if _continues(s.body) or len(s.iter.args) == 3 and linear(
                s.iter.args[2], self.scope.having(ints)) != Lin(const=step):
            return []
        out = []
        for x in s.body:
            v, c = _step(x)
            if v is None or v in self.aliases or v == loop.var or not _integer(
                    ast.Name(id=v, ctx=ast.Load()), self.scope.having(ints)) or [
                    y for y in walk_stmts(s.body) if v in binds(y)] != [x]:
                continue
            at = Lin(((v, 1, ast.Name(id=v, ctx=ast.Load())),))
            trip = Lin(((loop.var, 1, ast.Name(id=loop.var, ctx=ast.Load())),)).plus(
                loop.first, -1)
            self.aliases[v] = at.plus(trip.times(c * step))
            self.counters[v], self.steps[id(x)] = s, (v, c)
            out.append(v)
        return out

    def substituted(self, e: Lin, loops: list[_Loop]) -> Lin:
        """``e`` with the names ``alias`` noted replaced by what they equal, for a check
        before the first of ``loops``: a counter only where its loop is one of them (its
        form reads its value at that loop's entry; inside, before an inner loop, the
        counter's own name is its value there)."""
        out = Lin(const=e.const)
        inside = {id(c.node) for c in loops}
        for k, c, n in e.terms:
            a = self.aliases.get(n.id) if isinstance(n, ast.Name) else None
            if a is not None and n.id in self.counters and id(self.counters[n.id]) not in inside:
                a = None
            out = out.plus(a.times(c) if a is not None else Lin(((k, c, n),)))
        return out

    def loop(self, s: ast.For, var: str, ints: frozenset[str]) -> _Loop:
        """The range of ``s``'s index (``ok``: each trip runs the whole body, the index is
        not bound in it, the bounds and a constant step are integer expressions)."""
        args = s.iter.args
        if s.iter.keywords or not 1 <= len(args) <= 3 or _breaks(s.body) \
                or var in binds_in(s.body, elements=False):
            return _Loop(s, var, False)
        lins = [linear(a, self.scope.having(ints - {var})) for a in args]
        step = lins[2] if len(lins) == 3 else Lin(const=1)
        if any(x is None for x in lins) or step is None or step.terms or not step.const:
            return _Loop(s, var, False)
        lo, hi = (Lin(), lins[0]) if len(lins) == 1 else (lins[0], lins[1])
        k = step.const
        if abs(k) == 1:
            last = hi.plus(Lin(const=k), -1)
        else:  # lo + k * ((hi - lo - 1) // k), for k < 0 ((lo - hi - 1) // -k)
            gap = (hi.plus(lo, -1) if k > 0 else lo.plus(hi, -1)).plus(Lin(const=1), -1)
            t = ast.parse(f"({gap.text()}) // {abs(k)}", mode="eval").body
            last = lo.plus(Lin(((ast.unparse(t), k, t),)))
        size = hi.plus(lo, -1) if k > 0 else lo.plus(hi, -1)
        runs = "" if not size.terms and size.const > 0 else f"{size.text()} > 0"
        return _Loop(s, var, size.terms != () or size.const > 0, lo, last, runs,
                     lo.names() | hi.names(), k > 0)

    def statement(self, s: ast.stmt, chain: list[_Loop], ints: frozenset[str]) -> None:
        subs = [n for n in own_expressions(s) if isinstance(n, ast.Subscript)]
        if not subs:
            return
        if isinstance(s, (ast.While, ast.For)) and not loop_index(s) or _sometimes(s):
            raise Unproved(f"{ast.unparse(subs[0])}: not read once each time its statement runs")
        bound_here = set(binds(s))
        # (an index that is an element, ``x[idx[i]]``: ``idx[i]`` checked first)
        subs.sort(key=lambda n: sum(isinstance(m, ast.Subscript) for m in walk(n.slice)))
        for sub in subs:
            if isinstance(sub.ctx, ast.Store) and (
                    loaded_ids(sub) & bound_here or isinstance(s, ast.For)):
                raise Unproved(f"{ast.unparse(sub)}: its statement binds its array or index")
            self.subscript(sub, s, chain, ints)

    def subscript(self, sub: ast.Subscript, s: ast.stmt, chain: list[_Loop],
                  ints: frozenset[str]) -> None:
        v = sub.value
        if isinstance(v, ast.Attribute) and v.attr in ("shape", "strides") \
                and isinstance(v.value, ast.Name):
            return  # a tuple
        what = ast.unparse(sub)
        if not isinstance(v, ast.Name):
            raise Unproved(f"{what} subscripts an expression")
        k = self.kinds(v.id)
        if v.id in self.plain or (k is not None and k.cls in "tl" and k.ndim == 0):
            return
        if k is None or not k.ndim:
            raise Unproved(f"{what}: {v.id} is no array of known rank")
        for dim, p in _dimensions(sub, k.ndim):
            if isinstance(p, ast.Slice):
                continue
            e = linear(p, self.scope.having(ints))
            e = _term(p) if e is None and self.element(p) else e
            if e is None:
                raise Unproved(f"{what}: {ast.unparse(p)} is not an integer expression")
            base, shift = self.rows.get(v.id, (v.id, 0))  # (a row: its base's extents)
            self.checks.append(self.place(e, base, dim + shift, s, chain, what))
            self.checks[-1].index = p

    def element(self, p: ast.expr) -> bool:
        """Is ``p`` an element ``idx[i]`` (an integer index per dimension) of an integer
        array of ``tables``: an index checked before its statement (the element's own
        index checked first), the element unchanged until the statement reads it?"""
        if not (isinstance(p, ast.Subscript) and isinstance(p.value, ast.Name)
                and p.value.id in self.tables):
            return False
        k = self.kinds(p.value.id)
        parts = p.slice.elts if isinstance(p.slice, ast.Tuple) else [p.slice]
        return k is not None and k.ndim == len(parts) and not any(
            isinstance(x, ast.Slice) or isinstance(x, ast.Constant) and x.value in (None, ...)
            for x in parts)

    def place(self, e: Lin, array: str, dim: int, s: ast.stmt, chain: list[_Loop],
              what: str) -> _Check:
        """The check of ``e`` before the outermost loop of ``chain`` it may stand before,
        else before ``s``."""
        plain = e
        for h, top in enumerate(chain):
            e = self.substituted(plain, chain[h:])
            done = self.hoisted(e, array, chain[h:])
            if done is not None:
                lo, hi = done
                loops = tuple(c.var for c in chain[h:])
                return _Check(top.node, tuple(c.nonempty for c in chain[h:] if c.nonempty),
                              loops, array, dim, lo, hi, what,
                              getattr(s, "lineno", 0) or self.line,
                              tuple(x for x in self.around if x not in chain[h:]))
        return _Check(self.earliest(s, {array} | plain.names()), (), (), array, dim, plain,
                      plain, what, getattr(s, "lineno", 0) or self.line, tuple(self.around))

    def earliest(self, s: ast.stmt, reads: set[str]) -> ast.stmt:
        """The first of the simple statements running straight into ``s`` (``run``) after
        which none binds a name of ``reads``: a check of ``s`` may stand before it (one
        ``if`` for the checks of a straight run: ``xo[0]``, ``xo[1]``, ``xo[2]``)."""
        at = s
        for p in reversed(self.run):
            if set(binds(p)) & reads or id(p) in self.repeated:
                break  # (a repeated one also stands where the names read may be unbound)
            at = p
        return at

    def hoisted(self, e: Lin, array: str, loops: list[_Loop]) -> tuple[Lin, Lin] | None:
        """The least and greatest value of ``e`` over ``loops`` (outermost first), where a
        check before the first may stand for them all; else None."""
        bound = self.bound(loops[0].node)
        if array in bound or any(c.names & bound for c in loops[1:]):
            return None
        at = {c.var: c for c in loops}  # (an index is bound by one loop of a chain)
        lo = hi = Lin(const=e.const)
        for k, c, n in e.terms:
            if isinstance(n, ast.Name) and n.id in at:
                loop = at[n.id]
                small, large = (loop.first, loop.last) if (c > 0) == loop.up \
                    else (loop.last, loop.first)
                lo, hi = lo.plus(small.times(c)), hi.plus(large.times(c))
            elif isinstance(n, ast.Name) and self.counters.get(n.id) is loops[0].node:
                lo, hi = lo.plus(Lin(((k, c, n),))), hi.plus(Lin(((k, c, n),)))  # (on entry)
            elif loaded_ids(n) & bound:
                return None
            else:
                lo, hi = lo.plus(Lin(((k, c, n),))), hi.plus(Lin(((k, c, n),)))
        return lo, hi


def _sometimes(s: ast.stmt) -> bool:
    """Does a subscript of ``s`` sit where it is evaluated only sometimes: a branch of
    ``a if c else b``, an operand after the first of ``and``/``or`` or of a chained
    comparison?"""
    for n in own_expressions(s):
        parts = [n.body, n.orelse] if isinstance(n, ast.IfExp) else \
            n.values[1:] if isinstance(n, ast.BoolOp) else \
            n.comparators[1:] if isinstance(n, ast.Compare) else []
        if any(isinstance(m, ast.Subscript) for p in parts for m in walk(p)):
            return True
    return False


def _same(a: Lin | None, b: Lin) -> bool:
    return a is not None and a.key() == b.key() and a.const == b.const


def _dimensions(sub: ast.Subscript, ndim: int) -> list[tuple[int, ast.expr]]:
    """The dimension each part of ``sub``'s index stands for; ``Unproved`` where there are
    more than ``ndim``, a ``None``, or a ``...`` beside an integer index."""
    parts = sub.slice.elts if isinstance(sub.slice, ast.Tuple) else [sub.slice]
    dots = [k for k, p in enumerate(parts) if isinstance(p, ast.Constant) and p.value is ...]
    if len(parts) - len(dots) > ndim or len(dots) > 1 or any(
            isinstance(p, ast.Starred) or (isinstance(p, ast.Constant) and p.value is None)
            for p in parts):
        raise Unproved(f"{ast.unparse(sub)}: an index of more parts than dimensions")
    if dots and not all(isinstance(p, ast.Slice) or k in dots for k, p in enumerate(parts)):
        raise Unproved(f"{ast.unparse(sub)}: an integer index beside ...")
    return [(k, p) for k, p in enumerate(parts) if k not in dots]


def linear(e: ast.expr, sc: Scope) -> Lin | None:
    """``e`` as a ``Lin`` where it is an expression of integer scalars (``Scope``: names,
    int constants, ``a.shape[k]``, calls of pure integer functions); else None."""
    if isinstance(e, ast.Constant):
        return Lin(const=e.value) if type(e.value) is int else None
    if isinstance(e, ast.Name) and e.id in sc.consts:
        return Lin(const=sc.consts[e.id])
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd)):
        inner = linear(e.operand, sc)
        return None if inner is None else inner.times(-1 if isinstance(e.op, ast.USub) else 1)
    if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Add, ast.Sub, ast.Mult)):
        a, b = linear(e.left, sc), linear(e.right, sc)
        if a is None or b is None:
            return None
        if isinstance(e.op, ast.Mult):
            if a.terms and b.terms:
                return _term(e)
            return a.times(b.const) if not b.terms else b.times(a.const)
        return a.plus(b, -1 if isinstance(e.op, ast.Sub) else 1)
    return _term(e) if _integer(e, sc) else None


def _term(e: ast.expr) -> Lin:
    return Lin(((ast.unparse(e), 1, e),))


def _integer(e: ast.expr, sc: Scope) -> bool:
    """Is ``e`` a pure integer scalar expression (``linear``'s terms)?"""
    if isinstance(e, ast.Name):
        k = sc.kinds(e.id)
        return e.id in sc.ints or (k is not None and k.cls == "i" and k.ndim == 0)
    if isinstance(e, ast.Constant):
        return type(e.value) is int
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd)):
        return _integer(e.operand, sc)
    if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Add, ast.Sub, ast.Mult,
                                                      ast.FloorDiv, ast.Mod)):
        return _integer(e.left, sc) and _integer(e.right, sc)
    if isinstance(e, ast.Subscript):  # a.shape[k]
        v = e.value
        return isinstance(v, ast.Attribute) and v.attr == "shape" \
            and isinstance(v.value, ast.Name) and isinstance(e.slice, ast.Constant) \
            and type(e.slice.value) is int
    if isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and e.func.id in sc.calls \
            and not e.keywords and e.args:
        if e.func.id == "len":  # len(a)
            return len(e.args) == 1 and isinstance(e.args[0], ast.Name)
        return all(_integer(a, sc) for a in e.args)
    return False


def with_made_arrays(body: list[ast.stmt], kinds: Callable[[str], Any],
                     env: dict[str, Any], sc: Scope) -> Callable[[str], Any]:
    """``kinds``, and for a name it does not know (one a backend step made: an element
    loop's ``y_out``, a seed's copy ``_g``) an array's kind where each binding is another
    name's array of that rank, an array like one (``np_empty_like(x)``, ``x.copy()``) or
    a new one (``np.empty(n)`` of an integer ``n``, ``np.zeros((n, m))``)."""
    values: dict[str, list[ast.expr | None]] = {}
    for s in walk_stmts(body):
        for n in binds(s):
            if kinds(n) is None:
                values.setdefault(n, []).append(s.value if plain_binding(s) else None)
    made: dict[str, Any] = {}

    def kind(n: str) -> Any:
        return kinds(n) or made.get(n)

    def like(v: ast.expr | None) -> Any:
        if isinstance(v, ast.Name):
            return kind(v.id)
        if not isinstance(v, ast.Call) or v.keywords:
            return None
        f = v.func
        if isinstance(f, ast.Attribute) and f.attr == "copy" and not v.args \
                and isinstance(f.value, ast.Name):  # x.copy() of an array x
            base = kind(f.value.id)
            return base if base is not None and base.ndim else None
        fn = resolve(f, env)
        if v.args and any(fn is g for g in _NEW()):
            shape = v.args[0]
            rank = len(shape.elts) if isinstance(shape, ast.Tuple) else \
                1 if _integer(shape, sc) else 0
            return Kind("f", rank) if rank else None
        if len(v.args) != 1 or not isinstance(v.args[0], ast.Name):
            return None
        base = kind(v.args[0].id)
        return base if base is not None and base.ndim and fn is not None \
            and any(fn is g for g in _LIKE()) else None

    for n in grown_tapes(body, env):  # (also unpacked from the workspace: the same array)
        made[n] = Kind("o", 1)
    for _ in range(3):  # (chains of copies of made arrays)
        for n, vs in values.items():
            ks = {like(v) for v in vs}
            if len(ks) == 1 and None not in ks and next(iter(ks)).ndim:
                made[n] = next(iter(ks))
    return kind


def grown_tapes(body: list[ast.stmt], env: dict[str, Any]) -> set[str]:
    """The names ``n = tape_reserve(n, ...)`` binds: 1-d arrays (the helper grows a 1-d
    buffer; a name has one type in compiled code, so its other bindings are 1-d too)."""
    from ...kernels.helpers import tape_reserve
    return {s.targets[0].id for s in walk_stmts(body) if isinstance(s, ast.Assign)
            and plain_binding(s) and isinstance(s.value, ast.Call)
            and resolve(s.value.func, env) is tape_reserve and s.value.args
            and isinstance(s.value.args[0], ast.Name)
            and s.value.args[0].id == s.targets[0].id}


def made_lists(body: list[ast.stmt], env: dict[str, Any]) -> frozenset[str]:
    """The names every binding of which in ``body`` is a list a helper made (``_LISTS``:
    a checkpointed loop's slots of references): Numba checks their subscripts itself."""
    values: dict[str, list[bool]] = {}
    for s in walk_stmts(body):
        v = s.value if plain_binding(s) else None
        for n in binds(s):
            values.setdefault(n, []).append(isinstance(v, ast.Call) and any(
                resolve(v.func, env) is f for f in _LISTS()))
    return frozenset(n for n, vs in values.items() if all(vs))


def _LISTS() -> tuple[Any, ...]:
    """The helpers that make a list."""
    from ...kernels import revolve
    return (revolve.ref_slots,)


def _trip_count() -> Any:
    from ...kernels.helpers import trip_count
    return trip_count


def _NEW() -> tuple[Any, ...]:
    """The functions that make an array of a shape (their first argument)."""
    import numpy as np

    return (np.empty, np.zeros, np.ones, np.full)


def _LIKE() -> tuple[Any, ...]:
    """The functions that make an array of their argument's shape."""
    import numpy as np

    from ...kernels import helpers
    return (np.empty_like, np.zeros_like, np.ones_like, np.copy, helpers.np_empty_like,
            helpers.np_zeros_like)


def integer_names(body: list[ast.stmt], kinds: Callable[[str], Any],
                  calls: frozenset[str], env: dict[str, Any]
                  ) -> tuple[frozenset[str], dict[str, int]]:
    """The names every binding of which in ``body`` is an integer expression (``n_1 = n -
    1``, ``k += 1``, ``n_1 = tape_get(t, k)`` of a tape only integers are put on) or a
    ``range`` loop's index, though their kinds are not known (names the reverse pass
    made): the greatest such set; and those bound to one constant only (``_n5 = -1``, a
    step), with its value."""
    from ...kernels.helpers import tape_get, tape_put

    puts: dict[str, list[ast.expr | None]] = {}
    for s in walk_stmts(body):
        c = s.value if isinstance(s, ast.Expr) else None
        if isinstance(c, ast.Call) and len(c.args) == 3 and isinstance(c.args[0], ast.Name) \
                and resolve(c.func, env) is tape_put:
            puts.setdefault(c.args[0].id, []).append(c.args[2])
    values: dict[str, list[ast.expr | None]] = {}
    stepped: set[str] = set()  # (``k += 1``: no constant)
    for s in walk_stmts(body):
        names = binds(s)
        v = s.value if isinstance(s, ast.Assign) else None
        if isinstance(s, ast.For) and loop_index(s) is not None:
            values.setdefault(names[0], [])
        elif isinstance(v, ast.Call) and plain_binding(s) and len(v.args) == 2 \
                and isinstance(v.args[0], ast.Name) and resolve(v.func, env) is tape_get:
            values.setdefault(names[0], []).extend(puts.get(v.args[0].id) or [None])
        elif isinstance(s, ast.Assign) and plain_binding(s) is not None:
            values.setdefault(names[0], []).append(s.value)
        elif isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name) \
                and isinstance(s.op, (ast.Add, ast.Sub, ast.Mult)):
            values.setdefault(names[0], []).append(s.value)
            stepped.add(names[0])
        else:
            for n in names:
                values.setdefault(n, []).append(None)
    ints = {n for n, vs in values.items() if None not in vs
            and ((k := kinds(n)) is None or (k.cls == "i" and k.ndim == 0))}
    while True:
        now = frozenset(ints)
        ints = {n for n in now if all(_integer(v, Scope(kinds, now, calls)) for v in values[n])}
        if ints == now:
            break
    consts: dict[str, int] = {}
    for n in now - stepped:
        lins = [linear(v, Scope(kinds)) for v in values[n] if v is not None]
        if values[n] and len(lins) == len(values[n]) and all(
                x is not None and not x.terms and x.const == lins[0].const for x in lins):
            consts[n] = lins[0].const
    return now, consts


def _step(s: ast.stmt) -> tuple[str | None, int]:
    """``(v, c)`` where ``s`` is ``v = v + c``, ``v = c + v``, ``v = v - c`` or ``v += c``,
    ``v -= c`` (``c`` an int constant); else ``(None, 0)``."""
    if isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name) \
            and isinstance(s.op, (ast.Add, ast.Sub)):
        v, e = s.target.id, ast.BinOp(left=ast.Name(id=s.target.id, ctx=ast.Load()),
                                      op=s.op, right=s.value)
    elif plain_binding(s) is not None and isinstance(s.value, ast.BinOp):
        v, e = plain_binding(s), s.value
    else:
        return None, 0
    if not isinstance(e.op, (ast.Add, ast.Sub)):
        return None, 0
    sign = -1 if isinstance(e.op, ast.Sub) else 1
    for a, b, sg in ((e.left, e.right, sign), (e.right, e.left, 1)):
        if isinstance(a, ast.Name) and a.id == v and isinstance(b, ast.Constant) \
                and type(b.value) is int and (sg == sign or sign == 1):
            return v, sg * b.value
    return None, 0


def _continues(body: list[ast.stmt]) -> bool:
    """Does a ``continue`` of this loop sit in ``body`` (not in a nested loop's)?"""
    return any(isinstance(s, ast.Continue) for s in this_loop(body))


def _breaks(body: list[ast.stmt]) -> bool:
    """Does a ``break`` of this loop sit in ``body`` (not in a nested loop's)?"""
    for s in body:
        if isinstance(s, ast.Break):
            return True
        if isinstance(s, (ast.For, ast.While)):
            if s.orelse and _breaks(s.orelse):
                return True
            continue
        for f in ("body", "orelse"):
            sub = getattr(s, f, None)
            if isinstance(sub, list) and sub and isinstance(sub[0], ast.stmt) and _breaks(sub):
                return True
    return False


def bounds_checks(body: list[ast.stmt], kinds: Callable[[str], Any], params: list[str],
                  plain: frozenset[str] = frozenset(), ranges: bool = True,
                  env: dict[str, Any] | None = None) -> tuple[list[ast.stmt], bool]:
    """``body`` with every array subscript checked explicitly, first the comment ``MARK``,
    and True; or ``body`` after a comment saying which subscript Numba must check, and
    False.  ``kinds``: a name's kind (None: unknown); ``params``: the function's
    parameters; ``plain``: names of tuples;
    ``ranges``: ``range``, ``len`` and ``max`` are the builtins (else no check leaves a
    loop); ``env``: what the code's names refer to (``with_made_arrays``).
    Statements that change are copied (the variants share them)."""
    try:
        p, shapes, calls = prove(body, kinds, params, plain, ranges, env)
    except Unproved as why:
        return [emit.comment(f"{UNPROVED}: {why}"), *body], False
    plan: dict[int, list[_Check]] = {}
    for c in p.checks:
        plan.setdefault(id(c.at), []).append(c)
    top = {n for n in map(plain_binding, body) if n and len(shapes.values.get(n, ())) == 1}
    extent = partial(_below_extent, partial(_extent, shapes, calls, top),
                     _definitions(shapes, p.scope, params))
    return [emit.comment(MARK), *_insert(body, plan, extent)], True


def prove(body: list[ast.stmt], kinds: Callable[[str], Any], params: list[str],
          plain: frozenset[str] = frozenset(), ranges: bool = True,
          env: dict[str, Any] | None = None) -> tuple[_Prover, ShapeClasses, frozenset[str]]:
    """The checks of ``body``'s subscripts (``_Prover.checks``), the shape classes and the
    pure integer calls (``bounds_checks``' arguments); ``Unproved`` where a subscript
    cannot be checked so."""
    env = env or {}
    calls = frozenset(n for n in env if env[n] is _trip_count()) | (
        frozenset({"len", "max"}) if ranges else frozenset())
    ints, consts = integer_names(body, kinds, calls, env)
    consts = {n: c for n, c in consts.items() if n not in params}
    kinds = with_made_arrays(body, kinds, env, Scope(kinds, ints, calls))
    p = _Prover(Scope(kinds, ints, calls, consts), plain | made_lists(body, env), ranges)
    seen: set[int] = set()
    for x in walk_stmts(body):
        (p.repeated if id(x) in seen else seen).add(id(x))
    shapes = ShapeClasses(body, _ndims(body, params, kinds), env, params)
    p.rows = _rows(shapes, p.scope)
    p.tables = _tables(body, params, kinds)
    p.block(body, [], ints)
    return p, shapes, calls


def _tables(body: list[ast.stmt], params: list[str], kinds: Callable[[str], Any]
            ) -> frozenset[str]:
    """The integer array parameters whose elements may stand as indices: never bound, and
    no element of an integer array written anywhere in ``body`` (none is changed between
    the check of such an index and its use, aliases included)."""
    def int_array(n: str) -> bool:
        k = kinds(n)
        return k is not None and k.cls == "i" and bool(k.ndim)

    for n in walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store) and (
                not isinstance(n.value, ast.Name) or not (k := kinds(n.value.id))
                or k.cls != "f"):
            return frozenset()
    bound = binds_in(body)
    return frozenset(n for n in params if int_array(n) and n not in bound)


def _rows(shapes: ShapeClasses, sc: Scope) -> dict[str, tuple[str, int]]:
    """The names every binding of which is ``a[i]`` (``a[i, j]``...: integer indices, fewer
    than ``a`` has dimensions, the same number each time) of a parameter ``a`` the body
    never binds: name -> (``a``, the number of indices)."""
    out: dict[str, tuple[str, int]] = {}
    for n, vals in shapes.values.items():
        got = set()
        for v in vals:
            parts = v.slice.elts if isinstance(v, ast.Subscript) and isinstance(
                v.slice, ast.Tuple) else [v.slice] if isinstance(v, ast.Subscript) else []
            a = v.value.id if parts and isinstance(v.value, ast.Name) else None
            k = sc.kinds(a) if a in shapes.fixed else None
            ok = k is not None and k.ndim and len(parts) < k.ndim and all(
                linear(x, sc.having(frozenset())) is not None or _integer(x, sc)
                for x in parts)
            got.add((a, len(parts)) if ok else None)
        if len(got) == 1 and None not in got and n not in shapes.params:
            out[n] = got.pop()
    return out


def _ndims(body: list[ast.stmt], params: list[str], kinds: Callable[[str], Any]
           ) -> dict[str, int]:
    """The number of dimensions of each name of ``body`` whose kind says it."""
    names = set(params).union(*(names_in(s) for s in body))
    return {n: k.ndim for n in names if (k := kinds(n)) is not None and k.ndim is not None}


def _definitions(shapes: ShapeClasses, sc: Scope, params: list[str]) -> dict[str, Lin]:
    """The names (not parameters) every binding of which is one affine form (``_n = len(x)
    - 1``), with it."""
    out: dict[str, Lin] = {}
    for n, vals in shapes.values.items():
        lins = [None if v is None else linear(v, sc) for v in vals]
        if n not in params and lins and all(_same(x, lins[0]) for x in lins):
            out[n] = lins[0]
    return out


def _below_extent(extent: Callable[..., bool], defs: dict[str, Lin], hi: Lin, array: str,
                  dim: int) -> bool:
    """Is ``hi`` at most the extent of ``array``'s dimension ``dim`` less one: ``n + c``
    (``c <= -1``) with ``n`` the extent (``extent``), names bound only to one affine form
    read as that form (their value is that form of extents, which never change)?"""
    for _ in range(8):
        if len(hi.terms) == 1 and hi.terms[0][1] == 1 and hi.const <= -1 \
                and extent(hi.terms[0][2], array, dim):
            return True
        names = [(k, c, n) for k, c, n in hi.terms if isinstance(n, ast.Name) and n.id in defs]
        if not names:
            return False
        for k, c, n in names:
            hi = hi.plus(Lin(((k, c, n),)), -1).plus(defs[n.id].times(c))
    return False


def _extent(shapes: ShapeClasses, calls: frozenset[str], top: set[str], t: ast.expr,
            array: str, dim: int, depth: int = 0) -> bool:
    """Is ``t`` always ``array.shape[dim]``: that itself, ``b.shape[dim]`` (``len(b)``) of
    an array ``b`` of ``array``'s shape class, rooted in a parameter the body never binds
    or a name bound once, at the top level (``top``), and assumed equal to no other; or a
    name bound only to such?"""
    if isinstance(t, ast.Subscript) and ast.unparse(t) == f"{array}.shape[{dim}]":
        return True  # (read at the same time as the index)
    if dim == 0 and isinstance(t, ast.Name) and t.id in top and _sized(shapes, array, t.id):
        return True
    c = shapes.of(array)
    if c is None or shapes.checks(c) or c not in shapes.fixed and c not in top:
        return False
    if isinstance(t, ast.Name) and t.id in shapes.values and t.id not in shapes.params:
        vals = shapes.values[t.id]
        return depth < 3 and all(v is not None and _extent(shapes, calls, top, v, array,
                                                            dim, depth + 1) for v in vals)
    if isinstance(t, ast.Call) and isinstance(t.func, ast.Name) and t.func.id == "len" \
            and "len" in calls and dim == 0 and len(t.args) == 1:
        t = ast.Subscript(value=ast.Attribute(value=t.args[0], attr="shape"),
                          slice=ast.Constant(value=0))
    if not (isinstance(t, ast.Subscript) and isinstance(t.value, ast.Attribute)
            and t.value.attr == "shape" and isinstance(t.value.value, ast.Name)
            and isinstance(t.slice, ast.Constant) and t.slice.value == dim):
        return False
    return shapes.of(t.value.value.id) == c


def _sized(shapes: ShapeClasses, array: str, n: str) -> bool:
    """Is ``array`` bound only ever to ``np.zeros(n)`` or ``np.empty(n)`` (``n`` bound once:
    vector forward mode's direction vectors, ``s_dot = np.zeros(_nd)``), so that its
    extent is ``n``?"""
    vals = shapes.values.get(array)
    return bool(vals) and all(
        isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute)
        and v.func.attr in ("zeros", "empty") and isinstance(v.func.value, ast.Name)
        and shapes.env.get(v.func.value.id) is np and len(v.args) == 1 and not v.keywords
        and isinstance(v.args[0], ast.Name) and v.args[0].id == n for v in vals)


def _insert(body: list[ast.stmt], plan: dict[int, list[_Check]],
            extent: Callable[..., bool]) -> list[ast.stmt]:
    """``body`` with the planned checks before their statements, nested blocks too."""
    out: list[ast.stmt] = []
    seen: dict[str, set[str]] = {}  # a check made in this block -> the names it reads
    for s in body:
        at = len(out)  # (before the comments that lead to ``s``: they stay on it)
        while at and emit.comment_text(out[at - 1]) is not None:
            at -= 1
        for c in _written(plan.get(id(s), []), s, extent):
            text = ast.unparse(c)
            if text not in seen:  # (not again while nothing it reads is bound again)
                out.insert(at, c)
                at += 1
                if isinstance(c, ast.If):
                    seen[text] = loaded_ids(c.test)
        bound = binds_in([s], elements=False)
        seen = {t: ns for t, ns in seen.items() if not ns & bound}
        new = s
        for f in ("body", "orelse"):
            sub = getattr(s, f, None)
            if isinstance(sub, list) and sub and isinstance(sub[0], ast.stmt):
                done = _insert(sub, plan, extent)
                if done != sub:
                    new = copy.copy(new) if new is s else new
                    setattr(new, f, done)
        out.append(new)
    return out


def _written(checks: list[_Check], at: ast.stmt, extent: Callable[..., bool]
             ) -> list[ast.stmt]:
    """The statements of ``checks`` (all before ``at``): one ``if`` (each costs Numba
    compile time), the bounds of each array's subscripts merged (the least low end, the
    greatest high end of each form), and a comment where they stand for a loop's trips;
    nothing where every bound is in range by the shapes (``extent``)."""
    groups: dict[tuple[str, ...], list[_Check]] = {}
    for c in checks:
        groups.setdefault(c.guards, []).append(c)
    out: list[ast.stmt] = []
    for guards, cs in groups.items():
        arrays = sorted(dict.fromkeys(c.array for c in cs), key=lambda a: any(
            _reads_element(c) for c in cs if c.array == a))  # (``or``: theirs first)
        conds = [x for a in arrays
                 for x in _conditions([c for c in cs if c.array == a], extent)]
        if cs[0].loops:
            whats = ", ".join(dict.fromkeys(c.what for c in cs))
            out.append(emit.comment(
                f"{whats} checked once before the loop over {cs[0].loops[0]}" if conds else
                f"{whats} in range on every trip over {cs[0].loops[0]} (by the shapes)"))
        if not conds:
            continue
        test = " or ".join(conds)
        if guards:
            test = " and ".join(guards) + f" and ({test})"
        whats = list(dict.fromkeys(c.what for c in cs))
        lines = sorted({c.line for c in cs if c.line})
        where = [f"line {lines[0]}"] if lines else []
        where += [f"loop over {cs[0].loops[0]}"] if cs[0].loops else []
        msg = f"{', '.join(whats[:3])}{', ...' if len(whats) > 3 else ''} out of range"
        msg += f" ({', '.join(where)})" if where else ""
        stmt = ast.parse(f"if {test}:\n    raise IndexError({msg!r})").body[0]
        BOUNDS_TEST.set(stmt, True)
        out.append(ast.copy_location(stmt, at))
        for n in walk(stmt):
            if isinstance(n, (ast.expr, ast.stmt)):
                ast.copy_location(n, at)
    return out


def _reads_element(c: _Check) -> bool:
    """Does a bound of ``c`` read an array's element (``idx[i]``, not ``x.shape[0]``)?"""
    return any(isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name)
               for _, _, t in (*c.lo.terms, *c.hi.terms) for n in walk(t))


def _conditions(cs: list[_Check], extent: Callable[..., bool]) -> list[str]:
    """The tests that some index of ``cs`` (of one array) is out of range: per dimension,
    the least low end and the greatest high end of each form of bound, but a high end
    below the dimension's extent by the shapes (``extent``)."""
    out: list[str] = []
    for dim in sorted({c.dim for c in cs}):
        size = f"{cs[0].array}.shape[{dim}]"
        los: dict[Any, Lin] = {}
        his: dict[Any, Lin] = {}
        for c in cs:
            if c.dim != dim:
                continue
            low = ranged(c.lo, c.around, True)  # (by the ranges of the enclosing loops)
            if (low.terms or low.const < 0) and (
                    c.lo.key() not in los or c.lo.const < los[c.lo.key()].const):
                los[c.lo.key()] = c.lo
            if not extent(ranged(c.hi, c.around, False), c.array, dim) and (
                    c.hi.key() not in his or c.hi.const > his[c.hi.key()].const):
                his[c.hi.key()] = c.hi
        out += [f"{lo.text()} < -{size}" for lo in los.values() if lo.terms or lo.const < 0]
        out += [f"{hi.text()} >= {size}" for hi in his.values()
                if (hi.terms or hi.const >= 0) and not extent(hi, cs[0].array, dim)]
    return out


def ranged(e: Lin, around: tuple[_Loop, ...], low: bool) -> Lin:
    """A bound of ``e`` (the least where ``low``, else the greatest) over the ranges of
    the indices of the loops ``around`` (outermost first; an inner loop's bounds may read
    an outer index), which hold where a check in their bodies runs."""
    for loop in reversed(around):
        out = Lin(const=e.const)
        for k, c, n in e.terms:
            if isinstance(n, ast.Name) and n.id == loop.var:
                small, large = (loop.first, loop.last) if (c > 0) == loop.up \
                    else (loop.last, loop.first)
                out = out.plus((small if low else large).times(c))
            else:
                out = out.plus(Lin(((k, c, n),)))
        e = out
    return e


def proved(src: str) -> bool:
    """Does the generated function ``src`` check every index itself (starts with ``MARK``)?"""
    lines = src.lstrip("\n").splitlines()
    return len(lines) > 1 and lines[1].strip() == f"# {MARK}"


__all__ = ["MARK", "Lin", "Unproved", "bounds_checks", "linear", "prove", "proved",
           "ranged"]
