"""Reverse: build the forward sweep and the adjoint sweep of a normalized body.

Store on overwrite, restore in reverse: a value the adjoint reads is pushed on a
tape only if something may redefine it before the adjoint runs (a later
statement, or the next iteration of a loop around both); loop indices are
recomputed by running the loop backwards, never pushed.  Rules are inlined from
their templates: forward part into the forward sweep, pullback into the adjoint.

The pass is four components (each with its own state) under one walker: the
store-or-recompute ``Planner`` (``recompute.py``) and the ``Tapes`` that write its
decisions out (``tapes.py``), the ``Statements`` reverser (``statements.py``),
``ControlFlow`` (``reverse_flow.py``) and the ``Binomial`` driver (``binomial.py``).
``Reverser.block`` walks a block backwards and hands each statement to one of them.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from ...kernels import helpers
from ..analysis import dataflow
from ..analysis.analyse import Analysis
from ..backend.emit import comment
from ..backend.optimize import propagate_copies
from ..front.desugar import assign, const, name
from ..front.parse import Parsed
from ..ir import Snapshots
from ..naming import Namer
from ..notes import CHECKPOINTED, POS, SOURCE_LINE, checkpoint
from .auto_checkpoint import AutoCheckpoint
from .binomial import Binomial
from .policy import ReadPolicy
from .recompute import Planner
from .reverse_flow import ControlFlow
from .statements import Statements
from .tapes import Tapes
from .unit import Unit


@dataclass
class Sweeps:
    """The pieces of the generated gradient function."""

    prologue: list[ast.stmt]
    forward: list[ast.stmt]
    init: list[ast.stmt]
    adjoint: list[ast.stmt]
    grads: list[str]
    restored: set[str] = field(default_factory=set)
    callables: set[str] = field(default_factory=set)
    #: adjoint name -> the adjoint it is a view of (accumulations into either conflict)
    shared: dict[str, str] = field(default_factory=dict)
    #: tape declarations (run after ``prologue``)
    workspace: list[ast.stmt] = field(default_factory=list)
    #: (name, dtype) of the typed tapes among them (reused across calls, see ``Adjoint``)
    reused: list[tuple[str, str]] = field(default_factory=list)
    #: adjoint buffers kept in workspace memory (``Adjoint.buffers``)
    buffers: list[tuple[str, str, str]] = field(default_factory=list)
    #: the checkpointed loops on the binomial schedule (``jitgrad show --schedule``)
    schedules: list = field(default_factory=list)
    #: the list tapes of float array copies (``Adjoint.snapshots``)
    snapshots: Snapshots | None = None
    #: split helpers and their gradients called (``Adjoint.compiled``)
    compiled: set[str] = field(default_factory=set)


class Reverser:
    """Walks the body backwards, handing each statement to its component; see the module
    docstring."""

    def __init__(self, unit: Unit, body: list[ast.stmt], auto_checkpoint: int | None = None):
        self.unit = unit
        #: the names the forward sweep defines (read by the tapes, grown by statements)
        fwd_vars = set(unit.args) | set(unit.an.defs)
        # what the adjoint reads again instead of finding it on a tape (``policy``)
        policy = ReadPolicy(body, unit.an, unit.env)
        self.planner = Planner(unit.an, unit.env, unit.args, body, unit.has_break,
                               fwd_vars, policy, counters=auto_checkpoint is None)
        self.tapes = Tapes(unit, self.planner, fwd_vars)
        self.statements = Statements(unit, self.tapes, fwd_vars)
        self.flow = ControlFlow(unit, self.tapes, fwd_vars, self.block)
        self.binomial = Binomial(unit, self.tapes, fwd_vars, self.block)
        # top-level loops whose tape would exceed ``auto_checkpoint`` bytes: binomial
        self.auto = AutoCheckpoint(unit, self.tapes, self.statements, self.flow,
                                   self.binomial, body, auto_checkpoint)

    def block(self, stmts: list[ast.stmt], top: bool = False):
        """The forward and adjoint sweeps of ``stmts`` (``top``: the function's body, whose
        adjoint starts from the seeds)."""
        an = self.unit.an
        rev: list[ast.stmt] = self.seeds() if top else []
        restored: set[str] = set()
        last = None
        local = [n for n, b in an.block_local.items() if b == id(stmts)]
        chunks: list[list[ast.stmt]] = []  # each statement's forward, last statement first
        kept: list[ast.stmt] = []  # arrays given back at the start of this trip's adjoint
        for k in range(len(stmts) - 1, -1, -1):
            s = stmts[k]
            # a write through a name sharing a buffer changes every name on that buffer
            # what a later statement restored of this one's outputs: the values it made
            self.tapes.made = restored & set(dataflow.binds(s, elements=True))
            restored -= {m for n in dataflow.binds_in([s])
                         for m in an.aliases(n)}
            f, r = self.stmt(s, restored)
            f, r = self.tapes.restore_before(s, f, r, restored)
            f = self.tapes.keep_after(stmts, k, f, kept)
            chunks.append(list(f))  # as it is now, like the slice assignment was
            line = getattr(s, "lineno", None)
            if r and line and line != last and not isinstance(s, (ast.For, ast.While, ast.If)):
                r = [self.source_comment(line), *r]
                last = line
            elif r:
                last = line if not isinstance(s, (ast.For, ast.While, ast.If)) else None
            rev += r
        # joined once (prepending each statement's forward was quadratic in the block)
        fwd: list[ast.stmt] = [x for f in reversed(chunks) for x in f]
        rev[:0] = kept
        if rev and local:  # arrays made afresh in this block: zero their adjoints on entry
            rev[:0] = [self.statements.adjoint_view(n) if n in an.views else
                       assign(self.unit.adj(n), self.unit.zero(n))
                       for n in sorted(local, key=lambda n: POS.get(an.defs[n][0]))]
        return fwd, rev

    def seeds(self) -> list[ast.stmt]:
        """The adjoint's start: each active returned value's adjoint is its seed."""
        u = self.unit
        seeds: list[ast.stmt] = []
        for k, r in enumerate(u.returns):
            if u.is_active(r):
                seed = name(u.namer.seed) if len(u.returns) == 1 else ast.Subscript(
                    value=name(u.namer.seed), slice=const(k), ctx=ast.Load())
                self.statements.contribute(r.id, seed, seeds)
        return seeds

    def source_comment(self, line: int) -> ast.stmt:
        """A marker that ``emit`` turns into ``# line N: <the user's source line>``."""
        note = comment(f"line {line}: {self.unit.parsed.source_line(line).strip()}")
        SOURCE_LINE.set(note, line)
        return note

    def stmt(self, s: ast.stmt, restored: set[str]):
        """The forward and adjoint of one statement, from the component that handles it."""
        if checkpoint(s):
            return self.flow.checkpoint_(s, restored)
        if isinstance(s, ast.For) and CHECKPOINTED.get(s):
            return self.binomial.loop(s, restored)
        if self.auto.candidate(s):
            return self.auto.loop(s, restored)
        if isinstance(s, ast.If):
            return self.flow.if_(s, restored)
        if isinstance(s, ast.For):
            return self.flow.for_(s, restored)
        if isinstance(s, ast.While):
            return self.flow.while_(s, restored)
        return self.statements.simple(s, restored)


