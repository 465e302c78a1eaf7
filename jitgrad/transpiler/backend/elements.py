"""Element loops: a chain of whole-array statements run as one loop over the elements.

Whole-array code (``d1 = (np.log(S / X) + ...) / (V * sqrtT)``) and its adjoint make a
NumPy temporary for every operation.  Where consecutive statements of a block are
elementwise over arrays of one shape (``analysis/shape_classes.py``) and scalars, they
run as one loop over the elements, the way XLA fuses them: each array the chain makes
is a scalar in the loop, and only those read after the chain are arrays (made empty,
written element by element).  A reduction at the end (``np.sum(e)``, ``np.dot`` of
vectors, ``unbroadcast`` to a scalar) is a sum the loop adds to; scalar statements
between move before the loop (what they read is known before it) or after it (they
read a sum).  Preconditions, each checked, else the statements stay as they are:

- every array the chain reads or makes has the chain's loose shape class (arrays an
  elementwise operation combines are one, ``ShapeClasses(loose=True)``), or is a scalar;
  shapes not proven equal are compared at run time, and the statements as written run
  where they differ: two arguments a strict class assumed one (``S / X``), one array of
  each strict class the chain reads before making it against the others, and each such
  array of no strict class itself (``if _t9.shape == _t10.shape``);
- a push on a list tape (``t.append(v)``, ``t.append(shape_stand_in(v))``) or a pop
  (``v = t.pop()``) of a list only pushed and popped moves after or before the loop like
  a scalar statement, its list counted as bound by it (pushes and pops of one list keep
  their order); a pushed array the loop makes is kept, a stand-in pushed of one it does
  not keep is a stand-in of the loop's reference array (the shape and dtype it would
  have had);
- a value is read at the element being made: no array written in place in the chain
  shares a buffer with another array the chain reads (``Dataflow.shares``);
- a statement of the chain calls nothing but elementwise primitives (the primitive
  table's ``elementwise`` and ``pure``) and binds a new value (no view, no alias);
- an array the chain makes is kept only where it is live after the chain
  (``Dataflow.live_after``).

Only under ``jit=True`` (a loop over elements is Numba's to compile; NumPy's
temporaries are faster in plain Python).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...kernels import arrays as K
from ...kernels import helpers as H
from ...rules.primitives import cost, on_scalars
from ..analysis import dataflow
from ..analysis.shape_classes import SCALAR, ShapeClasses, elementwise_parts, reduction_terms
from ..astutil import resolve
from ..naming import fresh_in
from ..nodes import loaded_ids, rewrite_blocks, walk_stmts, with_blocks
from ..notes import COMMENT
from .emit import comment

#: the fewest statements worth one loop (Numba fuses one statement's operations itself)
MIN_STATEMENTS = 2


def fuse_elements(body: list[ast.stmt], shapes: ShapeClasses, env: dict[str, Any],
                  np_name: str, taken: set[str], shared: dict[str, str] | None = None
                  ) -> list[ast.stmt]:
    """``body`` with each chain of elementwise statements of one block run as one loop over
    the elements (see the module docstring); ``taken``: the names in use (new ones are
    added); ``shared``: adjoint -> the adjoint it is a view of.  The statements of
    ``body`` are not changed: the blocks that change are copied."""
    flow = dataflow.Dataflow(body, shared, env=env)
    stable = _stable_names(body, shapes, flow)
    parents = _parents(body)
    strict, shapes = shapes, ShapeClasses(body, shapes.ndims, env, sorted(shapes.params),
                                          loose=True)
    first = _Ctx(shapes, env, np_name, set(taken), flow, stable, parents=parents,
                 strict=strict)
    fused = _block(body, first)
    if not first.last:
        return body
    # again, each chain keeping only what the chains after it read once fused themselves
    ctx = _Ctx(shapes, env, np_name, taken, first.flow, stable, _live(first, fused, shared),
               parents=parents, strict=strict)
    return _block(body, ctx)


def _parents(body: list[ast.stmt]) -> dict[str, list[ast.AST]]:
    """name -> the node directly holding each of its reads in ``body``."""
    out: dict[str, list[ast.AST]] = {}
    for s in body:
        for node in ast.walk(s):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Load):
                    out.setdefault(child.id, []).append(node)
    return out


def _live(first: _Ctx, fused: list[ast.stmt], shared: dict[str, str] | None
          ) -> dict[int, frozenset[str]]:
    """What is live after each chain in ``fused`` (the body with every chain fused).  Chains
    that check the same shapes of names holding one value (``stable``) all run fused or all
    as written: a checked chain's arrays are live only where those chains, fused, read
    them (and where any other chain, fused or as written, does)."""
    flow = dataflow.Dataflow(fused, shared, env=first.env)
    live = {k: flow.live_after(s) for k, s in first.last.items()}
    groups: dict[tuple, list[int]] = {}
    for k, c in first.checks.items():
        if c and k in first.guards and all(n in first.stable for p in c for n in p):
            groups.setdefault(c, []).append(k)
    for ks in groups.values():
        fast = dataflow.Dataflow(_replaced(fused, {id(first.guards[k][0]): first.guards[k][1]
                                                   for k in ks}), shared, env=first.env)
        for k in ks:
            live[k] = fast.live_after(first.guards[k][1][-1])
    return live


def _replaced(stmts: list[ast.stmt], by: dict[int, list[ast.stmt]]) -> list[ast.stmt]:
    """``stmts`` with each statement whose id ``by`` has replaced by those statements (in
    nested blocks too; copies of the blocks that change)."""
    return rewrite_blocks(stmts, lambda s: by.get(id(s)))


def _stable_names(body: list[ast.stmt], shapes: ShapeClasses, flow: dataflow.Dataflow
                  ) -> frozenset[str]:
    """Names holding one value from their binding on: bound once, at the top level of
    ``body``, or never (arguments); written in place nowhere, under any name sharing
    their buffer (``B = A.T; B[0, 1] = v`` changes ``A``)."""
    count: dict[str, int] = {}
    written: set[str] = set()
    for s in walk_stmts(body):
        plain = dataflow.binds(s)
        for n in plain:
            count[n] = count.get(n, 0) + 1
        written |= set(dataflow.binds(s, elements=True, appends=True)) - set(plain)
        if isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name):
            written.add(s.target.id)
    top = {n for s in body for n in dataflow.binds(s)
           if isinstance(s, ast.Assign) and len(s.targets) == 1}
    once = {n for n in set(count) | shapes.params | set(shapes.ndims)
            if count.get(n, 0) == 0 and n not in shapes.values
            or count.get(n) == 1 and n in top}
    return frozenset(n for n in once if not (flow.shares(n) & written))


@dataclass
class _Ctx:
    #: loose classes (any two arrays an operation combines are one): what chains are made
    #: of; ``strict``: the classes proven, whose representatives a chain compares
    shapes: ShapeClasses
    env: dict[str, Any]
    np_name: str
    taken: set[str]
    flow: dataflow.Dataflow
    #: names holding one value from their binding on (``_stable_names``)
    stable: frozenset[str] = frozenset()
    #: a chain's first statement's id -> what is live after it (else found by ``flow``)
    live: dict[int, frozenset[str]] | None = None
    #: a chain's first statement's id -> the last statement running it
    last: dict[int, ast.stmt] = field(default_factory=dict)
    #: a checked chain's first statement's id -> (its ``if``, the fused statements)
    guards: dict[int, tuple[ast.If, list[ast.stmt]]] = field(default_factory=dict)
    #: a chain's first statement's id -> the shapes it checks
    checks: dict[int, tuple] = field(default_factory=dict)
    #: statements computing values again at an element, for the statement being written
    pending: list[ast.stmt] = field(default_factory=list)
    #: name -> the node holding each of its reads (``_only_pushed``)
    parents: dict[str, list[ast.AST]] = field(default_factory=dict)
    #: list -> is it read only by its pushes and pops (``_only_pushed``)
    tapes: dict[str, bool] = field(default_factory=dict)
    strict: ShapeClasses | None = None

    def live_after(self, g: _Group) -> frozenset[str]:
        if self.live is not None and id(g.stmts[0]) in self.live:
            return self.live[id(g.stmts[0])]
        return self.flow.live_after(g.stmts[-1])

    def fresh(self, base: str) -> str:
        return fresh_in(base, self.taken)


def _block(stmts: list[ast.stmt], ctx: _Ctx) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    k = 0
    while k < len(stmts):
        g = _grow(stmts, k, ctx)
        if g is not None and g.worth():
            made = _emit(g, ctx)
            if made is not None:
                out += made
                k += len(g.stmts)
                continue
        out.append(_inner(stmts[k], ctx))
        k += 1
    return out


def _inner(s: ast.stmt, ctx: _Ctx) -> ast.stmt:
    """``s``, or a copy of it whose blocks have their chains fused."""
    if not isinstance(s, (ast.For, ast.While, ast.If)):
        return s

    def fused(b: list[ast.stmt]) -> list[ast.stmt]:
        new = _block(b, ctx)
        return b if _same(new, b) else new

    return with_blocks(s, fused)  # (a copy keeps the notes on ``s``: a prange loop stays one)


def _same(a: list[ast.stmt], b: list[ast.stmt]) -> bool:
    """Are ``a`` and ``b`` the same statement objects, in order?"""
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


# --- finding a chain ----------------------------------------------------------------------


@dataclass
class _Group:
    """A chain: its statements, and where each goes (before, in or after the loop)."""

    cls: str | None = None
    stmts: list[ast.stmt] = field(default_factory=list)
    pre: list[ast.stmt] = field(default_factory=list)
    loop: list[tuple[ast.stmt, str]] = field(default_factory=list)
    post: list[ast.stmt] = field(default_factory=list)
    made: set[str] = field(default_factory=set)  # arrays the loop binds
    inplace: set[str] = field(default_factory=set)  # arrays it writes in place
    first_read: list[str] = field(default_factory=list)  # arrays read before made
    shaped: list[str] = field(default_factory=list)  # arrays read for their shape
    binds: set[str] = field(default_factory=set)  # by any statement of the chain
    loop_reads: set[str] = field(default_factory=set)
    pre_reads: set[str] = field(default_factory=set)
    pre_binds: set[str] = field(default_factory=set)
    post_reads: set[str] = field(default_factory=set)
    post_binds: set[str] = field(default_factory=set)
    #: what the statements after the loop read, less the arrays pushed as stand-ins only
    post_needs: set[str] = field(default_factory=set)

    def worth(self) -> bool:
        return sum(k != "comment" for _, k in self.loop) >= MIN_STATEMENTS


def _grow(stmts: list[ast.stmt], k: int, ctx: _Ctx) -> _Group | None:
    """The longest chain starting at ``stmts[k]`` (None: that statement starts none)."""
    g = _Group()
    for s in stmts[k:]:
        if not _add(g, s, ctx):
            break
        g.stmts.append(s)
    while g.stmts and COMMENT.get(g.stmts[-1]):  # (a comment belongs to what follows)
        g.stmts.pop()
        g.loop.pop()
    return g if g.loop else None


def _add(g: _Group, s: ast.stmt, ctx: _Ctx) -> bool:
    """Add ``s`` to the chain if it can go somewhere in it."""
    if COMMENT.get(s):
        if not g.loop:
            return False
        g.loop.append((s, "comment"))
        return True
    kind = _kind(s, ctx)
    if kind is None:
        return False
    reads, binds = dataflow.reads_in([s]), set(dataflow.binds(s))
    needs = reads - {_stand_in_of(s, ctx)}  # (the arrays it reads, after the loop)
    tape = _tape_of(s, ctx)
    if tape is not None:
        kind = "scalar"
        binds.add(tape)  # (a push or a pop changes the list: their order is kept)
    if kind == "scalar":
        if not g.loop:
            return False
        # (an element read moves past the loop: of any array sharing the buffer it reads;
        # a push or pop reads no element)
        if tape is None:
            reads = set().union(*(ctx.flow.shares(n) for n in reads))
        return _moved(g, s, reads, binds, needs)
    c = _class_of(s, kind, ctx)
    looped = _loop_reads(s, kind, ctx)
    if c is None or (g.cls is not None and c != g.cls) or looped & g.post_binds \
            or binds & (g.post_reads | g.pre_reads):
        return False
    if kind == "reduce" and binds & g.binds:
        return False  # (a sum bound twice in one chain: left alone)
    g.cls = c
    for n in _arrays_read(s, ctx):
        if n not in g.made and n not in g.first_read:
            g.first_read.append(n)
    for e in ast.walk(s):
        if _passed(e, ctx) is not None and isinstance(e.args[1], ast.Name) \
                and e.args[1].id not in g.made:
            g.shaped.append(e.args[1].id)
    if kind == "elem":
        t = _target(s)
        if isinstance(s, ast.AugAssign) and t not in g.made:
            g.inplace.add(t)
        else:
            g.made.add(t)
    else:
        g.post.append(s)  # (its sums are the loop's; what it makes of them comes after)
        g.post_binds |= binds
        g.post_reads |= reads - looped
        g.post_needs |= reads - looped
    g.loop.append((s, kind))
    g.loop_reads |= looped
    g.binds |= binds
    return True


def _moved(g: _Group, s: ast.stmt, reads: set[str], binds: set[str], needs: set[str]
           ) -> bool:
    """Add statement ``s`` (of no array element: scalars, a push or a pop) before the loop
    or after it, where it can go."""
    later = g.loop_reads | g.binds | g.post_reads | g.pre_reads
    if not (binds & later) and not (reads & (g.binds - g.pre_binds)):
        g.pre.append(s)  # (runs before the loop: it reads nothing the chain makes)
        g.pre_reads |= reads
        g.pre_binds |= binds
    elif not (binds & (g.loop_reads | g.pre_reads)):
        g.post.append(s)
        g.post_reads |= reads
        g.post_needs |= needs
        g.post_binds |= binds
    else:
        return False
    g.binds |= binds
    return True


def _loop_reads(s: ast.stmt, kind: str, ctx: _Ctx) -> set[str]:
    """What ``s`` reads in the loop: all it reads, or for a "reduce" its sums' terms."""
    if kind == "elem":
        return dataflow.reads_in([s])
    sums: list[ast.Call] = []
    _elementwise(s.value, ctx, sums)
    return set().union(*(loaded_ids(c) for c in sums))


