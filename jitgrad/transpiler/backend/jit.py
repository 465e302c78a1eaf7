"""The CPU backend: load lowered functions, compile them with Numba, call them.

``build`` turns the lowered sources of one specialisation into callables: under
``jit=True`` each variant is compiled with ``emit.njit`` (and the functions hooks
call are compiled alongside); under ``jit=False`` the plain functions run with
IEEE results in a NumPy-backed namespace.  ``call`` runs one variant and turns
Numba failures into ``JitError``s that quote the generated line.

Workspaces: a variant that keeps typed tapes (or zeroes adjoint buffers of local
arrays) takes them as its last argument and returns them, grown
(``lower.with_workspace``).  ``call`` keeps them per thread in the ``Compiled`` record
(a ``threading.local``), so a later call on the same thread reuses them; a call that
finds none (the first, one made while another call of the same variant runs on this
thread, from a hook, or after ``release``) starts from empty ones.  Tapes hold primal
values only and are never returned to the caller; the storage of adjoint buffers is
dropped from the workspace where a returned gradient shares it (a buffer swapped into
a returned name).
"""

from __future__ import annotations

import ast
import inspect
import keyword
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ... import report
from ..front.split import run_as_python
from . import emit
from .bounds import proved


@dataclass
class Compiled:
    """The callables of one specialisation, per variant (``build``: each loaded when first
    called, ``load``)."""

    sources: Mapping[str, str]
    functions: dict[str, Any]
    namespace: dict[str, Any]
    jit: bool
    callables: frozenset[str] = frozenset()
    jitted: dict[str, Any] = field(default_factory=dict)
    #: variant -> what it takes in its workspace argument and returns: a tape's dtype, or
    #: ``BUFFER`` (adjoint-buffer storage); empty: no workspace argument
    workspaces: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: per thread: variant -> the workspace the last call returned (module docstring)
    pool: threading.local = field(default_factory=threading.local, repr=False)
    #: loads a variant not in ``functions`` yet (``build``); None: all are loaded
    loader: Callable[[str], None] | None = field(default=None, repr=False)

    def release(self) -> None:
        """Drop the kept workspaces of every thread (a later call allocates afresh)."""
        self.pool = threading.local()

    def load(self, variant: str) -> None:
        """Load ``variant`` (its source written first where it is written lazily,
        ``unit.Sources``) unless it is loaded."""
        if variant not in self.functions and self.loader is not None:
            self.loader(variant)


#: held while a variant is loaded
_LOADING = threading.RLock()


def imports(sources: dict[str, str], env: dict[str, Any],
            reads: set[str] | None = None) -> dict[str, Any]:
    """The module namespace the generated code runs in: exactly the global names it reads
    (the user's modules, constants and helpers, and jitgrad's), taken from ``env``.

    ``reads``: those names, found by ``global_reads`` on the trees the sources were
    unparsed from (then no source is parsed again)."""
    read: set[str] = set()
    if reads is not None:
        read = reads
    else:
        for src in sources.values():
            fn = ast.parse(src).body[0]
            local = {a.arg for a in fn.args.args}
            for n in ast.walk(fn):
                if isinstance(n, ast.Name):
                    (read if isinstance(n.ctx, ast.Load) else local).add(n.id)
            read -= local
    return {n: env[n] for n in sorted(read) if n in env}


#: constant values ``ast.unparse`` writes as literals (other values print as expressions)
_LITERALS = frozenset({int, float, complex, str, bytes, bool, type(None), type(...)})
#: node fields holding binding targets (Name there is bound, as the parser sets ``Store``)
_TARGETS: dict[type, tuple[str, ...]] = {
    ast.Assign: ("targets",), ast.AugAssign: ("target",), ast.AnnAssign: ("target",),
    ast.For: ("target",), ast.AsyncFor: ("target",), ast.withitem: ("optional_vars",),
    ast.comprehension: ("target",), ast.NamedExpr: ("target",), ast.Delete: ("targets",)}


def global_reads(fns: list[ast.FunctionDef]) -> set[str] | None:
    """The names ``imports`` finds in the unparsed sources of ``fns`` (in that order), from
    the trees themselves: a name is bound where the parser would bind it (a target), not
    where its ``ctx`` says.  None where a tree would not parse back to the same names
    (a ``Name`` that is not an identifier, a constant that prints as an expression).

    The functions share most simple statements (the variants of one IR): the names of
    each are found once."""
    read: set[str] = set()
    seen: dict[int, tuple[ast.stmt, set[str], set[str]]] = {}
    for fn in fns:
        local = {a.arg for a in fn.args.args}
        stmts: list[ast.stmt] = []
        if not _names(fn, read, local, stmts):
            return None
        for st in stmts:  # the simple statements, from ``seen`` when met before
            hit = seen.get(id(st))
            if hit is None or hit[0] is not st:
                loads: set[str] = set()
                stores: set[str] = set()
                if not _names(st, loads, stores, None):
                    return None
                hit = seen[id(st)] = (st, loads, stores)
            read |= hit[1]
            local |= hit[2]
        read -= local
    return read


