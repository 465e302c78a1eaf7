"""The transpiler's passes, as data: two ordered lists run over one ``Unit``.

``PREPARE`` holds the passes that do not depend on argument kinds (run once per
function and cached); ``SPECIALISE`` the ones run per (wrt, argument kinds).
Each pass is a ``Pass``: a name, a function that updates the ``Unit`` in place,
and a ``show`` that renders the unit after it.  ``stage(func, name, ...)`` (and
``jitgrad show --stage NAME``, ``f.source(stage=NAME)``) prints any pass's
output; every pass's docstring carries a before/after example that
``tests/test_passes.py`` runs as a doctest (``example`` writes them).  The last pass,
``lower``, runs a list of its own per variant, ``BACKEND`` (``backend/passes.py``),
whose steps are stages too.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import functools
import gc
import itertools
import linecache
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import config
from ..errors import TransformError
from ..kernels import helpers
from .analysis.analyse import Analysis, analyse
from .analysis.effects import first_draw
from .analysis.kinds import Kind, infer
from .analysis.regions import distinct_guards
from .backend import emit, lower, passes
from .backend.gather import gather_form
from .backend.optimize import fold_scalar_adjoints, merge_accumulations
from .backend.prange import Parallel, loop_verdicts, refuse_parallel_draws, refuse_races
from .backend.promote import promote_accumulations
from .backend.shape_only import shape_reading_names
from .front.aux import flatten_aux
from .front.desugar import loops, rotations, single_exit
from .front.fence import fence
from .front.inline import fold_param_binds, inline, resolve
from .front.last_taken import last_taken
from .front.nested import ENTRIES, blamed, expanding, refuse_recursion, site_kinds
from .front.normalize import Normalizer, inplace_updates
from .front.numba_kernels import refuse_elementwise_arrays
from .front.parse import Parsed, parse_function
from .front.purity import builtins_unshadowed
from .front.small_arrays import scalarise
from .front.split import SplitRefused, call_helpers, register_makers, split_helpers
from .front.tuples import flatten_params
from .front.tuples import refuse_whole as refuse_whole_tuples
from .front.tuples import split as split_tuples
from .front.value_lists import refuse_list_entries, value_lists
from .front.versions import unshadowed_builtins, version_names
from .front.webs import split_webs
from .gradient_code import NESTED_CODE, gradient_code, register_generate
from .ir import Adjoint, result_expr
from .modes.reverse import reverse
from .naming import Namer, is_generated, names_in
from .nodes import clone, walk_stmts
from .notes import DRAW, ZEROING, checkpoint


def _without_gc(fn):
    """Run ``fn`` with the cyclic garbage collector paused: the passes allocate millions of
    short-lived nodes, and each collection re-walks every live one (superlinear time)."""

    @functools.wraps(fn)
    def run(*args, **kwargs):
        if not gc.isenabled():
            return fn(*args, **kwargs)
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            gc.enable()

    return run


@dataclass
class Unit:
    """The function being transformed and everything the passes have learnt about it."""

    func: Any
    parsed: Parsed | None = None
    namer: Namer | None = None
    env: dict[str, Any] = field(default_factory=dict)
    params: list[str] = field(default_factory=list)
    body: list[ast.stmt] = field(default_factory=list)
    #: the returned expressions (atoms once normalized)
    returns: list[ast.expr] = field(default_factory=list)
    # --- per specialisation ---
    wrt: list[str] = field(default_factory=list)
    arg_kinds: dict[str, Kind] = field(default_factory=dict)
    kinds: dict[str, Kind] = field(default_factory=dict)
    analysis: Analysis | None = None
    ir: Adjoint | None = None
    #: lowered source per variant, and the generated function name of each
    sources: dict[str, str] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)
    #: the global names the ``VARIANTS`` read (``jit.global_reads``; None: parse the sources)
    reads: set[str] | None = None
    #: a CUDA kernel's shape (``front.kernel.KernelShape``), None for other functions
    kernel: Any = None
    #: what the CUDA lowering produced (``backend.cuda.Lowered``)
    lowered: Any = None
    #: variant -> what it takes in ``_ws`` and returns (``lower.with_workspace``)
    workspaces: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: compiled with ``parallel=True``: prange loops stay parallel (``backend/prange.py``)
    parallel: bool = False
    #: ``has_aux=True``: returns ``(out, aux)``, only ``out`` seeded (``front/aux.py``)
    aux: bool = False
    #: compiled with Numba (``jit=True``): chains of whole-array statements run as loops
    #: over the elements (``backend/elements.py``)
    jit: bool = False
    #: its code has element loops (``lower_``): it is for float64 arguments only
    element_loops: bool = False
    #: parameters renamed in the code (user name -> code name: a parameter ``max`` would
    #: hide the builtin generated code calls; ``versions.unshadowed_builtins``)
    renamed: dict[str, str] = field(default_factory=dict)
    #: tuple arguments: parameter -> (structure, its entries' parameters) (``front/tuples.py``)
    tuples: dict[str, tuple[Any, list[str], bool]] | None = None
    #: reverse mode: a top-level loop whose tape would take more bytes runs on the binomial
    #: schedule (``modes/auto_checkpoint.py``); None: never (``config.checkpoint_bytes``)
    auto_checkpoint: int | None = None
    #: nested gradient calls (``front/nested.py``): what ``inline`` met (the probe), and
    #: the helper each inlines once the kinds at each are known (None: probe them)
    nested: list[tuple[Any, bool, list[str], ast.Call, Parsed]] = field(default_factory=list)
    sites: list[Any] | None = None
    #: the kind-independent passes that made this unit (``PREPARE``, or CUDA's list)
    prepared_with: list[Any] | None = None
    #: reverse mode's unit: calls of the helpers in ``splits`` stay calls (``front/split.py``)
    split: bool = False
    #: the helpers split (python function -> stand-in), or that a ``split`` unit would split
    splits: dict[Any, Any] = field(default_factory=dict)
    #: the ``split`` unit made from this one (``split_unit``)
    split_prep: Unit | None = None

    @property
    def name(self) -> str:
        return self.parsed.tree.name

    def specialise(self, wrt: list[str], arg_kinds: dict[str, Kind]) -> Unit:
        """A copy of a prepared unit for one specialisation (the cached one stays as is)."""
        to = self.renamed
        return Unit(self.func, self.parsed, copy.deepcopy(self.namer), dict(self.env),
                    list(self.params), clone(self.body), clone(self.returns),
                    [to.get(w, w) for w in wrt], {to.get(p, p): k for p, k in arg_kinds.items()},
                    kernel=self.kernel, parallel=self.parallel, aux=self.aux, renamed=to,
                    jit=self.jit, split=self.split, splits=self.splits)


def show_body(u: Unit) -> str:
    """The unit's body as the function it stands for (returns included)."""
    ret = ast.Return(value=clone(result_expr(u.returns))) if u.returns else None
    body = _shown_regions(clone(u.body)) + ([ret] if ret is not None else [])
    return emit.unparse(emit.function_def(u.name, u.params, body))


