"""The on-disk cache (``cache=True``): one generated module per specialisation.

Each specialisation's lowered sources go into a real ``.py`` file in the directory
Numba would cache the user's function in (``__pycache__`` next to its source, else
``NUMBA_CACHE_DIR`` or Numba's user-wide cache directory: Numba's own locators pick
it), under ``jitgrad/``.  The file name carries a hash of everything the generated
code depends on (``key``): the function's source; the code, defaults and Numba options
of the helpers it reads and the values of the constants and numeric arrays they read
(globals, closure cells, ``module.name``), transitively; the records of the primitives
they reach, a dispatcher's under either it or its ``py_func``; the user-written rules of
those primitives, read the same way (their forward parts and pullbacks, what those read
and call); jitgrad's own source, the Python, NumPy and Numba versions, ``wrt``, ``jit``,
the user's ``numba.njit`` options and the argument kinds.

The module binds the global names the generated code reads in a header: modules by
import, functions and other objects by module and qualified name, constants as
pickled literals.  Where some name cannot be written that way the specialisation is
not cached (``save`` returns None and the caller builds it in memory).  The
functions are compiled with ``numba.njit(..., cache=True)``, so Numba stores their
machine code next to the module (its ``__pycache__``) and a second process loads
both without transforming or compiling.  An unreadable, corrupt or mismatched file
is regenerated, never trusted.
"""

from __future__ import annotations

import builtins
import dataclasses
import hashlib
import importlib
import importlib.util
import inspect
import os
import pickle
import re
import sys
import tempfile
import threading
import types
from typing import Any

import numpy as np

from ...rules import primitives
from ...rules.primitives import LIBRARY_ROOTS
from ..front.numba_kernels import kernel_function
from ..front.split import run_as_python, split_sources
from ..pipeline import Generated, Unit, lowered
from ..unit import Sources
from .bounds import proved
from .jit import Compiled, all_reads, imports
from .lower import VARIANTS

FORMAT = 3  # 3: the meta records the arguments the code writes ("written")
_MAX_CONSTANT = 1 << 20  # bytes of pickled constant written into a cached module
_SCALARS = (int, float, bool, complex, str, bytes, type(None), np.generic)
_lock = threading.Lock()
_memo: dict[str, Any] = {}


# --- the key -----------------------------------------------------------------------------


def _code_digest(code: types.CodeType, h: Any) -> None:
    """Feed what a code object computes (not its addresses) into ``h``."""
    h.update(code.co_code)
    h.update(repr((code.co_names, code.co_varnames, code.co_freevars, code.co_cellvars,
                   code.co_firstlineno)).encode())
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            _code_digest(c, h)
        else:
            h.update(repr(c).encode())


def _constant_digest(v: Any) -> bytes | None:
    """A digest of a constant's value, None if ``v`` is not a constant."""
    if isinstance(v, _SCALARS):
        return repr((type(v).__name__, v)).encode()
    if isinstance(v, np.ndarray) and v.dtype.kind in "biufc":
        return repr((v.dtype.str, v.shape)).encode() + hashlib.sha256(v.tobytes()).digest()
    if isinstance(v, tuple):
        parts = [_constant_digest(e) for e in v]
        return None if any(p is None for p in parts) else b"(" + b",".join(parts) + b")"
    return None


def _is_user_function(v: Any) -> bool:
    return inspect.isfunction(v) and (v.__module__ or "").split(".")[0] not in LIBRARY_ROOTS


def function_digest(func: Any) -> str | None:
    """The function's source plus what it reads, recursively (``_Reads``), and the records
    of the primitives it can reach, whose user-written rules (and tangent rules) are read
    the same way (their forward parts and pullbacks, the constants and helpers those read);
    None without source."""
    try:
        src = inspect.getsource(func)
    except (OSError, TypeError):
        return None
    reads = _Reads(hashlib.sha256(src.encode()))
    reads.walk(func)
    ruled: set[int] = set()
    while True:  # a rule's reads may reach more primitives, and their rules
        impls = [getattr(rule, "impl", None)
                 for r in _reached_records(reads.reached, reads.spelled)
                 for rule in (r.rule, r.tangent)]
        impls = [f for f in impls if f is not None and id(f) not in ruled]
        if not impls:
            break
        for impl in impls:
            ruled.add(id(impl))
            reads.walk(impl)
    reads.h.update(rules_digest(reads.reached, reads.spelled).encode())
    return reads.h.hexdigest()


