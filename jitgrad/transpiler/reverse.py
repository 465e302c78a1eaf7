"""Reverse: build the forward sweep and the adjoint sweep of a normalized body.

Store on overwrite, restore in reverse: a value the adjoint reads is pushed on a
tape only if something may redefine it before the adjoint runs (a later
statement, or the next iteration of a loop around both); loop indices are
recomputed by running the loop backwards, never pushed.  Rules are inlined from
their templates: forward part into the forward sweep, pullback into the adjoint.
"""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass, field

from ..rules import is_non_differentiable, lookup
from ..runtime import helpers
from ..runtime.hooks import hook, nobacksies
from .analyse import (
    Analysis,
    flat_body,
    is_permutation,
    operand_names,
    primitive_of,
    walk_stmts,
)
from .desugar import assign, const, name
from .inline import rename, resolve
from .kinds import INT
from .naming import Namer, loaded_names
from .parse import Parsed
from .template import instantiate, template_of


@dataclass
class Sweeps:
    """The pieces of the generated gradient function."""

    prologue: list[ast.stmt]
    forward: list[ast.stmt]
    init: list[ast.stmt]
    adjoint: list[ast.stmt]
    grads: list[str]
    tapes: list[str] = field(default_factory=list)
    restored: set[str] = field(default_factory=set)
    callables: set[str] = field(default_factory=set)


def _binop(a: ast.expr, op: ast.operator, b: ast.expr) -> ast.expr:
    return ast.BinOp(left=a, op=op, right=b)


class _Simplify(ast.NodeTransformer):
    """Fold constants and drop no-op unbroadcast calls in inlined pullbacks."""

    def __init__(self, scalar: set[str], unb: str):
        self.scalar = scalar
        self.unb = unb

    def visit_Call(self, node):
        self.generic_visit(node)
        if (isinstance(node.func, ast.Name) and node.func.id == self.unb and len(node.args) == 2
                and isinstance(node.args[1], ast.Name) and node.args[1].id in self.scalar
                and getattr(node, "_jg_scalar_result", False)):
            return node.args[0]
        return node

    def visit_BinOp(self, node):
        self.generic_visit(node)
        a, b = node.left, node.right
        if isinstance(a, ast.Constant) and isinstance(b, ast.Constant) \
                and isinstance(a.value, (int, float)) and isinstance(b.value, (int, float)):
            try:
                return ast.Constant(value=eval(compile(ast.Expression(node), "", "eval")))
            except Exception:
                return node
        if isinstance(node.op, ast.Pow) and isinstance(b, ast.Constant) and b.value == 1:
            return a
        if isinstance(node.op, ast.Mult):
            if isinstance(b, ast.Constant) and b.value == 1 and not isinstance(b.value, bool):
                return a
            if isinstance(a, ast.Constant) and a.value == 1 and not isinstance(a.value, bool):
                return b
        return node


