"""Gradient rules and primitive facts: the registry, the built-in rules and the facts table
(imported for their effect)."""

from . import (  # noqa: F401  (built-ins)  # noqa: F401  (tangent rules, after the gradient rules)
    arrays,
    elementwise,
    facts,
    hooks,
    nested,
    operators,
    second_order,
    tangents,
)
from .primitives import Primitive, fact
from .registry import (
    Rule,
    grad_rule,
    is_non_differentiable,
    lookup,
    non_differentiable,
    version,
)

__all__ = ["Primitive", "Rule", "fact", "grad_rule", "is_non_differentiable", "lookup",
           "non_differentiable", "version"]
