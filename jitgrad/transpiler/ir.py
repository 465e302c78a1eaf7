"""The generated-code IR: what a mode pass produces and a lowering turns into source.

Reverse mode produces an ``Adjoint``: the sweeps of one specialisation as statement
lists plus the names that tie them together.  Nothing here is a Python function
yet: ``lower`` assembles the variants (value and gradient, gradient only, one
sweep for display) from the same record, so a new variant or target is a new
lowering option, not another hand-assembled function.  Forward mode (tangents)
and the CUDA target plug in as another record and another lowering.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Adjoint:
    """Reverse mode's code for one (wrt, argument kinds) specialisation."""

    #: the user's function name (generated functions are named after it)
    name: str
    #: the primal's parameters, in order
    params: tuple[str, ...]
    #: the parameter holding the output cotangent (a tuple of them for several outputs)
    seed: str
    #: copies of arguments the code writes (the caller's arrays are never written)
    prologue: tuple[ast.stmt, ...]
    #: tape and workspace declarations (``_tape = np.empty(0, np.float64)``...)
    workspace: tuple[ast.stmt, ...]
    #: the primal with pushes of what the adjoint sweep needs
    forward: tuple[ast.stmt, ...]
    #: adjoints of buffers and ``wrt`` arguments set to zero, adjoint views made
    init: tuple[ast.stmt, ...]
    #: the statements in reverse, each followed by its pullback
    adjoint: tuple[ast.stmt, ...]
    #: the returned values, read after ``forward`` (held aside where the adjoint restores them)
    results: tuple[ast.expr, ...]
    #: the adjoint names returned as the gradient, in ``wrt`` order
    grads: tuple[str, ...]
    #: adjoint name -> the adjoint it is a view of (writes through either reach both)
    shared: dict[str, str] = field(default_factory=dict)
    #: functions that compiled code calls through ``hook`` (compiled with it under jit)
    callables: frozenset[str] = frozenset()
    #: (name, dtype) of the typed tapes declared in ``workspace``: the compiled variants take
    #: them in ``ws`` and return them, grown, so that later calls reuse them
    reused: tuple[tuple[str, str], ...] = ()
    #: (adjoint, storage name, name of the zeroing helper) of the adjoint buffers of local
    #: float arrays (zeroed in ``init``, never returned): the compiled variants zero them in
    #: workspace memory kept between calls, taken and returned like the tapes
    buffers: tuple[tuple[str, str, str], ...] = ()
    #: the checkpointed loops run on the binomial schedule
    schedules: tuple[LoopSchedule, ...] = ()
    #: the list tapes of float array copies, which the compiled variants may copy into
    #: workspace memory kept between calls (``backend/snapshots.py``)
    snapshots: Snapshots | None = None
    #: the parameter the compiled variants take their kept buffers in (``Namer.workspace``)
    ws: str = "_ws"
    #: the name generated code reaches numpy by (``np`` unless the user's code binds it)
    np: str = "np"
    #: the names by which generated code calls the helpers that read their second argument
    #: only for its shape (the primitive table's ``shape_args``: ``unbroadcast``...), as the
    #: namespace binds them: never a function of the user's that is spelled the same
    shape_reads: tuple[str, ...] = ()
    #: split helpers and their gradients the code calls (``front/split.py``), compiled with
    #: it under jit like ``callables`` (which, unlike these, keep the sweeps' order)
    compiled: frozenset[str] = frozenset()

    def body(self) -> list[ast.stmt]:
        """Both sweeps in execution order (the lowering copies before changing them)."""
        return [*self.prologue, *self.workspace, *self.forward, *self.init, *self.adjoint]


@dataclass(frozen=True)
class Snapshots:
    """List tapes pushed with copies of float arrays (``_tape_u.append(snapshot(u))``) and
    the names the lowering uses to put those copies in a kept store (``ws_snapshot``)."""

    #: the tapes
    tapes: tuple[str, ...]
    #: the name generated code calls ``kernels.helpers.snapshot`` by
    snapshot: str
    #: the names it calls ``kernels.snapshots.ws_snapshot`` and ``ws_grow`` by
    helper: str
    grow: str
    #: the kept store, and the number of its elements a call has used so far
    store: str
    cursor: str


@dataclass(frozen=True)
class LoopSchedule:
    """A checkpointed loop on the binomial schedule, as ``jitgrad show --schedule`` reports
    it (the counts come from ``jitgrad.schedule`` for a number of steps)."""

    #: the loop's line in the user's source
    line: int | None
    #: the ``snapshots=`` argument as written (``"None"``: the default)
    snapshots: str
    #: what one snapshot holds: (the user's name, its kind: ``float64``, ``int64``,
    #: ``bool``, or ``array`` / ``array reference``)
    state: tuple[tuple[str, str], ...]
    #: one step's tape: (values pushed, ``None`` for each step or the line of the inner
    #: loop for each of whose trips), arrays pushed counted apart (``arrays``)
    tape: tuple[tuple[int, int | None], ...]
    arrays: int = 0
    #: automatic checkpointing's loop (``modes/auto_checkpoint.py``): the threshold in bytes
    #: its tape is compared with where it starts; None: a ``jg.checkpointed`` loop
    automatic: int | None = None
    #: (automatic) a snapshot before each step, not blocks of steps
    each_step: bool = False


@dataclass(frozen=True)
class Tangent:
    """Forward mode's code for one (wrt, argument kinds) specialisation: the primal with
    a tangent statement next to each statement of an active value (``modes/forward.py``)."""

    #: the user's function name (generated functions are named after it)
    name: str
    #: the primal's parameters, in order
    params: tuple[str, ...]
    #: the tangent parameters, one per ``wrt`` argument (``x_dot``...)
    seeds: tuple[str, ...]
    #: copies of arguments (and their tangents) the code writes
    prologue: tuple[ast.stmt, ...]
    #: the primal with tangent statements interleaved
    sweep: tuple[ast.stmt, ...]
    #: the returned values, and their tangents (zeros for inactive outputs)
    results: tuple[ast.expr, ...]
    tangents: tuple[ast.expr, ...]
    #: the parameter of kept buffers (``Namer.workspace``)
    ws: str = "_ws"

    def body(self) -> list[ast.stmt]:
        """The statements in execution order."""
        return [*self.prologue, *self.sweep]


def result_expr(values: list[ast.expr] | tuple[ast.expr, ...]) -> ast.expr:
    """One value as itself, several as a tuple (how a Python function returns them)."""
    vals = list(values)
    return vals[0] if len(vals) == 1 else ast.Tuple(elts=vals, ctx=ast.Load())


__all__ = ["Adjoint", "LoopSchedule", "Snapshots", "Tangent", "result_expr"]
