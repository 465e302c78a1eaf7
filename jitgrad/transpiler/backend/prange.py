"""prange: ``numba.prange`` loops of ``parallel=True`` code stay parallel in both sweeps.

A loop the user wrote over ``numba.prange`` is differentiated as the range it iterates;
its forward loop and its reversed loop carry ``notes.PRANGE``.  When the user's
dispatcher has ``parallel=True``, each lowered variant is rewritten here:

1. **tapes** pushed once per iteration (or once per trip of an inner loop, or under an
   ``if`` and popped under it in the reversed loop) are written and read at slots of the
   iteration's own instead of through a shared cursor (``slots.py``);
2. **the check** (``analysis.dependence.independent``): each iteration writes only its own
   elements (``a[i]``, ``a[i, j]``), binds only iteration-local names or sums
   (``dk += ...`` stays a reduction Numba's parfor pass recognises); an adjoint scalar
   that is zero when each iteration starts is reset at the top of the body; buffers
   swapped each step (``du, dv = dv, du``) are distinct arrays (``distinct_buffers``);
3. a loop that passes becomes ``prange(lo, hi)`` (a reversed loop runs forward: its
   iterations are independent); one that fails runs serially, with a comment saying why.

A stencil's accumulations into ``dx[i + c]`` are made one write per element by the gather
pass (``gather.py``), whose main loop runs here in parallel.  Accumulations several
iterations make into one element otherwise (``dx[i + 1] += ...`` of a stencil the gather
form does not take, ``dw[j] += ...`` in a 2-D loop, ``dx[idx[i]] += ...``) go to
per-thread partial buffers (``_chunked``): the loop runs as one chunk of iterations per
thread, each adding into its own ``_dx_part[_c]`` and its own sums, added up after the
loop; the rewritten loop is checked again.  That costs one copy of the adjoint array per
thread and a pass to add them up.

Before (the reversed loop of ``s += k * math.sin(x[i])`` over ``prange(n)``)::

    for i in range(n - 1, -1, -1):
        _dt = ds
        _tape_t2n -= 1
        _t2 = _tape_t2[_tape_t2n]
        dk += _dt * _t2
        dx[i] += _dt * k * np.cos(x[i])

After::

    _tape_t2n -= max(n, 0)
    for i in prange(n):
        _dt = ds
        _t2 = _tape_t2[_tape_t2n + i]
        dk += _dt * _t2
        dx[i] += _dt * k * np.cos(x[i])
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import re
from typing import Any

import numpy as np

from ...rules.primitives import allocates
from ..analysis import dataflow
from ..analysis.dependence import Names, Verdict, independent
from ..analysis.effects import first_draw
from ..astutil import binop
from ..front.desugar import assign, const, name
from ..front.purity import called
from ..nodes import clone, own_expressions, replace_names, walk_stmts
from ..notes import DRAW, PRANGE, is_prange
from . import emit
from .gather import distinct_buffers
from .slots import bounds, minus, plus, slot_branch_tapes, slot_tapes, trip_count, where


def _alone(n: str) -> frozenset[str]:
    """No analysis: each name its own buffer."""
    return frozenset({n})


class Parallel:
    """The rewrite of one specialisation's variants (see the module docstring)."""

    def __init__(self, u: Any, namer: Any = None):
        self.u = u
        #: the namer fresh names come from (``u``'s, or a copy of it: one per variant)
        self.namer = u.namer if namer is None else namer
        self.env = u.env
        # the adjoints (reverse mode) or tangents (forward mode) of the user's names
        self.derived = {**u.namer.adjoints(), **u.namer.tangents()}
        self.primal_of = {d: p for p, d in self.derived.items()}
        self.tapes = {t for t, _ in getattr(u.ir, "reused", ())}
        self.aliases = u.analysis.aliases if u.analysis is not None else _alone
        self.callables = set(getattr(u.ir, "callables", ()))
        self.prange = self._prange_name()
        #: loop id -> the tapes it writes at slots of its own by construction (_slot_inner)
        self.slotted: dict[int, set[str]] = {}

    def _prange_name(self) -> str:
        import numba

        if self.env.get("prange") is numba.prange and not self.namer.is_local("prange"):
            return "prange"
        n = "prange" if "prange" not in self.env and "prange" not in self.namer.taken \
            else self.namer.fresh("_prange")
        self.namer.reserve([n])
        self.namer.free.add(n)
        self.env[n] = numba.prange
        return n

    # --- facts the check needs -------------------------------------------------------

    def is_array(self, n: str) -> bool | None:
        k = self.u.kinds.get(n)
        if k is None and n in self.primal_of:
            k = self.u.kinds.get(self.primal_of[n])
        if k is not None:
            return k.is_array
        return True if n in self.tapes else None

    def group(self, a: str) -> set[str]:
        """The names that may hold ``a``'s array (or a view of it) when the loop runs:
        its alias group, without the names that always hold arrays of their own (two
        buffers swapped each step are never the same array)."""
        p = self.primal_of.get(a)
        if p is None:
            out = set(self.aliases(a))
        else:
            mine = self.namer.adjoints() if self.namer.adjoints().get(p) == a else \
                self.namer.tangents()
            out = {mine[q] for q in self.aliases(p) if q in mine}
        if a in self.distinct:
            out -= self.distinct
        return out | {a}

    def fresh(self, e: ast.expr) -> bool:
        if isinstance(e, ast.BinOp):
            return True
        # a call the table says allocates, through ``env`` or an array method (``x.copy()``)
        return isinstance(e, ast.Call) and allocates(called(e, self.env))

    def effect(self, call: ast.Call) -> bool:
        return isinstance(call.func, ast.Name) and call.func.id in self.callables

    def names(self, body: list[ast.stmt], loop: ast.For, block: list[ast.stmt],
              k: int) -> Names:
        def zero_before(n: str) -> bool:
            for s in reversed(block[:k]):
                if n in dataflow.binds_in([s]):
                    return isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name) \
                        and _is_zero(s.value)
            return False

        after = dataflow.Dataflow(body, env=self.env).live_after(loop)
        return Names(after, self.is_array, self.group, self.fresh, self.effect, zero_before,
                     local_arrays=self.local_arrays,
                     slotted=frozenset(self.slotted.get(id(loop), ())))

    #: may a parallel loop write into arrays it makes (not in generated code: numba#9529)
    local_arrays = False

    # --- the rewrite ------------------------------------------------------------------

    def function(self, fn: ast.FunctionDef) -> ast.FunctionDef:
        """``fn`` with its prange loops parallel where safe (a copy; ``fn`` as it was)."""
        if not any(is_prange(s) for s in walk_stmts(fn.body)):
            return fn
        fn = clone(fn)
        self.distinct = distinct_buffers(fn.body, dict(getattr(self.u.ir, "shared", {})),
                                         self.env, copies=True)
        if _shadowed(self.env, "max") or _shadowed(self.env, "min"):
            return fn
        loops = [s for s in walk_stmts(fn.body) if is_prange(s)]
        slot_branch_tapes(fn.body, loops, self.env, self._global)
        for loop in loops:
            self.slotted[id(loop)] = slot_tapes(fn.body, loop, self.env, self._global)
        parallel: set[int] = set()
        for loop in loops:
            try:
                block, k, outer = where(fn.body, loop)
            except LookupError:
                continue  # in a loop made chunked: that one is parallel
            if outer & parallel:
                continue  # inside a loop already parallel: Numba runs it serially anyway
            lo_hi = bounds(loop)
            verdict = independent(loop, self.names(fn.body, loop, block, k)) \
                if lo_hi is not None else Verdict("its range does not step by 1", loop)
            if verdict.collisions and self._chunked(fn.body, loop, verdict, block, k):
                parallel.add(id(loop))
                continue
            if not verdict.ok:
                block.insert(k, emit.comment(f"prange loop over {loop.target.id} runs "
                                             f"serially: {verdict.reason}"))
                continue
            lo, hi = lo_hi
            args = [hi] if isinstance(lo, ast.Constant) and lo.value == 0 else [lo, hi]
            after = dataflow.Dataflow(fn.body, env=self.env).live_after(loop)
            loop.iter = ast.Call(func=name(self.prange), args=args, keywords=[])
            loop.body = [assign(z, const(0.0)) for z in verdict.zeroed] + loop.body
            block[k + 1:k + 1] = [assign(z, const(0.0)) for z in verdict.zeroed if z in after]
            parallel.add(id(loop))
        return fn

    def _chunked(self, body: list[ast.stmt], loop: ast.For, verdict: Verdict,
                 block: list[ast.stmt], k: int) -> bool:
        """Run ``loop`` as chunks of iterations, in parallel, its sums going to scalars of
        each chunk's own, added up after it.  The arrays several iterations add into
        (``verdict.collisions``) are added into directly where each is reached only at
        ``a[i + c, ...]`` for constants ``c`` (``_reach``): the even chunks run at once,
        then the odd ones, each at least as long as the reach is wide, so no two chunks that
        run together share an element.  Otherwise each chunk (one per thread) accumulates
        them in a partial buffer of its own, added up after the loop.  The rewritten loop is
        checked again; False (nothing changed) where it would not be independent either."""
        namer = self.namer
        lo, _ = bounds(loop)
        i = loop.target.id
        reach = _reach(loop.body, verdict.collisions, i)
        if reach and isinstance(lo, ast.Constant) and lo.value + reach[0] < 0:
            reach = None  # (an index wraps below 0: any chunk may reach the last elements)
        c = _Chunks(namer, reach, verdict)
        pre = self._chunk_count(loop, c)
        if pre is None:
            return False
        inner = c.inner(loop.body)
        run = ast.For(target=name(i, True), iter=ast.Call(func=name("range"), args=[
            c.start(lo, name(c.c)), c.start(lo, binop(name(c.c), ast.Add(), const(1)))],
            keywords=[]), body=inner, orelse=[])
        par, outer = self._chunk_loops(c, run)
        new = [self._chunk_note(i, c, verdict), *pre, outer, *c.adding()]
        block[k:k + 1] = new
        after = dataflow.Dataflow(body, env=self.env).live_after(par)
        # (the chunk's iterations i are no other chunk's: i tells chunks apart like _c; the
        # arrays added into directly are another phase's where chunks meet)
        names = self.names(body, par, *((outer.body, 0) if reach else (block, k + 1 + len(
            pre))))
        names = dataclasses.replace(names, indices=(i, c.c), slotted=names.slotted | frozenset(
            verdict.collisions if reach else ()))
        check = independent(par, names)
        if not check.ok or any(n in after for n in (i, c.c, *c.mine.values())):
            block[k:k + len(new)] = [loop]  # (as it was: the caller says why it is serial)
            return False
        block[k + len(new):k + len(new)] = [assign(z, const(0.0)) for z in verdict.zeroed
                                            if z in after]
        return True

    def _chunk_count(self, loop: ast.For, c: _Chunks) -> list[ast.stmt] | None:
        """The statements before the parallel loop: the trip and chunk counts, each
        collision's partial buffer and each sum's per-chunk array (None: a sum of a kind
        such an array could not hold)."""
        lo, hi = bounds(loop)
        threads = ast.Call(func=name(self._global("get_num_threads",
                                                  _numba().get_num_threads)),
                           args=[], keywords=[])
        pre: list[ast.stmt] = [assign(c.trips, trip_count(lo, hi))]
        if c.reach:  # 2 per thread, each spanning the reach; 1 where an index may wrap
            low, width = c.reach
            many = binop(const(2), ast.Mult(), threads)
            tests: list[ast.expr] = [] if isinstance(lo, ast.Constant) else [ast.Compare(
                left=plus(clone(lo), const(low)) if low > 0 else minus(lo, const(-low)),
                ops=[ast.GtE()], comparators=[const(0)])]
            tests.append(ast.Compare(left=name(c.trips), ops=[ast.GtE()], comparators=[
                binop(many, ast.Mult(), const(width))]))
            pre.append(assign(c.chunks, ast.IfExp(test=tests[0] if len(tests) == 1 else
                                                  ast.BoolOp(op=ast.And(), values=tests),
                                                  body=clone(many), orelse=const(1))))
        else:
            pre.append(assign(c.chunks, ast.Call(func=name("min"), args=[threads, ast.Call(
                func=name("max"), args=[name(c.trips), const(1)], keywords=[])], keywords=[])))
        npn = self._global("np", np)
        for a, part in c.parts.items():
            shape = binop(ast.Tuple(elts=[name(c.chunks)], ctx=ast.Load()), ast.Add(),
                          ast.Attribute(value=name(a), attr="shape", ctx=ast.Load()))
            pre.append(assign(part, _np_call(npn, "zeros", [shape, ast.Attribute(
                value=name(a), attr="dtype", ctx=ast.Load())])))
        # each chunk's sums go to an array, added up after the loop (a parfor reduction of
        # a sum updated under an ``if`` in the chunk's loop trips Numba's reduction analysis)
        for n, arr in c.sums.items():
            kind = self.u.kinds.get(self.primal_of.get(n, n))
            if kind is None or kind.cls not in "fc":
                return None
            make = "zeros" if c.family[n] == "+" else "ones"
            dtype = ast.Attribute(value=name(npn), attr="complex128" if kind.cls == "c"
                                  else "float64", ctx=ast.Load())
            pre.append(assign(arr, _np_call(npn, make, [name(c.chunks), dtype])))
        return pre

    def _chunk_loops(self, c: _Chunks, run: ast.For) -> tuple[ast.For, ast.For]:
        """The parallel loop over chunks (``prange``) and the loop it stands in: itself, or
        the loop over the two phases (even chunks, then odd ones) where chunks meet."""
        head = [assign(m, const(0.0 if c.family[n] == "+" else 1.0))
                for n, m in c.mine.items()]
        tail = [ast.Assign(targets=[ast.Subscript(value=name(c.sums[n]), slice=name(c.c),
                                                  ctx=ast.Store())], value=name(m))
                for n, m in c.mine.items()]
        count: ast.expr = name(c.chunks)
        if c.reach:  # chunk _c = 2 * _half + _phase
            head.insert(0, assign(c.c, binop(binop(const(2), ast.Mult(), name(c.half)),
                                             ast.Add(), name(c.phase))))
            count = binop(binop(binop(name(c.chunks), ast.Sub(), name(c.phase)), ast.Add(),
                                const(1)), ast.FloorDiv(), const(2))
        par = ast.For(target=name(c.half if c.reach else c.c, True), iter=ast.Call(
            func=name(self.prange), args=[count], keywords=[]),
            body=[*head, run, *tail], orelse=[])
        PRANGE.set(par, True)  # (a prange loop for the steps after this one: ``is_prange``)
        outer = ast.For(target=name(c.phase, True), iter=ast.Call(func=name("range"), args=[
            const(2)], keywords=[]), body=[par], orelse=[]) if c.reach else par
        return par, outer

    @staticmethod
    def _chunk_note(i: str, c: _Chunks, verdict: Verdict) -> ast.stmt:
        if c.reach:
            return emit.comment(f"prange loop over {i}: chunks of iterations, the even ones "
                                f"at once, then the odd ones ({', '.join(verdict.collisions)}"
                                " added into directly: neighbouring chunks share elements)")
        return emit.comment(f"prange loop over {i}: one chunk of iterations per thread; "
                            f"{', '.join(c.parts)} accumulated per chunk, then added up")

    def _global(self, want: str, obj: Any) -> str:
        """A name the generated code reads ``obj`` through (bound in the environment)."""
        for n, v in self.env.items():
            if v is obj and not self.namer.is_local(n):
                return n
        n = want if want not in self.env and want not in self.namer.taken else \
            self.namer.fresh("_" + want)
        self.namer.reserve([n])
        self.namer.free.add(n)
        self.env[n] = obj
        return n

