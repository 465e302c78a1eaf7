"""Forward-mode (tangent) rules: one per primitive, in the record's ``tangent`` slot.

Most primitives need no rule of their own (autograd's ``def_linear`` idea):

* ``linear``: the tangent is the primitive's own forward applied to the tangents of
  its differentiable arguments (zeros for inactive ones), its other arguments (axes,
  shapes, indices, conditions) as they are: ``sum(x, axis) -> sum(x_dot, axis)``;
* ``elementwise``: the Jacobian is diagonal, so the pullback applied to a tangent is
  the pushforward: ``unbroadcast(dy * cos(x), x)`` gives ``x_dot * cos(x)`` once the
  ``unbroadcast`` (the sum back to the operand's shape) is dropped.

The rest have a tangent rule written like a gradient rule: ordinary Python returning
``(value, push)``, where ``push`` takes one tangent per positional argument and returns
one term per argument (``None`` where the argument has no tangent); the tangent of the
result is the sum of the terms of the arguments that carry one.  The transpiler
inlines the rule's source as a template (``transpiler/modes/tangent.py``); called
eagerly (``record(fn).tangent(primals, tangents)``) the same rule runs as Python.
"""

from __future__ import annotations

import builtins
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import RuleError
from ..kernels.arrays import (
    argextreme,
    axis_count,
    centered,
    chooser_weights,
    extreme_at,
    kept,
    prod_others,
    reduce_max,
    reduce_min,
    reduce_prod,
    reduce_sum,
    select,
    sort_along,
)
from ..kernels.tangents import pick_tangent, sort_tangent
from ..markers import hook, nobacksies
from .primitives import bump, declare, fact, record, records

__all__ = ["TangentRule", "eager_jvp", "how_tangent", "missing_tangents", "tangent_rule",
           "UNSUPPORTED"]


@dataclass
class TangentRule:
    """A registered ``(value, push)`` tangent rule, callable eagerly on
    ``(primals, tangents)`` (``None`` for an argument without a tangent)."""

    impl: Callable[..., Any]
    primitives: tuple[Any, ...]
    name: str

    def __call__(self, primals: tuple, tangents: tuple) -> tuple[Any, Any]:
        """``(value, tangent)`` of the primitive at ``primals`` along ``tangents``."""
        value, push = self.impl(*primals)
        n = len(primals)
        full = [_zero_like(p) if t is None else t for p, t in zip(primals, tangents,
                                                                  strict=True)]
        arity = push.__code__.co_argcount  # options (axis...) get no tangent parameter;
        terms = push(*full[:arity], *[None] * (arity - n))  # defaults left out get None
        terms = terms if isinstance(terms, tuple) else (terms,)
        out = None
        for t, term in zip(tangents, terms, strict=False):
            if t is None or term is None:
                continue
            out = term if out is None else out + term
        return value, _fit(out, value)


