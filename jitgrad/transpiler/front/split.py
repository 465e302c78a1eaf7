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
helper's float arguments, compiled once as its own function.  Only reverse mode splits
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
from ...rules.primitives import Result, record, version
from ..backend import emit
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

    def rule_for(self, kinds: tuple, active: tuple[bool, ...]) -> Rule:
        """The gradient rule of a call with arguments of ``kinds`` (``active``: those that
        carry a gradient): forward, the helper; pullback, one call of its gradient
        (``vjp``) w.r.t. the active float arguments, made and cached per kinds (and
        version of the rules: a rule registered later makes it again)."""
        key = (kinds, active, version())
        if key not in self._rules:
            self._rules[key] = self._make_rule(kinds, active)
        return self._rules[key]

    def _make_rule(self, kinds: tuple, active: tuple[bool, ...]) -> Rule:
        ps = [f"_p{i}" for i in range(len(self.params))]
        wrt = [i for i, k in enumerate(kinds) if k.cls == "f" and active[i]]
        out = self.result_kind(kinds)
        if any(k.cls not in _CLASSES or a and k.cls != "f" for k, a in zip(kinds, active,
                                                                          strict=True)) \
                or out.cls not in _CLASSES or out.ndim is None:
            raise SplitRefused(f"{self.py.__name__}: kinds {kinds} -> {out}")
        name = self.py.__name__
        space = {name: self.dispatcher}
        grads = ["None"] * len(ps)
        back = ""
        if wrt and out.cls == "f":
            space[f"{name}_vjp"] = self.vjp(kinds, out, wrt)
            back = f"        _g = {name}_vjp({', '.join(ps)}, dy, 1.0)\n"
            for j, i in enumerate(wrt):
                grads[i] = f"_g[{j}]" if len(wrt) > 1 else "_g"
        src = (f"def {name}_rule({', '.join(ps)}):\n"
               f"    _y = {name}({', '.join(ps)})\n"
               f"    def back(dy):\n{back}"
               f"        return ({', '.join(grads)},)\n"
               f"    return _y, back\n")
        impl = emit.load(src, f"{name}_rule", space, f"{name}.split_rule")
        return Rule(impl, (self,), f"{name} (compiled once: called at {SPLIT_SITES}+ sites)")

    def vjp(self, kinds: tuple, out: Any, wrt: list[int]) -> Any:
        """jitgrad's gradient of ``sum(helper(*args) * dy)`` w.r.t. the arguments ``wrt``,
        as a function of ``(*args, dy, 1.0)`` (marked ``split_vjp`` for the backend)."""
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
        fn.split_vjp = True
        return fn


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


__all__ = ["SPLIT_SITES", "SplitHelper", "SplitRefused", "call_helpers", "pure_helper",
           "register_makers", "run_as_python", "split_helpers", "split_sources", "standin"]