def _shown_regions(body: list[ast.stmt]) -> list[ast.stmt]:
    """``body`` with each checkpointed region printed as a commented ``if True:`` block."""
    out: list[ast.stmt] = []
    for s in body:
        for f in ("body", "orelse"):
            if getattr(s, f, None):
                setattr(s, f, _shown_regions(getattr(s, f)))
        if checkpoint(s):
            out.append(emit.comment("jg.checkpoint region: run without tapes, rerun in reverse"))
            s = ast.copy_location(ast.If(test=s.test, body=s.body, orelse=[]), s)
        out.append(s)
    return out


@dataclass(frozen=True)
class Pass:
    """One transpiler pass: ``run`` updates the unit; ``show`` renders it afterwards."""

    name: str
    run: Callable[[Unit], None]
    show: Callable[[Unit], str] = show_body

    @property
    def doc(self) -> str:
        return self.run.__doc__ or ""


# --- the passes ------------------------------------------------------------------------
# Each docstring's example is ``example(PASS, SOURCE)``: the unit after that pass.


def parse_(u: Unit) -> None:
    """Read the source, resolve free names (beniget), refuse unsupported syntax (fence).

    >>> print(example("parse", '''
    ... def f(x, y):
    ...     "doc"
    ...     return x * y + 1.0
    ... '''))
    def f(x, y):
        return x * y + 1.0
    """
    if u.parsed is None:  # (else parsed and fenced already: ``prepare``'s ``parsed``)
        u.parsed = parse_function(u.func)
        fence(u.parsed)
    _adopt(u)