def _kind(s: ast.stmt, ctx: _Ctx) -> str | None:
    """"elem" (an array made elementwise), "reduce" (a scalar from sums of elements),
    "scalar" (scalars only, or a list tape's push or pop), or None (it cannot join a
    chain)."""
    if _tape_of(s, ctx) is not None:
        return "scalar"
    if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name):
        value = s.value
    elif isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name) \
            and isinstance(s.op, (ast.Add, ast.Sub, ast.Mult, ast.Div)):
        value = s.value
    else:
        return None
    if isinstance(value, (ast.Name, ast.Subscript, ast.Attribute, ast.Constant)):
        return "scalar" if ctx.shapes.of(_target(s)) == SCALAR \
            and ctx.shapes.expr(value) == SCALAR else None
    sums: list[ast.Call] = []
    if not _elementwise(value, ctx, sums):
        return None
    t = ctx.shapes.of(_target(s))
    if t == SCALAR:
        if sums:
            return "reduce"
        return "scalar" if all(ctx.shapes.of(n) == SCALAR for n in loaded_ids(value)) \
            else None
    if t is None or sums:
        return None
    whole = ast.BinOp(left=ast.Name(id=_target(s), ctx=ast.Load()), op=s.op, right=value) \
        if isinstance(s, ast.AugAssign) else value
    return "elem" if ctx.shapes.expr(whole) == t else None


