"""Small arrays: a fixed-size array made in the body becomes one scalar per element.

``k = np.array([a, b, c])``, ``f = np.zeros(3)`` and elementwise arithmetic of such arrays
with each other and with scalars are kept as ``k_0, k_1, k_2``: the forward and adjoint
sweeps of a loop that makes them are scalar code, with no array allocated, taped or zeroed
per trip (an RK4 stage ``np.array([y[1], -k * y[0] - c * y[1]])``, ``np.zeros(3)`` filled
element by element).

A name ``v`` is kept as scalars (is *small*) only where all of this holds (else it stays an
array and is differentiated as one):

- its kind is a 1-d float array; it is no parameter, is not returned, and is bound only by
  plain assignments ``v = e``;
- its size ``n <= MAX_SIZE`` is known here: every binding that is a *form* gives ``n``: a
  literal ``np.array([...])`` of ``n`` scalars, ``np.zeros(n)``/``np.ones(n)`` of a constant
  ``n``, or an elementwise operation (``+ - * /``, unary ``-``, a one-argument elementwise
  function such as ``np.sqrt``) of small names of size ``n`` and scalars; at least one
  binding is a form.  Any other binding (an *entry*, ``y = y0.copy()``) keeps the array,
  checks that it has ``n`` elements (``ValueError`` otherwise: the form bindings give it
  ``n``) and reads them;
- every other mention of it is an element read or write at a constant index in range, an
  operand of a form binding of another small name, or ``np.sum(v)``;
- no name that is not small may share its buffer (``Dataflow.shares``; ``y = y0`` as an
  entry would): an alias would miss the scalars' writes.

A loop ``for k in range(c)`` with a constant ``c <= MAX_SIZE`` (``f[k] = ...``) is unrolled
first where that makes an array it indexes small; each copy binds its own temporaries.
"""

from __future__ import annotations

import ast
from typing import Any

import numpy as np

from ...rules.primitives import fact, fill_value, sums
from ..analysis.dataflow import (
    Dataflow,
    accesses,
    affine,
    binds,
    binds_in,
    loop_index,
    plain_binding,
)
from ..analysis.kinds import infer
from ..astutil import exposed_reads, resolve
from ..naming import Namer
from ..nodes import clone, clone_with, nodes_of, relocate, walk, walk_stmts
from .build import assign, const, name

#: the most elements an array may have to be kept as scalars
MAX_SIZE = 8
_OPS = (ast.Add, ast.Sub, ast.Mult, ast.Div)


class _Facts:
    """What deciding needs: the kinds, the module names and the sizes found so far."""

    def __init__(self, kinds: dict, env: dict[str, Any]):
        self.kinds, self.env = kinds, env
        self.sizes: dict[str, int] = {}
        #: candidates not sized yet, taken as operands of any size while sizing (a loop's
        #: ``y = y + dt * k`` sizes ``y`` from ``k``); checked against the sizes found after
        self.pending: set[str] = set()

    def scalar(self, e: ast.expr) -> bool:
        if isinstance(e, ast.Constant):
            return isinstance(e.value, (int, float)) and not isinstance(e.value, bool)
        k = self.kinds.get(e.id) if isinstance(e, ast.Name) else None
        return k is not None and not k.is_array and k.cls in "bif"

    def vector(self, v: str) -> bool:
        k = self.kinds.get(v)
        return k is not None and k.cls == "f" and k.ndim == 1

    def form(self, e: ast.expr) -> int | None:
        """The size of ``e`` where it is a form (see the module's docstring), else None."""
        if isinstance(e, ast.Call) and not e.keywords:
            fn = resolve(e.func, self.env)
            if fn is np.array and len(e.args) == 1 and isinstance(e.args[0], (ast.List, ast.Tuple)):
                elts = e.args[0].elts
                return len(elts) if 0 < len(elts) <= MAX_SIZE and all(map(self.scalar, elts)) \
                    else None
            if fill_value(fn) is not None and len(e.args) == 1:
                a = e.args[0]
                ok = isinstance(a, ast.Constant) and type(a.value) is int
                return a.value if ok and 0 < a.value <= MAX_SIZE else None
            rec = fact(fn) if fn is not None else None
            if rec is not None and rec.elementwise and len(e.args) == 1:
                return self.operands(e.args)
            return None
        if isinstance(e, ast.BinOp) and isinstance(e.op, _OPS):
            return self.operands([e.left, e.right])
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd)):
            return self.operands([e.operand])
        return None

    def operands(self, args: list[ast.expr]) -> int | None:
        """Their common size where each is a sized small name or a scalar, one at least."""
        sizes = set()
        for a in args:
            if isinstance(a, ast.Name) and a.id in self.sizes:
                sizes.add(self.sizes[a.id])
            elif not (self.scalar(a) or isinstance(a, ast.Name) and a.id in self.pending):
                return None
        return sizes.pop() if len(sizes) == 1 else None


