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
5. either nothing in ``L`` binds the name and it is bound on every path to ``L`` (a
   definition dominates ``L``, or a statement that does binds it on every path through
   it, ``dataflow.must_binds``: both branches of an ``if``; its value at ``L``'s entry is
   the one every trip reads), or its one definition
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

An array a loop ``O`` carries from one trip to the next (read in the body, rebound at its
end: ``y = y + h * dy``) is stored once per trip, by reference, at the trip's start and
given back at the start of the trip's adjoint, where the body's reads of it are read
again (``ReadPolicy.carried_at``).  Preconditions:

13. ``O`` is a ``for`` over ``range`` in no checkpointed or ``prange`` loop, nothing in its
    body leaves it; the planner refuses functions with checkpointed regions;
14. in ``O`` the array is bound once, by a statement ``O.body[r]`` of the body's top level
    to a new array (an allocation or whole-array arithmetic), a binding before ``O``
    dominates it, nothing writes its buffer (``untouched``) or shares it, and no
    statement after ``O.body[r]`` in the body names it (the adjoint of the trip then
    wants only the value the trip started with, which its reference still holds);
15. the read is before ``O.body[r]``, in a loop inside ``O`` (read element by element:
    one reference per trip costs less than a tape per element; a cost rule).

Arrays the first part of ``O``'s body makes afresh each trip (the stages of a Runge-Kutta
step, ``y1 = y + h * k1 / 2.0``) are not stored at all where the first part can run again
at the start of the trip's adjoint, from what the adjoint still has, rebinding them under
their own names (``ReadPolicy.remake``; one rerun per trip for all of them).  Preconditions:

16. each array so remade has one definition, ``O.body[k]``, binding it to a new array; no
    buffer is shared with it or written into; an element of it is read in a loop after
    ``O.body[k]`` (what would be taped element by element); ``O`` is as in 13;
