"""The statement reverser: the forward and adjoint of one simple statement.

An assignment's adjoint passes the target's adjoint back to its operands: a copy, an
element read or write, a permutation of names, or a call whose rule is inlined from its
template (forward part into the forward sweep, pullback into the adjoint).  What the
adjoint reads that may change before it runs is captured by ``Tapes.captures``.
"""

from __future__ import annotations

import ast

from ...errors import RuleError
from ...kernels import helpers
from ...markers import hook, nobacksies
from ...rules import is_non_differentiable, lookup
from ...rules.primitives import is_library, zeros_shaped_like
from ..analysis import dataflow
from ..analysis.analyse import Analysis, is_permutation, operand_names, primitive_of
from ..analysis.kinds import of_value
from ..astutil import binop, names_of, walk_values
from ..backend.optimize import Simplify, drop_self_identity, prune_unused
from ..front.desugar import assign, const, name
from ..front.inline import rename, resolve
from ..front.split import SplitHelper
from ..nodes import clone, relocate, walk
from ..notes import POS
from .fused import ReciprocalSqrt, reciprocal_sqrt
from .tapes import Tapes
from .template import instantiate, template_of
from .unit import Part, Unit


class _Scalars:
    """The scalar names defined so far, as a membership test (not rebuilt per statement)."""

    def __init__(self, names: set[str], an: Analysis):
        self.names, self.an = names, an

    def __contains__(self, n: object) -> bool:
        return n in self.names and not self.an.kind(n).is_array


