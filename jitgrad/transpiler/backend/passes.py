"""The backend as a list: the steps that turn one specialisation's IR into source.

``BACKEND`` is run once per variant of ``lower.VARIANTS`` (value and gradient; gradient
only) on a ``Lowering``, the variant's function as it is being written; the variants of
one specialisation share a ``Context`` (the IR, and memos of what one variant computed
that the other reuses: the same whichever variant is lowered first, so a variant may be
lowered only when it is first asked for, ``lower_variant``). Each step is a
``BackendPass``: a name, a function that updates the ``Lowering``, and the facts it
*requires*, *provides* and *invalidates* (``LIVE``, ``FUSED``, ``TEXT``...). ``check``
runs when the list is built (at import): a step that requires a fact that no step before
it provides, or that a step before it invalidates with no step providing it again in
between, raises ``OrderError``. A step that works on the tree also invalidates ``TEXT``.
At run time a step invalidates its facts only where it changed the body: a recomputing
step (``dead_after_fuse``) then has work to do.

``stage(func, NAME, ...)`` in ``pipeline.py`` (``jitgrad show --stage NAME``,
``f.source(stage=NAME)``) prints the variant ``shows`` after step NAME; every step's
docstring carries a before/after example (the user's function, then that variant after
the step) that ``tests/test_passes.py`` runs as a doctest with the passes' examples.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..analysis import dataflow
from ..analysis.shape_classes import SCALAR, ShapeClasses
from ..ir import Adjoint
from ..naming import is_tape, names_in
from ..nodes import loaded_ids, rewrite_blocks
from . import emit
from .ascending import ascending
from .bounds import bounds_checks
from .cached_calls import cached_calls
from .elements import fuse_elements
from .fuse import fuse_loops
from .jit import global_reads
from .loop_buffers import loop_buffers
from .lower import VARIANTS, result_return, unchecked_tapes, with_unit_seed, with_workspace
from .lower import _without_dead_loops as without_dead_loops
from .moves import adjoint_moves
from .optimize import dead_code, dead_code_variants
from .outer_updates import outer_updates
from .shape_only import shape_stand_ins
from .trip_memo import trip_memos
from .unsigned import unsigned_indices
from .view_updates import LOOP, copied_array, view_updates
from .write_once import write_once
from .zero_skip import zero_guards

# --- the facts the steps declare ---------------------------------------------------------

#: the body's statements are the IR's own objects (a step copies only what it changes):
#: found again by identity (the workspace's declarations, the adjoint sweep's statements)
IR = "ir statements"
#: the variant's adjoint buffers are still made by ``np.zeros_like`` (not from a workspace)
ZEROINGS = "zeroings explicit"
#: no statement is left that nothing the variant returns needs (liveness)
LIVE = "dead code removed"
#: the gradient-only variant of a scalar function reads 1.0 for its seed
UNIT_SEED = "unit seed"
#: no loop whose results are all bound again before they are read
NO_DEAD_LOOPS = "dead loops removed"
#: independent forward loops run fused with their reversed loops
FUSED = "loops fused"
#: gradients a loop writes first are written once, not zeroed
WRITTEN_ONCE = "written once"
#: arrays the adjoint reads only for their shape have a stand-in
STAND_INS = "shape stand-ins"
#: chains of whole-array statements run as loops over the elements (``jit=True``)
ELEMENTS = "element loops"
#: zeroed adjoint buffers whose first add may take the added array's buffer take it
MOVES = "adjoint moves"
#: tapes, adjoint buffers and snapshot copies come from the workspace parameter
WORKSPACE = "workspace threaded"
#: prange loops parallel where their iterations are independent
PARALLEL = "prange parallel"
#: loops of the adjoint sweep that add only zeros where one cotangent is zero skip then
ZERO_SKIPS = "zero cotangents skipped"
#: NumPy calls Numba would compile in every process call helpers cached on disk
CACHED_CALLS = "cached numpy calls"
#: augmented assignments into views of arrays update the view (``jit=True``)
VIEW_UPDATES = "view updates"
#: outer products of a matrix product's adjoint are added into their buffer in place
OUTER_UPDATES = "outer updates"
#: every array index is checked explicitly, once per loop where it can (``jit=True``)
BOUNDS = "bounds checked"
#: indices proved ``>= 0`` in innermost loops are read unsigned (``jit=True``)
UNSIGNED = "unsigned indices"
#: ``Lowering.text`` is the source of the function as it stands
TEXT = "text"
#: reversed loops whose iterations are independent run ascending
ASCENDING = "ascending loops"
#: a fused loop's pushes the same in every trip are made in its first trip only
TRIP_MEMOS = "trip memos"
#: a typed tape's elements are read and written through the unchecked helpers
ACCESSORS = "tape accessors"

#: what holds before the first step: the IR, zeroings made by ``np.zeros_like``
GIVEN = frozenset({IR, ZEROINGS})
#: what must hold after the last step (what ``reverse_passes.lower_`` reads)
WANTED = frozenset({LIVE, WORKSPACE, TEXT, ACCESSORS})


class OrderError(ValueError):
    """A backend list whose steps run before what they require holds."""


@dataclass
class Context:
    """What the variants of one specialisation share while they are lowered."""

    ir: Adjoint
    #: variant -> the generated function's name
    names: dict[str, str]
    #: variant -> what it takes in ``_ws`` and returns (filled by ``workspace``)
    workspaces: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: the function returns one scalar: ``grad_only`` is only ever seeded with 1.0
    unit_seed: bool = False
    #: the builtins ``max``, ``range`` and ``len`` are the module's (``write_once``)
    once: bool = False
    #: the float arrays (``shape_only``)
    arrays: frozenset[str] = frozenset()
    #: the adjoints of float scalars (``zero_skip``: the cotangents a loop may be skipped on)
    cotangents: frozenset[str] = frozenset()
    #: makes the prange rewrite (``prange.Parallel``) of ``parallel=True`` code, else None:
    #: one per variant, each with the names as they were before either was lowered
    parallel: Callable[[], Any] | None = None
    #: the kinds of the names, adjoints too (None where unknown), for the bounds step; None:
    #: Numba checks every index (``jit=False``, ``parallel=True``)
    kinds: Callable[[str], Any] | None = None
    #: a variant's indices are all checked explicitly: compiled with ``boundscheck=False``
    bounds: dict[str, bool] = field(default_factory=dict)
    #: the name generated code calls a helper of ``kernels.helpers`` by
    accessor: Callable[[str], str] = str
    #: compiled by Numba on the CPU, not ``parallel=True``: ``cached_calls`` rewrites
    cached_calls: bool = False
    #: the dimensions of the float (and scalar) names, adjoints included; None: no element
    #: loops (``backend/elements.py``: ``jit=False``, or second order's input)
    ndims: dict[str, int] | None = None
    #: a variant's code has element loops (made for float64 arguments only)
    element_loops: bool = False
    #: what the generated code's names refer to
    env: dict[str, Any] = field(default_factory=dict)
    #: whether a name is an array, from the kinds (adjoints too); None where unknown
    is_array: Callable[[str], bool | None] | None = None
    #: per variant: loop pairs found dependent (``fuse_loops``; a verdict reads the
    #: variant's whole body, so it is not shared)
    dependent: dict[str, set[tuple[int, int]]] = field(default_factory=dict)
    #: the text of each statement printed once (the variants share statements)
    texts: emit.Texts = field(default_factory=dict)
    #: per variant lowered: the global names it reads (``global_names``)
    reads: dict[str, set[str] | None] = field(default_factory=dict)
    _returns: dict[str, ast.Return] = field(default_factory=dict)
    _live: dict[str, list[ast.stmt]] | None = None
    _rewrite: dict[str, Any] = field(default_factory=dict)
    _accessors: dict[str, str] | None = None
    #: the statements given the tape accessors, by the original's id (``unchecked_tapes``)
    unchecked: dict[int, tuple[ast.stmt, ast.stmt]] = field(default_factory=dict)

    def returns(self, variant: str) -> ast.Return:
        """The variant's return statement (one object per variant)."""
        if not self._returns:  # (the gradient-only variant's first: it returns less)
            self._returns = {v: result_return(self.ir, v) for v in ("grad_only", "grad")}
        return self._returns[variant]

    def live(self, variant: str) -> list[ast.stmt]:
        """The variant's live statements, from one propagation: what the gradients need,
        then what the value adds (``dead_code_variants``), as far as ``variant`` (the
        gradient-only variant's do not depend on whether the value's were found too)."""
        if self._live is None or variant not in self._live:
            order = _LIVE_ORDER[:_LIVE_ORDER.index(variant) + 1]
            roots = [loaded_ids(self.returns(v)) for v in order]
            bodies = dead_code_variants(self.ir.body(), roots, self.ir.shared, env=self.env)
            self._live = dict(zip(order, bodies, strict=True))
        return self._live[variant]

    def rewrite(self, variant: str) -> Any:
        """The variant's prange rewrite, made once (``parallel``: its fresh names do not
        depend on whether the other variant was lowered first)."""
        if variant not in self._rewrite:
            self._rewrite[variant] = self.parallel()
        return self._rewrite[variant]

    @property
    def tapes(self) -> set[str]:
        """The typed tapes (not a checkpoint's snapshot stack)."""
        return {t for t, _ in self.ir.reused if is_tape(t)}

    def accessors(self) -> dict[str, str]:
        """The names ``tape_get`` and ``tape_put`` are called by (found once)."""
        if self._accessors is None:
            tapes = self.tapes
            self._accessors = {n: self.accessor(n) if tapes else n
                               for n in ("tape_get", "tape_put")}
        return self._accessors


