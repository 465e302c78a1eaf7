"""Desugar control flow into the structured subset the reverse pass knows.

* ``single_exit``: every ``return`` becomes an assignment to return variables, with
  the rest of the block nested under ``else`` (or a ``_returned`` flag when a return
  sits in a loop), so the function ends in exactly one ``return``.
* ``loops``: ``for v in x`` / ``enumerate(x)`` / ``zip(x, y)`` / ``x.flat`` become range
  loops (``np.ndindex`` and literal tuples: ``iterables.py``), ``continue``
  disappears, and ``break`` survives only as the last statement of a loop body.

Before::                          After::

    for v in x:                       for _i in range(len(x)):
        if v < 0:                         v = x[_i]
            break                         if v < 0:
        s += v                                break
                                          else:
                                              s += v
"""

from __future__ import annotations

import ast

from ...rules.primitives import mutating
from ..analysis import dataflow
from ..naming import Namer
from ..nodes import clone, nodes_of, walk
from ..notes import BREAK_FLAG, LOOP_SEQ, PRANGE, PRE
from .build import assign, const, contains, name, not_
from .iterables import Iterables
from .parse import Parsed


def may_return(stmts) -> bool:
    return contains(list(stmts), (ast.Return,))


def always_returns(stmts: list[ast.stmt]) -> bool:
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, ast.Return):
        return True
    if isinstance(last, ast.If):
        return always_returns(last.body) and always_returns(last.orelse)
    return False


# --- single exit ------------------------------------------------------------------


class _SingleExit:
    def __init__(self, parsed: Parsed, namer: Namer, arity: int, base: str = "_ret"):
        self.parsed = parsed
        self.namer = namer
        self.flag: str | None = None
        self.arity = arity
        self.rets = [namer.fresh(base) for _ in range(arity)]

    def ret_assign(self, node: ast.Return) -> list[ast.stmt]:
        v = node.value
        if self.arity == 1:
            vals = [v if v is not None else const(None)]
        elif isinstance(v, ast.Tuple) and len(v.elts) == self.arity:
            vals = list(v.elts)
        else:
            raise self.parsed.error("all returns must return the same number of values", node,
                                    "return a tuple of the same length everywhere")
        out = [assign(r, e) for r, e in zip(self.rets, vals, strict=True)]
        for s in out:
            ast.copy_location(s, node)
        return out

    def need_flag(self) -> str:
        if self.flag is None:
            self.flag = self.namer.fresh("_returned")
        return self.flag

    def block(self, stmts: list[ast.stmt], in_loop: bool) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for idx, s in enumerate(stmts):
            rest = stmts[idx + 1:]
            if isinstance(s, ast.Return):
                out += self.ret_assign(s)
                if in_loop:
                    out += [assign(self.need_flag(), const(True)), ast.Break()]
                elif self.flag is not None:
                    out.append(assign(self.flag, const(True)))
                return out
            if not may_return([s]):
                out.append(s)
                continue
            if isinstance(s, ast.If) and not in_loop:
                # outside loops: the rest of the block moves into each branch that can
                # fall through, so no flag is needed
                for f in ("body", "orelse"):
                    branch = getattr(s, f)
                    if not always_returns(branch):
                        branch = branch + [clone(x) for x in rest]
                    setattr(s, f, self.block(branch, False))
                out.append(s)
                return out
            if isinstance(s, ast.If):
                body_ret, else_ret = always_returns(s.body), always_returns(s.orelse)
                s.body = self.block(s.body, in_loop)
                s.orelse = self.block(s.orelse, in_loop)
                out.append(s)
                if body_ret and else_ret:
                    return out
                if body_ret and not may_return(s.orelse):
                    s.orelse = s.orelse + self.block(rest, in_loop)
                    return out
                if else_ret and not may_return(s.body):
                    s.body = s.body + self.block(rest, in_loop)
                    return out
            else:  # a loop that may return
                s.body = self.block(s.body, True)
                out.append(s)
            flag = self.need_flag()
            if in_loop:
                out.append(ast.If(test=name(flag), body=[ast.Break()], orelse=[]))
                out += self.block(rest, in_loop)
            elif rest:
                out.append(ast.If(test=not_(name(flag)), body=self.block(rest, in_loop),
                                  orelse=[]))
            return out
        return out


