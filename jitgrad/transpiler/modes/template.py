"""Rules as templates: a ``(value, pullback)`` rule's source, ready to inline.

A rule's body splits into forward statements, ``def back(dy): ...`` and
``return value, back``.  Instantiating it renames parameters to the call's
arguments and the rule's locals to fresh names, so the forward part lands in the
forward sweep and the pullback body in the adjoint sweep of one flat function.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import textwrap
from dataclasses import dataclass, field
from typing import Any

from ...errors import RuleError
from ...rules import Rule
from ..front.inline import renaming_copier
from ..naming import Namer
from ..nodes import clone, walk


@dataclass
class Template:
    """The parsed pieces of one rule."""

    rule: Rule
    params: list[str]
    positional: list[str]
    defaults: dict[str, ast.expr]
    pre: list[ast.stmt]
    value: ast.expr
    dy: str
    back_body: list[ast.stmt]
    grads: list[ast.expr | None]
    globals: dict[str, Any]
    locals: set[str] = field(default_factory=set)
    #: the locals the forward part binds (the values its pullback may read); the others
    #: are the pullback's own temporaries, bound again wherever the pullback runs
    forward_locals: set[str] = field(default_factory=set)
    #: names the rule reads from its module (found once, mapped at each call)
    free: set[str] = field(default_factory=set)
    #: ``mapping -> (pre, value, back_body, grads)`` renamed copies (compiled once)
    copy: Any = None


_CACHE: dict[int, Template] = {}
_NONE = object()


def split_rule(impl: Any, what: str, inner: str, inner_name: str
               ) -> tuple[ast.FunctionDef, list[ast.stmt], ast.FunctionDef, ast.expr]:
    """A rule's source as (its def, the statements of its forward part, the one inner def
    it returns beside its value, the value), or a RuleError saying the shape it must have:
    ``def rule(...): <forward>; def <inner>: ...; return value, <inner_name>``."""
    try:
        src = textwrap.dedent(inspect.getsource(impl))
    except (OSError, TypeError) as exc:
        raise RuleError(f"cannot read the source of {what}: {exc}") from None
    fn = ast.parse(src).body[0]
    if not isinstance(fn, ast.FunctionDef):
        raise RuleError(f"{what} must be a def function")
    body = fn.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    inners = [i for i, s in enumerate(body) if isinstance(s, ast.FunctionDef)]
    ret = body[-1] if body else None
    if (len(inners) != 1 or not isinstance(ret, ast.Return)
            or not isinstance(ret.value, ast.Tuple) or len(ret.value.elts) != 2):
        raise RuleError(f"{what} must end with 'def {inner}: ...' and "
                        f"'return value, {inner_name}'")
    return fn, body[:inners[0]] + body[inners[0] + 1:-1], body[inners[0]], ret.value.elts[0]


def template_of(rule: Rule) -> Template:
    """Parse (once) the template of ``rule``; RuleError if it is not in the expected form."""
    key = id(rule.impl)
    if key in _CACHE and _CACHE[key].rule is rule:
        return _CACHE[key]
    impl = rule.impl
    fn, pre, back, value = split_rule(impl, f"rule {rule.name}", "back(dy)", "back")
    if len(back.args.args) != 1:
        raise RuleError(f"pullback of rule {rule.name} must take exactly one argument")
    bret = back.body[-1] if back.body else None
    if not isinstance(bret, ast.Return):
        raise RuleError(f"pullback of rule {rule.name} must end with 'return (g1, ...)'")
    rv = bret.value
    grads = list(rv.elts) if isinstance(rv, ast.Tuple) else [rv]
    grads = [None if (isinstance(g, ast.Constant) and g.value is None) else g for g in grads]
    a = fn.args
    params = [x.arg for x in a.args] + [x.arg for x in a.kwonlyargs]
    ndef = len(a.defaults)
    positional = [x.arg for x in a.args[:len(a.args) - ndef]]
    defaults = {x.arg: d for x, d in zip(a.args[len(a.args) - ndef:], a.defaults, strict=True)}
    defaults.update({x.arg: d for x, d in zip(a.kwonlyargs, a.kw_defaults, strict=True)
                     if d is not None})
    tpl = Template(rule, params, positional, defaults, pre, value,
                   back.args.args[0].arg, back.body[:-1], grads, scope_of(impl),
                   _stored(pre + back.body), _stored(pre))
    tpl.free = _free_names(tpl)
    unbound = sorted(f for f in tpl.free if f not in tpl.globals and not hasattr(builtins, f))
    if unbound:
        raise RuleError(f"rule {rule.name} reads {', '.join(map(repr, unbound))}, neither a "
                        "global of its module nor a value it closes over")
    _CACHE[key] = tpl
    return tpl


def scope_of(impl: Any) -> dict[str, Any]:
    """The values a rule's free names stand for: its module's globals and, over them, the
    values its closure holds (a rule made by a factory reads the factory's arguments)."""
    scope = dict(impl.__globals__)
    code = getattr(impl, "__code__", None)
    for name, cell in zip(code.co_freevars if code else (), impl.__closure__ or (),
                          strict=True):
        try:
            scope[name] = cell.cell_contents
        except ValueError:  # a cell not filled yet
            pass
    return scope


def _stored(stmts: list[ast.stmt]) -> set[str]:
    """The names ``stmts`` bind."""
    return {n.id for s in stmts for n in walk(s)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _free_names(tpl: Template) -> set[str]:
    """Names in the rule that are neither its parameters, its locals nor its seed."""
    free = set()
    for s in [*tpl.pre, tpl.value, *tpl.back_body, *[g for g in tpl.grads if g is not None]]:
        for n in walk(s):
            if isinstance(n, ast.Name) and n.id not in tpl.params and n.id not in tpl.locals \
                    and n.id != tpl.dy:
                free.add(n.id)
    return free


@dataclass
class Instance:
    """A template bound to one call site."""

    forward: list[ast.stmt]
    value: ast.expr
    outputs: set[str]
    back: list[ast.stmt]
    grads: list[ast.expr | None]
    bound: dict[str, ast.expr]
    dy: str = "dy"


def bind_args(tpl: Template, args: list[ast.expr], keywords: dict[str, ast.expr]) -> dict:
    """Map the rule's parameters to the call's argument expressions."""
    bound: dict[str, ast.expr] = {}
    order = [p for p in tpl.params]
    for p, a in zip(order, args, strict=False):
        bound[p] = a
    if len(args) > len(order):
        raise RuleError(f"rule {tpl.rule.name} takes {len(order)} arguments, got {len(args)}")
    for k, v in keywords.items():
        if k not in tpl.params:
            raise RuleError(f"rule {tpl.rule.name} has no parameter {k!r}")
        bound[k] = v
    for p in tpl.params:
        if p not in bound:
            if p not in tpl.defaults:
                raise RuleError(f"rule {tpl.rule.name}: missing argument {p!r}")
            bound[p] = clone(tpl.defaults[p])
    return bound


def instantiate(tpl: Template, args: list[ast.expr], keywords: dict[str, ast.expr],
                namer: Namer, global_name, dy: str | None = None) -> Instance:
    """Bind ``tpl`` to a call; ``global_name(name, obj)`` maps rule globals into the module;
    ``dy``: the name the pullback reads its seed from (default a fresh ``_seed``)."""
    bound = bind_args(tpl, args, keywords)
    mapping: dict[str, str | ast.expr] = dict(bound)
    for local in sorted(tpl.locals):
        mapping[local] = namer.fresh("_" + local.lstrip("_"))
    seed = namer.fresh("_seed")  # (allocated either way: names stay numbered alike)
    dy = dy or seed  # renamed at once with the parameters: no clash with user names
    mapping[tpl.dy] = dy
    for f in tpl.free:  # its module's names, and builtins (a user's local may be a 'min')
        obj = tpl.globals[f] if f in tpl.globals else getattr(builtins, f, _NONE)
        if obj is not _NONE:
            new = global_name(f, obj)
            if new != f:
                mapping[f] = new
    if tpl.copy is None:
        tpl.copy = renaming_copier([tpl.pre, tpl.value, tpl.back_body, tpl.grads])
    fwd, value, back, grads = tpl.copy(mapping)
    # only the forward part's values: a pullback temporary (arctan2's ``r2``) is bound in
    # the adjoint sweep where it is read, never a forward value to store or restore
    outputs = {mapping[x] for x in tpl.forward_locals if isinstance(mapping.get(x), str)}
    return Instance(fwd, value, outputs, back, grads, bound, dy)
