"""The reverse of control flow: ``if``, ``for``, ``while`` and checkpointed regions.

Loops run backwards over the same ``range`` with the index recomputed; loops with
``break`` and ``while`` loops count their trips; a checkpointed region runs
without tapes forward and is rerun, then reversed, in the adjoint sweep.  (A
``jg.checkpointed`` loop in no other loop: ``binomial.py``.)
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from ...kernels import helpers, rng
from ..analysis import dataflow
from ..analysis.effects import first_draw
from ..analysis.kinds import INT
from ..astutil import binop, exposed_reads
from ..front.desugar import assign, const, name
from ..front.inline import rename, stored_names
from ..nodes import clone, loaded_ids, walk_stmts
from ..notes import END, HOISTED, POS, PUSH, SWEEP, carry, is_prange
from .tapes import Tapes, decision
from .unit import Part, Unit


class ControlFlow(Part):
    """Reverses compound statements: branches, loops and checkpointed regions (their
    bodies through ``block``, the ``Reverser``'s walk).  No state of its own."""

    def __init__(self, unit: Unit, tapes: Tapes, fwd_vars: set[str],
                 block: Callable[[list[ast.stmt]], tuple[list[ast.stmt], list[ast.stmt]]]):
        super().__init__(unit)
        self.tapes, self.fwd_vars, self.block = tapes, fwd_vars, block

    def checkpoint_(self, s: ast.If, restored):
        """A checkpointed region: forward without tapes; the reverse reruns it, then its adjoint.

        Only the region's inputs are taped (at entry); its own tapes live only while
        the reverse sweep handles this region.
        """
        bf, br = self.block(s.body)
        plain = strip_pushes(clone(bf))
        if not br:
            return plain, []
        inside = dataflow.binds_in([s])
        self.tapes.restores(inside)  # the reverse sweep reruns the region
        before: list[ast.stmt] = []
        pops: list[ast.stmt] = []
        # arrays from outside that the region writes in place: snapshot at entry, written
        # back into their own buffer before the rerun (so it starts from the same state)
        outer = sorted({t.value.id for x in walk_stmts(s.body)
                        for t in [x.targets[0] if isinstance(x, ast.Assign)
                                  else getattr(x, "target", None)]
                        if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name)
                        and (t.value.id in self.args or any(
                            not (POS.get(s) <= POS.get(d) <= END.get(s))
                            for d in self.an.defs.get(t.value.id, [])
                            if not isinstance(d, ast.For)))})
        rebound = stored_names(s.body)
        restores: list[ast.stmt] = []
        exposed = exposed_reads(s.body)  # what the rerun reads of the state at entry
        for n in [n for n in outer if n in exposed]:
            if n in rebound or self.an.may_redefine_after(n, s, include_self=True):
                ref = self.namer.tape(n)  # the array object itself (a swap rebinds the name)
                self.tapes.list_tape(ref)
                before.append(ast.Expr(value=ast.Call(func=ast.Attribute(
                    value=name(ref), attr="append", ctx=ast.Load()), args=[name(n)],
                    keywords=[])))
                PUSH.set(before[-1], True)
                pops.append(assign(n, ast.Call(func=ast.Attribute(
                    value=name(ref), attr="pop", ctx=ast.Load()), args=[], keywords=[])))
            push, pop = self.tapes.new_tape(self.namer.tape(n), n, s)  # its elements, copied
            snap = self.namer.fresh("_snap")
            restore = self.global_name("restore_into", helpers.restore_into)
            before += push
            restores += [*pop(snap), ast.Expr(value=ast.Call(func=name(restore), args=[
                name(n), name(snap)], keywords=[]))]
            self.tapes.restores({n})
        reads = sorted(loaded_ids(ast.Module(body=s.body, type_ignores=[])) & self.fwd_vars)
        for n in sorted(set(reads) & exposed - set(outer)):
            defs = self.an.defs.get(n, [])
            outside = n in self.args or any(not (POS.get(s) <= POS.get(d) <= END.get(s))
                                            for d in defs)
            if not outside:
                continue
            if n in inside or self.an.may_redefine_after(n, s, include_self=True):
                push, pop = self.tapes.new_tape(self.namer.tape(n), n, s)
                before += push
                pops += pop(n)
                self.tapes.restores({n})
        replay, back = self.replay_region(s, before)
        return before + plain, pops + restores + replay + bf + back + br

    def replay_region(self, s: ast.If, before: list[ast.stmt]
                      ) -> tuple[list[ast.stmt], list[ast.stmt]]:
        """Where the region ``s`` draws random numbers: the generators' state taped at its
        entry (added to ``before``), and the statements that make it current for the
        rerun and give back the state the reverse sweep had after it; else ([], [])."""
        if first_draw(s.body, self.env) is None:
            return [], []
        tape = self.namer.fresh("_tape_rng")
        now = self.namer.fresh("_rng_now")
        self.tapes.list_tape(tape)
        saved = self.global_name("rng_saved", rng.rng_saved)
        load = self.global_name("rng_load", rng.rng_load)

        def call(f: ast.expr, *args: ast.expr) -> ast.expr:
            return ast.Call(func=f, args=list(args), keywords=[])

        def method(m: str, *args: ast.expr) -> ast.expr:
            return call(ast.Attribute(value=name(tape), attr=m, ctx=ast.Load()), *args)

        before.append(ast.Expr(value=method("append", call(name(saved)))))
        PUSH.set(before[-1], True)
        replay = [assign(now, call(name(saved))),
                  ast.Expr(value=call(name(load), method("pop"), const(0)))]
        return replay, [ast.Expr(value=call(name(load), name(now), const(0)))]

    def if_(self, s: ast.If, restored):
        bf, br = self.block(s.body)
        of, orv = self.block(s.orelse)
        fwd = ast.copy_location(ast.If(test=s.test, body=bf or [ast.Pass()], orelse=of), s)
        if not br and not orv:
            return [fwd], []
        before: list[ast.stmt] = []
        after: list[ast.stmt] = []
        pops, (test,) = self.tapes.header_captures(s, [clone(s.test)], restored, before, after)
        rev = [ast.If(test=test, body=br or [ast.Pass()], orelse=orv)]
        return before + [fwd] + after, pops + rev

    def for_(self, s: ast.For, restored):
        bf, br = self.block(s.body)
        if not br:
            loop = ast.copy_location(ast.For(target=s.target, iter=s.iter, body=bf,
                                             orelse=[]), s)
            carry(s, loop)
            return [loop], []
        counted = self.has_break(s)
        start, stop, step = _range_parts(s.iter.args)
        before: list[ast.stmt] = []
        after: list[ast.stmt] = []
        header = [clone(start), clone(stop), clone(step)]
        pops, (start, stop, step) = self.tapes.header_captures(s, header, restored, before, after)
        unit = isinstance(step, ast.Constant) and step.value == 1
        cnt = self.namer.fresh("_trips") if counted else None
        rev = self._reversed(s, br, (start, stop, step), cnt)
        self.env.setdefault("range", range)
        body = bf
        if cnt is not None:
            body = [ast.AugAssign(target=name(cnt, True), op=ast.Add(), value=const(1)), *bf]
        loop = ast.copy_location(ast.For(target=s.target, iter=s.iter, body=body, orelse=[]), s)
        carry(s, loop)
        if cnt is None and unit:
            SWEEP.set(loop, (POS.get(s), "forward"))
        f_start, f_stop, f_step = _range_parts(s.iter.args)
        once, popped = self.tapes.hoisted(s, (f_start, f_stop, f_step), (start, stop, step),
                                          restored)  # values stored once per run of it
        fwd = once + before + self.tapes.reserves(s, f_start, f_stop, f_step) + \
            (self._hoisted_reserves(s, bf, f_start, f_stop, f_step) if not cnt else []) + \
            ([assign(cnt, const(0))] if cnt else []) + [loop] + after
        if cnt is not None:
            return self._counted(s, fwd, pops + popped + rev, cnt, restored)
        fwd, popped = self._counters(s, fwd, popped)
        return fwd, pops + popped + rev

    def _counters(self, s: ast.For, fwd: list[ast.stmt], popped: list[ast.stmt]
                  ) -> tuple[list[ast.stmt], list[ast.stmt]]:
        """``fwd`` and ``popped`` with each counter stored once per run of ``s`` (given back,
        then stepped back by its adjoint), or noted as keeping its last value."""
        for n in self.tapes.planner.counters.stored_at(s):
            if not self.an.enclosing_loops(s) and self.an.def_positions(n)[-1] <= END.get(s):
                # run once, and nothing binds it after: it keeps its last value
                fwd = fwd + [decision(f"{n} keeps its last value: its adjoint steps it back")]
                continue
            push, pop = self.tapes.new_tape(self.namer.tape(n), n, s, INT)
            note = decision(f"stored {n} once per loop over {s.target.id}: its adjoint steps "
                            "it back")
            fwd, popped = fwd + [note, *push], pop(n) + popped
        return fwd, popped

    def _reversed(self, s: ast.For, br: list[ast.stmt], header: tuple, cnt: str | None
                  ) -> list[ast.stmt]:
        """The loop running ``br`` (the adjoint body) over ``s``'s trips backwards:
        ``range(stop - 1, start - 1, -1)`` for a unit step and no counter (``cnt``: the
        trips counted where the loop may break), else over the trip count."""
        i = s.target.id
        start, stop, step = header
        unit = isinstance(step, ast.Constant) and step.value == 1
        zero_start = isinstance(start, ast.Constant) and start.value == 0
        if cnt is None and unit:
            lo = const(-1) if zero_start else binop(start, ast.Sub(), const(1))
            it = ast.Call(func=name("range"), args=[binop(stop, ast.Sub(), const(1)), lo,
                                                    const(-1)], keywords=[])
            rev = [ast.For(target=name(i, True), iter=it, body=br, orelse=[])]
            carry(s, rev[0])  # a prange loop's reversed loop may run in parallel too
            SWEEP.set(rev[0], (POS.get(s), "reverse"))
        else:
            if cnt is None:
                tc = self.global_name("trip_count", helpers.trip_count)
                n_expr = ast.Call(func=name(tc), args=[start, stop, step], keywords=[])
            else:
                n_expr = name(cnt)
            if zero_start and unit:
                it = ast.Call(func=name("range"), args=[binop(n_expr, ast.Sub(), const(1)),
                                                        const(-1), const(-1)], keywords=[])
                rev = [ast.For(target=name(i, True), iter=it, body=br, orelse=[])]
            else:
                k = self.namer.fresh("_k")
                it = ast.Call(func=name("range"), args=[binop(n_expr, ast.Sub(), const(1)),
                                                        const(-1), const(-1)], keywords=[])
                idx = assign(i, binop(start, ast.Add(), binop(name(k), ast.Mult(), step)))
                rev = [ast.For(target=name(k, True), iter=it, body=[idx, *br], orelse=[])]
        return rev

    def _hoisted_reserves(self, s: ast.For, bf: list[ast.stmt], start, stop, step
                          ) -> list[ast.stmt]:
        """Room, before ``s``, for all its trips of each ``tape_reserve`` at the top of its
        forward body (an inner loop's) whose size is known before ``s`` runs: one
        allocation instead of a doubling per trip, which left the old and the new tape
        alive at once (heat: a peak of 1.5 times the tape).  The reserves in the body stay;
        they find the room made."""
        if self.env.get("tape_reserve") is not helpers.tape_reserve or is_prange(s) \
                or self.env.get("max", max) is not max:
            return []
        inside = dataflow.binds_in([s])
        defs: dict[str, list[ast.stmt]] = {}
        for x in walk_stmts(s.body):
            for n in dataflow.binds(x, elements=True):
                defs.setdefault(n, []).append(x)
        top = {id(x) for x in s.body}

        def before_loop(e: ast.expr) -> ast.expr | None:
            """``e`` in terms of values known before ``s`` (one definition in its body,
            at the top, from such values, substituted), or None."""
            subst: dict[str, ast.expr] = {}
            for n in loaded_ids(e) & inside:
                d = defs.get(n, [])
                if not (len(d) == 1 and id(d[0]) in top and isinstance(d[0], ast.Assign)
                        and isinstance(d[0].targets[0], ast.Name)
                        and not loaded_ids(d[0].value) & inside):
                    return None
                subst[n] = d[0].value
            return rename(clone(e), subst) if subst else clone(e)

        out: list[ast.stmt] = []
        for x in bf:
            v = getattr(x, "value", None)
            if not (PUSH.get(x) and isinstance(x, ast.Assign) and isinstance(v, ast.Call)
                    and isinstance(v.func, ast.Name) and v.func.id == "tape_reserve"
                    and len(v.args) == 3):
                continue
            more = before_loop(v.args[2])
            if more is None:
                continue
            total = binop(_at_least_0(self.tapes.trips(start, stop, step)), ast.Mult(),
                          _at_least_0(more))
            hoisted = assign(x.targets[0].id, ast.Call(func=name("tape_reserve"), args=[
                clone(v.args[0]), clone(v.args[1]), total], keywords=[]))
            PUSH.set(hoisted, True)
            HOISTED.set(hoisted, POS.get(s))
            out.append(hoisted)
        if out:
            self.env.setdefault("max", max)
        return out

    def while_(self, s: ast.While, restored):
        bf, br = self.block(s.body)
        if not br:
            return [ast.copy_location(ast.While(test=s.test, body=bf, orelse=[]), s)], []
        cnt = self.namer.fresh("_trips")
        body = [ast.AugAssign(target=name(cnt, True), op=ast.Add(), value=const(1)), *bf]
        loop = ast.copy_location(ast.While(test=s.test, body=body, orelse=[]), s)
        k = self.namer.fresh("_k")
        rev = [ast.For(target=name(k, True), iter=ast.Call(func=name("range"),
                                                           args=[name(cnt)], keywords=[]),
                       body=br, orelse=[])]
        self.env.setdefault("range", range)
        return self._counted(s, [assign(cnt, const(0)), loop], rev, cnt, restored)

    def _counted(self, s, fwd, rev, cnt, restored):
        """Push a loop's trip counter after the loop when an outer loop reruns it."""
        if self.an.enclosing_loops(s):
            push, pop = self.tapes.new_tape(self.namer.tape(cnt), cnt, s, INT)
            return fwd + push, pop(cnt) + rev
        return fwd, rev



def _at_least_0(e: ast.expr) -> ast.expr:
    """``max(0, e)``: a range that runs backwards makes no trips."""
    return ast.Call(func=name("max"), args=[const(0), e], keywords=[])


def strip_pushes(stmts: list[ast.stmt]) -> list[ast.stmt]:
    """The forward statements without tape pushes (for a checkpointed region)."""
    out = []
    for s in stmts:
        if PUSH.get(s):
            continue
        for f in ("body", "orelse"):
            sub = getattr(s, f, None)
            if sub:
                setattr(s, f, strip_pushes(sub) or [ast.Pass()])
        out.append(s)
    return out


def _range_parts(args: list[ast.expr]) -> tuple[ast.expr, ast.expr, ast.expr]:
    """``(start, stop, step)`` of the arguments of ``range``."""
    return (const(0), args[0], const(1)) if len(args) == 1 else \
        (args[0], args[1], args[2] if len(args) > 2 else const(1))
