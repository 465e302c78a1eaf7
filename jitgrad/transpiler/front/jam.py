"""Unroll-and-jam: an outer loop's ``JAM`` consecutive iterations share one inner loop.

LLVM vectorises innermost loops only; a nest whose inner loop is a serial recurrence
(``r -= x[j] * mul; mul *= t``) runs at the latency of one chain.  Jammed, the inner loop
carries ``JAM`` independent chains, which SLP vectorisation and out-of-order execution
overlap; the reverse sweep's inner loop gets ``JAM`` adjoint chains the same way::

    for i in range(a, b):              _jq = max(b - a, 0) // 4; _js = b - 4 * _jq
        pre(i)                         for i in range(a, _js):
        for j in range(E):                 (the loop as written: the first trips)
            body(i, j)                 for _jk in range(_jq):
        post(i)                            i_1 = _js + 4 * _jk; i_2 = i_1 + 1 ...
                                           pre(i_1); pre(i_2); pre(i_3); pre(i_4)
                                           for j_1 in range(E):
                                               body(i_1, j_1); ...; body(i_4, j_1)
                                           post(i_1); post(i_2); post(i_3); post(i_4)

Each copy's operations are the user's, in the user's order within the copy, and the
posts run in iteration order, so values are bit-identical.  It applies where reordering
the copies' pre-parts and inner loops changes nothing (``_plan``): a ``range`` loop (not
``prange``, not ``jg.checkpointed``) whose body is pre + one inner ``range`` loop + post,
with only assignments to scalar names from pure expressions (``front/purity.py``; ``if``
allowed in the pre-part), so no memory is written; no ``if`` in post: a branch there (a
running minimum) makes the adjoint reach few iterations, which ``zero_skip`` skips one
at a time but not four jammed together; the inner loop's bounds read nothing the outer
body binds but what its pre-part binds once to the same value in every iteration (``_n =
x.shape[0]``); every name the pre-part and inner loop bind is bound before it is read in
each iteration (``exposed_reads``) and read nowhere outside the loop; names post binds
(accumulators) are not read by pre or the inner loop.
"""

from __future__ import annotations

import ast
import copy
from typing import Any

from ..analysis.dataflow import binds_in, reads, reads_in
from ..analysis.kinds import Kind
from ..astutil import exposed_reads
from ..naming import Namer
from ..nodes import loaded_ids, rewrite_blocks, walk_stmts
from ..notes import CHECKPOINTED, is_prange
from .build import assign, const, name
from .inline import renamed_copy
from .purity import builtins_unshadowed, is_pure, resolve_name

#: outer iterations per trip of the jammed loop
JAM = 4
#: the most statements (three-address form) an inner loop body may have to be jammed
MAX_INNER = 12
#: the most statements a whole nest may have (each is copied ``JAM`` + 1 times)
MAX_NEST = 40


def jam(body: list[ast.stmt], returns: list[ast.expr], kinds: dict[str, Kind],
        env: dict[str, Any], namer: Namer) -> list[ast.stmt]:
    """``body`` with every qualifying loop nest (at any depth) jammed as above."""
    if not builtins_unshadowed(env, ("bool", "range")):
        return body
    ctx = (body, returns, kinds, env)

    def one(s: ast.stmt) -> ast.stmt | list[ast.stmt] | None:
        if not isinstance(s, ast.For):
            return None
        if is_prange(s) or CHECKPOINTED.get(s):
            return s  # (the user chose its schedule: nothing under it changes either)
        plan = _plan(s, ctx)
        if plan is None:
            return None
        env.setdefault("bool", bool)  # (the generated code calls it: as ``normalize`` does)
        return _jammed(s, plan, namer)

    return rewrite_blocks(body, one)


def _range_args(loop: ast.For, env: dict[str, Any]) -> list[ast.expr] | None:
    """The arguments of ``loop``'s ``range(...)`` (a unit step), or None."""
    it = loop.iter
    if loop.orelse or not isinstance(loop.target, ast.Name) or not isinstance(it, ast.Call) \
            or resolve_name(it.func, env) is not range or it.keywords \
            or not 1 <= len(it.args) <= 2 or not all(is_pure(a, env) for a in it.args):
        return None
    return list(it.args)