#: the variants in the order ``Context.live`` propagates to them (each returns more)
_LIVE_ORDER = ("grad_only", "grad")


@dataclass
class Lowering:
    """One variant's function as the steps write it: its body (ending in its return),
    its parameters, and its text once printed."""

    ctx: Context
    variant: str
    fname: str
    body: list[ast.stmt] = field(default_factory=list)
    params: list[str] = field(default_factory=list)
    text: str = ""
    #: facts a step invalidated by changing the body, not yet provided again
    stale: set[str] = field(default_factory=set)

    def function(self) -> ast.FunctionDef:
        """The function as it stands."""
        return emit.function_def(self.fname, self.params, self.body)


@dataclass(frozen=True)
class BackendPass:
    """One backend step: ``run`` updates a ``Lowering``; the facts it declares order it."""

    name: str
    run: Callable[[Lowering], None]
    requires: frozenset[str] = frozenset()
    provides: frozenset[str] = frozenset()
    invalidates: frozenset[str] = frozenset()
    #: works on the printed text (also run on the one-sweep functions, ``sweep_text``)
    on_text: bool = False
    #: a tree step run on the one-sweep functions too (``sweep_text``)
    sweeps: bool = False
    #: the variant ``stage`` shows after this step
    shows: str = "grad"

    @property
    def doc(self) -> str:
        return self.run.__doc__ or ""

    @property
    def spoils(self) -> frozenset[str]:
        """What running it makes untrue: ``invalidates``, and the text for a tree step."""
        return self.invalidates if self.on_text else self.invalidates | {TEXT}

    def show(self, s: Lowering) -> str:
        """The function after this step: its text, or the tree printed."""
        return s.text if self.on_text else emit.unparse(s.function())


def step(name: str, run: Callable[[Lowering], None], requires: Iterable[str] = (),
         provides: Iterable[str] = (), invalidates: Iterable[str] = (),
         **kw: Any) -> BackendPass:
    """A ``BackendPass`` with its facts given as any iterables of names."""
    return BackendPass(name, run, frozenset(requires), frozenset(provides),
                       frozenset(invalidates), **kw)


def check(steps: list[BackendPass], given: Iterable[str] = GIVEN,
          wanted: Iterable[str] = WANTED) -> list[BackendPass]:
    """``steps`` if each step's requirements hold when it runs and ``wanted`` holds after
    the last (starting from ``given``); else ``OrderError`` naming the step and fact."""
    held = set(given)
    spoiled: dict[str, str] = {}
    seen: set[str] = set()
    for p in steps:
        if p.name in seen:
            raise OrderError(f"backend step {p.name!r} is listed twice")
        seen.add(p.name)
        missing = sorted(p.requires - held)
        if missing:
            raise OrderError(f"backend step {p.name!r} requires {missing[0]!r}, which "
                             + _why_missing(missing[0], spoiled))
        for fact in p.spoils:
            held.discard(fact)
            spoiled[fact] = p.name
        held |= p.provides
    missing = sorted(set(wanted) - held)
    if missing:
        raise OrderError(f"the backend list ends without {missing[0]!r}, which "
                         + _why_missing(missing[0], spoiled))
    return steps


def listing(steps: list[BackendPass] | None = None) -> str:
    """The list (``BACKEND``), one line per step: what it requires, provides, invalidates."""
    lines = []
    for p in BACKEND if steps is None else steps:
        line = f"{p.name}: requires {', '.join(sorted(p.requires)) or 'nothing'}; " \
               f"provides {', '.join(sorted(p.provides))}"
        if p.invalidates:
            line += f"; invalidates {', '.join(sorted(p.invalidates))}"
        lines.append(line)
    return "\n".join(lines)


def _why_missing(fact: str, spoiled: dict[str, str]) -> str:
    if fact in spoiled:
        return f"{spoiled[fact]!r} invalidates before it, and no step in between provides"
    return "no step before it provides"


def run(s: Lowering, until: str | None = None,
        steps: list[BackendPass] | None = None) -> Lowering:
    """Run the steps (``BACKEND``) on ``s`` up to and including ``until``."""
    for p in BACKEND if steps is None else steps:
        before = s.body
        p.run(s)
        if p.invalidates and s.body != before:
            s.stale |= p.invalidates
        s.stale -= p.provides
        if p.name == until:
            break
    return s


def start(ctx: Context, variant: str) -> Lowering:
    """The variant before the first step: no body yet, the parameters and the seed."""
    return Lowering(ctx, variant, ctx.names[variant], params=[*ctx.ir.params, ctx.ir.seed])


