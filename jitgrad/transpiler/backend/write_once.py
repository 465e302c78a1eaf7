"""Gradients written once: a loop that adds to every row of a zeroed gradient first
writes each row instead, and the zeroing goes.

The adjoint of a row-wise loop (``for i in range(n): for j in range(c): ... z[i, j]``)
accumulates ``dz[i, j] += g`` into an array made by ``np.zeros_like``: the zeroing is a
pass over memory of its own, as long as the array, that an expert's adjoint does not
make (softmax cross-entropy over 1000 x 1000 logits: 0.3-0.5 ms of 6.8).  Where the
loop is provably the first writer of every element it reaches, it assigns instead of
adding, the array is made with ``np.empty_like``, and the elements no iteration reaches
are set to 0 by slices::

    dz = np.zeros_like(z)                        dz = np.empty_like(z)
    for i in range(n):                           dz[max(n, 0):] = 0.0
        dz[i, labels[i]] += a                    for i in range(n):
        for j in range(c):                   ->      dz[i, max(c, 0):] = 0.0
            dz[i, j] += g                            for j in range(c):
                                                         dz[i, j] = g
                                                     dz[i, labels[i]] += a

It applies only where that is exact.  The loop is a statement of the function body
itself (it runs once), over ``range`` with step 1 (or its reversal, ``-1``) from a
constant start >= 0 (no index wraps, no two iterations share a row), without ``break``,
``continue``, ``prange`` or a checkpoint, its bound arithmetic of names, constants,
``x.shape[k]`` and ``len(x)``; the gradient is zeroed in the body, has no
adjoint views (``Adjoint.shared``), and nothing between its zeroing and the loop names
it.  In the loop, every mention of it is an accumulation ``dz[i, ...] += e`` into the
iteration's own row (``i`` never rebound, ``e`` not reading it).  The iteration's first
such statement, at the top of the body, is either ``dz[i] += e`` (the whole row) or an
inner loop of the same kind over ``j`` holding one accumulation, ``dz[i, j] += e``, and
no other mention; earlier accumulations of the row move after that inner loop when
nothing it binds changes what they read (sums: their order does not matter).  Sums then
round the same way except for the sign of a zero (``0.0 + -0.0`` is ``0.0``).
"""

from __future__ import annotations

import ast

from ..analysis import dataflow
from ..front.desugar import const, name
from ..nodes import clone, loaded_ids, mentions, walk, walk_stmts
from ..notes import COMMENT, ZEROING, carry
from .emit import comment
from .fuse import plain_loop
from .gather import _reversed_range, _zero_slice


def write_once(body: list[ast.stmt], grads: tuple[str, ...], shared: dict[str, str]
               ) -> list[ast.stmt]:
    """``body`` (a variant's function body) with each gradient of ``grads`` that a loop
    writes first in written-once form (see the module docstring; zeroings are found by
    their mark, ``ZEROING``).  ``body``'s statements are not changed (the variants share
    them): what changes is copied."""
    out = list(body)
    viewed = set(shared) | set(shared.values())
    for d in dict.fromkeys(grads):  # (in order: the generated text must not vary)
        if d in viewed:
            continue
        at = next((k for k, s in enumerate(out) if _zeroing(s) == d), None)
        if at is None:
            continue
        for k in range(at + 1, len(out)):
            if not mentions(out[k], d, 1):
                continue
            new = _loop_once(out[k], d)
            if new is not None:
                made = clone(out[at])
                made.value.func.attr = "empty_like"
                ZEROING.set(made.value, False)
                out[at] = made
                out[k:k + 1] = [new[-1]]
                start = _before_comments(out, k, at + 1)
                out[start:start] = new[:-1]
            break
    return out


def _zeroing(s: ast.stmt) -> str | None:
    """``d`` where ``s`` is the reverse pass's zeroing ``d = np.zeros_like(v)`` (its mark)."""
    if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name) \
            and ZEROING.get(s.value):
        return s.targets[0].id
    return None


