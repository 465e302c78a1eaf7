"""Scalar adjoints known to be zero: a contribution into one is an assignment.

The reverse sweep zeroes a scalar adjoint after its last read (``dr = 0.0``) so that the
next contribution starts from zero; in a loop that makes the adjoint look carried from
trip to trip (``_dt += dout[j]; ...; _dt = 0.0``), which keeps the loop from running
ascending and from vectorising.  Where the adjoint is zero on every path reaching an
accumulation ``d += e`` -- zeroed before a loop and at the end of each trip, or in both
branches of an ``if`` -- the accumulation is ``d = e`` (``d -= e``: ``d = -(e)``), and the
zeroings whose zero nothing reads any more go with the dead code at lowering::

    _dt = 0.0                          _dt = 0.0
    for j in range(n - 1, -1, -1):     for j in range(n - 1, -1, -1):
        _dt += dout[j]                     _dt = dout[j]
        dx[j] += _dt * w                   dx[j] += _dt * w
        _dt = 0.0                          _dt = 0.0

The facts come from a forward walk of the structured statements: an assignment of the
constant zero makes a name known zero, any other binding unknown; an ``if`` keeps what
both branches keep; a loop keeps what its entry and the end of its body keep (iterated
to a fixed point, so a trip starts from what every trip ends with); a loop with a
``break``, ``continue`` or an ``else`` keeps only what nothing in it binds.  The value
each rewritten statement gives is the one it gave (``0.0 + e`` is ``e``, up to the sign
of a zero), so all rewrites hold at once.
"""

from __future__ import annotations

import ast

from ..analysis.dataflow import binds, binds_in, reads
from ..nodes import SIMPLE_STMTS, loaded_ids, walk_stmts


def known_zero_adds(stmts: list[ast.stmt], scalars: set[str], kept: set[str]
                    ) -> list[ast.stmt]:
    """``stmts`` with every accumulation into a scalar adjoint of ``scalars`` made where it
    is known zero turned into an assignment, and the zeroings of those adjoints whose zero
    nothing reads then dropped (in place; the module's docstring).  ``kept``: the names
    read after ``stmts`` (the gradients returned), besides every name not in ``scalars``."""
    zeroed = {t.id for s in walk_stmts(stmts) if _zeroing(s)
              for t in s.targets} & scalars
    if zeroed and any(_adds_into(s, zeroed) for s in walk_stmts(stmts)):
        facts = _Facts(zeroed)
        _Walk(facts, apply=True).block(stmts, set())
        _Live(facts, zeroed - kept).block(stmts, set())  # (none of them read after)
    return stmts


def _zeroing(s: ast.stmt) -> bool:
    """``s`` is ``name = 0.0`` (or ``0``)."""
    return isinstance(s, ast.Assign) and len(s.targets) == 1 \
        and isinstance(s.targets[0], ast.Name) and isinstance(s.value, ast.Constant) \
        and type(s.value.value) in (int, float) and s.value.value == 0


def _adds_into(s: ast.stmt, names: set[str]) -> bool:
    """``s`` is ``d += e`` or ``d -= e`` for ``d`` of ``names``, ``e`` not reading ``d``."""
    return isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name) \
        and s.target.id in names and isinstance(s.op, (ast.Add, ast.Sub)) \
        and s.target.id not in loaded_ids(s.value)


class _Facts:
    """Which of ``names`` a statement binds and reads (a statement with blocks other than
    ``if``/``for``/``while``: all under it), each statement walked once."""

    def __init__(self, names: set[str]):
        self.names = names
        self._memo: dict[int, tuple[set[str], set[str]]] = {}

    def of(self, s: ast.stmt) -> tuple[set[str], set[str]]:
        hit = self._memo.get(id(s))
        if hit is None:
            inner = [s] if s.__class__ in SIMPLE_STMTS else [
                s, *walk_stmts([b for f in ("body", "orelse", "handlers", "finalbody")
                                for b in getattr(s, f, None) or () if isinstance(b, ast.stmt)])]
            bound = {n for x in inner for n in binds(x)} & self.names
            read = {n for x in inner for n in reads(x)} & self.names
            hit = self._memo[id(s)] = (bound, read)
        return hit