def lower_variant(ctx: Context, variant: str) -> Lowering:
    """``variant`` through the whole list, the global names it reads kept in ``ctx.reads``:
    the same code whether or not the other variant was lowered before."""
    s = run(start(ctx, variant))
    ctx.reads[variant] = global_names(ctx, [s])
    return s


def lower_variants(ctx: Context) -> dict[str, Lowering]:
    """Every one of ``VARIANTS`` through the whole list, in order."""
    return {v: lower_variant(ctx, v) for v in VARIANTS}


def changes(ctx: Context) -> str:
    """Every step in turn on one specialisation (``jitgrad show --stage backend``): the
    step's name and the variant it ``shows``, then what it changed there, as the lines of
    a diff of that variant before and after it (``-`` removed, ``+`` added), or ``(no
    change)``.  The first step's function is printed whole, and so is the function
    before a step that shows another variant than the step before it."""
    shown: dict[str, list[str]] = {}
    for v in VARIANTS:  # (both variants through the list, in ``lower_variants``' order)
        s, shown[v] = start(ctx, v), []
        for p in BACKEND:
            run(s, steps=[p])
            shown[v].append(p.show(s).rstrip("\n"))
    out: list[str] = []
    for k, p in enumerate(BACKEND):
        now = shown[p.shows][k]
        if k == 0:
            out += [f"=== {p.name} ({p.shows}) ===", now]
            continue
        before = shown[p.shows][k - 1]
        if p.shows != BACKEND[k - 1].shows:
            out += [f"=== {p.shows} before {p.name} ===", before]
        out.append(f"=== {p.name} ({p.shows}) ===")
        out += _diff(before, now) or ["(no change)"]
    return "\n".join(out) + "\n"


def _diff(before: str, now: str) -> list[str]:
    """The changed lines of ``now`` against ``before`` with one line of context, each
    hunk headed by ``@@`` and the line numbers (``difflib.unified_diff``)."""
    import difflib

    lines = difflib.unified_diff(before.splitlines(), now.splitlines(), n=1, lineterm="")
    return [line for line in lines if not line.startswith(("---", "+++"))]


def sweep_text(ctx: Context, fn: ast.FunctionDef) -> str:
    """The text of a one-sweep function (``lower.PARTS``): the text steps and the tree
    steps marked ``sweeps`` only."""
    s = Lowering(ctx, fn.name, fn.name, fn.body, [a.arg for a in fn.args.args])
    return run(s, steps=[p for p in BACKEND if p.on_text or p.sweeps]).text


def global_names(ctx: Context, lowered: Iterable[Lowering]) -> set[str] | None:
    """The global names the lowered variants read (``jit.global_reads``; None: find them
    in the text), with the tape accessors their text calls."""
    done = list(lowered)
    reads = global_reads([s.function() for s in done])
    if reads is None:
        return None
    tapes = ctx.tapes
    return reads | {n for n in ctx.accessors().values()
                    if tapes and any(n + "(" in s.text for s in done)}


# --- the steps -------------------------------------------------------------------------


def dead_code_(s: Lowering) -> None:
    """The variant's statements that what it returns needs, then its return: one
    propagation for both variants (``optimize.dead_code_variants``).  Shown: the
    gradient-only variant, without the value's own work (``_t = _t2 + _t3``).

    >>> print(example("dead_code", '''
    ... def f(x, y):
    ...     return x * y + math.sin(x)
    ... '''))
    def f_gradonly_1(x, y, _dret):
        # line 2: return x * y + math.sin(x)
        dx = _dret * np.cos(x) + _dret * y
        dy = _dret * x
        return (None, (dx, dy))
    """
    s.body = [*s.ctx.live(s.variant), s.ctx.returns(s.variant)]


def unit_seed_(s: Lowering) -> None:
    """For a function returning one scalar, the gradient-only variant (what ``f.grad``
    runs) has the constant 1.0 for every read of its seed: Numba folds ``g * 1.0`` away.

    >>> print(example("unit_seed", '''
    ... def f(x, y):
    ...     return x * y + math.sin(x)
    ... '''))
    def f_gradonly_1(x, y, _dret):
        # line 2: return x * y + math.sin(x)
        dx = 1.0 * np.cos(x) + 1.0 * y
        dy = 1.0 * x
        return (None, (dx, dy))
    """
    if s.ctx.unit_seed and s.variant == "grad_only":
        s.body = with_unit_seed(s.body, s.ctx.ir.seed)


def dead_loops_(s: Lowering) -> None:
    """Loops whose results are all bound again before they are read go, and then what
    only they read (``optimize.dead_loops``).  Shown: the gradient-only variant, whose
    adjoint recomputes all it reads of the forward loop (here after ``unit_seed``).

    >>> print(example("dead_loops", '''
    ... def f(x, c):
    ...     s = 0.0
    ...     for i in range(x.shape[0]):
    ...         s += c * x[i] * x[i]
    ...     return s
    ... ''', args=(np.ones(3), 0.5)))
    def f_gradonly_1(x, c, _dret):
        _n = x.shape[0]
        dc = 0.0
        dx = np.zeros_like(x)
        ds = 1.0
        for i in range(_n - 1, -1, -1):
            # line 4: s += c * x[i] * x[i]
            _dt = ds
            _t2 = c * x[i]
            _t4 = x[i]
            _dt2 = _dt * _t4
            _dt4 = _dt * _t2
            _t3 = x[i]
            dc += _dt2 * _t3
            _dt3 = _dt2 * c
            dx[i] += _dt4 + _dt3
        return (None, (dx, dc))
    """
    s.body = without_dead_loops(s.body, s.ctx.ir.shared)


def fuse_(s: Lowering) -> None:
    """A forward loop whose iterations share nothing but sums runs fused with its reversed
    loop, each iteration's adjoint right after it (``backend/fuse.py``).

    >>> print(example("fuse", '''
    ... def f(x, k):
    ...     total = 0.0
    ...     for i in range(x.shape[0]):
    ...         total += math.exp(k * x[i])
    ...     return total
    ... ''', args=(np.ones(3), 0.5)))
    def f_grad_1(x, k, _dret):
        _tape_t_1 = np.empty(0, np.float64)
        _tape_t_1n = 0
        total = 0.0
        _n = x.shape[0]
        _tape_t_1 = tape_reserve(_tape_t_1, _tape_t_1n, 1)
        dk = 0.0
        dx = np.zeros_like(x)
        dtotal = _dret
        # iterations over i are independent: each runs its adjoint right after it (nothing is taped)
        for i in range(_n):
            _t3 = x[i]
            _t2 = k * _t3
            _t = math.exp(_t2)
            total = total + _t
            # line 4: total += math.exp(k * x[i])
            _dt = dtotal
            _t_1 = _t
            _dt2 = _dt * _t_1
            _t3 = x[i]
            dk += _dt2 * _t3
            _dt3 = _dt2 * k
            dx[i] += _dt3
        return (total, (dx, dk))
    """
    ir = s.ctx.ir
    if not ir.callables:  # a hook sees the gradients in the order of the two sweeps
        tapes = dataflow.binds_in(ir.workspace)
        dependent = s.ctx.dependent.setdefault(s.variant, set())
        s.body = fuse_loops(s.body, tapes, ir.shared, dependent, s.ctx.is_array, s.ctx.env)


