"""Inline: calls to the user's own Python helpers are replaced by their bodies.

Helpers (module-level functions, ``numba.njit`` ones included) are parsed, fenced
and given a single exit; their locals get fresh names; a parameter bound to a
plain name argument becomes that name, so a helper that fills an array the caller
passed in writes the caller's array; keywords and defaults are put in place first
(``call_args.py``).  Recursion is refused (``recursion.py``: a tail call's hint is its loop).

A helper with one return, at its end, leaves its returned expression in the call's place.
One with several binds its result where it returns: to the caller's own target where the
call is the whole right side of ``u = ...`` (or ``u, v = ...``) and the inlined code names
no target (``_binds_directly``), else to a variable named after the helper, one per call
site (``_sgn``, ``_sgn2``), so that no value is a copy of another.

Before::                               After::

    def sgn(a, b):                         a1 = x + 1.0
        if a > 0.0:                        if a1 > 0.0:
            return a * b                       u = a1 * k
        return -a * b                      else:
                                               u = -a1 * k
    u = sgn(x + 1.0, k)                    if u > 0.0:
    y = 2.0 * sgn(u, k)                        _sgn = u * k
                                           else:
                                               _sgn = -u * k
                                           y = 2.0 * _sgn
"""

from __future__ import annotations

import ast
import inspect
import os
import sysconfig
from collections.abc import Callable
from typing import Any

from ...errors import TransformError
from ...markers import checkpoint, checkpointed
from ...rules import is_non_differentiable, lookup
from ...rules.primitives import library_module
from ..astutil import resolve
from ..naming import Namer, names_in
from ..nodes import (
    _STATELESS,
    clone,
    clone_with,
    loaded_ids,
    replace_names,
    stmts_by_depth,
    this_loop,
    walk,
)
from ..notes import AUG, CHECKPOINTED, INLINED, PARAM_OF, Checkpoint
from .call_args import call_arguments
from .call_order import SPLIT_HINT, Ordered
from .desugar import always_returns, assign, const, name, single_exit
from .fence import fence
from .nested import ENTRIES, binds, inner_call, probe, refuse_unsupported, written_gradient
from .numba_kernels import kernel_call
from .parse import Parsed, parse_function, python_function
from .recursion import recursion_error
from .transforms import callee, primal_of, refuse_transform


def user_function(obj: Any) -> Any:
    """The Python function to inline if ``obj`` is a user helper, else None."""
    if obj is None or lookup(obj) is not None or is_non_differentiable(obj):
        return None
    try:
        py = python_function(obj, cuda=True)  # a cuda device function's body inlines too
    except TypeError:
        return None
    mod = getattr(py, "__module__", "") or ""
    if library_module(mod) or not inspect.isfunction(py) or _installed(py):
        return None
    return py


def _library_dirs() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    dirs = {os.path.realpath(paths[k]) for k in ("stdlib", "platstdlib", "purelib", "platlib")
            if k in paths}
    return tuple(d + os.sep for d in dirs)


_LIBRARY_DIRS = _library_dirs()


def _installed(py: Any) -> bool:
    """Is ``py`` from the standard library or an installed package (not the user's code)?"""
    try:
        path = os.path.realpath(inspect.getsourcefile(py) or py.__code__.co_filename)
    except TypeError:
        return True
    return path.startswith(_LIBRARY_DIRS)


def _renamed(node: ast.Name, mapping: dict[str, str | ast.expr]) -> ast.expr:
    """What ``rename`` puts in place of the name ``node``."""
    m = mapping.get(node.id)
    if m is None:
        return node
    if isinstance(m, str):
        return _located(ast.Name(id=m, ctx=node.ctx), node)
    new = clone(m)
    if isinstance(new, ast.expr):
        return _located(new, node)
    return ast.copy_location(new, node)


def _located(new: ast.expr, old: ast.Name) -> ast.expr:
    """``ast.copy_location(new, old)`` for an expression (its location attributes are a
    name's), inline: read and written in the nodes' dictionaries, no call per attribute."""
    d, nd = old.__dict__, new.__dict__
    for a in ("lineno", "col_offset"):
        if a in d and d[a] is not None:
            nd[a] = d[a]
    for a in ("end_lineno", "end_col_offset"):
        if a in d:
            nd[a] = d[a]
        elif hasattr(old, a):  # (a class default: None for an expression)
            setattr(new, a, getattr(old, a))
    return new


