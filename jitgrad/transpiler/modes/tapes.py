"""Tapes: what the adjoint of a statement reads, and whether to push, restore or recompute it.

A value is pushed only when something may redefine it before the adjoint runs;
cheap values (element reads of unwritten arrays, integer arithmetic, ``+ - * /``
and ``sqrt``/``abs`` of available values) are recomputed instead.  Scalars go to
typed arrays reserved once per loop; arrays to lists of snapshots.
"""

from __future__ import annotations

import ast

from ...kernels import helpers
from ...rules.primitives import cheap
from ..analysis.analyse import Analysis
from ..analysis.kinds import Kind
from ..astutil import all_defs, binop
from ..front.desugar import assign, const, name
from ..front.inline import rename, resolve
from ..nodes import clone, loaded_ids, stmt_defs, walk
from ..notes import BLOCK, PUSH


class TapeMixin:
    """Capture handling of the ``Reverser`` (see module docstring)."""

    def captures(self, s: ast.stmt, rev: list, outputs: set[str], fwd_before,
                 fwd_after, restored: set[str], compound: bool,
                 reads: set[str] | None = None) -> list[ast.stmt]:
        """Push what the adjoint of ``s`` reads that may change before the adjoint runs.

        ``rev`` is renamed in place where a value is popped into a fresh name; for a
        compound statement ``reads`` (its header's names) and ``rev`` (its header
        expressions) are given by the caller.
        """
        if reads is None:
            reads = loaded_ids(ast.Module(body=rev, type_ignores=[]))
        # values defined earlier first: a later one may then be recomputed from them
        reads = sorted(set(reads) & self.fwd_vars, key=lambda n: (self.an.first_pos(n), n))
        defined = set(stmt_defs(s)) if not compound else all_defs(s)
        pops: list[ast.stmt] = []
        mapping: dict[str, str] = {}
        for n in reads:
            if self.an.recomputed_index(n, s):
                continue
            is_out = n in outputs
            if is_out and n not in self.an.defs:
                # a rule's own value, made here: the next iteration makes it again
                need = bool(self.an.enclosing_loops(s))
            elif is_out:
                need = self.an.may_redefine_after(n, s, include_self=False)
            else:
                need = n in defined or self.an.may_redefine_after(n, s, include_self=compound)
                if need and n in restored and n not in defined and not compound:
                    need = False
            if not need:
                continue
            again = self.recompute(n, s, restored, post=is_out)
            if again is not None and sum(isinstance(x, (ast.BinOp, ast.Call))
                                         for x in walk(again)) > 16:
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
                  post: bool = False, at: ast.stmt | None = None,
                  depth: int = 0) -> ast.expr | None:
        """An expression giving ``n`` again in the adjoint of ``s``, instead of a tape.

        The value wanted is ``n`` just before ``at`` (default ``s``), or just after it
        when ``post`` (the statement's own output).  It is rebuilt from the one
        definition of ``n`` that reaches ``at`` (it dominates ``at`` in the same loop
        iteration), and only when every operand provably holds, in the adjoint of
        ``s``, the value it had at that definition.  Cheap definitions qualify: element
        reads of arrays that are never written, integer arithmetic, and ``+ - * /``
        of values that are themselves available.
        """
        at = s if at is None else at
        defs = self.an.defs.get(n, [])
        if len(defs) != 1 or not isinstance(defs[0], ast.Assign) \
                or not isinstance(defs[0].targets[0], ast.Name) or depth > 6:
            return None
        d = defs[0]
        if d is at:
            if not post:
                return None  # the value before a statement is not the one it makes
        elif not (self.an.enclosing_loops(d) == self.an.enclosing_loops(at)
                  and self.an.dominates(d, at)):
            return None
        v = d.value
        changed_by_d = set(stmt_defs(d))

        def operand(m: ast.expr) -> ast.expr | None:
            if isinstance(m, ast.Constant):
                return m
            if not isinstance(m, ast.Name) or m.id in changed_by_d:
                return None
            if self.an.recomputed_index(m.id, s) or not self.an.may_redefine_after(
                    m.id, d, include_self=False):
                return name(m.id)
            if (m.id in restored and BLOCK.get(d) == BLOCK.get(s)
                    and not self.an.defined_between(m.id, d, s) and m.id not in stmt_defs(s)):
                return name(m.id)  # a later statement restores it to its value here
            return self.recompute(m.id, s, restored, False, d, depth + 1)

        for m in walk(v):
            if isinstance(m, ast.Name) and m.id in changed_by_d:
                return None
        if int_arith(v, self.an):
            for m in walk(v):
                if isinstance(m, ast.Name) and m.id in self.env and m.id not in self.an.kinds:
                    continue  # the function name in len(x)
                if isinstance(m, ast.Name) and not (
                        self.an.recomputed_index(m.id, s)
                        or not self.an.may_redefine_after(m.id, d, include_self=False)):
                    return None
            return clone(v)
        if isinstance(v, ast.Subscript) and isinstance(v.value, ast.Name):
            base = v.value.id
            group = self.an.aliases.get(base, {base})
            if any(self.an.may_redefine_after(b, d, include_self=False) for b in group):
                return None
            for m in walk(v.slice):
                if isinstance(m, ast.Name) and not self.an.recomputed_index(m.id, s) \
                        and self.an.may_redefine_after(m.id, d, include_self=False):
                    return None
            return clone(v)
        if isinstance(v, ast.Call) and not self.an.kind(n).is_array and not v.keywords \
                and cheap(resolve(v.func, self.env)):
            args = [operand(a) for a in v.args]
            if all(a is not None for a in args):
                return ast.Call(func=clone(v.func), args=args, keywords=[])
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

    def new_tape(self, tape: str, n: str, s: ast.stmt, kind: Kind | None = None):
        """A tape for ``n`` pushed at ``s``: (push statements, pop(target) -> statements).

        Scalars go to a typed array with a cursor, reserved before the innermost
        range loop (one slot per iteration) or grown at the push elsewhere; arrays
        and values of unknown kind go to a list.  ``kind`` is ``n``'s kind where ``n`` is
        the pass's own (a trip counter), not one the analysis knows.
        """
        k = kind or self.an.kind(n)
        dtype = {"f": "float64", "i": "int64", "b": "bool_"}.get(k.cls) if k.ndim == 0 else None
        if dtype is None:
            self.tapes.append((tape, None))
            val = name(n)
            # a rule's own value (not in the kinds) may be the very array the statement
            # binds to a name that is written in place later
            shared = n not in self.an.kinds and bool(set(stmt_defs(s)) & self.an.written)
            if (k.is_array and n in self.an.written) or shared:
                snap = self.global_name("snapshot", helpers.snapshot)
                val = ast.Call(func=name(snap), args=[val], keywords=[])
            push = [ast.Expr(value=ast.Call(func=ast.Attribute(value=name(tape), attr="append",
                                                               ctx=ast.Load()),
                                            args=[val], keywords=[]))]
            PUSH.set(push[0], True)
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
                name(tape), name(cur), const(1)], keywords=[])))
        push.append(ast.Assign(targets=[ast.Subscript(value=name(tape), slice=name(cur),
                                                      ctx=ast.Store())], value=name(n)))
        push.append(ast.AugAssign(target=name(cur, True), op=ast.Add(), value=const(1)))
        for p in push:
            PUSH.set(p, True)

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
            trips = clone(stop) if isinstance(start, ast.Constant) and start.value == 0 \
                else binop(clone(stop), ast.Sub(), clone(start))
        else:
            tc = self.global_name("trip_count", helpers.trip_count)
            trips = ast.Call(func=name(tc), args=[clone(start), clone(stop),
                                                  clone(step)], keywords=[])
        res = self.global_name("tape_reserve", helpers.tape_reserve)
        out = [assign(t, ast.Call(func=name(res), args=[name(t), name(c), clone(trips)],
                              keywords=[])) for t, c in entries]
        for x in out:
            PUSH.set(x, True)
        return out

    def header_captures(self, s, header: list[ast.expr], restored, before, after):
        """Captures of a compound statement's header expressions (renamed in place)."""
        reads = set()
        for h in header:
            reads |= {n.id for n in walk(h) if isinstance(n, ast.Name)}
        holder = list(header)
        pops = self.captures(s, holder, set(), before, after, restored, True, reads)
        return pops, holder

    # --- blocks ------------------------------------------------------------------


def shape_query(v: ast.expr) -> bool:
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


def int_arith(v: ast.expr, an: Analysis) -> bool:
    """Cheap integer arithmetic on names and constants (recomputed rather than taped)."""
    if shape_query(v):
        return True
    if not isinstance(v, (ast.BinOp, ast.UnaryOp, ast.Name)):
        return False
    for m in walk(v):
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


