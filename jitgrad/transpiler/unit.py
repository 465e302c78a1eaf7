"""What the transpiler's pass lists run on: the ``Unit`` (the function being transformed
and what the passes learnt about it) and the ``Pass`` (a name, a function that updates the
unit, and a ``show`` that renders it afterwards).  The lists are in ``pipeline.py``."""

from __future__ import annotations

import ast
import copy
import functools
import gc
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .analysis.analyse import Analysis
from .analysis.kinds import Kind
from .backend import emit
from .front.parse import Parsed
from .ir import Adjoint, result_expr
from .naming import Namer
from .nodes import clone
from .notes import checkpoint


def without_gc(fn: Callable) -> Callable:
    """Run ``fn`` with the cyclic garbage collector paused: the passes allocate millions of
    short-lived nodes, and each collection re-walks every live one (superlinear time)."""

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        if not gc.isenabled():
            return fn(*args, **kwargs)
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            gc.enable()

    return run


class Sources(dict):
    """Variant -> generated source; the sources in ``later`` (the variants, lowered when a
    call first needs one; the one-sweep functions, for reading only) are written when
    first read (one thread at a time: they share the lowering's memos)."""

    #: held while a source is written
    WRITING = threading.RLock()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.later: dict[str, Callable[[], str]] = {}

    @without_gc
    def __missing__(self, variant: str) -> str:
        with self.WRITING:
            if dict.__contains__(self, variant):  # (written by another thread meanwhile)
                return dict.__getitem__(self, variant)
            make = self.later.get(variant)
            if make is None:
                raise KeyError(variant)
            self[variant] = text = make()
            del self.later[variant]
        return text

    def written(self) -> dict[str, str]:
        """Every source, those still to write written now (what the disk cache keeps)."""
        for v in list(self.later):
            self[v]  # noqa: B018 (written by ``__missing__``)
        return dict(self)


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
    #: lowered source per variant (some written when first read), and the generated
    #: function name of each
    sources: dict[str, str] = field(default_factory=Sources)
    names: dict[str, str] = field(default_factory=dict)
    #: per variant lowered: the global names it reads (``jit.global_reads``; None: parse
    #: its source)
    reads: dict[str, set[str] | None] = field(default_factory=dict)
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
    #: its code has element loops (``lower_``): it is for float64 arguments only; None:
    #: it may have, not known until every variant is lowered (``reverse_passes.lowered``)
    element_loops: bool | None = False
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
    #: forward mode's vector form (``modes/vector.py``), or why it does not apply
    vector: Any = None
    vector_refused: str | None = None
    #: forward mode: compiled by Numba (``jit=True``, not ``parallel=True``), so the
    #: ``bounds``/``vector_bounds`` passes check its indices explicitly
    checked: bool = False
    #: forward mode: each variant's function as lowered, before the ``bounds`` passes
    trees: dict[str, ast.FunctionDef] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.parsed.tree.name

    def float_ndims(self, scalar: bool) -> dict[str, int]:
        """The dimensions of the float names, scalar names and adjoints (``elements``,
        ``view_updates``); ``scalar``: the seed too, a scalar."""
        out = {n: k.ndim for n, k in self.kinds.items()
               if k.ndim is not None and (k.cls == "f" or (k.cls in "ib" and k.ndim == 0))}
        for n, d in self.namer.adjoints().items():
            k = self.kinds.get(n)
            if k is not None and k.cls == "f" and k.ndim is not None:
                out.setdefault(d, k.ndim)
        if scalar:
            out[self.ir.seed] = 0
        return out

    def specialise(self, wrt: list[str], arg_kinds: dict[str, Kind]) -> Unit:
        """A copy of a prepared unit for one specialisation (the cached one stays as is)."""
        to = self.renamed
        return Unit(self.func, self.parsed, copy.deepcopy(self.namer), dict(self.env),
                    list(self.params), clone(self.body), clone(self.returns),
                    [to.get(w, w) for w in wrt], {to.get(p, p): k for p, k in arg_kinds.items()},
                    kernel=self.kernel, parallel=self.parallel, aux=self.aux, renamed=to,
                    jit=self.jit, split=self.split, splits=self.splits,
                    checked=self.jit and not self.parallel)


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