#: statements holding no statements (their names are found once per specialisation)
_SIMPLE_STMTS = frozenset({ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Return,
                           ast.Pass, ast.Break, ast.Continue, ast.Raise, ast.Delete})


def _names(node: ast.AST, read: set[str], local: set[str],
           stmts: list[ast.stmt] | None) -> bool:
    """Add the names ``node`` reads to ``read`` and those it binds to ``local``; False where
    it would not parse back to the same names.  With ``stmts``, the simple statements
    under ``node`` are put there instead of walked."""
    todo: list[tuple[ast.AST, bool]] = [(node, False)]  # (node, in a binding target)
    named = _IDENTIFIERS
    while todo:
        n, target = todo.pop()
        cls = n.__class__
        if cls is ast.Name:
            if n.id not in named:
                if not n.id.isidentifier() or keyword.iskeyword(n.id):
                    return False
                if len(named) > 100_000:  # (bounded: names of many functions pass through)
                    named.clear()
                named.add(n.id)
            (local if target else read).add(n.id)
            continue
        if cls is ast.Constant:
            if type(n.value) not in _LITERALS:
                return False
            continue
        if stmts is not None and cls in _SIMPLE_STMTS:
            stmts.append(n)
            continue
        fields = _FIELDS.get(cls)
        if fields is None:
            if not isinstance(n, ast.AST):  # (``None`` among a dict's keys)
                continue
            fields = _fields(cls)
        # inside a target, tuples, lists and starred bind their names; the parts of a
        # subscript or attribute target are read
        keep = target and cls in _UNPACKING
        for f, bound in fields:
            v = getattr(n, f, None)
            if v.__class__ is list:
                b = keep or bound
                todo += [(x, b) for x in v]
            elif v is not None:
                todo.append((v, keep or bound))
    return True


#: names found to be identifiers that are not keywords (``_names`` checks each once)
_IDENTIFIERS: set[str] = set()
_UNPACKING = (ast.Tuple, ast.List, ast.Starred)
#: fields that hold no names: contexts, operators, identifiers, flags
_LEAF_FIELDS = frozenset({"ctx", "op", "ops", "id", "kind", "type_comment", "attr", "arg",
                          "name", "names", "module", "level", "is_async", "conversion",
                          "simple"})
_FIELDS: dict[type, tuple[tuple[str, bool], ...]] = {}


def _fields(cls: type) -> tuple[tuple[str, bool], ...]:
    """(field, holds a binding target) for the fields of ``cls`` that may hold names."""
    out = _FIELDS.get(cls)
    if out is None:
        bound = _TARGETS.get(cls, ())
        out = _FIELDS[cls] = tuple((f, f in bound) for f in cls._fields
                                   if f not in _LEAF_FIELDS)
    return out


def build(sources: Mapping[str, str], names: dict[str, str], env: dict[str, Any],
          qualname: str, jit: bool, callables: frozenset[str] = frozenset(),
          reads: Mapping[str, set[str] | None] | None = None,
          workspaces: dict[str, tuple[str, ...]] | None = None,
          options: dict[str, Any] | None = None) -> Compiled:
    """The variants of ``names``, each loaded when first called (``Compiled.load``): its
    source (``sources[v]``, which may write it then) exec'd into a namespace of what it
    reads from ``env`` (``reads[v]``: those names, see ``imports``, filled by the time its
    source is written), compiled when ``jit``.  ``workspaces``: what each variant takes in
    its workspace argument (``Unit.workspaces``, filled as its source is written);
    ``options``: the user's ``numba.njit`` options (``emit.user_options``)."""
    out = Compiled(sources, {}, {}, jit, callables,
                   workspaces=workspaces if workspaces is not None else {})
    out.loader = lambda v: _load(out, v, names[v], env, qualname, reads or {}, options)
    return out


def _load(out: Compiled, variant: str, fname: str, env: dict[str, Any], qualname: str,
          reads: Mapping[str, set[str] | None], options: dict[str, Any] | None) -> None:
    """Load ``variant`` into ``out`` unless another thread did: the names its source reads
    that the namespace lacks added (hooks' functions compiled, or made IEEE), then its
    function exec'd there."""
    with _LOADING:
        if variant not in out.functions:
            _load_now(out, variant, fname, env, qualname, reads, options)


