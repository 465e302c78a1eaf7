"""The transpiler's passes, as data: two ordered lists run over one ``Unit``, and the
entry points that run them.

``PREPARE`` holds the passes that do not depend on argument kinds (run once per
function and cached; ``front_passes.py``); ``SPECIALISE`` the ones run per (wrt,
argument kinds): the front end's kind-dependent passes, then reverse mode's
(``reverse_passes.py``).  Each pass is a ``Pass`` (``unit.py``): a name, a function
that updates the ``Unit`` in place, and a ``show`` that renders the unit after it.
``stage(func, name, ...)`` (and ``jitgrad show --stage NAME``, ``f.source(stage=NAME)``)
prints any pass's output; every pass's docstring carries a before/after example that
``tests/test_passes.py`` runs as a doctest (``example`` writes them).  The last pass,
``lower``, runs a list of its own per variant, ``BACKEND`` (``backend/passes.py``),
whose steps are stages too.
"""

from __future__ import annotations

import ast
import itertools
import linecache
import textwrap
from dataclasses import dataclass
from typing import Any

from .. import config
from ..errors import TransformError
from .analysis.kinds import Kind, infer
from .backend import passes
from .front.nested import ENTRIES, blamed, expanding, refuse_recursion, site_kinds
from .front.parse import Parsed
from .front.split import SplitRefused, register_makers
from .front_passes import (
    PREPARE,
    SPECIALISE_FRONT,
    adopt,
    analyse_,
    prange_,
    show_analysis,
    show_prange,
)
from .gradient_code import NESTED_CODE, gradient_code, register_generate
from .reverse_passes import (
    all_float64,
    backend_context,
    gather_,
    lower_,
    lowered,
    optimize_,
    promote_,
    reverse_,
    show_ir,
)
from .unit import Pass, Unit, show_body
from .unit import without_gc as _without_gc

#: run once per function: ``PREPARE`` (``front_passes.py``, parse .. webs); then per
#: specialisation (wrt, argument kinds):
SPECIALISE: list[Pass] = [
    *SPECIALISE_FRONT,
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
STAGES = ("normalized", "forward", "adjoint", "all", *(p.name for p in PASSES), *BACKEND,
          "backend")


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
    adopt(u)
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
    u = Unit(prep.func, prep.parsed.again(), parallel=prep.parallel, aux=prep.aux,
             tuples=prep.tuples, sites=sites, jit=prep.jit, split=prep.split)
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
    if name in BACKEND or name == "backend":
        return _backend_stage(transform(prepare(func, parallel=parallel, tuples=tuples,
                                                jit=jit), wrt, arg_kinds, until=_BEFORE_LOWER,
                                        auto_checkpoint=auto, elements=jit),
                              BACKEND.get(name))
    p = next((p for p in PASSES if p.name == name), None)
    if p is None:
        raise ValueError(f"stage must be one of {', '.join(STAGES)}")
    u = prepare(func, until=name, parallel=parallel, tuples=tuples)
    if p in SPECIALISE:
        u = transform(u, wrt, arg_kinds, until=name, auto_checkpoint=auto)
    return p.show(u).rstrip("\n") + "\n"


def _backend_stage(u: Unit, step: passes.BackendPass | None) -> str:
    """The variant ``step.shows`` after backend ``step``, from ``u`` as ``lower`` gets it;
    None: every step in turn and what it changed (``passes.changes``)."""
    if step is None:
        return passes.changes(backend_context(u))
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
    #: its code has element loops (``transform``'s ``elements``); None: not known until
    #: every variant is lowered (``float64`` lowers them)
    element_loops: bool | None = False

    @property
    def float64(self) -> bool:
        """For float64 arguments only: its code has element loops."""
        if self.element_loops is None:
            self.element_loops = bool(lowered(self.unit).element_loops)
        return self.element_loops


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
                                  tuples=prep.tuples, jit=prep.jit, split=True,
                                  parsed=prep.parsed.again())
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
    return Generated(u, rk, written=written_args(u), element_loops=u.element_loops)


__all__ = ["BACKEND", "PASSES", "PREPARE", "SPECIALISE", "STAGES", "Generated", "Pass", "Prepared",
           "Unit", "all_float64", "example", "generate", "lowered", "prepare", "prepare_tree",
           "show_body", "stage", "transform", "written_args"]


register_makers(prepare=prepare, gradient_code=gradient_code)  # (front/split.py)
register_generate(generate, prepare_tree)  # (gradient_code: _unsplit, gradient_tree)