class _Reads:
    """A digest of user functions and of everything they read: their code, the values of
    the constants and arrays they read (globals, closure cells, ``module.name``), the
    helpers they call (walked in turn) and the options of Numba dispatchers among them.
    ``reached`` keeps every value read, by id (primitives among them, a dispatcher and
    its ``py_func`` both); ``spelled`` every name read (method and attribute spellings)."""

    def __init__(self, h: Any):
        self.h = h
        self.seen: set[int] = set()
        self.reached: dict[int, Any] = {}
        self.spelled: set[str] = set()

    def walk(self, func: Any) -> None:
        """Digest ``func`` (a plain function) and, transitively, what it reads."""
        todo = [func]
        while todo:
            fn = todo.pop()
            if id(fn) in self.seen or not _is_user_function(fn):
                continue
            self.seen.add(id(fn))
            _code_digest(fn.__code__, self.h)
            names = _names(fn.__code__)
            defaults = [(f"{fn.__qualname__}.__defaults__[{i}]", v)  # evaluated by the def
                        for i, v in enumerate(fn.__defaults__ or ())]
            defaults += [(f"{fn.__qualname__}.__kwdefaults__[{k}]", v)
                         for k, v in sorted((fn.__kwdefaults__ or {}).items())]
            for what, v in defaults:
                self.h.update(what.encode())
                self._read(what, v, names, todo)
            scope = dict(fn.__globals__)
            for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=True):
                try:
                    scope[name] = cell.cell_contents
                except ValueError:
                    pass
            self.spelled |= names
            for n in sorted(names):
                self._read(n, scope.get(n), names, todo)

    def _read(self, name: str, v: Any, names: set[str], todo: list) -> None:
        self.reached[id(v)] = v
        py = getattr(v, "py_func", None) or kernel_function(v)
        if py is not None:  # a Numba dispatcher: its records go by either, its options
            self.reached[id(py)] = py
            opts = getattr(v, "targetoptions" if kernel_function(v) is None else "options", None)
            self.h.update(f"{name}:{sorted((k, repr(o)) for k, o in dict(opts or {}).items())}"
                          .encode())
            v = py
        if isinstance(v, types.ModuleType):
            if name.count(".") < 3:  # module.name, module.sub.name...
                for a in sorted(names):
                    if hasattr(v, a):
                        self._read(f"{name}.{a}", getattr(v, a), names, todo)
        elif _is_user_function(v):
            todo.append(v)
        else:
            d = _constant_digest(v)
            if d is not None:
                self.h.update(name.encode() + b"=" + d)


def _names(code: types.CodeType) -> set[str]:
    out = set(code.co_names) | set(code.co_freevars)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            out |= _names(c)
    return out


def _reached_records(reached: dict[int, Any], spelled: set[str]) -> list[Any]:
    """The primitive records of the values read (``reached``, by id) and of the method and
    attribute names spelled."""
    return [rec for rec in primitives.records()
            if id(rec.fn) in reached or spelled.intersection(rec.methods, rec.attrs)
            or any(id(a) in reached for a in rec.aliases)]


def rules_digest(reached: dict[int, Any], spelled: set[str]) -> str:
    """The content of the primitive records a function can reach (``_reached_records``).
    The built-in table is jitgrad's source (``environment_digest``); rules registered
    elsewhere in the process, for primitives the function never reaches, do not change
    its key.  (What a user's rule reads is in ``function_digest``'s walk.)"""
    h = hashlib.sha256()
    for rec in _reached_records(reached, spelled):
        facts = [(f.name, _describe(getattr(rec, f.name))) for f in dataclasses.fields(rec)
                 if f.name not in ("fn", "rule", "aliases")]
        h.update(repr((_describe(rec.fn), facts, [_describe(a) for a in rec.aliases])).encode())
        rule = rec.rule
        if rule is not None:
            h.update(repr((rule.name, [_describe(p) for p in rule.primitives])).encode())
            code = getattr(rule.impl, "__code__", None)
            if code is not None:
                _code_digest(code, h)
    return h.hexdigest()


def _describe(v: Any) -> str:
    """A stable name for a primitive or meta value (not its address)."""
    if isinstance(v, _SCALARS):
        return repr(v)
    if isinstance(v, (tuple, list)):
        return "(" + ",".join(_describe(e) for e in v) + ")"
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return type(v).__name__ + _describe([getattr(v, f.name) for f in dataclasses.fields(v)])
    mod = getattr(v, "__module__", None) or type(v).__module__
    name = getattr(v, "__qualname__", None) or getattr(v, "__name__", None) or type(v).__name__
    code = getattr(v, "__code__", None)
    extra = hashlib.sha256(code.co_code).hexdigest()[:12] if code is not None else ""
    return f"{mod}.{name}{extra}"