def _load_now(out: Compiled, variant: str, fname: str, env: dict[str, Any], qualname: str,
              reads: Mapping[str, set[str] | None], options: dict[str, Any] | None) -> None:
    src = out.sources[variant]
    ns = out.namespace
    new = {n: v for n, v in imports({variant: src}, env, reads.get(variant)).items()
           if n not in ns}
    if out.jit:
        for c in out.callables:  # functions hooks call run compiled too
            if inspect.isfunction(new.get(c)):
                new[c] = emit.njit(new[c])
    else:
        emit.ieee_namespace(new)
        run_as_python(new, out.callables)
    for n, v in new.items():  # (those it set that the namespace has stay as they are)
        ns.setdefault(n, v)
    fn = out.functions[variant] = emit.load(src, fname, ns, qualname)
    if out.jit:
        out.jitted[variant] = emit.njit(fn, options=options, checked=proved(src))


def all_reads(reads: Mapping[str, set[str] | None], variants: Iterable[str]) -> set[str] | None:
    """The global names ``variants`` read together (None where one's are not known)."""
    out: set[str] = set()
    for v in variants:
        r = reads.get(v)
        if r is None:
            return None
        out |= r
    return out


#: variant -> the variant that returns all it returns and more (the value too): run instead
#: where only that one is compiled yet, so a second entry point compiles nothing
STAND_INS = {"grad_only": "grad"}


def runs_as(compiled: Compiled, variant: str) -> str:
    """The variant a call of ``variant`` runs: its stand-in (``STAND_INS``) where that is
    compiled, for any argument types, and ``variant`` itself is not (``f.grad`` after
    ``f.value_and_grad`` or a ``vjp``: the value is computed and dropped)."""
    other = STAND_INS.get(variant)
    if other is None or not compiled.jit or other not in compiled.jitted:
        return variant
    mine = compiled.jitted.get(variant)  # (None: not loaded, its source maybe not written)
    if (mine is not None and mine.overloads) or not compiled.jitted[other].overloads:
        return variant
    return other


def call(compiled: Compiled, variant: str, args: tuple) -> Any:
    """Run ``variant`` on ``args`` (the seed last), with this thread's workspace (``runs_as``:
    a compiled variant that returns more may run instead; the caller drops the rest)."""
    variant = runs_as(compiled, variant)
    compiled.load(variant)
    dtypes = compiled.workspaces.get(variant)
    if not dtypes:
        return _call(compiled, variant, args)
    pool = compiled.pool.__dict__  # this thread's
    # taken out while the call runs: a reentrant call of the variant starts afresh
    ws = pool.pop(variant, None)
    if ws is None:
        ws = tuple(np.empty(0, np.float64 if d == BUFFER else d) for d in dtypes)
    value, grads, ws = _call(compiled, variant, (*args, ws))
    if BUFFER in dtypes:
        ws = _unshared(ws, dtypes, grads)
    pool[variant] = ws
    return value, grads


#: a workspace entry holding the storage of adjoint buffers (float64), not a tape
BUFFER = "buffer"


def _unshared(ws: tuple, dtypes: tuple[str, ...], grads: Any) -> tuple:
    """``ws`` without the adjoint-buffer storage that a returned gradient shares (a buffer
    swapped into a returned name): the caller owns that memory now."""
    arrays = [g for g in (grads if isinstance(grads, tuple) else (grads,))
              if isinstance(g, np.ndarray)]
    if not arrays:
        return ws
    return tuple(np.empty(0) if d == BUFFER and any(np.may_share_memory(g, w) for g in arrays)
                 else w for w, d in zip(ws, dtypes, strict=True))


def _call(compiled: Compiled, variant: str, args: tuple) -> Any:
    """Run ``variant`` on ``args`` as they are."""
    if compiled.jit:
        jitted = compiled.jitted[variant]
        overloads = jitted.overloads
        n = len(overloads)
        if not n:
            report.compiling(jitted)
        hint = "" if not compiled.callables else (
            "hook functions must be Numba-compilable with jit=True "
            f"({', '.join(sorted(compiled.callables))})")
        out = emit.call_compiled(jitted, compiled.sources[variant], args, hint)
        if len(overloads) != n:  # this call compiled it (for these argument types)
            report.compiled(jitted)
        return out
    return emit.ieee_call(compiled.functions[variant], args)


__all__ = ["STAND_INS", "Compiled", "all_reads", "build", "call", "global_reads", "imports",
           "runs_as"]