def _tape_of(s: ast.stmt, ctx: _Ctx) -> str | None:
    """The list ``t`` where ``s`` is ``t.append(v)`` (``v`` a name or
    ``shape_stand_in(name)``) or ``x = t.pop()``, of a list tape: bound only to ``[]``,
    otherwise only appended to and popped.  Such a statement moves before or after a
    chain's loop like a scalar statement (its list counts as bound by it, so pushes and
    pops of one list keep their order): a push after the loop pushes the array the
    loop made (then kept as an array), a pop before it binds what the loop reads."""
    if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call):
        c, arg = s.value, (s.value.args or [None])[0]
        if not (isinstance(c.func, ast.Attribute) and c.func.attr == "append"
                and len(c.args) == 1 and not c.keywords):
            return None
        if isinstance(arg, ast.Call) and resolve(arg.func, ctx.env) is H.shape_stand_in \
                and len(arg.args) == 1 and not arg.keywords:
            arg = arg.args[0]
        if not isinstance(arg, ast.Name):
            return None
    elif isinstance(s, ast.Assign) and len(s.targets) == 1 \
            and isinstance(s.targets[0], ast.Name) and isinstance(s.value, ast.Call) \
            and isinstance(s.value.func, ast.Attribute) and s.value.func.attr == "pop" \
            and not s.value.args and not s.value.keywords:
        c = s.value
    else:
        return None
    t = c.func.value
    if not isinstance(t, ast.Name) or t.id not in ctx.shapes.pushed:
        return None
    vals = ctx.shapes.values.get(t.id, [None])
    if not all(isinstance(v, ast.List) and not v.elts for v in vals):
        return None
    return t.id if _only_pushed(t.id, ctx) else None


