"""Tuples of values: a tuple argument becomes one parameter per entry, and a local tuple
one variable per entry, so the later passes see only separate values.

A local tuple is split when every read of it unpacks it (``x, v = state``), indexes it
with a constant (``state[0]``, ``p.W`` on a namedtuple argument), asks its ``len``,
loops over it, copies it or puts it in another tuple, or returns it; every assignment
gives it a tuple of the same structure.  Otherwise it is left as it was
(``shape = (n, m)`` passed to ``np.zeros`` stays a tuple).

Before::                                  After::

    def loss(p, X):                           def loss(p_0, p_1, X):
        W, b = p                                  W, b = (p_0, p_1)
        state = (X @ W, b)                        state_0, state_1 = (X @ W, b)
        r, c = state                              r, c = (state_0, state_1)
        return np.sum(r * c) + p[1]               return np.sum(r * c) + p_1
"""

from __future__ import annotations

import ast
from typing import Any

from ..naming import Namer
from ..nodes import children, nodes_of, walk

#: a tuple's structure: None for an entry that is not itself split, else
#: ``(entries, field names)`` (the names of a namedtuple argument's fields, else None)
Shape = Any

_ROUNDS = 32  # splitting a tuple may expose another (``q = p[0]`` of a nested tuple)


def leaf_names(param: str, shape: Shape, taken: set[str]) -> list[str]:
    """The parameters a tuple argument ``param`` of this ``shape`` becomes: ``p_0``,
    ``p_1`` (``p_0_1`` nested), with ``_`` appended where a name is taken."""
    out: list[str] = []

    def go(base: str, s: Shape) -> None:
        if s is None:
            name = base
            while name in taken:
                name += "_"
            taken.add(name)
            out.append(name)
            return
        for i, e in enumerate(s[0]):
            go(f"{base}_{i}", e)

    go(param, shape)
    return out


def flatten_params(params: list[str], body: list[ast.stmt],
                   tuples: dict[str, tuple[Shape, list[str], bool]],
                   at: ast.AST) -> tuple[list[str], list[ast.stmt]]:
    """Each tuple parameter replaced by its entries (``tuples``: its shape and entry
    names, and whether it is differentiated), bound to its old name at the top of the
    body (``split`` then splits it)."""
    out: list[str] = []
    binds: list[ast.stmt] = []
    for p in params:
        if p not in tuples:
            out.append(p)
            continue
        shape, leaves = tuples[p][:2]
        out.extend(leaves)
        it = iter(leaves)
        value = _literal(shape, lambda: ast.Name(id=next(it), ctx=ast.Load()))
        binds.append(ast.copy_location(ast.Assign(
            targets=[ast.Name(id=p, ctx=ast.Store())], value=value), at))
    for b in binds:
        ast.fix_missing_locations(b)
    return out, binds + body


def _literal(shape: Shape, leaf, fields: dict[int, Any] | None = None) -> ast.expr:
    """The tuple of this structure whose entries ``leaf()`` gives (``fields``: each new
    tuple node's id -> a namedtuple's field names, for ``p.name``)."""
    if shape is None:
        return leaf()
    node = ast.Tuple(elts=[_literal(e, leaf, fields) for e in shape[0]], ctx=ast.Load())
    if fields is not None:
        fields[id(node)] = shape[1]
    return node


def _parents(body: list[ast.stmt]) -> dict[int, ast.AST]:
    parent: dict[int, ast.AST] = {}
    todo: list[ast.AST] = list(body)
    for n in todo:  # (a growing list: every node under ``body``)
        for c in children(n):
            parent[id(c)] = n
            todo.append(c)
    return parent


def _index(sub: ast.Subscript) -> int | None:
    s = sub.slice
    if isinstance(s, ast.Constant) and type(s.value) is int:
        return s.value
    if isinstance(s, ast.UnaryOp) and isinstance(s.op, ast.USub) \
            and isinstance(s.operand, ast.Constant) and type(s.operand.value) is int:
        return -s.operand.value
    return None