class Reverser:
    """Generates both sweeps; see the module docstring."""

    def __init__(self, parsed: Parsed, an: Analysis, env: dict, namer: Namer,
                 args: list[str], wrt: list[str], returns: list[ast.expr]):
        self.parsed = parsed
        self.an = an
        self.env = env
        self.namer = namer
        self.args = args
        self.wrt = wrt
        self.returns = returns
        self.tapes: list[str] = []
        self.fwd_vars: set[str] = set(args)
        self.touched: set[str] = set()
        self.restored_names: set[str] = set()
        self.loop_inits: dict[int, list[str]] = {}
        self.reserve: dict[int, list[tuple[str, str]]] = {}
        self.callables: set[str] = set()
        self.loop_local: set[str] = set()
        self.unb = self.global_name("unbroadcast", helpers.unbroadcast)

    # --- names -------------------------------------------------------------------

    def global_name(self, n: str, obj) -> str:
        """Make ``obj`` reachable in the generated module, preferably as ``n``."""
        if n in self.env and self.env[n] is obj:
            return n
        if n not in self.env and n not in self.namer.taken:
            self.env[n] = obj
            self.namer.reserve([n])
            return n
        alt = self.namer.fresh("_" + n.lstrip("_"))
        self.env[alt] = obj
        return alt

    def adj(self, n: str) -> str:
        return self.namer.adjoint(n)

    def is_active(self, e) -> bool:
        return isinstance(e, ast.Name) and e.id in self.an.active

    def zero(self, n: str, like: str | None = None) -> ast.expr:
        """A zero adjoint for variable ``n``, shaped like ``like`` (default ``n``)."""
        k = self.an.kind(n)
        if not k.is_array:
            return const(0.0)
        like = like or n
        if k.ndim is not None and k.cls == "f":
            np_name = self.global_name("np", __import__("numpy"))
            return ast.Call(func=ast.Attribute(value=name(np_name), attr="zeros_like",
                                               ctx=ast.Load()), args=[name(like)], keywords=[])
        zl = self.global_name("zeros_like", helpers.zeros_like)
        return ast.Call(func=name(zl), args=[name(like)], keywords=[])

    # --- contributions -----------------------------------------------------------

    def contribute(self, var: str, expr: ast.expr, out: list[ast.stmt], sign: int = 1) -> None:
        """Add ``expr`` to the adjoint of ``var`` (assign on first touch if local)."""
        if var not in self.an.active:
            return
        d = self.adj(var)
        k = self.an.kind(var)
        if self.an.modes.get(var) == "local" and d not in self.touched:
            self.touched.add(d)
            if sign < 0:
                expr = ast.UnaryOp(op=ast.USub(), operand=expr)
            elif k.is_array and isinstance(expr, (ast.Name, ast.Subscript)):
                if k.ndim is None:
                    snap = self.global_name("snapshot", helpers.snapshot)
                    expr = ast.Call(func=name(snap), args=[expr], keywords=[])
                else:
                    expr = ast.Call(func=ast.Attribute(value=expr, attr="copy", ctx=ast.Load()),
                                    args=[], keywords=[])
            out.append(assign(d, expr))
            return
        op = ast.Add() if sign > 0 else ast.Sub()
        if self.an.modes.get(var) == "local" and k.is_array:
            out.append(assign(d, _binop(name(d), op, expr)))
        else:
            out.append(ast.AugAssign(target=name(d, True), op=op, value=expr))

    def available(self, var: str) -> bool:
        """Has the adjoint of ``var`` been given a value on every path so far?"""
        if self.an.modes.get(var) == "local":
            return self.adj(var) in self.touched
        return var in self.an.active

    def reset(self, var: str, s: ast.stmt, out: list[ast.stmt]) -> None:
        """Zero the adjoint of a redefined buffer variable (skipped where provably dead)."""
        if self.an.modes.get(var) != "buffer" or var in self.loop_local:
            return
        first = (var not in self.args and not self.an.enclosing_loops(s)
                 and all(d._jg_pos >= s._jg_pos for d in self.an.defs.get(var, [])))
        if first:
            return
        d = self.adj(var)
        out.append(assign(d, self.zero(var, d)))

    # --- captures ----------------------------------------------------------------

    def captures(self, s: ast.stmt, rev: list, outputs: set[str], fwd_before,
                 fwd_after, restored: set[str], compound: bool,
                 reads: set[str] | None = None) -> list[ast.stmt]:
        """Push what the adjoint of ``s`` reads that may change before the adjoint runs.

        ``rev`` is renamed in place where a value is popped into a fresh name; for a
        compound statement ``reads`` (its header's names) and ``rev`` (its header
        expressions) are given by the caller.
        """
        if reads is None:
            reads = loaded_names(ast.Module(body=rev, type_ignores=[]))
        # values defined earlier first: a later one may then be recomputed from them
        reads = sorted(set(reads) & self.fwd_vars, key=lambda n: (
            min((d._jg_pos for d in self.an.defs.get(n, [])), default=-1), n))
        defined = set(_own_defs(s)) if not compound else _all_defs(s)
        pops: list[ast.stmt] = []
        mapping: dict[str, str] = {}
        for n in reads:
            if self.an.recomputed_index(n, s):
                continue
            is_out = n in outputs
            if is_out:
                need = self.an.may_redefine_after(n, s, include_self=False)
            else:
                need = n in defined or self.an.may_redefine_after(n, s, include_self=compound)
                if need and n in restored and n not in defined and not compound:
                    need = False
            if not need:
                continue
            again = self.recompute(n, s, restored)
            if again is not None and sum(isinstance(x, (ast.BinOp, ast.Call))
                                         for x in ast.walk(again)) > 16:
                again = None  # cheaper to tape than to redo a big expression
            if again is not None:
                if not is_out and not compound and n not in defined:
                    pops.append(assign(n, again))  # restores n: earlier statements reuse it
                    restored.add(n)
                    self.restored_names.add(n)
                else:
                    fresh = self.namer.fresh("_" + n.lstrip("_") + "_")
                    mapping[n] = fresh
                    pops.append(assign(fresh, again))
                continue
            tape = self.namer.tape(n)
            push, pop = self.new_tape(tape, n, s)
            (fwd_after if is_out else fwd_before).extend(push)
            if not is_out and not compound and n not in defined:
                pops += pop(n)
                restored.add(n)
                self.restored_names.add(n)
            else:
                fresh = self.namer.fresh("_" + n.lstrip("_") + "_")
                mapping[n] = fresh
                pops += pop(fresh)
        if mapping:
            rev[:] = [rename(x, mapping) for x in rev]
        return pops

    def recompute(self, n: str, s: ast.stmt, restored: set[str] = frozenset(),
                  depth: int = 0) -> ast.expr | None:
        """An expression giving ``n`` again in the adjoint of ``s``, instead of a tape.

        Cheap definitions qualify: element reads of arrays that are never written,
        integer arithmetic, and ``+ - *`` of values that are themselves available.
        """
        defs = self.an.defs.get(n, [])
        if len(defs) != 1 or not isinstance(defs[0], ast.Assign) \
                or not isinstance(defs[0].targets[0], ast.Name) or depth > 6:
            return None
        d = defs[0]
        same = self.an.enclosing_loops(d) == self.an.enclosing_loops(s)
        if not (same and (d._jg_pos < s._jg_pos or d is s)):
            return None
        v = d.value

        def operand(m: ast.expr) -> ast.expr | None:
            if isinstance(m, ast.Constant):
                return m
            if not isinstance(m, ast.Name):
                return None
            if self.an.recomputed_index(m.id, s) or not self.an.may_redefine_after(
                    m.id, d, include_self=False):
                return name(m.id)
            if (m.id in restored and d._jg_block == s._jg_block
                    and not self.an.defined_between(m.id, d, s) and m.id not in _own_defs(s)):
                return name(m.id)  # a later statement restores it to its value here
            return self.recompute(m.id, s, restored, depth + 1)

        if _int_arith(v, self.an):
            for m in ast.walk(v):
                if isinstance(m, ast.Name) and m.id in self.env and m.id not in self.an.kinds:
                    continue  # the function name in len(x)
                if isinstance(m, ast.Name) and not (
                        self.an.recomputed_index(m.id, s)
                        or not self.an.may_redefine_after(m.id, d, include_self=False)):
                    return None
            return copy.deepcopy(v)
        if isinstance(v, ast.Subscript) and isinstance(v.value, ast.Name):
            base = v.value.id
            group = self.an.aliases.get(base, {base})
            if any(self.an.may_redefine_after(b, d, include_self=False) for b in group):
                return None
            for m in ast.walk(v.slice):
                if isinstance(m, ast.Name) and not self.an.recomputed_index(m.id, s) \
                        and self.an.may_redefine_after(m.id, d, include_self=False):
                    return None
            return copy.deepcopy(v)
        if isinstance(v, ast.Call) and not self.an.kind(n).is_array and not v.keywords \
                and resolve(v.func, self.env) in _CHEAP:
            args = [operand(a) for a in v.args]
            if all(a is not None for a in args):
                return ast.Call(func=copy.deepcopy(v.func), args=args, keywords=[])
        if isinstance(v, ast.BinOp) and isinstance(v.op, (ast.Add, ast.Sub, ast.Mult, ast.Div)) \
                and not self.an.kind(n).is_array:
            a, b = operand(v.left), operand(v.right)
            if a is not None and b is not None:
                return ast.BinOp(left=a, op=v.op, right=b)
        if isinstance(v, ast.UnaryOp) and isinstance(v.op, ast.USub) \
                and not self.an.kind(n).is_array:
            a = operand(v.operand)
            if a is not None:
                return ast.UnaryOp(op=v.op, operand=a)
        return None

    def new_tape(self, tape: str, n: str, s: ast.stmt):
        """A tape for ``n`` pushed at ``s``: (push statements, pop(target) -> statements).

        Scalars go to a typed array with a cursor, reserved before the innermost
        range loop (one slot per iteration) or grown at the push elsewhere; arrays
        and values of unknown kind go to a list.
        """
        k = self.an.kind(n)
        dtype = {"f": "float64", "i": "int64", "b": "bool_"}.get(k.cls) if k.ndim == 0 else None
        if dtype is None:
            self.tapes.append((tape, None))
            val = name(n)
            if k.is_array and n in self.an.written:
                snap = self.global_name("snapshot", helpers.snapshot)
                val = ast.Call(func=name(snap), args=[val], keywords=[])
            push = [ast.Expr(value=ast.Call(func=ast.Attribute(value=name(tape), attr="append",
                                                               ctx=ast.Load()),
                                            args=[val], keywords=[]))]
            push[0]._jg_push = True
            return push, lambda t: [assign(t, ast.Call(func=ast.Attribute(
                value=name(tape), attr="pop", ctx=ast.Load()), args=[], keywords=[]))]
        cur = self.namer.fresh(tape + "n")
        self.tapes.append((tape, (dtype, cur)))
        loops = self.an.enclosing_loops(s)
        push: list[ast.stmt] = []
        inner = loops[-1] if loops else None
        if isinstance(inner, ast.For) and not self._has_break(inner):
            self.reserve.setdefault(id(inner), []).append((tape, cur))
        else:
            res = self.global_name("tape_reserve", helpers.tape_reserve)
            push.append(assign(tape, ast.Call(func=name(res), args=[
                name(tape), _binop(name(cur), ast.Add(), const(1))], keywords=[])))
        push.append(ast.Assign(targets=[ast.Subscript(value=name(tape), slice=name(cur),
                                                      ctx=ast.Store())], value=name(n)))
        push.append(ast.AugAssign(target=name(cur, True), op=ast.Add(), value=const(1)))
        for p in push:
            p._jg_push = True

        def pop(t: str) -> list[ast.stmt]:
            return [ast.AugAssign(target=name(cur, True), op=ast.Sub(), value=const(1)),
                    assign(t, ast.Subscript(value=name(tape), slice=name(cur), ctx=ast.Load()))]

        return push, pop

    def reserves(self, loop: ast.For, start, stop, step) -> list[ast.stmt]:
        """Room on the typed tapes pushed once per iteration of ``loop``."""
        entries = self.reserve.get(id(loop), [])
        if not entries:
            return []
        if isinstance(step, ast.Constant) and step.value == 1:
            trips = copy.deepcopy(stop) if isinstance(start, ast.Constant) and start.value == 0 \
                else _binop(copy.deepcopy(stop), ast.Sub(), copy.deepcopy(start))
        else:
            tc = self.global_name("trip_count", helpers.trip_count)
            trips = ast.Call(func=name(tc), args=[copy.deepcopy(start), copy.deepcopy(stop),
                                                  copy.deepcopy(step)], keywords=[])
        res = self.global_name("tape_reserve", helpers.tape_reserve)
        out = [assign(t, ast.Call(func=name(res), args=[name(t), _binop(
            name(c), ast.Add(), copy.deepcopy(trips))], keywords=[])) for t, c in entries]
        for x in out:
            x._jg_push = True
        return out

    def header_captures(self, s, header: list[ast.expr], restored, before, after):
        """Captures of a compound statement's header expressions (renamed in place)."""
        reads = set()
        for h in header:
            reads |= {n.id for n in ast.walk(h) if isinstance(n, ast.Name)}
        holder = list(header)
        pops = self.captures(s, holder, set(), before, after, restored, True, reads)
        return pops, holder

    # --- blocks ------------------------------------------------------------------

    def block(self, stmts: list[ast.stmt], top: bool = False):
        fwd: list[ast.stmt] = []
        rev: list[ast.stmt] = []
        restored: set[str] = set()
        if top:
            seeds: list[ast.stmt] = []
            for k, r in enumerate(self.returns):
                if self.is_active(r):
                    seed = name("_dret") if len(self.returns) == 1 else ast.Subscript(
                        value=name("_dret"), slice=const(k), ctx=ast.Load())
                    self.contribute(r.id, seed, seeds)
            rev += seeds
        for s in reversed(stmts):
            restored -= _all_defs(s)
            f, r = self.stmt(s, restored)
            fwd[:0] = f
            rev += r
        return fwd, rev

    def stmt(self, s: ast.stmt, restored: set[str]):
        if isinstance(s, ast.If) and getattr(s, "_jg_checkpoint", False):
            return self.checkpoint_(s, restored)
        if isinstance(s, ast.If):
            return self.if_(s, restored)
        if isinstance(s, ast.For):
            return self.for_(s, restored)
        if isinstance(s, ast.While):
            return self.while_(s, restored)
        self.fwd_vars.update(_own_defs(s))
        if isinstance(s, ast.Assign):
            return self.assign(s, restored)
        if isinstance(s, ast.AugAssign):
            return self.aug(s, restored)
        return [s], []

    def finish(self, s, fwd_stmts, rev, outputs, restored, compound=False):
        before: list[ast.stmt] = []
        after: list[ast.stmt] = []
        pops = self.captures(s, rev, outputs, before, after, restored, compound)
        return before + fwd_stmts + after, pops + rev

    def assign(self, s: ast.Assign, restored):
        t = s.targets[0]
        v = s.value
        if is_permutation(s):
            tn = [e.id for e in t.elts]
            vn = [e.id for e in s.value.elts]
            act = [i for i, n in enumerate(tn) if n in self.an.active]
            if not act:
                return [s], []
            lhs = ast.Tuple(elts=[name(self.adj(vn[i]), True) for i in act], ctx=ast.Store())
            rhs = ast.Tuple(elts=[name(self.adj(tn[i])) for i in act], ctx=ast.Load())
            return [s], [ast.Assign(targets=[lhs], value=rhs)]
        if isinstance(t, ast.Subscript):
            return self.write(s, t, v, None, restored)
        prim = primitive_of(v, self.env)
        if prim is not None and prim[0] is nobacksies:
            if len(prim[1]) == 2 and self.is_active(prim[1][1]):
                msg = ast.unparse(prim[1][0])
                raise self.parsed.error(f"nobacksies: {msg}", s,
                                        "this value must not be differentiated through")
        if not isinstance(t, ast.Name) or t.id not in self.an.active:
            return self.forward_only(s, prim), []
        tgt = t.id
        rev: list[ast.stmt] = []
        if not self.available(tgt):
            return self.forward_only(s, prim), []
        dt = name(self.adj(tgt))
        if isinstance(v, ast.Constant) or not (set(_names(v)) & self.an.active) or (
                prim is not None and prim[0] is not None and is_non_differentiable(prim[0])):
            self.reset(tgt, s, rev)
            return self.finish(s, self.forward_only(s, prim), rev, set(), restored)
        if isinstance(v, ast.Name):
            if self.an.kind(tgt).is_array and (tgt in self.an.written or v.id in self.an.written):
                if v.id != tgt and not self.an.used_after(v.id, s) and \
                        v.id not in self.args:
                    # a move (e.g. a helper returning the array it filled): both names are
                    # one buffer, so their adjoints are one buffer too
                    rev.append(assign(self.adj(v.id), dt))
                    self.reset(tgt, s, rev)
                    return self.finish(s, [s], rev, set(), restored)
                raise self.parsed.error(
                    f"'{tgt} = {v.id}' makes two names share one array that is written in "
                    "place; jitgrad cannot follow that aliasing", s,
                    f"copy it: '{tgt} = {v.id}.copy()' (or swap with "
                    f"'{tgt}, {v.id} = {v.id}, {tgt}')")
            if v.id == tgt:
                return [s], []
            self.contribute(v.id, dt, rev)
            self.reset(tgt, s, rev)
            return self.finish(s, [s], rev, set(), restored)
        if isinstance(v, ast.Subscript) and self._fancy(v.slice):
            return self.call(s, tgt, v, restored)
        if isinstance(v, ast.Subscript):
            base = v.value.id
            if base not in self.an.active:
                self.reset(tgt, s, rev)
                return self.finish(s, [s], rev, set(), restored)
            self.check_index(v.slice, s)
            if base == tgt:
                raise self.parsed.error("'x = x[...]' rebinding an array to a part of itself "
                                        "is not supported", s, "use a new name")
            rev.append(ast.AugAssign(target=ast.Subscript(value=name(self.adj(base)),
                                                          slice=copy.deepcopy(v.slice),
                                                          ctx=ast.Store()),
                                     op=ast.Add(), value=dt))
            self.reset(tgt, s, rev)
            return self.finish(s, [s], rev, set(), restored)
        return self.call(s, tgt, v, restored)

    def forward_only(self, s: ast.Assign, prim) -> list[ast.stmt]:
        """The forward of a statement with no adjoint (rule forwards for non-library calls)."""
        if prim is None or prim[0] is None or _library(prim[0]):
            return [s]
        fn, args, kw = prim
        if fn is nobacksies and len(args) == 2:
            return [ast.copy_location(ast.Assign(targets=s.targets, value=args[1]), s)]
        rule = lookup(fn)
        if rule is None or not isinstance(s.targets[0], ast.Name):
            return [s]
        tpl = template_of(rule)
        inst = instantiate(tpl, args, kw, self.namer, self.global_name)
        self.note_callables(fn, inst)
        return self.forward_of(s, s.targets[0].id, s.value, fn, tpl, inst, operand_names(args))

    def note_callables(self, fn, inst) -> None:
        """Functions a hook will call in compiled code (the API compiles them with Numba)."""
        if fn is hook:
            f = inst.bound.get("fn")
            if isinstance(f, ast.Name):
                self.callables.add(f.id)

    def stash(self, tgt: str, operands: list[str], rev: list[ast.stmt]) -> ast.expr:
        """The incoming adjoint; copied aside when the statement also reads ``tgt``."""
        dt = name(self.adj(tgt))
        if tgt in operands:
            g = self.namer.fresh("_g")
            rev.append(assign(g, dt))
            return name(g)
        return dt

    def _fancy(self, idx: ast.expr) -> bool:
        """Indexing with an integer array (gradients of repeats must accumulate)."""
        direct = idx.elts if isinstance(idx, ast.Tuple) else [idx]
        return any(isinstance(d, ast.Name) and d.id in self.an.kinds
                   and self.an.kind(d.id).ndim != 0 and self.an.kind(d.id).cls in ("i", "o")
                   for d in direct)

    def check_index(self, idx: ast.expr, s: ast.stmt) -> None:
        direct = idx.elts if isinstance(idx, ast.Tuple) else [idx]
        for n in _walk_values(idx):
            if isinstance(n, ast.Name) and n.id in self.an.kinds:
                k = self.an.kind(n.id)
                if any(d is n for d in direct) and k.ndim != 0 and k.cls in ("i", "b", "o"):
                    raise self.parsed.error(
                        "indexing with an integer or boolean array is not supported in "
                        "differentiated element reads/writes", s,
                        "loop over the indices and read x[idx[k]] one element at a time")
                if n.id in self.an.active:
                    raise self.parsed.error("an index depends on a differentiated value", s)

    def call(self, s: ast.Assign, tgt: str, v: ast.expr, restored):
        prim = primitive_of(v, self.env)
        if prim is None:
            raise self.parsed.error(f"cannot differentiate '{ast.unparse(v)}'", s,
                                    "split it into supported operations")
        fn, args, kw = prim
        label = ast.unparse(v.func) if isinstance(v, ast.Call) else type(v).__name__
        if fn is None or (lookup(fn) is None and not is_non_differentiable(fn)):
            raise self.parsed.error(
                f"no gradient rule for '{label}'", s,
                "register one with @jitgrad.grad_rule(func) (see docs/rules.md), or "
                "compute this value outside the differentiated function")
        for kv in kw.values():
            if set(_names(kv)) & self.an.active:
                raise self.parsed.error(f"keyword argument of '{label}' depends on a "
                                        "differentiated value", s,
                                        "pass differentiable values positionally")
        rule = lookup(fn)
        tpl = template_of(rule)
        inst = instantiate(tpl, args, kw, self.namer, self.global_name)
        operands = operand_names(args)
        self.note_callables(fn, inst)
        rev: list[ast.stmt] = []
        fwd = self.forward_of(s, tgt, v, fn, tpl, inst, operands)
        self.fwd_vars.update(inst.outputs)
        g = self.stash(tgt, operands, rev)
        stashed = tgt in operands
        if stashed:
            self.reset(tgt, s, rev)
        back = [rename(x, {inst.dy: g}) for x in inst.back]
        rev += back
        scalar_res = not self.an.kind(tgt).is_array
        scalars = {n for n in self.fwd_vars if not self.an.kind(n).is_array}
        for p, gexpr in zip(tpl.params, inst.grads, strict=False):
            if gexpr is None:
                continue
            a = inst.bound.get(p)
            gexpr = rename(gexpr, {inst.dy: g})
            for c in ast.walk(gexpr):
                if isinstance(c, ast.Call):
                    c._jg_scalar_result = scalar_res
            gexpr = _Simplify(scalars, self.unb).visit(gexpr)
            if isinstance(a, ast.Name) and a.id in self.an.active:
                self.contribute(a.id, gexpr, rev)
            elif isinstance(a, (ast.Tuple, ast.List)) and any(self.is_active(e) for e in a.elts):
                gt = self.namer.fresh("_g")
                rev.append(assign(gt, gexpr))
                for j, e in enumerate(a.elts):
                    if self.is_active(e):
                        self.contribute(e.id, ast.Subscript(value=name(gt), slice=const(j),
                                                            ctx=ast.Load()), rev)
        if not stashed:
            self.reset(tgt, s, rev)
        else:
            rev = _drop_self_identity(rev, g.id, self.adj(tgt))
        rev = _prune_unused(rev, inst)
        outputs = set(inst.outputs) | ({tgt} if tgt not in operands else set())
        return self.finish(s, fwd, rev, outputs, restored)

    def forward_of(self, s, tgt, v, fn, tpl, inst, operands) -> list[ast.stmt]:
        """Forward statements: the user's own call where the rule just computes it."""
        pre = list(inst.forward)
        value = inst.value
        call_kw = isinstance(v, ast.Call) and (v.keywords or len(v.args) + (
            1 if isinstance(v.func, ast.Attribute) and resolve(v.func, self.env) is None else 0)
            > len(tpl.positional))
        lib = _library(fn) and not call_kw
        if not lib:
            # a user primitive may not compile: run the rule's own forward code instead
            v = value
        if (pre and isinstance(value, ast.Name) and isinstance(pre[-1], ast.Assign)
                and isinstance(pre[-1].targets[0], ast.Name)
                and pre[-1].targets[0].id == value.id and tgt not in operands):
            out_name = value.id
            inst.back = [rename(x, {out_name: tgt}) for x in inst.back]
            inst.grads = [rename(g, {out_name: tgt}) if g is not None else None
                          for g in inst.grads]
            inst.outputs.discard(out_name)
            rhs = v if lib else pre[-1].value
            pre = pre[:-1]
            return [*pre, ast.copy_location(assign(tgt, rhs), s)]
        if pre:
            res = self.namer.fresh("_y")
            if isinstance(value, ast.Name) and value.id in inst.outputs:
                res = value.id
                return [*pre, ast.copy_location(assign(tgt, name(res)), s)]
            return [*pre, ast.copy_location(assign(tgt, v), s)]
        return [ast.copy_location(assign(tgt, v), s)]

    def write(self, s, t: ast.Subscript, v: ast.expr, op, restored):
        base = t.value.id
        if base not in self.an.active:
            return [s], []
        self.check_index(t.slice, s)
        rev: list[ast.stmt] = []
        view = ast.Subscript(value=name(self.adj(base)), slice=copy.deepcopy(t.slice),
                             ctx=ast.Load())
        if self.is_active(v):
            self.contribute(v.id, view, rev, sign=-1 if isinstance(op, ast.Sub) else 1)
        if op is None:
            rev.append(ast.Assign(targets=[ast.Subscript(value=name(self.adj(base)),
                                                         slice=copy.deepcopy(t.slice),
                                                         ctx=ast.Store())], value=const(0.0)))
        return self.finish(s, [s], rev, set(), restored)

    def aug(self, s: ast.AugAssign, restored):
        if isinstance(s.target, ast.Subscript):
            return self.write(s, s.target, s.value, s.op, restored)
        return [s], []

    # --- control flow ------------------------------------------------------------

    def checkpoint_(self, s: ast.If, restored):
        """A checkpointed region: forward without tapes; the reverse reruns it, then its adjoint.

        Only the region's inputs are taped (at entry); its own tapes live only while
        the reverse sweep handles this region.
        """
        bf, br = self.block(s.body)
        plain = _strip_pushes(copy.deepcopy(bf))
        if not br:
            return plain, []
        inside = _all_defs(s)
        self.restored_names |= inside  # the reverse sweep reruns the region
        for x in walk_stmts(s.body):
            t = x.targets[0] if isinstance(x, ast.Assign) else getattr(x, "target", None)
            if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and any(
                    not (s._jg_pos <= d._jg_pos <= s._jg_end)
                    for d in self.an.defs.get(t.value.id, [])
                    if not isinstance(d, ast.For)):
                raise self.parsed.error(
                    f"a checkpointed function writes into '{t.value.id}', an array from "
                    "outside it; rerunning it in the reverse sweep would write twice", x,
                    "let the checkpointed function allocate and return its result")
        reads = sorted(loaded_names(ast.Module(body=s.body, type_ignores=[])) & self.fwd_vars)
        before: list[ast.stmt] = []
        pops: list[ast.stmt] = []
        for n in reads:
            defs = self.an.defs.get(n, [])
            outside = n in self.args or any(not (s._jg_pos <= d._jg_pos <= s._jg_end)
                                            for d in defs)
            if not outside:
                continue
            if n in inside or self.an.may_redefine_after(n, s, include_self=True):
                push, pop = self.new_tape(self.namer.tape(n), n, s)
                before += push
                pops += pop(n)
                self.restored_names.add(n)
        return before + plain, pops + bf + br

    def if_(self, s: ast.If, restored):
        bf, br = self.block(s.body)
        of, orv = self.block(s.orelse)
        fwd = ast.copy_location(ast.If(test=s.test, body=bf or [ast.Pass()], orelse=of), s)
        if not br and not orv:
            return [fwd], []
        before: list[ast.stmt] = []
        after: list[ast.stmt] = []
        pops, (test,) = self.header_captures(s, [copy.deepcopy(s.test)], restored, before, after)
        rev = [ast.If(test=test, body=br or [ast.Pass()], orelse=orv)]
        return before + [fwd] + after, pops + rev

    def _has_break(self, s) -> bool:
        stack = list(s.body)
        while stack:
            n = stack.pop()
            if isinstance(n, ast.Break):
                return True
            if isinstance(n, (ast.For, ast.While)):
                continue
            stack.extend(x for x in ast.iter_child_nodes(n) if isinstance(x, ast.stmt))
        return False

    def inits_for(self, loop: ast.stmt) -> list[ast.stmt]:
        """Zero adjoints of arrays created afresh in each iteration of ``loop``."""
        return [assign(self.adj(n), self.zero(n)) for n in self.loop_inits.get(id(loop), [])]

    def for_(self, s: ast.For, restored):
        bf, br = self.block(s.body)
        if br:
            br = self.inits_for(s) + br
        i = s.target.id
        if not br:
            return [ast.copy_location(ast.For(target=s.target, iter=s.iter, body=bf,
                                              orelse=[]), s)], []
        counted = self._has_break(s)
        rng = s.iter.args
        start, stop, step = (const(0), rng[0], const(1)) if len(rng) == 1 else \
            (rng[0], rng[1], rng[2] if len(rng) > 2 else const(1))
        before: list[ast.stmt] = []
        after: list[ast.stmt] = []
        header = [copy.deepcopy(start), copy.deepcopy(stop), copy.deepcopy(step)]
        pops, (start, stop, step) = self.header_captures(s, header, restored, before, after)
        unit = isinstance(step, ast.Constant) and step.value == 1
        zero_start = isinstance(start, ast.Constant) and start.value == 0
        cnt = self.namer.fresh("_trips") if counted else None
        if cnt is None and unit:
            lo = const(-1) if zero_start else _binop(start, ast.Sub(), const(1))
            it = ast.Call(func=name("range"), args=[_binop(stop, ast.Sub(), const(1)), lo,
                                                    const(-1)], keywords=[])
            rev = [ast.For(target=name(i, True), iter=it, body=br, orelse=[])]
        else:
            if cnt is None:
                tc = self.global_name("trip_count", helpers.trip_count)
                n_expr = ast.Call(func=name(tc), args=[start, stop, step], keywords=[])
            else:
                n_expr = name(cnt)
            if zero_start and unit:
                it = ast.Call(func=name("range"), args=[_binop(n_expr, ast.Sub(), const(1)),
                                                        const(-1), const(-1)], keywords=[])
                rev = [ast.For(target=name(i, True), iter=it, body=br, orelse=[])]
            else:
                k = self.namer.fresh("_k")
                it = ast.Call(func=name("range"), args=[_binop(n_expr, ast.Sub(), const(1)),
                                                        const(-1), const(-1)], keywords=[])
                idx = assign(i, _binop(start, ast.Add(), _binop(name(k), ast.Mult(), step)))
                rev = [ast.For(target=name(k, True), iter=it, body=[idx, *br], orelse=[])]
        self.env.setdefault("range", range)
        body = bf
        if cnt is not None:
            body = [ast.AugAssign(target=name(cnt, True), op=ast.Add(), value=const(1)), *bf]
        loop = ast.copy_location(ast.For(target=s.target, iter=s.iter, body=body, orelse=[]), s)
        fa = s.iter.args
        f_start, f_stop, f_step = (const(0), fa[0], const(1)) if len(fa) == 1 else \
            (fa[0], fa[1], fa[2] if len(fa) > 2 else const(1))
        fwd = before + self.reserves(s, f_start, f_stop, f_step) + \
            ([assign(cnt, const(0))] if cnt else []) + [loop] + after
        if cnt is not None:
            return self._counted(s, fwd, pops + rev, cnt, restored)
        return fwd, pops + rev

    def while_(self, s: ast.While, restored):
        bf, br = self.block(s.body)
        if br:
            br = self.inits_for(s) + br
        if not br:
            return [ast.copy_location(ast.While(test=s.test, body=bf, orelse=[]), s)], []
        cnt = self.namer.fresh("_trips")
        body = [ast.AugAssign(target=name(cnt, True), op=ast.Add(), value=const(1)), *bf]
        loop = ast.copy_location(ast.While(test=s.test, body=body, orelse=[]), s)
        k = self.namer.fresh("_k")
        rev = [ast.For(target=name(k, True), iter=ast.Call(func=name("range"),
                                                           args=[name(cnt)], keywords=[]),
                       body=br, orelse=[])]
        self.env.setdefault("range", range)
        return self._counted(s, [assign(cnt, const(0)), loop], rev, cnt, restored)

    def _counted(self, s, fwd, rev, cnt, restored):
        """Push a loop's trip counter after the loop when an outer loop reruns it."""
        if self.an.enclosing_loops(s):
            self.an.kinds[cnt] = INT
            push, pop = self.new_tape(self.namer.tape(cnt), cnt, s)
            return fwd + push, pop(cnt) + rev
        return fwd, rev