def _only_pushed(t: str, ctx: _Ctx) -> bool:
    """Is list ``t`` read nowhere but as ``t.append(...)`` and ``t.pop()``?"""
    if t not in ctx.tapes:
        ctx.tapes[t] = all(
            isinstance(p, ast.Attribute) and p.attr in ("append", "pop")
            for p in ctx.parents.get(t, [None]))
    return ctx.tapes[t]


def _elementwise(e: ast.expr, ctx: _Ctx, sums: list[ast.Call], in_sum: bool = False) -> bool:
    """Is ``e`` made of operators, elementwise calls and identity reshapings only, with
    sums (added to ``sums``) not nested in each other?"""
    if isinstance(e, ast.Constant):
        return isinstance(e.value, (int, float, bool))
    if isinstance(e, ast.Name):
        return ctx.shapes.of(e.id) is not None
    terms = reduction_terms(e, ctx.shapes, ctx.env)
    if terms is not None:
        if in_sum:
            return False
        sums.append(e)
        return all(_elementwise(t, ctx, sums, True) for t in terms)
    passed = _passed(e, ctx)
    if passed is not None:
        return _elementwise(passed, ctx, sums, in_sum)
    parts = elementwise_parts(e, ctx.env)
    if isinstance(e, ast.Call) and not on_scalars(resolve(e.func, ctx.env)):
        return False
    return parts is not None and all(_elementwise(p, ctx, sums, in_sum) for p in parts)