class _Uses:
    """Every store and load of every name, with the reads a split tuple allows."""

    def __init__(self, body: list[ast.stmt], returns: list[ast.expr], params: list[str]):
        self.assigns: dict[str, list[ast.Assign]] = {}
        self.bad: dict[str, ast.AST] = {p: None for p in params}  # name -> why not split
        #: name -> (how, detail, statement): how a split tuple may be read
        self.reads: dict[str, list[tuple[str, Any, Any]]] = {}
        parent = _parents([*body, *returns])
        for s in body:
            for n in nodes_of(s):
                if isinstance(n, ast.Name):
                    self._use(n, parent, s)
        for r in returns:
            if isinstance(r, ast.Name) and len(returns) == 1:
                self.reads.setdefault(r.id, []).append(("return", None, r))
                continue
            for n in nodes_of(r):
                if isinstance(n, ast.Name):
                    self._use(n, parent, r)

    def _use(self, n: ast.Name, parent: dict[int, ast.AST], stmt: ast.stmt) -> None:
        p = parent.get(id(n))
        if isinstance(n.ctx, ast.Store):
            if isinstance(p, ast.Assign) and len(p.targets) == 1 and p.targets[0] is n:
                self.assigns.setdefault(n.id, []).append(p)
            else:
                self.bad.setdefault(n.id, stmt)
            return
        if not isinstance(n.ctx, ast.Load):
            self.bad.setdefault(n.id, stmt)
            return
        how: tuple[str, Any] = ("other", stmt)
        if isinstance(p, ast.Subscript) and p.value is n and isinstance(p.ctx, ast.Load) \
                and _index(p) is not None:
            how = ("index", _index(p))
        elif isinstance(p, ast.Attribute) and isinstance(p.ctx, ast.Load):
            how = ("field", p.attr)
        elif isinstance(p, ast.Call) and isinstance(p.func, ast.Name) and p.func.id == "len" \
                and p.args == [n] and not p.keywords:
            how = ("len", None)
        elif isinstance(p, ast.For) and p.iter is n:
            how = ("whole", None)  # (a loop over a tuple of names is unrolled: desugar.py)
        else:
            q, child = p, n
            while isinstance(q, ast.Tuple):
                q, child = parent.get(id(q)), q
            if isinstance(q, ast.Assign) and q.value is child:
                how = ("whole", None)
        self.reads.setdefault(n.id, []).append((*how, stmt))
        if how[0] == "other":
            self.bad.setdefault(n.id, stmt)


def _shape_of(e: ast.expr, shapes: dict[str, Shape], cands: set[str]) -> Shape | bool:
    """The structure ``e`` gives a tuple it is assigned to: False where it is no tuple of
    known structure (True: a tuple of a candidate whose structure is not known yet)."""
    if isinstance(e, ast.Name) and e.id in cands:
        return shapes.get(e.id, True)
    if not isinstance(e, ast.Tuple):
        return False
    elts = []
    for x in e.elts:
        if isinstance(x, ast.Starred):
            return False
        s = _shape_of(x, shapes, cands) if isinstance(x, (ast.Tuple, ast.Name)) else None
        if s is True:
            return True
        elts.append(None if s is False else s)
    return (tuple(elts), None)


def _misfit(shape: Shape, reads: list[tuple[str, Any, Any]]) -> tuple[str, Any] | None:
    """The first read a tuple of this structure cannot serve: (what is wrong, where)."""
    n = len(shape[0])
    fields = shape[1] or ()
    for how, d, where in reads:
        if how == "index" and not -n <= d < n:
            return f"index {d} is out of range for a tuple of {n}", where
        if how == "field" and d not in fields:
            what = f"fields {', '.join(fields)}" if fields else "no fields (a plain tuple)"
            return f"'.{d}' is read but it has {what}", where
        if how == "return" and any(e is not None for e in shape[0]):
            return "a nested tuple is returned (outputs are flat)", where
    return None


def _bare(s: Shape) -> Any:
    """A structure without field names (for comparing two)."""
    return None if s is None else tuple(_bare(e) for e in s[0])


def _candidates(uses: _Uses, fixed: dict[str, Shape]) -> dict[str, Shape]:
    """The tuples to split and their structures (``fixed``: a tuple argument's, which
    carries its namedtuples' field names)."""
    cands = {t for t, a in uses.assigns.items() if t not in uses.bad
             and all(isinstance(s.value, (ast.Tuple, ast.Name)) for s in a)}
    while True:
        shapes: dict[str, Shape] = {}
        for _ in range(len(cands) + 1):
            for t in cands:
                vals = [_shape_of(a.value, shapes, cands) for a in uses.assigns[t]]
                if any(v is True or v is False for v in vals):
                    continue
                if len({repr(_bare(v)) for v in vals}) == 1:
                    same = t in fixed and _bare(fixed[t]) == _bare(vals[0])
                    shapes[t] = fixed[t] if same else vals[0]
        keep = {t for t in cands if t in shapes and shapes[t][0]
                and _misfit(shapes[t], uses.reads.get(t, [])) is None}
        if keep == cands:
            return {t: shapes[t] for t in keep}
        cands = keep