def reverse(parsed: Parsed, body: list[ast.stmt], an: Analysis, env: dict, namer: Namer,
            args: list[str], wrt: list[str], returns: list[ast.expr],
            auto_checkpoint: int | None = None) -> Sweeps:
    """Build the forward and adjoint sweeps (see module docstring); ``auto_checkpoint``:
    the tape size in bytes above which a top-level loop runs on the binomial schedule
    (``auto_checkpoint.py``; None: never)."""
    unit = Unit(parsed, an, env, namer, args, wrt, returns)
    r = Reverser(unit, body, auto_checkpoint)
    for n in args:
        namer.adjoint(n)
    fwd, rev = r.block(body, top=True)
    prologue = [assign(a, ast.Call(func=ast.Attribute(value=name(a), attr="copy",
                                                      ctx=ast.Load()), args=[], keywords=[]))
                for a in args if a in an.args_written]
    init, kept = adjoint_buffers(unit, r.statements)
    rev = propagate_copies(rev, {unit.adj(n) for n in an.modes if an.modes[n] in ("buffer",
                                                                                "view")},
                           namer)
    tapes, reused = r.tapes.declarations()
    shared = {unit.adj(n): unit.adj(b) for n, (b, _) in an.views.items()
              if an.modes.get(n) == "view"}
    return Sweeps(prologue, fwd, init, rev, [unit.adj(w) for w in wrt],
                  r.tapes.restored_names, r.statements.callables, shared, tapes, reused, kept,
                  r.binomial.schedules, r.tapes.snapshots(), r.statements.compiled)


def adjoint_buffers(u: Unit, statements: Statements
                    ) -> tuple[list[ast.stmt], list[tuple[str, str, str]]]:
    """The adjoint buffers' zeroing at the top (and the views' aliases), and those kept in
    workspace memory between calls (``Adjoint.buffers``)."""
    an, args, wrt = u.an, u.args, u.wrt
    init: list[ast.stmt] = []
    kept: list[tuple[str, str, str]] = []  # adjoint buffers kept between calls
    buffers = sorted({n for n, m in an.modes.items() if m == "buffer"} | set(wrt),
                     key=lambda n: (n not in args, n))
    for n in buffers:
        if n in an.block_local:
            continue
        k = an.kind(n)
        if k.is_array and n not in args and n not in an.top_defined:
            un = u.parsed.user_name(n)
            raise u.parsed.error(f"the array '{un}' carries a gradient, is first created "
                                 "inside a loop or branch and is used after it",
                                 min(an.defs.get(n, [None]), key=lambda d: POS.get(d)),
                                 f"create '{un}' before the loop or branch (e.g. '{un} = "
                                 "np.zeros(...)') and fill it inside")
        init.append(assign(u.adj(n), u.zero(n)))
        # not with hooks: a hook may keep the gradient it is passed
        if n not in args and n not in wrt and k.is_array and k.ndim and k.cls == "f" \
                and not statements.callables:
            kept.append((u.adj(n), u.namer.fresh("_ws_" + u.adj(n).lstrip("_")),
                         u.global_name("ws_zeros_like", helpers.ws_zeros_like)))
    for n in sorted(an.views, key=lambda n: POS.get(an.views[n][1])):
        if an.modes.get(n) == "view" and n not in an.block_local:
            init.append(statements.adjoint_view(n))
    return init, kept