def _names(e: ast.AST) -> list[str]:
    return [n.id for n in ast.walk(e) if isinstance(n, ast.Name)]


def _own_defs(s: ast.stmt) -> list[str]:
    from .analyse import _stmt_defs

    return _stmt_defs(s)


def _all_defs(s: ast.stmt) -> set[str]:
    from .analyse import _stmt_defs, walk_stmts

    out = set(_stmt_defs(s))
    for f in ("body", "orelse"):
        for x in walk_stmts(getattr(s, f, []) or []):
            out.update(_stmt_defs(x))
    return out


def _strip_pushes(stmts: list[ast.stmt]) -> list[ast.stmt]:
    """The forward statements without tape pushes (for a checkpointed region)."""
    out = []
    for s in stmts:
        if getattr(s, "_jg_push", False):
            continue
        for f in ("body", "orelse"):
            sub = getattr(s, f, None)
            if sub:
                setattr(s, f, _strip_pushes(sub) or [ast.Pass()])
        out.append(s)
    return out


def _walk_values(e: ast.AST):
    """Nodes of ``e`` whose values matter (not inside len(...), x.shape and other queries)."""
    stack = [e]
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, (ast.Call, ast.Attribute)):
            continue
        stack.extend(ast.iter_child_nodes(n))


def _library(fn) -> bool:
    import numpy as np

    if fn is np.matmul:  # Numba has '@' and np.dot but not np.matmul
        return False
    mod = (getattr(fn, "__module__", None) or "").split(".")[0]
    return isinstance(fn, np.ufunc) or mod in ("numpy", "math", "builtins", "_operator",
                                               "operator")