def environment_digest() -> str:
    """jitgrad's own source and the versions of Python, NumPy and Numba."""
    hit = _memo.get("environment")
    if hit is None:
        import numba

        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        h = hashlib.sha256(repr((sys.version, np.__version__, numba.__version__,
                                 FORMAT)).encode())
        for d, dirs, files in sorted(os.walk(root)):
            dirs[:] = [x for x in dirs if x != "__pycache__"]  # generated modules live there
            for f in sorted(files):
                if f.endswith(".py"):
                    with open(os.path.join(d, f), "rb") as fh:
                        h.update(f.encode() + fh.read())
        hit = _memo["environment"] = h.hexdigest()
    return hit


def key(func: Any, wrt: list[str], kinds: dict[str, Any], jit: bool,
        options: dict[str, Any] | None = None, aux: bool = False,
        extra: str = "") -> str | None:
    """The cache key of one specialisation, None where the function cannot be cached
    (``options``: the user's ``numba.njit`` options the code is compiled with; ``aux``:
    differentiated with ``has_aux=True``; ``extra``: the structure of tuple arguments)."""
    from .emit import options_key

    fd = function_digest(func)
    if fd is None:
        return None
    text = repr((fd, environment_digest(), list(wrt), bool(jit),
                 sorted((k, repr(v)) for k, v in kinds.items()), options_key(options))
                + (("has_aux",) if aux else ()) + ((extra,) if extra else ()))
    return hashlib.sha256(text.encode()).hexdigest()


# --- where ------------------------------------------------------------------------------


def directory(func: Any) -> str | None:
    """Where Numba would cache ``func`` (its first locator that can write), plus ``jitgrad``."""
    from numba.core import caching

    impl = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl", None)
    try:
        source = inspect.getfile(func)
    except TypeError:
        return None
    for cls in getattr(impl, "_locator_classes", ()):
        try:
            loc = cls.from_function(func, source)
            if loc is None:
                continue
            loc.ensure_cache_path()
        except (OSError, RuntimeError):
            continue
        path = os.path.join(loc.get_cache_path(), "jitgrad")
        try:
            os.makedirs(path, exist_ok=True)
            tempfile.TemporaryFile(dir=path).close()
        except OSError:
            continue
        return path
    return None


def path(folder: str, func: Any, k: str) -> str:
    base = os.path.splitext(os.path.basename(func.__code__.co_filename))[0]
    name = re.sub(r"[^A-Za-z0-9_]", "_", f"{base}_{func.__qualname__}")
    return os.path.join(folder, f"{name}_{k[:24]}.py")


# --- writing and loading ------------------------------------------------------------------


def _binding(name: str, v: Any) -> str | None:
    """A line of the header binding ``name`` to ``v`` in a fresh process, or None."""
    if v is getattr(builtins, name, None):
        return ""  # the module's builtins have it
    if isinstance(v, types.ModuleType):
        if sys.modules.get(v.__name__) is v:
            return f"{name} = __jg_module({v.__name__!r})"
        return None
    mod = getattr(v, "__module__", None)
    qual = getattr(v, "__qualname__", None) or getattr(v, "__name__", None)
    if isinstance(mod, str) and isinstance(qual, str) and "<" not in qual \
            and attr_or_none(mod, qual) is v:
        return f"{name} = __jg_attr({mod!r}, {qual!r})"
    if _constant_digest(v) is not None:
        data = pickle.dumps(v, protocol=4)
        if len(data) <= _MAX_CONSTANT:
            return f"{name} = __jg_pickle.loads({data!r})"
    return None


def attr_or_none(mod: str, qual: str) -> Any:
    """``mod.qual`` (importing ``mod``), or None."""
    m = sys.modules.get(mod)
    try:
        m = m if m is not None else importlib.import_module(mod)
        for part in qual.split("."):
            m = getattr(m, part)
    except (ImportError, AttributeError):
        return None
    return m


_HEADER = '''\
"""Generated by jitgrad (cache=True): the gradient of {qualname}. Do not edit."""
import pickle as __jg_pickle
from jitgrad.transpiler.backend.cache import attr as __jg_attr
from jitgrad.transpiler.backend.cache import module as __jg_module

__jitgrad_key__ = {key!r}
'''


def attr(mod: str, qual: str) -> Any:
    """``mod.qual`` for a cached module's header (ImportError where it is gone)."""
    v = attr_or_none(mod, qual)
    if v is None:
        raise ImportError(f"{mod}.{qual} is not available")
    return v


