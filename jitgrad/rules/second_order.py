"""Facts and tangent rules of the helpers generated gradient code calls (second order).

Forward-over-reverse (``jg.hvp``, ``jg.hessian``) applies the forward pass to the code
reverse mode generated, so the helpers that code calls (``unbroadcast``, ``guard``, the
typed tapes, the array pullback kernels) need result kinds and tangents, exactly like
user-facing primitives.  Most are linear in their gradient argument: their tangent is
the helper applied to the tangent (``linear``, other arguments as they are); the rest
have tangent rules here.  A helper without one (``prod_others``, ``digamma``...) makes
forward mode refuse the generated line, never guess.
"""

from __future__ import annotations

import numpy as np

from ..kernels import arrays as K
from ..kernels import helpers as H
from ..kernels import revolve as R
from ..kernels import rng as G
from ..kernels.revolve import ref_slots
from ..kernels.tangents import pick_tangent, prod_others_tangent, sort_tangent, trigamma
from .primitives import BROADCAST, FLOAT, INT, Result, argument, declare, declared, fixed
from .registry import non_differentiable
from .results import RUNTIME
from .tangents import tangent_rule

# --- result kinds ---------------------------------------------------------------------

declare(H.unbroadcast, K.reshape_like, K.scatter_add, K.expand_along, K.spread,
        K.dot_grad_a, K.pick, K.diag_back, K.diff_back, K.unsort, result=argument(1))
declare(K.transpose_back, result=argument(0))
declare(K.dot_grad_b, result=argument(2))
declare(R.load_ref, result=argument(2))
declare(K.in_dtype_of, result=argument(1))
declare(K.mixed_dot, result=Result("dot"))
declare(K.mixed_solve, result=Result("solve"))
declare(H.tape_get, result=Result("same", ndim=0))  # an entry of a tape (gather.py)
declare(H.snapshot, H.tape_reserve, H.tape_from, H.shape_stand_in, G.rng_reserve, K.centered,
        K.chooser_weights,
        K.prod_others, K.cumsum_along, K.flip_along, result=argument(0))
declare(H.guard, H.pow_log, K.select, H.digamma, result=BROADCAST)
declare(H.trip_count, K.argextreme, R.revolve_split, R.snapshot_count, R.block_split,
        R.block_steps, R.block_slots, result=INT)
declare(K.axis_count, H.lane_sum, result=FLOAT)
declare(G.rng_saved, result=fixed("i", 1))  # uint8 storage


def _one_more(nd):
    """``array_slots(x, k[, store])``: a ``(k,) + x.shape`` buffer."""
    return nd + 1


declare(R.array_slots, result=Result("same", ndim=_one_more))
#: ``split_like(dy, (a, b), axis)``: a tuple of pieces shaped like ``a`` and ``b``, read only
#: as ``g[0]``, ``g[1]``: typed as a stack of them (one more axis), so an entry has theirs
declare(K.split_like, result=Result("sequence", ndim=_one_more, arg=1))



def _reduced(nd, axis=None, **_):
    """``reduce_*(x, axis)``: a scalar for axis None, one axis fewer for an int."""
    if axis is None:
        return 0
    if axis is RUNTIME or nd is None:
        return None
    return nd - 1


def _kept(nd, axis=None, keepdims=False, **_):
    """``kept(y, x, axis, keepdims)``: ``y``'s ndim, one more with keepdims and an int axis
    (axis None with keepdims needs ``x``'s ndim, not known here: refused)."""
    if keepdims is RUNTIME or nd is None:
        return None
    if not keepdims:
        return nd
    return nd + 1 if isinstance(axis, int) else None


declare(K.reduce_sum, K.reduce_mean, K.reduce_max, K.reduce_min, K.reduce_prod,
        result=declared(_reduced, float_result=True))
declare(K.kept, result=declared(_kept, float_result=True))


def _sorted(nd, axis=-1, **_):
    """``sort_along(x, axis)``: flattened for axis None, else ``x``'s ndim."""
    return 1 if axis is None else nd


declare(K.sort_along, result=declared(_sorted))


def _extreme(nd, b=None, **_):
    """``extreme_at(a, b, c, d, k)``: an entry of ``a`` when it is the only one, else one of
    the numbers."""
    if b is None:
        return None if nd is None else max(nd - 1, 0)
    return nd


declare(K.extreme_at, result=declared(_extreme))

# (``array_slots``' entries: ``store_slot``, a copy in forward mode)
non_differentiable(H.zeros_like, H.shape_stand_in, H.trip_count, K.chooser_weights, K.axis_count,
                   K.argextreme, R.revolve_split, R.snapshot_count, R.block_split,
                   R.block_steps, R.block_slots, R.array_slots, G.rng_reserve, pure=True)
non_differentiable(G.rng_store, G.rng_load, G.rng_saved)  # the generators' state: not pure