def _cheap_calls() -> set:
    import math

    import numpy as np

    return {np.sqrt, math.sqrt, np.abs, abs, math.fabs}


#: scalar functions cheap enough to recompute in the adjoint rather than tape
_CHEAP = _cheap_calls()


def _shape_query(v: ast.expr) -> bool:
    """``len(x)``, ``x.shape[k]``, ``x.size``: integers that depend only on a shape."""
    if isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id == "len" \
            and len(v.args) == 1 and isinstance(v.args[0], ast.Name):
        return True
    if isinstance(v, ast.Attribute) and v.attr in ("size", "ndim") \
            and isinstance(v.value, ast.Name):
        return True
    return (isinstance(v, ast.Subscript) and isinstance(v.value, ast.Attribute)
            and v.value.attr == "shape" and isinstance(v.value.value, ast.Name)
            and isinstance(v.slice, ast.Constant))


def _int_arith(v: ast.expr, an: Analysis) -> bool:
    """Cheap integer arithmetic on names and constants (recomputed rather than taped)."""
    if _shape_query(v):
        return True
    if not isinstance(v, (ast.BinOp, ast.UnaryOp, ast.Name)):
        return False
    for m in ast.walk(v):
        if isinstance(m, ast.Name):
            if an.kind(m.id).cls not in ("i", "b") or an.kind(m.id).is_array:
                return False
        elif isinstance(m, ast.Constant):
            if not isinstance(m.value, int):
                return False
        elif not isinstance(m, (ast.BinOp, ast.UnaryOp, ast.operator, ast.unaryop,
                                ast.expr_context)):
            return False
    return True