def _renamed_copy(node: ast.Name, mapping: dict[str, str | ast.expr]) -> ast.expr:
    """``_renamed(clone(node), mapping)``, without the copy where the name is replaced."""
    return clone(node) if mapping.get(node.id) is None else _renamed(node, mapping)


def renamed_copy(node, mapping: dict[str, str | ast.expr]):
    """``rename(clone(node), mapping)`` in one pass."""
    return clone_with(node, lambda n: _renamed_copy(n, mapping))


def renaming_copier(node) -> Callable[[dict[str, str | ast.expr]], Any]:
    """A function of ``mapping`` returning ``renamed_copy(node, mapping)``, compiled once
    for a node copied at every call site (a rule's template): one dict per node, no
    per-field dispatch.  ``node``: a node or a list of nodes."""
    consts: list[Any] = []

    def lit(v: Any) -> str:
        consts.append(v)
        return f"_c[{len(consts) - 1}]"

    def value(v: Any) -> str:
        if isinstance(v, ast.AST):
            return lit(v) if v.__class__ in _STATELESS else expr(v)
        if isinstance(v, list):
            return "[" + "".join(value(x) + ", " for x in v) + "]"
        if isinstance(v, (set, dict)):
            return lit(v) + ".copy()"
        return lit(v)

    def expr(n: ast.AST) -> str:
        if isinstance(n, ast.Name):
            return f"_nm({lit(n)}, M)"
        items = "".join(f"{k!r}: {value(v)}, " for k, v in n.__dict__.items())
        return f"_mk({lit(n.__class__)}, {{{items}}})"

    src = f"def _copy(M):\n    return {value(node)}\n"
    space = {"_c": consts, "_mk": _make, "_nm": _renamed_copy}
    exec(compile(src, "<template>", "exec"), space)
    return space["_copy"]


def _make(cls: type, fields: dict[str, Any]) -> ast.AST:
    """A node of class ``cls`` whose attributes are ``fields`` (the dict itself)."""
    n = cls.__new__(cls)
    n.__dict__ = fields
    return n


def rename(node, mapping: dict[str, str | ast.expr]):
    """Rename (or substitute expressions for) names throughout ``node``, in place."""
    if isinstance(node, ast.Name):
        return _renamed(node, mapping)
    replace_names(node, lambda n: _renamed(n, mapping))
    return node


def stored_names(stmts: list[ast.stmt]) -> set[str]:
    """The names ``stmts`` bind (``Name`` nodes in a store context)."""
    return loaded_ids(stmts, ast.Store)