def _passed(e: ast.expr, ctx: _Ctx) -> ast.expr | None:
    """``g`` where ``e`` is ``unbroadcast(g, x)`` or ``expand_along(g, x, None)`` of a ``g``
    of ``x``'s class or a scalar ``g`` and an array ``x``: each element is ``g``'s."""
    if not (isinstance(e, ast.Call) and not e.keywords and len(e.args) >= 2):
        return None
    fn = resolve(e.func, ctx.env)
    if fn is K.expand_along and not (len(e.args) == 3 and isinstance(e.args[2], ast.Constant)
                                     and e.args[2].value is None):
        return None
    if fn not in (H.unbroadcast, K.expand_along):
        return None
    g, x = ctx.shapes.expr(e.args[0]), ctx.shapes.expr(e.args[1])
    if x is None or x == SCALAR or g not in (x, SCALAR):
        return None
    return e.args[0]


def _class_of(s: ast.stmt, kind: str, ctx: _Ctx) -> str | None:
    """The array class of the elements an "elem" or "reduce" statement goes over."""
    if kind == "elem":
        return ctx.shapes.of(_target(s))
    sums: list[ast.Call] = []
    _elementwise(s.value, ctx, sums)
    got = {ctx.shapes.expr(t) for c in sums for t in reduction_terms(c, ctx.shapes, ctx.env)}
    return got.pop() if len(got) == 1 else None


def _arrays_read(s: ast.stmt, ctx: _Ctx) -> list[str]:
    """The arrays ``s`` reads elements of (an in-place target first), in order; not those
    read only for their shape (``unbroadcast(g, x)``).  The value's names are all read,
    the target's too (``y = y + a`` reads the ``y`` bound before: its buffer is not
    the one the loop writes)."""
    shaped = {id(e.args[1]) for e in ast.walk(s.value) if _passed(e, ctx) is not None}
    names = [n.id for n in ast.walk(s.value) if isinstance(n, ast.Name) and id(n) not in shaped]
    if isinstance(s, ast.AugAssign):
        names.insert(0, s.target.id)
    out: list[str] = []
    for n in names:
        if n not in out and ctx.shapes.of(n) not in (None, SCALAR):
            out.append(n)
    return out


def _target(s: ast.stmt) -> str:
    return s.targets[0].id if isinstance(s, ast.Assign) else s.target.id


# --- writing the loop ---------------------------------------------------------------------


