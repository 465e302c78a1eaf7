"""Slots: the tapes of a prange loop indexed by the iteration, not a shared cursor.

In serial code a typed tape is a stack: each push writes ``tape[cursor]`` and moves the
cursor on, each pop moves it back.  Iterations that run at once cannot share a cursor,
so where a loop pushes a tape once per iteration (at the top of its body) the push is
written at the slot the serial loop would use, ``cursor + (i - lo)``, and the cursor
moves by the trip count after the loop; the reversed loop moves it back by the trip count
first and reads ``cursor + (i - lo)``.  The layout is the serial one, so each side is
rewritten on its own.  A tape pushed once per trip of an inner loop whose trip count
``m`` the body does not change is written at ``cursor + ((i - lo) * m + (j - jlo))``,
with the room the body reserved each iteration reserved once before the loop.

Before::                                  After::

    for i in range(n):                        for i in range(n):
        _tape_t[_tape_tn] = t                     _tape_t[_tape_tn + i] = t
        _tape_tn += 1                         _tape_tn += max(n, 0)

A tape pushed under an ``if`` (at most once per iteration) and popped under the same
``if`` in the reversed loop (``slot_branch_tapes``) is laid out sparsely: the slot
``cursor + (i - lo)`` of room reserved for every trip is written only when the branch
runs and read only when it is replayed, and the cursor moves by the trip count past
both loops.  That is not the serial layout, so both loops are rewritten or neither.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from ...kernels import helpers
from ..analysis import dataflow
from ..astutil import binop, resolve
from ..front.desugar import assign, const, name
from ..nodes import clone, loaded_ids, name_counts, own_expressions, this_loop, walk, walk_stmts
from .gather import _reversed_range


def bounds(loop: ast.For) -> tuple[ast.expr, ast.expr] | None:
    """``(lo, hi)`` of a loop over ``range(lo, hi)`` (step 1) or over it reversed."""
    it = loop.iter
    if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name)
            and it.func.id == "range" and not it.keywords):
        return None
    a = it.args
    if len(a) == 1:
        return const(0), clone(a[0])
    if len(a) == 2 or (len(a) == 3 and isinstance(a[2], ast.Constant) and a[2].value == 1):
        return clone(a[0]), clone(a[1])
    return _reversed_range(loop)


def slot_tapes(body: list[ast.stmt], loop: ast.For, env: dict[str, Any],
               global_name: Callable[[str, Any], str]) -> set[str]:
    """Index by the iteration the tapes the prange ``loop`` (in the function ``body``)
    pushes or pops once per iteration or once per trip of an inner loop; the tapes it now
    writes at slots of each iteration's own by construction (the inner-loop ones: the
    check cannot see that ``(i - lo) * m + (j - jlo)`` is one).  ``global_name(want, obj)``:
    the name generated code reads ``obj`` through."""
    lo_hi = bounds(loop)
    if lo_hi is None or not isinstance(loop.target, ast.Name) \
            or any(isinstance(s, ast.Break) for s in this_loop(loop.body)):
        return set()
    lo, hi = lo_hi
    i = loop.target.id
    at = name(i) if isinstance(lo, ast.Constant) and lo.value == 0 else \
        binop(name(i), ast.Sub(), clone(lo))
    trips = trip_count(lo, hi)
    uses = name_counts(loop.body)
    reversed_ = _reversed_range(loop) is not None
    pre: list[ast.stmt] = []
    post: list[ast.stmt] = []
    new: list[ast.stmt] = []
    skip = False
    for k, s in enumerate(loop.body):
        if skip:
            skip = False
            continue
        nxt = loop.body[k + 1] if k + 1 < len(loop.body) else None
        push = _push(s, nxt)
        pop = _pop(s, nxt)
        if push and not reversed_ and uses.get(push[1], 0) == 2 \
                and uses.get(push[0], 0) == 1:
            tape, cur = push
            s = clone(s)
            s.targets[0].slice = binop(name(cur), ast.Add(), clone(at))
            post.append(ast.AugAssign(target=name(cur, True), op=ast.Add(),
                                      value=clone(trips)))
            new.append(s)
            skip = True
            continue
        if pop and reversed_ and uses.get(pop[1], 0) == 2 and uses.get(pop[0], 0) == 1:
            tape, cur = pop
            read = clone(nxt)
            read.value.slice = binop(name(cur), ast.Add(), clone(at))
            pre.append(ast.AugAssign(target=name(cur, True), op=ast.Sub(),
                                     value=clone(trips)))
            new.append(read)
            skip = True
            continue
        new.append(s)
    if pre or post:
        loop.body = new
        block, k, _ = where(body, loop)
        block[k + 1:k + 1] = post
        block[k:k] = pre
    return _slot_inner(body, loop, at, trips, reversed_, env, global_name)


def slot_branch_tapes(body: list[ast.stmt], loops: list[ast.For], env: dict[str, Any],
                      global_name: Callable[[str, Any], str]) -> None:
    """Give each tape that one of the prange ``loops`` pushes under an ``if`` and its
    reversed loop pops under it (each the tape's only write and read in ``body``) a slot per
    iteration (see the module docstring); ``global_name`` as for ``slot_tapes``."""
    sites: dict[tuple[str, str], list[tuple[ast.For, list[ast.stmt], ast.stmt, bool]]] = {}
    for loop in loops:
        if bounds(loop) is None or not isinstance(loop.target, ast.Name) \
                or any(isinstance(s, ast.Break) for s in this_loop(loop.body)):
            continue
        back = _reversed_range(loop) is not None
        for blk in _branches(loop.body):
            for k, s in enumerate(blk):
                nxt = blk[k + 1] if k + 1 < len(blk) else None
                pair = _pop(s, nxt) if back else _push(s, nxt)
                if pair is not None:
                    sites.setdefault(pair, []).append((loop, blk, s, back))
    writes, reads = _tape_accesses(body)
    for (tape, cur), found in sites.items():
        fwd = [x for x in found if not x[3]]
        rev = [x for x in found if x[3]]
        if len(fwd) != 1 or len(rev) != 1 or writes.get(tape) != 1 or reads.get(tape) != 1:
            continue
        (floop, fblk, fs, _), (rloop, rblk, rs, _) = fwd[0], rev[0]
        trips = trip_count(*bounds(floop))
        if ast.dump(trips) != ast.dump(trip_count(*bounds(rloop))) \
                or name_counts(floop.body).get(cur) != 2 \
                or name_counts(rloop.body).get(cur) != 2:
            continue
        fk, rk = _index(fblk, fs), _index(rblk, rs)  # (where earlier rewrites left them)
        fblk[fk].targets[0].slice = plus(name(cur), _at(floop))
        del fblk[fk + 1]
        rblk[rk + 1].value.slice = plus(name(cur), _at(rloop))
        del rblk[rk]
        block, k, _ = where(body, floop)
        block[k + 1:k + 1] = [ast.AugAssign(target=name(cur, True), op=ast.Add(),
                                            value=clone(trips))]
        if not _reserved(block, k, tape, cur, floop, env):
            res = global_name("tape_reserve", helpers.tape_reserve)
            block.insert(k, assign(tape, ast.Call(func=name(res), args=[
                name(tape), name(cur), clone(trips)], keywords=[])))
        block, k, _ = where(body, rloop)
        block.insert(k, ast.AugAssign(target=name(cur, True), op=ast.Sub(),
                                      value=clone(trips)))


def _index(block: list[ast.stmt], s: ast.stmt) -> int:
    return next(k for k, x in enumerate(block) if x is s)


def _branches(body: list[ast.stmt]):
    """The blocks of the ``if`` statements in ``body`` (at any depth, not in inner loops)."""
    for s in body:
        if isinstance(s, ast.If):
            for blk in (s.body, s.orelse):
                yield blk
                yield from _branches(blk)


def _tape_accesses(body: list[ast.stmt]) -> tuple[dict[str, int], dict[str, int]]:
    """Per array name: how many statements of ``body`` write an element of it, and how many
    element reads of it there are."""
    writes: dict[str, int] = {}
    reads: dict[str, int] = {}
    for s in walk_stmts(body):
        for n in own_expressions(s):
            if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name):
                into = writes if isinstance(n.ctx, ast.Store) else reads
                into[n.value.id] = into.get(n.value.id, 0) + 1
    return writes, reads


def _at(loop: ast.For) -> ast.expr:
    """``i - lo``: the iteration's place in the loop's range."""
    lo = bounds(loop)[0]
    return minus(name(loop.target.id), lo)


def _reserved(block: list[ast.stmt], k: int, tape: str, cur: str, loop: ast.For,
              env: dict[str, Any]) -> bool:
    """Does a ``tape = tape_reserve(tape, cur, hi - lo)`` before ``block[k]`` (the loop)
    leave room for every trip (nothing between them touching the tape)?"""
    lo, hi = bounds(loop)
    want = {ast.dump(minus(hi, lo)), ast.dump(trip_count(lo, hi))}
    for s in reversed(block[:k]):
        r = _reserve(s, env)
        if r == (tape, cur):
            return ast.dump(s.value.args[2]) in want
        if {tape, cur} & {n.id for n in walk(s) if isinstance(n, ast.Name)}:
            return False
    return False


def _slot_inner(body: list[ast.stmt], loop: ast.For, at: ast.expr, trips: ast.expr,
                reversed_: bool, env: dict[str, Any],
                global_name: Callable[[str, Any], str]) -> set[str]:
    """Index by the iteration the tapes an inner loop (one in the body, run once per
    iteration, with a trip count the body does not change) pushes or pops once per
    inner iteration: slot ``cursor + ((i - lo) * m + (j - jlo))`` for ``m`` inner trips;
    the room the body reserved per iteration is reserved once before the loop."""
    i = loop.target.id
    bound = dataflow.binds_in(loop.body) | {i}
    uses = name_counts(loop.body)
    reserves = {}
    for k, s in enumerate(loop.body):
        r = _reserve(s, env)
        if r is not None:
            reserves[r] = k
    pre: list[ast.stmt] = []
    post: list[ast.stmt] = []
    drop: set[int] = set()
    slotted: set[str] = set()
    for inner, (jlo, jhi) in _fixed_inner_loops(loop, reversed_, bound):
        j = inner.target.id
        m = trip_count(jlo, jhi)
        slot = plus(binop(clone(at), ast.Mult(), clone(m)), minus(name(j), jlo))
        total = binop(clone(trips), ast.Mult(), clone(m))
        body_ = inner.body
        for k, s in enumerate(body_):
            nxt = body_[k + 1] if k + 1 < len(body_) else None
            pair = _pop(s, nxt) if reversed_ else _push(s, nxt)
            if pair is None:
                continue
            tape, cur = pair
            if reversed_ and uses.get(tape) == 1 and uses.get(cur) == 2:
                nxt.value.slice = binop(name(cur), ast.Add(), clone(slot))
                body_[k] = ast.Pass()
                pre.append(ast.AugAssign(target=name(cur, True), op=ast.Sub(),
                                         value=clone(total)))
            elif not reversed_ and (tape, cur) in reserves and uses.get(tape) == 3 \
                    and uses.get(cur) == 3:
                s.targets[0].slice = binop(name(cur), ast.Add(), clone(slot))
                body_[k + 1] = ast.Pass()
                drop.add(reserves[tape, cur])
                res = global_name("tape_reserve", helpers.tape_reserve)
                pre.append(assign(tape, ast.Call(func=name(res), args=[
                    name(tape), name(cur), clone(total)], keywords=[])))
                post.append(ast.AugAssign(target=name(cur, True), op=ast.Add(),
                                          value=clone(total)))
                slotted.add(tape)
        inner.body = [x for x in body_ if not isinstance(x, ast.Pass)] or [ast.Pass()]
    if not pre:
        return slotted
    loop.body = [s for k, s in enumerate(loop.body) if k not in drop]
    block, k, _ = where(body, loop)
    block[k + 1:k + 1] = post
    block[k:k] = pre
    return slotted


def _fixed_inner_loops(loop: ast.For, reversed_: bool, bound: set[str]):
    """Each loop of ``loop``'s body (not nested deeper) without ``break``, over a range
    stepping by 1 (reversed as ``reversed_`` says) whose bounds read nothing ``bound`` (the
    names the body binds), with those bounds."""
    for inner in loop.body:
        if not isinstance(inner, ast.For) or not isinstance(inner.target, ast.Name) \
                or any(isinstance(s, ast.Break) for s in this_loop(inner.body)):
            continue
        jb = bounds(inner)
        if jb is None or (_reversed_range(inner) is not None) != reversed_ \
                or any(loaded_ids(e) & bound for e in jb):
            continue
        yield inner, jb


def _reserve(s: ast.stmt, env: dict[str, Any]) -> tuple[str, str] | None:
    """(tape, cursor) where ``s`` is ``tape = tape_reserve(tape, cursor, n)``."""
    if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name) \
            and isinstance(s.value, ast.Call) \
            and resolve(s.value.func, env) is helpers.tape_reserve and len(s.value.args) == 3 \
            and all(isinstance(a, ast.Name) for a in s.value.args[:2]) \
            and s.value.args[0].id == s.targets[0].id:
        return s.targets[0].id, s.value.args[1].id
    return None


def _push(s: ast.stmt, nxt: ast.stmt | None) -> tuple[str, str] | None:
    """(tape, cursor) where ``s, nxt`` are ``tape[cursor] = v; cursor += 1``."""
    if isinstance(s, ast.Assign) and len(s.targets) == 1 \
            and isinstance(s.targets[0], ast.Subscript) \
            and isinstance(s.targets[0].value, ast.Name) \
            and isinstance(s.targets[0].slice, ast.Name) and _moves(nxt, s.targets[0].slice.id,
                                                                   ast.Add):
        return s.targets[0].value.id, s.targets[0].slice.id
    return None


def _pop(s: ast.stmt, nxt: ast.stmt | None) -> tuple[str, str] | None:
    """(tape, cursor) where ``s, nxt`` are ``cursor -= 1; t = tape[cursor]``."""
    if not (isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name)
            and _moves(s, s.target.id, ast.Sub)):
        return None
    cur = s.target.id
    if isinstance(nxt, ast.Assign) and len(nxt.targets) == 1 \
            and isinstance(nxt.targets[0], ast.Name) and isinstance(nxt.value, ast.Subscript) \
            and isinstance(nxt.value.value, ast.Name) and isinstance(nxt.value.slice, ast.Name) \
            and nxt.value.slice.id == cur:
        return nxt.value.value.id, cur
    return None


def _moves(s: ast.stmt | None, cur: str, op: type) -> bool:
    """Is ``s`` ``cur += 1`` (``op`` Add) or ``cur -= 1`` (Sub)?"""
    return isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name) \
        and s.target.id == cur and isinstance(s.op, op) \
        and isinstance(s.value, ast.Constant) and s.value.value == 1


def _is_int(e: ast.expr, v: int | None = None) -> bool:
    return isinstance(e, ast.Constant) and type(e.value) is int and (v is None or e.value == v)


def minus(a: ast.expr, b: ast.expr) -> ast.expr:
    """``a - b``, folding constants."""
    if _is_int(b, 0):
        return clone(a)
    if _is_int(a) and _is_int(b):
        return const(a.value - b.value)
    return binop(clone(a), ast.Sub(), clone(b))


def plus(a: ast.expr, b: ast.expr) -> ast.expr:
    """``a + b``, folding a zero."""
    if _is_int(a, 0):
        return clone(b)
    if _is_int(b, 0):
        return clone(a)
    return binop(clone(a), ast.Add(), clone(b))


def trip_count(lo: ast.expr, hi: ast.expr) -> ast.expr:
    """``max(hi - lo, 0)``: the trips of ``range(lo, hi)`` (a constant where it is one)."""
    span = minus(hi, lo)
    if _is_int(span):
        return const(max(span.value, 0))
    return ast.Call(func=name("max"), args=[span, const(0)], keywords=[])


def where(body: list[ast.stmt], target: ast.stmt, outer: frozenset[int] = frozenset()) \
        -> tuple[list[ast.stmt], int, frozenset[int]]:
    """The block holding ``target``, its position there, and the ids of the loops around it."""
    for k, s in enumerate(body):
        if s is target:
            return body, k, outer
        for f in ("body", "orelse"):
            sub = getattr(s, f, None)
            if isinstance(sub, list) and sub:
                inner = outer | {id(s)} if isinstance(s, (ast.For, ast.While)) else outer
                try:
                    return where(sub, target, inner)
                except LookupError:
                    pass
    raise LookupError("statement not found")


__all__ = ["bounds", "minus", "plus", "slot_branch_tapes", "slot_tapes", "trip_count",
           "where"]
