"""Automatic checkpointing: a time loop whose tape would not fit in cache runs on the
binomial schedule of ``jg.checkpointed`` (``binomial.py``), chosen when the loop starts.

A ``range`` loop in no other loop or branch is reversed both ways: with its tape
(``reverse_flow.ControlFlow.for_``, today's code) and on the binomial schedule over blocks
of steps (``Binomial.loop(block=...)``, the machinery ``jg.checkpointed`` uses).  Where the
loop starts, the forward sweep adds up the room the tape's reserves ask for (the typed
tapes of its scalars, reserved for all trips before it) and takes the binomial branch
where that exceeds the threshold (``Unit.auto_checkpoint``, bytes) and the snapshots
(about ``sqrt(2 T)`` copies of the loop-carried state) take at most a quarter of it; the
adjoint sweep takes the same branch.  The branch reverses a block of steps at a time:
as many steps as keep their tape within a quarter of the threshold (``block_steps``: it
stays in cache from the taped steps to their adjoints), with a snapshot per block where
those take at most a quarter of the tape (``block_slots``: no block recomputed; else the
binomial schedule over blocks), so that the reverse sweep runs each step about twice
(forward, then taped) and copies a snapshot back once per block, not once per step.
Only loops ``jg.checkpointed`` takes soundly qualify:
no ``break`` or ``return`` in them, no random draws, no checkpointed region or ``prange``
inside, every variable a step reads before binding it with a value before the loop
(``Binomial``'s refusals keep the loop plain).  Only time loops whose steps run inner
loops that tape qualify (a step of scalars costs about as much to recompute as its tape
does to stream); a loop of few constant steps, and one the backend runs one iteration at
a time (``backend/fuse.py``), keep their tape and no second branch.

Where a snapshot copies no elements (the state is scalars and arrays each step rebinds to
new ones: RK stages, ``y = y + h * k``), the schedule is a snapshot before every step
instead (``Binomial.loop(each_step=True)``), taken where the snapshots of all steps,
the arrays they keep alive counted, take at most half the tape (``each_step_pays``): each
step runs once more, right before its adjoint, and in that run the planner tapes only what
the rest of the step rebinds (``Analysis.replayed``; what the loop reads and code after it
changes is kept once, the state is loaded from the step's snapshot).  A state written in
place (a stencil's buffers) keeps the binomial schedule.
"""

from __future__ import annotations

import ast
import dataclasses

from ...errors import TransformError
from ...kernels import helpers, revolve
from ..analysis.effects import first_draw
from ..astutil import binop
from ..backend.emit import comment
from ..backend.fuse import _last_constants as last_constants
from ..backend.fuse import fuse_loops
from ..front.desugar import assign, const, name
from ..nodes import clone, walk_stmts
from ..notes import BREAK_FLAG, CHECKPOINTED, HOISTED, PUSH, checkpoint, is_prange
from .binomial import Binomial
from .reverse_flow import ControlFlow
from .statements import Statements
from .tapes import Tapes
from .unit import Part, Unit

#: a loop of a constant number of steps below this keeps its tape: the ``sqrt(2 T)``
#: snapshots of a stencil's state take more than a quarter of its tape below ``T = 128``
_FEW = 128

#: bytes per entry of a typed tape of each dtype
_ITEMSIZE = {"float64": 8, "int64": 8, "bool_": 1}