class _Split(ast.NodeTransformer):
    """Reads of the split tuples replaced by their entries' variables."""

    def __init__(self, leaves: dict[str, tuple[Shape, list[str]]]):
        self.leaves = leaves
        self.fields: dict[int, Any] = {}  # tuple node id -> namedtuple field names

    def entries(self, t: str) -> ast.expr:
        shape, names = self.leaves[t]
        it = iter(names)
        return _literal(shape, lambda: ast.Name(id=next(it), ctx=ast.Load()), self.fields)

    def visit_Name(self, n: ast.Name) -> ast.expr:
        if n.id in self.leaves and isinstance(n.ctx, ast.Load):
            return ast.copy_location(self.entries(n.id), n)
        return n

    def visit_Subscript(self, n: ast.Subscript) -> ast.expr:
        self.generic_visit(n)
        if isinstance(n.value, ast.Tuple) and isinstance(n.ctx, ast.Load) \
                and _index(n) is not None and -len(n.value.elts) <= _index(n) < len(n.value.elts):
            return n.value.elts[_index(n)]
        return n

    def visit_Attribute(self, n: ast.Attribute) -> ast.expr:
        self.generic_visit(n)
        fields = self.fields.get(id(n.value)) or ()
        if isinstance(n.value, ast.Tuple) and isinstance(n.ctx, ast.Load) and n.attr in fields:
            return n.value.elts[fields.index(n.attr)]
        return n

    def visit_Call(self, n: ast.Call) -> ast.expr:
        self.generic_visit(n)
        if isinstance(n.func, ast.Name) and n.func.id == "len" and len(n.args) == 1 \
                and isinstance(n.args[0], ast.Tuple) and not n.keywords:
            return ast.copy_location(ast.Constant(value=len(n.args[0].elts)), n)
        return n

    def visit_Assign(self, s: ast.Assign) -> ast.stmt:
        s.value = self.visit(s.value)
        t = s.targets[0]
        if isinstance(t, ast.Name) and t.id in self.leaves:
            s.targets = [self.entries(t.id)]
            for n in walk(s.targets[0]):
                if isinstance(n, ast.Name):
                    n.ctx = ast.Store()
        _flatten_pair(s)
        return _one_by_one(s)


def _flatten_pair(s: ast.Assign) -> None:
    """``(a, b), c = ((x, y), z)`` becomes ``a, b, c = (x, y, z)``, in place; a single
    entry ``a = x``."""
    t, v = s.targets[0], s.value
    if not (isinstance(t, ast.Tuple) and isinstance(v, ast.Tuple)):
        return
    ts, vs = [], []

    def go(a: ast.expr, b: ast.expr) -> bool:
        if isinstance(a, ast.Tuple) and isinstance(b, ast.Tuple) \
                and len(a.elts) == len(b.elts):
            return all(go(x, y) for x, y in zip(a.elts, b.elts, strict=True))
        if isinstance(a, (ast.Tuple, ast.Starred)) or isinstance(b, ast.Starred):
            return False
        ts.append(a)
        vs.append(b)
        return True

    if not go(t, v):
        return
    if len(ts) == 1:
        s.targets, s.value = [ts[0]], vs[0]
    else:
        s.targets = [ast.Tuple(elts=ts, ctx=ast.Store())]
        s.value = ast.Tuple(elts=vs, ctx=ast.Load())
    ast.copy_location(s.targets[0], t)
    ast.copy_location(s.value, v)


def _one_by_one(s: ast.Assign) -> ast.stmt | list[ast.stmt]:
    """``wb, s = ((a, b), c)`` as ``wb = (a, b)`` and ``s = c``, so ``wb`` can be split
    too: only where some entry gives a name a tuple, and no value reads a target."""
    t, v = s.targets[0], s.value
    if not (isinstance(t, ast.Tuple) and isinstance(v, ast.Tuple)
            and len(t.elts) == len(v.elts) and any(isinstance(e, ast.Tuple) for e in v.elts)
            and all(isinstance(e, ast.Name) for e in t.elts)):
        return s
    names = {e.id for e in t.elts}
    if len(names) < len(t.elts) or any(isinstance(n, ast.Name) and n.id in names
                                       for e in v.elts for n in walk(e)):
        return s
    out = []
    for a, b in zip(t.elts, v.elts, strict=True):
        out.append(ast.copy_location(ast.Assign(targets=[a], value=b), s))
    s.targets, s.value = [t.elts[0]], v.elts[0]  # (the first keeps the statement's notes)
    return [s, *out[1:]]