def _np_call(npn: str, fn: str, args: list[ast.expr]) -> ast.Call:
    return ast.Call(func=ast.Attribute(value=name(npn), attr=fn, ctx=ast.Load()), args=args,
                    keywords=[])


class _Chunks:
    """The names one chunked loop introduces, and the rewriting of its body and its end."""

    def __init__(self, namer: Any, reach: tuple[int, int] | None, verdict: Verdict) -> None:
        self.reach = reach
        self.trips, self.chunks, self.c = (namer.fresh(x) for x in ("_trips", "_chunks", "_c"))
        self.half, self.phase = (namer.fresh(x) for x in ("_half", "_phase")) if reach \
            else ("", "")
        self.parts = {} if reach else {a: namer.fresh(f"_{a.lstrip('_')}_part")
                                       for a in verdict.collisions}
        self.mine = {n: namer.fresh(f"_{n.lstrip('_')}_chunk") for n, _ in verdict.sums}
        self.family = dict(verdict.sums)
        self.sums = {n: namer.fresh(f"_{n.lstrip('_')}_sums") for n in self.mine}
        self.zeroed = verdict.zeroed

    def start(self, lo: ast.expr, m: ast.expr) -> ast.expr:
        """``lo + m * trips // chunks``: where chunk ``m`` starts."""
        return plus(lo, binop(binop(m, ast.Mult(), name(self.trips)), ast.FloorDiv(),
                              name(self.chunks)))

    def inner(self, body: list[ast.stmt]) -> list[ast.stmt]:
        """A chunk's iteration: collisions into its partial buffer, sums into its scalars."""
        inner = clone(body)
        for s in walk_stmts(inner):
            if isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Subscript) \
                    and isinstance(s.target.value, ast.Name) \
                    and s.target.value.id in self.parts:
                sl = s.target.slice
                elts = list(sl.elts) if isinstance(sl, ast.Tuple) else [sl]
                s.target = ast.Subscript(value=name(self.parts[s.target.value.id]),
                                         slice=ast.Tuple(elts=[name(self.c), *elts],
                                                         ctx=ast.Load()), ctx=ast.Store())
        holder = ast.Module(body=inner, type_ignores=[])
        mine = self.mine
        replace_names(holder, lambda n: ast.Name(id=mine[n.id], ctx=n.ctx) if n.id in mine
                      else n)
        return [assign(z, const(0.0)) for z in self.zeroed] + holder.body

    def adding(self) -> list[ast.stmt]:
        """After the loop: each partial buffer and per-chunk sum added up."""
        adds = [(a, part, ast.Add()) for a, part in self.parts.items()] + [
            (n, arr, ast.Add() if self.family[n] == "+" else ast.Mult())
            for n, arr in self.sums.items()]
        if not adds:
            return []
        return [ast.For(target=name(self.c, True), iter=ast.Call(
            func=name("range"), args=[name(self.chunks)], keywords=[]), body=[
                ast.AugAssign(target=name(a, True), op=op, value=ast.Subscript(
                    value=name(part), slice=name(self.c), ctx=ast.Load()))
                for a, part, op in adds], orelse=[])]