module = importlib.import_module


def save(file: str, k: str, qualname: str, sources: dict[str, str], env: dict[str, Any],
         meta: dict[str, Any], reads: set[str] | None = None) -> bool:
    """Write the module for one specialisation; False where a name cannot be bound
    (``reads``: the global names the sources read, see ``jit.imports``)."""
    lines = []
    for name, v in imports(sources, env, reads).items():
        b = _binding(name, v)
        if b is None:
            return False
        if b:
            lines.append(b)
    try:
        blob = pickle.dumps(meta, protocol=4)
    except (pickle.PicklingError, TypeError, AttributeError):
        return False
    text = (_HEADER.format(qualname=qualname, key=k) + "\n".join(lines) + "\n\n\n"
            + "\n\n".join(sources.values())
            + f"\n\n__jitgrad__ = __jg_pickle.loads({blob!r})\n")
    try:
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(file), suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, file)
    except OSError:
        return False
    return True


def load(file: str, k: str) -> types.ModuleType | None:
    """Import a cached module; None where it is missing, unreadable or not for ``k``."""
    if not os.path.exists(file):
        return None
    name = f"jitgrad_cached_{k[:32]}"
    with _lock:
        mod = sys.modules.get(name)
        if mod is not None and getattr(mod, "__file__", None) == file:
            return mod
        try:
            spec = importlib.util.spec_from_file_location(name, file)
            mod = importlib.util.module_from_spec(spec)
            sys.modules[name] = mod  # Numba's cache rebuilds environments by module name
            spec.loader.exec_module(mod)
            meta = mod.__jitgrad__
            if mod.__jitgrad_key__ != k or meta.get("format") != FORMAT:
                raise ValueError("stale")
        except Exception:  # corrupt, stale, or a binding that is gone: rebuild it
            sys.modules.pop(name, None)
            return None
    return mod


def compile_module(mod: types.ModuleType, jit: bool,
                   options: dict[str, Any] | None = None) -> Compiled:
    """The callables of a loaded module: njit(cache=True) dispatchers under ``jit``
    (compiled with the user's ``options``)."""
    from . import emit

    meta = mod.__jitgrad__
    ns = mod.__dict__
    fns = {v: ns[n] for v, n in meta["names"].items()}
    out = Compiled(meta["sources"], fns, ns, jit, frozenset(meta["callables"]),
                   workspaces=dict(meta["workspaces"]))
    if jit:
        for c in out.callables:
            if inspect.isfunction(ns.get(c)):  # (a split helper's gradient: cached too)
                ns[c] = emit.njit(ns[c], cache=getattr(ns[c], "split_vjp", False))
        out.jitted = {v: _tolerant(emit.njit(f, cache=True, options=options,
                                             checked=proved(meta["sources"][v])))
                      for v, f in fns.items()}
    else:
        emit.ieee_namespace(ns)
        run_as_python(ns, out.callables)
    return out


def split_module(names: frozenset[str], env: dict[str, Any]
                 ) -> tuple[dict[str, str], dict[str, Any]] | None:
    """The split helpers' gradients among ``names`` as extra sources of a cached module
    (``front/split.py``), and ``env`` with the names they read; None where one of those
    names stands for another object in ``env`` (then the module is not cached)."""
    sources: dict[str, str] = {}
    merged = dict(env)
    for n in sorted(names):
        f = env.get(n)
        if not getattr(f, "split_vjp", False):
            continue
        src = split_sources(frozenset([n]), env).strip("\n") + "\n"
        for k, v in imports({n: src}, f.__globals__).items():
            if k in merged and merged[k] is not v:
                return None
            merged[k] = v
        sources[f"split:{n}"] = src + f"\n\n{n}.split_vjp = True\n"
    for n in sources:  # (defined by the module itself)
        merged.pop(n.split(":", 1)[1], None)
    return sources, merged