def propagate_copies(stmts: list[ast.stmt], protected: set[str]) -> list[ast.stmt]:
    """Drop ``a = b`` between adjoint names each assigned once: readers use ``b``."""
    counts: dict[str, int] = {}
    for n in ast.walk(ast.Module(body=stmts, type_ignores=[])):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            counts[n.id] = counts.get(n.id, 0) + 1
        elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
            counts[n.target.id] = counts.get(n.target.id, 0) + 2
    mapping: dict[str, str] = {}
    for n in ast.walk(ast.Module(body=stmts, type_ignores=[])):
        if (isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name)
                and isinstance(n.value, ast.Name)):
            a, b = n.targets[0].id, n.value.id
            if (a.startswith("_d") and a not in protected and counts.get(a) == 1
                    and (counts.get(b) == 1 or b == "_dret") and b.startswith(("_d", "d"))):
                mapping[a] = mapping.get(b, b)
    if not mapping:
        return stmts

    class Drop(ast.NodeTransformer):
        def visit_Assign(self, node):
            if isinstance(node.targets[0], ast.Name) and node.targets[0].id in mapping:
                return None
            return self.generic_visit(node)

        def visit_Name(self, node):
            if node.id in mapping:
                return ast.Name(id=mapping[node.id], ctx=node.ctx)
            return node

    out = [Drop().visit(x) for x in stmts]
    return [x for x in out if x is not None]