def _reach(body: list[ast.stmt], arrays: tuple[str, ...], i: str) -> tuple[int, int] | None:
    """(lowest ``c``, number of ``c`` values spanned) where every access of each of
    ``arrays`` in ``body`` is ``a[i + c, ...]`` for a constant ``c``; None otherwise."""
    found: list[int] = []
    for s in walk_stmts(body):
        for n in own_expressions(s):
            if isinstance(n, ast.Name) and n.id in arrays and not any(
                    isinstance(m, ast.Subscript) and m.value is n for m in own_expressions(s)):
                return None  # the array whole
            if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) \
                    and n.value.id in arrays:
                sl = n.slice
                c = dataflow.offset(sl.elts[0] if isinstance(sl, ast.Tuple) else sl, i)
                if c is None:
                    return None
                found.append(c)
    return (min(found), max(found) - min(found) + 1) if found else None


def _is_zero(e: ast.expr) -> bool:
    return isinstance(e, ast.Constant) and not isinstance(e.value, bool) and e.value == 0


def _numba() -> Any:
    import numba

    return numba


def _shadowed(env: dict[str, Any], b: str) -> bool:
    return b in env and env[b] is not getattr(builtins, b)


# --- the user's own loops ----------------------------------------------------------------


def primal_verdicts(u: Any) -> list[tuple[ast.For, Verdict]]:
    """Each outermost prange loop of the user's (normalized) body, and whether its
    iterations are independent in the primal."""
    body = [*u.body, ast.Return(value=ast.Tuple(elts=[clone(r) for r in u.returns],
                                                ctx=ast.Load()))]
    check = _PrimalCheck(u)
    check.distinct = distinct_buffers(body, {}, u.env, copies=True)
    out: list[tuple[ast.For, Verdict]] = []
    seen: set[int] = set()
    for loop in [s for s in walk_stmts(body) if is_prange(s)]:
        block, k, outer = where(body, loop)
        if outer & seen:
            continue
        seen.add(id(loop))
        out.append((loop, independent(loop, check.names(body, loop, block, k))
                    if bounds(loop) is not None else Verdict("its range does not step by 1",
                                                             loop)))
    return out