def _index(sub: ast.Subscript, n: int) -> int | None:
    """The constant index ``k`` (``0 <= k < n``) ``sub`` reaches, negative ones counted back."""
    a = affine(sub.slice, ())
    if a is None or a[0] is not None or not -n <= a[1] < n:
        return None
    return a[1] % n


def _sum_of(s: ast.stmt, env: dict) -> str | None:
    """``v`` where ``s`` is ``t = np.sum(v)``."""
    v = s.value if plain_binding(s) else None
    if isinstance(v, ast.Call) and sums(resolve(v.func, env)) and len(v.args) == 1 \
            and not v.keywords and isinstance(v.args[0], ast.Name):
        return v.args[0].id
    return None


def _bindings(body: list[ast.stmt], fixed: set[str]) -> tuple[dict[str, list], set[str]]:
    """Each name's plain assignments, and the names bound otherwise (or in ``fixed``)."""
    out: dict[str, list[ast.Assign]] = {}
    other = set(fixed)
    for s in walk_stmts(body):
        t = plain_binding(s)
        if t is not None:
            out.setdefault(t, []).append(s)
        else:
            other.update(binds(s))
    return out, other


def _find_sizes(cands: set[str], bindings: dict, facts: _Facts) -> None:
    """Size every candidate one of whose bindings is a form of known size (to a fixpoint)."""
    facts.sizes = {}
    changed = True
    while changed:
        changed = False
        facts.pending = cands - set(facts.sizes)
        for v in sorted(facts.pending):
            n = next((m for s in bindings[v] if (m := facts.form(s.value)) is not None), None)
            if n is not None:
                facts.sizes[v] = n
                changed = True
    facts.pending = set()


def _consistent(v: str, bindings: dict, facts: _Facts) -> bool:
    """No form binding of ``v`` gives it another size than its own."""
    forms = [facts.form(s.value) for s in bindings[v]]
    return any(f is not None for f in forms) and all(
        f in (None, facts.sizes[v]) for f in forms)


def _mentions_ok(body: list[ast.stmt], small: set[str], facts: _Facts, env: dict) -> set[str]:
    """The small names mentioned other than as the module's docstring allows."""
    bad: set[str] = set()
    for s in walk_stmts(body):
        if plain_binding(s) in small and facts.form(s.value) is not None \
                or _sum_of(s, env) in small:
            continue  # a form's operands are small names or scalars
        nodes = list(_head_nodes(s) if "body" in s._fields else nodes_of(s))
        allowed: set[int] = set()
        for n in nodes:
            if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) \
                    and n.value.id in small and _index(n, facts.sizes[n.value.id]) is not None \
                    and (isinstance(n.ctx, ast.Load) or _element_write(s, n, facts)):
                allowed.add(id(n.value))
        bad |= {n.id for n in nodes if isinstance(n, ast.Name) and n.id in small
                and id(n) not in allowed and not isinstance(n.ctx, ast.Store)}
    return bad


def _head_nodes(s: ast.stmt):
    """The nodes of a compound statement's head (its test or iterable, its target)."""
    for f in ("test", "iter", "target"):
        if getattr(s, f, None) is not None:
            yield from nodes_of(getattr(s, f))


def _element_write(s: ast.stmt, sub: ast.Subscript, facts: _Facts) -> bool:
    """Is ``s`` ``v[k] = e`` or ``v[k] op= e`` with ``sub`` its only target, ``e`` a scalar?"""
    if isinstance(s, ast.Assign):
        return len(s.targets) == 1 and s.targets[0] is sub and facts.scalar(s.value)
    return isinstance(s, ast.AugAssign) and s.target is sub and isinstance(s.op, _OPS) \
        and facts.scalar(s.value)


def small_names(body: list[ast.stmt], returns: list[ast.expr], params: list[str],
                kinds: dict, env: dict) -> dict[str, int]:
    """The names to keep as scalars, with their sizes (see the module's docstring)."""
    fixed = set(params) | {n.id for r in returns for n in walk(r) if isinstance(n, ast.Name)}
    bindings, other = _bindings(body, fixed)
    facts = _Facts(kinds, env)
    flow = Dataflow(body, is_array=lambda n: kinds[n].is_array if n in kinds else None,
                    env=env)
    cands = {v for v in bindings if v not in other and facts.vector(v)}
    while True:
        _find_sizes(cands, bindings, facts)
        small = {v for v in facts.sizes if _consistent(v, bindings, facts)}
        small -= _mentions_ok(body, small, facts, env)
        # (a small name is mentioned only by element or as a form's operand, which make
        # new arrays: only an entry's value may really share another array's buffer)
        small = {v for v in small if flow.shares(v) <= small}
        if small == cands:
            return dict(facts.sizes)
        cands = small