def _emit(g: _Group, ctx: _Ctx) -> list[ast.stmt] | None:
    """The statements running chain ``g`` (None: a precondition fails)."""
    ndim = ctx.shapes.ndim(g.cls)
    checked = _checked(g, ndim, ctx)
    if not ndim or checked is None or not _apart(g, ctx):
        return None
    checks, ref = checked
    live = ctx.live_after(g) | g.post_needs
    idx = [ctx.fresh("_k" if d == 0 else f"_k{d + 1}") for d in range(ndim)]
    elem: dict[str, str] = {}  # array made in the loop -> its element's name
    outs: dict[str, str] = {}  # array kept after the loop -> the array it is written into
    before = {n for n in g.first_read}
    for n in sorted(g.made & live):
        outs[n] = ctx.fresh(f"{n}_out") if n in before else n
    alloc = [_assign(o, _call(ctx.np_name, "empty_like", [_name(ref)])) for o in outs.values()]
    inits: list[ast.stmt] = []
    inner: list[ast.stmt] = []
    sums: dict[int, ast.stmt] = {}
    for s, kind in g.loop:
        if kind == "comment":
            inner.append(s)
        elif kind == "elem":
            made = _element_stmt(s, g, elem, idx, ctx)
            inner += [*ctx.pending, made]
            ctx.pending.clear()
        else:
            sums[id(s)] = _sum_stmt(s, g, elem, idx, inits, inner, ctx)
    post = [sums.get(id(s)) or _stand_in_push(s, g.made - live, ref, ctx) for s in g.post]
    for n, o in outs.items():
        inner.append(_assign_to(ast.Subscript(value=_name(o), slice=_index(idx),
                                              ctx=ast.Store()), _name(elem[n])))
    loop = _nest(idx, ref, inner)
    kept = ", ".join(sorted(outs)) or "none"
    gone = ", ".join(sorted(g.made - set(outs))) or "none"
    note = comment(f"one loop over the elements of {ref} (arrays kept: {kept}; "
                   f"no arrays for: {gone})")
    after = [_assign(n, _name(o)) for n, o in outs.items() if o != n]
    # (a comparison reading what a pop before the loop binds: the pops go before it)
    hoist = {n for p in checks for n in p} & g.pre_binds
    fused = [*([] if hoist else g.pre), note, *alloc, *inits, loop, *after, *post]
    for s in fused:
        ast.copy_location(s, g.stmts[0])
        ast.fix_missing_locations(s)
    if not checks:
        ctx.last[id(g.stmts[0])] = fused[-1]
        ctx.checks[id(g.stmts[0])] = ()
        return fused
    return _guarded(g, fused, checks, g.pre if hoist else [], ctx)


def _guarded(g: _Group, fused: list[ast.stmt], checks: list[tuple[str, str]],
             hoisted: list[ast.stmt], ctx: _Ctx) -> list[ast.stmt]:
    """``if`` the arrays of each pair of ``checks`` have one shape: ``fused``, else the
    chain's statements as written; ``hoisted`` (statements of the chain) go before."""
    test = ast.BoolOp(op=ast.And(), values=[ast.Compare(
        left=_attr(a, "shape"), ops=[ast.Eq()], comparators=[_attr(b, "shape")])
        for a, b in checks]) if len(checks) > 1 else ast.Compare(
        left=_attr(checks[0][0], "shape"), ops=[ast.Eq()],
        comparators=[_attr(checks[0][1], "shape")])
    shapes = ", ".join(sorted({n for p in checks for n in p}))
    pre = {id(s) for s in hoisted}
    guard = ast.If(test=test, body=fused, orelse=[s for s in g.stmts if id(s) not in pre])
    ast.copy_location(guard, g.stmts[0])
    ast.fix_missing_locations(guard)
    ctx.last[id(g.stmts[0])] = guard
    ctx.guards[id(g.stmts[0])] = (guard, fused)
    ctx.checks[id(g.stmts[0])] = tuple(checks)
    note = comment(f"where {shapes} have one shape (else as written, broadcasting)")
    return [*hoisted, note, guard]


def _checked(g: _Group, ndim: int | None, ctx: _Ctx
             ) -> tuple[list[tuple[str, str]], str] | None:
    """(the pairs of arrays whose shapes chain ``g`` compares, the array its loop goes
    over); None where the number of dimensions of an array it reads is not the loop's.
    The loose classes joined what an operation combines; the loop is sound where the
    arrays it reads (made before it) have one shape: those of one strict class have, one
    of each strict class is compared with the others, and each array of no strict class
    itself (and the arguments a strict class assumed one)."""
    reads = [*g.first_read, *(n for n in g.shaped if n not in g.made)]
    reps: dict[str, str] = {}
    for n in reads:
        c = ctx.strict.root(ctx.strict.of(n))
        if c is None and ctx.strict.ndims.get(n) == ndim:
            c = n  # (of no proven class: its own shape is compared)
        if c in (None, SCALAR) or ctx.strict.ndims.get(c) != ndim:
            return None
        reps.setdefault(c, n)
    ref = g.cls if g.cls in ctx.shapes.params and g.cls in reps else next(
        (n for n in [*g.first_read, *g.shaped] if n not in g.made or n in g.inplace), None)
    if ref is None:
        return None
    checks: list[tuple[str, str]] = []
    for c in reps:
        checks += [p for p in ctx.strict.checks(c) if p not in checks]
    first, *rest = reps.values()
    return checks + [(first, n) for n in rest], ref


def _stand_in_of(s: ast.stmt, ctx: _Ctx) -> str | None:
    """``n`` where ``s`` pushes ``shape_stand_in(n)`` on a list tape."""
    if _tape_of(s, ctx) is None or not isinstance(s, ast.Expr):
        return None
    arg = s.value.args[0]
    return arg.args[0].id if isinstance(arg, ast.Call) else None


