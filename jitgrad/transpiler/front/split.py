"""Split helpers: an ``@njit`` helper called at many sites is compiled once, not inlined.

Inlining a helper at each of N call sites makes one long function whose compile time in
LLVM grows faster than its length (``docs/performance.md``, first-call latency: a GRU
cell called 20 times).  A helper called at ``SPLIT_SITES`` or more sites of the function
being differentiated, whose body is pure (``pure_helper``: it writes none of its
arguments, draws nothing, calls only library functions with gradient rules, no hooks,
checkpoints, ``prange`` or nested gradients) and which returns one value, stays a call:
of a ``SplitHelper`` stand-in whose gradient rule is made per argument kinds
(``SplitHelper.rule_for``): forward, the user's own helper; pullback, one call of
``<helper>_vjp``, jitgrad's own gradient of ``sum(helper(...) * dy)`` w.r.t. the
helper's float arguments, compiled once as its own function, that adds into adjoint
arrays passed to it (the caller's buffers, or zeroed arrays) instead of returning them
where its code only adds into them (``accumulating``).  Only reverse mode splits
(``pipeline.generate``); forward mode, ``hvp`` and nested gradients inline as before.

Before (4 calls of an ``@njit`` ``cell``)::     After::

    h = cell(h, w)                              h1 = cell_split(h, w)
    ...                                         ...
"""

from __future__ import annotations

import ast
import types
from collections import Counter
from typing import Any

from ...rules import Rule, is_non_differentiable, lookup
from ...rules.primitives import Result, record, version, zeros_shaped_like
from ..astutil import resolve
from ..backend import emit
from ..backend.view_updates import function_views
from ..nodes import nodes_of, walk
from .parse import Parsed, parse_function, python_function
from .purity import call_pure, called
from .transforms import callee, primal_of

#: a pure ``@njit`` helper called at this many sites or more is compiled once (not inlined)
SPLIT_SITES = 4


#: ``prepare`` and ``gradient_code``, registered by the pipeline (which imports this module)
_MAKERS: dict[str, Any] = {}


def register_makers(**makers: Any) -> None:
    """Set the functions making a helper's unit (``prepare``) and its gradient code
    (``gradient_code``): the pipeline's, which imports this module."""
    _MAKERS.update(makers)


class SplitRefused(Exception):
    """A split call this rule cannot take (argument or result kinds, or the helper's own
    gradient failed): ``pipeline.generate`` makes the code again with the helper inlined."""


#: the argument classes a split call takes (float, int, bool); only floats carry gradients
_CLASSES = ("f", "i", "b")