def tangent_rule(*primitives: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register ``impl`` as the tangent (forward-mode) rule of each primitive.

    ``impl(*args)`` returns ``(value, push)``; ``push(*tangents)`` returns one term per
    positional argument (``None`` for arguments without a tangent)."""
    if not primitives:
        raise RuleError("tangent_rule needs at least one primitive")

    def register(impl: Callable[..., Any]) -> Callable[..., Any]:
        rule = TangentRule(impl, tuple(primitives), getattr(impl, "__name__", "tangent"))
        for p in primitives:
            record(p).tangent = rule
        bump()
        return impl

    return register


def how_tangent(fn: Any) -> str | None:
    """How forward mode differentiates ``fn``: ``"rule"`` (a tangent rule), ``"elementwise"``
    or ``"linear"`` (derived from its gradient rule), ``"zero"`` (non-differentiable), or
    None (no tangent: the forward pass refuses the call)."""
    rec = fact(fn)
    if rec is None:
        return None
    if rec.non_differentiable:
        return "zero"
    if isinstance(rec.tangent, TangentRule):
        return "rule"
    if rec.rule is None or fn in UNSUPPORTED:
        return None
    if rec.elementwise:
        return "elementwise"
    if rec.linear:
        return "linear"
    return None


def missing_tangents() -> list[Any]:
    """Primitives with a gradient rule but no way to take their tangent."""
    return [r.fn for r in records() if r.rule is not None and how_tangent(r.fn) is None]


def eager_jvp(fn: Any, primals: tuple, tangents: tuple) -> tuple[Any, Any]:
    """``(fn(*primals), tangent)`` computed eagerly with ``fn``'s forward-mode rule.

    ``tangents`` has one entry per positional argument, None where there is none."""
    rec = fact(fn)
    how = how_tangent(fn)
    if how is None:
        raise RuleError(f"no tangent rule for {getattr(fn, '__name__', fn)}")
    if how == "rule":
        return rec.tangent(primals, tangents)
    value, back = rec.rule.impl(*primals)
    if how == "zero":
        return value, _fit(None, value)
    diff = _differentiable(rec, primals)
    if how == "linear":
        args = [(_zero_like(p) if t is None else t) if d else p
                for p, t, d in zip(primals, tangents, diff, strict=True)]
        return value, _fit(rec.rule.impl(*args)[0], value)
    # elementwise: broadcast everything to the result's shape, so unbroadcast is the
    # identity and the pullback of each tangent is that argument's term
    shape = np.shape(value)
    out = None
    for k, t in enumerate(tangents):
        if t is None or not diff[k]:
            continue
        bp = [np.broadcast_to(q, shape).copy() if shape else q for q in primals]
        _, b = rec.rule.impl(*bp)
        term = b(np.broadcast_to(t, shape).copy() if shape else t)[k]
        out = term if out is None else out + term
    return value, _fit(out, value)


def _differentiable(rec: Any, primals: tuple) -> list[bool]:
    """Which positional arguments get a gradient (the pullback's non-None entries)."""
    _, back = rec.rule.impl(*primals)
    seed = rec.rule.impl(*primals)[0]
    grads = back(np.ones_like(seed) if np.ndim(seed) else 1.0)
    grads = grads if isinstance(grads, tuple) else (grads,)
    return [k < len(grads) and grads[k] is not None for k in range(len(primals))]


def _zero_like(p: Any) -> Any:
    if isinstance(p, (tuple, list)):
        return type(p)(_zero_like(q) for q in p)
    return np.zeros(np.shape(p)) if np.ndim(p) else 0.0


def _fit(t: Any, value: Any) -> Any:
    if t is None:
        return _zero_like(value)
    if np.ndim(value) and np.shape(t) != np.shape(value):
        return np.zeros(np.shape(value)) + t
    return t


# --- primitives forward mode refuses (no tangent rule yet) -------------------------------

#: primitives with a gradient rule but no tangent: the forward pass raises TransformError
UNSUPPORTED: dict[Any, str] = {}

# the gradient rules' forward is linear in these arguments (constants and shapes aside)
declare(np.full, np.full_like, np.linspace, linear=True)
declare(np.ndarray.clip, elementwise=True)  # as np.clip: one rule, one spelling more

# --- linear algebra ------------------------------------------------------------------


@tangent_rule(np.dot, np.matmul, operator.matmul, np.ndarray.dot)
def dot(a, b):
    def push(da, db):
        return (np.dot(da, b), np.dot(a, db))
    return np.dot(a, b), push


@tangent_rule(np.vdot)
def vdot(a, b):
    def push(da, db):
        return (np.vdot(da, b), np.vdot(a, db))
    return np.vdot(a, b), push


@tangent_rule(np.outer)
def outer(a, b):
    def push(da, db):
        return (np.outer(da, b), np.outer(a, db))
    return np.outer(a, b), push


@tangent_rule(np.linalg.solve)
def solve(a, b):
    x = np.linalg.solve(a, b)
    def push(da, db):
        return (-np.linalg.solve(a, np.dot(da, x)), np.linalg.solve(a, db))
    return x, push


@tangent_rule(np.linalg.inv)
def inv(a):
    y = np.linalg.inv(a)
    def push(da):
        return (-np.dot(np.dot(y, da), y),)
    return y, push


@tangent_rule(np.linalg.det)
def det(a):
    y = a.dtype.type(np.linalg.det(a))
    def push(da):
        return (y * np.sum(np.linalg.inv(a).T * da),)
    return y, push


@tangent_rule(np.linalg.norm)
def norm(x):
    """0 at ``x = 0`` (the gradient rule's choice there)."""
    y = x.dtype.type(np.linalg.norm(x))
    def push(dx):
        return (np.sum(x * dx) / (y + (y == 0)),)
    return y, push


# --- reductions ------------------------------------------------------------------------


@tangent_rule(np.prod, np.ndarray.prod)
def prod(x, axis=None, keepdims=False):
    def push(dx):
        return (kept(reduce_sum(dx * prod_others(x, axis), axis), x, axis, keepdims),)
    return kept(reduce_prod(x, axis), x, axis, keepdims), push


@tangent_rule(np.max, np.amax, np.ndarray.max)
def max_(x, axis=None, keepdims=False):
    """Ties share the tangent equally, as they share the gradient."""
    y = kept(reduce_max(x, axis), x, axis, keepdims)
    def push(dx):
        return (kept(reduce_sum(dx * chooser_weights(x, y, axis), axis), x, axis, keepdims),)
    return y, push


@tangent_rule(np.min, np.amin, np.ndarray.min)
def min_(x, axis=None, keepdims=False):
    y = kept(reduce_min(x, axis), x, axis, keepdims)
    def push(dx):
        return (kept(reduce_sum(dx * chooser_weights(x, y, axis), axis), x, axis, keepdims),)
    return y, push


@tangent_rule(np.var, np.ndarray.var)
def var(x, axis=None, ddof=0, keepdims=False):
    d = centered(x, axis)
    n = axis_count(x, axis, ddof)
    def push(dx):
        return (kept(reduce_sum((d + d) * dx, axis) / n, x, axis, keepdims),)
    return kept(reduce_sum(d * d, axis) / n, x, axis, keepdims), push


@tangent_rule(np.std, np.ndarray.std)
def std(x, axis=None, ddof=0, keepdims=False):
    """0 where the std is 0 (the gradient rule's choice there)."""
    d = centered(x, axis)
    n = axis_count(x, axis, ddof)
    y = kept(np.sqrt(reduce_sum(d * d, axis) / n), x, axis, keepdims)
    def push(dx):
        return (kept(reduce_sum(d * dx, axis), x, axis, keepdims) / (n * (y + (y == 0))),)
    return y, push


@tangent_rule(builtins.max)
def max_builtin(a, b=None, c=None, d=None):
    k = argextreme(a, b, c, d, True)
    def push(da, db, dc, dd):
        return (pick_tangent(da, a, k), select(k == 1, db), select(k == 2, dc),
                select(k == 3, dd))
    return extreme_at(a, b, c, d, k), push


@tangent_rule(builtins.min)
def min_builtin(a, b=None, c=None, d=None):
    k = argextreme(a, b, c, d, False)
    def push(da, db, dc, dd):
        return (pick_tangent(da, a, k), select(k == 1, db), select(k == 2, dc),
                select(k == 3, dd))
    return extreme_at(a, b, c, d, k), push


@tangent_rule(np.sort)
def sort(x, axis=-1):
    """Each tangent entry moves with the element sorted into its place."""
    def push(dx):
        return (sort_tangent(dx, x, axis),)
    return sort_along(x, axis), push


# --- jitgrad's own markers: identities in forward mode -----------------------------------


@tangent_rule(hook)
def hook_tangent(fn, x):
    """``hook`` changes gradients only: forward mode passes the tangent through."""
    def push(dfn, dx):
        return (None, dx)
    return x, push


@tangent_rule(nobacksies)
def nobacksies_tangent(msg, x):
    """``nobacksies`` forbids reverse mode only: forward mode passes the tangent through."""
    def push(dmsg, dx):
        return (None, dx)
    return x, push