def _span(loop: ast.For) -> tuple[int, ast.expr] | None:
    """``(lo, hi)``: ``loop`` runs over every integer of ``[lo, hi)`` once, ``lo`` a
    constant >= 0, ``hi`` an expression of names and constants (evaluable again)."""
    it = loop.iter
    if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
            and not it.keywords and 1 <= len(it.args) <= 3):
        return None
    span = _reversed_range(loop)
    if span is None:
        if len(it.args) == 3 and not (isinstance(it.args[2], ast.Constant)
                                      and it.args[2].value == 1):
            return None
        span = (const(0), it.args[0]) if len(it.args) == 1 else (it.args[0], it.args[1])
    lo, hi = span
    if not (isinstance(lo, ast.Constant) and type(lo.value) is int and lo.value >= 0):
        return None
    return (lo.value, hi) if _evaluable(hi) else None


def _evaluable(e: ast.expr) -> bool:
    """``e`` is arithmetic of names, constants and shapes (``x.shape[0]``, ``len(x)``):
    evaluated again just before the loop, it is what the loop's ``range`` evaluated."""
    for n in walk(e):
        if isinstance(n, ast.Call):
            if not (isinstance(n.func, ast.Name) and n.func.id == "len" and len(n.args) == 1
                    and isinstance(n.args[0], ast.Name) and not n.keywords):
                return False
        elif isinstance(n, ast.Attribute):
            if n.attr != "shape" or not isinstance(n.value, ast.Name):
                return False
        elif isinstance(n, ast.Subscript):
            if not (isinstance(n.value, ast.Attribute) and isinstance(n.slice, ast.Constant)):
                return False
        elif not isinstance(n, (ast.Name, ast.Constant, ast.BinOp, ast.UnaryOp, ast.operator,
                                ast.unaryop, ast.expr_context)):
            return False
    return True


def _row_of(target: ast.expr, d: str, i: str) -> list[ast.expr] | None:
    """The indices of ``target`` where it is ``d[i, ...]`` (row ``i`` of ``d``)."""
    if not (isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name)
            and target.value.id == d):
        return None
    idx = target.slice.elts if isinstance(target.slice, ast.Tuple) else [target.slice]
    if not idx or not (isinstance(idx[0], ast.Name) and idx[0].id == i):
        return None
    return idx


def _accumulations_only(loop: ast.For, d: str, i: str) -> bool:
    """Every mention of ``d`` in ``loop`` is ``d[i, ...] += e`` (``e`` and the other indices
    not naming ``d``), and ``loop`` never rebinds ``i``."""
    if mentions(loop.iter, d, 1):
        return False
    adds = 0
    for s in walk_stmts(loop.body):
        if i in dataflow.binds(s, elements=True):
            return False
        if (isinstance(s, ast.AugAssign) and isinstance(s.op, ast.Add)
                and _row_of(s.target, d, i) is not None
                and not mentions(s.value, d, 1) and not mentions(s.target.slice, d, 1)):
            adds += 1
    return adds == mentions(loop.body, d)


def _loop_once(loop: ast.stmt, d: str) -> list[ast.stmt] | None:
    """The statements for ``loop`` with ``d`` written once, or None where it does not
    apply."""
    span = _span(loop) if isinstance(loop, ast.For) else None
    if span is None or not plain_loop(loop) or not _accumulations_only(loop, d, loop.target.id):
        return None
    body = _first_write(loop.body, d, loop.target.id)
    if body is None:
        return None
    note = comment(f"{d}: each element written once (made empty); those no index reaches "
                   "set to 0")
    return [ast.copy_location(note, loop), *_spanned(loop, body, span, d, None)]


def _spanned(loop: ast.For, body: list[ast.stmt], span: tuple[int, ast.expr], d: str,
             row: str | None) -> list[ast.stmt]:
    """``loop`` with ``body``, after the fills that set to 0 the part of ``d`` (of its
    ``row``) outside ``loop``'s ``span``: ``[:lo]`` and ``[max(hi, lo):]``."""
    lo, hi = span
    new = ast.copy_location(ast.For(target=loop.target, iter=loop.iter, body=body,
                                    orelse=[]), loop)
    carry(loop, new)
    fills = [_zero_slice(d, None, const(lo), row)] if lo > 0 else []
    fills.append(_zero_slice(d, _at_least(hi, lo), None, row))
    return [*(ast.copy_location(f, loop) for f in fills), new]


