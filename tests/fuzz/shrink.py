"""Greedy shrinking of a failing program.

Candidates, tried in this order on the current smallest program: delete a
statement (helper definitions included), replace an ``if`` by one of its branches
or a loop by its body, run a ``range`` loop once, then replace an expression by
one of its sub-expressions or by ``1.0``, and shrink integer constants to 1.  A
candidate is kept when ``reproduces(candidate)`` is true (the caller runs it in a
worker and compares the outcome class); the search restarts where it succeeded
and stops after a pass with no success, ``max_tests`` tries or ``budget_s``.
"""

from __future__ import annotations

import ast
import copy
import time
from collections.abc import Callable, Iterator

from .gen import Program


def _stmt_sites(tree: ast.Module) -> list:
    out = []
    for node in ast.walk(tree):
        for fld in ("body", "orelse"):
            lst = getattr(node, fld, None)
            if not isinstance(lst, list):
                continue
            for i, st in enumerate(lst):
                if not isinstance(st, ast.stmt):
                    continue
                if isinstance(node, ast.Module) and (
                        isinstance(st, (ast.Import, ast.ImportFrom))
                        or (isinstance(st, ast.FunctionDef) and st.name == "f")):
                    continue
                out.append((node, fld, i))
    return out


def _expr_sites(tree: ast.Module) -> list:
    """(parent, field, index-or-None) of every loaded expression, outermost first."""
    out = []
    queue = []
    for fn in tree.body:
        if isinstance(fn, ast.FunctionDef):
            queue.append(fn)
    while queue:
        node = queue.pop(0)
        for fld, val in ast.iter_fields(node):
            if fld in ("args", "decorator_list", "returns") and isinstance(node, ast.FunctionDef):
                continue
            if isinstance(node, ast.Call) and fld == "func":
                continue
            items = [(i, v) for i, v in enumerate(val)] if isinstance(val, list) else [(None, val)]
            for i, v in items:
                if isinstance(v, ast.expr):
                    ctx = getattr(v, "ctx", None)
                    if isinstance(ctx, (ast.Store, ast.Del)):
                        if isinstance(v, ast.Subscript):
                            out.append((v, "slice", None))
                            queue.append(v.slice)
                        elif isinstance(v, (ast.Tuple, ast.List)):
                            for el in v.elts:
                                if isinstance(el, ast.Subscript):
                                    out.append((el, "slice", None))
                                    queue.append(el.slice)
                        continue
                    out.append((node, fld, i))
                    queue.append(v)
                elif isinstance(v, ast.AST) and not isinstance(v, (ast.expr_context, ast.operator,
                                                                   ast.unaryop, ast.cmpop,
                                                                   ast.boolop)):
                    queue.append(v)
    return out


def _get(parent, fld, i):
    v = getattr(parent, fld)
    return v[i] if i is not None else v


def _set(parent, fld, i, new):
    if i is None:
        setattr(parent, fld, new)
    else:
        getattr(parent, fld)[i] = new


def _children(e: ast.expr) -> list:
    out = []
    for fld, val in ast.iter_fields(e):
        if isinstance(e, ast.Call) and fld == "func":
            continue
        vals = val if isinstance(val, list) else [val]
        for v in vals:
            if isinstance(v, ast.expr) and not isinstance(getattr(v, "ctx", None),
                                                          (ast.Store, ast.Del)):
                out.append(v)
    if isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute):
        out.append(e.func.value)  # u.sum() -> u
    return out


def _stmt_variants(st: ast.stmt) -> list:
    """Replacement statement lists for ``st`` (the empty list deletes it)."""
    out = [[]]
    if isinstance(st, ast.If):
        out.append(st.body)
        if st.orelse:
            out.append(st.orelse)
            out.append([ast.If(test=st.test, body=st.body, orelse=[])])
    elif isinstance(st, (ast.For, ast.While)):
        out.append(st.body)
        if isinstance(st, ast.For) and isinstance(st.iter, ast.Call) and \
                isinstance(st.iter.func, ast.Name) and st.iter.func.id == "range":
            once = copy.deepcopy(st)
            first = st.iter.args[0] if len(st.iter.args) > 1 else ast.Constant(0)
            once.iter = ast.Call(func=ast.Name("range", ast.Load()),
                                 args=[first, ast.BinOp(copy.deepcopy(first), ast.Add(),
                                                        ast.Constant(1))], keywords=[])
            if not (len(st.iter.args) == 2 and ast.dump(st.iter.args[1]) ==
                    ast.dump(once.iter.args[1])):
                out.append([once])
    elif isinstance(st, ast.Assign) and isinstance(st.targets[0], ast.Tuple) and \
            isinstance(st.value, ast.Tuple) and len(st.targets) == 1:
        # a, b = c, d  ->  a = c; b = d (drops the simultaneous-assignment semantics)
        if len(st.targets[0].elts) == len(st.value.elts):
            pairs = list(zip(st.targets[0].elts, st.value.elts, strict=True))
            out.append([ast.Assign(targets=[t], value=v) for t, v in pairs])
    return out