def _return_arity(parsed: Parsed, body: list[ast.stmt]) -> int:
    arities = set()
    for n in nodes_of(ast.Module(body=body, type_ignores=[])):
        if isinstance(n, ast.Return):
            arities.add(len(n.value.elts) if isinstance(n.value, ast.Tuple) else 1)
    if len(arities) > 1:
        raise parsed.error("all returns must return the same number of values", parsed.tree)
    return arities.pop() if arities else 1


def single_exit(parsed: Parsed, body: list[ast.stmt], namer: Namer,
                keep_tail: bool = True, base: str = "_ret",
                made: list[str] | None = None) -> tuple[list[ast.stmt], list[ast.expr]]:
    """Rewrite ``body`` so it has no return; give back the returned expressions.

    With ``keep_tail``, a body whose only return is its last statement is kept as
    is and that statement's value is returned (no extra variables).  The variables the
    returns assign are named after ``base`` (``_ret``, an inlined helper's ``_name``), and
    appended to ``made`` where given.
    """
    returns = [n for n in nodes_of(ast.Module(body=body, type_ignores=[]))
               if isinstance(n, ast.Return)]
    if keep_tail and len(returns) == 1 and body and body[-1] is returns[0]:
        v = returns[0].value
        vals = list(v.elts) if isinstance(v, ast.Tuple) else [v if v is not None else const(None)]
        return body[:-1], vals
    if not returns:
        return body, [const(None)]
    se = _SingleExit(parsed, namer, _return_arity(parsed, body), base)
    if made is not None:
        made += se.rets
    se.flag = namer.fresh("_returned") if contains(body, (ast.For, ast.While)) else None
    new = se.block(body, False)
    if se.flag is not None:
        new.insert(0, assign(se.flag, const(False)))
    return new, [name(r) for r in se.rets]


# --- loops ------------------------------------------------------------------------


def _is_call_to(node: ast.expr, parsed_env: dict, obj) -> bool:
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    return isinstance(f, ast.Name) and parsed_env.get(f.id) is obj


def _is_prange(node: ast.expr, env: dict) -> bool:
    """``prange(...)`` or ``numba.prange(...)`` (Numba's parallel range)."""
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    obj = env.get(f.id) if isinstance(f, ast.Name) else None
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
        obj = getattr(env.get(f.value.id), f.attr, None) if f.attr == "prange" else None
    try:
        import numba
    except ImportError:  # pragma: no cover - numba is a dependency
        return False
    return obj is not None and obj is getattr(numba, "prange", None)


def _names_target(n: ast.AST, name_: str) -> bool:
    """Is ``n`` a write into ``name_`` in place (``name_[i] = ...``, ``name_ += ...``)?"""
    t = n.target if isinstance(n, ast.AugAssign) else n
    while isinstance(t, ast.Subscript):
        t = t.value
    return isinstance(t, ast.Name) and t.id == name_


def _writes_in_place(body: list[ast.stmt], names: set[str]) -> bool:
    """Does ``body`` write one of ``names``' arrays in place (``a[i] = ..``, ``a += ..``)?"""
    for n in nodes_of(ast.Module(body=body, type_ignores=[])):
        target = n.target if isinstance(n, ast.AugAssign) else \
            n if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store) else \
            n.func.value if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) \
            and mutating(n.func.attr) else None
        if target is not None and dataflow.base_name(target) in names:
            return True
    return False


