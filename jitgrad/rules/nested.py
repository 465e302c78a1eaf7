"""Rules of the helpers generated gradient and tangent code calls (nested differentiation).

A jitgrad gradient called inside a differentiated function inlines its generated code
(``transpiler/front/nested.py``), which the outer reverse pass differentiates again: the
helpers that code calls need gradient rules, like user-facing primitives.  Helpers without
one (the typed tapes, the array pullback kernels...) make reverse mode refuse the line.
"""

from __future__ import annotations

import numpy as np

from ..kernels.arrays import (
    chooser_weights,
    dot_grad_a,
    dot_grad_b,
    expand_along,
    kept,
    reduce_max,
    reduce_min,
    reduce_sum,
    reshape_like,
    select,
    shaped_like,
)
from ..kernels.helpers import broadcast_like, guard, unbroadcast
from ..kernels.tangents import fit
from .primitives import argument, declare
from .registry import grad_rule
from .tangents import tangent_rule

declare(broadcast_like, shaped_like, result=argument(1))
declare(broadcast_like, shaped_like, shape_args=(1,))
declare(fit, result=argument(1))
declare(fit, shape_args=(1,))


@grad_rule(guard)
def guard_r(dy, g):
    """``g`` where ``dy != 0``: piecewise in ``dy`` (no gradient), guarded in ``g``."""
    def back(dout):
        return (None, unbroadcast(guard(dy, dout), g))
    return guard(dy, g), back


@grad_rule(unbroadcast)
def unbroadcast_r(g, x):
    """Linear in ``g``: its pullback makes the gradient ``g``-shaped again."""
    def back(dout):
        return (broadcast_like(dout, g), None)
    return unbroadcast(g, x), back


@tangent_rule(broadcast_like)
def broadcast_like_t(dy, g):
    def push(ddy, dg):
        return (broadcast_like(ddy, g), None)
    return broadcast_like(dy, g), push


@tangent_rule(shaped_like)
def shaped_like_t(dy, y):
    def push(ddy, dshape):
        return (shaped_like(ddy, y), None)
    return shaped_like(dy, y), push


@grad_rule(expand_along)
def expand_along_r(dy, x, axis):
    """Linear in ``dy``: its pullback sums over ``axis`` back to ``dy``'s shape."""
    def back(dout):
        return (shaped_like(reduce_sum(dout, axis), dy), None, None)
    return expand_along(dy, x, axis), back


@grad_rule(reduce_sum)
def reduce_sum_r(x, axis):
    def back(dout):
        return (expand_along(dout, x, axis), None)
    return reduce_sum(x, axis), back


@grad_rule(kept)
def kept_r(y, x, axis, keepdims):
    """A reshape of ``y`` (the identity without keepdims)."""
    def back(dout):
        return (shaped_like(dout, y), None, None, None)
    return kept(y, x, axis, keepdims), back


@grad_rule(reshape_like)
def reshape_like_r(dy, x):
    def back(dout):
        return (shaped_like(dout, dy), None)
    return reshape_like(dy, x), back


@grad_rule(reduce_max)
def reduce_max_r(x, axis):
    y = reduce_max(x, axis)
    def back(dout):
        return (expand_along(dout, x, axis) * chooser_weights(x, y, axis), None)
    return y, back


@grad_rule(reduce_min)
def reduce_min_r(x, axis):
    y = reduce_min(x, axis)
    def back(dout):
        return (expand_along(dout, x, axis) * chooser_weights(x, y, axis), None)
    return y, back


@grad_rule(select)
def select_r(cond, dy):
    def back(dout):
        return (None, unbroadcast(select(cond, dout), dy))
    return select(cond, dy), back


# ``dot_grad_a(dy, a, b)`` is the gradient of ``np.dot(a, b)`` in ``a`` (``a``'s shape),
# bilinear in ``dy`` and ``b``: its pullback in ``dy`` is the product again with ``a``
# replaced by the incoming gradient, in ``b`` the other gradient of that product;
# ``dot_grad_b`` likewise with the roles of ``a`` and ``b`` exchanged.


@grad_rule(dot_grad_a)
def dot_grad_a_r(dy, a, b):
    def back(dout):
        return (np.dot(dout, b), None, dot_grad_b(dy, dout, b))
    return dot_grad_a(dy, a, b), back


@grad_rule(dot_grad_b)
def dot_grad_b_r(dy, a, b):
    def back(dout):
        return (np.dot(a, dout), dot_grad_a(dy, a, dout), None)
    return dot_grad_b(dy, a, b), back


# ``fit(t, y)``, the tangent ``t`` broadcast to the primal ``y``'s shape, in tangent code
# (a jvp called inside a differentiated function): linear in ``t``.


@grad_rule(fit)
def fit_r(t, y):
    def back(dout):
        return (unbroadcast(dout, t), None)
    return fit(t, y), back


@tangent_rule(fit)
def fit_t(t, y):
    def push(dt, dy):
        return (fit(dt, y), None)
    return fit(t, y), push