def refuse_races(u: Any) -> None:
    """Refuse a prange loop of the user's whose iterations are not independent in the
    primal (Numba runs it with a race: its result, and so its gradient, is undefined).
    Generated code differentiated again (``hvp``) was checked when it was made."""
    code = getattr(getattr(u.func, "__code__", None), "co_filename", "")
    if code.startswith("<jitgrad:"):
        return
    for loop, verdict in primal_verdicts(u):
        if not verdict.ok:
            raise u.parsed.error(
                f"the iterations of this prange loop are not independent: "
                f"{_user_words(u, verdict.reason)}", verdict.node or loop,
                "Numba runs prange iterations at once, so this loop races under "
                "parallel=True: write each array only at the loop index (out[i] = ...), sum "
                "into scalars with 's += ...', or use range (docs/supported.md)")


def refuse_parallel_draws(u: Any) -> None:
    """Under ``parallel=True``, refuse a random draw Numba runs on several threads: one in a
    prange loop, or an array of draws (``np.random.normal(0, 1, n)``, which Numba's parfor
    pass parallelises).  Each thread draws from its own generator, which
    ``np.random.seed`` does not seed, so no run (the function's, its gradient's, a
    rerun's) can draw the same numbers again."""
    def refuse(st: ast.stmt, where: str) -> None:
        call = first_draw([st], u.env)
        raise u.parsed.error(
            f"'{u.parsed.user_source(call.func)}(...)' draws random numbers {where} under "
            "parallel=True: Numba draws them on several threads, each from its own "
            "generator, which np.random.seed does not seed, so the gradient cannot see the "
            "draws the function made", st,
            "draw them one at a time in a range loop first (for i in range(n): z[i] = "
            "np.random.standard_normal()), then use z[i]; or pass the draws in as an "
            "argument, or compile without parallel=True")

    def visit(stmts: list[ast.stmt], in_prange: bool) -> None:
        for st in stmts:
            if isinstance(st, ast.For):
                visit(st.body, in_prange or is_prange(st))
            elif hasattr(st, "body"):
                visit(st.body, in_prange)
                visit(getattr(st, "orelse", []) or [], in_prange)
            elif DRAW.get(st):
                if in_prange:
                    refuse(st, "in a prange loop")
                t = st.targets[0] if isinstance(st, ast.Assign) else None
                if isinstance(t, ast.Name) and u.kinds.get(t.id) is not None \
                        and u.kinds[t.id].is_array:
                    refuse(st, "as an array")

    visit(u.body, False)


