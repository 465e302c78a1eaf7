"""Alpha-renaming of a module's source: every function's parameters and locals, and the
module aliases of ``numpy`` and ``math``, renamed to names drawn from a pool of the names
users write beside jitgrad's own (single capitals, ``d``-prefixed twins) and of every name
jitgrad's passes and templates generate.  The renamed module computes the same values, so
jitgrad must give the same value and gradient for it (hygiene as a property).

    new_src, mapping = alpha_rename(src, seed=3)    # mapping: {function: {old: new}}
"""

from __future__ import annotations

import ast
import builtins
import keyword
import random

#: names a user may write that jitgrad itself generates or uses in templates, single
#: capitals of numerical code and ``d``-prefixed twins; extend it when a pass or template
#: starts to generate a new kind of name
POOL = (
    # single capitals and their adjoint-like twins
    "J", "K", "M", "A", "N", "T", "S", "D", "E", "L", "dJ", "dK", "dM", "dA", "dN", "dx",
    "dy", "ddx", "x_dot", "J_dot",
    # generated temporaries, adjoints, tapes, counters and parameters
    "_t", "_t1", "_t3", "_dt", "_dt2", "_dt4", "_tape_x", "_tape_x_", "_tape_x_1",
    "_tape_x_1n", "_j", "_i", "_n", "_k", "_dret", "_ws", "_r21", "_r", "_seed", "_flag",
    "_m", "_ret", "_out", "_dx", "_x", "_g", "_v",
    # the binomial driver's template names, and modules generated code reaches
    "POS", "TOP", "END", "LIVE", "SLOTS", "STORE", "LOAD", "PLAIN", "TAPED", "INDEX",
    "TRIPS", "COUNT", "SNAPS", "SPLIT", "RESERVE", "np", "math", "numba", "jg", "helpers",
    # the names the binomial driver, the tapes, flags and the lowering make
    "_at", "_top", "_steps", "_slots", "_start", "_stride", "_snapshots", "_end", "_live",
    "_a", "_snaps_x", "_refs_x", "_kept_x", "_ref_x", "_ws_slots_x", "_ws_x", "_value",
    "_c", "_hit", "_skip", "_break", "_cap", "_tape_need", "x_like", "_dws", "_dret_",
    "_ws_", "dx_", "x_1", "_np", "_math",
    # the module-level helpers generated code calls by name
    "trip_count", "tape_reserve", "tape_get", "tape_put", "revolve_split",
    "snapshot_count", "unbroadcast", "expand_along", "ws_snapshot", "ws_zeros_like",
    "ws_grow", "store_slot", "load_slot", "guard", "restore_into", "snapshot", "pick",
    "select", "same_shape", "argextreme", "extreme_at",
)

_RESERVED = set(keyword.kwlist) | set(dir(builtins))
_ALIASED_MODULES = {"numpy", "math"}


class _Stores(ast.NodeVisitor):
    """The names a function binds (parameters, targets), not those of nested functions."""

    def __init__(self):
        self.names: list[str] = []
        self.globals: set[str] = set()

    def add(self, n: str) -> None:
        if n not in self.names:
            self.names.append(n)

    def visit_arg(self, node: ast.arg) -> None:
        self.add(node.arg)

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            self.add(node.id)

    def visit_Global(self, node: ast.Global) -> None:
        self.globals.update(node.names)

    visit_Nonlocal = visit_Global

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:  # nested: its own map
        self.add(node.name)


def _locals(fn: ast.FunctionDef) -> list[str]:
    s = _Stores()
    s.visit(fn.args)
    for st in fn.body:
        s.visit(st)
    return [n for n in s.names if n not in s.globals]


def _loads(fn: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)}