class Store:
    """The on-disk cache of one differentiated function (``cache=True``)."""

    def __init__(self, func: Any, jit: bool, options: dict[str, Any] | None = None,
                 aux: bool = False, extra: str = "", checkpoint: Any = None):
        self.func, self.jit, self.aux, self.extra = func, jit, aux, extra
        #: () -> the automatic checkpointing the code is made with (part of the key)
        self.checkpoint = checkpoint
        self.options = dict(options or {})  # the user's numba.njit options (part of the key)
        self._dir: str | None = None
        self.stats = {"hits": 0, "misses": 0, "uncached": 0}

    def folder(self) -> str | None:
        if self._dir is None:
            self._dir = directory(self.func) or ""
        return self._dir or None

    def _where(self, wrt: list[str], kinds: dict, float64: bool) -> tuple[str, str] | None:
        extra = self.extra + (self.checkpoint() if self.checkpoint is not None else "") + \
            ("float64" if float64 else "")
        k = key(self.func, wrt, kinds, self.jit, self.options, self.aux, extra)
        folder = self.folder() if k is not None else None
        return None if folder is None else (path(folder, self.func, k), k)

    def load(self, wrt: list[str], kinds: dict, float64: bool = False) -> Generated | None:
        """The specialisation from disk (generated module, Numba's machine code), or None
        (``float64``: made for float64 arguments, ``pipeline.transform``'s ``elements``)."""
        where = self._where(wrt, kinds, float64)
        mod = load(*where) if where is not None else None
        if mod is None and float64:  # (made for float64 arguments, it has no element loops)
            return self.load(wrt, kinds)
        if mod is None:
            return None
        self.stats["hits"] += 1
        meta = mod.__jitgrad__
        unit = Unit(self.func, sources=Sources(meta["sources"]), names=dict(meta["names"]),
                    wrt=list(wrt), arg_kinds=dict(kinds), workspaces=dict(meta["workspaces"]))
        return Generated(unit, list(meta["return_kinds"]),
                         compile_module(mod, self.jit, self.options),
                         frozenset(meta["written"]), element_loops=float64)

    def save(self, gen: Generated) -> Compiled | None:
        """Write a freshly generated specialisation and compile it from the file; None
        where it cannot be cached (the caller builds it in memory)."""
        u = lowered(gen.unit)  # (both variants kept: each written now)
        where = self._where(u.wrt, u.arg_kinds, gen.float64)
        if where is not None:
            meta = {"format": FORMAT, "names": u.names, "sources": u.sources.written(),
                    "return_kinds": gen.return_kinds,
                    "callables": sorted(u.ir.callables | u.ir.compiled),
                    "workspaces": u.workspaces, "written": sorted(gen.written)}
            sources = {v: u.sources[v] for v in VARIANTS}
            extra = split_module(u.ir.compiled, u.env)  # (split helpers' gradients)
            if extra is not None and extra[0]:
                sources.update(extra[0])
            env, reads = (u.env, all_reads(u.reads, VARIANTS)) \
                if extra is None or not extra[0] else (extra[1], None)
            if extra is not None and save(where[0], where[1], self.func.__qualname__, sources,
                                          env, meta, reads):
                mod = load(*where)
                if mod is not None:
                    self.stats["misses"] += 1
                    return compile_module(mod, self.jit, self.options)
        self.stats["uncached"] += 1
        return None

    @staticmethod
    def info(store: Store | None, gens: list[Generated]) -> dict[str, Any]:
        """``hits`` (specialisations loaded from disk, not transformed), ``misses``
        (transformed and written), ``uncached`` (transformed, not cacheable),
        ``numba_hits``/``numba_misses`` (machine code Numba loaded from or compiled into
        its cache), ``dir`` (where the generated modules go; None without the cache)."""
        hits = misses = 0
        for g in gens:
            for d in getattr(g.compiled, "jitted", {}).values():
                stats = getattr(d, "stats", None)
                if stats is not None:
                    hits += sum(stats.cache_hits.values())
                    misses += sum(stats.cache_misses.values())
        counts = store.stats if store is not None else {"hits": 0, "misses": 0, "uncached": 0}
        return {**counts, "numba_hits": hits, "numba_misses": misses,
                "dir": store.folder() if store is not None else None}


def _tolerant(disp: Any) -> Any:
    """A dispatcher whose on-disk machine code, when Numba cannot read it (a corrupt index
    or data file), is recompiled and rewritten instead of failing the call."""
    cache = getattr(disp, "_cache", None)
    load = getattr(cache, "load_overload", None)
    if load is None:
        return disp

    def load_overload(sig: Any, target_context: Any) -> Any:
        try:
            return load(sig, target_context)
        except Exception:  # unreadable: drop the index so the fresh compile can save
            index = getattr(getattr(cache, "_cache_file", None), "_index_path", None)
            if index:
                try:
                    os.remove(index)
                except OSError:
                    pass
            return None

    cache.load_overload = load_overload
    return disp


__all__ = ["Store", "attr", "attr_or_none", "compile_module", "directory", "key", "load", "path",
           "rules_digest", "save"]