def loop_verdicts(u: Any) -> list[tuple[str, str]]:
    """(loop index, what the check found) for each outermost prange loop of the user's."""
    if not u.parallel:
        return [(loop.target.id, "runs serially (the function is not compiled with "
                 "parallel=True)") for loop in walk_stmts(u.body)
                if is_prange(loop)]
    return [(loop.target.id, "iterations independent" if v.ok else v.reason)
            for loop, v in primal_verdicts(u)]


class _PrimalCheck(Parallel):
    """``Parallel``'s facts for the user's normalized body (no IR yet, nothing renamed)."""

    def __init__(self, u: Any):  # (no prange name: nothing is rewritten)
        self.u = u
        self.env = u.env
        self.derived = {}
        self.primal_of = {}
        self.tapes = set()
        self.aliases = u.analysis.aliases if u.analysis is not None else _alone
        self.callables = set()
        self.slotted = {}

    local_arrays = True  # (the user's own arrays made in the loop: Numba's business)


def _user_words(u: Any, reason: str) -> str:
    """``reason`` with the names it quotes spelled as the user wrote them."""
    return re.sub(r"'([A-Za-z_][A-Za-z_0-9]*)'", lambda m: f"'{u.parsed.user_name(m.group(1))}'",
                  reason)


__all__ = ["Parallel", "bounds", "loop_verdicts", "primal_verdicts", "refuse_parallel_draws",
           "refuse_races"]