def _before_comments(stmts: list[ast.stmt], k: int, floor: int) -> int:
    """Where statements go that come before ``stmts[k]`` and the comments right before it
    (which describe it), no earlier than ``floor``."""
    while k > floor and COMMENT.get(stmts[k - 1]):
        k -= 1
    return k


def _at_least(e: ast.expr, lo: int) -> ast.expr:
    """``max(e, lo)``, folded where ``e`` is a constant."""
    if isinstance(e, ast.Constant) and type(e.value) is int:
        return const(max(e.value, lo))
    return ast.Call(func=name("max"), args=[clone(e), const(lo)], keywords=[])


def _first_write(body: list[ast.stmt], d: str, i: str) -> list[ast.stmt] | None:
    """``body`` (an iteration over row ``i``) with its first accumulation into ``d`` made an
    assignment covering the row, or None."""
    first = next(k for k, s in enumerate(body) if mentions(s, d, 1))
    s = body[first]
    if isinstance(s, ast.AugAssign) and len(_row_of(s.target, d, i)) == 1:
        return [*body[:first], _assigned(s), *body[first + 1:]]
    inner = next((k for k, x in enumerate(body) if isinstance(x, ast.For)
                  and mentions(x, d, 1)), None)
    if inner is None:
        return None
    early = [k for k in range(inner) if mentions(body[k], d, 1)]
    if not all(isinstance(body[k], ast.AugAssign) for k in early):
        return None  # (a nested block: ``_accumulations_only`` allows it, sinking does not)
    for k in early:  # each moves after the inner loop: nothing up to there may change it
        if (loaded_ids(body[k]) - {d}) & dataflow.binds_in(body[k + 1:inner + 1]) \
                or not _writes_only(body[k + 1:inner + 1], d):
            return None
    row = _row_once(body[inner], d, i)
    if row is None:
        return None
    rest = [x for k, x in enumerate(body[:inner]) if k not in early]
    at = _before_comments(rest, len(rest), 0)
    return [*rest[:at], *row[:-1], *rest[at:], row[-1], *(body[k] for k in early),
            *body[inner + 1:]]


def _writes_only(stmts: list[ast.stmt], d: str) -> bool:
    """``stmts`` write no array but ``d`` and tapes, and call nothing for its effect: an
    array a moved statement reads cannot change through a view of it."""
    for s in walk_stmts(stmts):
        if isinstance(s, ast.Expr) and not COMMENT.get(s):
            return False
        targets = s.targets if isinstance(s, ast.Assign) else \
            [s.target] if isinstance(s, ast.AugAssign) else []
        for t in targets:
            for e in t.elts if isinstance(t, ast.Tuple) else [t]:
                if isinstance(e, ast.Subscript) and not (
                        isinstance(e.value, ast.Name) and e.value.id == d):
                    return False
    return True


def _row_once(loop: ast.For, d: str, i: str) -> list[ast.stmt] | None:
    """``loop`` (over ``j``) writing ``d[i, j]`` once per iteration, with the rest of row
    ``i`` set to 0 before it, or None where ``loop`` is not the one accumulation
    ``d[i, j] += e`` at its top level over a whole span of ``j``."""
    span = _span(loop)
    if span is None or not plain_loop(loop) or mentions(loop.iter, d, 1):
        return None
    j = loop.target.id
    if any(j in dataflow.binds(s, elements=True) for s in walk_stmts(loop.body)):
        return None
    at = [k for k, s in enumerate(loop.body) if mentions(s, d, 1)]
    if len(at) != 1:
        return None
    s = loop.body[at[0]]
    idx = _row_of(s.target, d, i) if isinstance(s, ast.AugAssign) else None
    if idx is None or len(idx) != 2 or not (isinstance(idx[1], ast.Name) and idx[1].id == j):
        return None
    body = list(loop.body)
    body[at[0]] = _assigned(s)
    return _spanned(loop, body, span, d, i)


def _assigned(s: ast.AugAssign) -> ast.Assign:
    """``t = e`` for ``t += e``."""
    return ast.copy_location(ast.Assign(targets=[clone(s.target)], value=clone(s.value)), s)


__all__ = ["write_once"]
