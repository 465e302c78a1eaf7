"""The one gradient-rule registry shared by the transpiler and the runtime.

A rule is an ordinary Python function in Tracker's ``@grad`` form: it takes the
primitive's arguments and returns ``(value, pullback)``; ``pullback(dy)`` returns
one gradient per positional argument (``None`` where there is none).  The runtime
calls rules eagerly; the transpiler inlines their source as templates.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import RuleError
from .primitives import (
    BROADCAST,
    SETTABLE,
    UNKNOWN,
    argument,
    bump,
    declared,
    fact,
    record,
    update,
    version,
)

#: the record fields ``grad_rule``'s keywords may set (spellings, queries, mutating methods,
#: IEEE stand-ins and draws' sizes are the built-in table's; tangent rules have their own)
RULE_FACTS = tuple(f for f in SETTABLE if f not in ("tangent", "query", "methods", "attrs",
                                                     "mutates", "ieee", "size_arg",
                                                     "hides_writes", "copies_into",
                                                     "cached_as"))

__all__ = ["Rule", "grad_rule", "is_non_differentiable", "lookup", "non_differentiable",
           "version"]


@dataclass
class Rule:
    """A registered ``(value, pullback)`` rule for one or more primitives."""

    impl: Callable[..., Any]
    primitives: tuple[Any, ...]
    name: str


def _facts(meta: dict[str, Any]) -> dict[str, Any]:
    """``grad_rule``'s keywords as record fields: ``ndim_of`` (with ``float_result``) and
    ``kind_of`` say how the result kind follows (``primitives.declared``/``argument``);
    the other keywords are record fields themselves (``view=True``, ``linear=True``...)."""
    facts = dict(meta)
    if "float_result" in facts and "ndim_of" not in facts:
        raise RuleError("grad_rule: float_result= goes with ndim_of= (the result's ndim)")
    if "ndim_of" in facts:
        facts["result"] = declared(facts.pop("ndim_of"), bool(facts.pop("float_result", False)))
    if "kind_of" in facts:
        facts["result"] = argument(facts.pop("kind_of"))
    unknown = sorted(set(facts) - set(RULE_FACTS))
    if unknown:
        raise RuleError(f"grad_rule: unknown keyword {', '.join(unknown)}; it takes ndim_of, "
                        f"float_result, kind_of, {', '.join(RULE_FACTS)} (docs/rules.md)")
    return facts


def grad_rule(*primitives: Any, **meta: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register ``impl`` as the gradient rule of each primitive (Tracker's ``@grad``).

    The rule must return ``(value, pullback)``; the pullback returns a tuple with
    one entry per positional argument.  Functions transformed afterwards use the
    rule; already-generated code is regenerated on its next call.  Keywords set facts
    of the primitives' records (``jitgrad.rules.primitives``): ``ndim_of=`` and
    ``float_result=`` or ``kind_of=`` for the result's kind, ``view=``, ``linear=``...
    A rule maps arguments to a value: the primitive is ``pure`` unless ``pure=False``.
    """
    if not primitives:
        raise RuleError("grad_rule needs at least one primitive, e.g. @grad_rule(np.tanh)")
    facts = _facts(meta)

    def register(impl: Callable[..., Any]) -> Callable[..., Any]:
        if not callable(impl):
            raise RuleError(f"grad_rule: {impl!r} is not callable")
        rule = Rule(impl, tuple(primitives), getattr(impl, "__name__", "rule"))
        for p in primitives:
            rec = record(p)
            update(rec, {"pure": True, **facts})
            if rec.rule not in (None, rule):  # p leaves those that shared its old rule
                for q in rec.aliases:
                    record(q).aliases = tuple(x for x in record(q).aliases if x is not p)
            rec.rule, rec.non_differentiable = rule, False
            rec.aliases = tuple({id(q): q for q in primitives if q is not p}.values())
            if rec.result == UNKNOWN:
                rec.result = BROADCAST  # a rule with nothing else known: elementwise
        bump()
        return impl

    return register


def non_differentiable(*primitives: Any, **facts: Any) -> None:
    """Declare primitives whose outputs carry no gradient (``len``, ``np.zeros``...), with
    ``facts`` of their records, ``grad_rule``'s keywords (``pure=True``: a call only
    computes a value)."""
    facts = _facts(facts)
    for p in primitives:
        rec = record(p)
        update(rec, facts)
        rec.non_differentiable = True
    bump()


def lookup(primitive: Any) -> Rule | None:
    """The rule registered for ``primitive``, or None."""
    rec = fact(primitive)
    return rec.rule if rec is not None else None


def is_non_differentiable(primitive: Any) -> bool:
    """True if ``primitive`` was declared non-differentiable."""
    rec = fact(primitive)
    return rec is not None and rec.non_differentiable
