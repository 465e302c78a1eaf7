"""Tape policy: which values the adjoint can read again instead of finding them on a tape,
answered from the dataflow layer (``analysis.dataflow``) and the analysis.

A read of an array nothing writes is a read, however it is reached: through an argument,
or through a view of one rebound every iteration (``lrow = l[ik]``, a helper's parameter
after inlining).  ``unwritten_view`` re-makes such a view from the indices the adjoint
still has (``lrow[j]`` is read again as ``l[ik, j]``), so the element is never taped.

Preconditions, each checked here (a recomputation from an operand that was overwritten
would be a silently wrong gradient):

1. the view's name has one definition, ``v = a[i, ...]`` with integer indices (a row, an
   element block of a never-written array), and it dominates the statement read again;
2. no name that may share ``a``'s buffer (``Dataflow.shares``, and the analysis' alias
   groups) is ever written in place, appended to, or written through a view, and ``a``
   itself is not rebound after the view is made;
3. each index name holds, in the adjoint, the value it had when the view was made: the
   index of a loop around both that nothing else rebinds, or a name never rebound after.

A scalar the adjoint needs from a tape is stored once per run of the outermost loop it is
invariant in, not once per trip (``ReadPolicy.hoisted``): pushed before that loop ``L``
and popped before ``L``'s adjoint, which rebinds nothing in between.  Preconditions:

4. ``L`` is a ``for`` over ``range``, in no checkpointed or ``prange`` loop (the planner
   also refuses functions with checkpointed regions), and ``s`` reads the value in ``L``;
5. either nothing in ``L`` binds the name and a definition of it dominates ``L`` (its
   value at ``L``'s entry is the one every trip reads), or its one definition
   ``n = e`` is at the top of ``L``'s body, dominates ``s``, no ``break``, ``continue``,
   ``return`` or ``raise`` is in ``L``'s body, and ``e`` is invariant in ``L``
   (``Dataflow.invariant``: no call, no name ``L`` binds, no buffer ``L`` writes under
   any name that may share it); ``e`` is then pushed before ``L`` only when ``L`` makes
   a trip (the first trip evaluates it with the same operands).

An array a loop ``O`` writes in the first part of its body and only reads elements of
after (a scratch array filled per outer trip, read in inner loops) is stored once per trip
of ``O``, after its last write, and given back at the start of the trip's adjoint; the
element reads after that write are read again (``ReadPolicy.kept``).  Preconditions:

6. the array is bound once, to a fresh allocation before ``O`` that dominates it, and
   nothing shares its buffer (no other name, alias group or view); the planner refuses
   functions with checkpointed regions;
7. ``O`` is a ``for`` over ``range`` in no checkpointed or ``prange`` loop, nothing in its
   body leaves it (``break``, ``continue``, ``return``, ``raise``), and the statements of
   its body after the last one that writes the array (elements, appends, or using it
   whole) only read its elements and shape;
8. the read and the statement whose adjoint reads it again are in that part, the read in a
   loop inside ``O``, and the first part writes the array only in loops (filled element by
   element, read over and over: the case worth one copy per trip; a cost rule, not a
   correctness one).

Such an array is not stored at all where the first part can simply run again at the start
of the trip's adjoint (``ReadPolicy.refill``: ``xc[j] = x[i, j] - mu[ik, j]`` over ``j``
is cheaper to redo than a copy per trip, and needs no memory).  Preconditions:

9. the first part fills every element: the array is made 1-D, ``a = np.empty(E)`` (or
   ``zeros``), the names in ``E`` are never rebound after, and a statement of the first
   part is ``for j in range(E)`` (the same ``E``) with ``a[j] = ...`` at the top of its body;
10. the first part only binds scalars, writes elements of ``a``, loops over ``range`` and
   branches; it reads no element of ``a``; its expressions are pure (``purity.is_pure``);
11. everything else it reads holds the same value in the adjoint: arrays nothing writes
   (``never_written``) and names bound at most once, before ``O`` (dominating it), or the
   index of a loop around it that nothing else rebinds (the adjoint loops rebind it to the
   trip's index);
12. its operations cost no more per element than a tape round trip (the primitive table).
The rerun binds fresh names only (``Tapes.keep_after``), so it changes nothing but ``a``.
"""

