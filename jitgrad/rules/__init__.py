"""Gradient rules and primitive facts: the registry, the built-in rules and the facts table
(imported for their effect)."""

from . import (  # noqa: F401  (built-ins)
    arrays,
    elementwise,
    facts,
    hooks,
    operators,
)
from . import second_order, tangents  # noqa: F401  (tangent rules, after the gradient rules)
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
