"""jitgrad: compiled reverse-mode gradients of Numba-style Python, by source transformation."""

from .api import Differentiated, differentiate, grad, value_and_grad, vjp
from .errors import JitError, JitgradError, RuleError, TransformError
from .rules import grad_rule, non_differentiable

__all__ = [
    "Differentiated", "differentiate", "grad", "value_and_grad", "vjp",
    "JitError", "JitgradError", "RuleError", "TransformError",
    "grad_rule", "non_differentiable",
]
__version__ = "0.1.0"
