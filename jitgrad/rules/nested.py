"""Gradient rules of the helpers generated gradient code calls (reverse over reverse).

A jitgrad gradient called inside a differentiated function inlines its generated code
(``transpiler/front/nested.py``), which the outer reverse pass differentiates again: the
helpers that code calls need gradient rules, like user-facing primitives.  Helpers without
one (the typed tapes, the array pullback kernels...) make reverse mode refuse the line.
"""

from __future__ import annotations

from ..kernels.helpers import guard, unbroadcast
from .registry import grad_rule


@grad_rule(guard)
def guard_r(dy, g):
    """``g`` where ``dy != 0``: piecewise in ``dy`` (no gradient), guarded in ``g``."""
    def back(dout):
        return (None, unbroadcast(guard(dy, dout), g))
    return guard(dy, g), back