class SplitHelper:
    """The stand-in a split helper's calls are made of: its record's rule is made per
    argument kinds (``rule_for``), its result kind by the helper's own kind inference."""

    def __init__(self, dispatcher: Any, py: Any):
        self.dispatcher, self.py = dispatcher, py
        self.__name__ = f"{py.__name__}_split"
        self.__qualname__ = self.__name__
        #: the user's module: a stand-in is the user's helper in the primitive table, with
        #: no tangent rule of jitgrad's own (forward mode inlines the helper)
        self.__module__ = py.__module__
        self.params = list(py.__code__.co_varnames[:py.__code__.co_argcount])
        self._kinds: dict[tuple, Any] = {}
        self._rules: dict[tuple, Rule] = {}
        self._acc: dict[int, tuple[int, ...]] = {}
        self._vjps: dict[tuple, tuple[Any, tuple[int, ...]]] = {}
        rec = record(self)
        rec.result, rec.pure = Result("helper"), True  # (``pure_helper`` admitted it)
        rec.rule = Rule(self, (self,), self.__name__)  # (``rule_for`` gives the real one)

    def __call__(self, *args: Any) -> Any:
        return self.dispatcher(*args)

    def result_kind(self, kinds: tuple) -> Any:
        """The kind the helper returns for arguments of ``kinds`` (its kind inference)."""
        if kinds not in self._kinds:
            from ..analysis.kinds import UNKNOWN, infer, of_value

            try:
                u = _MAKERS["prepare"](self.py)
            except Exception as e:  # noqa: BLE001 - inlined, the error names the user's line
                raise SplitRefused(str(e)) from None
            got = infer(u.body, u.env, {u.renamed.get(p, p): k
                                        for p, k in zip(self.params, kinds, strict=True)})
            r = u.returns[0] if len(u.returns) == 1 else None
            self._kinds[kinds] = (got.get(r.id, UNKNOWN) if isinstance(r, ast.Name)
                                  else of_value(r.value) if isinstance(r, ast.Constant)
                                  else UNKNOWN)
        return self._kinds[kinds]

    def rule_for(self, kinds: tuple, active: tuple[bool, ...],
                 acc: tuple[bool, ...] = ()) -> Rule:
        """The gradient rule of a call with arguments of ``kinds`` (``active``: those that
        carry a gradient; ``acc``: those whose adjoint the caller holds in an array of the
        argument's shape, which the pullback may add into): forward, the helper; pullback,
        one call of its gradient (``vjp``) w.r.t. the active float arguments, made and
        cached per kinds (and version of the rules: a rule registered later makes it
        again).  ``accumulated(rule)``: the arguments whose adjoint it adds into."""
        key = (kinds, active, acc, version())
        if key not in self._rules:
            self._rules[key] = self._make_rule(kinds, active, acc)
        return self._rules[key]

    def accumulated(self, rule: Rule) -> tuple[int, ...]:
        """The arguments whose adjoint buffer ``rule``'s pullback adds into: the caller
        passes them after the arguments (``_a<i>``), and gets no gradient for them."""
        return self._acc.get(id(rule), ())

    def _make_rule(self, kinds: tuple, active: tuple[bool, ...], acc: tuple[bool, ...]) -> Rule:
        ps = [f"_p{i}" for i in range(len(self.params))]
        wrt = [i for i, k in enumerate(kinds) if k.cls == "f" and active[i]]
        out = self.result_kind(kinds)
        if any(k.cls not in _CLASSES or a and k.cls != "f" for k, a in zip(kinds, active,
                                                                          strict=True)) \
                or out.cls not in _CLASSES or out.ndim is None:
            raise SplitRefused(f"{self.py.__name__}: kinds {kinds} -> {out}")
        name = self.py.__name__
        space = {name: self.dispatcher, "np": _np()}
        back, grads, bufs = "", ["None"] * len(ps), ()
        if wrt and out.cls == "f":
            key = (kinds, active, version())
            if key not in self._vjps:  # one per kinds, whichever buffers the caller has
                self._vjps[key] = self.vjp(kinds, out, wrt, [i for i in wrt if kinds[i].ndim])
            space[f"{name}_vjp"], done = self._vjps[key]
            back, bufs = _pullback(f"{name}_vjp", ps, wrt, done, acc, grads)
        src = (f"def {name}_rule({', '.join([*ps, *(f'_a{i}' for i in bufs)])}):\n"
               f"    _y = {name}({', '.join(ps)})\n"
               f"    def back(dy):\n{back}"
               f"        return ({', '.join(grads)},)\n"
               f"    return _y, back\n")
        impl = emit.load(src, f"{name}_rule", space, f"{name}.split_rule")
        rule = Rule(impl, (self,), f"{name} (compiled once: called at {SPLIT_SITES}+ sites)")
        self._acc[id(rule)] = bufs
        return rule

    def vjp(self, kinds: tuple, out: Any, wrt: list[int], acc: list[int] = ()
            ) -> tuple[Any, tuple[int, ...]]:
        """jitgrad's gradient of ``sum(helper(*args) * dy)`` w.r.t. the arguments ``wrt``,
        as a function of ``(*args, dy, 1.0, *adjoints)`` (marked ``split_vjp`` for the
        backend), and the arguments of ``acc`` whose gradient it adds into the adjoint
        passed for them (``accumulating``) instead of returning it."""
        import numpy as np

        from .nested import make_differentiated

        name = self.py.__name__
        ps = ", ".join(self.params)
        prod = f"np.sum({name}({ps}) * _dy)" if out.ndim else f"{name}({ps}) * _dy"
        src = f"def {name}_vjp({ps}, _dy):\n    return {prod}\n"
        loss = emit.load(src, f"{name}_vjp", {"np": np, name: self.dispatcher},
                         f"{name}.vjp")
        d = make_differentiated(loss, tuple(wrt), False)
        try:
            gen = d._generated_kinds({**dict(zip(self.params, kinds, strict=True)), "_dy": out})
            fn = _MAKERS["gradient_code"](d, gen)
        except Exception as e:  # noqa: BLE001 - inlined, the error (if any) names the user's line
            raise SplitRefused(str(e)) from None
        fn, done = accumulating(fn, [wrt.index(i) for i in acc]) if acc else (fn, ())
        fn = function_views(fn, gen.unit.float_ndims(False))  # ``db[2] += g``: compiles less
        fn.split_vjp = True
        return fn, tuple(acc[k] for k in range(len(acc)) if wrt.index(acc[k]) in done)