17. the part rerun, ``O.body[:last + 1]`` (``last``: the last such array's definition),
    binds scalars and arrays, writes elements only of arrays it allocates itself, loops
    over ``range`` with no loop inside a loop, branches, is pure, and reads no name
    before binding it (no value carried from the trip before);
18. everything else it reads holds in the adjoint the value it held in the forward trip:
    as in 11, or an array carried by ``O`` and bound after ``O.body[last]`` (13 and 14:
    given back first, at the start of the trip's adjoint);
19. its operations cost, per element, no more than the tapes of the arrays remade
    (``TAPE_COST`` each; the primitive table).
The rerun binds fresh names except for the arrays remade, each of which has that one
definition: in the trip's adjoint they then hold what the forward trip gave them.

An array stored for the adjoint is stored once per run of a loop it is invariant in, as a
scalar is (preconditions 4 and 5: ``_t9 = -Y`` at the top of a gradient-descent step is
pushed once, by reference, before the loop, not every step), where besides:

20. its one definition binds it to a new array (an allocation, whole-array arithmetic:
    ``_alone_new``), nothing writes into its buffer and no other name, alias group or view
    shares it: the one array pushed then holds, in every trip's adjoint, the value each
    trip's own array held (the adjoint reads it, never writes it).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

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
        self._owner: dict[int, ast.stmt] = {}
        self._typed: dataflow.Dataflow | None = None
        self._jumps: dict[int, bool] = {}
        self._carry: dict[tuple[int, str], int | None] = {}
        self._untouched: dict[str, bool] = {}
        self._remakes: dict[int, Remake | None] = {}

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
            # (``an.aliases(a)`` among ``shares``: views and swaps)
            hit = self._memo[a] = self._none_written(self.flow.shares(a))
        return hit

    def untouched(self, a: str) -> bool:
        """``never_written`` with the kinds: a scalar read from an array (``t = x[0]``)
        shares no buffer with it, so writing ``t`` into another array writes none of ``a``."""
        hit = self._untouched.get(a)
        if hit is None:
            group = self.typed().shares(a) | self.an.aliases(a)
            hit = self._untouched[a] = self._none_written(group)
        return hit

    def _none_written(self, group: set[str]) -> bool:
        """No name of ``group`` is written into (assigned into, updated in place, handed
        to a call that writes it, or stored into)."""
        an = self.an
        return not (group & (set(an.written) | set(an.aug_written) | set(an.args_written)
                             | set(an.inplace) | self._stored_into()))

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
        """Where the scalar (or array) ``n``, stored for the adjoint of ``s``, can be stored
        once per run of a loop ``L`` around ``s`` instead of once per trip (the module's
        preconditions 4, 5 and 20): ``(L, None)`` where ``L`` does not bind ``n`` (``n`` is
        pushed before ``L``), ``(L, e)`` where ``n = e`` heads ``L``'s body with ``e``
        invariant there (``e`` is pushed); the outermost such loop; else None."""
        an = self.an
        k = an.kind(n)
        loops = an.enclosing_loops(s)
        if not (k.is_array or k.ndim == 0) or not loops or any(
                CHECKPOINTED.get(x) or is_prange(x) for x in loops):
            return None
        defs = an.defs.get(n, [])
        if k.is_array and not (len(defs) == 1 and self._alone_new(n, defs[0])):
            return None  # precondition 20
        for loop in loops:  # outermost first: the fewest pushes
            if dataflow.loop_index(loop) is None:
                continue
            if any(POS.get(loop) <= POS.get(d) <= END.get(loop) for d in defs):
                e = self._heads(n, loop, s, defs)
                if e is not None:
                    return loop, e
                continue
            if (any(an.dominates(d, loop) for d in defs) or self._bound_on_entry(n, loop)) \
                    and self.typed().invariant(loop, ast.Name(id=n, ctx=ast.Load())):
                return loop, None
        return None

    def kept(self, a: str, d: ast.stmt, s: ast.stmt) -> tuple[ast.For, int] | None:
        """``(O, k)`` where the array ``a``, read by ``d`` for the adjoint of ``s``, is given
        back at the start of each trip's adjoint of the loop ``O`` and ``d`` read again:
        stored after ``O.body[k]`` (preconditions 6 to 8), stored at the trip's start
        (``k`` = -1, 13 to 15) or remade by rerunning ``O.body[:k + 1]`` (16 to 19)."""
        return self._written_first(a, d, s) or self._carried(a, d) or self._remade(a, d, s)

    def _written_first(self, a: str, d: ast.stmt, s: ast.stmt) -> tuple[ast.For, int] | None:
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
        made = dataflow.binds_in(fill, elements=False)
        if a in {x.id for s in fill for x in walk(s)
                 if isinstance(x, ast.Name) and isinstance(x.ctx, ast.Load)} - {
                    t.value.id for s in walk_stmts(fill) if isinstance(s, ast.Assign)
                    for t in s.targets if isinstance(t, ast.Subscript)}:
            return False  # (a load of ``a`` other than as the base of its writes)
        return all(m not in made and self._held(m, o, fill[0])
                   for m in exposed_reads(fill) - {a})  # (made: carried between trips)

    def _held(self, m: str, o: ast.For, first: ast.stmt, typed: bool = False) -> bool:
        """Does ``m``, read by a rerun of part of ``o``'s body starting at ``first``, hold
        in the trip's adjoint the value it held in the forward trip (precondition 11)?
        ``typed``: judge whether an array is written with the kinds (``untouched``)."""
        an = self.an
        if an.kind(m).is_array and not (self.untouched(m) if typed else self.never_written(m)):
            return False
        if an.recomputed_index(m, first):
            return True
        defs = an.defs.get(m, [])
        return not (len(defs) > 1 or defs and not (
            an.dominates(defs[0], o)
            and not an.may_redefine_after(m, defs[0], include_self=False)))

    def _trip_loop(self, o: ast.stmt) -> bool:
        """Precondition 13: ``o`` is a ``for`` over ``range``, in no checkpointed or
        ``prange`` loop, and nothing in its body leaves it."""
        return isinstance(o, ast.For) and dataflow.loop_index(o) is not None \
            and o.iter.func.id == "range" and not self._jumps_in(o) and not any(
                CHECKPOINTED.get(x) or is_prange(x) for x in [*self.an.enclosing_loops(o), o])

    def _alone_new(self, a: str, st: ast.stmt) -> bool:
        """``st`` binds the array ``a`` to a new array (an allocation, whole-array
        arithmetic), and no other name, alias group or view shares its buffer."""
        an = self.an
        fresh = dict(dataflow.fresh_binds(st, self.env)).get(a) or (
            dataflow.plain_binding(st) == a and isinstance(st.value, (ast.BinOp, ast.UnaryOp)))
        return bool(fresh) and an.kind(a).is_array and self.untouched(a) \
            and self.typed().shares(a) == {a} and an.aliases(a) == {a} \
            and a not in an.views and not any(b == a for b, _ in an.views.values())

    def carried_at(self, a: str, o: ast.stmt) -> int | None:
        """``r`` where ``o`` carries the array ``a`` from one trip to the next, rebinding it
        at ``o.body[r]`` (the module's preconditions 13 and 14); else None."""
        key = (id(o), a)
        if key not in self._carry:
            self._carry[key] = self._carry_index(a, o)
        return self._carry[key]

    def _carry_index(self, a: str, o: ast.stmt) -> int | None:
        an = self.an
        if not self._trip_loop(o):
            return None
        lo, hi = POS.get(o), END.get(o)
        defs = an.defs.get(a, [])
        inside = [x for x in defs if lo <= POS.get(x) <= hi]
        if len(inside) != 1 or BLOCK.get(inside[0]) != id(o.body) \
                or not self._alone_new(a, inside[0]) \
                or not any(an.dominates(x, o) for x in defs if x is not inside[0]):
            return None
        r = next(k for k, x in enumerate(o.body) if x is inside[0])
        if any(isinstance(x, ast.Name) and x.id == a for st in o.body[r + 1:] for x in walk(st)):
            return None
        return r

    def _carried(self, a: str, d: ast.stmt) -> tuple[ast.For, int] | None:
        """``(O, -1)`` where ``O`` carries ``a`` and ``d`` reads it element by element in a
        loop inside ``O`` before ``O`` rebinds it (precondition 15)."""
        loops = self.an.enclosing_loops(d)
        for depth in range(len(loops) - 2, -1, -1):  # a loop inside O holds the read
            o = loops[depth]
            r = self.carried_at(a, o)
            if r is not None:
                return (o, -1) if POS.get(d) < POS.get(o.body[r]) else None
        return None

    def _remade(self, a: str, d: ast.stmt, s: ast.stmt) -> tuple[ast.For, int] | None:
        """``(O, k)`` where ``a``, made by ``O.body[k]``, is remade at the start of each
        trip's adjoint (``remake``) and ``d`` and ``s`` come after ``O.body[k]`` in ``O``."""
        defs = self.an.defs.get(a, [])
        loops = self.an.enclosing_loops(defs[0]) if len(defs) == 1 else []
        if not loops or BLOCK.get(defs[0]) != id(loops[-1].body):
            return None
        o = loops[-1]
        rm = self.remake(o)
        if rm is None or a not in rm.arrays:
            return None
        k = next(j for j, x in enumerate(o.body) if x is defs[0])
        ok = POS.get(o.body[k + 1]) <= POS.get(d) <= POS.get(s) <= END.get(o)
        return (o, k) if ok else None

    def remake(self, o: ast.stmt) -> Remake | None:
        """What rerunning the first part of ``o``'s body at the start of each trip's adjoint
        gives back (the module's preconditions 16 to 19); None where it does not hold."""
        if id(o) not in self._remakes:
            self._remakes[id(o)] = self._plan_remake(o) if self._trip_loop(o) else None
        return self._remakes[id(o)]

    def _plan_remake(self, o: ast.For) -> Remake | None:
        arrays: dict[str, int] = {}
        for k, st in enumerate(o.body):  # precondition 16
            a = dataflow.plain_binding(st)
            if a and len(self.an.defs.get(a, [])) == 1 and self._alone_new(a, st) \
                    and _read_in_loops(a, o.body[k + 1:]):
                arrays[a] = k
        if not arrays:
            return None
        last = max(arrays.values())
        fill = o.body[:last + 1]
        made = dataflow.binds_in(fill, elements=False)
        if not self._rerunnable(fill, made) or exposed_reads(fill) & made:
            return None
        carried = []
        for m in sorted(exposed_reads(fill)):  # precondition 18
            if self._held(m, o, fill[0], typed=True):
                continue
            r = self.carried_at(m, o)
            if r is None or r <= last:
                return None
            carried.append(m)
        cost = self._rerun_cost(fill)
        if cost is None or cost > TAPE_COST * len(arrays):
            return None  # precondition 19
        return Remake(last, frozenset(arrays), tuple(carried), cost)

    def _rerunnable(self, fill: list[ast.stmt], made: set[str]) -> bool:
        """Precondition 17's statements: scalar and array bindings, element writes of arrays
        ``fill`` allocates, ``range`` loops with no loop inside, branches."""
        allocated = {a for st in walk_stmts(fill)
                     for a, new in dataflow.fresh_binds(st, self.env)
                     if new}
        for st in walk_stmts(fill):
            if isinstance(st, ast.For):
                if not (dataflow.loop_index(st) is not None and st.iter.func.id == "range"
                        and not any(isinstance(x, (ast.For, ast.While))
                                    for x in walk_stmts(st.body))):
                    return False
            elif isinstance(st, ast.Assign) and len(st.targets) == 1:
                t = st.targets[0]
                if not (isinstance(t, ast.Name) or isinstance(t, ast.Subscript)
                        and isinstance(t.value, ast.Name) and t.value.id in allocated
                        and t.value.id in made):
                    return False
            elif isinstance(st, ast.AugAssign):
                k = self.an.kind(st.target.id) if isinstance(st.target, ast.Name) else None
                if k is None or k.is_array or k.ndim != 0:
                    return False
            elif not isinstance(st, ast.If):
                return False
        return True

    def _rerun_cost(self, fill: list[ast.stmt]) -> float | None:
        """What ``fill`` costs per element (its allocations nothing); None where an
        expression is not pure or not priced."""
        total = 0.0
        for st in walk_stmts(fill):
            if isinstance(st, ast.Assign) and any(
                    new for _, new in dataflow.fresh_binds(st, self.env)):
                c = 0.0 if is_pure(st.value, self.env) else None
            elif isinstance(st, ast.Assign):
                c = self._price([st.value])
            elif isinstance(st, ast.AugAssign):
                c = self._price([ast.BinOp(left=clone(st.target), op=st.op, right=st.value)])
            elif isinstance(st, ast.If):
                c = self._price([st.test])
            else:
                c = self._price(list(st.iter.args))
            if c is None:
                return None
            total += c
        return total

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
        """Each statement's block and place in it (and ``_owner``: each nested block's
        statement)."""
        if self._at is None:
            self._at = {}
            stack = [self.body]
            while stack:
                block = stack.pop()
                for k, x in enumerate(block):
                    self._at[id(x)] = (block, k)
                    for b in (getattr(x, "body", None), getattr(x, "orelse", None)):
                        if isinstance(b, list):
                            self._owner[id(b)] = x
                            stack.append(b)
        return self._at

    def _bound_on_entry(self, n: str, loop: ast.stmt) -> bool:
        """Precondition 5's definition before ``loop`` where none dominates it alone: a
        statement before ``loop`` in its block, or in a block around it, binds ``n`` on
        every path through it (``dataflow.must_binds``: ``u`` bound in both branches of an
        ``if``, as an inlined helper's returns bind its caller's target)."""
        at = self._place()
        x: ast.stmt | None = loop
        while x is not None and id(x) in at:
            block, k = at[id(x)]
            if any(n in dataflow.must_binds(y) for y in block[:k]):
                return True
            x = self._owner.get(id(block))
        return False

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


@dataclass(frozen=True)
class Remake:
    """What rerunning ``O.body[:last + 1]`` at the start of each trip's adjoint gives back
    (``ReadPolicy.remake``): ``arrays`` under their own names, from the arrays ``carried``
    (given back first), at ``cost`` per element."""

    last: int
    arrays: frozenset[str]
    carried: tuple[str, ...]
    cost: float


def _read_in_loops(a: str, stmts: list[ast.stmt]) -> bool:
    """Is an element of ``a`` read in a loop of ``stmts``?"""
    return any(isinstance(x, ast.Subscript) and isinstance(x.value, ast.Name)
               and x.value.id == a and isinstance(x.ctx, ast.Load)
               for st in walk_stmts(stmts) if isinstance(st, ast.For)
               for b in st.body for x in walk(b))


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


__all__ = ["ReadPolicy", "Remake", "compose"]
