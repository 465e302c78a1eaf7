"""Tapes: what the adjoint of a statement reads, and whether to push, restore or recompute it.

A value is pushed only when something may redefine it before the adjoint runs, and
only when recomputing it would cost more (``recompute.py`` plans it, ``analysis/cost.py``
prices and decides: element reads of unwritten arrays, integer arithmetic, operators
and scalar calls priced by the primitive table, from values still available).  Scalars
go to typed arrays reserved once per loop; arrays to lists of snapshots.
"""

from __future__ import annotations

import ast

from ...kernels import helpers
from ...rules.primitives import allocating
from ..analysis import dataflow
from ..analysis.cost import Decision, decide, note
from ..analysis.kinds import Kind
from ..astutil import binop
from ..backend.emit import comment
from ..front.desugar import assign, const, name
from ..front.inline import rename
from ..nodes import clone, loaded_ids, walk
from ..notes import CHECK, DECISION, PUSH


class TapeMixin:
    """Capture handling of the ``Reverser`` (see module docstring)."""

    def captures(self, s: ast.stmt, rev: list, outputs: set[str], fwd_before,
                 fwd_after, restored: set[str], compound: bool,
                 reads: set[str] | None = None) -> list[ast.stmt]:
        """Push what the adjoint of ``s`` reads that may change before the adjoint runs,
        or recompute it where ``analysis.cost.decide`` finds that cheaper.

        ``rev`` is renamed in place where a value is popped into a fresh name; for a
        compound statement ``reads`` (its header's names) and ``rev`` (its header
        expressions) are given by the caller.  The decisions go into the code as one
        comment each way (what was stored, at the pushes; what was recomputed).
        """
        if reads is None:
            reads = loaded_ids(ast.Module(body=rev, type_ignores=[]))
        # values defined earlier first: a later one may then be recomputed from them
        reads = sorted(set(reads) & self.fwd_vars, key=lambda n: (self.an.first_pos(n), n))
        defined = dataflow.binds_in([s])
        # outputs of ``s`` a later statement's adjoint restored: they hold what s made
        made = set() if compound else self.post_restored
        pops: list[ast.stmt] = []
        mapping: dict[str, str] = {}
        stored: list[Decision] = []
        into: dict[str, str] = {}  # a stored value -> the name the adjoint pops it into
        shaped: set[str] = set()  # the names the adjoint pops shapes into
        wanted: list[tuple[str, bool, bool]] = []  # (name, s's own output, restored here)
        for n in reads:
            if self.an.recomputed_index(n, s):
                continue
            is_out = n in outputs
            if is_out and n in made:
                continue
            if is_out and n not in self.an.defs:
                # a rule's own value, made here: the next iteration makes it again
                need = bool(self.an.enclosing_loops(s))
            elif is_out:
                need = self.an.may_redefine_after(n, s, include_self=False)
            else:
                need = n in defined or self.an.may_redefine_after(n, s, include_self=compound)
                if need and n in restored and n not in defined and not compound:
                    need = False
            if need:
                wanted.append((n, is_out, not is_out and not compound and n not in defined))
        # counters indexing element reads: restored here, the reads are read again
        wanted[:0] = [(m, False, True) for m in self.index_restores(wanted, s, restored,
                                                                    compound)]
        # the first value's plan, planned once: on its own it is what joint planning starts
        # from (nothing planned before it), and what deciding it alone finds
        first = self.first_plan(wanted, s, restored, compound)
        joint = self.joint_plans(wanted, s, restored, compound, first)
        if joint is not None:  # one comment for the values recomputed together
            pops += [decision(said) for said in note([joint[1]], stored=False)]
        for k, (n, is_out, restores) in enumerate(wanted):
            if joint is not None:
                plan = joint[0][n]
                d = Decision(n, False, "", plan)
            else:
                plan = first[0] if k == 0 else self.recompute(
                    n, s, restored, post=is_out, steps=not compound and not is_out)
                d = decide(n, plan)
                # each recomputed value's comment heads its statements
                pops += [decision(said) for said in note([d], stored=False)]
            if not d.stored:
                for m, e in plan.steps:  # intermediate values, restored on the way
                    pops.append(assign(m, e))
                    restored.add(m)
                    self.restored_names.add(m)
                if restores:
                    pops.append(assign(n, plan.expr))  # restores n: earlier statements reuse it
                    restored.add(n)
                    self.restored_names.add(n)
                else:
                    fresh = self.namer.fresh("_" + n.lstrip("_") + "_")
                    mapping[n] = fresh
                    pops.append(assign(fresh, plan.expr))
                continue
            first = self.restored_next_trip(n, s) if restores else None
            if first is not None:  # the next trip's adjoint restores it where first rebinds it
                self.restore_at.setdefault(id(first), set()).add(n)
                continue
            twin = next((m for m in into if self.policy is not None
                         and self.policy.same_value(m, n, s)), None)
            if twin is not None:  # the same value as one stored here: one tape for both
                pops.append(decision(f"{n} is {twin}: the same value, stored once"))
                target = n if restores else self.namer.fresh("_" + n.lstrip("_") + "_")
                pops.append(assign(target, name(into[twin])))
                if restores:
                    restored.add(n)
                    self.restored_names.add(n)
                else:
                    mapping[n] = target
                continue
            if self.shape_only(n, rev):  # the adjoint reads its shape alone: store that
                stored.append(Decision(n, True, "its shape (the adjoint reads no element)"))
                fresh = self.namer.fresh("_" + n.lstrip("_") + "_shape")
                mapping[n] = fresh
                shaped.add(fresh)
                push, pop = self.shape_tape(self.namer.tape(n), n)
                (fwd_after if is_out else fwd_before).extend(push)
                pops += pop(fresh)
                continue
            stored.append(d)
            tape = self.namer.tape(n)
            push, pop = self.new_tape(tape, n, s)
            (fwd_after if is_out else fwd_before).extend(push)
            if restores:
                pops += pop(n)
                restored.add(n)
                self.restored_names.add(n)
                into[n] = n
            else:
                fresh = self.namer.fresh("_" + n.lstrip("_") + "_")
                mapping[n] = fresh
                pops += pop(fresh)
                into[n] = fresh
        if mapping:
            rev[:] = [rename(x, mapping) for x in rev]
        if shaped:
            self.to_shape_calls(rev, shaped)
        for said in note(stored, stored=True):
            at = fwd_before if any(d.name not in outputs for d in stored) else fwd_after
            where = next((k for k, x in enumerate(at) if PUSH.get(x)), len(at))
            c = decision(said)
            PUSH.set(c, True)  # goes with the pushes where a region runs without tapes
            at.insert(where, c)
        return pops

    def shape_only(self, n: str, rev: list[ast.stmt]) -> bool:
        """Does the adjoint ``rev`` read the array ``n`` only as the operand whose shape
        ``unbroadcast(g, n)`` reduces ``g`` to (and need no shape check of it)?  Then its
        shape is stored, not the array (a value with elements read is never replaced)."""
        k = self.an.kind(n)
        if not k.is_array or k.ndim is None or self.shape_check(n, n) \
                or not all(_output_unread(d) for d in self.an.defs.get(n, [])):
            return False
        loads = [x for x in walk(ast.Module(body=rev, type_ignores=[]))
                 if isinstance(x, ast.Name) and x.id == n]
        shapes = [c.args[1] for c in walk(ast.Module(body=rev, type_ignores=[]))
                  if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)
                  and c.func.id == self.unb and len(c.args) == 2 and not c.keywords
                  and isinstance(c.args[1], ast.Name) and c.args[1].id == n]
        return bool(loads) and len(loads) == len(shapes)

    def shape_tape(self, tape: str, n: str):
        """A list tape of ``n.shape``: (push statements, pop(target) -> statements)."""
        self.tapes.append((tape, None))
        push = [ast.Expr(value=ast.Call(func=ast.Attribute(value=name(tape), attr="append",
                                                           ctx=ast.Load()),
                                        args=[ast.Attribute(value=name(n), attr="shape",
                                                            ctx=ast.Load())], keywords=[]))]
        PUSH.set(push[0], True)
        return push, lambda t: [assign(t, ast.Call(func=ast.Attribute(
            value=name(tape), attr="pop", ctx=ast.Load()), args=[], keywords=[]))]

    def to_shape_calls(self, rev: list[ast.stmt], shaped: set[str]) -> None:
        """``unbroadcast(g, s)`` -> ``unbroadcast_shape(g, s)`` for the popped shapes ``s``."""
        fn = self.global_name("unbroadcast_shape", helpers.unbroadcast_shape)
        for c in walk(ast.Module(body=rev, type_ignores=[])):
            if isinstance(c, ast.Call) and isinstance(c.func, ast.Name) \
                    and c.func.id == self.unb and len(c.args) == 2 \
                    and isinstance(c.args[1], ast.Name) and c.args[1].id in shaped:
                c.func = name(fn)

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
            self.tapes.append((tape, None))
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
        self.tapes.append((tape, (dtype, cur)))
        loops = self.an.enclosing_loops(s)
        push: list[ast.stmt] = []
        inner = loops[-1] if loops else None
        if isinstance(inner, ast.For) and not self._has_break(inner):
            self.reserve.setdefault(id(inner), []).append((tape, cur))
        else:
            res = self.global_name("tape_reserve", helpers.tape_reserve)
            push.append(assign(tape, ast.Call(func=name(res), args=[
                name(tape), name(cur), const(1)], keywords=[])))
        push.append(ast.Assign(targets=[ast.Subscript(value=name(tape), slice=name(cur),
                                                      ctx=ast.Store())], value=name(n)))
        push.append(ast.AugAssign(target=name(cur, True), op=ast.Add(), value=const(1)))
        for p in push:
            PUSH.set(p, True)

        def pop(t: str) -> list[ast.stmt]:
            return [ast.AugAssign(target=name(cur, True), op=ast.Sub(), value=const(1)),
                    assign(t, ast.Subscript(value=name(tape), slice=name(cur), ctx=ast.Load()))]

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

    # --- blocks ------------------------------------------------------------------


def _output_unread(d: ast.stmt) -> bool:
    """Does the adjoint of ``d`` not read the value it makes (sums, differences, products,
    quotients, negation, copies of names and elements, fresh arrays)?  Else that adjoint
    stores the whole array anyway, and storing only its shape elsewhere saves nothing."""
    if not isinstance(d, ast.Assign):
        return False
    v = d.value
    if isinstance(v, ast.BinOp):
        return isinstance(v.op, (ast.Add, ast.Sub, ast.Mult, ast.Div))
    if isinstance(v, ast.Call):
        f = v.func
        spelled = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
        return allocating(spelled)
    return isinstance(v, (ast.UnaryOp, ast.Name, ast.Subscript))


def decision(text: str) -> ast.stmt:
    """A ``# stored ...`` / ``# recomputed ...`` comment (``notes.DECISION``)."""
    c = comment(text)
    DECISION.set(c, True)
    return c