def _stand_in_push(s: ast.stmt, gone: set[str], ref: str, ctx: _Ctx) -> ast.stmt:
    """``s``, or where it pushes a stand-in of an array of ``gone`` (the loop makes it but
    keeps it not), the push of a stand-in of ``ref`` (of that array's shape and dtype,
    as ``empty_like(ref)`` would make it)."""
    if _stand_in_of(s, ctx) not in gone:
        return s
    call = s.value.args[0]
    new = ast.Call(func=call.func, args=[_name(ref)], keywords=[])
    push = ast.Call(func=s.value.func, args=[new], keywords=[])
    return ast.copy_location(ast.Expr(value=push), s)


def _apart(g: _Group, ctx: _Ctx) -> bool:
    """No array written in place shares a buffer with another array of the chain."""
    names = g.made | g.inplace | set(g.first_read)
    return all(ctx.flow.alone(w, names) for w in g.inplace)


def _element_stmt(s: ast.stmt, g: _Group, elem: dict[str, str], idx: list[str],
                  ctx: _Ctx) -> ast.stmt:
    """The loop's statement for an "elem" statement ``s``."""
    t = _target(s)
    value = _at(s.value, elem, idx, ctx)
    if isinstance(s, ast.AugAssign):
        if t in elem:
            return _assign(elem[t], ast.BinOp(left=_name(elem[t]), op=s.op, right=value))
        sub = ast.Subscript(value=_name(t), slice=_index(idx), ctx=ast.Store())
        return ast.AugAssign(target=sub, op=s.op, value=value)
    if t not in elem:
        elem[t] = ctx.fresh(f"{t}_e")
    return _assign(elem[t], value)


def _sum_stmt(s: ast.stmt, g: _Group, elem: dict[str, str], idx: list[str],
              inits: list[ast.stmt], inner: list[ast.stmt], ctx: _Ctx) -> ast.stmt:
    """The statement after the loop for a "reduce" statement ``s``, each of its sums an
    accumulator (set to 0 in ``inits``, added to in ``inner``)."""
    sums: list[ast.Call] = []
    _elementwise(s.value, ctx, sums)
    names: dict[int, str] = {}
    for c in sums:
        acc = ctx.fresh(f"{_target(s)}_sum")
        names[id(c)] = acc
        inits.append(_assign(acc, ast.Constant(value=0.0)))
        terms = [_at(t, elem, idx, ctx) for t in reduction_terms(c, ctx.shapes, ctx.env)]
        inner += ctx.pending
        ctx.pending.clear()
        prod = terms[0]
        for t in terms[1:]:
            prod = ast.BinOp(left=prod, op=ast.Mult(), right=t)
        inner.append(ast.AugAssign(target=_name(acc, ast.Store()), op=ast.Add(), value=prod))

    def swap(e: ast.expr) -> ast.expr:
        if id(e) in names:
            return _name(names[id(e)])
        for f, v in ast.iter_fields(e):
            if isinstance(v, ast.expr):
                setattr(e, f, swap(v))
            elif isinstance(v, list):
                setattr(e, f, [swap(x) if isinstance(x, ast.expr) else x for x in v])
        return e

    value = swap(_shallow(s.value, names))
    new = ast.Assign(targets=[_name(_target(s), ast.Store())], value=value) \
        if isinstance(s, ast.Assign) else ast.AugAssign(
            target=_name(_target(s), ast.Store()), op=s.op, value=value)
    return ast.copy_location(new, s)


def _shallow(e: ast.expr, stop: dict[int, str]) -> ast.expr:
    """A copy of ``e`` down to the nodes in ``stop`` (kept, to be swapped by identity)."""
    if id(e) in stop or not isinstance(e, ast.AST):
        return e
    new = e.__class__()
    for f, v in ast.iter_fields(e):
        if isinstance(v, ast.AST):
            v = _shallow(v, stop)
        elif isinstance(v, list):
            v = [_shallow(x, stop) if isinstance(x, ast.AST) else x for x in v]
        setattr(new, f, v)
    return ast.copy_location(new, e)


