"""Tapes: what the adjoint of a statement reads, and whether to push, restore or recompute it.

A value is pushed only when something may redefine it before the adjoint runs, and
only when recomputing it would cost more (``recompute.py`` plans it, ``analysis/cost.py``
prices and decides: element reads of unwritten arrays, integer arithmetic, operators
and scalar calls priced by the primitive table, from values still available).  Scalars
go to typed arrays reserved once per loop; arrays to lists of snapshots.

An array the adjoint of a statement reads only for its shape (``unbroadcast(g, t)``,
``t.shape``, ``len(t)``: ``shape_only.read_for_shape_only``) is not stored whole
(``Planner.shape_only``).  Where its shape class is an argument's (``same_shape_arg``:
elementwise operations and allocations of that argument's extents, on no assumption
checked at run time, the argument never rebound, both float of one rank) the adjoint
reads the argument instead and nothing is stored; else a stand-in of its shape is pushed
(``shape_stand_in(t)``, one zero's memory).  Either way it is given to the adjoint under
another name, never restored under its own, so no other statement's adjoint (or
recomputation) takes it for the value; a compound statement's header is left alone.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ...kernels import helpers, snapshots
from ..analysis import dataflow
from ..analysis.cost import TAPE_COST, note
from ..analysis.kinds import Kind
from ..analysis.shape_classes import ShapeClasses
from ..astutil import binop
from ..backend.emit import comment
from ..backend.shape_only import (
    read_for_shape_only,
    shape_only_and_loads,
    shape_reading_names,
    stand_in,
)
from ..front.desugar import assign, const, name
from ..front.inline import rename, renamed_copy
from ..ir import Snapshots
from ..nodes import clone, loaded_ids, walk
from ..notes import CHECK, DECISION, POS, PUSH, TAPED, TRIP_ROOM
from .policy import Remake
from .recompute import Capture, Captures, Planner
from .unit import Part, Unit


@dataclass
class Hoist:
    """A value stored once per run of a loop (``ReadPolicy.hoisted``): its name, the
    invariant expression pushed where it is made in the loop (None: the name itself),
    the name the adjoint pops it into, and why it is stored."""

    name: str
    expr: ast.expr | None
    target: str
    why: str


class Tapes(Part):
    """The reverse pass's storage: captures written out from the planner's record, the
    tapes and slot storage to declare, and the names the adjoint sweep restores."""

    def __init__(self, unit: Unit, planner: Planner, fwd_vars: set[str]):
        super().__init__(unit)
        self.planner = planner
        #: the names the forward sweep has defined so far (shared with the statements)
        self.fwd_vars = fwd_vars
        #: (tape, None for a list or (dtype, cursor) for a typed array), to declare
        self.declared: list[tuple[str, tuple[str, str] | None]] = []
        #: loop id -> the typed tapes (and cursors) reserved before it, once per trip
        self.reserve: dict[int, list[tuple[str, str]]] = {}
        #: the list tapes pushed with copies of float arrays (``Adjoint.snapshots``)
        self.snapshot_tapes: list[str] = []
        #: (name, dtype) of the checkpointed loops' slot storage, declared empty at the top
        #: and grown by ``tape_reserve`` where a loop starts (kept like the typed tapes)
        self.slot_buffers: list[tuple[str, str]] = []
        #: the names the adjoint sweep gives back (``Sweeps.restored``)
        self.restored_names: set[str] = set()
        #: outputs of the statement being reversed that a later statement's adjoint restored
        self.made: set[str] = set()
        #: loop id -> the values stored once per run of it (``Hoist``), and (loop id, name,
        #: under its own name) -> the name each is popped into
        self.hoists: dict[int, list[Hoist]] = {}
        self._hoisted: dict[tuple[int, str, bool], str] = {}
        #: the generated module's name of ``unbroadcast`` (the statements' too)
        self.unb = self.global_name("unbroadcast", helpers.unbroadcast)
        self._readers: tuple[int, tuple[str, ...]] = (-1, ())
        self._classes: ShapeClasses | None = None

    def captures(self, s: ast.stmt, rev: list, outputs: set[str], fwd_before,
                 fwd_after, restored: set[str], compound: bool,
                 reads: set[str] | None = None) -> list[ast.stmt]:
        """Push what the adjoint of ``s`` reads that may change before the adjoint runs,
        or recompute it where ``analysis.cost.decide`` finds that cheaper (the planner's
        ``Captures``, written out here).

        ``rev`` is renamed in place where a value is popped into a fresh name; for a
        compound statement ``reads`` (its header's names) and ``rev`` (its header
        expressions) are given by the caller.  The decisions go into the code as one
        comment each way (what was stored, at the pushes; what was recomputed).
        """
        shaped: set[str] = set()
        if reads is None and not compound:
            shaped, reads = shape_only_and_loads(rev, self.shape_readers())
        elif reads is None:
            reads = loaded_ids(ast.Module(body=rev, type_ignores=[]))
        elif not compound:
            shaped = read_for_shape_only(rev, self.shape_readers())
        # outputs of ``s`` a later statement's adjoint restored: they hold what s made
        made = set() if compound else self.made
        record = self.planner.plan(s, set(reads) & self.fwd_vars, outputs, restored,
                                   compound, made, shaped)
        pops: list[ast.stmt] = []
        mapping: dict[str, str] = {}
        into: dict[str, str] = {}  # a stored value -> the name the adjoint pops it into
        if record.joint is not None:  # one comment for the values recomputed together
            pops += [decision(said) for said in note([record.joint], stored=False)]
        as_args = self.shaped_as_args(record, mapping, pops)
        for c in record.values:
            if c.name in as_args:
                continue
            if c.decision.stored:
                fwd = fwd_after if c.is_out else fwd_before
                if c.shape:
                    pops += self.store_shape(c, mapping, fwd)
                elif c.twin is not None:
                    pops += self.twin(c, into[c.twin], mapping)
                elif c.hoist is not None:
                    into[c.name] = self.hoist(c, mapping)
                elif not c.next_trip:
                    pops += self.store(c, s, mapping, fwd, into)
                continue
            if record.joint is None:  # each recomputed value's comment heads its statements
                pops += [decision(said) for said in note([c.decision], stored=False)]
            pops += self.recomputed(c, mapping)
        if mapping:
            rev[:] = [rename(x, mapping) for x in rev]
        stored = [c.decision for c in record.values
                  if c.decision.stored and not c.next_trip and c.twin is None
                  and c.hoist is None and c.name not in as_args]
        for said in note(stored, stored=True):
            at = fwd_before if any(d.name not in outputs for d in stored) else fwd_after
            where = next((k for k, x in enumerate(at) if PUSH.get(x)), len(at))
            c = decision(said)
            PUSH.set(c, True)  # goes with the pushes where a region runs without tapes
            at.insert(where, c)
        return pops

    def recomputed(self, c: Capture, mapping: dict[str, str]) -> list[ast.stmt]:
        """The adjoint's statements giving ``c`` again from its plan (its intermediate
        values restored on the way), under its name or a fresh one (into ``mapping``)."""
        plan = c.decision.plan
        pops = [assign(m, e) for m, e in plan.steps]
        self.restored_names.update(m for m, _ in plan.steps)
        if c.restores:
            pops.append(assign(c.name, plan.expr))  # earlier statements reuse it
            self.restored_names.add(c.name)
        else:
            fresh = self.namer.fresh("_" + c.name.lstrip("_") + "_")
            mapping[c.name] = fresh
            pops.append(assign(fresh, plan.expr))
        return pops

    def store(self, c: Capture, s: ast.stmt, mapping: dict[str, str],
              fwd: list[ast.stmt], into: dict[str, str]) -> list[ast.stmt]:
        """Push ``c`` on a tape of its own (into ``fwd``); the adjoint's pop, under its name
        or a fresh one (into ``mapping``; ``into`` gains the name it is popped into)."""
        push, pop = self.new_tape(self.namer.tape(c.name), c.name, s)
        fwd.extend(push)
        if c.restores:
            self.restored_names.add(c.name)
            into[c.name] = c.name
            return pop(c.name)
        fresh = self.namer.fresh("_" + c.name.lstrip("_") + "_")
        mapping[c.name] = fresh
        into[c.name] = fresh
        return pop(fresh)

    def shaped_as_args(self, record: Captures, mapping: dict[str, str],
                       pops: list[ast.stmt]) -> set[str]:
        """The values of ``record`` read only for their shape that have an argument's shape
        (``same_shape_arg``): read as that argument (``mapping``), nothing stored; ``pops``
        gains a comment per argument."""
        by: dict[str, list[str]] = {}
        for c in record.values:
            arg = self.same_shape_arg(c.name) if c.shape else None
            if arg is not None:
                by.setdefault(arg, []).append(c.name)
                mapping[c.name] = arg
        for arg, ns in by.items():
            pops.append(decision(f"{', '.join(ns)}: only the shape is read, {arg}'s: read "
                                 f"from {arg}, not stored"))
        return {n for ns in by.values() for n in ns}

    def store_shape(self, c: Capture, mapping: dict[str, str], fwd: list[ast.stmt]
                    ) -> list[ast.stmt]:
        """Push a stand-in of ``c``'s shape and dtype (``shape_only.stand_in``: no memory of
        its own) instead of ``c``, read only for its shape; popped into a fresh name."""
        tape = self.namer.tape(c.name)
        self.declared.append((tape, None))
        push = ast.Expr(value=ast.Call(
            func=ast.Attribute(value=name(tape), attr="append", ctx=ast.Load()),
            args=[stand_in(c.name, self.global_name("shape_stand_in",
                                                    helpers.shape_stand_in))],
            keywords=[]))
        PUSH.set(push, True)
        fwd.append(push)
        fresh = self.namer.fresh("_" + c.name.lstrip("_") + "_")
        mapping[c.name] = fresh
        return [assign(fresh, ast.Call(func=ast.Attribute(value=name(tape), attr="pop",
                                                          ctx=ast.Load()),
                                       args=[], keywords=[])),
                *self.shape_check(c.name, fresh)]

    def same_shape_arg(self, n: str) -> str | None:
        """The argument ``p`` the function never binds whose shape the float array ``n``
        provably has wherever it is bound (``ShapeClasses``: elementwise operations of
        arrays of ``p``'s shape and scalars, allocations of ``p``'s extents), on no
        assumption checked at run time; else None."""
        if self.planner.policy is None or self.an.kind(n).cls != "f":
            return None
        if self._classes is None:
            kinds = self.an.kinds
            ndims = {m: k.ndim for m, k in kinds.items() if k.ndim is not None
                     and (k.cls == "f" or (k.cls in "ib" and k.ndim == 0))}
            self._classes = ShapeClasses(self.planner.policy.body, ndims, self.env,
                                         list(self.args))
        classes = self._classes
        p = classes.of(n)
        if p is None or p not in classes.fixed or p not in self.args or classes.checks(p) \
                or self.an.kind(p) != self.an.kind(n):
            return None
        return p

    def shape_readers(self) -> tuple[str, ...]:
        """The generated module's names of the helpers reading an argument only for its
        shape (``unbroadcast``...), found again when the module gains names."""
        if self._readers[0] != len(self.env):
            self._readers = (len(self.env), shape_reading_names(self.env))
        return self._readers[1]

    def twin(self, c: Capture, popped: str, mapping: dict[str, str]) -> list[ast.stmt]:
        """``c``, the same value as its twin popped into ``popped``: one tape for both."""
        target = c.name if c.restores else self.namer.fresh("_" + c.name.lstrip("_") + "_")
        pops = [decision(f"{c.name} is {c.twin}: the same value, stored once"),
                assign(target, name(popped))]
        if c.restores:
            self.restored_names.add(c.name)
        else:
            mapping[c.name] = target
        return pops

    def hoist(self, c: Capture, mapping: dict[str, str]) -> str:
        """Note ``c``, stored once per run of the loop ``c.hoist`` names (pushed and popped
        by ``hoisted``); the adjoint reads it under the name it is popped into (returned)."""
        loop, e = c.hoist
        key = (id(loop), c.name, c.restores)
        target = self._hoisted.get(key)
        if target is None:
            target = c.name if c.restores else self.namer.fresh("_" + c.name.lstrip("_") + "_")
            self._hoisted[key] = target
            self.hoists.setdefault(id(loop), []).append(
                Hoist(c.name, e, target, c.decision.reason))
        if c.restores:
            self.restored_names.add(c.name)
        else:
            mapping[c.name] = target
        return target

    def hoisted(self, loop: ast.For, fwd_range: tuple, rev_range: tuple, restored: set[str]
                ) -> tuple[list[ast.stmt], list[ast.stmt]]:
        """The pushes before ``loop`` of the values stored once per run of it, and their
        pops before its adjoint (an invariant expression only where the loop makes a trip:
        ``fwd_range`` and ``rev_range`` are its ``(start, stop, step)`` in each sweep).
        ``restored`` (the loop's block's) gains the names popped under their own name that
        the loop does not bind: after its adjoint they hold their value at its entry."""
        before: list[ast.stmt] = []
        after: list[ast.stmt] = []
        for h in self.hoists.pop(id(loop), []):
            c = decision(f"stored {h.name} once per loop over {loop.target.id}, not per trip:"
                         f" {h.why}")
            PUSH.set(c, True)
            push, pop = self.new_tape(self.namer.tape(h.name), h.name, loop)
            pops = pop(h.target)
            if h.expr is not None:  # the value the loop's first trip gives the name anyway
                push = [self._if_trips(fwd_range, [assign(h.name, h.expr), *push])]
                pops = [self._if_trips(rev_range, pops)]
            elif h.target == h.name:
                restored.add(h.name)
            before += [c, *push]
            after += pops
        return before, after

    def _if_trips(self, rng: tuple, body: list[ast.stmt]) -> ast.stmt:
        """``if <range(*rng) makes a trip>: body`` (a push: ``PUSH``)."""
        test = ast.Compare(left=self.trips(*rng), ops=[ast.Gt()], comparators=[const(0)])
        out = ast.If(test=test, body=body, orelse=[])
        PUSH.set(out, True)
        return out

    def keep_after(self, body: list[ast.stmt], k: int, fwd: list[ast.stmt],
                   kept: list[ast.stmt]) -> list[ast.stmt]:
        """``fwd`` (of ``body[k]``, a loop body's statement) with the arrays the planner keeps
        after it (``Planner.kept``) pushed after it, once per trip; ``kept`` gains their
        pops, which go at the start of the trip's adjoint (``ReadPolicy.kept``)."""
        names = sorted(a for b, at, a in self.planner.kept if b == id(body) and at == k)
        policy, loops = self.planner.policy, self.planner.an.enclosing_loops(body[k])
        loop = loops[-1] if loops and getattr(loops[-1], "body", None) is body else None
        remake = policy.remake(loop) if policy is not None and loop is not None else None
        if k == 0 and loop is not None:  # (the last call for this body)
            fwd = self.trip_start(body, fwd, kept, remake)
        names = [a for a in names if remake is None or a not in remake.arrays]
        refills = {a: c for a in names if policy is not None and loop is not None
                   and (c := policy.refill(a, loop, k)) is not None}
        for a, cost in refills.items():  # (policy.py's preconditions 9 to 12)
            kept += [decision(f"refilled {a} at the start of each trip's adjoint, not stored:"
                              f" what fills it costs {cost:g} <= tape {TAPE_COST:g}"),
                     *self.rerun(body[:k + 1])]
            self.restored_names.add(a)
        names = [a for a in names if a not in refills]
        if not names:
            return fwd
        c = decision(f"stored {', '.join(names)} once per trip, after the last write: "
                     "the reads after it are read again")
        PUSH.set(c, True)
        after: list[ast.stmt] = [c]
        for a in names:
            push, pop = self.new_tape(self.namer.tape(a), a, body[k])
            after += push
            kept += pop(a)
            self.restored_names.add(a)
        return [*fwd, *after]

    def trip_start(self, body: list[ast.stmt], fwd: list[ast.stmt], kept: list[ast.stmt],
                   remake: Remake | None) -> list[ast.stmt]:
        """``fwd`` (of ``body[0]``) with the arrays the loop carries pushed before it, once
        per trip; ``kept`` starts with their pops, then the rerun that remakes the arrays
        the planner reads again from it (``ReadPolicy.carried_at``, ``remake``)."""
        entries = {(at, a) for b, at, a in self.planner.kept if b == id(body)}
        rerun = remake is not None and any(a in remake.arrays for _, a in entries)
        carried = sorted({a for at, a in entries if at == -1}
                         | (set(remake.carried) if rerun else set()))
        pushes: list[ast.stmt] = []
        pops: list[ast.stmt] = []
        if carried:
            c = decision(f"stored {', '.join(carried)} once per trip, at its start: the loop "
                         "rebinds it afterwards, the trip reads only this value")
            PUSH.set(c, True)
            pushes.append(c)
            for a in carried:
                push, pop = self.new_tape(self.namer.tape(a), a, body[0])
                pushes += push
                pops += pop(a)
                self.restored_names.add(a)
        if rerun:
            made = sorted(remake.arrays)
            # a loop of one trip: Numba then compiles the rerun's temporaries as its own
            # (inline in the adjoint's trip, ode's gradient ran 1.4x slower, bounds checked)
            once = ast.For(target=ast.Name(id=self.namer.fresh("_once"), ctx=ast.Store()),
                           iter=ast.Call(func=name("range"), args=[const(1)], keywords=[]),
                           body=self.rerun(body[:remake.last + 1], keep=remake.arrays),
                           orelse=[])
            pops += [decision(f"remade {', '.join(made)} at the start of each trip's adjoint, "
                              f"not stored: rerunning what makes them costs {remake.cost:g} "
                              f"<= {len(made)} tapes {TAPE_COST * len(made):g} (in a loop of "
                              "one trip, which Numba compiles apart)"), once]
            self.restored_names.update(made)
        kept[:0] = pops
        return [*pushes, *fwd]

    def rerun(self, stmts: list[ast.stmt], keep: frozenset[str] = frozenset()
              ) -> list[ast.stmt]:
        """Copies of ``stmts`` (primal statements) binding fresh names instead of theirs
        (but for ``keep``), so that running them in the adjoint changes only the arrays they
        write into (and ``keep``)."""
        made = sorted(set(dataflow.binds_in(stmts, elements=False)) - keep)
        mapping: dict[str, str | ast.expr] = {
            n: self.namer.fresh("_" + n.lstrip("_") + "_") for n in made}
        return [renamed_copy(s, mapping) for s in stmts]

    def restore_before(self, s: ast.stmt, fwd: list[ast.stmt], rev: list[ast.stmt],
                       restored: set[str]) -> tuple[list[ast.stmt], list[ast.stmt]]:
        """``s``'s sweeps with the values the planner stores once per trip here
        (``Planner.restore_at``) taped before ``s`` and restored after its adjoint
        (``restored`` then holds them)."""
        names = sorted(self.planner.restore_at.get(id(s), ()))
        if not names:
            return fwd, rev
        c = decision(f"stored {', '.join(names)} before the loop rebinds "
                     f"{'them' if len(names) > 1 else 'it'}: the value each trip ends with is "
                     "the next one's")
        PUSH.set(c, True)
        before: list[ast.stmt] = [c]
        after: list[ast.stmt] = []
        for n in names:
            push, pop = self.new_tape(self.namer.tape(n), n, s)
            before += push
            after += pop(n)
            restored.add(n)
            self.restored_names.add(n)
        return before + list(fwd), list(rev) + after

    def new_tape(self, tape: str, n: str, s: ast.stmt, kind: Kind | None = None):
        """A tape for ``n`` pushed at ``s``: (push statements, pop(target) -> statements).

        Scalars go to a typed array with a cursor, reserved before the innermost
        range loop (one slot per iteration) or grown at the push elsewhere; arrays
        and values of unknown kind go to a list.  ``kind`` is ``n``'s kind where ``n`` is
        the pass's own (a trip counter), not one the analysis knows.
        """
        k = kind or self.an.kind(n)
        dtype = {"f": "float64", "i": "int64", "b": "bool_"}.get(k.cls) if k.ndim == 0 else None
        if dtype is None:
            self.declared.append((tape, None))
            val = name(n)
            # a rule's own value (not in the kinds) may be the very array the statement
            # binds to a name that is written in place later
            shared = n not in self.an.kinds \
                and bool(set(dataflow.binds(s, elements=True)) & self.an.written)
            if (k.is_array and n in self.an.written) or shared:
                snap = self.global_name("snapshot", helpers.snapshot)
                val = ast.Call(func=name(snap), args=[val], keywords=[])
                if k.cls == "f" and k.ndim and not shared:  # a float array's copies
                    self.snapshot_tapes.append(tape)
            push = [ast.Expr(value=ast.Call(func=ast.Attribute(value=name(tape), attr="append",
                                                               ctx=ast.Load()),
                                            args=[val], keywords=[]))]
            PUSH.set(push[0], True)
            return push, lambda t: [assign(t, ast.Call(func=ast.Attribute(
                value=name(tape), attr="pop", ctx=ast.Load()), args=[], keywords=[])),
                *self.shape_check(n, t)]
        cur = self.namer.fresh(tape + "n")
        self.declared.append((tape, (dtype, cur)))
        loops = self.an.enclosing_loops(s)
        push: list[ast.stmt] = []
        inner = loops[-1] if loops else None
        if isinstance(inner, ast.For) and not self.has_break(inner):
            self.reserve.setdefault(id(inner), []).append((tape, cur))
        else:
            res = self.global_name("tape_reserve", helpers.tape_reserve)
            push.append(assign(tape, ast.Call(func=name(res), args=[
                name(tape), name(cur), const(1)], keywords=[])))
        push.append(ast.Assign(targets=[ast.Subscript(value=name(tape), slice=name(cur),
                                                      ctx=ast.Store())], value=name(n)))
        TAPED.set(push[-1], True)
        push.append(ast.AugAssign(target=name(cur, True), op=ast.Add(), value=const(1)))
        for p in push:
            PUSH.set(p, True)

        def pop(t: str) -> list[ast.stmt]:
            read = assign(t, ast.Subscript(value=name(tape), slice=name(cur), ctx=ast.Load()))
            TAPED.set(read, True)
            return [ast.AugAssign(target=name(cur, True), op=ast.Sub(), value=const(1)), read]

        return push, pop

    def shape_check(self, n: str, t: str) -> list[ast.stmt]:
        """``same_shape(t, dn)`` after the array ``n`` is restored into ``t`` from a list
        tape, where ``n`` has one adjoint buffer (shaped like its last value): a value of
        another shape (a loop-carried array that grows or shrinks from one trip to the
        next) raises there instead of having its adjoint broadcast into the buffer."""
        if not (self.an.kind(n).is_array and self.an.modes.get(n) == "buffer"
                and n in self.an.active):
            return []
        check = self.global_name("same_shape", helpers.same_shape)
        st = ast.Expr(value=ast.Call(func=name(check), args=[name(t), name(self.adj(n))],
                                     keywords=[]))
        CHECK.set(st, True)
        return [st]

    def reserves(self, loop: ast.For, start, stop, step) -> list[ast.stmt]:
        """Room on the typed tapes pushed once per iteration of ``loop``."""
        entries = self.reserve.get(id(loop), [])
        if not entries:
            return []
        trips = self.trips(start, stop, step)
        res = self.global_name("tape_reserve", helpers.tape_reserve)
        out = [assign(t, ast.Call(func=name(res), args=[name(t), name(c), clone(trips)],
                              keywords=[])) for t, c in entries]
        for x in out:
            PUSH.set(x, True)
            TRIP_ROOM.set(x, POS.get(loop))
        return out

    def trips(self, start, stop, step) -> ast.expr:
        """The trip count of ``range(start, stop, step)`` (negative or zero: none)."""
        if isinstance(step, ast.Constant) and step.value == 1:
            return clone(stop) if isinstance(start, ast.Constant) and start.value == 0 \
                else binop(clone(stop), ast.Sub(), clone(start))
        tc = self.global_name("trip_count", helpers.trip_count)
        return ast.Call(func=name(tc), args=[clone(start), clone(stop), clone(step)],
                        keywords=[])

    def header_captures(self, s, header: list[ast.expr], restored, before, after):
        """Captures of a compound statement's header expressions (renamed in place)."""
        reads = set()
        for h in header:
            reads |= {n.id for n in walk(h) if isinstance(n, ast.Name)}
        holder = list(header)
        pops = self.captures(s, holder, set(), before, after, restored, True, reads)
        return pops, holder

    def slot(self, buf: str, dtype: str) -> None:
        """Declare ``buf`` as slot storage of ``dtype``, kept between calls (grown by the
        caller's ``tape_reserve``)."""
        self.slot_buffers.append((buf, dtype))

    def restores(self, names: set[str]) -> None:
        """Note that the adjoint sweep gives ``names`` back (``Sweeps.restored``)."""
        self.restored_names |= names

    def list_tape(self, tape: str) -> None:
        """Declare ``tape`` as a list (pushed and popped by the caller)."""
        self.declared.append((tape, None))

    def declarations(self) -> tuple[list[ast.stmt], list[tuple[str, str]]]:
        """The tapes' and slot storage's declarations, and (name, dtype) of the typed ones
        (reused across calls, see ``Adjoint``)."""
        tapes: list[ast.stmt] = []
        reused: list[tuple[str, str]] = []
        np_name = self.global_name("np", __import__("numpy"))
        for t, typed in self.declared:
            if typed is None:
                tapes.append(assign(t, ast.List(elts=[], ctx=ast.Load())))
            else:
                dtype, cur = typed
                tapes.append(assign(t, _empty(np_name, dtype)))
                tapes.append(assign(cur, const(0)))
                reused.append((t, dtype))
        for t, dtype in self.slot_buffers:
            tapes.append(assign(t, _empty(np_name, dtype)))
            reused.append((t, dtype))
        return tapes, reused

    def snapshots(self) -> Snapshots | None:
        """The list tapes of float array copies, with the names that keep them between calls
        (``Adjoint.snapshots``); None without."""
        if not self.snapshot_tapes:
            return None
        return Snapshots(tuple(self.snapshot_tapes),
                         self.global_name("snapshot", helpers.snapshot),
                         self.global_name("ws_snapshot", snapshots.ws_snapshot),
                         self.global_name("ws_grow", snapshots.ws_grow),
                         self.namer.fresh("_ws_snaps"), self.namer.fresh("_ws_snapsn"))


def _empty(np_name: str, dtype: str) -> ast.expr:
    """``np.empty(0, np.<dtype>)``: a tape or storage before it grows."""
    return ast.Call(func=ast.Attribute(value=name(np_name), attr="empty", ctx=ast.Load()),
                    args=[const(0), ast.Attribute(value=name(np_name), attr=dtype,
                                                  ctx=ast.Load())], keywords=[])


def decision(text: str) -> ast.stmt:
    """A ``# stored ...`` / ``# recomputed ...`` comment (``notes.DECISION``)."""
    c = comment(text)
    DECISION.set(c, True)
    return c