def dead_after_fuse_(s: Lowering) -> None:
    """Dead code again where fusion changed the body: a tape a fused loop no longer uses
    goes (the example of ``fuse``, its tape ``_tape_t_1`` gone).

    >>> print(example("dead_after_fuse", '''
    ... def f(x, k):
    ...     total = 0.0
    ...     for i in range(x.shape[0]):
    ...         total += math.exp(k * x[i])
    ...     return total
    ... ''', args=(np.ones(3), 0.5)))
    def f_grad_1(x, k, _dret):
        total = 0.0
        _n = x.shape[0]
        dk = 0.0
        dx = np.zeros_like(x)
        dtotal = _dret
        # iterations over i are independent: each runs its adjoint right after it (nothing is taped)
        for i in range(_n):
            _t3 = x[i]
            _t2 = k * _t3
            _t = math.exp(_t2)
            total = total + _t
            # line 4: total += math.exp(k * x[i])
            _dt = dtotal
            _t_1 = _t
            _dt2 = _dt * _t_1
            _t3 = x[i]
            dk += _dt2 * _t3
            _dt3 = _dt2 * k
            dx[i] += _dt3
        return (total, (dx, dk))
    """
    if LIVE in s.stale:
        s.body = dead_code(s.body, s.ctx.ir.shared, env=s.ctx.env)


def write_once_(s: Lowering) -> None:
    """A gradient a top-level loop writes first is written once, made with
    ``np.empty_like`` instead of zeroed (``backend/write_once.py``).

    >>> print(example("write_once", '''
    ... def f(x, c):
    ...     s = 0.0
    ...     for i in range(x.shape[0]):
    ...         s += c * x[i] * x[i]
    ...     return s
    ... ''', args=(np.ones(3), 0.5)))
    def f_grad_1(x, c, _dret):
        s = 0.0
        _n = x.shape[0]
        dc = 0.0
        dx = np.empty_like(x)
        ds = _dret
        # dx: each element written once (made empty); those no index reaches set to 0
        dx[max(_n, 0):] = 0.0
        # iterations over i are independent: each runs its adjoint right after it (nothing is taped)
        for i in range(_n):
            _t3 = x[i]
            _t2 = c * _t3
            _t4 = x[i]
            _t = _t2 * _t4
            s = s + _t
            # line 4: s += c * x[i] * x[i]
            _dt = ds
            _t2 = c * x[i]
            _t4 = x[i]
            _dt2 = _dt * _t4
            _dt4 = _dt * _t2
            _t3 = x[i]
            dc += _dt2 * _t3
            _dt3 = _dt2 * c
            dx[i] = _dt4 + _dt3
        return (s, (dx, dc))
    """
    ir = s.ctx.ir
    if s.ctx.once and not ir.callables:
        s.body = write_once(s.body, ir.grads, ir.shared)


def shape_only_(s: Lowering) -> None:
    """A float array the adjoint sweep reads only for its shape gets a stand-in that
    holds no memory (``backend/shape_only.py``).

    >>> print(example("shape_only", '''
    ... def f(X, W, b):
    ...     return np.sum(np.tanh(X @ W + b))
    ... ''', args=(np.ones((2, 3)), np.ones((3, 2)), np.ones(2))))
    def f_grad_1(X, W, b, _dret):
        _t4 = X @ W
        # _t4: only its shape is read later
        _t4_like = shape_stand_in(_t4)
        _t3 = _t4 + b
        _t2 = np.tanh(_t3)
        _t = np.sum(_t2)
        dW = np.zeros_like(W)
        dX = np.zeros_like(X)
        db = np.zeros_like(b)
        # line 2: return np.sum(np.tanh(X @ W + b))
        _dt2 = expand_along(_dret, _t2, None)
        _dt3 = _dt2 * (1.0 - _t2 * _t2)
        _dt4 = unbroadcast(_dt3, _t4_like)
        db += unbroadcast(_dt3, b)
        dX += dot_grad_a(_dt4, X, W)
        dW += dot_grad_b(_dt4, X, W)
        return (_t, (dX, dW, db))
    """
    ir = s.ctx.ir
    if s.ctx.arrays and not ir.callables:
        sweep = {id(st) for st in (*ir.init, *ir.adjoint)}
        s.body = shape_stand_ins(s.body, s.ctx.arrays, sweep, s.ctx.accessor, ir.shape_reads)


def elements_(s: Lowering) -> None:
    """Under ``jit=True``, a chain of whole-array statements over arrays of one shape runs
    as one loop over the elements: only what is read after it stays an array, a sum at
    its end is added up in the loop (``backend/elements.py``).

    >>> print(example("elements", '''
    ... def f(x, c):
    ...     y = np.exp(c * x) + 1.0
    ...     return np.sum(y * y)
    ... ''', args=(np.ones(3), 0.5), jit=True))
    def f_grad_1(x, c, _dret):
        # one loop over the elements of x (arrays kept: _t; no arrays for: _t2, _t4, y)
        _t = np.empty_like(x)
        _t3_sum = 0.0
        for _k in range(x.shape[0]):
            _t2_e = c * x[_k]
            _t_e = np.exp(_t2_e)
            y_e = _t_e + 1.0
            _t4_e = y_e * y_e
            _t3_sum += _t4_e
            _t[_k] = _t_e
        _t3 = _t3_sum
        dx = np.zeros_like(x)
        # line 3: return np.sum(y * y)
        # one loop over the elements of x (arrays kept: none; no arrays for: _dt, _dt2, _dt4, dy)
        dc_sum = 0.0
        for _k2 in range(x.shape[0]):
            _dt4_e = _dret
            y_e2 = _t[_k2] + 1.0
            dy_e = _dt4_e * y_e2
            dy_e = dy_e + _dt4_e * y_e2
            # line 2: y = np.exp(c * x) + 1.0
            _dt_e = dy_e
            _dt2_e = _dt_e * _t[_k2]
            dc_sum += _dt2_e * x[_k2]
            dx[_k2] += _dt2_e * c
        dc = dc_sum
        return (_t3, (dx, dc))
    """
    ir = s.ctx.ir
    if s.ctx.ndims is None or ir.callables:
        return
    shapes = ShapeClasses(s.body, s.ctx.ndims, s.ctx.env, s.params)
    taken = set(s.params).union(*(names_in(x) for x in s.body))
    body = fuse_elements(s.body, shapes, s.ctx.env, ir.np, taken, ir.shared)
    s.ctx.element_loops |= body is not s.body
    s.body = body


