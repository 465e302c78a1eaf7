"""A ``jg.checkpointed`` loop on the binomial (revolve) schedule, in reverse mode.

The loop (``front/inline.py`` marks it) keeps snapshots of its loop-carried state in slots
made when it starts, in storage declared once per call (``slot_buffers``: kept between
calls, and reused by every trip of a loop around it); the forward sweep runs every step
without a tape and stores the state where the schedule puts snapshots; the adjoint sweep
is a driver loop over the stack of snapshots that advances between them and reverses one
step at a time, with its tape (the split is ``kernels/revolve.py``'s).  Inside another
loop or region the loop is the one statement of a checkpointed region
(``reverse_flow.checkpoint_``): the outer forward sweep tapes its entry state and runs it
untaped, and the reverse sweep restores that state and reruns the forward sweep
(snapshots) before the driver, each outer trip in turn.  The state, the slots and the
driver are built here; the step's own forward and adjoint come from the ``Reverser``
like any loop body's.

``each_step`` (automatic checkpointing only, ``auto_checkpoint.py``): a snapshot before
every step and plain ``for`` loops, no driver; the step's own sweeps are built with the
loop in ``Analysis.replayed``.  Sound because the reverse sweep reruns trip ``J`` from its
snapshot (the state loaded, what the loop only reads and later code changes restored from
the copy kept once) right before trip ``J``'s adjoint: nothing after the loop and no other
trip runs in between.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from ...kernels import helpers, revolve, rng
from ..analysis import dataflow
from ..analysis.effects import first_draw
from ..analysis.shapes import loop_temps, shape_changer
from ..astutil import binop, exposed_reads
from ..backend.emit import comment
from ..front.desugar import assign, const, name
from ..front.inline import rename, stored_names
from ..ir import LoopSchedule
from ..nodes import clone, walk, walk_stmts
from ..notes import CHECKPOINTED, END, POS, PUSH, carry
from .reverse_flow import strip_pushes
from .tapes import Tapes
from .unit import Part, Unit

#: the forward sweep: snapshots where the schedule places them, every step without a tape
_FORWARD = '''
N = TRIPS
K = COUNT(N, SNAPS)
POS = RESERVE(POS, 0, K)
POS[0] = 0
TOP = 0
SLOTS
STORE
J = 0
while J < N:
    M = SPLIT(J, N, K - 1 - TOP)
    while J < M:
        INDEX
        PLAIN
        J += 1
    if J < N:
        TOP += 1
        POS[TOP] = J
        STORE
'''

#: the reverse sweep: the top segment is split again, or its last step run with its tape
#: and reversed (after advancing to it from the segment's snapshot)
_DRIVER = '''
END = N
LIVE = False
while END > 0:
    A = POS[TOP]
    if not LIVE:
        LOAD
    M = {split}
    if M < END:
        for J in range(A, M):
            INDEX
            PLAIN
        TOP += 1
        POS[TOP] = M
        STORE
        LIVE = True
    else:
{last}        if END == A:
            TOP -= 1
        LIVE = False
'''

#: a step at a time: advance to the segment's last step, run it with its tape, reverse it
_ONE_STEP = '''\
        for J in range(A, END - 1):
            INDEX
            PLAIN
        J = END - 1
        INDEX
        TAPED
        END -= 1
'''
_REVERSE = _DRIVER.format(split="SPLIT(A, END, K - 1 - TOP)", last=_ONE_STEP)

#: automatic checkpointing (``Binomial.loop(block=...)``): the same driver over blocks of
#: ``BS`` steps, sized so that a block's tape stays in cache; the top segment's last block
#: runs with its tape, then its steps' adjoints run, last step first
_FORWARD_BLOCKS = _FORWARD.replace("COUNT(N, SNAPS)", "COUNT((N + BS - 1) // BS, SNAPS)") \
    .replace("SPLIT(J, N, K - 1 - TOP)", "SPLIT(J, N, K - 1 - TOP, BS)")

_REVERSE_BLOCKS = _DRIVER.format(split="SPLIT(A, END, K - 1 - TOP, BS)", last='''\
        M = max(A, (END - 1) // BS * BS)
        for J in range(A, M):
            INDEX
            PLAIN
        for J in range(M, END):
            INDEX
            TAPED
        for J in range(END - 1, M - 1, -1):
            INDEX
            ADJOINT
        END = M
''')

#: every step's snapshot (``Binomial.loop(each_step=True)``): the forward sweep stores the
#: state before each step; the reverse sweep loads it, runs the step with its tape and
#: reverses it, last step first (no second forward run: the schedule of a hand adjoint
#: that keeps the state per step and recomputes a step's stages)
_FORWARD_EACH = '''
N = TRIPS
K = COUNT(N, N)
SLOTS
for J in range(N):
    TOP = J
    STORE
    INDEX
    PLAIN
'''

_REVERSE_EACH = '''
for J in range(N - 1, -1, -1):
    TOP = J
    LOAD
    INDEX
    TAPED
'''


def splice(template: str, names: dict[str, str | ast.expr],
           blocks: dict[str, list[ast.stmt]]) -> list[ast.stmt]:
    """``template`` parsed, its own names renamed (before any block is spliced in: a
    placeholder never reaches the user's statements) and each statement that is just a
    name in ``blocks`` replaced by (a copy of) those statements."""
    body = [rename(s, names) for s in ast.parse(template).body]

    def fill(stmts: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for s in stmts:
            if isinstance(s, ast.Expr) and isinstance(s.value, ast.Name) \
                    and s.value.id in blocks:
                out += clone(blocks[s.value.id])
                continue
            for f in ("body", "orelse"):
                if getattr(s, f, None):
                    setattr(s, f, fill(getattr(s, f)) or [ast.Pass()])
            out.append(s)
        return out

    return fill(body)


class Binomial(Part):
    """The driver of checkpointed loops (``jg.checkpointed``).  Its state: the schedules
    of the loops it drove (``jitgrad show --schedule``)."""

    def __init__(self, unit: Unit, tapes: Tapes, fwd_vars: set[str],
                 block: Callable[[list[ast.stmt]], tuple[list[ast.stmt], list[ast.stmt]]]):
        super().__init__(unit)
        self.tapes, self.fwd_vars, self.block = tapes, fwd_vars, block
        self.schedules: list[LoopSchedule] = []
        #: the last loop's state and the arrays whose elements each snapshot copies
        #: (``auto_checkpoint.py`` sizes the snapshots from them)
        self.last_state: tuple[list[str], list[str]] = ([], [])

    def loop(self, s: ast.For, restored, each_step: bool = False, block: str | None = None):
        """A checkpointed loop on the binomial schedule: snapshots of the loop-carried state
        at revolve's positions, one step's tape at a time (``kernels.revolve``); with
        ``each_step`` a snapshot before every step (see ``_FORWARD_EACH``); with ``block``
        (the name of a steps-per-block count) a block's tape at a time (``_REVERSE_BLOCKS``)."""
        bf, br = self._step(s, each_step)
        if not br:
            loop = ast.copy_location(ast.For(target=s.target, iter=s.iter, body=bf, orelse=[]), s)
            carry(s, loop)
            return [loop], []
        t = s.target.id
        rng = s.iter.args
        start, step = (const(0), const(1)) if len(rng) == 1 else \
            (rng[0], rng[2] if len(rng) > 2 else const(1))
        v, first, stride = self._placeholders(s, each_step)
        index = [assign(t, binop(name(first), ast.Add(), binop(
            name(v["J"]), ast.Mult(), name(stride))))]
        slots, store, load, once_save, once_load, state = self.binomial_state(s, v["K"],
                                                                             v["TOP"])
        if CHECKPOINTED.get(s)[2]:  # in a loop or region: the region around it tapes and
            once_save, once_load = [], []  # restores its entry state (these would copy again)
        slotted = {x.value.args[0].id for x in load if isinstance(x, ast.Expr)} | {
            x.value.args[0].id for x in once_load if isinstance(x, ast.Expr)}
        replay = self.replayed_draws(s, v["K"], v["TOP"], slots, store, load)
        plain = strip_pushes(clone(bf))
        taped = bf + br  # a step pushes its top-level values once each: reserved below
        blocks = {"INDEX": index, "PLAIN": plain, "SLOTS": slots, "STORE": store,
                  "LOAD": load, "TAPED": bf if block else taped, "ADJOINT": br}
        fwd_t, rev_t, room = (_FORWARD_EACH, _REVERSE_EACH, const(1)) if each_step else \
            (_FORWARD, _REVERSE, const(1)) if block is None else \
            (_FORWARD_BLOCKS, _REVERSE_BLOCKS, name(block))
        if block is not None:
            v.update(BS=block, SPLIT=self.global_name("block_split", revolve.block_split))
        self.env.setdefault("range", range)
        self.tapes.restores(dataflow.binds_in([s]) | set(state) | {t})
        note = _note(s, state, bool(replay), each_step, block is not None)
        fwd = [note, assign(first, clone(start)), assign(stride, clone(step)), *once_save,
               *splice(fwd_t, v, blocks),
               # room for one step's (a block's) top-level pushes, once: popped in reverse
               *self.tapes.reserves(s, const(0), room, const(1))]
        rev = [note, *once_load, *replay[:1], *splice(rev_t, v, blocks), *replay[1:]]
        self.schedules.append(self.schedule(s, state, slotted, bf))
        self.last_state = (state, [x.value.args[0].id for x in load if isinstance(x, ast.Expr)
                                   and x.value.args[0].id in state])
        return fwd, rev

    def _step(self, s: ast.For, each_step: bool) -> tuple[list[ast.stmt], list[ast.stmt]]:
        """One step's forward and adjoint statements (``each_step``: each trip replayed
        right before its adjoint, ``Analysis.replayed``)."""
        before = self.an.replayed
        if each_step:
            self.an.replayed = before | {id(s)}
        try:
            return self.block(s.body)
        finally:
            self.an.replayed = before

    def _placeholders(self, s: ast.For,
                      each_step: bool) -> tuple[dict[str, str | ast.expr], str, str]:
        """What the schedule templates' placeholders stand for (fresh names, the helpers'
        global names, the trip count), and the names of the loop's start and stride."""
        fresh = self.namer.fresh
        v: dict[str, str | ast.expr] = {k: fresh(p) for k, p in (
            ("N", "_steps"), ("K", "_slots"), ("POS", "_at"), ("TOP", "_top"), ("J", "_j"),
            ("M", "_m"), ("END", "_end"), ("LIVE", "_live"), ("A", "_a"))}
        first = fresh("_start")
        stride = fresh("_stride")
        np_name = self.global_name("np", __import__("numpy"))
        tc = self.global_name("trip_count", helpers.trip_count)
        if not each_step:
            self.tapes.slot(v["POS"], "int64")
        rng = s.iter.args
        stop = rng[0] if len(rng) == 1 else rng[1]
        v.update(NP=np_name, SPLIT=self.global_name("revolve_split", revolve.revolve_split),
                 RESERVE=self.global_name("tape_reserve", helpers.tape_reserve),
                 COUNT=self.global_name("snapshot_count", revolve.snapshot_count),
                 SNAPS=name(CHECKPOINTED.get(s)[0]),
                 TRIPS=ast.Call(func=name(tc), args=[name(first), clone(stop), name(stride)],
                                keywords=[]))
        return v, first, stride

    def schedule(self, s: ast.For, state: list[str], slotted: set[str],
                 bf: list[ast.stmt]) -> LoopSchedule:
        """What ``jitgrad show --schedule`` says of the loop ``s``: its state's kinds and
        what one step pushes (``bf``: its forward body)."""
        kinds = []
        for n in state:
            k = self.an.kind(n)
            kinds.append((self.parsed.user_name(n), ("array" if n in slotted else
                                                     "array reference") if k.is_array else
                          {"f": "float64", "i": "int64", "b": "bool"}.get(k.cls, "?")))
        counts, arrays = tape_summary(bf, None)
        return LoopSchedule(getattr(s, "lineno", None), CHECKPOINTED.get(s)[1], tuple(kinds),
                            tuple(sorted(counts.items(), key=lambda c: (
                                c[0] is not None, c[0] or 0))), arrays)

    def replayed_draws(self, s: ast.For, K: str, top: str, slots: list[ast.stmt],
                       store: list[ast.stmt], load: list[ast.stmt]) -> list[ast.stmt]:
        """Where a step draws random numbers, the generators' state joins each snapshot
        (``kernels/rng.py``), so that a step run again draws what it drew the first time;
        returns the reverse sweep's first and last statements: the state the forward sweep
        left kept in an extra slot ``K`` and made current again after the driver (the
        gradient call advances the generators as the function does).  Else []."""
        if first_draw(s.body, self.env) is None:
            return []
        buf = self.namer.fresh("_snaps_rng")
        self.tapes.slot(buf, "uint8")
        res, st, ld = (self.global_name(f.__name__, f)
                       for f in (rng.rng_reserve, rng.rng_store, rng.rng_load))

        def call(f: str, *args: ast.expr) -> ast.stmt:
            return ast.Expr(value=ast.Call(func=name(f), args=list(args), keywords=[]))

        slots.append(assign(buf, call(res, name(buf), binop(name(K), ast.Add(),
                                                             const(1))).value))
        store.append(call(st, name(buf), name(top)))
        load.append(call(ld, name(buf), name(top)))
        return [call(st, name(buf), name(K)), call(ld, name(buf), name(K))]

    def refuse_shape_change(self, n: str, body: list[ast.stmt]) -> None:
        """Refuse, at its line, a step that rebinds the state array ``n`` to an array of
        another shape (its snapshots, and its adjoint, need one shape)."""
        temps = loop_temps(body, n)
        for st in walk_stmts(body):
            if isinstance(st, ast.Assign) and isinstance(st.targets[0], ast.Name) \
                    and st.targets[0].id == n and shape_changer(st.value, n, temps,
                                                                 self.env, self.an):
                user = self.parsed.user_name(n)
                raise self.parsed.error(
                    f"the checkpointed loop's state '{user}' changes shape from one step to "
                    "the next; its snapshots (and its gradient) need one shape", st,
                    f"keep '{user}' one shape (preallocate it and write into it), or use a "
                    "plain range")

    def binomial_state(self, s: ast.For, K: str, top: str):
        """What a snapshot of the loop ``s`` holds, as statements: (slot allocations, store
        into slot ``top``, load from it, save before the loop and load once before its
        reverse, the state's names).

        The state is what a step reads before it binds it: scalars and arrays the body
        rebinds (by value; arrays by reference), arrays the body writes in place whose
        elements some step reads (their elements, and the reference where the name is
        rebound), and values the loop only reads but code after it changes (kept once).
        """
        st = _State(self, s, K, top)
        for n in sorted(st.exposed, key=lambda n: (self.an.first_pos(n), n)):
            st.add(n)
        return st.slots, st.store, st.load, st.once_save, st.once_load, st.state


class _State:
    """The snapshot state of one checkpointed loop, built name by name
    (``Binomial.binomial_state``)."""

    def __init__(self, b: Binomial, s: ast.For, K: str, top: str):
        self.b, self.an, self.namer, self.parsed = b, b.an, b.namer, b.parsed
        self.s, self.K, self.top = s, K, top
        body = s.body
        self.exposed = (exposed_reads(body) & b.fwd_vars) - {s.target.id}
        self.rebound = stored_names(body)
        direct: set[str] = set()  # arrays the body writes in place
        for st in walk_stmts(body):
            tgt = st.targets[0] if isinstance(st, ast.Assign) else getattr(st, "target", None)
            if isinstance(tgt, ast.Subscript) and isinstance(tgt.value, ast.Name):
                direct.add(tgt.value.id)
        self.written = set().union(*(self.group(n) for n in direct)) if direct else set()
        read = element_reads(body)
        self.read_groups = set().union(*(self.group(n) for n in read)) if read else set()
        self.slots: list[ast.stmt] = []
        self.store: list[ast.stmt] = []
        self.load: list[ast.stmt] = []
        self.once_save: list[ast.stmt] = []
        self.once_load: list[ast.stmt] = []
        self.state: list[str] = []
        self.restore = b.global_name("restore_into", helpers.restore_into)
        self.snap = b.global_name("snapshot", helpers.snapshot)

    def group(self, n: str) -> set[str]:
        """``n`` and the names sharing its buffer."""
        return set(self.an.aliases(n))

    def changed_after(self, n: str) -> tuple[bool, bool]:
        """(rebound after the loop, its buffer written after it)."""
        end = END.get(self.s)
        rb = any(POS.get(d) > end and n in stored_names([d])
                 for d in self.an.defs.get(n, []) if isinstance(d, ast.stmt))
        wr = any(POS.get(d) > end for m in self.group(n)
                 for d in self.an.inplace.get(m, ()))
        return rb, wr

    def item(self, buf: str) -> ast.expr:
        return ast.Subscript(value=name(buf), slice=name(self.top), ctx=ast.Load())

    def put(self, buf: str, val: ast.expr) -> ast.stmt:
        return ast.Assign(targets=[ast.Subscript(value=name(buf), slice=name(self.top),
                                                 ctx=ast.Store())], value=val)

    def reserve(self, buf: str, size: ast.expr, dtype: str) -> ast.stmt:
        """``buf = tape_reserve(buf, 0, size)``: kept storage (``slot_buffers``)."""
        self.b.tapes.slot(buf, dtype)
        res = self.b.global_name("tape_reserve", helpers.tape_reserve)
        return assign(buf, _call(res, name(buf), const(0), size))

    def add(self, n: str) -> None:
        """Add what a snapshot keeps of ``n`` (if anything)."""
        k = self.an.kind(n)
        defs = self.an.defs.get(n, [])
        if k.is_array and n in self.rebound:
            self.b.refuse_shape_change(n, self.s.body)
        carried = n in self.rebound or n in self.written
        if carried and n not in self.b.args and all(POS.get(self.s) <= POS.get(d)
                                                    for d in defs):
            # (a binding after the loop gives it no value before the loop either: the
            # first step's snapshot would read an unbound name)
            raise self.parsed.error(
                f"the checkpointed loop reads '{self.parsed.user_name(n)}' before a step "
                "assigns it, and it has no value before the loop", self.s,
                f"assign '{self.parsed.user_name(n)}' before the loop")
        if n in self.written and not (self.group(n) & self.read_groups):
            return  # written, never read: every rerun writes the same values again
        if carried and not k.is_array:
            self.scalar(n, k)
        elif carried:
            self.array(n)
        else:
            self.kept_once(n, k)

    def scalar(self, n: str, k) -> None:
        """A scalar the loop carries: one slot each, by value."""
        dtype = {"f": "float64", "i": "int64", "b": "bool_"}.get(k.cls)
        if k.ndim != 0 or dtype is None:
            raise self.parsed.error(
                f"the checkpointed loop carries '{self.parsed.user_name(n)}', whose "
                "kind (a float, int, bool or array) is not known", self.s,
                "use a plain range for this loop")
        buf = self.namer.fresh(f"_snaps_{n.lstrip('_')}")
        self.slots.append(self.reserve(buf, name(self.K), dtype))
        self.store.append(self.put(buf, name(n)))
        self.load.append(assign(n, self.item(buf)))
        self.state.append(n)

    def array(self, n: str) -> None:
        """An array the loop carries: its reference where it is rebound (kept once where
        code after the loop rebinds it), its elements where they change."""
        rb_after, _ = self.changed_after(n)
        if n in self.rebound:
            self.refs(n)
        elif rb_after:
            ref = self.namer.fresh(f"_ref_{n.lstrip('_')}")
            self.once_save.append(assign(ref, name(n)))
            self.once_load.insert(0, assign(n, name(ref)))
        # elements: written in the loop, or (rebound each step) shared with a buffer
        # that something writes, which would change the object a slot refers to
        if n in self.written or self.group(n) & (self.an.written | self.an.aug_written):
            self.elements(n)
        self.state.append(n)

    def kept_once(self, n: str, k) -> None:
        """A value the loop only reads: kept once where code after the loop changes it."""
        rb_after, wr_after = self.changed_after(n)
        if not (rb_after or wr_after):
            return
        keep = self.namer.fresh(f"_kept_{n.lstrip('_')}")
        if k.is_array:
            ref = self.namer.fresh(f"_ref_{n.lstrip('_')}")
            self.once_save += [assign(ref, name(n)), assign(keep, _call(self.snap, name(n)))]
            self.once_load += [assign(n, name(ref)),
                               ast.Expr(value=_call(self.restore, name(n), name(keep)))]
        else:
            self.once_save.append(assign(keep, name(n)))
            self.once_load.append(assign(n, name(keep)))
        self.state.append(n)

    def refs(self, n: str) -> None:
        """Slots holding ``n``'s array object itself (the name is rebound each step)."""
        buf = self.namer.fresh(f"_refs_{n.lstrip('_')}")
        rs = self.b.global_name("ref_slots", revolve.ref_slots)
        self.slots.append(assign(buf, _call(rs, name(n), name(self.K))))
        self.store.append(self.put(buf, name(n)))
        ld = self.b.global_name("load_ref", revolve.load_ref)
        self.load.append(assign(n, _call(ld, name(buf), name(self.top), name(n))))

    def elements(self, n: str) -> None:
        """Slots holding copies of ``n``'s elements."""
        b, K = self.b, self.K
        buf = self.namer.fresh(f"_snaps_{n.lstrip('_')}")
        al = b.global_name("array_slots", revolve.array_slots)
        st = b.global_name("store_slot", revolve.store_slot)
        dtype = _DTYPES.get(self.an.kind(n).cls)
        if dtype is None:
            self.slots.append(assign(buf, _call(al, name(n), name(K))))
        else:  # in storage kept for the call (and between calls)
            mem = self.namer.fresh(f"_ws_slots_{n.lstrip('_')}")
            size = binop(name(K), ast.Mult(), ast.Attribute(value=name(n), attr="size",
                                                            ctx=ast.Load()))
            self.slots.append(self.reserve(mem, size, dtype))
            self.slots.append(assign(buf, _call(al, name(n), name(K), name(mem))))
        self.store.append(ast.Expr(value=_call(st, name(buf), name(self.top), name(n))))
        ld = b.global_name("load_slot", revolve.load_slot)
        self.load.append(ast.Expr(value=_call(ld, name(n), name(buf), name(self.top))))


def _call(f: str, *args: ast.expr) -> ast.expr:
    return ast.Call(func=name(f), args=list(args), keywords=[])


#: the dtype of the storage kept for the snapshots of an array of each kind class
_DTYPES = {"f": "float64", "i": "int64", "b": "bool_", "c": "complex128"}


def tape_summary(stmts: list[ast.stmt], loop: int | None,
                 counts: dict | None = None) -> tuple[dict[int | None, int], int]:
    """What one run of ``stmts`` pushes: {None (once) or an inner loop's line (per trip):
    scalar values}, and the number of arrays pushed (list tapes)."""
    counts = {} if counts is None else counts
    arrays = 0
    for s in stmts:
        if PUSH.get(s):
            if isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Subscript):
                counts[loop] = counts.get(loop, 0) + 1
            elif isinstance(s, ast.Expr):
                arrays += 1
            continue
        inner = getattr(s, "lineno", loop) if isinstance(s, (ast.For, ast.While)) else loop
        for f in ("body", "orelse"):
            arrays += tape_summary(getattr(s, f, []) or [], inner, counts)[1]
    return counts, arrays