class Inliner:
    """Replaces helper calls in a function body, recursively."""

    def __init__(self, root: Parsed, namer: Namer, sites: list[Any] | None = None,
                 split: dict[Any, Any] | None = None):
        self.root = root
        #: the helpers the root's calls of which stay calls, of their stand-ins
        #: (``front/split.py``): python function -> ``SplitHelper``
        self.split = split or {}
        #: the helper each nested gradient call inlines, in order: its gradient code for the
        #: kinds the probe found (``front/nested.py``); None: the calls are probed
        self.sites = sites
        #: per nested gradient call, in order: (its Differentiated, does it return the value
        #: too, the names its arguments are bound to in the probe, the call, the caller)
        self.probes: list[tuple[Any, bool, list[str], ast.Call, Parsed]] = []
        self.env = root.env
        self.namer = namer
        self.stack: list[Any] = [root.func]
        #: loops and checkpointed regions around the statements being inlined (a
        #: checkpointed loop in one is a region of its own)
        self.depth = 0
        #: per call that is the whole right side of an assignment to names (``u, v =
        #: project(...)``), by ``id``: those names (``_bound_names``)
        self.bound: dict[int, list[str]] = {}

    def run(self, body: list[ast.stmt], parsed: Parsed) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for s in body:
            if isinstance(s, ast.For) and isinstance(s.iter, ast.Call) \
                    and resolve(s.iter.func, parsed.env) is checkpointed:
                out += self.run(self.checkpointed(s, parsed), parsed)
                continue
            inner = isinstance(s, (ast.For, ast.While))
            self.depth += inner
            for field, value in ast.iter_fields(s):
                if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                    setattr(s, field, self.run(value, parsed))
            self.depth -= inner
            pre: list[ast.stmt] = []
            names = _bound_names(s)
            if names:
                self.bound[id(s.value)] = names
            for field in ("value", "test", "iter"):
                v = getattr(s, field, None)
                if isinstance(v, ast.expr):
                    setattr(s, field, self.expr(v, parsed, pre, s))
            self.bound.pop(id(getattr(s, "value", None)), None)
            if isinstance(s, ast.While) and pre:
                raise parsed.error("helper calls in a while condition are not supported", s,
                                   "compute the condition in a variable before the loop and "
                                   "at the end of its body")
            out += pre
            if isinstance(s, ast.Expr) and isinstance(s.value, (ast.Name, ast.Tuple)):
                continue  # a helper called for its side effects
            if names and _names_of(s.targets[0]) == names == _names_of(s.value):
                continue  # ``u = u``: the helper's returns bound ``u`` itself
            out.append(s)
        return out

    def expr(self, e: ast.expr, parsed: Parsed, pre: list[ast.stmt], stmt) -> ast.expr:
        """``e`` with its helper calls inlined, their statements appended to ``pre`` in
        Python's evaluation order (``call_order.py``)."""
        walker = Ordered(lambda node, stmts: self.one_call(node, parsed, stmts),
                         lambda node: written_gradient(node.func, parsed.env) is not None,
                         parsed, self.namer, parsed.env, pre)
        out = walker.visit(e)
        if walker.effects and isinstance(stmt, ast.AugAssign) \
                and not isinstance(stmt.target, ast.Name):
            raise parsed.error(
                f"'{ast.unparse(stmt.target)}' is read before the helper call on the right "
                "of '{op}=', which may change it: jitgrad inlines the call ahead of the "
                "read".replace("{op}", _AUG_OPS.get(type(stmt.op), "")), stmt,
                f"read it into a variable first ('old = {ast.unparse(stmt.target)}'), call "
                "the helper in a statement of its own, then assign; " + SPLIT_HINT)
        return out

    def one_call(self, node: ast.Call, parsed: Parsed, pre: list[ast.stmt]) -> ast.expr:
        """What replaces the call ``node`` (its arguments done): a helper's returned
        expression, its body appended to ``pre``; a nested gradient's; else ``node``."""
        made = written_gradient(node.func, parsed.env)  # jg.grad(f)(x) in place
        if made is not None:
            entry = "value_and_grad" if made[1] else "grad"
            return self.nested(made[0], entry, node, parsed, pre)
        if resolve(node.func, parsed.env) is checkpoint:
            return self.checkpoint(node, parsed, pre)
        inner = inner_call(node, parsed.env, parsed)
        if inner is not None:
            return self.nested(*inner, parsed, pre)
        obj = callee(node.func, parsed.env)
        refuse_transform(node, obj, parsed)
        kernel = kernel_call(self, resolve(node.func, parsed.env), node, parsed, pre)
        if kernel is not None:
            return kernel
        fn = user_function(primal_of(obj))
        if fn is None:
            return node
        if parsed is self.root and fn in self.split:  # compiled once, called here
            s = self.split[fn]
            node.func = ast.copy_location(
                name(self.namer.global_name(self.env, s.__name__, s)), node.func)
            return node
        return self.call(fn, node, parsed, pre)

    def nested(self, diff: Any, entry: str, node: ast.Call, parsed: Parsed,
               pre: list[ast.stmt]) -> ast.expr:
        """A jitgrad transform called here (``entry`` of ``front/nested.ENTRIES``; ``node``
        with flat arguments): probed, or its generated code inlined for the kinds the probe
        found (``front/nested.py``)."""
        refuse_unsupported(diff, node, parsed)
        k = len(self.probes)
        code, value = ENTRIES[entry].code, ENTRIES[entry].value
        if code == "gradient":
            args, _ = call_arguments(diff.func, diff.params, node, parsed, self.env,
                                     self.namer)
        else:  # primals, then one tangent per wrt argument (``nested.flat_call``)
            args = node.args
        names = [self.namer.fresh(f"_{p}_in") for p in diff.params]
        names += [self.namer.fresh(f"_{diff.params[i]}_dot_in")
                  for i in diff.wrt_positions if code != "gradient"]
        self.probes.append((diff, entry, names, node, parsed))
        if self.sites is None:
            pre += binds(args, names, node)
            if code == "tangent":
                return self.primal_standin(diff, names, node, parsed, pre)
            return probe(diff, value, names, node)
        out = self.call(self.sites[k], node, parsed, pre)
        if code == "gradient" and value and not diff.single:  # (value, *grads): (value, grads)
            grads = self.namer.fresh("_grads")
            pre.append(ast.copy_location(
                assign(grads, ast.Tuple(elts=out.elts[1:], ctx=ast.Load())), node))
            out = ast.Tuple(elts=[out.elts[0], name(grads)], ctx=ast.Load())
        return out

    def primal_standin(self, diff: Any, names: list[str], node: ast.Call, parsed: Parsed,
                       pre: list[ast.stmt]) -> ast.expr:
        """A jvp's stand-in in the probe: ``(y, y * 0.0)``, ``y`` the inner function inlined
        on the primals (its own nested calls probed, not recorded: they are its code's)."""
        call = ast.copy_location(ast.Call(func=node.func, args=[
            ast.copy_location(name(n), node) for n in names[:len(diff.params)]], keywords=[]),
            node)
        inner = Inliner(self.root, self.namer)
        inner.stack = self.stack
        out = inner.call(diff.func, call, parsed, pre)
        if isinstance(out, ast.Tuple):
            raise parsed.error(f"'{ast.unparse(node.func)}' is a jvp of "
                               f"{diff.func.__name__}, which returns {len(out.elts)} values: "
                               "a jvp called inside a differentiated function (nested "
                               "differentiation) needs a function of one output", node,
                               "take the jvp of a function returning one of them")
        y = self.namer.fresh("_y_in")
        pre.append(ast.copy_location(assign(y, out), node))
        zero = ast.BinOp(left=name(y), op=ast.Mult(), right=const(0.0))
        return ast.copy_location(ast.Tuple(elts=[name(y), zero], ctx=ast.Load()), node)

    def checkpoint(self, node: ast.Call, parsed: Parsed, pre: list[ast.stmt]) -> ast.expr:
        """``jg.checkpoint(g, a, b)``: g's body as a region the reverse sweep recomputes."""
        fn = user_function(resolve(node.args[0], parsed.env)) if node.args else None
        if fn is None or node.keywords:
            raise parsed.error("jg.checkpoint needs a module-level function and its "
                               "arguments: jg.checkpoint(g, a, b)", node)
        call = ast.copy_location(ast.Call(func=node.args[0], args=node.args[1:], keywords=[]),
                                 node)
        region: list[ast.stmt] = []
        self.depth += 1
        out = self.call(fn, call, parsed, region)
        self.depth -= 1
        pre.append(Checkpoint.region(region, node))
        return out

    def checkpointed(self, loop: ast.For, parsed: Parsed) -> list[ast.stmt]:
        """``for t in jg.checkpointed(range(a, b, c), snapshots=k): body``: the plain loop,
        marked for the binomial schedule (``modes/binomial.py``), after ``_snapshots = k``
        (-1 for None).  Inside another loop or region the marked loop is a checkpointed
        region of its own: its entry state is what the outer reverse sweep keeps, and the
        reverse reruns it on the binomial schedule with the same slots each outer trip."""
        call = loop.iter
        kw = {k.arg: k.value for k in call.keywords}
        rng = call.args[0] if len(call.args) == 1 else None
        if (rng is None or set(kw) - {"snapshots"} or not isinstance(rng, ast.Call)
                or resolve(rng.func, parsed.env) is not range or rng.keywords
                or not 1 <= len(rng.args) <= 3 or not isinstance(loop.target, ast.Name)):
            raise parsed.error("jg.checkpointed takes a range and snapshots=k: "
                               "for t in jg.checkpointed(range(T), snapshots=k)", loop)
        if loop.orelse:
            raise parsed.error("a checkpointed loop cannot have an else block", loop)
        for n in this_loop(loop.body):
            if isinstance(n, ast.Break):  # (an early return inside the loop is one too)
                raise parsed.error(
                    "break (or return) inside a jg.checkpointed loop is not supported: "
                    "its schedule runs a fixed number of steps",
                    n if getattr(n, "lineno", None) else loop,  # (a return's break: the loop)
                    "loop over jg.checkpointed(range(...)) without leaving early, or use a "
                    "plain range")
        k = kw.get("snapshots")
        if isinstance(k, ast.Constant) and k.value is None:
            k = None
        snaps = self.namer.fresh("_snapshots")
        pre = ast.copy_location(assign(snaps, const(-1) if k is None else k), loop)
        for m in walk(pre):
            if isinstance(m, (ast.stmt, ast.expr)) and not getattr(m, "lineno", None):
                ast.copy_location(m, loop)
        self.env.setdefault("range", range)
        plain = ast.copy_location(ast.For(target=loop.target, iter=rng, body=loop.body,
                                          orelse=[]), loop)
        nested = self.depth > 0
        CHECKPOINTED.set(plain, (snaps, "None" if k is None else ast.unparse(k), nested))
        return [pre, Checkpoint.region([plain], loop) if nested else plain]

    def call(self, fn, node: ast.Call, caller: Parsed, pre: list[ast.stmt]) -> ast.expr:
        if fn in self.stack:
            raise recursion_error(caller, node, fn, self.stack)
        helper = parse_function(fn)
        site = f"{caller.tree.name} at {caller.filename}:{caller.absolute_line(node)}"
        try:
            fence(helper)
        except TransformError as e:
            raise e.via(site) from None
        params = [a.arg for a in helper.tree.args.args]
        args, filled = call_arguments(fn, params, node, caller, self.env, self.namer)
        body = clone(helper.tree.body)
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]
        stored = stored_names(body)
        mapping: dict[str, str | ast.expr] = {}
        binds: list[ast.stmt] = []
        for p, a in zip(params, args, strict=True):
            if isinstance(a, ast.Name) and p not in stored:
                mapping[p] = a.id
            elif p in filled and p not in stored:
                mapping[p] = a  # a default: the literal itself, no variable to keep
            else:
                new = self.namer.fresh(p)
                self.namer.origin[new] = p
                mapping[p] = new
                bind = ast.copy_location(assign(new, a), node)
                PARAM_OF.set(bind, fn.__name__)  # messages name the helper's parameter
                binds.append(bind)
        for local in sorted(stored - set(params)):
            mapping[local] = self.namer.fresh(local)
            self.namer.origin[mapping[local]] = local
        for free in sorted({n.id for n in walk(ast.Module(body=body, type_ignores=[]))
                            if isinstance(n, ast.Name)} - stored - set(params)):
            if free not in helper.env:
                continue
            alias = self.namer.global_name(self.env, free, helper.env[free])
            if alias != free:  # (another object, or a local, has that name here)
                mapping[free] = alias
        body, rets, made = self.one_exit(fn, helper, body, site)
        body = [rename(s, mapping) for s in body]
        rets = [rename(r, mapping) for r in rets]
        names = self.bound.pop(id(node), None)
        if _binds_directly(names, made, body, rets):
            body = [rename(s, dict(zip(made, names, strict=True))) for s in body]
            rets = [name(t) for t in names]
        for s in walk(ast.Module(body=body + [ast.Expr(value=r) for r in rets],
                                 type_ignores=[])):
            if hasattr(s, "lineno"):
                _note_origin(s, helper, site)
                s.lineno = node.lineno  # comments point at the call site; errors, INLINED
        pre += binds + body
        if len(rets) == 1:
            return rets[0]
        return ast.Tuple(elts=rets, ctx=ast.Load())


    def one_exit(self, fn, helper: Parsed, body: list[ast.stmt], site: str
                 ) -> tuple[list[ast.stmt], list[ast.expr], list[str]]:
        """The helper's ``body`` with one exit and its own helper calls inlined, its
        returned expressions, and the variables its returns bind (``_name``; none listed
        where a path may end without a return: no target is then bound in their place)."""
        made: list[str] = []
        everywhere = always_returns(body)
        self.stack.append(fn)
        try:
            body, rets = single_exit(helper, body, self.namer, keep_tail=True,
                                     base=f"_{fn.__name__}", made=made)
            body = self.run(body + [ast.Return(value=ast.Tuple(elts=rets, ctx=ast.Load()))],
                            helper)
            rets = list(body.pop().value.elts)
        except TransformError as e:  # at the helper's own line: say where it was called
            raise e.via(site) from None
        finally:
            self.stack.pop()
        return body, rets, made if everywhere else []