def _at(e: ast.expr, elem: dict[str, str], idx: list[str], ctx: _Ctx) -> ast.expr:
    """``e`` at one element: an array read at the index (or its element made in the
    loop), ``np.where`` a conditional expression, identity reshapings dropped."""
    if isinstance(e, ast.Name):
        if e.id in elem:
            return _name(elem[e.id])
        if ctx.shapes.of(e.id) == SCALAR:
            return _name(e.id)
        again = _recomputable(e.id, ctx)
        if again is None:
            return ast.Subscript(value=_name(e.id), slice=_index(idx), ctx=ast.Load())
        value = _at(again, elem, idx, ctx)
        elem[e.id] = ctx.fresh(f"{e.id}_e")
        ctx.pending.append(_assign(elem[e.id], value))
        return _name(elem[e.id])
    if isinstance(e, ast.Constant):
        return ast.Constant(value=e.value)
    passed = _passed(e, ctx)
    if passed is not None:
        return _at(passed, elem, idx, ctx)
    if isinstance(e, ast.Call) and resolve(e.func, ctx.env) is np.where and len(e.args) == 3:
        c, a, b = (_at(x, elem, idx, ctx) for x in e.args)
        return ast.IfExp(test=c, body=a, orelse=b)
    new = e.__class__()
    for f, v in ast.iter_fields(e):
        if isinstance(v, ast.expr) and f != "func":
            v = _at(v, elem, idx, ctx)
        elif isinstance(v, list):
            v = [_at(x, elem, idx, ctx) if isinstance(x, ast.expr) else x for x in v]
        setattr(new, f, v)
    return new


#: the most an array's element may cost to compute again instead of being read (units of
#: ``primitives.Primitive.cost``: an add 1, a division 4; ``exp`` 20 is read)
RECOMPUTE_COST = 4.0


def _recomputable(n: str, ctx: _Ctx) -> ast.expr | None:
    """The value of array ``n`` where the loop computes its element again rather than
    reading it (XLA's rematerialisation): ``n`` bound once by an elementwise statement of
    its class whose own operation is cheap, from names holding one value (``stable``)."""
    vals = ctx.shapes.values.get(n)
    if n not in ctx.stable or ctx.strict.of(n) in (None, SCALAR) or not vals \
            or len(vals) != 1 or vals[0] is None:
        return None
    e = vals[0]
    sums: list[ast.Call] = []
    if isinstance(e, (ast.Name, ast.Constant)) or not _elementwise(e, ctx, sums) or sums \
            or ctx.strict.expr(e) != ctx.strict.of(n) or _cost(e, ctx) > RECOMPUTE_COST:
        return None
    if not all(m in ctx.stable or ctx.shapes.of(m) == SCALAR and m in ctx.env
               for m in loaded_ids(e)):
        return None
    return e


def _cost(e: ast.expr, ctx: _Ctx) -> float:
    """What computing ``e`` once costs, its operands read (None costs: unknown, dear)."""
    if isinstance(e, (ast.Name, ast.Constant)):
        return 0.0
    passed = _passed(e, ctx)
    if passed is not None:
        return _cost(passed, ctx)
    own = 4.0 if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Div, ast.Mod,
                                                                 ast.FloorDiv)) else \
        99.0 if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Pow) else 1.0
    if isinstance(e, ast.Call):
        own = cost(resolve(e.func, ctx.env))
        own = 99.0 if own is None else own
    parts = elementwise_parts(e, ctx.env) or []
    return own + sum(_cost(p, ctx) for p in parts)


def _nest(idx: list[str], ref: str, inner: list[ast.stmt]) -> ast.stmt:
    body = inner
    for d in range(len(idx) - 1, -1, -1):
        size = ast.Subscript(value=_attr(ref, "shape"), slice=ast.Constant(value=d),
                             ctx=ast.Load())
        body = [ast.For(target=_name(idx[d], ast.Store()),
                        iter=ast.Call(func=_name("range"), args=[size], keywords=[]),
                        body=body, orelse=[])]
    return body[0]


def _index(idx: list[str]) -> ast.expr:
    return _name(idx[0]) if len(idx) == 1 else ast.Tuple(elts=[_name(i) for i in idx],
                                                         ctx=ast.Load())


def _name(n: str, c: ast.expr_context | None = None) -> ast.Name:
    return ast.Name(id=n, ctx=c or ast.Load())


def _attr(n: str, a: str) -> ast.Attribute:
    return ast.Attribute(value=_name(n), attr=a, ctx=ast.Load())


def _call(mod: str, f: str, args: list[ast.expr]) -> ast.Call:
    return ast.Call(func=_attr(mod, f), args=args, keywords=[])


def _assign(n: str, v: ast.expr) -> ast.Assign:
    return ast.Assign(targets=[_name(n, ast.Store())], value=v)


def _assign_to(t: ast.expr, v: ast.expr) -> ast.Assign:
    return ast.Assign(targets=[t], value=v)


__all__ = ["MIN_STATEMENTS", "fuse_elements"]
