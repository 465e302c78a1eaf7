"""The one gradient-rule registry shared by the transpiler and the runtime.

A rule is an ordinary Python function in Tracker's ``@grad`` form: it takes the
primitive's arguments and returns ``(value, pullback)``; ``pullback(dy)`` returns
one gradient per positional argument (``None`` where there is none).  The runtime
calls rules eagerly; the transpiler inlines their source as templates.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import RuleError

_RULES: dict[int, Rule] = {}
_NONDIFF: dict[int, Any] = {}
_KEEPALIVE: list[Any] = []
_version = 0


@dataclass
class Rule:
    """A registered ``(value, pullback)`` rule for one or more primitives."""

    impl: Callable[..., Any]
    primitives: tuple[Any, ...]
    name: str
    meta: dict[str, Any] = field(default_factory=dict)


def version() -> int:
    """Registry generation; bumps on every registration so caches can notice."""
    return _version


def _bump() -> None:
    global _version
    _version += 1


def grad_rule(*primitives: Any, **meta: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register ``impl`` as the gradient rule of each primitive (Tracker's ``@grad``).

    The rule must return ``(value, pullback)``; the pullback returns a tuple with
    one entry per positional argument.  Functions transformed afterwards use the
    rule; already-generated code is regenerated on its next call.
    """
    if not primitives:
        raise RuleError("grad_rule needs at least one primitive, e.g. @grad_rule(np.tanh)")

    def register(impl: Callable[..., Any]) -> Callable[..., Any]:
        if not callable(impl):
            raise RuleError(f"grad_rule: {impl!r} is not callable")
        rule = Rule(impl, tuple(primitives), getattr(impl, "__name__", "rule"), dict(meta))
        for p in primitives:
            _RULES[id(p)] = rule
            _NONDIFF.pop(id(p), None)
            _KEEPALIVE.append(p)
        _bump()
        return impl

    return register


def non_differentiable(*primitives: Any) -> None:
    """Declare primitives whose outputs carry no gradient (``len``, ``np.zeros``...)."""
    for p in primitives:
        _NONDIFF[id(p)] = p
        _KEEPALIVE.append(p)
    _bump()


def lookup(primitive: Any) -> Rule | None:
    """The rule registered for ``primitive``, or None."""
    return _RULES.get(id(primitive))


def is_non_differentiable(primitive: Any) -> bool:
    """True if ``primitive`` was declared non-differentiable."""
    return id(primitive) in _NONDIFF