class _Loops:
    def __init__(self, parsed: Parsed, env: dict, namer: Namer, root: list[ast.stmt]):
        self.parsed = parsed
        self.env = env
        self.namer = namer
        self.root = root
        self.iterables = Iterables(parsed, env, namer, root)

    # for v in x / for i, v in enumerate(x) / for a, b in zip(x, y)
    #   ->  for i in range(len(x)): v = x[i]   (range(min(len(x), len(y))) for zip)
    def for_target(self, s: ast.For) -> ast.For:
        it = s.iter
        if _is_prange(it, self.env):
            # numba.prange: differentiated as the range it iterates; the note keeps the
            # loop parallel in the sweeps where that is safe (backend/prange.py)
            it = s.iter = ast.copy_location(ast.Call(func=ast.Name(id="range", ctx=ast.Load()),
                                                     args=it.args, keywords=it.keywords), it)
            PRANGE.set(s, True)
            self.env.setdefault("range", range)
        if _is_call_to(it, self.env, range):
            if not isinstance(s.target, ast.Name):
                raise self.parsed.error("range loops need a single loop variable", s)
            return s
        idx, pairs = self.unpack(s)
        pres, body, lengths = [], [], []
        targets = {var for var, _ in pairs} | {idx}
        for var, seq in pairs:
            seq, pre = self.loop_seq(s, seq, targets)
            if pre is not None:
                pres.append(pre)
            lengths.append(ast.Call(func=name("len"), args=[seq], keywords=[]))
            body.append(assign(var, ast.Subscript(value=name(seq.id), slice=name(idx),
                                                  ctx=ast.Load())))
        self.env.setdefault("len", len)
        length = lengths[0] if len(lengths) == 1 else ast.Call(  # zip: the shortest
            func=name(self.builtin("min", min)), args=lengths, keywords=[])
        new = ast.For(target=name(idx, True),
                      iter=ast.Call(func=name("range"), args=[length], keywords=[]),
                      body=body + s.body, orelse=[], lineno=s.lineno)
        self.env.setdefault("range", range)
        ast.copy_location(new, s)
        PRE.set(new, pres)  # assignments to hoist before the loop
        return new

    def builtin(self, n: str, obj) -> str:
        self.env.setdefault(n, obj)
        return n

    def unpack(self, s: ast.For) -> tuple[str, list[tuple[str, ast.expr]]]:
        """The index variable and each (loop variable, sequence) of a loop over arrays."""
        it, tgt = s.iter, s.target
        if _is_call_to(it, self.env, enumerate):
            if not (isinstance(tgt, ast.Tuple) and len(tgt.elts) == 2
                    and isinstance(tgt.elts[0], ast.Name) and len(it.args) == 1
                    and not it.keywords):
                raise self.parsed.error("unsupported enumerate loop", s,
                                        "use 'for i, v in enumerate(x)'")
            return tgt.elts[0].id, self.pairs(s, tgt.elts[1], it.args[0])
        return self.namer.fresh("_i"), self.pairs(s, tgt, it)

    def pairs(self, s: ast.For, tgt: ast.expr, it: ast.expr) -> list[tuple[str, ast.expr]]:
        if _is_call_to(it, self.env, zip):
            loose = all(k.arg == "strict" and isinstance(k.value, ast.Constant)
                        and k.value.value is False for k in it.keywords)
            if not (isinstance(tgt, ast.Tuple) and len(tgt.elts) == len(it.args)
                    and it.args and loose and all(isinstance(e, ast.Name) for e in tgt.elts)):
                raise self.parsed.error("unsupported zip loop", s,
                                        "use 'for a, b in zip(x, y)' with one name per array")
            return [(e.id, self.seq_of(a, s)) for e, a in zip(tgt.elts, it.args, strict=True)]
        if isinstance(tgt, ast.Name) and isinstance(it, (ast.Name, ast.Attribute,
                                                           ast.Subscript)):
            return [(tgt.id, self.seq_of(it, s))]
        raise self.parsed.error(
            "only loops over range(...), an array, x.flat, enumerate(...), zip(...), "
            "np.ndindex(...) or a literal tuple are supported", s,
            "write 'for i in range(len(x)):' and index x[i]")

    def seq_of(self, seq: ast.expr, s: ast.For) -> ast.expr:
        """What the loop indexes: ``x.flat`` is ``x.ravel()`` (read once, before the loop)."""
        if not (isinstance(seq, ast.Attribute) and seq.attr == "flat"):
            if isinstance(seq, ast.Call):
                raise self.parsed.error("a loop over a call's result is not supported", s,
                                        "assign it first: 'xs = ...; for v in xs:'")
            return seq
        base = seq.value
        if isinstance(base, ast.Name) and any(
                isinstance(n, (ast.Subscript, ast.AugAssign)) and _names_target(n, base.id)
                and isinstance(getattr(n, "ctx", ast.Store()), ast.Store)
                for n in walk(ast.Module(body=s.body, type_ignores=[]))):
            raise self.parsed.error(f"a loop over {base.id}.flat that writes {base.id}", s,
                                    f"loop over the indices: 'for k in range({base.id}.size)' "
                                    f"with a flat copy 'r = {base.id}.ravel()'")
        return ast.copy_location(ast.Call(func=ast.Attribute(value=base, attr="ravel",
                                                             ctx=ast.Load()),
                                          args=[], keywords=[]), seq)

    def loop_seq(self, s: ast.For, seq: ast.expr, targets: set[str]) \
            -> tuple[ast.Name, ast.stmt | None]:
        """The name the loop indexes, and the assignment making it (None: the array's own).

        (``x op= e`` on the iterated array updates it in place: Python's iteration sees
        that, and so does reading x[i] each trip, so it does not count as rebinding)
        """
        aug_targets = {id(n.target) for n in walk(ast.Module(body=s.body, type_ignores=[]))
                       if isinstance(n, ast.AugAssign)}
        rebound = isinstance(seq, ast.Name) and (seq.id in targets or any(
            isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id == seq.id
            and id(n) not in aug_targets
            for n in walk(ast.Module(body=s.body, type_ignores=[]))))
        if isinstance(seq, ast.Name) and not rebound:
            return seq, None
        # Python iterates the array the loop started with, even if the body rebinds it;
        # a copy is that array when the body writes no array in place (through any name:
        # after ``v, h = h, v`` a write to v is a write to the iterated array)
        tmp = self.namer.fresh("_seq")
        sharing = dataflow.Dataflow(self.root, env=self.env).shares(seq.id) if rebound else set()
        written = _writes_in_place(s.body, sharing) if rebound else True
        pre = assign(tmp, seq if written else ast.Call(func=ast.Attribute(
            value=seq, attr="copy", ctx=ast.Load()), args=[], keywords=[]))
        LOOP_SEQ.set(pre, True)  # refusals name the loop, not the hidden copy
        return name(tmp), pre

    def block(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for s in stmts:
            if isinstance(s, ast.For):
                expanded = self.iterables.expand(s)
                if expanded is not None:  # np.ndindex, literal tuples
                    out += self.block(expanded)
                    continue
                s = self.for_target(s)
                out += [ast.copy_location(pre, s) for pre in PRE.get(s) or ()]
            if isinstance(s, (ast.For, ast.While)):
                s.body = self.loop_body(s)
                brk = BREAK_FLAG.get(s)
                if brk:
                    out.append(ast.copy_location(assign(brk, const(False)), s))
            elif isinstance(s, ast.If):
                s.body = self.block(s.body)
                s.orelse = self.block(s.orelse)
            out.append(s)
        return out

    def loop_body(self, loop: ast.stmt) -> list[ast.stmt]:
        body = self.block(loop.body)
        state = {"brk": None, "jump": None}
        new = self.jumps(body, state, tail=True)
        if state["brk"]:
            BREAK_FLAG.set(loop, state["brk"])
            new.append(ast.If(test=name(state["brk"]), body=[ast.Break()], orelse=[]))
        if state["jump"]:
            new.insert(0, assign(state["jump"], const(False)))
        return new or [ast.Pass()]

    def jumps(self, stmts: list[ast.stmt], st: dict, tail: bool) -> list[ast.stmt]:
        """Remove non-trailing break/continue of the current loop (not nested loops)."""
        out: list[ast.stmt] = []
        for idx, s in enumerate(stmts):
            rest = stmts[idx + 1:]
            last = tail and not rest
            if isinstance(s, ast.Continue):
                if not last:
                    out.append(assign(self._flag(st, "jump", "_skip"), const(True)))
                return out
            if isinstance(s, ast.Break):
                if last:
                    out.append(s)
                else:
                    out.append(assign(self._flag(st, "brk", "_break"), const(True)))
                    out.append(assign(self._flag(st, "jump", "_skip"), const(True)))
                return out
            if isinstance(s, ast.If) and contains([s], (ast.Break, ast.Continue),
                                                   stop=(ast.For, ast.While)):
                body_jumps = self._always_jumps(s.body)
                else_jumps = self._always_jumps(s.orelse)
                if body_jumps and not self._may_jump(s.orelse):
                    s.body = self.jumps(s.body, st, tail)
                    s.orelse = self.jumps(s.orelse + rest, st, tail)
                    out.append(s)
                    return out
                if else_jumps and not self._may_jump(s.body):
                    s.orelse = self.jumps(s.orelse, st, tail)
                    s.body = self.jumps(s.body + rest, st, tail)
                    out.append(s)
                    return out
                s.body = self.jumps(s.body, st, last)
                s.orelse = self.jumps(s.orelse, st, last)
                out.append(s)
                if rest:
                    flag = self._flag(st, "jump", "_skip")
                    out.append(ast.If(test=not_(name(flag)), body=self.jumps(rest, st, tail),
                                      orelse=[]))
                return out
            out.append(s)
        return out

    def _flag(self, st: dict, key: str, base: str) -> str:
        if st[key] is None:
            st[key] = self.namer.fresh(base)
        return st[key]

    def _may_jump(self, stmts) -> bool:
        return contains(list(stmts), (ast.Break, ast.Continue), stop=(ast.For, ast.While))

    def _always_jumps(self, stmts) -> bool:
        if not stmts:
            return False
        last = stmts[-1]
        if isinstance(last, (ast.Break, ast.Continue)):
            return True
        if isinstance(last, ast.If):
            return self._always_jumps(last.body) and self._always_jumps(last.orelse)
        return False


def loops(parsed: Parsed, body: list[ast.stmt], env: dict, namer: Namer,
          returns: list[ast.expr] = ()) -> list[ast.stmt]:
    """Rewrite loops into range loops whose only jump is a trailing ``break``
    (``returns``: the returned expressions, which read the body's names too)."""
    root = body + [ast.Expr(value=r) for r in returns]
    return _Loops(parsed, env, namer, root).block(body)


# --- buffer rotations ---------------------------------------------------------------


def _plain_copy(s: ast.stmt) -> tuple[str, str] | None:
    if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name) \
            and isinstance(s.value, ast.Name):
        return s.targets[0].id, s.value.id
    return None