def _expr_variants(e: ast.expr) -> list:
    out = [c for c in _children(e)]
    if isinstance(e, ast.Constant):
        if isinstance(e.value, int) and not isinstance(e.value, bool) and e.value > 1:
            out.append(ast.Constant(1))
        elif isinstance(e.value, float) and e.value not in (0.0, 1.0):
            out.append(ast.Constant(1.0))
    elif not isinstance(e, ast.Name):
        out.append(ast.Constant(1.0))
    return out


def _stmt_lists(tree: ast.Module) -> list:
    """(node, field) of every statement list inside functions, outermost first."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Module):
            continue
        for fld in ("body", "orelse"):
            lst = getattr(node, fld, None)
            if isinstance(lst, list) and lst and isinstance(lst[0], ast.stmt):
                out.append((node, fld))
    return out


def candidates(src: str) -> Iterator[str]:
    """Every one-step simplification of ``src``, in the order they are tried."""
    tree = ast.parse(src)
    lists = _stmt_lists(tree)
    for k, (node, fld) in enumerate(lists):  # big chunks first (delta debugging)
        n = len(getattr(node, fld))
        for size in sorted({n // 2, n // 4} - {0, 1}, reverse=True):
            for at in range(0, n - size + 1, size):
                t2 = copy.deepcopy(tree)
                n2, f2 = _stmt_lists(t2)[k]
                lst = getattr(n2, f2)
                del lst[at:at + size]
                if not lst and f2 == "body":
                    lst.append(ast.Pass())
                yield _unparse(t2)
    n_st = len(_stmt_sites(tree))
    for k in range(n_st):
        parent, fld, i = _stmt_sites(tree)[k]
        st = getattr(parent, fld)[i]
        for v in range(len(_stmt_variants(st))):
            t2 = copy.deepcopy(tree)
            p2, f2, i2 = _stmt_sites(t2)[k]
            lst = getattr(p2, f2)
            repl = _stmt_variants(lst[i2])[v]
            lst[i2:i2 + 1] = repl
            if not lst and f2 == "body":
                lst.append(ast.Pass())
            yield _unparse(t2)
    n_ex = len(_expr_sites(tree))
    for k in range(n_ex):
        parent, fld, i = _expr_sites(tree)[k]
        e = _get(parent, fld, i)
        for v in range(len(_expr_variants(e))):
            t2 = copy.deepcopy(tree)
            p2, f2, i2 = _expr_sites(t2)[k]
            new = _expr_variants(_get(p2, f2, i2))[v]
            _set(p2, f2, i2, copy.deepcopy(new))
            yield _unparse(t2)


def _unparse(tree: ast.Module) -> str:
    ast.fix_missing_locations(tree)
    try:
        src = ast.unparse(tree) + "\n"
        compile(src, "<shrink>", "exec")
    except Exception:  # an invalid simplification (e.g. an empty orelse we produced)
        return ""
    return src


def size(src: str) -> int:
    """Statements plus expression nodes: what the shrinker minimises."""
    return sum(1 for _ in ast.walk(ast.parse(src)))


def shrink(prog: Program, reproduces: Callable[[Program], bool], max_tests: int = 400,
           budget_s: float = 120.0, log: Callable[[str], None] | None = None) -> Program:
    """The smallest program found that still ``reproduces``."""
    best = prog
    tried: set = {prog.source}
    start = time.monotonic()
    tests = 0
    pos = 0
    while True:
        found = False
        for j, cand in enumerate(candidates(best.source)):
            if j < pos or not cand or cand in tried:
                continue
            if tests >= max_tests or time.monotonic() - start > budget_s:
                if log:
                    log(f"shrink: stopped after {tests} tests, "
                        f"{time.monotonic() - start:.0f} s")
                return best
            tried.add(cand)
            if size(cand) >= size(best.source):
                continue
            tests += 1
            c = best.with_source(cand)
            if reproduces(c):
                best, pos, found = c, j, True
                break
        if found:
            continue
        if pos == 0:
            return best
        pos = 0  # one more full pass from the start