def moves_(s: Lowering) -> None:
    """Under ``jit=True`` (not ``parallel=True``), a zeroed adjoint buffer whose first
    update adds a whole array of its shape that nothing reads after the buffer is written
    takes that array's buffer: no zeroing, no add (``backend/moves.py``).

    >>> print(example("moves", '''
    ... def f(x, s):
    ...     y = x * 1.0
    ...     for _ in range(s):
    ...         y = y + 0.5 * y * x
    ...     return y[0]
    ... ''', args=(np.ones(3), 2), jit=True))
    def f_grad_1(x, s, _dret):
        _tape_t2_1 = []
        y = x * 1.0
        for _ in range(s):
            # one loop over the elements of x (arrays kept: _t2, y; no arrays for: _t)
            _t2 = np.empty_like(x)
            y_out = np.empty_like(x)
            for _k in range(x.shape[0]):
                _t2_e = 0.5 * y[_k]
                # stored _t2: an array
                _t_e = _t2_e * x[_k]
                y_e = y[_k] + _t_e
                _t2[_k] = _t2_e
                y_out[_k] = y_e
            y = y_out
            _tape_t2_1.append(_t2)
        _t3 = y[0]
        dx = np.zeros_like(x)
        dy = np.zeros_like(y)
        # line 5: return y[0]
        dy[0] += _dret
        for _ in range(s - 1, -1, -1):
            # line 4: y = y + 0.5 * y * x
            # y, _t: only the shape is read, x's: read from x, not stored
            _g = dy
            # dy takes the buffer of _g: nothing reads _g after dy is written (no zeroing, no add)
            dy = _g
            _dt = unbroadcast(_g, x)
            _t2 = _tape_t2_1.pop()
            _dt2 = unbroadcast(_dt * x, _t2)
            dx += unbroadcast(_dt * _t2, x)
            # y: only the shape is read, x's: read from x, not stored
            dy += unbroadcast(_dt2 * 0.5, x)
        # line 2: y = x * 1.0
        dx += unbroadcast(dy, x)
        return (_t3, dx)
    """
    ctx, ir = s.ctx, s.ctx.ir
    if ctx.ndims is None or ir.callables or ctx.parallel is not None:
        return
    shapes = ShapeClasses(s.body, ctx.ndims, ctx.env, s.params)
    kinds = ctx.is_array or (lambda n: None)  # (and the element loops' scalars)
    flow = dataflow.Dataflow(s.body, shared=ir.shared, env=ctx.env,
                             is_array=lambda n: False if shapes.of(n) == SCALAR else kinds(n))
    s.body = adjoint_moves(s.body, shapes, flow, s.params, ir.shared, ctx.env)


def workspace_(s: Lowering) -> None:
    """Typed tapes, adjoint buffers of local arrays and the copies pushed on list tapes
    come from the parameter ``_ws`` and go back with the result (``lower.with_workspace``,
    ``backend/snapshots.py``); an adjoint buffer a loop zeroes each trip is made at its
    first trip and zeroed in place after (``backend/loop_buffers.py``).

    >>> print(example("workspace", '''
    ... def f(x, n):
    ...     for i in range(n):
    ...         x = math.sin(x)
    ...     return x
    ... ''', args=(0.5, 3)))
    def f_grad_1(x, n, _dret, _ws):
        _tape_x_1 = _ws[0]
        _tape_x_1n = 0
        _tape_x_1 = tape_reserve(_tape_x_1, _tape_x_1n, n)
        for i in range(n):
            # stored x: the value of x before the statement that makes it
            _tape_x_1[_tape_x_1n] = x
            _tape_x_1n += 1
            x = math.sin(x)
        dx = _dret
        for i in range(n - 1, -1, -1):
            # line 3: x = math.sin(x)
            _tape_x_1n -= 1
            _x_1 = _tape_x_1[_tape_x_1n]
            _g = dx
            dx = _g * np.cos(_x_1)
        return (x, dx, (_tape_x_1,))
    """
    ir, ctx = s.ctx.ir, s.ctx
    if ctx.parallel is None and not ir.callables:
        body = s.body
        s.body = loop_buffers(body, ir.shared,
                              lambda: set(s.params).union(*map(names_in, body), ctx.env),
                              _scalar_or_unknown(ctx), ctx.env)
    s.body, dtypes = with_workspace(ir, s.body)
    s.ctx.workspaces[s.variant] = dtypes
    if dtypes:
        s.params = [*s.params, ir.ws]


def _scalar_or_unknown(ctx: Context) -> Callable[[str], bool | None]:
    """``Dataflow``'s ``is_array``: False for the scalars and their adjoints (which share
    no buffer), None (unknown) for the rest."""
    ndims = ctx.ndims or {}
    kinds = ctx.is_array or (lambda n: None)
    return lambda n: False if ndims.get(n) == 0 or n in ctx.cotangents or kinds(n) is False \
        else None


def parallel_(s: Lowering) -> None:
    """Under ``parallel=True``, prange loops run as ``prange`` where their iterations are
    independent, tapes at slots of each iteration's own, collisions in per-thread chunks
    (``backend/prange.py``).

    >>> print(example("parallel", '''
    ... def f(x, k):
    ...     s = 0.0
    ...     for i in prange(x.shape[0]):
    ...         s += k * math.sin(x[i])
    ...     return s
    ... ''', args=(np.ones(3), 0.5), parallel=True))
    def f_grad_1(x, k, _dret, _ws):
        _tape_t2_1 = _ws[0]
        _tape_t2_1n = 0
        s = 0.0
        _n = x.shape[0]
        _tape_t2_1 = tape_reserve(_tape_t2_1, _tape_t2_1n, _n)
        for i in prange(_n):
            _t3 = x[i]
            _t2 = math.sin(_t3)
            # stored _t2: math.sin costs 20 > tape 16
            _tape_t2_1[_tape_t2_1n + i] = _t2
            _t = k * _t2
            s = s + _t
        _tape_t2_1n += max(_n, 0)
        dk = 0.0
        dx = np.zeros_like(x)
        ds = _dret
        _tape_t2_1n -= max(_n, 0)
        for i in prange(_n):
            # line 4: s += k * math.sin(x[i])
            _dt = ds
            _t2 = _tape_t2_1[_tape_t2_1n + i]
            dk += _dt * _t2
            _dt2 = _dt * k
            _t3 = x[i]
            _dt3 = _dt2 * np.cos(_t3)
            dx[i] += _dt3
        return (s, (dx, dk), (_tape_t2_1,))
    """
    if s.ctx.parallel is not None:
        fn = s.ctx.rewrite(s.variant).function(s.function())
        s.body, s.params = fn.body, [a.arg for a in fn.args.args]