def element_reads(body: list[ast.stmt]) -> set[str]:
    """Names whose values (or elements) ``body`` reads: every load but the array named by
    a plain element write ``u[i] = e`` (``u[i] += e`` reads it)."""
    skip: set[int] = set()
    for st in walk_stmts(body):
        if isinstance(st, ast.Assign) and isinstance(st.targets[0], ast.Subscript) \
                and isinstance(st.targets[0].value, ast.Name):
            skip.add(id(st.targets[0].value))
    out: set[str] = set()
    for n in walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and id(n) not in skip:
            out.add(n.id)
    return out


def _note(s: ast.For, state: list[str], draws: bool, each_step: bool,
          blocks: bool = False) -> ast.stmt:
    """The comment heading a checkpointed loop's sweeps: its schedule and what it keeps."""
    what = ", ".join(state + ["the random generators"] * draws) or "nothing"
    line = getattr(s, "lineno", None)
    if each_step:
        return comment(f"loop (line {line}): a snapshot of {what} before each step; "
                       "each step run again with its tape where it is reversed")
    which = "loop" if CHECKPOINTED.get(s)[1] == "auto" else "jg.checkpointed loop"
    tape = "a block's tape (steps sized to stay in cache)" if blocks else "one step's tape"
    return comment(f"{which} (line {line}): binomial schedule (revolve), "
                   f"snapshots of {what}; {tape} at a time")