def rotations(body: list[ast.stmt], returns: list[ast.expr]) -> list[ast.stmt]:
    """``tmp = u; u = v; v = tmp`` -> ``u, v = v, u`` where ``tmp`` is read nowhere else.

    The three-name rotation is how stencil codes swap buffers; as a swap, the adjoint
    buffers swap too instead of two names sharing one written array.
    """
    counted: list[dict[str, int]] = []  # the loads of each name, counted when first asked

    def loads() -> dict[str, int]:
        if not counted:
            out: dict[str, int] = {}
            for n in walk(ast.Module(body=body + [ast.Expr(value=r) for r in returns],
                                     type_ignores=[])):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                    out[n.id] = out.get(n.id, 0) + 1
            counted.append(out)
        return counted[0]

    def block(stmts: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        k = 0
        while k < len(stmts):
            s = stmts[k]
            for f in ("body", "orelse"):
                sub = getattr(s, f, None)
                if sub:
                    setattr(s, f, block(sub))
            trio = [_plain_copy(x) for x in stmts[k:k + 3]]
            if len(trio) == 3 and all(trio):
                (t, u), (u2, v), (v2, t2) = trio
                if u2 == u and v2 == v and t2 == t and len({t, u, v}) == 3 \
                        and loads().get(t, 0) == 1:
                    swap = ast.Assign(targets=[ast.Tuple(elts=[name(u, True), name(v, True)],
                                                         ctx=ast.Store())],
                                      value=ast.Tuple(elts=[name(v), name(u)], ctx=ast.Load()))
                    out.append(ast.copy_location(swap, s))
                    k += 3
                    continue
            out.append(s)
            k += 1
        return out

    return block(body)