def zero_skip_(s: Lowering) -> None:
    """A loop nested in a reversed loop whose effects are all sums of terms linear in one
    scalar cotangent runs only where that cotangent is nonzero (``backend/zero_skip.py``).

    >>> print(example("zero_skip", '''
    ... def f(p, w, n):
    ...     s = 0.0
    ...     for i in range(n):
    ...         d = 0.0
    ...         for k in range(p.shape[0]):
    ...             d += p[k] * w
    ...         if d > s:
    ...             s = d
    ...     return s
    ... ''', args=(np.ones(4), 1.0, 3)))
    def f_grad_1(p, w, n, _dret, _ws):
        _tape_c_1 = _ws[0]
        _tape_c_1n = 0
        s = 0.0
        _tape_c_1 = tape_reserve(_tape_c_1, _tape_c_1n, n)
        for i in range(n):
            d = 0.0
            _n = p.shape[0]
            for k in range(_n):
                _t2 = p[k]
                _t = _t2 * w
                d = d + _t
            _c = bool(d > s)
            # stored _c: d is rebound later
            _tape_c_1[_tape_c_1n] = _c
            _tape_c_1n += 1
            if _c:
                s = d
        dp = np.zeros_like(p)
        dw = 0.0
        dd = 0.0
        ds = _dret
        for i in range(n - 1, -1, -1):
            _tape_c_1n -= 1
            _c_1 = _tape_c_1[_tape_c_1n]
            if _c_1:
                # line 8: s = d
                dd = ds
                ds = 0.0
            _n_1 = p.shape[0]
            if dd != 0.0:
                # skipped where dd is 0: all it adds is linear in dd
                for k in range(_n_1 - 1, -1, -1):
                    # line 6: d += p[k] * w
                    _dt = dd
                    _t2 = p[k]
                    _dt2 = _dt * w
                    dw += _dt * _t2
                    dp[k] += _dt2
            # line 4: d = 0.0
            dd = 0.0
        return (s, (dp, dw), (_tape_c_1,))
    """
    if not s.ctx.ir.callables:
        s.body = zero_guards(s.body, s.ctx.cotangents, s.ctx.env, s.ctx.ir.shared)


def ascending_(s: Lowering) -> None:
    """A reversed loop whose iterations are independent and that makes no sum runs
    ascending, its tape pops read at the iteration's slot: the same values, and LLVM
    vectorises it (Numba's negative-index wrap on a descending index blocks that;
    ``backend/ascending.py``).

    >>> print(example("ascending", '''
    ... def f(x, c):
    ...     s = 0.0
    ...     m = 1.0
    ...     for j in range(x.shape[0]):
    ...         s += x[j] * m
    ...         m *= c
    ...     return s
    ... ''', args=(np.ones(3), 2)))
    def f_grad_1(x, c, _dret, _ws):
        _tape_m_1 = _ws[0]
        _tape_m_1n = 0
        s = 0.0
        m = 1.0
        _n = x.shape[0]
        _tape_m_1 = tape_reserve(_tape_m_1, _tape_m_1n, _n)
        for j in range(_n):
            _t2 = x[j]
            # stored m: rebound later
            _tape_m_1[_tape_m_1n] = m
            _tape_m_1n += 1
            _t = _t2 * m
            s = s + _t
            m = m * c
        dx = np.empty_like(x)
        ds = _dret
        # dx: each element written once (made empty); those no index reaches set to 0
        dx[max(_n, 0):] = 0.0
        _tape_m_1n -= max(_n, 0)
        # iterations over j are independent: run ascending (so that it vectorises)
        for j in range(_n):
            # line 5: s += x[j] * m
            _dt = ds
            m = _tape_m_1[_tape_m_1n + j]
            _dt2 = _dt * m
            dx[j] = _dt2
        return (s, dx, (_tape_m_1,))
    """
    flow_of = functools.partial(dataflow.Dataflow, shared=s.ctx.ir.shared,
                                is_array=s.ctx.is_array, env=s.ctx.env)
    for _ in range(_NEST_DEPTH):  # (a loop in one made ascending: seen on the next run)
        body = ascending(s.body, flow_of, s.ctx.env)
        if body is s.body:
            break
        s.body = body


#: how many times ``ascending`` runs, at most: each run sees the loops inside those the
#: one before made ascending (``rewrite_blocks`` does not descend into a replaced loop)
_NEST_DEPTH = 4


def trip_memo_(s: Lowering) -> None:
    """In a fused loop, a tape's pushes that are the same in every trip are made in the
    first trip only and read back in the others (``backend/trip_memo.py``; the adjoint
    part of the example left out).

    >>> print(example("trip_memo", '''
    ... def f(q, x):
    ...     s = 0.0
    ...     for i in range(3):
    ...         t = 0.0
    ...         for j in range(q.shape[0]):
    ...             t += math.exp(q[j]) * x[i]
    ...         s += math.sin(t)
    ...     return s
    ... ''', args=(np.ones(2), np.ones(3))))
    def f_grad_1(q, x, _dret, _ws):
        _tape_t2_1 = _ws[0]
        _tape_t2_1n = 0
        s = 0.0
        dq = np.zeros_like(q)
        dx = np.zeros_like(x)
        ds = _dret
        # iterations over i are independent: each runs its adjoint right after it
        (its tape holds one iteration)
        _new_trip = True
        for i in range(3):
            # 1 stored value(s) the same in every trip: made in the first
            t = 0.0
            _n = q.shape[0]
            _tape_t2_1 = tape_reserve(_tape_t2_1, _tape_t2_1n, _n)
            for j in range(_n):
                _t4 = x[i]
                # stored _t2: math.exp costs 20 > tape 16
                if _new_trip:
                    _t3 = q[j]
                    _t2 = math.exp(_t3)
                    _tape_t2_1[_tape_t2_1n] = _t2
                else:
                    _t2 = _tape_t2_1[_tape_t2_1n]
                _tape_t2_1n += 1
                _t = _t2 * _t4
                t = t + _t
            ...
            _new_trip = False
        return (s, (dq, dx), (_tape_t2_1,))
    """
    ctx = s.ctx
    if ctx.parallel is None and ctx.tapes:
        body = s.body
        s.body = trip_memos(body, ctx.tapes, ctx.ir.shared,
                            lambda: set(s.params).union(*map(names_in, body), ctx.env),
                            ctx.env, _scalar_or_unknown(ctx))


def tape_accessors_(s: Lowering) -> None:
    """A typed tape's element writes and reads go through ``tape_put`` and ``tape_get``,
    compiled without the bounds check (``lower.unchecked_tapes``: on the tree, in the
    pushes and pops the reverse pass marked, ``notes.TAPED``; a user's ``_tape1`` is never
    one).

    >>> print(example("tape_accessors", '''
    ... def f(x, n):
    ...     for i in range(n):
    ...         x = math.sin(x)
    ...     return x
    ... ''', args=(0.5, 3)))
    def f_grad_1(x, n, _dret, _ws):
        _tape_x_1 = _ws[0]
        _tape_x_1n = 0
        _tape_x_1 = tape_reserve(_tape_x_1, _tape_x_1n, n)
        for i in range(n):
            # stored x: the value of x before the statement that makes it
            tape_put(_tape_x_1, _tape_x_1n, x)
            _tape_x_1n += 1
            x = math.sin(x)
        dx = _dret
        for i in range(n - 1, -1, -1):
            # line 3: x = math.sin(x)
            _tape_x_1n -= 1
            _x_1 = tape_get(_tape_x_1, _tape_x_1n)
            _g = dx
            dx = _g * np.cos(_x_1)
        return (x, dx, (_tape_x_1,))
    """
    names = s.ctx.accessors()
    s.body = unchecked_tapes(s.body, s.ctx.tapes, names["tape_get"], names["tape_put"],
                             s.ctx.unchecked)