def _adopt(u: Unit) -> None:
    """The unit's namer, parameters and body from its parsed function (``parse_``, and
    ``prepare_tree`` for generated code given as its tree)."""
    tree = u.parsed.tree
    u.namer = Namer(names_in(tree), u.parsed.free)
    u.parsed.origin = u.namer.origin  # messages name the user's variables, not generated ones
    u.env = u.parsed.env
    u.params = [a.arg for a in tree.args.args]
    body = clone(tree.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    u.body, u.params, u.renamed = unshadowed_builtins(body, u.params, u.namer)


def single_exit_(u: Unit) -> None:
    """One exit: early returns become a flag and a held value; the returns go to the end.

    >>> print(example("single_exit", '''
    ... def f(x):
    ...     if x > 0.0:
    ...         return x * 2.0
    ...     return -x
    ... '''))
    def f(x):
        if x > 0.0:
            _ret = x * 2.0
        else:
            _ret = -x
        return _ret
    """
    if u.aux:
        flatten_aux(u.body)
    u.body, u.returns = single_exit(u.parsed, u.body, u.namer)


def inline_(u: Unit) -> None:
    """Calls of the user's own helper functions are replaced by their bodies (a jitgrad
    gradient called here, by its generated gradient code: ``with_nested``).

    >>> print(example("inline", '''
    ... def f(x):
    ...     return _sq(x) + 1.0
    ... ''', helpers='''
    ... def _sq(a):
    ...     b = a * a
    ...     return b
    ... '''))
    def f(x):
        b1 = x * x
        return b1 + 1.0
    """
    ret = ast.Return(value=ast.Tuple(elts=u.returns, ctx=ast.Load()))
    if u.prepared_with is PREPARE:
        u.splits = split_helpers(u.parsed, u.body + [ret])
    body, u.nested = inline(u.parsed, u.body + [ret], u.namer, u.sites,
                            u.splits if u.split else None)
    u.returns = list(body.pop().value.elts)  # helper calls in the returned values too
    u.body = body


def tuples_(u: Unit) -> None:
    """Tuple arguments become one parameter per entry, and local tuples that are only
    unpacked, indexed with constants or returned one variable per entry
    (``front/tuples.py``).

    >>> print(example("tuples", '''
    ... def f(x, v):
    ...     state = (x, v)
    ...     a, b = state
    ...     return a * b + state[1]
    ... '''))
    def f(x, v):
        state_0, state_1 = (x, v)
        a, b = (state_0, state_1)
        return a * b + state_1
    """
    tuples = u.tuples or {}
    if tuples:
        u.namer.reserve(n for v in tuples.values() for n in v[1])
        u.params, u.body = flatten_params(u.params, u.body, tuples, u.parsed.tree)
    u.body, u.returns = split_tuples(u.body, u.returns, u.params, u.namer, tuples)
    refuse_whole_tuples(u.body, u.returns, u.params, tuples, u.parsed)


def lists_(u: Unit) -> None:
    """Lists of numbers appended once per trip of one loop and read after it become
    preallocated arrays (``front/value_lists.py``).

    >>> print(example("lists", '''
    ... def f(x, q):
    ...     s = 0.0
    ...     xs = [s]
    ...     for k in range(len(x)):
    ...         s = s + q * (x[k] - s)
    ...         xs.append(s)
    ...     return np.sum(np.array(xs))
    ... ''', args=(np.ones(3), 0.5)))
    def f(x, q):
        s = 0.0
        _xs_entry = s
        xs = np.zeros(len(x) + 1)
        xs[0] = _xs_entry
        for k in range(len(x)):
            s = s + q * (x[k] - s)
            xs[k + 1] = s
        return np.sum(xs.copy())
    """
    if u.kernel is None:  # (a CUDA kernel allocates no arrays)
        u.body = value_lists(u.body, u.returns, u.env, u.namer)


def loops_(u: Unit) -> None:
    """Loops in one shape: ``for`` over ``range`` with a counted index, ``while`` flags.

    >>> print(example("loops", '''
    ... def f(x):
    ...     s = 0.0
    ...     for v in x:
    ...         s += v
    ...     return s
    ... '''))
    def f(x):
        s = 0.0
        for _i in range(len(x)):
            v = x[_i]
            s += v
        return s
    """
    u.body = loops(u.parsed, u.body, u.env, u.namer, u.returns)


def last_taken_(u: Unit) -> None:
    """A loop whose last taken branch decides its result (a running maximum) finds that
    iteration on copies, then assigns once after it: no tape of every test
    (``front/last_taken.py``).

    >>> print(example("last_taken", '''
    ... def f(x):
    ...     m = x[0]
    ...     for j in range(1, x.shape[0]):
    ...         if x[j] > m:
    ...             m = x[j]
    ...     return m
    ... '''))
    def f(x):
        m = x[0]
        _m = m
        _hit = False
        _j = 0
        for j in range(1, x.shape[0]):
            if x[j] > _m:
                _m = x[j]
                _hit = True
                _j = j
        if _hit:
            m = x[_j]
        return m
    """
    u.body = last_taken(u.body, u.env, u.namer, u.params)


def normalize_(u: Unit) -> None:
    """One operation per statement, on names and constants (three-address form).

    >>> print(example("normalize", '''
    ... def f(x, y):
    ...     return x * y + math.sin(x)
    ... '''))
    def f(x, y):
        _t2 = x * y
        _t3 = math.sin(x)
        _t = _t2 + _t3
        return _t
    """
    norm = Normalizer(u.parsed, u.env, u.namer)
    body = rotations(norm.block(u.body), u.returns)
    atoms = []
    for r in u.returns:
        if isinstance(r, (ast.Constant, ast.Name)):
            atoms.append(r)
        else:
            atoms.append(norm.atom(r, body))
    u.body, u.returns = body, atoms
    for s in walk_stmts(body):  # (one operation per statement: a draw is its own)
        if not hasattr(s, "body") and first_draw([s], u.env) is not None:
            DRAW.set(s, True)


def versions_(u: Unit) -> None:
    """A name rebound at the top level gets a new name per value (``x``, ``x_1``...).

    >>> print(example("versions", '''
    ... def f(x):
    ...     y = x * x
    ...     y = y * x
    ...     return y
    ... '''))
    def f(x):
        y = x * x
        y_1 = y * x
        return y_1
    """
    u.body, u.returns = version_names(u.body, u.returns, u.params, u.namer)


def webs_(u: Unit) -> None:
    """A name two loops use for unrelated values gets one name per value (``d``, ``d_1``).

    >>> print(example("webs", '''
    ... def f(x, a):
    ...     s = 0.0
    ...     for i in range(3):
    ...         d = x * a
    ...         s = s + np.sum(d)
    ...     for j in range(2):
    ...         d = x * s
    ...         s = s + np.sum(d)
    ...     return s
    ... '''))
    def f(x, a):
        s = 0.0
        for i in range(3):
            d = x * a
            _t = np.sum(d)
            s = s + _t
        for j in range(2):
            d_1 = x * s
            _t2 = np.sum(d_1)
            s = s + _t2
        return s
    """
    if not u.parsed.filename.startswith("<jitgrad:"):  # (second order's input is
        # jitgrad's own gradient code, whose names its conventions tie together)
        split_webs(u.body, u.returns, u.params, u.namer)


def kinds_(u: Unit) -> None:
    """The kind (scalar or array, ndim, int/float/bool) of every name, from the arguments'.

    >>> print(example("kinds", '''
    ... def f(x, n):
    ...     s = 0.0
    ...     for i in range(n):
    ...         s = s + x[i]
    ...     return s
    ... ''', args=(np.ones(3), 3)))
    # kinds: i int, n int, s float, x float 1-d array
    def f(x, n):
        s = 0.0
        for i in range(n):
            _t = x[i]
            s = s + _t
        return s
    """
    u.kinds = infer(u.body, u.env, u.arg_kinds)
    refuse_elementwise_arrays(u.body, u.kinds, u.parsed)
    refuse_list_entries(u.body, u.kinds, u.parsed)
    u.body = fold_param_binds(u.body, u.kinds)
    u.body = inplace_updates(u.body, u.kinds, u.env, u.namer)


def small_arrays_(u: Unit) -> None:
    """Fixed-size arrays made in the body (``np.array`` of scalars, ``np.zeros(3)``, their
    elementwise arithmetic) become one scalar per element, where ``front/small_arrays.py``
    proves it safe: their forward and adjoint are scalar code.

    >>> print(example("small_arrays", '''
    ... def f(p, y0, n):
    ...     y = y0.copy()
    ...     for t in range(n):
    ...         k = np.array([y[1], -p * y[0]])
    ...         y = y + 0.1 * k
    ...     return np.sum(y * y)
    ... ''', args=(2.0, np.ones(2), 3)))
    def f(p, y0, n):
        y = y0.copy()
        _t8 = y.shape[0] != 2
        if _t8:
            raise ValueError("jitgrad keeps 'y' (line 2) as 2 scalars: it must have 2 elements")
        y_0 = y[0]
        y_1 = y[1]
        for t in range(n):
            _t = y_1
            _t3 = -p
            _t4 = y_0
            _t2 = _t3 * _t4
            k_0 = np.float64(_t)
            k_1 = np.float64(_t2)
            _t5_0 = 0.1 * k_0
            _t5_1 = 0.1 * k_1
            y_0 = y_0 + _t5_0
            y_1 = y_1 + _t5_1
        _t7_0 = y_0 * y_0
        _t7_1 = y_1 * y_1
        _t6 = _t7_0 + _t7_1
        return _t6
    """
    body = scalarise(u.body, u.returns, u.params, u.kinds, u.env, u.namer, u.arg_kinds)
    if body is not u.body:
        u.body = body
        u.kinds = infer(u.body, u.env, u.arg_kinds)


def show_kinds(u: Unit) -> str:
    """The body, headed by each user-visible name's kind."""
    names = sorted(n for n in u.kinds if not is_generated(n))
    head = "# kinds: " + ", ".join(f"{n} {_kind_text(u.kinds[n])}" for n in names)
    return head + "\n" + show_body(u)


def _kind_text(k: Kind) -> str:
    """``float``, ``int``, ``float 2-d array``: a kind as ``show`` names it."""
    cls = {"b": "bool", "i": "int", "f": "float", "c": "complex", "t": "tuple"}.get(k.cls, "?")
    if not k.is_array:
        return cls
    return f"{cls} {'?' if k.ndim is None else k.ndim}-d array"


def analyse_(u: Unit) -> None:
    """Activity, how each adjoint is held (buffer, local, view), positions, aliases.

    >>> print(example("analyse", '''
    ... def f(x, n):
    ...     s = 0.0
    ...     for i in range(n):
    ...         s = s + x[i] * x[i]
    ...     return s
    ... ''', args=(np.ones(3), 3)))
    # active: s, x; adjoints: s buffer, x buffer
    def f(x, n):
        s = 0.0
        for i in range(n):
            _t2 = x[i]
            _t3 = x[i]
            _t = _t2 * _t3
            s = s + _t
        return s
    """
    if u.kernel is None:  # (numba.cuda compiles an assert away unless debugging)
        u.body = distinct_guards(u.body, u.kinds, u.params) + u.body
    u.analysis = analyse(u.body, u.env, u.kinds, u.params, u.wrt, u.returns, u.parsed)


def show_analysis(u: Unit) -> str:
    """The body, headed by the user-visible active names and how their adjoints are held."""
    an = u.analysis
    act = sorted(n for n in an.active if not is_generated(n))
    modes = ", ".join(f"{n} {an.modes[n]}" for n in act if n in an.modes)
    return f"# active: {', '.join(act)}; adjoints: {modes}\n" + show_body(u)


def prange_(u: Unit) -> None:
    """Under ``parallel=True``, a prange loop whose iterations race in the primal (an array
    written at another iteration's index, a value carried between iterations) is refused;
    the others are kept parallel in both sweeps where that is safe (see ``lower``).

    >>> print(example("prange", '''
    ... def f(x, k):
    ...     y = np.zeros(x.shape[0])
    ...     for i in prange(1, x.shape[0]):
    ...         y[i] = k * x[i - 1]
    ...     return np.sum(y)
    ... ''', args=(np.ones(3), 0.5), parallel=True))
    # prange loop over i: iterations independent
    def f(x, k):
        y = np.zeros(x.shape[0])
        _n = x.shape[0]
        for i in range(1, _n):
            _t2 = x[i - 1]
            _t = k * _t2
            y[i] = _t
        _t3 = np.sum(y)
        return _t3
    """
    if u.parallel:
        refuse_races(u)
        refuse_parallel_draws(u)


def show_prange(u: Unit) -> str:
    """The body, headed by what the check found of each prange loop."""
    head = "".join(f"# prange loop over {i}: {v}\n" for i, v in loop_verdicts(u))
    return head + show_body(u)


def reverse_(u: Unit) -> None:
    """Reverse mode: the forward sweep with pushes, the adjoint sweep with pops (the IR).

    >>> print(example("reverse", '''
    ... def f(x, y):
    ...     return x * y + math.sin(x)
    ... '''))
    def f_grad(x, y, _dret):
        _t2 = x * y
        _t3 = math.sin(x)
        _t = _t2 + _t3
        dx = 0.0
        dy = 0.0
        # line 2: return x * y + math.sin(x)
        dx += _dret * np.cos(x)
        dx += _dret * y
        dy += _dret * x
        return (_t, (dx, dy))

    A value the adjoint reads that the next trip overwrites is recomputed where that costs
    no more than a tape round trip, and stored otherwise (``analysis/cost.py``); comments
    say which and why:

    >>> print(example("reverse", '''
    ... def f(x, n):
    ...     s = 0.0
    ...     for i in range(n):
    ...         r = math.sqrt(x[i] * x[i] + 1.0)
    ...         t = math.exp(r)
    ...         s = s + t * r
    ...     return s
    ... ''', args=(np.ones(3), 3)))
    def f_grad(x, n, _dret):
        _tape_t_1 = np.empty(0, np.float64)
        _tape_t_1n = 0
        s = 0.0
        _tape_t_1 = tape_reserve(_tape_t_1, _tape_t_1n, n)
        for i in range(n):
            _t3 = x[i]
            _t4 = x[i]
            _t2 = _t3 * _t4
            _t = _t2 + 1.0
            r = math.sqrt(_t)
            t = math.exp(r)
            # stored t: math.exp costs 20 > tape 16
            _tape_t_1[_tape_t_1n] = t
            _tape_t_1n += 1
            _t5 = t * r
            s = s + _t5
        dx = np.zeros_like(x)
        ds = 0.0
        ds += _dret
        for i in range(n - 1, -1, -1):
            # line 6: s = s + t * r
            _dt5 = ds
            # recomputed r from x (cost 6 <= tape 16, the rest shared with earlier lines)
            _t2 = x[i] * x[i]
            _t = _t2 + 1.0
            r = math.sqrt(_t)
            _tape_t_1n -= 1
            t = _tape_t_1[_tape_t_1n]
            dt = _dt5 * r
            dr = _dt5 * t
            # line 5: t = math.exp(r)
            dr += dt * t
            # line 4: r = math.sqrt(x[i] * x[i] + 1.0)
            _dt = guard(dr, dr * 0.5 / r)
            _t3 = x[i]
            _t4 = x[i]
            _dt3 = _dt * _t4
            _dt4 = _dt * _t3
            dx[i] += _dt4
            dx[i] += _dt3
        return (s, dx)
    """
    seeded = u.returns[:1] if u.aux else u.returns  # has_aux: aux carries no gradient
    sw = reverse(u.parsed, u.body, u.analysis, u.env, u.namer, u.params, u.wrt, seeded,
                 u.auto_checkpoint)
    # the adjoint sweep may restore overwritten names: keep the outputs aside first
    results = []
    for r in u.returns:
        if isinstance(r, ast.Name) and r.id in sw.restored:
            keep = u.namer.fresh("_value")
            sw.forward.append(ast.Assign(targets=[ast.Name(id=keep, ctx=ast.Store())],
                                         value=ast.Name(id=r.id, ctx=ast.Load())))
            results.append(ast.Name(id=keep, ctx=ast.Load()))
        else:
            results.append(r)
    sw.compiled |= call_helpers([*sw.prologue, *sw.workspace, *sw.forward, *sw.init,
                                 *sw.adjoint], u.env, u.namer)
    u.ir = Adjoint(u.name, tuple(u.params), u.namer.seed, tuple(sw.prologue), tuple(sw.workspace),
                   tuple(sw.forward), tuple(sw.init), tuple(sw.adjoint), tuple(results),
                   tuple(sw.grads), dict(sw.shared), frozenset(sw.callables),
                   tuple(sw.reused), tuple(sw.buffers), tuple(sw.schedules), sw.snapshots,
                   u.namer.workspace, u.namer.global_name(u.env, "np", np),
                   shape_reading_names(u.env), frozenset(sw.compiled))


def show_ir(u: Unit) -> str:
    """The IR as the value-and-gradient function, before optimisation."""
    fn = emit.function_def(f"{u.name}_grad", [*u.ir.params, u.ir.seed],
                           clone(u.ir.body()) + [lower.result_return(u.ir, "grad")])
    return emit.unparse(fn)


def optimize_(u: Unit) -> None:
    """Accumulations into one adjoint in a row become one statement, and a scalar adjoint
    zeroed just before its first contribution is assigned it (dead code goes at
    lowering, per variant).

    >>> print(example("optimize", '''
    ... def f(x, n):
    ...     s = 0.0
    ...     for i in range(n):
    ...         s = s + x[i] * x[i]
    ...     return s
    ... ''', args=(np.ones(3), 3)))
    def f_grad(x, n, _dret):
        s = 0.0
        for i in range(n):
            _t2 = x[i]
            _t3 = x[i]
            _t = _t2 * _t3
            s = s + _t
        dx = np.zeros_like(x)
        ds = _dret
        for i in range(n - 1, -1, -1):
            # line 4: s = s + x[i] * x[i]
            _dt = ds
            _t2 = x[i]
            _t3 = x[i]
            _dt2 = _dt * _t3
            _dt3 = _dt * _t2
            dx[i] += _dt3 + _dt2
        return (s, dx)
    """
    ir = u.ir
    adjoint = merge_accumulations(list(ir.adjoint), ir.shared)
    scalars = {d for n, d in u.namer.adjoints().items()
               if n in u.kinds and not u.kinds[n].is_array}
    both = fold_scalar_adjoints([*ir.init, *adjoint], scalars, ir.shared, u.analysis.aliases)
    kept = 0  # the zeroings that stay are still the first statements
    while kept < len(both) and kept < len(ir.init) and both[kept] in ir.init:
        kept += 1
    u.ir = dataclasses.replace(ir, init=tuple(both[:kept]), adjoint=tuple(both[kept:]))


def gather_(u: Unit) -> None:
    """A reversed loop that scatters into ``dx[i + c]`` runs over the output index
    instead, writing each element once (``backend/gather.py``; edges guarded).

    >>> print(example("gather", '''
    ... def f(x, n):
    ...     s = 0.0
    ...     for i in range(n):
    ...         s = s + x[i] * x[i + 1]
    ...     return s
    ... ''', args=(np.ones(4), 3), variant="adjoint"))
    def f_adjoint(_dret):
        dx = np.empty_like(x)
        ds = _dret
        _lo = 0
        _hi = n
        _inner_lo = _lo + 1
        _inner_hi = max(_inner_lo, _hi)
        _head = _inner_lo - _lo
        _edges = _head + (_hi + 1 - _inner_hi)
        if _lo < _hi:
            # dx: each element written once (made empty); those no index reaches set to 0
            dx[_hi + 1:] = 0.0
            # line 4: s = s + x[i] * x[i + 1]
            for i in range(_inner_lo, _inner_hi):
                _dt = ds
                _t3 = x[i + 1]
                _dt2 = _dt * _t3
                _i_prev = i - 1
                _dt_prev = ds
                _t2_prev = x[_i_prev]
                _dt3_prev = _dt_prev * _t2_prev
                dx[i] = _dt2 + _dt3_prev
            for _e in range(_edges):
                i = _lo + _e if _e < _head else _inner_hi + (_e - _head)
                _gdx = 0.0
                if _lo <= i < _hi:
                    _dt = ds
                    _t3 = x[i + 1]
                    _dt2 = _dt * _t3
                    _gdx += _dt2
                if _lo <= i - 1 < _hi:
                    _i_prev = i - 1
                    _dt_prev = ds
                    _t2_prev = x[_i_prev]
                    _dt3_prev = _dt_prev * _t2_prev
                    _gdx += _dt3_prev
                dx[i] = _gdx
        else:
            dx[:] = 0.0
    """
    ir = u.ir
    before = [*ir.prologue, *ir.workspace, *ir.forward, *ir.init]
    adjoint, once = gather_form(list(ir.adjoint), before, u.env, u.namer, ir.shared,
                                set(ir.grads), parallel=u.parallel,
                                kept=frozenset(d for d, _, _ in ir.buffers))
    init = tuple(_made_empty(s) if isinstance(s, ast.Assign) and isinstance(
        s.targets[0], ast.Name) and s.targets[0].id in once else s for s in ir.init)
    u.ir = dataclasses.replace(ir, init=init, adjoint=tuple(adjoint))


def _made_empty(s: ast.Assign) -> ast.Assign:
    """``d = np.empty_like(v)`` for the zeroing ``d = np.zeros_like(v)``."""
    new = clone(s)
    new.value.func.attr = "empty_like"
    ZEROING.set(new.value, False)
    return new


def promote_(u: Unit) -> None:
    """An inner loop's accumulations into one element (``dpos[i, k] += e`` with ``i`` from
    an outer loop) go to a scalar, added once after the loop (``backend/promote.py``).

    >>> print(example("promote", '''
    ... def f(x, n):
    ...     s = 0.0
    ...     for i in range(n):
    ...         for j in range(i + 1, n):
    ...             s = s + x[i] * x[j]
    ...     return s
    ... ''', args=(np.ones(3), 3), variant="adjoint"))
    def f_adjoint(_dret):
        dx = np.zeros_like(x)
        ds = _dret
        for i in range(n - 1, -1, -1):
            _n_1 = i + 1
            _dx_i_sum = 0.0
            for j in range(n - 1, _n_1 - 1, -1):
                # line 5: s = s + x[i] * x[j]
                _dt = ds
                _t2 = x[i]
                _t3 = x[j]
                _dt2 = _dt * _t3
                _dt3 = _dt * _t2
                dx[j] += _dt3
                _dx_i_sum += _dt2
            if n > _n_1:
                dx[i] += _dx_i_sum
    """
    ir = u.ir
    before = [*ir.prologue, *ir.workspace, *ir.forward, *ir.init]
    ndims = {d: u.kinds[n].ndim for n, d in u.namer.adjoints().items()
             if n in u.kinds and u.kinds[n].is_array and u.kinds[n].ndim is not None}
    adjoint = promote_accumulations(list(ir.adjoint), before, u.env, u.namer, ir.shared,
                                    ndims)
    u.ir = dataclasses.replace(ir, adjoint=tuple(adjoint))


def lower_(u: Unit) -> None:
    """One function per variant from the IR: value and gradient, gradient only (CPU; for a
    scalar function the gradient-only variant, which ``f.grad`` runs, has its seed 1.0),
    each through the steps of ``BACKEND`` (``backend/passes.py``).

    >>> print(example("lower", '''
    ... def f(x, y):
    ...     return x * y + math.sin(x)
    ... ''', variant="grad_only"))
    def f_gradonly_1(x, y, _dret):
        # line 2: return x * y + math.sin(x)
        dx = 1.0 * np.cos(x) + 1.0 * y
        dy = 1.0 * x
        return (None, (dx, dy))
    """
    ctx = backend_context(u)
    lowered = passes.lower_variants(ctx)
    for v, s in lowered.items():
        u.sources[v] = s.text
    u.reads = passes.global_names(ctx, lowered.values())
    u.element_loops = ctx.element_loops
    for part in lower.PARTS:
        u.sources[part] = passes.sweep_text(ctx, lower.lower(u.ir, part, f"{u.name}_{part}"))


def _fuses_elements(u: Unit) -> bool:
    """Run whole-array chains as element loops: compiled for float64 arguments
    (``transform``'s ``elements``), not second order's input (jitgrad's own gradient code,
    differentiated again), and no narrower float named in the code."""
    return u.jit and not u.parsed.filename.startswith("<jitgrad:") and not _narrow_floats(u)


#: what a narrower float dtype is named by (``np.float32``, ``"f4"``, ``"single"``...)
_NARROW = frozenset(np.dtype(t) for t in (np.float16, np.float32))


def _narrow_floats(u: Unit) -> bool:
    """Does the code name a float dtype narrower than float64?  Element loops make their
    arrays float64 where every float is (``np.empty_like`` of a float64 array)."""
    def narrow(v: Any) -> bool:
        try:
            return isinstance(v, (type, str, np.dtype)) and np.dtype(v) in _NARROW
        except (TypeError, ValueError):
            return False

    def named(e: ast.AST) -> Any:
        return e.value if isinstance(e, ast.Constant) else \
            resolve(e, u.env) if isinstance(e, (ast.Name, ast.Attribute)) else None

    return any(narrow(named(e)) for s in u.body for e in ast.walk(s))


def all_float64(args: Any) -> bool:
    """Are the floats among ``args`` (arrays, NumPy scalars, in tuples and lists) all
    float64?  Then element loops may run (``transform``'s ``elements``)."""
    if isinstance(args, list):  # (one type of element, as Numba's lists have)
        return not args or all_float64(args[0])
    if isinstance(args, tuple):
        return all(all_float64(a) for a in args)
    dt = getattr(args, "dtype", None)
    return not isinstance(dt, np.dtype) or dt.kind != "f" or dt == np.float64


def _float_ndims(u: Unit, scalar: bool) -> dict[str, int]:
    """The dimensions of the float names, scalar names and adjoints (``elements``)."""
    out = {n: k.ndim for n, k in u.kinds.items()
           if k.ndim is not None and (k.cls == "f" or (k.cls in "ib" and k.ndim == 0))}
    for n, d in u.namer.adjoints().items():
        k = u.kinds.get(n)
        if k is not None and k.cls == "f" and k.ndim is not None:
            out.setdefault(d, k.ndim)
    if scalar:
        out[u.ir.seed] = 0
    return out


def _scalar_cotangents(u: Unit) -> frozenset[str]:
    """The adjoints of float scalars (``backend/zero_skip.py`` guards loops on them)."""
    return frozenset(d for n, d in u.namer.adjoints().items()
                     if (k := u.kinds.get(n)) is not None and k.cls == "f" and k.ndim == 0)


def _array_kinds(u: Unit) -> Callable[[str], bool | None]:
    """Whether a name (or its adjoint) is an array, where the kinds know; else None."""
    known = {n: k.is_array for n, k in u.kinds.items()}
    for n, d in u.namer.adjoints().items():
        if n in known:
            known.setdefault(d, known[n])
    return known.get


def backend_context(u: Unit) -> passes.Context:
    """What the backend list needs of the unit, shared by its variants (names them)."""
    u.names = {"grad": u.namer.fresh(f"{u.name}_grad_"),
               "grad_only": u.namer.fresh(f"{u.name}_gradonly_")}
    ret = u.returns[0] if len(u.returns) == 1 else None
    scalar = isinstance(ret, ast.Constant) or (
        isinstance(ret, ast.Name) and ret.id in u.kinds and not u.kinds[ret.id].is_array
        and u.kinds[ret.id].cls in ("f", "i", "b"))
    arrays = frozenset(n for n, k in u.kinds.items() if k.cls == "f" and k.ndim)
    return passes.Context(
        u.ir, u.names, u.workspaces, unit_seed=scalar,
        once=builtins_unshadowed(u.env, ("max", "range", "len")), arrays=arrays,
        cotangents=_scalar_cotangents(u), is_array=_array_kinds(u),
        ndims=_float_ndims(u, scalar) if _fuses_elements(u) else None, env=u.env,
        parallel=(lambda: Parallel(u)) if u.parallel else None,
        cached_calls=u.jit and not u.parallel,
        accessor=lambda n: u.namer.global_name(u.env, n, getattr(helpers, n)))


PREPARE: list[Pass] = [
    Pass("parse", parse_),
    Pass("single_exit", single_exit_),
    Pass("inline", inline_),
    Pass("tuples", tuples_),
    Pass("lists", lists_),
    Pass("loops", loops_),
    Pass("last_taken", last_taken_),
    Pass("normalize", normalize_),
    Pass("versions", versions_),
    Pass("webs", webs_),
]
SPECIALISE: list[Pass] = [
    Pass("kinds", kinds_, show_kinds),
    Pass("small_arrays", small_arrays_),
    Pass("analyse", analyse_, show_analysis),
    Pass("prange", prange_, show_prange),
    Pass("reverse", reverse_, show_ir),
    Pass("optimize", optimize_, show_ir),
    Pass("gather", gather_, show_ir),
    Pass("promote", promote_, show_ir),
    Pass("lower", lower_, lambda u: u.sources["grad"]),
]
PASSES: list[Pass] = PREPARE + SPECIALISE
#: the steps ``lower`` runs per variant (``backend/passes.py``), by name
BACKEND: dict[str, passes.BackendPass] = {p.name: p for p in passes.BACKEND}
#: the pass whose output ``lower`` (the backend list) starts from
_BEFORE_LOWER = SPECIALISE[[p.run for p in SPECIALISE].index(lower_) - 1].name

#: ``stage=`` names: every pass and backend step, plus the sweeps of the lowered code
STAGES = ("normalized", "forward", "adjoint", "all", *(p.name for p in PASSES), *BACKEND)


# --- running them -----------------------------------------------------------------------


@_without_gc
def prepare(func: Any, until: str | None = None, passes: list[Pass] | None = None,
            parallel: bool = False, aux: bool = False,
            tuples: dict[str, tuple[Any, list[str], bool]] | None = None,
            jit: bool = False, split: bool = False, parsed: Parsed | None = None) -> Unit:
    """Run the kind-independent passes (``PREPARE``, or another target's list) up to and
    including ``until``; ``parallel``: the function is compiled with ``parallel=True``;
    ``aux``: it returns ``(out, aux)`` and only ``out`` is differentiated; ``tuples``:
    its tuple arguments' structures (``front/tuples.py``); ``jit``: compiled with Numba;
    ``split``: helpers called at many sites stay calls (``front/split.py``); ``parsed``:
    ``func`` parsed and fenced already (the API's first refusals), not again."""
    u = Unit(func, parsed=parsed, parallel=parallel, aux=aux, tuples=tuples, jit=jit,
             prepared_with=passes or PREPARE, split=split)
    for p in u.prepared_with:
        p.run(u)
        if p.name == until:
            break
    return u


@_without_gc
def prepare_tree(func: Any, parsed: Parsed, parallel: bool = False, jit: bool = False) -> Unit:
    """``prepare`` for generated code given as its tree (``parsed``, as the parser gives it
    back, ``backend/as_parsed.py``): ``parse``'s bookkeeping without reading or fencing a
    source, then the other passes of ``PREPARE``.  Second order's gradient code."""
    u = Unit(func, parsed=parsed, parallel=parallel, jit=jit, prepared_with=PREPARE)
    _adopt(u)
    for p in PREPARE[1:]:
        p.run(u)
    return u


@_without_gc
def transform(prep: Unit, wrt: list[str], arg_kinds: dict[str, Kind],
              until: str | None = None, passes: list[Pass] | None = None,
              auto_checkpoint: int | None = None, elements: bool = False) -> Unit:
    """Run the passes of one specialisation (``SPECIALISE``, or forward mode's list) on a
    copy of the prepared unit, up to and including ``until`` (``auto_checkpoint``: see
    ``Unit.auto_checkpoint``; ``elements``: element loops may run under ``jit=True``, the
    arguments' floats being float64, ``all_float64``)."""
    u = with_nested(prep, arg_kinds).specialise(wrt, arg_kinds)
    u.auto_checkpoint = auto_checkpoint
    u.jit = u.jit and elements
    try:
        for p in SPECIALISE if passes is None else passes:
            p.run(u)
            if p.name == until:
                break
    except TransformError as e:
        if not prep.nested:
            raise
        raise blamed(e) from None  # (a line of inlined gradient code: the user's call)
    return u


def with_nested(prep: Unit, arg_kinds: dict[str, Kind]) -> Unit:
    """``prep`` with its nested gradient calls' code inlined for these argument kinds: the
    kinds the probe's inference finds at each call (``front/nested.py``); ``prep`` itself
    if it calls none (or has them already)."""
    if not prep.nested or prep.sites is not None:
        return prep
    if prep.prepared_with is not PREPARE:
        _, _, _, node, parsed = prep.nested[0]
        raise parsed.error("a jitgrad transform called inside CUDA code (nested "
                           "differentiation) is not supported", node,
                           "call it on the CPU, or write the derivative as a device function")
    probe = prep.specialise([], arg_kinds)
    kinds = infer(probe.body, probe.env, probe.arg_kinds)
    with expanding(prep.func):
        sites = [_inlined_code(d, entry, site_kinds(d, names, kinds, node, parsed), node,
                               parsed) for d, entry, names, node, parsed in prep.nested]
    u = Unit(prep.func, parallel=prep.parallel, aux=prep.aux, tuples=prep.tuples, sites=sites,
             jit=prep.jit, split=prep.split)
    for p in PREPARE:
        p.run(u)
    return u


def _inlined_code(diff: Any, entry: str, kinds: dict[str, Kind], node: ast.Call,
                  parsed: Parsed) -> Any:
    """The helper a nested call of ``diff``'s ``entry`` (``front/nested.ENTRIES``) inlines:
    its generated code at ``kinds`` (``gradient_code.NESTED_CODE``), taking the user's
    parameters (gradient code: their defaults too, and ``_dret``, 1.0)."""
    refuse_recursion(diff, node, parsed)
    site = f"{parsed.tree.name} at {parsed.filename}:{parsed.absolute_line(node)}"
    what = ENTRIES[entry]
    try:
        gen, make = NESTED_CODE[what.code](diff, kinds, lambda: _reverse(diff, kinds))
    except TransformError as e:
        raise e.via(site) from None
    if gen.written:  # (called from Python it works on copies; inlined, it would not)
        raise parsed.error(f"'{ast.unparse(node.func)}' is a {entry} of "
                           f"{diff.func.__name__}, which writes its argument "
                           f"{', '.join(sorted(gen.written))} in place: nested, that write "
                           "would reach the caller's array", node,
                           f"copy it first in {diff.func.__name__} (x = x.copy()), or pass "
                           "a copy")
    rk = gen.return_kinds
    scalar = what.code != "tangent"  # (a jvp takes one output of any rank)
    if len(rk) != 1 or (scalar and rk[0] is not None and rk[0].ndim != 0):
        raise parsed.error(f"'{ast.unparse(node.func)}' is a {entry} of "
                           f"{diff.func.__name__}, which returns {len(rk)} values or an "
                           f"array: it needs {'a scalar output' if scalar else 'one output'}",
                           node)
    try:
        return make(what.value)
    except TransformError as e:
        raise e.via(site) from None


def _reverse(diff: Any, kinds: dict[str, Kind]) -> Generated:
    """``diff``'s reverse-mode code at ``kinds``, its IR kept."""
    gen = diff._generated_kinds(kinds)
    if gen.unit.ir is None:  # (loaded from the on-disk cache: no IR kept)
        gen = generate(diff._prep(), [diff.params[i] for i in diff.wrt_positions], kinds)
    return gen


def stage(func: Any, name: str, wrt: list[str], arg_kinds: dict[str, Kind],
          parallel: bool = False, tuples: dict[str, Any] | None = None,
          jit: bool = False) -> str:
    """The source after pass ``name`` (or step ``name`` of ``lower``'s list, ``BACKEND``, or
    one of the lowered sweeps) for these kinds (``parallel``: compiled with
    ``parallel=True``; ``tuples``: see ``prepare``; ``jit``: compiled with Numba)."""
    if name == "normalized":
        return show_body(prepare(func, tuples=tuples))
    auto = config.checkpoint_threshold()
    if name in ("forward", "adjoint", "all"):
        u = transform(prepare(func, parallel=parallel, tuples=tuples, jit=jit), wrt,
                      arg_kinds, auto_checkpoint=auto, elements=jit)
        return u.sources["grad" if name == "all" else name]
    if name in BACKEND:
        return _backend_stage(transform(prepare(func, parallel=parallel, tuples=tuples,
                                                jit=jit), wrt, arg_kinds, until=_BEFORE_LOWER,
                                        auto_checkpoint=auto, elements=jit),
                              BACKEND[name])
    p = next((p for p in PASSES if p.name == name), None)
    if p is None:
        raise ValueError(f"stage must be one of {', '.join(STAGES)}")
    u = prepare(func, until=name, parallel=parallel, tuples=tuples)
    if p in SPECIALISE:
        u = transform(u, wrt, arg_kinds, until=name, auto_checkpoint=auto)
    return p.show(u).rstrip("\n") + "\n"


def _backend_stage(u: Unit, step: passes.BackendPass) -> str:
    """The variant ``step.shows`` after backend ``step``, from ``u`` as ``lower`` gets it."""
    s = passes.run(passes.start(backend_context(u), step.shows), until=step.name)
    return step.show(s).rstrip("\n") + "\n"


_EXAMPLES = itertools.count(1)


def example(pass_name: str, source: str, args: tuple | None = None, helpers: str = "",
            variant: str = "", parallel: bool = False, jit: bool = False) -> str:
    """Run the passes up to ``pass_name`` on ``source`` (one def; floats by default) and
    show the result: how the passes' docstrings show what each one does (``parallel``:
    as compiled with ``parallel=True``; ``prange`` is Numba's; ``jit``: as compiled with
    Numba, ``jit=True``)."""
    import math

    import numpy as np
    from numba import prange

    from .analysis.kinds import of_value

    fname = f"<jitgrad-example-{next(_EXAMPLES)}>"
    text = textwrap.dedent(source).strip("\n") + "\n"
    full = text + ("\n" + textwrap.dedent(helpers).strip("\n") + "\n" if helpers else "")
    linecache.cache[fname] = (len(full), None, full.splitlines(True), fname)
    ns: dict[str, Any] = {"np": np, "math": math, "prange": prange}
    exec(compile(full, fname, "exec"), ns)
    func = ns[ast.parse(text).body[0].name]
    params = func.__code__.co_varnames[:func.__code__.co_argcount]
    values = args if args is not None else (1.0,) * len(params)
    kinds = {p: of_value(a) for p, a in zip(params, values, strict=True)}
    wrt = [p for p in params if kinds[p].cls == "f"]
    if variant:
        return transform(prepare(func, parallel=parallel, jit=jit), wrt,
                         kinds, elements=jit).sources[variant].rstrip("\n")
    return stage(func, pass_name, wrt, kinds, parallel, jit=jit).rstrip("\n")


# --- what the API keeps per specialisation ---------------------------------------------

Prepared = Unit


@dataclass
class Generated:
    """What ``transform`` produced for one specialisation, as the API keeps it."""

    unit: Unit
    return_kinds: list[Kind | None]
    compiled: Any = None
    #: seconds jitgrad spent making it (transform, or loading it from the on-disk cache)
    transform_seconds: float = 0.0
    #: the array arguments the generated code writes in place (it works on copies of them,
    #: so it refuses arguments that share memory with them: ``api.refuse_aliased``)
    written: frozenset[str] = frozenset()
    #: for float64 arguments only: its code has element loops (``transform``'s ``elements``)
    float64: bool = False


def written_args(u: Unit) -> frozenset[str]:
    """The array arguments unit ``u``'s code writes in place (from its analysis)."""
    user = {code: p for p, code in u.renamed.items()}
    return frozenset(user.get(a, a) for a in u.analysis.args_written) \
        if u.analysis is not None else frozenset()


def split_unit(prep: Unit) -> Unit:
    """``prep`` prepared again with its helpers called at many sites split
    (``front/split.py``), made once; ``prep`` itself where none is (or where it is
    compiled with ``parallel=True``: its prange sweeps are not made for split calls)."""
    if not prep.splits or prep.split or prep.prepared_with is not PREPARE or prep.parallel:
        return prep
    if prep.split_prep is None:
        prep.split_prep = prepare(prep.func, parallel=prep.parallel, aux=prep.aux,
                                  tuples=prep.tuples, jit=prep.jit, split=True)
    return prep.split_prep


def generate(prep: Unit, wrt: list[str], arg_kinds: dict[str, Kind],
             auto_checkpoint: bool | None = None, elements: bool = False,
             split: bool = True) -> Generated:
    """All specialising passes; the return kinds tell the API what the function returns.
    ``auto_checkpoint``: checkpoint top-level loops whose tape would not fit in cache
    (None: ``jitgrad.config``'s choice); ``elements``: see ``transform``; ``split``:
    helpers called at many sites are compiled once (``split_unit``)."""
    auto = config.checkpoint_threshold(auto_checkpoint)
    try:
        u = transform(split_unit(prep) if split else prep, wrt, arg_kinds,
                      auto_checkpoint=auto, elements=elements)
    except SplitRefused:  # (a split call these kinds do not fit: every helper inlined)
        u = transform(prep, wrt, arg_kinds, auto_checkpoint=auto, elements=elements)
    rk = [u.kinds.get(r.id) if isinstance(r, ast.Name) else None for r in u.returns]
    return Generated(u, rk, written=written_args(u), float64=u.element_loops)


__all__ = ["BACKEND", "PASSES", "PREPARE", "SPECIALISE", "STAGES", "Generated", "Pass", "Prepared",
           "Unit", "all_float64", "example", "fence", "generate", "prepare", "prepare_tree",
           "stage", "transform", "written_args"]


register_makers(prepare=prepare, gradient_code=gradient_code)  # (front/split.py)
register_generate(generate, prepare_tree)  # (gradient_code: _unsplit, gradient_tree)