from __future__ import annotations

import ast

from ...rules.primitives import TAPE_COST, hides_writes
from ..analysis import dataflow
from ..analysis.analyse import Analysis
from ..analysis.cost import op_cost
from ..astutil import exposed_reads
from ..front.purity import called, is_pure
from ..nodes import clone, walk, walk_stmts
from ..notes import BLOCK, CHECKPOINTED, END, POS, is_prange


class ReadPolicy:
    """The never-written buffers of one body (computed once, asked per read)."""

    def __init__(self, body: list[ast.stmt], an: Analysis, env: dict) -> None:
        self.an = an
        self.env = env
        self.flow = dataflow.Dataflow(body, env=env)
        self.body = body
        self._memo: dict[str, bool] = {}
        self._stores: set[str] | None = None
        self._at: dict[int, tuple[list[ast.stmt], int]] | None = None
        self._typed: dataflow.Dataflow | None = None
        self._jumps: dict[int, bool] = {}

    def _stored_into(self) -> set[str]:
        """Names whose buffer a statement writes into: element writes, ``op=`` on arrays,
        appends, ``out=``, and whole arrays handed to a call that may write them (the table's
        ``hides_writes``: an unknown function, ``np.random.shuffle``)."""
        if self._stores is None:
            out: set[str] = set()
            for s in walk_stmts(self.body):
                bound = set(dataflow.binds(s))
                out |= set(dataflow.binds(s, elements=True, appends=True)) - bound
                if isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name):
                    out.add(s.target.id)  # a buffer updated in place when it is an array
                for n in dataflow.own_expressions(s):
                    if not isinstance(n, ast.Call):
                        continue
                    given = [*n.args, *(k.value for k in n.keywords)]
                    if isinstance(n.func, ast.Attribute):
                        given.append(n.func.value)
                    if hides_writes(called(n, self.env)) \
                            or any(k.arg == "out" for k in n.keywords):
                        out |= {x.id for x in given if isinstance(x, ast.Name)}
            self._stores = out
        return self._stores

    def never_written(self, a: str) -> bool:
        """Precondition 2 (without the rebinding part): nothing writes into ``a``'s buffer,
        under any name that may share it."""
        hit = self._memo.get(a)
        if hit is None:
            an = self.an
            group = self.flow.shares(a)  # (``an.aliases(a)`` among them: views and swaps)
            hit = not (group & (set(an.written) | set(an.aug_written) | set(an.args_written)
                                | set(an.inplace) | self._stored_into()))
            self._memo[a] = hit
        return hit

    def unwritten_view(self, base: str, d: ast.stmt, s: ast.stmt) -> tuple[str, list] | None:
        """``(a, [i, ...])`` where ``base``, read by ``d`` (whose value the adjoint of ``s``
        recomputes), is the view ``a[i, ...]`` of a never-written array and the indices hold
        their values in that adjoint (the module's preconditions); else None."""
        an = self.an
        defs = an.defs.get(base, [])
        if len(defs) != 1 or dataflow.plain_binding(defs[0]) != base:
            return None
        vdef = defs[0]
        v = vdef.value
        if not (isinstance(v, ast.Subscript) and isinstance(v.value, ast.Name)):
            return None
        a = v.value.id
        parts = list(v.slice.elts) if isinstance(v.slice, ast.Tuple) else [v.slice]
        k = an.kind(a)
        if not (k.is_array and k.ndim is not None and len(parts) < k.ndim
                and all(an.kind_of_index(p) for p in parts)):
            return None  # not a block of an array by integer indices
        if not (an.dominates(vdef, d) and self.never_written(a)
                and not an.may_redefine_after(a, vdef, include_self=False)):
            return None
        loops = {id(x) for x in an.enclosing_loops(vdef)}
        for m in {x.id for p in parts for x in walk(p) if isinstance(x, ast.Name)}:
            if an.recomputed_index(m, s) and any(
                    isinstance(x, ast.For) and x.target.id == m and id(x) in loops
                    for x in an.enclosing_loops(s)):
                continue  # the index of a loop around the view and the adjoint: same trip
            if an.may_redefine_after(m, vdef, include_self=False) \
                    or an.kind(m).is_array or POS.get(vdef) is None:
                return None
        return a, [clone(p) for p in parts]

    def typed(self) -> dataflow.Dataflow:
        """The dataflow with the kinds (a scalar shares no buffer): for ``invariant``."""
        if self._typed is None:
            kinds = self.an.kinds
            self._typed = dataflow.Dataflow(
                self.body, is_array=lambda n: self.an.kind(n).is_array if n in kinds else None,
                env=self.env)
        return self._typed

    def hoisted(self, n: str, s: ast.stmt) -> tuple[ast.For, ast.expr | None] | None:
        """Where the scalar ``n``, stored for the adjoint of ``s``, can be stored once per
        run of a loop ``L`` around ``s`` instead of once per trip (the module's
        preconditions 4 and 5): ``(L, None)`` where ``L`` does not bind ``n`` (``n`` is
        pushed before ``L``), ``(L, e)`` where ``n = e`` heads ``L``'s body with ``e``
        invariant there (``e`` is pushed); the outermost such loop; else None."""
        an = self.an
        k = an.kind(n)
        loops = an.enclosing_loops(s)
        if k.is_array or k.ndim != 0 or not loops or any(
                CHECKPOINTED.get(x) or is_prange(x) for x in loops):
            return None
        defs = an.defs.get(n, [])
        for loop in loops:  # outermost first: the fewest pushes
            if dataflow.loop_index(loop) is None:
                continue
            if any(POS.get(loop) <= POS.get(d) <= END.get(loop) for d in defs):
                e = self._heads(n, loop, s, defs)
                if e is not None:
                    return loop, e
                continue
            if any(an.dominates(d, loop) for d in defs) \
                    and self.typed().invariant(loop, ast.Name(id=n, ctx=ast.Load())):
                return loop, None
        return None

    def kept(self, a: str, d: ast.stmt, s: ast.stmt) -> tuple[ast.For, int] | None:
        """``(O, k)`` where the array ``a``, read by ``d`` for the adjoint of ``s``, can be
        stored once per trip of the loop ``O`` after ``O.body[k]`` (its last write there)
        and ``d`` read again (the module's preconditions 6 to 8); else None."""
        an = self.an
        defs = [x for x in an.defs.get(a, []) if a in dataflow.binds(x)]  # not a[i] = v
        if not (an.kind(a).is_array and len(defs) == 1
                and dict(dataflow.fresh_binds(defs[0], self.env)).get(a)):
            return None
        if self.typed().shares(a) != {a} or a in an.views \
                or any(b == a for b, _ in an.views.values()):
            return None
        loops = an.enclosing_loops(d)
        if any(CHECKPOINTED.get(x) or is_prange(x) for x in loops):
            return None
        for depth in range(len(loops) - 1, -1, -1):  # the innermost loop that writes it
            o = loops[depth]
            last = next((k for k in range(len(o.body) - 1, -1, -1)
                         if not dataflow.elements_read_only(o.body[k:k + 1], a)), None)
            if last is None:
                continue
            if depth == len(loops) - 1 or dataflow.loop_index(o) is None \
                    or not an.dominates(defs[0], o) or last + 1 == len(o.body) \
                    or self._jumps_in(o) or any(
                    not isinstance(x, ast.For) and not dataflow.elements_read_only([x], a)
                    for x in o.body[:last + 1]):
                return None  # (written other than by loops: a copy may cost more)
            lo, hi = POS.get(o.body[last + 1]), END.get(o)
            return (o, last) if lo <= POS.get(d) <= POS.get(s) <= hi else None
        return None

    def refill(self, a: str, o: ast.For, last: int) -> float | None:
        """The cost per element of running ``o.body[:last + 1]`` again in the adjoint to
        give back the array ``a`` (kept once per trip of ``o`` after ``o.body[last]``, see
        ``kept``) instead of storing it: where it fills every element of ``a`` from values
        the adjoint still has (the module's preconditions 9 to 12); else None."""
        fill = o.body[:last + 1]
        defs = [x for x in self.an.defs.get(a, []) if a in dataflow.binds(x)]
        if len(defs) != 1 or not self._fills(a, defs[0], fill):
            return None
        total = 0.0
        for s in walk_stmts(fill):
            if isinstance(s, (ast.Assign, ast.AugAssign)):
                targets = s.targets if isinstance(s, ast.Assign) else [s.target]
                if len(targets) != 1 or not self._scalar_or_element(targets[0], a):
                    return None
                priced = [s.value if isinstance(s, ast.Assign) else
                          ast.BinOp(left=clone(s.target), op=s.op, right=s.value)]
            elif isinstance(s, ast.If):
                priced = [s.test]
            elif dataflow.loop_index(s) is not None and not is_prange(s) \
                    and s.iter.func.id == "range":
                priced = []
            else:
                return None
            c = self._price(priced)
            if c is None:
                return None
            total += c
        if total > TAPE_COST or not self._still_held(a, fill, o):
            return None
        return total

    def _price(self, exprs: list[ast.expr]) -> float | None:
        """What the operations of ``exprs`` cost (the primitive table); None where one is
        not pure or not priced."""
        out = 0.0
        for e in exprs:
            if not is_pure(e, self.env):
                return None
            for x in walk(e):
                if isinstance(x, (ast.BinOp, ast.UnaryOp, ast.Call)):
                    c, _ = op_cost(x, self.env)
                    if c is None:
                        return None
                    out += c
        return out

    def _scalar_or_element(self, t: ast.expr, a: str) -> bool:
        """Is the target ``t`` a scalar name or an element of ``a`` (precondition 10)?"""
        if isinstance(t, ast.Name):
            k = self.an.kind(t.id)
            return not k.is_array and k.ndim == 0
        return isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) \
            and t.value.id == a

    def _fills(self, a: str, alloc: ast.stmt, fill: list[ast.stmt]) -> bool:
        """Precondition 9: ``a = np.empty(E)`` and a loop ``for j in range(E)`` of ``fill``
        sets ``a[j]`` at the top of its body, ``E``'s names never rebound after."""
        v = alloc.value
        if not (dataflow.plain_binding(alloc) == a
                and dict(dataflow.fresh_binds(alloc, self.env)).get(a)
                and isinstance(v, ast.Call) and len(v.args) == 1
                and not isinstance(v.args[0], (ast.Tuple, ast.List))
                and self.an.kind(a).ndim == 1):
            return False
        size = ast.dump(v.args[0])
        if any(self.an.may_redefine_after(m, alloc, include_self=False)
               for m in loaded_names(v.args[0])):
            return False
        for s in fill:
            if not (isinstance(s, ast.For) and isinstance(s.target, ast.Name)
                    and dataflow.loop_index(s) is not None
                    and isinstance(s.iter, ast.Call) and not s.iter.keywords
                    and (len(s.iter.args) == 1 or len(s.iter.args) == 2 and isinstance(
                        s.iter.args[0], ast.Constant) and s.iter.args[0].value == 0)
                    and ast.dump(s.iter.args[-1]) == size):
                continue
            if any(isinstance(x, ast.Assign) and len(x.targets) == 1
                   and isinstance(x.targets[0], ast.Subscript)
                   and isinstance(x.targets[0].value, ast.Name) and x.targets[0].value.id == a
                   and isinstance(x.targets[0].slice, ast.Name)
                   and x.targets[0].slice.id == s.target.id for x in s.body):
                return True
        return False

    def _still_held(self, a: str, fill: list[ast.stmt], o: ast.For) -> bool:
        """Precondition 11: what ``fill`` reads but does not make itself holds in the
        adjoint the value it holds in the forward trip; and it reads no element of ``a``."""
        an = self.an
        made = {x.id for s in fill for x in walk(s)
                if isinstance(x, ast.Name) and isinstance(x.ctx, ast.Store)}
        if a in {x.id for s in fill for x in walk(s)
                 if isinstance(x, ast.Name) and isinstance(x.ctx, ast.Load)} - {
                    t.value.id for s in walk_stmts(fill) if isinstance(s, ast.Assign)
                    for t in s.targets if isinstance(t, ast.Subscript)}:
            return False  # (a load of ``a`` other than as the base of its writes)
        for m in exposed_reads(fill) - {a}:
            if m in made:
                return False  # carried from one trip to the next
            if an.kind(m).is_array and not self.never_written(m):
                return False
            if an.recomputed_index(m, fill[0]):
                continue
            defs = an.defs.get(m, [])
            if len(defs) > 1 or defs and not (
                    an.dominates(defs[0], o)
                    and not an.may_redefine_after(m, defs[0], include_self=False)):
                return False
        return True

    def _heads(self, n: str, loop: ast.For, s: ast.stmt, defs: list[ast.stmt]
               ) -> ast.expr | None:
        """``e`` where ``n = e``, ``n``'s one definition, is at the top of ``loop``'s body,
        dominates ``s``, nothing in the body leaves it, and ``e`` is invariant in ``loop``."""
        if len(defs) != 1 or dataflow.plain_binding(defs[0]) != n:
            return None
        d = defs[0]
        if BLOCK.get(d) != id(loop.body) or not self.an.dominates(d, s) \
                or self._jumps_in(loop):
            return None
        return clone(d.value) if self.typed().invariant(loop, d.value) else None

    def _jumps_in(self, loop: ast.stmt) -> bool:
        """Does a ``break``, ``continue``, ``return`` or ``raise`` lie in ``loop``'s body
        (found once per loop: asked per stored value, a walk each time was quadratic)."""
        hit = self._jumps.get(id(loop))
        if hit is None:
            hit = self._jumps[id(loop)] = any(
                isinstance(x, (ast.Break, ast.Continue, ast.Return, ast.Raise))
                for x in walk_stmts(loop.body))
        return hit

    def _place(self) -> dict[int, tuple[list[ast.stmt], int]]:
        if self._at is None:
            self._at = {}
            stack = [self.body]
            while stack:
                block = stack.pop()
                for k, x in enumerate(block):
                    self._at[id(x)] = (block, k)
                    stack += [b for b in (getattr(x, "body", None), getattr(x, "orelse", None))
                              if isinstance(b, list)]
        return self._at

    def same_value(self, n1: str, n2: str, s: ast.stmt) -> bool:
        """Does ``n2`` hold the value ``n1`` holds where ``s`` reads both: each has one
        plain definition, ``n2``'s later in the same block, of the same expression of
        element reads and arithmetic (no call), ``n2``'s is ``s`` or dominates it (so both
        come from one pass through that block), and nothing from ``n1``'s definition to
        ``n2``'s binds a name it reads or writes into a buffer it reads (under any name
        that may share it)?  Then the adjoint needs one tape for both."""
        d1, d2 = (self.an.defs.get(n, []) for n in (n1, n2))
        if len(d1) != 1 or len(d2) != 1 or dataflow.plain_binding(d1[0]) != n1 \
                or dataflow.plain_binding(d2[0]) != n2:
            return False
        d1, d2 = d1[0], d2[0]
        if not (d2 is s or self.an.dominates(d2, s)):
            return False
        at = self._place()
        (b1, k1), (b2, k2) = at.get(id(d1), (None, -1)), at.get(id(d2), (None, -2))
        if b1 is None or b1 is not b2 or k1 >= k2 or ast.dump(d1.value) != ast.dump(d2.value) \
                or any(isinstance(x, (ast.Call, ast.NamedExpr)) for x in walk(d1.value)):
            return False
        read = {x.id for x in walk(d1.value) if isinstance(x, ast.Name)}
        touched = set().union(*(self.flow.shares(r)
                                for r in read))
        rebound = dataflow.binds_in(b1[k1:k2], elements=False)
        written = {x for t in walk_stmts(b1[k1:k2])
                   for x in set(dataflow.binds(t, elements=True, appends=True))
                   - set(dataflow.binds(t))}
        return not (rebound & read or written & (read | touched))


def loaded_names(e: ast.expr) -> set[str]:
    """The names ``e`` reads."""
    return {x.id for x in walk(e) if isinstance(x, ast.Name)}


def compose(a: str, parts: list[ast.expr], sl: ast.expr) -> ast.Subscript:
    """``a[parts..., sl...]``: the element of the view ``a[parts]`` at ``sl``."""
    inner = list(sl.elts) if isinstance(sl, ast.Tuple) else [sl]
    idx = [*parts, *(clone(x) for x in inner)]
    return ast.Subscript(value=ast.Name(id=a, ctx=ast.Load()),
                         slice=idx[0] if len(idx) == 1 else ast.Tuple(elts=idx, ctx=ast.Load()),
                         ctx=ast.Load())


__all__ = ["ReadPolicy", "compose"]