def view_updates_(s: Lowering) -> None:
    """Under ``jit=True`` (not ``parallel=True``), ``db[2] += g`` into a view of an array
    is ``_view = db[2]`` then ``_view += g``, and ``dz[...] = dy`` of two arrays apart an
    element loop (``copy_into`` where the shapes differ): Numba does not compile the error
    message of an array assignment (``backend/view_updates.py``, about 1.5 CPU s a process).

    >>> print(example("view_updates", '''
    ... def f(b, x):
    ...     return np.dot(b[0], x) + np.sum(b[1])
    ... ''', args=(np.ones((2, 3)), np.ones(3)), jit=True))
    def f_grad_1(b, x, _dret):
        _t3 = b[0]
        _t2 = np.dot(_t3, x)
        _t5 = b[1]
        # _t5: only its shape is read later
        _t5_like = shape_stand_in(_t5)
        _t4 = np.sum(_t5)
        _t = _t2 + _t4
        db = np.zeros_like(b)
        dx = np.zeros_like(x)
        # line 2: return np.dot(b[0], x) + np.sum(b[1])
        _dt5 = expand_along(_dret, _t5_like, None)
        _dt3 = dot_grad_a(_dret, _t3, x)
        dx += dot_grad_b(_dret, _t3, x)
        _view = db[1]
        _view += _dt5
        _view2 = db[0]
        _view2 += _dt3
        return (_t, (db, dx))
    """
    if s.ctx.cached_calls and s.ctx.ndims is not None:
        s.body = view_updates(s.body, s.ctx.ndims, s.params, _apart_copy(s))


def _apart_copy(s: Lowering) -> Callable[[str, str], str | None]:
    """``view_updates``' ``copier``: ``LOOP`` (shapes proved one) or the name of
    ``copy_into`` where no name that may share the target's buffer may share the value's,
    else None (one dataflow, made when first asked, of
    the body without the copies themselves: an array's elements set from another array's
    join no buffers, though ``Dataflow`` joins a container's target to what it stores)."""
    flow: list[dataflow.Dataflow] = []
    shapes: list[ShapeClasses] = []

    def copy(target: str, value: str) -> str | None:
        if not flow:
            body = rewrite_blocks(s.body, lambda t: [] if copied_array(t, s.ctx.ndims)
                                  else None)
            flow.append(dataflow.Dataflow(body, shared=s.ctx.ir.shared,
                                          is_array=s.ctx.is_array, env=s.ctx.env))
            shapes.append(ShapeClasses(s.body, s.ctx.ndims, s.ctx.env, s.params))
        if flow[0].shares(target) & flow[0].shares(value):
            return None
        c = shapes[0].of(target)
        if c not in (None, SCALAR) and c == shapes[0].of(value) and not shapes[0].checks(c):
            return LOOP
        return s.ctx.accessor("copy_into")
    return copy


def outer_updates_(s: Lowering) -> None:
    """Under ``jit=True`` (not ``parallel=True``), a matrix product's adjoint adds its
    outer product into the gradient buffer in place, ``add_outer(dX, g, w)``, instead of
    making the matrix and adding it (``backend/outer_updates.py``).

    >>> print(example("outer_updates", '''
    ... def f(X, w):
    ...     return np.sum(np.tanh(np.dot(X, w)))
    ... ''', args=(np.ones((3, 2)), np.ones(2)), jit=True))
    def f_grad_1(X, w, _dret):
        _t3 = np.dot(X, w)
        # one loop over the elements of _t3 (arrays kept: _t2; no arrays for: none)
        _t2 = np.empty_like(_t3)
        _t_sum = 0.0
        for _k in range(_t3.shape[0]):
            _t2_e = np.tanh(_t3[_k])
            _t_sum += _t2_e
            _t2[_k] = _t2_e
        _t = _t_sum
        dX = np.zeros_like(X)
        dw = np.zeros_like(w)
        # line 2: return np.sum(np.tanh(np.dot(X, w)))
        # one loop over the elements of _t2 (arrays kept: _dt3; no arrays for: _dt2)
        _dt3 = np.empty_like(_t2)
        for _k2 in range(_t2.shape[0]):
            _dt2_e = _dret
            _dt3_e = _dt2_e * (1.0 - _t2[_k2] * _t2[_k2])
            _dt3[_k2] = _dt3_e
        add_outer(dX, _dt3, w)
        dw += dot_grad_b(_dt3, X, w)
        return (_t, (dX, dw))
    """
    if s.ctx.cached_calls and s.ctx.ndims is not None:
        flow = dataflow.Dataflow(s.body, shared=s.ctx.ir.shared, is_array=s.ctx.is_array,
                                 env=s.ctx.env)
        s.body = outer_updates(s.body, s.ctx.ndims, s.ctx.env, flow, s.ctx.accessor)
def bounds_(s: Lowering) -> None:
    """Under ``jit=True`` (not ``parallel=True``), every array index is checked
    explicitly: once before the outermost loop it is affine in, else before its statement;
    the function is then compiled without Numba's per-access check (``backend/bounds.py``;
    where one index cannot be checked so, Numba checks them all, as a comment says).

    >>> print(example("bounds", '''
    ... def f(x, c):
    ...     s = 0.0
    ...     for i in range(1, x.shape[0]):
    ...         s += c * x[i - 1] * x[i]
    ...     return s
    ... ''', args=(np.ones(3), 0.5), jit=True))
    def f_grad_1(x, c, _dret):
        # every index is checked explicitly (below): compiled with boundscheck=False
        s = 0.0
        _n = x.shape[0]
        dc = 0.0
        dx = np.zeros_like(x)
        ds = _dret
        # x[i - 1], x[i], dx[i], dx[i - 1] in range on every trip over i (by the shapes)
        # iterations over i are independent: each runs its adjoint right after it (nothing is taped)
        for i in range(1, _n):
            _t3 = x[i - 1]
            _t2 = c * _t3
            _t4 = x[i]
            _t = _t2 * _t4
            s = s + _t
            # line 4: s += c * x[i - 1] * x[i]
            _dt = ds
            _t2 = c * x[i - 1]
            _t4 = x[i]
            _dt2 = _dt * _t4
            _dt4 = _dt * _t2
            _t3 = x[i - 1]
            dc += _dt2 * _t3
            _dt3 = _dt2 * c
            dx[i] += _dt4
            dx[i - 1] += _dt3
        return (s, (dx, dc))
    """
    if s.ctx.kinds is not None and not s.ctx.ir.callables:
        tuples = frozenset({s.ctx.ir.ws})
        s.body, s.ctx.bounds[s.variant] = bounds_checks(s.body, s.ctx.kinds, s.params,
                                                         tuples, s.ctx.once, s.ctx.env)


