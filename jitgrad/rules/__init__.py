"""Gradient rules: the registry and the built-in rule tables (imported for their effect)."""

from . import arrays, elementwise, operators, transpiled  # noqa: F401  (built-in rules)
from .registry import (
    Rule,
    grad_rule,
    is_non_differentiable,
    lookup,
    non_differentiable,
    version,
)

__all__ = ["Rule", "grad_rule", "is_non_differentiable", "lookup", "non_differentiable", "version"]