# --- tangents: linear in the gradient (or array) argument ------------------------------


@tangent_rule(H.unbroadcast)
def unbroadcast_t(g, x):
    def push(dg, dx):
        return (H.unbroadcast(dg, x), None)
    return H.unbroadcast(g, x), push


@tangent_rule(H.guard)
def guard_t(dy, g):
    """``g`` where ``dy != 0``: piecewise, so the tangent is guarded the same way."""
    def push(ddy, dg):
        return (None, H.guard(dy, dg))
    return H.guard(dy, g), push


@tangent_rule(H.snapshot)
def snapshot_t(x):
    def push(dx):
        return (H.snapshot(dx),)
    return H.snapshot(x), push


@tangent_rule(R.ref_slots)
def ref_slots_t(x, k):
    """The tangents' references, slot by slot with the arrays'."""
    def push(dx, dk):
        return (ref_slots(dx, k), None)
    return ref_slots(x, k), push


@tangent_rule(R.load_ref)
def load_ref_t(refs, i, like):
    """The tangent's reference from the tangents' slots (``ref_slots_t``)."""
    def push(drefs, di, dlike):
        return (R.load_ref(drefs, i, dlike), None, None)
    return R.load_ref(refs, i, like), push


@tangent_rule(H.tape_reserve)
def tape_reserve_t(buf, used, more):
    """The tangent tape grows with the tape (same sizes, same cursor)."""
    def push(dbuf, dused, dmore):
        return (H.tape_reserve(dbuf, used, more), None, None)
    return H.tape_reserve(buf, used, more), push


@tangent_rule(H.tape_from)
def tape_from_t(buf, k):
    """The tangent tape's entries from the same one on (``tape_reserve_t``)."""
    def push(dbuf, dk):
        return (H.tape_from(dbuf, k), None)
    return H.tape_from(buf, k), push


@tangent_rule(H.lane_sum)
def lane_sum_t(buf, m):
    """Linear in the buffer of partial sums (gather.py's ``_Lanes``)."""
    def push(dbuf, dm):
        return (H.lane_sum(dbuf, m), None)
    return H.lane_sum(buf, m), push


@tangent_rule(H.tape_get)
def tape_get_t(buf, k):
    """The tangent tape's entry at the same index."""
    def push(dbuf, dk):
        return (H.tape_get(dbuf, k), None)
    return H.tape_get(buf, k), push


@tangent_rule(H.pow_log)
def pow_log_t(a):
    """``log(a)`` where ``a > 0``, else 0."""
    def push(da):
        return (K.select(a > 0, da / np.where(a > 0, a, 1.0)),)
    return H.pow_log(a), push


@tangent_rule(K.expand_along)
def expand_along_t(dy, x, axis):
    def push(ddy, dx, daxis):
        return (K.expand_along(ddy, x, axis), None, None)
    return K.expand_along(dy, x, axis), push


@tangent_rule(K.transpose_back)
def transpose_back_t(dy, axes):
    def push(ddy, daxes):
        return (K.transpose_back(ddy, axes), None)
    return K.transpose_back(dy, axes), push


@tangent_rule(K.reshape_like)
def reshape_like_t(dy, x):
    def push(ddy, dx):
        return (K.reshape_like(ddy, x), None)
    return K.reshape_like(dy, x), push


@tangent_rule(K.split_like)
def split_like_t(dy, arrays, axis):
    def push(ddy, darrays, daxis):
        return (K.split_like(ddy, arrays, axis), None, None)
    return K.split_like(dy, arrays, axis), push


@tangent_rule(K.scatter_add)
def scatter_add_t(dy, x, index):
    def push(ddy, dx, dindex):
        return (K.scatter_add(ddy, x, index), None, None)
    return K.scatter_add(dy, x, index), push


@tangent_rule(K.spread)
def spread_t(dy, x):
    def push(ddy, dx):
        return (K.spread(ddy, x), None)
    return K.spread(dy, x), push


@tangent_rule(K.pick)
def pick_t(dy, a, k):
    def push(ddy, da, dk):
        return (K.pick(ddy, a, k), None, None)
    return K.pick(dy, a, k), push


@tangent_rule(K.select)
def select_t(cond, dy):
    def push(dcond, ddy):
        return (None, K.select(cond, ddy))
    return K.select(cond, dy), push


@tangent_rule(K.diag_back)
def diag_back_t(dy, v, k):
    def push(ddy, dv, dk):
        return (K.diag_back(ddy, v, k), None, None)
    return K.diag_back(dy, v, k), push


@tangent_rule(K.diff_back)
def diff_back_t(dy, x, n):
    def push(ddy, dx, dn):
        return (K.diff_back(ddy, x, n), None, None)
    return K.diff_back(dy, x, n), push


