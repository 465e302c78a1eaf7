"""Tangent rules as templates: the code one call contributes to the forward-mode sweep.

Three ways to a call's tangent, read from the primitive's record (``rules/tangents.py``):

* a tangent rule ``(value, push)``: its forward statements give the value, ``push``'s
  terms (one per argument carrying a tangent) are summed;
* ``elementwise``: the gradient rule's pullback terms with the seed renamed to each
  argument's tangent and the ``unbroadcast`` dropped (a diagonal Jacobian is its own
  transpose);
* ``linear``: the gradient rule's forward part instantiated a second time, on the
  arguments' tangents (zeros for differentiable arguments without one).

Parameters and locals are renamed exactly as for gradient templates (``template.py``).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...errors import RuleError
from ...kernels import helpers
from ...rules import lookup
from ...rules.primitives import fact
from ...rules.tangents import TangentRule, how_tangent
from ..front.inline import rename
from ..naming import Namer
from ..nodes import clone, walk
from .template import Template, bind_args, instantiate, scope_of, split_rule, template_of


@dataclass
class PushTemplate:
    """The parsed pieces of one tangent rule (``template.Template`` with a many-argument
    push in place of the one-argument pullback)."""

    tpl: Template
    dys: list[str]


_CACHE: dict[int, PushTemplate] = {}


def push_template_of(rule: TangentRule) -> PushTemplate:
    """Parse (once) a tangent rule; RuleError if it is not ``(value, push)`` shaped."""
    key = id(rule.impl)
    if key in _CACHE and _CACHE[key].tpl.rule is rule:
        return _CACHE[key]
    fn, pre, push, value = split_rule(rule.impl, f"tangent rule {rule.name}", "push(...)", "push")
    pret = push.body[-1] if push.body else None
    if not isinstance(pret, ast.Return) or len(push.body) != 1:
        raise RuleError(f"push of tangent rule {rule.name} must be one 'return (t1, ...)'")
    terms = list(pret.value.elts) if isinstance(pret.value, ast.Tuple) else [pret.value]
    terms = [None if isinstance(t, ast.Constant) and t.value is None else t for t in terms]
    a = fn.args
    params = [x.arg for x in a.args] + [x.arg for x in a.kwonlyargs]
    ndef = len(a.defaults)
    positional = [x.arg for x in a.args[:len(a.args) - ndef]]
    defaults = {x.arg: d for x, d in zip(a.args[len(a.args) - ndef:], a.defaults, strict=True)}
    dys = [x.arg for x in push.args.args]
    local = {n.id for s in pre for n in walk(s)
             if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    tpl = Template(rule, params, positional, defaults, pre, value, dys[0] if dys
                   else "_", [], terms, scope_of(rule.impl), local)
    tpl.free = {n.id for s in [*pre, tpl.value, *[t for t in terms if t is not None]]
                for n in walk(s) if isinstance(n, ast.Name) and n.id not in params
                and n.id not in local and n.id not in dys}
    out = PushTemplate(tpl, dys)
    _CACHE[key] = out
    return out


@dataclass
class TangentCode:
    """What one call contributes: its primal (the rule's forward statements and value)
    and its tangent (``expr`` None: zero)."""

    primal_pre: list[ast.stmt]
    value: ast.expr
    pre: list[ast.stmt]
    expr: ast.expr | None
    #: elementwise: the sum of the terms may be smaller than the result (broadcasting)
    broadcasts: bool = False
    outputs: set[str] = field(default_factory=set)
    #: the rule's positional parameters (a call passing more spells options Numba may lack)
    positional: int = 0


def differentiable_params(fn: Any) -> list[bool] | None:
    """Per positional parameter of ``fn``'s gradient rule: does it get a gradient?"""
    rule = lookup(fn)
    if rule is None:
        return None
    tpl = template_of(rule)
    return [g is not None for g in tpl.grads]


def _strip_unbroadcast(e: ast.expr, original: ast.expr | None, globals_: dict) -> ast.expr:
    """``e`` (an instance of the template's ``original``) without its outer
    ``unbroadcast(v, x)``, told by the template's own name for it: the instance's name may
    be another (``_unbroadcast2``, where the user's module binds ``unbroadcast``)."""
    if isinstance(original, ast.Call) and isinstance(original.func, ast.Name) \
            and len(original.args) == 2 and globals_.get(original.func.id) is helpers.unbroadcast:
        return e.args[0]
    return e


def _names(e: ast.AST) -> set[str]:
    return {n.id for n in walk(e) if isinstance(n, ast.Name)}


def _linear_args(args: list[ast.expr], diff: list[bool],
                 tangent: Callable[[ast.expr], ast.expr | None],
                 zero: Callable[[ast.expr], ast.expr]) -> tuple[list[ast.expr], bool]:
    """The arguments of a linear function's tangent call: each differentiable argument's
    tangent (a zero where it has none; a tuple's or list's entry by entry), the others as
    they are; and whether any tangent was found."""
    targs: list[ast.expr] = []
    any_active = False
    for k, a in enumerate(args):
        if k >= len(diff) or not diff[k]:
            targs.append(a)
            continue
        if isinstance(a, (ast.Tuple, ast.List)):
            elts = []
            for e in a.elts:
                t = tangent(e)
                any_active |= t is not None
                elts.append(t if t is not None else zero(e))
            targs.append(type(a)(elts=elts, ctx=ast.Load()))
            continue
        t = tangent(a)
        any_active |= t is not None
        targs.append(t if t is not None else zero(a))
    return targs, any_active


def tangent_code(fn: Any, args: list[ast.expr], kw: dict[str, ast.expr],
                 tangent: Callable[[ast.expr], ast.expr | None],
                 zero: Callable[[ast.expr], ast.expr], namer: Namer,
                 global_name: Callable[[str, Any], str]) -> TangentCode:
    """The code of one call of ``fn``: ``tangent(arg)`` is an argument's tangent (None if it
    has none), ``zero(arg)`` a zero tangent for it."""
    how = how_tangent(fn)
    if how is None:
        raise RuleError(f"no tangent rule for {getattr(fn, '__name__', fn)}")
    if how == "rule":
        pt = push_template_of(fact(fn).tangent)
        code = _from_push(pt, args, kw, tangent, namer, global_name)
        code.positional = len(pt.tpl.positional)
        return code
    rule = lookup(fn)
    tpl = template_of(rule)
    inst = instantiate(tpl, args, kw, namer, global_name)
    primal_pre = list(inst.forward)
    value = inst.value
    npos = len(tpl.positional)
    if how == "zero":
        return TangentCode(primal_pre, value, [], None, False, inst.outputs, npos)
    diff = [g is not None for g in tpl.grads]
    if how == "linear":
        targs, any_active = _linear_args(args, diff, tangent, zero)
        if not any_active:
            return TangentCode(primal_pre, value, [], None, False, inst.outputs, npos)
        second = instantiate(tpl, targs, kw, namer, global_name)
        return TangentCode(primal_pre, value, list(second.forward), second.value, False,
                           inst.outputs, npos)
    # elementwise
    expr = None
    pre: list[ast.stmt] = []
    for k, a in enumerate(args):
        if k >= len(inst.grads) or inst.grads[k] is None:
            continue
        t = tangent(a)
        if t is None:
            continue
        term = _strip_unbroadcast(clone(inst.grads[k]), tpl.grads[k], tpl.globals)
        term = rename(term, {inst.dy: t})
        expr = term if expr is None else ast.BinOp(left=expr, op=ast.Add(), right=term)
    if expr is not None:
        for s in inst.back:
            if inst.dy in _names(s):
                raise RuleError(f"the pullback of {rule.name} is not elementwise in its seed; "
                                "register a tangent rule (jitgrad.rules.tangents)")
            pre.append(s)
    return TangentCode(primal_pre, value, pre, expr, True, inst.outputs, npos)


def _from_push(pt: PushTemplate, args, kw, tangent, namer: Namer, global_name) -> TangentCode:
    tpl = pt.tpl
    bound = bind_args(tpl, args, kw)
    mapping: dict[str, str | ast.expr] = dict(bound)
    for local in sorted(tpl.locals):
        mapping[local] = namer.fresh("_" + local.lstrip("_"))
    for f in tpl.free:
        if f in tpl.globals:
            new = global_name(f, tpl.globals[f])
            if new != f:
                mapping[f] = new
    pre = [rename(clone(s), mapping) for s in tpl.pre]
    value = rename(clone(tpl.value), mapping)
    expr = None
    live: dict[str, ast.expr] = {}
    dead: set[str] = set()
    for k, dy in enumerate(pt.dys):
        p = tpl.params[k] if k < len(tpl.params) else None
        t = tangent(bound[p]) if p is not None else None
        if t is None:
            dead.add(dy)
        else:
            live[dy] = t
    for k, term in enumerate(tpl.grads):
        if term is None or k >= len(pt.dys) or pt.dys[k] in dead:
            continue
        if _names(term) & dead:
            raise RuleError(f"tangent rule {tpl.rule.name}: term {k} reads another "
                            "argument's tangent")
        term = rename(clone(term), {**mapping, **live})
        expr = term if expr is None else ast.BinOp(left=expr, op=ast.Add(), right=term)
    outputs = {mapping[x] for x in tpl.locals if isinstance(mapping.get(x), str)}
    return TangentCode(pre, value, [], expr, False, outputs)


__all__ = ["PushTemplate", "TangentCode", "differentiable_params", "push_template_of",
           "tangent_code"]