def _np() -> Any:
    import numpy as np

    return np


def _pullback(vjp: str, ps: list[str], wrt: list[int], done: tuple[int, ...],
              acc: tuple[bool, ...], grads: list[str]) -> tuple[str, tuple[int, ...]]:
    """The pullback's body calling ``vjp`` (which adds the gradients of ``done`` into
    arrays passed after ``dy``): the caller's adjoint buffer where it has one (``acc``),
    else a zeroed array (``_z<i>``), returned; ``grads`` filled in.  Also the arguments
    whose buffer it takes (``_a<i>``)."""
    bufs = tuple(i for i in done if i < len(acc) and acc[i])
    zeros = "".join(f"        _z{i} = np.zeros_like(_p{i})\n" for i in done if i not in bufs)
    into = [f"_a{i}" if i in bufs else f"_z{i}" for i in done]
    call = f"{vjp}({', '.join([*ps, 'dy', '1.0', *into])})"
    rest = [i for i in wrt if i not in done]
    for j, i in enumerate(rest):
        grads[i] = f"_g[{j}]" if len(rest) > 1 else "_g"
    for i in done:
        grads[i] = "None" if i in bufs else f"_z{i}"
    return zeros + (f"        _g = {call}\n" if rest else f"        {call}\n"), bufs


def accumulating(fn: Any, which: list[int]) -> tuple[Any, tuple[int, ...]]:
    """``fn`` (a gradient returning ``(g0, g1, ...)``) made to add the gradients at
    positions ``which`` into arrays passed after its parameters, and return the others;
    and the positions done.  A position is done where its gradient is an adjoint ``dA``
    made by one top-level ``dA = np.zeros_like(..)`` before any other mention, then only
    added into (``dA += e``, ``dA[i] += e``, ``e`` not reading it), returned once: the
    zeroing goes and ``dA`` becomes a parameter."""
    import inspect

    fdef = ast.parse(inspect.getsource(fn)).body[0]
    ret = fdef.body[-1]
    if not isinstance(ret, ast.Return) or ret.value is None:
        return fn, ()
    elts = list(ret.value.elts) if isinstance(ret.value, ast.Tuple) else [ret.value]
    env = fn.__globals__
    done = [j for j in which
            if j < len(elts) and _only_added(fdef.body[:-1], elts[j], elts, env)]
    if not done:
        return fn, ()
    ids = [elts[j].id for j in done]
    fdef.body = [s for s in fdef.body[:-1] if not any(_zeroing(s, d, env) for d in ids)]
    left = [e for j, e in enumerate(elts) if j not in done]
    value = (ast.Tuple(elts=left, ctx=ast.Load()) if len(left) > 1 else left[0] if left
             else ast.Constant(value=None))
    fdef.body.append(ast.Return(value=value))
    fdef.args.args += [ast.arg(arg=i) for i in ids]
    src = ast.unparse(ast.fix_missing_locations(fdef)) + "\n"
    return emit.load(src, fn.__name__, dict(fn.__globals__), f"{fn.__name__}.acc"), tuple(done)