@tangent_rule(K.unsort)
def unsort_t(dy, x, axis):
    def push(ddy, dx, daxis):
        return (K.unsort(ddy, x, axis), None, None)
    return K.unsort(dy, x, axis), push


@tangent_rule(K.sort_along)
def sort_along_t(x, axis):
    def push(dx, daxis):
        return (sort_tangent(dx, x, axis), None)
    return K.sort_along(x, axis), push


@tangent_rule(H.digamma)
def digamma_t(x):
    """The gradients of ``math.gamma`` and ``math.lgamma`` call ``digamma``."""
    def push(dx):
        return (dx * trigamma(x),)
    return H.digamma(x), push


@tangent_rule(K.prod_others)
def prod_others_t(x, axis):
    def push(dx, daxis):
        return (prod_others_tangent(dx, x, axis), None)
    return K.prod_others(x, axis), push


@tangent_rule(K.extreme_at)
def extreme_at_t(a, b, c, d, k):
    """The value ``max``/``min`` chose: the tangent of the same argument (entry)."""
    def push(da, db, dc, dd, dk):
        return (pick_tangent(da, a, k), K.select(k == 1, db), K.select(k == 2, dc),
                K.select(k == 3, dd), None)
    return K.extreme_at(a, b, c, d, k), push


@tangent_rule(K.centered)
def centered_t(x, axis):
    def push(dx, daxis):
        return (K.centered(dx, axis), None)
    return K.centered(x, axis), push


@tangent_rule(K.cumsum_along)
def cumsum_along_t(x, axis, reverse):
    def push(dx, daxis, dreverse):
        return (K.cumsum_along(dx, axis, reverse), None, None)
    return K.cumsum_along(x, axis, reverse), push


@tangent_rule(K.flip_along)
def flip_along_t(x, axis):
    def push(dx, daxis):
        return (K.flip_along(dx, axis), None)
    return K.flip_along(x, axis), push


# --- bilinear: the gradients of a product -----------------------------------------------


@tangent_rule(K.dot_grad_a)
def dot_grad_a_t(dy, a, b):
    """``a`` only gives the shape: linear in ``dy`` and in ``b``."""
    def push(ddy, da, db):
        return (K.dot_grad_a(ddy, a, b), None, K.dot_grad_a(dy, a, db))
    return K.dot_grad_a(dy, a, b), push


@tangent_rule(K.dot_grad_b)
def dot_grad_b_t(dy, a, b):
    def push(ddy, da, db):
        return (K.dot_grad_b(ddy, a, b), K.dot_grad_b(dy, da, b), None)
    return K.dot_grad_b(dy, a, b), push


@tangent_rule(K.mixed_dot)
def mixed_dot_t(x, y):
    def push(dx, dy):
        return (K.mixed_dot(dx, y), K.mixed_dot(x, dy))
    return K.mixed_dot(x, y), push


@tangent_rule(K.mixed_solve)
def mixed_solve_t(a, b):
    x = K.mixed_solve(a, b)
    def push(da, db):
        return (-K.mixed_solve(a, K.mixed_dot(da, x)), K.mixed_solve(a, db))
    return x, push


@tangent_rule(K.in_dtype_of)
def in_dtype_of_t(g, a):
    """A conversion: the tangent converted too (``a`` gives the dtype only)."""
    def push(dg, da):
        return (K.in_dtype_of(dg, a), None)
    return K.in_dtype_of(g, a), push


# --- reductions (the forward parts of the reduction rules) -------------------------------


@tangent_rule(K.reduce_sum)
def reduce_sum_t(x, axis):
    def push(dx, daxis):
        return (K.reduce_sum(dx, axis), None)
    return K.reduce_sum(x, axis), push


@tangent_rule(K.reduce_mean)
def reduce_mean_t(x, axis):
    def push(dx, daxis):
        return (K.reduce_mean(dx, axis), None)
    return K.reduce_mean(x, axis), push


@tangent_rule(K.reduce_max)
def reduce_max_t(x, axis):
    y = K.reduce_max(x, axis)
    def push(dx, daxis):
        return (K.reduce_sum(dx * K.chooser_weights(x, y, axis), axis), None)
    return y, push


@tangent_rule(K.reduce_min)
def reduce_min_t(x, axis):
    y = K.reduce_min(x, axis)
    def push(dx, daxis):
        return (K.reduce_sum(dx * K.chooser_weights(x, y, axis), axis), None)
    return y, push


@tangent_rule(K.reduce_prod)
def reduce_prod_t(x, axis):
    def push(dx, daxis):
        return (K.reduce_sum(dx * K.prod_others(x, axis), axis), None)
    return K.reduce_prod(x, axis), push


@tangent_rule(K.kept)
def kept_t(y, x, axis, keepdims):
    def push(dy, dx, daxis, dkeepdims):
        return (K.kept(dy, x, axis, keepdims), None, None, None)
    return K.kept(y, x, axis, keepdims), push