class _Renamer(ast.NodeTransformer):
    def __init__(self, mapping: dict[str, str], kwmaps: dict[str, dict[str, str]]):
        self.mapping = mapping
        self.kwmaps = kwmaps

    def visit_Name(self, node: ast.Name) -> ast.Name:
        node.id = self.mapping.get(node.id, node.id)
        return node

    def visit_arg(self, node: ast.arg) -> ast.arg:
        node.arg = self.mapping.get(node.arg, node.arg)
        return node

    def visit_Call(self, node: ast.Call) -> ast.Call:
        if isinstance(node.func, ast.Name) and node.func.id in self.kwmaps:
            km = self.kwmaps[node.func.id]
            for kw in node.keywords:
                if kw.arg is not None:
                    kw.arg = km.get(kw.arg, kw.arg)
        self.generic_visit(node)
        return node


def _module_aliases(tree: ast.Module, rng: random.Random, taken: set[str]) -> dict[str, str]:
    """Rename ``import numpy as np`` / ``import math`` to pool names half of the time, so
    ``np`` and ``math`` become free for locals."""
    out: dict[str, str] = {}
    for st in tree.body:
        if isinstance(st, ast.Import):
            for al in st.names:
                if al.name in _ALIASED_MODULES and rng.random() < 0.5:
                    old = al.asname or al.name
                    cands = [p for p in POOL if p not in taken and p not in _RESERVED]
                    new = rng.choice(cands)
                    taken.add(new)
                    out[old] = new
                    al.asname = new
    return out


def _pick(rng: random.Random, avoid: set[str], prev: str | None) -> str | None:
    if prev and not prev.startswith("d") and "d" + prev not in avoid and rng.random() < 0.4:
        return "d" + prev  # the adjoint-like twin of the name just handed out
    cands = [p for p in POOL if p not in avoid and p not in _RESERVED]
    return rng.choice(cands) if cands else None


def alpha_rename(src: str, seed: int = 0) -> tuple[str, dict[str, dict[str, str]]]:
    """``src`` with each function's locals renamed to pool names (consistently across
    keyword arguments of calls to the module's own functions); the mapping per function."""
    rng = random.Random(f"alpha:{seed}")
    tree = ast.parse(src)
    module_names = {n for n in _loads(tree)}
    aliases = _module_aliases(tree, rng, set(module_names))
    ast.fix_missing_locations(_Renamer(aliases, {}).visit(tree)) if aliases else None
    fns = [n for n in tree.body if isinstance(n, ast.FunctionDef)]  # nested: with their parent
    maps: dict[str, dict[str, str]] = {}
    globals_ = {n.name for n in fns} | {t.id for st in tree.body if isinstance(st, ast.Assign)
                                         for t in st.targets if isinstance(t, ast.Name)}
    globals_ |= set(aliases.values()) | {a.asname or a.name.split(".")[0]
                                         for st in tree.body
                                         if isinstance(st, (ast.Import, ast.ImportFrom))
                                         for a in st.names}
    for fn in fns:
        local = [n for n in _locals(fn) if n not in {f.name for f in fns}]
        avoid = (_loads(fn) - set(local)) | globals_ | set(local)
        mapping: dict[str, str] = {}
        prev = None
        for old in local:
            new = _pick(rng, avoid, prev)
            if new is None:
                continue
            mapping[old] = new
            avoid.add(new)
            prev = new
        maps[fn.name] = mapping
    for fn in fns:  # parameters first, so calls' keywords follow their callee
        _Renamer(maps[fn.name], maps).visit(fn)
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n", maps


def neutralise(src: str) -> str:
    """``src`` with every pool name it binds renamed to a plain one (``J`` -> ``v_J``):
    when a failing program passes so, the failure is one of hygiene (a captured name)."""
    tree = ast.parse(src)
    used = _loads(tree) | {a.arg for a in ast.walk(tree) if isinstance(a, ast.arg)}
    mapping: dict[str, str] = {}
    for name in sorted(used & set(POOL) - {"np", "math", "numba", "jg"}):
        new = "v_" + name.lstrip("_")
        while new in used or new in mapping.values():
            new += "_"
        mapping[name] = new
    for st in tree.body:  # the module aliases, with the names that use them
        if isinstance(st, ast.Import):
            for al in st.names:
                if (al.asname or al.name) in mapping:
                    al.asname = mapping[al.asname or al.name]
    _Renamer(mapping, {}).visit(tree)
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"
