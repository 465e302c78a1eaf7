"""Result ndims for rule metadata: ``@grad_rule(f, ndim_of=...)``.

Kind inference (``KindInference.call``) calls ``ndim_of(nd, **options)`` where ``nd``
is the ndim of the call's first argument (a list or tuple literal counts as an array:
one more dimension than its elements) and ``options`` holds the call's other
arguments by the rule's parameter names: the value where it is a literal
(``axis=1``, ``keepdims=True``, ``(2, 3)``), ``RUNTIME`` where it is only known at run
time (``x.shape`` is a tuple of ``RUNTIME`` of the right length).  Parameters the
call leaves out are absent, so the function's defaults apply.  It returns the
result's ndim, or None where that cannot be known from these; ``nd`` itself may be
None (unknown), and a TypeError raised on it also means "unknown".

The class of the result (float, int...) is that of the arguments, or float where
the rule says ``float_result=True``.
"""

from __future__ import annotations

RUNTIME = ...  # an option whose value is known only at run time


def same(nd, **_):
    """Elementwise or shape-preserving: the ndim of the first argument."""
    return nd


def scalar(nd, **_):
    """Always a scalar."""
    return 0


def reduced(nd, axis=None, keepdims=False, **_):
    """A reduction over ``axis`` (all axes when None), keeping it when ``keepdims``."""
    if keepdims is RUNTIME:
        return None
    if keepdims:
        return nd
    if axis is None:
        return 0
    if isinstance(axis, tuple):
        return nd - len(axis)
    return max(nd - 1, 0)


def first_axis(nd, **_):
    """Python's ``sum(x)``: ``x``'s rows added up (a scalar for a 1-d ``x``)."""
    return max(nd - 1, 0)


def extreme(nd, b=None, **_):
    """Python's ``max``/``min``: of several scalars a scalar; of one sequence, an entry."""
    return max(nd - 1, 0) if b is None else nd


def diag(nd, **_):
    """``np.diag``: a vector becomes a matrix and a matrix gives a vector."""
    return {1: 2, 2: 1}.get(nd)


def at_least(k: int):
    """``np.atleast_kd``: at least ``k`` dimensions."""

    def ndim(nd, **_):
        return max(nd, k)

    ndim.__name__ = f"at_least_{k}d"
    return ndim


def sorted_(nd, axis=-1, **_):
    """``np.sort``: the same shape, or flattened when ``axis`` is None."""
    return 1 if axis is None else nd


def shaped(nd, shape=None, **_):
    """A result whose shape is the ``shape`` argument (``np.broadcast_to``)."""
    if isinstance(shape, tuple):
        return len(shape)
    if isinstance(shape, int) and not isinstance(shape, bool):
        return 1
    return None


def added(nd, **_):
    """One more dimension than the first argument (``np.stack``, ``np.expand_dims``)."""
    return nd + 1
