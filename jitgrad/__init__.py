"""jitgrad: compiled reverse-mode gradients of Numba-style Python, by source transformation.

Two halves share one rule registry: the transpiler (``differentiate``, ``grad``...)
writes and compiles gradient code; the runtime (``param``, ``gradient``, ``back``...)
is an eager port of Flux's Tracker for model-level Python.
"""

from . import config
from . import njit_call as _njit_call  # noqa: F401  (gradients callable from @njit code)
from .api import Differentiated, differentiate, grad, value_and_grad, vjp
from .bridges import to_jax, to_torch
from .errors import JitError, JitgradError, RuleError, TransformError
from .forward_api import grad_and_hvp, hessian, hvp, jacfwd, jacrev, jvp
from .kernels.revolve import Schedule, schedule
from .markers import checkpointed
from .rules import grad_rule, non_differentiable
from .runtime import (
    BackpropError,
    Grads,
    Params,
    Tracked,
    back,
    checkpoint,
    data,
    forward,
    gradcheck,
    gradcheck_report,
    gradient,
    hook,
    isleaf,
    istracked,
    ngradient,
    nobacksies,
    param,
    update,
    zero_grad,
)

__all__ = [
    "config", "Differentiated", "differentiate", "grad", "value_and_grad", "vjp",
    "jvp", "jacfwd", "jacrev", "hessian", "hvp", "grad_and_hvp",
    "JitError", "JitgradError", "RuleError", "TransformError", "BackpropError",
    "grad_rule", "non_differentiable",
    "Grads", "Params", "Tracked", "back", "checkpoint", "checkpointed", "data", "forward",
    "gradcheck",
    "gradcheck_report", "gradient", "hook", "isleaf", "istracked", "ngradient", "nobacksies",
    "param", "update", "zero_grad", "Schedule", "schedule", "to_jax", "to_torch",
]
__version__ = "0.1.0"