class Statements(Part):
    """Reverses simple statements (assignments, in-place element updates).  Its state:
    the local adjoints given a value so far (``touched``) and the functions hooks call
    (``callables``)."""

    def __init__(self, unit: Unit, tapes: Tapes, fwd_vars: set[str]):
        super().__init__(unit)
        self.tapes = tapes
        #: the names the forward sweep has defined so far (shared with the tapes)
        self.fwd_vars = fwd_vars
        self.touched: set[str] = set()
        self.callables: set[str] = set()
        #: the split helpers and their gradients the code calls (``front/split.py``)
        self.compiled: set[str] = set()
        #: arrays a split pullback zeroes for a gradient of its own (read nowhere else):
        #: an adjoint takes one without a copy
        self.owned: set[str] = set()
        self.unb = tapes.unb  # the generated module's name of ``unbroadcast``

    def simple(self, s: ast.stmt, restored: set[str]):
        """The forward and adjoint of a statement that is not compound."""
        self.fwd_vars.update(dataflow.binds(s, elements=True))
        back = self.tapes.planner.counters.inverse(s)
        if back is not None:  # a counter's step: the adjoint steps it back
            self.tapes.restores({s.targets[0].id})
            return [s], [back]
        if isinstance(s, ast.Assign):
            return self.assign(s, restored)
        if isinstance(s, ast.AugAssign):
            return self.aug(s, restored)
        return [s], []

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
            elif k.is_array and isinstance(expr, (ast.Name, ast.Subscript)) and not (
                    isinstance(expr, ast.Name) and expr.id in self.owned):
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
            out.append(assign(d, binop(name(d), op, expr)))
        else:
            out.append(ast.AugAssign(target=name(d, True), op=op, value=expr))

    def adjoint_view(self, n: str) -> ast.stmt:
        """``dr = dA[i]`` for the view ``r = A[i]``: writes through either reach both."""
        base, made = self.an.views[n]
        return assign(self.adj(n), rename(clone(made.value), {base: self.adj(base)}))

    def available(self, var: str) -> bool:
        """Has the adjoint of ``var`` been given a value on every path so far?"""
        if self.an.modes.get(var) == "local":
            return self.adj(var) in self.touched
        return var in self.an.active

    def reset(self, var: str, s: ast.stmt, out: list[ast.stmt]) -> None:
        """Zero the adjoint of a redefined buffer variable (skipped where provably dead)."""
        if self.an.modes.get(var) != "buffer":
            return
        if var in self.an.block_local and s is min(
                (d for d in self.an.defs.get(var, []) if isinstance(d, ast.Assign)
                 and isinstance(d.targets[0], ast.Name)), key=lambda d: POS.get(d)):
            return  # the block's first binding: zeroed where the sweep enters the block
        first = (var not in self.args and not self.an.enclosing_loops(s)
                 and all(POS.get(d) >= POS.get(s) for d in self.an.defs.get(var, [])))
        if first:
            return
        d = self.adj(var)
        out.append(assign(d, self.zero(var, d)))

    def finish(self, s, fwd_stmts, rev, outputs, restored):
        """A simple statement's forward (with pushes) and adjoint (with pops)."""
        before: list[ast.stmt] = []
        after: list[ast.stmt] = []
        pops = self.tapes.captures(s, rev, outputs, before, after, restored, False)
        return before + fwd_stmts + after, pops + rev

    def assign(self, s: ast.Assign, restored):
        t = s.targets[0]
        v = s.value
        if isinstance(t, ast.Name) and self.an.modes.get(t.id) == "view":
            return [s], []  # its adjoint is a view of the base's: nothing to pass back
        if is_permutation(s):
            return self.permutation(s)
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
        if isinstance(v, ast.Constant) or not (set(names_of(v)) & self.an.active) or (
                prim is not None and prim[0] is not None and is_non_differentiable(prim[0])):
            self.reset(tgt, s, rev)
            return self.finish(s, self.forward_only(s, prim), rev, set(), restored)
        if isinstance(v, ast.Name):
            if v.id == tgt:
                return [s], []
            # an array copy whose names both see later writes has an adjoint view (analyse);
            # any other (a move, or writes neither name sees while the other is used) adds up
            self.contribute(v.id, dt, rev)
            self.reset(tgt, s, rev)
            return self.finish(s, [s], rev, set(), restored)
        if isinstance(v, ast.Subscript) and self._fancy(v.slice):
            return self.call(s, tgt, v, restored)
        if isinstance(v, ast.Subscript):
            return self.element_read(s, tgt, v, restored)
        chain = reciprocal_sqrt(s, tgt, self.an, self.env)
        if chain is not None:
            return self.reciprocal_sqrt(s, tgt, chain, restored)
        return self.call(s, tgt, v, restored)

    def permutation(self, s: ast.Assign):
        """``a, b = b, a`` or new names for old values: the adjoints follow the values."""
        t = s.targets[0]
        tn = [e.id for e in t.elts]
        vn = [e.id for e in s.value.elts]
        act = [i for i, n in enumerate(tn) if n in self.an.active]
        if not act:
            return [s], []
        if sorted(tn) == sorted(vn):  # a swap: the adjoints swap too
            lhs = ast.Tuple(elts=[name(self.adj(vn[i]), True) for i in act],
                            ctx=ast.Store())
            rhs = ast.Tuple(elts=[name(self.adj(tn[i])) for i in act], ctx=ast.Load())
            return [s], [ast.Assign(targets=[lhs], value=rhs)]
        # new names for old values (versions): take the targets' adjoints, then pass
        # each to the value it came from
        rev: list[ast.stmt] = []
        held = []
        for i in act:
            g = self.namer.fresh("_g")
            rev.append(assign(g, name(self.adj(tn[i]))))
            held.append((i, g))
        for i, _ in held:
            self.reset(tn[i], s, rev)
        for i, g in held:
            self.contribute(vn[i], name(g), rev)
        return [s], rev

    def element_read(self, s: ast.Assign, tgt: str, v: ast.Subscript, restored):
        """``t = A[i]``: ``dA[i] += dt``."""
        rev: list[ast.stmt] = []
        dt = name(self.adj(tgt))
        base = v.value.id
        if base not in self.an.active:
            self.reset(tgt, s, rev)
            return self.finish(s, [s], rev, set(), restored)
        self.check_index(v.slice, s)
        if base == tgt:
            raise self.parsed.error("'x = x[...]' rebinding an array to a part of itself "
                                    "is not supported", s, "use a new name")
        rev.append(ast.AugAssign(target=ast.Subscript(value=name(self.adj(base)),
                                                      slice=clone(v.slice),
                                                      ctx=ast.Store()),
                                 op=ast.Add(), value=dt))
        self.reset(tgt, s, rev)
        return self.finish(s, [s], rev, set(), restored)

    def reciprocal_sqrt(self, s: ast.Assign, tgt: str, chain: ReciprocalSqrt, restored):
        """``t = c / r`` of ``r = sqrt(u)``: ``du += -0.5 c dt / (r u)``, one division where
        the chain rule through ``dr`` takes two (``r``'s own statement then passes back
        only what its other uses give ``dr``)."""
        gd = self.global_name("guard", helpers.guard)
        dt = self.adj(tgt)
        grad = ast.parse(f"{gd}({dt}, {-0.5 * chain.c!r} * {dt} / ({chain.r} * {chain.u}))",
                         mode="eval").body
        rev: list[ast.stmt] = []
        self.contribute(chain.u, grad, rev)
        self.reset(tgt, s, rev)
        return self.finish(s, [s], rev, set(), restored)

    def forward_only(self, s: ast.Assign, prim) -> list[ast.stmt]:
        """The forward of a statement with no adjoint (rule forwards for non-library calls)."""
        if prim is None or prim[0] is None or is_library(prim[0]):
            return [s]
        fn, args, kw = prim
        if fn is nobacksies and len(args) == 2:
            return [ast.copy_location(ast.Assign(targets=s.targets, value=args[1]), s)]
        rule = self.rule_of(fn, args)
        if rule is None or not isinstance(s.targets[0], ast.Name):
            return [s]
        tpl, inst = self.instance(rule, args, kw, s)
        self.note_callables(fn, inst)
        return self.forward_of(s, s.targets[0].id, s.value, fn, tpl, inst, operand_names(args))

    def instance(self, rule, args, kw, s: ast.stmt, dy: str | None = None):
        """The rule's template bound to this call; a RuleError names the user's line."""
        try:
            tpl = template_of(rule)
            return tpl, instantiate(tpl, args, kw, self.namer, self.global_name, dy)
        except RuleError as exc:
            where = self.parsed.error(str(exc), s, "check the call's arguments against the "
                                      f"rule for {rule.name} (see docs/supported.md)")
            raise RuleError(str(where)) from None

    def rule_of(self, fn, args: list[ast.expr]):
        """``fn``'s gradient rule; a split helper's for these arguments' kinds."""
        if not isinstance(fn, SplitHelper):
            return lookup(fn)
        return fn.rule_for(tuple(self.an.kind(a.id) if isinstance(a, ast.Name)
                                 else of_value(ast.literal_eval(a)) for a in args),
                           tuple(isinstance(a, ast.Name) and a.id in self.an.active
                                 for a in args),
                           tuple(self.adjoint_buffer(a) for a in args))

    def adjoint_buffer(self, a: ast.expr) -> bool:
        """Is ``a`` an active array name whose adjoint is a buffer of its shape (a
        ``buffer`` mode, not a view): a pullback may add into it in place."""
        if not (isinstance(a, ast.Name) and a.id in self.an.active):
            return False
        k = self.an.kind(a.id)
        return (k.is_array and k.ndim is not None and self.an.modes.get(a.id) == "buffer"
                and a.id not in self.an.views)

    def note_callables(self, fn, inst) -> None:
        """Functions a hook will call in compiled code (the API compiles them with Numba),
        and a split helper's and its gradient's (``front/split.py``), and the arrays its
        pullback zeroes for gradients of its own (``owned``)."""
        if isinstance(fn, SplitHelper):
            code = ast.Module(body=inst.forward + inst.back, type_ignores=[])
            self.compiled |= {n.func.id for n in walk(code)
                              if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
            self.owned |= {x.targets[0].id for x in inst.back if isinstance(x, ast.Assign)
                           and isinstance(x.value, ast.Call)
                           and zeros_shaped_like(resolve(x.value.func, self.env))}
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
        for n in walk_values(idx):
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
        def label() -> str:  # for messages only (printed when one is raised)
            return ast.unparse(v.func) if isinstance(v, ast.Call) else type(v).__name__

        if fn is None or (lookup(fn) is None and not is_non_differentiable(fn)):
            raise self.parsed.error(
                f"no gradient rule for '{label()}'", s,
                "register one with @jitgrad.grad_rule(func) (see docs/rules.md), or "
                "compute this value outside the differentiated function")
        for kv in kw.values():
            if set(names_of(kv)) & self.an.active:
                raise self.parsed.error(f"keyword argument of '{label()}' depends on a "
                                        "differentiated value", s,
                                        "pass differentiable values positionally")
        rule = self.rule_of(fn, args)
        operands = operand_names(args)
        stashed = tgt in operands
        # the pullback reads the target's adjoint itself, unless that is stashed first;
        # a split helper's may add into its arguments' adjoint buffers (passed after them)
        bufs = [name(self.adj(args[i].id)) for i in fn.accumulated(rule)] \
            if isinstance(fn, SplitHelper) else []
        tpl, inst = self.instance(rule, args + bufs, kw, s, None if stashed else self.adj(tgt))
        self.note_callables(fn, inst)
        rev: list[ast.stmt] = []
        fwd = self.forward_of(s, tgt, v, fn, tpl, inst, operands)
        for x in fwd:  # the rule's forward part is the user's line (errors, hvp's messages)
            relocate(x, s)
        self.fwd_vars.update(inst.outputs)
        g = self.stash(tgt, operands, rev)
        if stashed:
            self.reset(tgt, s, rev)
        seed = {inst.dy: g} if inst.dy != g.id else None
        rev += [rename(x, seed) for x in inst.back] if seed else inst.back
        for var, gexpr in doubled(self.terms(tgt, tpl, inst, seed, rev)):
            self.contribute(var, gexpr, rev)
        if not stashed:
            self.reset(tgt, s, rev)
        else:
            rev = drop_self_identity(rev, g.id, self.adj(tgt))
        rev = prune_unused(rev, self.namer)
        outputs = set(inst.outputs) | ({tgt} if tgt not in operands else set())
        return self.finish(s, fwd, rev, outputs, restored)

    def terms(self, tgt: str, tpl, inst, seed: dict | None, rev: list[ast.stmt]
              ) -> list[tuple[str, ast.expr]]:
        """(operand, its gradient) of each active named operand of the rule's call (into
        ``tgt``); an active tuple operand's gradient is taken apart into ``rev`` here."""
        scalar_res = not self.an.kind(tgt).is_array
        scalars = _Scalars(self.fwd_vars, self.an)
        terms: list[tuple[str, ast.expr]] = []  # (operand, its gradient), one per operand
        for p, gexpr in zip(tpl.params, inst.grads, strict=False):
            if gexpr is None:
                continue
            a = inst.bound.get(p)
            if seed:
                gexpr = rename(gexpr, seed)
            gexpr = Simplify(scalars, self.unb, scalar_res).visit(gexpr)
            if isinstance(a, ast.Name) and a.id in self.an.active:
                terms.append((a.id, gexpr))
            elif isinstance(a, (ast.Tuple, ast.List)) and any(self.is_active(e) for e in a.elts):
                gt = self.namer.fresh("_g")
                rev.append(assign(gt, gexpr))
                for j, e in enumerate(a.elts):
                    if self.is_active(e):
                        self.contribute(e.id, ast.Subscript(value=name(gt), slice=const(j),
                                                            ctx=ast.Load()), rev)
        return terms

    def forward_of(self, s, tgt, v, fn, tpl, inst, operands) -> list[ast.stmt]:
        """Forward statements: the user's own call where the rule just computes it."""
        pre = list(inst.forward)
        value = inst.value
        call_kw = isinstance(v, ast.Call) and (v.keywords or len(v.args) + (
            1 if isinstance(v.func, ast.Attribute) and resolve(v.func, self.env) is None else 0)
            > len(tpl.positional))
        lib = is_library(fn) and not call_kw
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
        view = ast.Subscript(value=name(self.adj(base)), slice=clone(t.slice),
                             ctx=ast.Load())
        idx = t.slice.elts if isinstance(t.slice, ast.Tuple) else [t.slice]
        nd = self.an.kind(base).ndim
        region = None if nd is None else nd - sum(
            not isinstance(e, ast.Slice) and not (isinstance(e, ast.Constant) and e.value is None)
            for e in idx) + sum(isinstance(e, ast.Constant) and e.value is None for e in idx)
        vnd = self.an.kind(v.id).ndim if self.is_active(v) else None
        if self.is_active(v) and vnd is not None and (region is None or vnd < region):
            # a value broadcast into a region of the array gets the region's sum
            view = ast.Call(func=name(self.unb), args=[view, name(v.id)], keywords=[])
        if self.is_active(v):
            self.contribute(v.id, view, rev, sign=-1 if isinstance(op, ast.Sub) else 1)
        if op is None:
            rev.append(ast.Assign(targets=[ast.Subscript(value=name(self.adj(base)),
                                                         slice=clone(t.slice),
                                                         ctx=ast.Store())], value=const(0.0)))
        return self.finish(s, [s], rev, set(), restored)

    def aug(self, s: ast.AugAssign, restored):
        if isinstance(s.target, ast.Subscript):
            return self.write(s, s.target, s.value, s.op, restored)
        return [s], []


def doubled(terms: list[tuple[str, ast.expr]]) -> list[tuple[str, ast.expr]]:
    """One term ``(g + g) * x`` where an operand gets the same ``g * x`` twice (``x * x``):
    one product fewer, and the same number (doubling is exact)."""
    out: list[tuple[str, ast.expr]] = []
    seen: dict[tuple[str, str], int] = {}
    once = _once([var for var, _ in terms])
    for var, g in terms:
        if var in once:  # (no other term to compare with: no dump of its gradient)
            out.append((var, g))
            continue
        key = (var, ast.dump(g))
        k = seen.get(key)
        if k is None:
            seen[key] = len(out)
            out.append((var, g))
        elif isinstance(g, ast.BinOp) and isinstance(g.op, ast.Mult):
            out[k] = (var, binop(binop(g.left, ast.Add(), clone(g.left)), ast.Mult(), g.right))
            del seen[key]  # a third copy is a term of its own
        else:
            out.append((var, g))
    return out


def _once(names: list[str]) -> set[str]:
    """The names that occur once in ``names``."""
    count: dict[str, int] = {}
    for n in names:
        count[n] = count.get(n, 0) + 1
    return {n for n, c in count.items() if c == 1}