def _straight(stmts: list[ast.stmt], kinds: dict[str, Kind], env, ifs: bool) -> bool:
    """Only assignments of pure values to scalar names (``ifs``: and ``if`` on pure tests
    around them): no memory written, no draw, no exit."""
    for s in stmts:
        if isinstance(s, ast.If) and ifs:
            if not (is_pure(s.test, env) and _straight(s.body, kinds, env, ifs)
                    and _straight(s.orelse, kinds, env, ifs)):
                return False
            continue
        t = s.targets[0] if isinstance(s, ast.Assign) and len(s.targets) == 1 else \
            s.target if isinstance(s, ast.AugAssign) else None
        if not isinstance(t, ast.Name) or not is_pure(s.value, env):
            return False
        k = kinds.get(t.id)
        if k is None or k.is_array or k.cls == "t":
            return False
    return True


def _plan(loop: ast.For, ctx) -> tuple | None:
    """(pre, inner loop, post, the names each copy renames) where ``loop`` may be jammed
    (module docstring), else None."""
    body, returns, kinds, env = ctx
    outer = _range_args(loop, env)
    at = [k for k, s in enumerate(loop.body) if isinstance(s, (ast.For, ast.While))]
    if outer is None or len(at) != 1 or not isinstance(loop.body[at[0]], ast.For):
        return None
    pre, inner, post = loop.body[:at[0]], loop.body[at[0]], loop.body[at[0] + 1:]
    i = loop.target.id
    if _range_args(inner, env) is None or is_prange(inner) or CHECKPOINTED.get(inner) \
            or len(inner.body) > MAX_INNER or _tiny(outer) \
            or sum(1 for _ in walk_stmts(loop.body)) > MAX_NEST:
        return None
    if not (_straight(pre, kinds, env, True) and _straight(inner.body, kinds, env, False)
            and _straight(post, kinds, env, False)):
        return None
    bound = binds_in(loop.body, elements=True)
    if i in bound or loaded_ids(outer) & (bound | {i}) \
            or loaded_ids(inner.iter) & (bound | {i}) - _invariant(pre, bound | {i}):
        return None  # bounds that change with the iteration
    local = binds_in([*pre, inner], elements=False)  # (the inner loop's index included)
    carried = binds_in(post, elements=False) - local
    if local & exposed_reads(loop.body) or carried & reads_in([*pre, inner]):
        return None  # a value one iteration hands the next through pre or the inner loop
    outside = _reads_outside(loop, body, returns)
    if (local | {i}) & outside:
        return None
    # post's own temporaries get one name per copy too (not the accumulators)
    temps = binds_in(post, elements=False) - local - exposed_reads(loop.body) - outside
    return pre, inner, post, sorted((local | temps) - {inner.target.id})


def _invariant(pre: list[ast.stmt], varying: set[str]) -> set[str]:
    """The names ``pre`` binds once, at its top level, to a value that reads none of
    ``varying`` (the same in every iteration: ``_n = x.shape[0]``)."""
    once = [s.targets[0].id for s in pre if isinstance(s, ast.Assign)
            and isinstance(s.targets[0], ast.Name) and not loaded_ids(s.value) & varying]
    return {n for n in once if sum(n in binds_in([s]) for s in walk_stmts(pre)) == 1}


def _tiny(args: list[ast.expr]) -> bool:
    """Is the loop's trip count a constant below two jammed trips?"""
    lo, hi = (const(0), *args) if len(args) == 1 else args
    return isinstance(lo, ast.Constant) and isinstance(hi, ast.Constant) \
        and hi.value - lo.value < 2 * JAM


def _reads_outside(loop: ast.For, body: list[ast.stmt], returns: list[ast.expr]) -> set[str]:
    """The names the function reads outside ``loop`` (its returned values included)."""
    inside = {id(s) for s in walk_stmts([loop])}
    out = loaded_ids(returns)
    for s in walk_stmts(body):
        if id(s) not in inside:
            out |= reads(s)
    return out