def _drop_self_identity(rev: list[ast.stmt], g: str, d: str) -> list[ast.stmt]:
    """``_g = dx; dx = 0.0; ...; dx += _g`` (``x = x + e``) -> use ``dx`` as it is."""
    if len(rev) < 3:
        return rev
    adds = [k for k, x in enumerate(rev) if isinstance(x, ast.AugAssign)
            and isinstance(x.op, ast.Add) and isinstance(x.target, ast.Name)
            and x.target.id == d and isinstance(x.value, ast.Name) and x.value.id == g]
    if len(adds) != 1:
        return rev
    middle = rev[2:adds[0]] + rev[adds[0] + 1:]
    writes = {n.id for x in middle for n in ast.walk(x)
              if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    if d in writes or g in writes:
        return rev
    return [rename(x, {g: d}) for x in middle]


def _prune_unused(rev: list[ast.stmt], inst) -> list[ast.stmt]:
    """Drop pullback temporaries that no contribution reads."""
    changed = True
    while changed:
        changed = False
        used = loaded_names(ast.Module(body=rev, type_ignores=[]))
        keep = []
        for x in rev:
            if (isinstance(x, ast.Assign) and isinstance(x.targets[0], ast.Name)
                    and x.targets[0].id.startswith("_") and x.targets[0].id not in used
                    and not x.targets[0].id.startswith("_d")):
                changed = True
                continue
            keep.append(x)
        rev = keep
    return rev


def reverse(parsed: Parsed, body: list[ast.stmt], an: Analysis, env: dict, namer: Namer,
            args: list[str], wrt: list[str], returns: list[ast.expr]) -> Sweeps:
    """Build the forward and adjoint sweeps (see module docstring)."""
    r = Reverser(parsed, an, env, namer, args, wrt, returns)
    r.fwd_vars |= set(an.defs)
    for n, m in an.modes.items():
        if m != "buffer" or n in args or n in an.top_defined or not an.kind(n).is_array:
            continue
        binds = [d for d in an.defs.get(n, []) if isinstance(d, ast.Assign)
                 and isinstance(d.targets[0], ast.Name)]
        loops = {id(an.enclosing_loops(d)[-1]) if an.enclosing_loops(d) else None
                 for d in binds}
        if len(loops) == 1 and None not in loops and all(
                an.enclosing_loops(d)[-1] is an.enclosing_loops(binds[0])[-1]
                and d in flat_body(an.enclosing_loops(d)[-1].body) for d in binds):
            r.loop_inits.setdefault(loops.pop(), []).append(n)
            r.loop_local.add(n)
    for n in args:
        namer.adjoint(n)
    fwd, rev = r.block(body, top=True)
    prologue = [assign(a, ast.Call(func=ast.Attribute(value=name(a), attr="copy",
                                                      ctx=ast.Load()), args=[], keywords=[]))
                for a in args if a in an.written]
    init: list[ast.stmt] = []
    buffers = sorted({n for n, m in an.modes.items() if m == "buffer"} | set(wrt),
                     key=lambda n: (n not in args, n))
    for n in buffers:
        if n in r.loop_local:
            continue
        k = an.kind(n)
        if k.is_array and n not in args and n not in an.top_defined:
            raise parsed.error(f"the array '{n}' carries a gradient but is first created "
                               "inside a loop or branch", None,
                               f"create '{n}' before the loop (e.g. '{n} = np.zeros(...)') "
                               "and fill it inside")
        init.append(assign(r.adj(n), r.zero(n)))
    rev = propagate_copies(rev, {r.adj(n) for n in an.modes if an.modes[n] == "buffer"})
    tapes: list[ast.stmt] = []
    np_name = r.global_name("np", __import__("numpy"))
    for t, typed in r.tapes:
        if typed is None:
            tapes.append(assign(t, ast.List(elts=[], ctx=ast.Load())))
        else:
            dtype, cur = typed
            tapes.append(assign(t, ast.Call(func=ast.Attribute(value=name(np_name), attr="empty",
                                                               ctx=ast.Load()),
                                            args=[const(0), ast.Attribute(
                                                value=name(np_name), attr=dtype,
                                                ctx=ast.Load())], keywords=[])))
            tapes.append(assign(cur, const(0)))
    return Sweeps(prologue + tapes, fwd, init, rev, [r.adj(w) for w in wrt],
                  [t for t, _ in r.tapes], r.restored_names, r.callables)