def split(body: list[ast.stmt], returns: list[ast.expr], params: list[str], namer: Namer,
          tuples: dict[str, tuple[Shape, list[str], bool]] | None = None
          ) -> tuple[list[ast.stmt], list[ast.expr]]:
    """Split the tuples whose every use allows it (see the module's docstring); returns
    the new body and returned values.  ``tuples``: the tuple arguments (``flatten_params``),
    whose entries are the parameters themselves."""
    tuples = tuples or {}
    if not tuples and not _any_tuple(body):
        return body, returns  # (no tuple is made: none to split)
    fixed = {p: v[0] for p, v in tuples.items()}
    for _ in range(_ROUNDS):
        shapes = _candidates(_Uses(body, returns, params), fixed)
        if not shapes:
            break
        leaves = {t: (s, list(tuples[t][1]) if t in tuples and s is fixed[t] else
                      [namer.unique(n) for n in leaf_names(t, s, set())])
                  for t, s in shapes.items()}
        tr = _Split(leaves)
        body = [x for s in body for x in _as_list(tr.visit(s))]
        if len(returns) == 1 and isinstance(returns[0], ast.Name) \
                and returns[0].id in leaves:
            returns = list(tr.entries(returns[0].id).elts)
        else:
            returns = [tr.visit(r) for r in returns]
        body = [s for s in body if not _self_assign(s)]
        for s in body:
            ast.fix_missing_locations(s)
    return body, returns


def _any_tuple(body: list[ast.stmt]) -> bool:
    """Does ``body`` hold a tuple display (without one, no local tuple is made)?"""
    return any(n.__class__ is ast.Tuple for s in body for n in nodes_of(s))


def _as_list(s: ast.stmt | list[ast.stmt]) -> list[ast.stmt]:
    return s if isinstance(s, list) else [s]


def _self_assign(s: ast.stmt) -> bool:
    """``p_0, p_1 = (p_0, p_1)``: what a tuple argument's binding becomes once split."""
    if not isinstance(s, ast.Assign):
        return False
    t, v = s.targets[0], s.value
    if isinstance(t, ast.Tuple) and isinstance(v, ast.Tuple):
        t, v = t.elts, v.elts
    else:
        t, v = [t], [v]
    return len(t) == len(v) and all(isinstance(a, ast.Name) and isinstance(b, ast.Name)
                                    and a.id == b.id for a, b in zip(t, v, strict=True))


def refuse_whole(body: list[ast.stmt], returns: list[ast.expr], params: list[str],
                 tuples: dict[str, Any], parsed) -> None:
    """A differentiated tuple argument left whole (read other than by unpacking, constant
    indices or fields) is refused at the read, with what to write instead; so is a nested
    target (``(a, b), c = q``) whose value was not split.  Another tuple argument left
    whole is rebuilt from its entries (``shape = (shape_0, shape_1)``), as it was passed."""
    for s in body:
        for n in nodes_of(s):
            if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Tuple) and any(
                    isinstance(e, ast.Tuple) for e in n.targets[0].elts):
                raise parsed.error("nested tuple targets are supported where they unpack a "
                                   "tuple jitgrad splits into its entries, not here", n,
                                   "unpack in two steps")
    if not tuples:
        return
    uses = _Uses(body, returns, params)
    for p, (shape, _, wrt) in tuples.items():
        if p not in uses.assigns and p not in uses.reads:
            continue
        misfit = _misfit(shape, uses.reads.get(p, []))
        if not wrt and (misfit is None or misfit[0].startswith("a nested")):
            continue
        if uses.bad.get(p) is None and misfit is not None:
            raise parsed.error(f"the tuple argument '{p}': {misfit[0]}", misfit[1],
                               "pass a namedtuple to read fields, and index within range")
        where = uses.bad.get(p) or next(iter(uses.assigns.get(p, [])), None)
        raise parsed.error(
            f"the tuple argument '{p}' is used as a whole here; jitgrad passes a tuple "
            "argument's entries as separate values", where,
            f"unpack it ('a, b = {p}'), index it with a constant ('{p}[0]') or read a "
            f"namedtuple's field ('{p}.name'), and pass the entries on, not '{p}' itself")
