"""Indices proved non-negative read as unsigned, so Numba emits no wraparound (``jit=True``).

Numba wraps a negative signed index (``x[-1]`` is the last element): every access to an
array by a signed integer computes ``i + n if i < 0 else i``.  Where LLVM cannot prove
``i >= 0`` (an index carried from trip to trip, ``idx += 1``; a loop from a start it
does not know the sign of, ``range(k + 1, n)``; even many plain ``range(n)`` loops as
Numba lowers them) that select stays in the loop and nothing vectorises.  An unsigned
index (``x[np.uintp(i)]``) is never wrapped.

This step reads the bounds step's proofs (``bounds.prove``: per subscript of an array,
the least value its index takes over the loops it is checked once before, an affine
form of the values on entry to the outermost of them) and rewrites the index parts that
vary in an innermost loop (a loop with no loop in its body; an invariant index's select
is hoisted by LLVM): where the least value is a constant ``>= 0`` by the ranges of the
enclosing loops (``bounds.ranged``), the part is read as ``np.uintp(...)`` in place;
where it is a form checked before that loop (``idx1``, ``_n``), or before an enclosing
loop that binds none of the form's names (so it holds the same value at the innermost
loop), the innermost loop is versioned: ``if idx1 >= 0 and _n >= 0:`` the loop with
those parts unsigned, ``else:`` the loop as written (Python's wraparound, exactly as the
user's code has it).  Preconditions: the function is compiled by Numba on the CPU with
every index checked explicitly (the bounds step proved it: an index read unsigned is
then in range, and equals the signed one, being >= 0); every check of an index node
agrees (one form; a node standing twice in the body is proved for both places); a loop
that stands in one place only.  Where the bounds step left the function to Numba's
checks, nothing changes.  Statements that change are copied (the variants share them).
"""

from __future__ import annotations

import ast
import copy
from collections import Counter
from collections.abc import Callable
from typing import Any

from ..analysis.dataflow import binds_in
from ..nodes import loaded_ids, walk_stmts
from . import emit
from .bounds import Lin, Unproved, prove, ranged

#: the comment before a versioned loop (then the versioned loop)
VERSIONED = "indices >= 0 on every trip over {var} read unsigned (no wraparound); else as written"


def unsigned_indices(body: list[ast.stmt], kinds: Callable[[str], Any], params: list[str],
                     plain: frozenset[str], ranges: bool, env: dict[str, Any], np_name: str
                     ) -> list[ast.stmt]:
    """``body`` (every index proved by the bounds step) with the indices of its innermost
    loops proved ``>= 0`` read as ``np_name.uintp(...)``, in place or in a versioned loop."""
    try:
        p, _, _ = prove(body, kinds, params, plain, ranges, env)
    except Unproved:
        return body
    at: dict[int, int] = {}  # index node varying in an innermost loop -> that loop
    for loop_id, loop in _innermost(body, p.repeated).items():
        varying = binds_in([loop], elements=False)
        for n in _indices(loop):
            if loaded_ids(n) & varying:  # (an invariant one's select is hoisted by LLVM)
                at[id(n)] = loop_id
    static: dict[int, bool] = {}  # index node -> >= 0 by the loops' ranges (every check)
    lows: dict[int, Lin | None] = {}  # index node -> the least value its loop may test
    bound: dict[int, set[str]] = {}
    for c in p.checks:
        i = id(c.index)
        if c.index is None or i not in at:
            continue
        low = ranged(c.lo, c.around, True)
        static[i] = static.get(i, True) and not low.terms and low.const >= 0
        if c.loops and id(c.at) not in bound:
            bound[id(c.at)] = binds_in([c.at], elements=False)
        # (tested before the innermost loop: its names hold their values at the check's)
        testable = c.loops and (id(c.at) == at[i] or not c.lo.names() & bound[id(c.at)])
        prev = lows.get(i, c.lo)  # (two checks of one node: one form, or none)
        lows[i] = c.lo if testable and prev is not None and _same(prev, c.lo) else None
    fixed = {i for i, ok in static.items() if ok}
    places = Counter(id(n) for s in body for n in ast.walk(s))
    versions: dict[int, tuple[list[Lin], set[int]]] = {}
    for i, lo in lows.items():  # (a node in two places: the other may be in no version)
        if i not in fixed and lo is not None and places[i] == 1:
            forms, ids = versions.setdefault(at[i], ([], set()))
            ids.add(i)
            k = next((k for k, f in enumerate(forms) if f.key() == lo.key()), None)
            if k is None:
                forms.append(lo)
            elif lo.const < forms[k].const:  # (``a - 2 >= 0`` implies ``a >= 0``)
                forms[k] = lo
    if not fixed and not versions:
        return body
    return _rewrite(body, fixed, versions, np_name)