def _jammed(loop: ast.For, plan, namer: Namer) -> list[ast.stmt]:
    """The remainder loop (the original, over the first trips) and the jammed loop (the
    rest) for ``loop``: the iterations run in their order."""
    pre, inner, post, local = plan
    i = loop.target.id
    args = loop.iter.args
    lo, hi = (const(0), args[0]) if len(args) == 1 else args
    head, trips, start = _bounds(lo, hi, namer)
    j, k, off = namer.version(inner.target.id), namer.fresh("_jk"), namer.fresh("_jo")
    maps = [{n: namer.version(n) for n in [i, *local]} for _ in range(JAM)]
    for m in maps:
        m[inner.target.id] = j
    # the jammed loop counts its trips (a unit step: reversed and fused like the original)
    steps = [assign(off, ast.BinOp(left=name(k), op=ast.Mult(), right=const(JAM))),
             assign(maps[0][i], ast.BinOp(left=name(start), op=ast.Add(), right=name(off)))]
    steps += [assign(m[i], ast.BinOp(left=name(maps[0][i]), op=ast.Add(), right=const(c)))
              for c, m in enumerate(maps) if c]
    jammed_inner = ast.For(target=name(j, store=True), iter=renamed_copy(inner.iter, maps[0]),
                           body=[renamed_copy(s, m) for m in maps for s in inner.body],
                           orelse=[])
    body = [*steps, *(renamed_copy(s, m) for m in maps for s in pre), jammed_inner,
            *(renamed_copy(s, m) for m in maps for s in post)]
    main = ast.For(target=name(k, store=True), iter=ast.Call(
        func=name("range"), args=[name(trips)], keywords=[]), body=body, orelse=[])
    rest = copy.copy(loop)
    rest.iter = ast.copy_location(ast.Call(func=name("range"), args=[
        *(renamed_copy(a, {}) for a in args[:-1]), name(start)], keywords=[]), loop.iter)
    for s in walk_stmts([*head, main]):
        if not hasattr(s, "lineno"):
            ast.copy_location(s, loop)
    return [*head, rest, main]


def _bound(head: list[ast.stmt], value: ast.expr, base: str, namer: Namer) -> str:
    """A new name bound to ``value`` at the end of ``head``."""
    head.append(assign(namer.fresh(base), value))
    return head[-1].targets[0].id


def _bounds(lo: ast.expr, hi: ast.expr, namer: Namer) -> tuple[list[ast.stmt], str, str]:
    """(statements, the jammed loop's trip count, where its trips start) for ``range(lo,
    hi)``: the remainder ``range(lo, start)`` takes the first ``(hi - lo) % JAM`` trips; an
    empty range gives no jammed trip and an empty remainder (the count is clamped at 0 by
    an ``if``: ``max`` of ints has no gradient rule)."""
    head: list[ast.stmt] = []
    if not isinstance(hi, (ast.Name, ast.Constant)):
        hi = name(_bound(head, hi, "_jb", namer))
    zero = isinstance(lo, ast.Constant) and lo.value == 0
    span = hi if zero else name(_bound(head, ast.BinOp(
        left=renamed_copy(hi, {}), op=ast.Sub(), right=renamed_copy(lo, {})), "_jn", namer))
    trips = _bound(head, ast.BinOp(left=span, op=ast.FloorDiv(), right=const(JAM)), "_jq",
                   namer)
    below = ast.Compare(left=name(trips), ops=[ast.Lt()], comparators=[const(0)])
    empty = _bound(head, ast.Call(func=name("bool"), args=[below], keywords=[]), "_jz", namer)
    head.append(ast.If(test=name(empty), body=[assign(trips, const(0))], orelse=[]))
    jammed = _bound(head, ast.BinOp(left=name(trips), op=ast.Mult(), right=const(JAM)), "_jr",
                    namer)
    start = _bound(head, ast.BinOp(left=renamed_copy(hi, {}), op=ast.Sub(), right=name(jammed)),
                   "_js", namer)
    return head, trips, start


__all__ = ["JAM", "MAX_INNER", "MAX_NEST", "jam"]