class _Walk:
    """The forward walk: ``block`` returns the names known zero after a block, given those
    known zero before it; with ``apply``, it rewrites the accumulations it may."""

    def __init__(self, facts: _Facts, apply: bool):
        self.facts = facts
        self.apply = apply

    def block(self, stmts: list[ast.stmt], zero: set[str]) -> set[str]:
        for k, s in enumerate(stmts):
            if isinstance(s, ast.If):
                zero = self.block(s.body, set(zero)) & self.block(s.orelse, set(zero))
            elif isinstance(s, (ast.For, ast.While)):
                zero = self._loop(s, zero)
            elif _zeroing(s) and s.targets[0].id in self.facts.names:
                zero = zero | {s.targets[0].id}
            elif zero:
                if self.apply and _adds_into(s, zero):
                    stmts[k] = _assigned(s)
                zero = zero - self.facts.of(s)[0]
        return zero

    def _loop(self, s: ast.For | ast.While, zero: set[str]) -> set[str]:
        """What a loop keeps known zero; its body walked from what every trip starts with."""
        head = set(binds(s))
        if _jumps(s, (ast.Break, ast.Continue)):
            start = zero - binds_in(s.body, elements=False) - head
            self.block(s.body, set(start))
            return start
        start = zero - head
        dry = _Walk(self.facts, apply=False)
        while start:
            end = dry.block(s.body, set(start)) - head
            if start <= end:
                break
            start &= end
        if self.apply:
            self.block(s.body, set(start))
        return start


def _jumps(s: ast.For | ast.While, kinds: tuple[type, ...]) -> bool:
    """Does the loop ``s`` have an ``else`` or a statement of ``kinds`` in its body (a path
    that leaves a trip other than at its end): then the walks keep only what it never
    binds."""
    return bool(s.orelse) or any(isinstance(n, kinds) for n in walk_stmts(s.body))


def _assigned(s: ast.AugAssign) -> ast.Assign:
    """``d += e`` as ``d = e``; ``d -= e`` as ``d = -(e)``."""
    value = s.value if isinstance(s.op, ast.Add) else ast.UnaryOp(op=ast.USub(),
                                                                   operand=s.value)
    target = ast.Name(id=s.target.id, ctx=ast.Store())
    return ast.copy_location(ast.Assign(targets=[target], value=value), s)


class _Live:
    """A backward walk of which of ``names`` are live, dropping their zeroings nothing
    reads (``block`` returns those live before a block, given those live after it)."""

    def __init__(self, facts: _Facts, names: set[str], drop: bool = True):
        self.facts = facts
        self.names = names
        self.drop = drop

    def block(self, stmts: list[ast.stmt], live: set[str]) -> set[str]:
        had = bool(stmts)
        for k in range(len(stmts) - 1, -1, -1):
            s = stmts[k]
            if isinstance(s, ast.If):
                live = self.block(s.body, set(live)) | self.block(s.orelse, set(live)) \
                    | (loaded_ids(s.test) & self.names)
            elif isinstance(s, (ast.For, ast.While)):
                live = self._loop(s, live)
            elif isinstance(s, ast.Return):
                live = loaded_ids(s) & self.names
            elif self.drop and _zeroing(s) and s.targets[0].id in self.names \
                    and s.targets[0].id not in live:
                del stmts[k]
            else:
                bound, read = self.facts.of(s)
                live = (live - bound) | (read & self.names)
        if had and not stmts:
            stmts.append(ast.Pass())
        return live

    def _loop(self, s: ast.For | ast.While, after: set[str]) -> set[str]:
        """Which are live before a loop; its body's dead zeroings dropped with what is live
        at the end of a trip (what the next trip or the code after the loop reads)."""
        head = loaded_ids(s.iter if isinstance(s, ast.For) else s.test) & self.names
        if _jumps(s, (ast.Break, ast.Continue, ast.Return)):
            return after | head | self.facts.of(s)[1] & self.names
        live = after | head
        dry = _Live(self.facts, self.names, drop=False)
        while True:
            start = dry.block(list(s.body), set(live)) - set(binds(s))
            if start <= live:
                break
            live |= start
        self.block(s.body, set(live))
        return live