class _Rewriter:
    """Rewrites a body given the small names: one statement per element."""

    def __init__(self, sizes: dict[str, int], kinds: dict, env: dict, namer: Namer):
        self.sizes, self.env, self.namer = sizes, env, namer
        self.facts = _Facts(kinds, env)
        self.facts.sizes = sizes
        self.elems = {v: [self._element_name(v, k) for k in range(n)] for v, n in sizes.items()}
        self.np = namer.global_name(env, "np", np)

    def _element_name(self, v: str, k: int) -> str:
        new = self.namer.unique(f"{v}_{k}")
        self.namer.origin[new] = f"{self.namer.user_name(v)}[{k}]"
        return new

    def block(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for s in stmts:
            for f in ("body", "orelse"):
                if isinstance(getattr(s, f, None), list):
                    setattr(s, f, self.block(getattr(s, f)))
            new = self.statement(s) if "body" not in s._fields else [self.reads(s)]
            for x in new:
                if x is not s:  # (``relocate`` would give a block's statements its line)
                    ast.copy_location(x, s)
                    relocate(x, s)
            out += new
        return out

    def reads(self, node: Any) -> Any:
        """``node`` with each element read of a small name made the element's name."""
        sizes, elems = self.sizes, self.elems

        class Reads(ast.NodeTransformer):
            def visit_Subscript(self, n: ast.Subscript) -> ast.AST:
                if isinstance(n.value, ast.Name) and n.value.id in sizes \
                        and isinstance(n.ctx, ast.Load):
                    return name(elems[n.value.id][_index(n, sizes[n.value.id])])
                return self.generic_visit(n)

            def visit_FunctionDef(self, n: ast.AST) -> ast.AST:
                return n

        if "body" in node._fields:  # a compound statement: its head only
            for f in ("test", "iter"):
                if getattr(node, f, None) is not None:
                    setattr(node, f, Reads().visit(getattr(node, f)))
            return node
        return Reads().visit(node)

    def statement(self, s: ast.stmt) -> list[ast.stmt]:
        t = plain_binding(s)
        if t in self.sizes:
            if self.facts.form(s.value) is not None:
                return [assign(e, self.element(s.value, k))
                        for k, e in enumerate(self.elems[t])]
            return [self.reads(s), *self.entry(t, s)]
        v = _sum_of(s, self.env)
        if v in self.sizes:
            return self.total(t, self.elems[v])
        tgt = getattr(s, "target", None) or (s.targets[0] if isinstance(s, ast.Assign) else None)
        if isinstance(tgt, ast.Subscript) and isinstance(tgt.value, ast.Name) \
                and tgt.value.id in self.sizes:
            e = self.elems[tgt.value.id][_index(tgt, self.sizes[tgt.value.id])]
            value = self.reads(s.value)
            value = ast.BinOp(left=name(e), op=s.op, right=value) \
                if isinstance(s, ast.AugAssign) else self.f64(value)
            return [assign(e, value)]
        return [self.reads(s)]

    def element(self, e: ast.expr, k: int) -> ast.expr:
        """Element ``k`` of the form ``e``."""
        def part(a: ast.expr) -> ast.expr:
            if isinstance(a, ast.Name) and a.id in self.elems:
                return name(self.elems[a.id][k])
            return clone(a)

        if isinstance(e, ast.BinOp):
            return ast.BinOp(left=part(e.left), op=e.op, right=part(e.right))
        if isinstance(e, ast.UnaryOp):
            return ast.UnaryOp(op=e.op, operand=part(e.operand))
        fn = resolve(e.func, self.env)
        if (fill := fill_value(fn)) is not None:
            return self.f64(const(fill))
        if fn is np.array:
            x = e.args[0].elts[k]
            return self.f64(const(float(x.value)) if isinstance(x, ast.Constant) else clone(x))
        return ast.Call(func=clone(e.func), args=[part(e.args[0])], keywords=[])

    def f64(self, e: ast.expr) -> ast.expr:
        """``np.float64(e)``: an element as the array held it (a NumPy scalar: ``1.0 / 0.0``
        of Python floats would raise where the arrays' division gave inf)."""
        return ast.Call(func=ast.Attribute(value=name(self.np), attr="float64", ctx=ast.Load()),
                        args=[e], keywords=[])

    def entry(self, v: str, s: ast.stmt) -> list[ast.stmt]:
        """After ``v = e`` of another form: check ``v`` has its size, read its elements."""
        n = self.sizes[v]
        c = self.namer.temp()
        msg = (f"jitgrad keeps '{self.namer.user_name(v)}' (line {s.lineno}) as {n} scalars: "
               f"it must have {n} elements")
        test = ast.Compare(left=ast.Subscript(value=ast.Attribute(
            value=name(v), attr="shape", ctx=ast.Load()), slice=const(0), ctx=ast.Load()),
            ops=[ast.NotEq()], comparators=[const(n)])
        error = ast.Raise(exc=ast.Call(func=name("ValueError"), args=[const(msg)],
                                       keywords=[]), cause=None)
        out = [assign(c, test), ast.If(test=name(c), body=[error], orelse=[])]
        return out + [assign(e, ast.Subscript(value=name(v), slice=const(k), ctx=ast.Load()))
                      for k, e in enumerate(self.elems[v])]

    def total(self, t: str, elems: list[str]) -> list[ast.stmt]:
        """``t = e_0 + e_1 + ...``, one addition per statement."""
        out: list[ast.stmt] = []
        acc = name(elems[0])
        for k, e in enumerate(elems[1:], 1):
            dst = t if k == len(elems) - 1 else self.namer.temp()
            out.append(assign(dst, ast.BinOp(left=acc, op=ast.Add(), right=name(e))))
            acc = name(dst)
        return out or [assign(t, acc)]


#: the most statements unrolling one loop may make
_UNROLLED = 256


def _short_loops(body: list[ast.stmt], namer: Namer, env: dict
                 ) -> dict[int, tuple[str, int, set[str]]]:
    """The loops ``for k in range(c)`` (or ``range(0, c)``) with a constant ``c <= MAX_SIZE``
    that unrolling may copy ``c`` times with ``k`` a constant: nothing leaves their body,
    it does not bind ``k``, nothing reads ``k`` after them.  By ``id``: ``(k, c, temps)``,
    ``temps`` the temporaries each copy may bind under names of its own (bound in the
    body before any read there, not read after the loop)."""
    flow = Dataflow(body, env=env)
    out = {}
    for s in walk_stmts(body):
        k = loop_index(s)
        args = s.iter.args if k is not None and not s.iter.keywords else []
        if not 1 <= len(args) <= 2 or len(args) == 2 and affine(args[0], ()) != (None, 0):
            continue
        c = affine(args[-1], ())
        inner = list(walk_stmts(s.body))
        if c is None or c[0] is not None or not 1 <= c[1] <= MAX_SIZE \
                or len(inner) * c[1] > _UNROLLED or k in binds_in(s.body, elements=False) \
                or any(isinstance(x, (ast.Break, ast.Continue, ast.Return)) for x in inner) \
                or k in flow.live_after(s):
            continue
        after = flow.live_after(s) | exposed_reads(s.body)
        temps = {n for n in binds_in(s.body, elements=False) if namer.is_temp(n)} - after
        out[id(s)] = (k, c[1], temps)
    return out


def _unroll(block: list[ast.stmt], loops: dict, keep, namer: Namer | None) -> list[ast.stmt]:
    """Copies of ``block``'s statements with the loops of ``loops`` (by the ``id`` of the
    statement in ``block``) that ``keep`` accepts unrolled, inner ones first; ``namer``:
    each copy after the first binds its temporaries under new names (None: the same)."""
    out: list[ast.stmt] = []
    for s in block:
        new = clone(s)
        for f in ("body", "orelse"):
            if isinstance(getattr(s, f, None), list):
                setattr(new, f, _unroll(getattr(s, f), loops, keep, namer))
        if id(s) in loops and keep(new):
            k, c, temps = loops[id(s)]
            for v in range(c):
                to = {t: namer.temp() for t in sorted(temps)} if v and namer else {}
                out += [clone_with(x, lambda n, v=v, to=to: const(v) if n.id == k else
                                   ast.Name(id=to[n.id], ctx=n.ctx) if n.id in to else clone(n))
                        for x in new.body]
        else:
            out.append(new)
    return out


def scalarise(body: list[ast.stmt], returns: list[ast.expr], params: list[str], kinds: dict,
              env: dict, namer: Namer, arg_kinds: dict) -> list[ast.stmt]:
    """``body`` with its small arrays kept as scalars (see the module's docstring).  Short
    loops over a constant range (``for k in range(3): f[k] = ...``) are unrolled where that
    makes an array they index small."""
    loops = _short_loops(body, namer, env)
    if loops:
        trial = _unroll(body, loops, lambda s: True, None)
        found = small_names(trial, returns, params, kinds, env)
        if found:
            body = _unroll(body, loops, lambda s: bool(_indexed(s.body) & set(found)), namer)
            kinds = infer(body, env, arg_kinds)
    sizes = small_names(body, returns, params, kinds, env)
    if not sizes:
        return body
    return _Rewriter(sizes, kinds, env, namer).block(body)


def _indexed(stmts: list[ast.stmt]) -> set[str | None]:
    """The arrays ``stmts`` read or write elements of."""
    return {a.base for s in walk_stmts(stmts) for a in accesses(s)}


__all__ = ["MAX_SIZE", "scalarise", "small_names"]