def _bound_names(s: ast.stmt) -> list[str] | None:
    """The names ``s`` binds where it is ``n = call(...)`` or ``a, b = call(...)`` (distinct
    plain names); else None."""
    if not (isinstance(s, ast.Assign) and len(s.targets) == 1
            and isinstance(s.value, ast.Call)):
        return None
    out = _names_of(s.targets[0])
    return out if out and len(set(out)) == len(out) else None


def _names_of(e: ast.expr) -> list[str] | None:
    """``[n]`` of a name, the names of a tuple of names; else None."""
    if isinstance(e, ast.Name):
        return [e.id]
    if isinstance(e, ast.Tuple) and all(isinstance(x, ast.Name) for x in e.elts):
        return [x.id for x in e.elts]
    return None


def _binds_directly(names: list[str] | None, made: list[str], body: list[ast.stmt],
                    rets: list[ast.expr]) -> bool:
    """Can an inlined helper's returns bind the caller's target ``names`` themselves instead
    of the variables ``made`` for them (``u = sgn(a, k)``: ``u = a * k`` in each branch,
    no ``_sgn`` copied into ``u``)?  Where the returns bound variables (``made``), one per
    target, on every path (``Inliner.one_exit``: the target is bound wherever the copy
    bound it), and the inlined body and returned expressions name none of the targets:
    nothing reads or writes a target before the copy would have bound it.  The parameter
    bindings run before the body and bind fresh names only: they may read a target
    (``s = h(s + x[i])``)."""
    if not names or len(made) != len(names) or [getattr(r, "id", None) for r in rets] != made:
        return False
    used = names_in(ast.Module(body=[*body, *(ast.Expr(value=r) for r in rets)],
                               type_ignores=[]))
    return not set(names) & used


