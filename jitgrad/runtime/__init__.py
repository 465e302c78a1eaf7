"""The eager runtime, a port of Flux's Tracker: tracked values, backprop, Params, hooks.

The Numba-compilable helpers that generated code calls live in ``helpers``.
"""

from ..markers import checkpoint, hook, nobacksies
from . import hooks as _hooks  # noqa: F401  (gives the markers their eager versions)
from .backprop import BackpropError, back
from .checks import gradcheck, gradcheck_report, ngradient
from .params import Grads, Params, forward, gradient, update, zero_grad
from .tracked import Tracked, data, isleaf, istracked, param, track_call

__all__ = [
    "BackpropError", "Grads", "Params", "Tracked", "back", "checkpoint", "data", "forward",
    "gradcheck", "gradcheck_report", "gradient", "hook", "isleaf", "istracked", "ngradient",
    "nobacksies", "param", "track_call", "update", "zero_grad",
]