def unsigned_(s: Lowering) -> None:
    """Where the bounds step proved every index (``jit=True``), an index of an innermost
    loop that is ``>= 0`` on every trip is read as ``np.uintp(...)``: Numba then emits no
    wraparound select, which keeps LLVM from vectorising.  Proved by the enclosing loops'
    ranges: in place; proved only by a test of the loop's entry values (a counter carried
    from trip to trip, a start of unknown sign): the loop is versioned on that test, the
    loop as written its ``else`` (``backend/unsigned.py``).

    >>> print(example("unsigned", '''
    ... def f(x, k):
    ...     s = 0.0
    ...     for i in range(k, x.shape[0]):
    ...         s += x[i] * x[i - k]
    ...     return s
    ... ''', args=(np.ones(4), 1), jit=True))
    def f_grad_1(x, k, _dret):
        ...
        # indices >= 0 on every trip over i read unsigned (no wraparound); else as written
        if k >= 0:
            for i in range(k, _n):
                _t2 = x[np.uintp(i)]
                _t3 = x[np.uintp(i - k)]
                _t = _t2 * _t3
                s = s + _t
                # line 4: s += x[i] * x[i - k]
                _dt = ds
                _t2 = x[np.uintp(i)]
                _t3 = x[np.uintp(i - k)]
                _dt2 = _dt * _t3
                _dt3 = _dt * _t2
                dx[np.uintp(i - k)] += _dt3
                dx[np.uintp(i)] += _dt2
        else:
            for i in range(k, _n):
                _t2 = x[i]
                ...
                dx[i] += _dt2
        return (s, dx)
    """
    if s.ctx.kinds is not None and s.ctx.bounds.get(s.variant):
        s.body = unsigned_indices(s.body, s.ctx.kinds, s.params, frozenset({s.ctx.ir.ws}),
                                  s.ctx.once, s.ctx.env, s.ctx.ir.np)


def cached_calls_(s: Lowering) -> None:
    """Under ``jit=True`` (not ``parallel=True``), ``np.zeros_like(x)``,
    ``np.empty_like(x)`` and ``a @ b`` call helpers whose machine code Numba keeps on
    disk (``backend/cached_calls.py``): not compiled again in every process.

    >>> print(example("cached_calls", '''
    ... def f(X, W):
    ...     return np.sum(np.tanh(X @ W))
    ... ''', args=(np.ones((2, 3)), np.ones((3, 2))), jit=True))
    def f_grad_1(X, W, _dret):
        # every index is checked explicitly (below): compiled with boundscheck=False
        _t3 = np_matmul(X, W)
        # one loop over the elements of _t3 (arrays kept: _t2; no arrays for: none)
        _t2 = np_empty_like(_t3)
        _t_sum = 0.0
        # _t3[_k, _k2], _t2[_k, _k2] in range on every trip over _k (by the shapes)
        for _k in range(_t3.shape[0]):
            for _k2 in range(_t3.shape[1]):
                _t2_e = np.tanh(_t3[_k, np.uintp(_k2)])
                _t_sum += _t2_e
                _t2[_k, np.uintp(_k2)] = _t2_e
        _t = _t_sum
        dW = np_zeros_like(W)
        dX = np_zeros_like(X)
        # line 2: return np.sum(np.tanh(X @ W))
        # one loop over the elements of _t2 (arrays kept: _dt3; no arrays for: _dt2)
        _dt3 = np_empty_like(_t2)
        # _t2[_k3, _k22], _dt3[_k3, _k22] in range on every trip over _k3 (by the shapes)
        for _k3 in range(_t2.shape[0]):
            for _k22 in range(_t2.shape[1]):
                _dt2_e = _dret
                _dt3_e = _dt2_e * (1.0 - _t2[_k3, np.uintp(_k22)] * _t2[_k3, np.uintp(_k22)])
                _dt3[_k3, np.uintp(_k22)] = _dt3_e
        dX += dot_grad_a(_dt3, X, W)
        dW += dot_grad_b(_dt3, X, W)
        return (_t, (dX, dW))
    """
    if s.ctx.cached_calls:
        s.body = cached_calls(s.body, s.ctx.env, s.ctx.accessor)


def unparse_(s: Lowering) -> None:
    """The function printed (``emit.unparse``: comment markers become comments).

    >>> print(example("unparse", '''
    ... def f(x, a):
    ...     y = math.sin(x) * a
    ...     return y * y
    ... ''', args=(0.5, 2.0)))
    def f_grad_1(x, a, _dret):
        _t = math.sin(x)
        y = _t * a
        _t2 = y * y
        # line 3: return y * y
        dy = (_dret + _dret) * y
        # line 2: y = math.sin(x) * a
        _dt = dy * a
        da = dy * _t
        dx = _dt * np.cos(x)
        return (_t2, (dx, da))
    """
    s.text = emit.unparse(s.function(), s.ctx.texts)


BACKEND: list[BackendPass] = check([
    step("dead_code", dead_code_, [IR], [LIVE], shows="grad_only"),
    step("unit_seed", unit_seed_, [LIVE], [UNIT_SEED], shows="grad_only"),
    step("dead_loops", dead_loops_, [LIVE], [NO_DEAD_LOOPS], shows="grad_only"),
    step("fuse", fuse_, [LIVE, NO_DEAD_LOOPS], [FUSED], [LIVE]),
    step("dead_after_fuse", dead_after_fuse_, [FUSED], [LIVE]),
    step("write_once", write_once_, [LIVE, FUSED, ZEROINGS], [WRITTEN_ONCE]),
    step("elements", elements_, [LIVE], [ELEMENTS]),
    step("shape_only", shape_only_, [LIVE, IR], [STAND_INS]),
    step("moves", moves_, [LIVE, ELEMENTS, ZEROINGS], [MOVES]),
    step("workspace", workspace_, [IR, ZEROINGS, FUSED], [WORKSPACE], [ZEROINGS]),
    step("parallel", parallel_, [WORKSPACE], [PARALLEL], [IR]),
    step("zero_skip", zero_skip_, [WORKSPACE], [ZERO_SKIPS]),
    step("ascending", ascending_, [PARALLEL, ZERO_SKIPS], [ASCENDING]),
    step("trip_memo", trip_memo_, [FUSED, WORKSPACE], [TRIP_MEMOS]),
    step("tape_accessors", tape_accessors_, [PARALLEL], [ACCESSORS], sweeps=True),
    step("outer_updates", outer_updates_, [ACCESSORS], [OUTER_UPDATES]),
    step("view_updates", view_updates_, [ACCESSORS], [VIEW_UPDATES]),
    step("bounds", bounds_, [ACCESSORS, VIEW_UPDATES], [BOUNDS]),
    step("unsigned", unsigned_, [BOUNDS], [UNSIGNED]),
    step("cached_calls", cached_calls_, [ACCESSORS], [CACHED_CALLS]),
    step("unparse", unparse_, [], [TEXT], on_text=True),
])


__all__ = ["BACKEND", "BackendPass", "Context", "Lowering", "OrderError", "changes", "check",
           "global_names", "listing", "lower_variant", "lower_variants", "run", "start", "step",
           "sweep_text"]