#: the operator of an augmented assignment, as written
_AUG_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**",
            ast.FloorDiv: "//", ast.Mod: "%", ast.MatMult: "@"}


def _note_origin(n: ast.AST, helper: Parsed, site: str) -> None:
    """Record where an inlined node is in its helper (first inlining) and the call site."""
    o = INLINED.get(n)
    if o is None:
        line = helper.absolute_line(n)
        INLINED.set(n, (helper.filename, line, helper.source_line(line) if line else "",
                        (site,)))
    else:
        INLINED.set(n, (*o[:3], (*o[3], site)))


def inline(parsed: Parsed, body: list[ast.stmt], namer: Namer,
           sites: list[Any] | None = None,
           split: dict[Any, Any] | None = None) -> tuple[list[ast.stmt], list]:
    """Inline every user helper called from ``body``; ``sites``: the helper each nested
    gradient call inlines (None: probe them); ``split``: the helpers whose calls in
    ``body`` stay calls (``front/split.py``).  Also returns the nested calls met
    (``Inliner.probes``)."""
    inl = Inliner(parsed, namer, sites, split)
    return inl.run(body, parsed), inl.probes


__all__ = ["inline", "rename", "resolve", "user_function", "name", "stored_names"]


def fold_param_binds(body: list[ast.stmt], kinds: dict) -> list[ast.stmt]:
    """A helper's array parameter updated with ``u op= e`` is the caller's array itself.

    Python updates the caller's buffer in place; on a float the same statement only
    rebinds the helper's local.  Inlining binds the parameter to a fresh name
    (``u1 = y``) since the kind is not known then; once it is, an array parameter
    that is only updated in place (never rebound) is renamed to the caller's name.
    """
    defs: dict[str, list[ast.stmt]] = {}
    binds: list[ast.Assign] = []  # the parameter binds, in ``walk`` order
    for n in stmts_by_depth(body):
        if isinstance(n, ast.Assign):
            for t in walk(n.targets[0]):
                if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store):
                    defs.setdefault(t.id, []).append(n)
            if (PARAM_OF.get(n) and isinstance(n.targets[0], ast.Name)
                    and isinstance(n.value, ast.Name)):
                binds.append(n)
    mapping: dict[str, str] = {}
    drop: set[int] = set()
    for n in binds:
        p, src = n.targets[0].id, n.value.id
        k = kinds.get(p)
        if k is None or not k.is_array or src in mapping:
            continue
        if all(d is n or AUG.get(d) for d in defs.get(p, [])) \
                and len(defs.get(p, [])) > 1:
            mapping[p] = src
            drop.add(id(n))
    if not mapping:
        return body

    def block(stmts):
        out = []
        for s in stmts:
            if id(s) in drop:
                continue
            for f in ("body", "orelse"):
                sub = getattr(s, f, None)
                if sub:
                    setattr(s, f, block(sub) or [ast.Pass()])
            out.append(rename(s, mapping))
        return out

    return block(body)