class AutoCheckpoint(Part):
    """Chooses, per top-level loop, between its tape and the binomial schedule (see the
    module docstring).  No state of its own beyond the components it drives."""

    def __init__(self, unit: Unit, tapes: Tapes, statements: Statements, flow: ControlFlow,
                 binomial: Binomial, top: list[ast.stmt], threshold: int | None):
        super().__init__(unit)
        self.tapes, self.statements, self.flow, self.binomial = tapes, statements, flow, binomial
        self.top = {id(s) for s in top}
        self.threshold = threshold

    def candidate(self, s: ast.stmt) -> bool:
        """Is ``s`` a loop ``jg.checkpointed`` would take soundly, in no other loop?"""
        if self.threshold is None or not isinstance(s, ast.For) or id(s) not in self.top:
            return False
        it = s.iter
        return (isinstance(it, ast.Call) and isinstance(it.func, ast.Name)
                and it.func.id == "range" and 1 <= len(it.args) <= 3 and not it.keywords
                and isinstance(s.target, ast.Name) and not s.orelse
                and not CHECKPOINTED.get(s) and not is_prange(s) and not BREAK_FLAG.get(s)
                and not self.has_break(s) and first_draw(s.body, self.env) is None
                and not any(checkpoint(x) or is_prange(x)
                            or isinstance(x, (ast.Break, ast.Return))
                            for x in walk_stmts(s.body)))

    def loop(self, s: ast.For, restored: set[str]):
        """The loop's forward and adjoint sweeps: its tape's, or both behind a choice made
        where it starts."""
        saved = self._state()
        mine = set(restored)
        pf, pr = self.flow.for_(s, mine)
        size = self.tape_bytes(pf)
        if mine != restored or size is None or not pr or self.few_steps(s) \
                or self.fused(pf, pr):
            restored |= mine  # (the loop's header is restored: the plain loop only)
            return pf, pr
        kept = self._state()
        snaps = self.namer.fresh("_snapshots")
        block = self.namer.fresh("_block")
        built = None
        for each in (True, False):  # a snapshot per step where it copies no elements
            self._restore(saved, plain=kept)
            CHECKPOINTED.set(s, (snaps, "auto", False))
            try:
                built = self.binomial.loop(s, restored, each_step=each,
                                           block=None if each else block)
            except TransformError:  # (not a loop jg.checkpointed takes: keep its tape)
                self._restore(kept)
                return pf, pr
            finally:
                CHECKPOINTED.set(s, None)
            if not (each and self.binomial.last_state[1]):
                break
        self._restore_reserves(kept)
        sched = self.binomial.schedules  # (what ``jitgrad show --schedule`` reports)
        sched[-1] = dataclasses.replace(sched[-1], automatic=self.threshold, each_step=each)
        return self.choose(s, (snaps, block), size, pf, pr, *built, each_step=each)

    def choose(self, s: ast.For, names: tuple[str, str], size: ast.expr, pf, pr, bf, br,
               each_step: bool = False):
        """``if _checkpointed: <binomial> else: <tape>`` in both sweeps, the choice made
        from the tape's size and the snapshots' where the loop starts (``each_step``:
        a snapshot before every step, ``Binomial.loop``; ``names``: the snapshot count's
        and the block size's)."""
        tape = self.namer.fresh("_tape_bytes")
        flag = self.namer.fresh("_checkpointed")
        rng = s.iter.args
        start, stop, step = (const(0), rng[0], const(1)) if len(rng) == 1 else \
            (rng[0], rng[1], rng[2] if len(rng) > 2 else const(1))
        test: ast.expr = ast.Compare(left=name(tape), ops=[ast.Gt()],
                                     comparators=[const(self.threshold)])
        if self.threshold:  # (0: every such loop with a tape, whatever its snapshots take)
            fn = revolve.each_step_pays if each_step else revolve.checkpoint_pays
            pays = self.global_name(fn.__name__, fn)
            test = ast.BoolOp(op=ast.And(), values=[test, ast.Call(func=name(pays), args=[
                name(tape), self.tapes.trips(start, stop, step),
                self.state_bytes(each_step)], keywords=[])])
        line = getattr(s, "lineno", None)
        how = "a snapshot before each step" if each_step else \
            "on the binomial schedule (as jg.checkpointed)"
        note = comment(f"loop at line {line}: {how} "
                       f"where its tape would take more than {self.threshold} bytes")
        sized = [] if each_step else self.blocks(names, tape, self.tapes.trips(start, stop,
                                                                                step))
        fwd = [note, assign(tape, size), assign(flag, test),
               ast.If(test=name(flag), body=[*sized, *bf], orelse=pf)]
        rev = [ast.If(test=name(flag), body=br, orelse=pr)]
        return fwd, rev

    def blocks(self, names: tuple[str, str], tape: str, trips: ast.expr) -> list[ast.stmt]:
        """The block size (steps whose tape takes at most a quarter of the threshold: it stays
        in cache from the taped steps to their adjoints) and the snapshot count (one per
        block where those take at most a quarter of the tape), where the loop starts."""
        snaps, block = names
        steps, slots = (self.global_name(f.__name__, f)
                        for f in (revolve.block_steps, revolve.block_slots))
        return [assign(block, ast.Call(func=name(steps), args=[
                    name(tape), clone(trips), const(self.threshold // 4)], keywords=[])),
                assign(snaps, ast.Call(func=name(slots), args=[
                    clone(trips), name(block), self.state_bytes(), name(tape)], keywords=[]))]

    def few_steps(self, s: ast.For) -> bool:
        """Is the trip count a constant below ``_FEW`` (snapshots every few steps would keep
        about as much as the tape)?"""
        bounds = [_constant(a) for a in s.iter.args]
        if not self.threshold or None in bounds or (len(bounds) == 3 and bounds[2] == 0):
            return False
        return len(range(*bounds)) < _FEW

    def tape_bytes(self, pf: list[ast.stmt]) -> ast.expr | None:
        """The bytes the typed tapes reserved before the loop ask for, as an expression;
        None where no inner loop's tape is among them (a step of scalars: recomputing it
        costs about what streaming its tape does, measured on Lorenz), or where the size is
        a constant within the threshold."""
        res = self.global_name("tape_reserve", helpers.tape_reserve)
        dtypes = {t: typed[0] for t, typed in self.tapes.declared if typed is not None}
        total: ast.expr | None = None
        for x in pf:
            v = getattr(x, "value", None)
            if isinstance(x, ast.For):
                break
            if not (PUSH.get(x) and isinstance(x, ast.Assign) and isinstance(v, ast.Call)
                    and isinstance(v.func, ast.Name) and v.func.id == res
                    and len(v.args) == 3 and isinstance(v.args[0], ast.Name)
                    and v.args[0].id in dtypes):
                continue
            term = binop(const(_ITEMSIZE.get(dtypes[v.args[0].id], 8)), ast.Mult(),
                         clone(v.args[2]))
            total = term if total is None else binop(total, ast.Add(), term)
        if total is None or not any(HOISTED.get(x) is not None for x in pf):
            return None
        known = _constant(total)
        return None if known is not None and known <= self.threshold else total

    def state_bytes(self, referred: bool = False) -> ast.expr:
        """The bytes one snapshot of the loop just built keeps: 8 per scalar or reference,
        and the elements of the arrays copied into each (``referred``: of every array of
        the state, those it refers to included: a snapshot per step keeps each alive)."""
        state, arrays = self.binomial.last_state
        total: ast.expr = const(8 * len(state))
        if referred:
            arrays = [n for n in state if self.an.kind(n).is_array]
        for n in arrays:
            total = binop(total, ast.Add(), ast.Attribute(value=name(n), attr="nbytes",
                                                          ctx=ast.Load()))
        return total

    def fused(self, pf: list[ast.stmt], pr: list[ast.stmt]) -> bool:
        """Would the backend run the plain loop's adjoint right after each iteration
        (``backend/fuse.py``: its tape then holds one iteration)?"""
        loops = [x for x in pf if isinstance(x, ast.For)][:1] + \
            [x for x in pr if isinstance(x, ast.For)][:1]
        if len(loops) != 2:
            return False
        tapes = {t for t, _ in self.tapes.declared} | {
            typed[1] for _, typed in self.tapes.declared if typed is not None}
        # the adjoints each iteration's adjoint resets, as the zeroing at the top sets them
        zeroed = [ast.Assign(targets=[name(v, True)], value=const(0.0))
                  for v in zeroed_adjoints(loops[1].body)]
        out = fuse_loops([*zeroed, clone(loops[0]), clone(loops[1])], tapes, None, set())
        return sum(isinstance(x, ast.For) for x in out) < 2

    def _state(self) -> tuple:
        t = self.tapes
        return (list(t.declared), list(t.slot_buffers), list(t.snapshot_tapes),
                set(t.restored_names), {k: list(v) for k, v in t.reserve.items()},
                {k: set(v) for k, v in self.tapes.planner.restore_at.items()},
                len(self.binomial.schedules), set(self.statements.touched))

    def _restore(self, saved: tuple, plain: tuple | None = None) -> None:
        """The tapes' bookkeeping as ``saved`` had it (the declarations of ``plain``, the
        plain loop's, kept: its code stays)."""
        t = self.tapes
        keep = saved if plain is None else plain
        t.declared[:] = keep[0]
        t.slot_buffers[:] = keep[1]
        t.snapshot_tapes[:] = keep[2]
        t.restored_names.clear()
        t.restored_names.update(keep[3])
        t.reserve.clear()
        t.reserve.update({k: list(v) for k, v in saved[4].items()})
        restore_at = self.tapes.planner.restore_at
        restore_at.clear()
        restore_at.update({k: set(v) for k, v in saved[5].items()})
        del self.binomial.schedules[keep[6]:]
        self.statements.touched.clear()  # (each build gives the local adjoints a value)
        self.statements.touched.update(saved[7])

    def _restore_reserves(self, kept: tuple) -> None:
        """After the binomial build: the reserves (and adjoints given a value) as the
        plain build left them."""
        self.statements.touched |= kept[7]
        self.tapes.reserve.clear()
        self.tapes.reserve.update({k: list(v) for k, v in kept[4].items()})


def zeroed_adjoints(body: list[ast.stmt]) -> list[str]:
    """The names ``body`` ends with set to 0.0 (an iteration's adjoint resets them)."""
    return sorted(n for n, v in last_constants(body).items()
                  if v == ast.dump(ast.Constant(value=0.0)))


def _constant(e: ast.expr) -> int | None:
    """The value of ``e`` where it names nothing but ``max``; else None."""
    if any(isinstance(n, ast.Name) and n.id != "max" for n in ast.walk(e)):
        return None
    try:
        return int(eval(compile(ast.fix_missing_locations(ast.Expression(clone(e))),
                                "<size>", "eval"), {"__builtins__": {}, "max": max}))
    except Exception:  # noqa: BLE001 - not a number after all: decided at run time
        return None