def _same(a: Lin, b: Lin) -> bool:
    return a.key() == b.key() and a.const == b.const


def _innermost(body: list[ast.stmt], repeated: set[int]) -> dict[int, ast.For]:
    """The ``for`` loops with no loop in their bodies, standing in one place (not in the
    prover's ``repeated``), by id."""
    return {id(s): s for s in walk_stmts(body) if isinstance(s, ast.For)
            and id(s) not in repeated
            and not any(isinstance(x, (ast.For, ast.While)) for x in walk_stmts(s.body))}


def _indices(loop: ast.For) -> list[ast.expr]:
    """The index parts of the subscripts in ``loop``'s body."""
    return [p for s in walk_stmts(loop.body) for n in ast.walk(s)
            if isinstance(n, ast.Subscript) for p in _parts(n)]


def _parts(sub: ast.Subscript) -> list[ast.expr]:
    return list(sub.slice.elts) if isinstance(sub.slice, ast.Tuple) else [sub.slice]


def _rewrite(body: list[ast.stmt], fixed: set[int],
             versions: dict[int, tuple[list[Lin], set[int]]], np_name: str) -> list[ast.stmt]:
    """``body`` with the index nodes ``fixed`` unsigned and the loops ``versions``
    versioned; the statements holding them copied, the rest shared."""
    wanted = fixed | set(versions) | {i for _, ids in versions.values() for i in ids}
    out: list[ast.stmt] = []
    for s in body:
        if not any(id(n) in wanted for n in ast.walk(s)):
            out.append(s)
            continue
        holder = ast.Module(body=[s], type_ignores=[])
        new = copy.deepcopy(holder)
        pairs = {id(a): b for a, b in zip(ast.walk(holder), ast.walk(new), strict=True)}
        fallbacks = {i: copy.deepcopy(pairs[i]) for i in versions if i in pairs}
        turned = {id(pairs[i]) for i in fixed if i in pairs}
        turned |= {id(pairs[j]) for i, (_, ids) in versions.items() if i in pairs for j in ids}
        _unsigned(new, turned, np_name)
        for i, (forms, _) in versions.items():
            if i in pairs:
                _version(new, pairs[i], forms, fallbacks[i])
        out += new.body
    return out


def _unsigned(tree: ast.AST, ids: set[int], np_name: str) -> None:
    """Make each index part of ``tree``'s subscripts whose id is in ``ids`` read
    ``np_name.uintp(<the part>)`` (``tree`` is a copy: changed in place)."""
    for sub in ast.walk(tree):
        if not isinstance(sub, ast.Subscript):
            continue
        parts = [_cast(x, np_name) if id(x) in ids else x for x in _parts(sub)]
        if isinstance(sub.slice, ast.Tuple):
            sub.slice.elts = parts
        else:
            sub.slice = parts[0]


def _cast(x: ast.expr, np_name: str) -> ast.expr:
    call = ast.Call(func=ast.Attribute(value=ast.Name(id=np_name, ctx=ast.Load()),
                                       attr="uintp", ctx=ast.Load()), args=[x], keywords=[])
    return ast.copy_location(call, x)


def _version(tree: ast.Module, loop: ast.For, forms: list[Lin], original: ast.stmt) -> None:
    """Put ``if <every form >= 0>: loop else: original`` where ``loop`` is in ``tree``."""
    test = " and ".join(f"{f.text()} >= 0" for f in forms)
    guard = ast.parse(f"if {test}:\n    pass\nelse:\n    pass").body[0]
    guard.body, guard.orelse = [loop], [original]
    for n in ast.walk(guard):
        if isinstance(n, (ast.expr, ast.stmt)) and not hasattr(n, "lineno"):
            ast.copy_location(n, loop)
    ast.copy_location(guard, loop)
    for n in ast.walk(guard.test):
        ast.copy_location(n, loop)
    note = emit.comment(VERSIONED.format(var=ast.unparse(loop.target)))
    for holder in [tree, *walk_stmts(tree.body)]:
        for f in emit.BLOCK_FIELDS:
            block = getattr(holder, f, None)
            if isinstance(block, list) and any(x is loop for x in block):
                k = next(k for k, x in enumerate(block) if x is loop)
                block[k:k + 1] = [note, guard]
                return
    raise AssertionError("a versioned loop is not in its statement")


__all__ = ["VERSIONED", "unsigned_indices"]