def _only_added(body: list[ast.stmt], g: ast.expr, elts: list[ast.expr],
                env: dict[str, Any]) -> bool:
    """Is ``g`` an adjoint made by one top-level ``g = np.zeros_like(..)`` (first) and
    then only added into, mentioned once among the returned ``elts``?"""
    if not isinstance(g, ast.Name) or sum(isinstance(e, ast.Name) and e.id == g.id
                                          for e in elts) != 1:
        return False
    d = g.id
    made = [k for k, s in enumerate(body) if d in _mentions(s)]
    if not made or not _zeroing(body[made[0]], d, env):
        return False
    for s in body[made[0] + 1:]:
        for n in walk(s):
            if not isinstance(n, ast.stmt) or d not in _mentions(n):
                continue
            if isinstance(n, ast.AugAssign) and _adds_into(n, d):
                continue
            if not isinstance(n, ast.AugAssign) and d not in _own_mentions(n):
                continue  # (a compound statement: its inner statements are checked)
            return False
    return True


def _zeroing(s: ast.stmt, d: str, env: dict[str, Any]) -> bool:
    """Is ``s`` ``d = np.zeros_like(x)`` (``d`` not read): a call the primitive table says
    makes an array of zeros shaped like its one argument, found through ``env``?"""
    if not (isinstance(s, ast.Assign) and len(s.targets) == 1
            and isinstance(s.targets[0], ast.Name) and s.targets[0].id == d
            and isinstance(s.value, ast.Call) and len(s.value.args) == 1
            and not s.value.keywords and d not in _mentions(s.value)):
        return False
    return zeros_shaped_like(resolve(s.value.func, env))


def _adds_into(s: ast.AugAssign, d: str) -> bool:
    """Is ``s`` ``d += e`` / ``d -= e`` / ``d[i] += e`` with ``d`` only as the target?"""
    t = s.target
    base = t.value if isinstance(t, ast.Subscript) else t
    return (isinstance(s.op, (ast.Add, ast.Sub)) and isinstance(base, ast.Name)
            and base.id == d and d not in _mentions(s.value)
            and (not isinstance(t, ast.Subscript) or d not in _mentions(t.slice)))


def _mentions(n: ast.AST) -> set[str]:
    """The names ``n`` mentions anywhere."""
    return {x.id for x in walk(n) if isinstance(x, ast.Name)}


def _own_mentions(s: ast.stmt) -> set[str]:
    """The names statement ``s`` mentions outside its inner statements."""
    out: set[str] = set()
    for _f, v in ast.iter_fields(s):
        for x in v if isinstance(v, list) else [v]:
            if isinstance(x, ast.AST) and not isinstance(x, ast.stmt):
                out |= _mentions(x)
    return out


_STANDINS: dict[int, SplitHelper] = {}


def run_as_python(ns: dict[str, Any], callables: frozenset[str] | set[str]) -> None:
    """Under ``jit=False``: the split helpers among ``callables`` in ``ns`` run as their
    Python functions, their gradients (``vjp``) with IEEE semantics (``emit.ieee_namespace``)."""
    pys = {id(s.dispatcher): s.py for s in _STANDINS.values()}
    for c in callables:
        f = ns.get(c)
        if id(f) in pys:
            ns[c] = pys[id(f)]
        elif getattr(f, "split_vjp", False):
            g = dict(f.__globals__)
            emit.ieee_namespace(g)
            ns[c] = types.FunctionType(f.__code__, g, f.__name__, f.__defaults__)


def standin(dispatcher: Any) -> SplitHelper:
    """The one stand-in of ``dispatcher`` (a Numba dispatcher of the user's)."""
    s = _STANDINS.get(id(dispatcher))
    if s is None or s.dispatcher is not dispatcher:
        s = _STANDINS[id(dispatcher)] = SplitHelper(dispatcher, python_function(dispatcher))
    return s


def call_helpers(code: list[ast.stmt], env: dict[str, Any], namer: Any) -> set[str]:
    """Calls of a stand-in left in the generated ``code`` (where no gradient flows through
    them: ``if cell(h, x) > 0.0``) call the user's helper itself, in place; returns the
    names the helpers are bound to (compiled alongside, like the rules' calls)."""
    stand = {n for n, v in env.items() if isinstance(v, SplitHelper)}
    out: set[str] = set()
    for n in walk(ast.Module(body=code, type_ignores=[])) if stand else ():
        if isinstance(n, ast.Name) and n.id in stand:
            s = env[n.id]
            n.id = namer.global_name(env, s.py.__name__, s.dispatcher)
            out.add(n.id)
    return out


def split_sources(names: frozenset[str], env: dict[str, Any]) -> str:
    """The sources of the split helpers' gradients among ``names`` (of ``env``), each after
    two blank lines: what ``.source()`` prints after the gradient calling them."""
    import inspect

    fns = [(n, env[n]) for n in sorted(names) if getattr(env.get(n), "split_vjp", False)]
    return "".join("\n\n" + inspect.getsource(f).replace(f"def {f.__name__}(", f"def {n}(", 1)
                   for n, f in fns)


def split_helpers(parsed: Parsed, body: list[ast.stmt]) -> dict[Any, SplitHelper]:
    """The helpers ``body`` calls at ``SPLIT_SITES`` or more sites that are split: Numba
    dispatchers of the user's, pure, called with their positional arguments only;
    python function -> stand-in."""
    from .inline import user_function

    counts: Counter = Counter()
    found: dict[Any, Any] = {}
    unplain: set[Any] = set()  # called somewhere with keywords or another arity: inlined
    for n in nodes_of(ast.Module(body=body, type_ignores=[])):
        if not isinstance(n, ast.Call):
            continue
        obj = callee(n.func, parsed.env)
        py = user_function(primal_of(obj)) if obj is not None else None
        if py is None or getattr(obj, "py_func", None) is not py:
            continue
        counts[py] += 1
        found[py] = obj
        if n.keywords or len(n.args) != py.__code__.co_argcount \
                or any(isinstance(a, ast.Starred) for a in n.args):
            unplain.add(py)
    return {py: standin(found[py]) for py, c in counts.items()
            if c >= SPLIT_SITES and py not in unplain and pure_helper(py)}


def pure_helper(py: Any) -> bool:
    """Is ``py``'s body pure: it writes none of its arguments (no element or attribute
    stores, no in-place updates, no mutating methods), calls only functions with gradient
    rules or none needed (no user helpers, draws, hooks, prange, jitgrad transforms), has
    no parameters with defaults or ``*args``, and returns one value that is not a bare
    parameter (its result may not share an argument's buffer)."""
    try:
        helper = parse_function(py)
    except Exception:  # noqa: BLE001 - no source, unsupported syntax: inline it
        return False
    a = helper.tree.args
    if a.vararg or a.kwarg or a.kwonlyargs or a.defaults or a.posonlyargs:
        return False
    params = {x.arg for x in a.args}
    for n in walk(ast.Module(body=helper.tree.body, type_ignores=[])):
        if isinstance(n, (ast.Subscript, ast.Attribute, ast.Starred)) \
                and isinstance(n.ctx, ast.Store):
            return False
        if isinstance(n, (ast.AugAssign, ast.Global, ast.Nonlocal, ast.Lambda,
                          ast.FunctionDef, ast.Yield, ast.YieldFrom)):
            return False
        if isinstance(n, ast.Return) and (n.value is None or isinstance(n.value, ast.Tuple)
                                          or isinstance(n.value, ast.Name)
                                          and n.value.id in params):
            return False
        if isinstance(n, ast.Call) and not _splittable_call(n, helper):
            return False
    return True


def _splittable_call(n: ast.Call, helper: Parsed) -> bool:
    """Does call ``n`` in ``helper`` compute a value only (``purity.call_pure``), of a
    library function with a gradient rule or none needed (not jitgrad's or Numba's)?"""
    fn = called(n, helper.env)
    mod = (getattr(fn, "__module__", None) or "").split(".")[0]
    return call_pure(n, helper.env) and mod not in ("jitgrad", "numba") and (
        lookup(fn) is not None or is_non_differentiable(fn))


__all__ = ["SPLIT_SITES", "SplitHelper", "SplitRefused", "accumulating", "call_helpers",
           "pure_helper",
           "register_makers", "run_as_python", "split_helpers", "split_sources", "standin"]
