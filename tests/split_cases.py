"""Programs calling an ``@njit`` helper at many sites (``test_helper_split.py``)."""

import numpy as np
from numba import njit

import jitgrad as jg


@njit
def sq(a, w):
    return np.sin(a) * w + a * a


@njit
def cell(h, x, W, U):
    return np.tanh(W @ x + U @ h)


@njit
def fill(out, v):
    out[0] = v * v
    return v * out[0]


@njit
def bump(a, k):
    return a * k + np.cos(a)


def scalar4(x, w):
    """A scalar helper called at 4 sites (one with a literal argument)."""
    y = sq(x, w)
    y = sq(y, w)
    y = sq(y, 2.0)
    y = sq(y, w)
    return y * 3.0


def scalar3(x, w):
    """Called at 3 sites: below the threshold, inlined as before."""
    y = sq(x, w)
    y = sq(y, w)
    y = sq(y, 2.0)
    return y * 3.0


def unrolled(h0, xs, W, U):
    """An array helper called at 4 sites; the caller reads ``W`` and ``h`` after."""
    h = cell(h0, xs[0], W, U)
    h = cell(h, xs[1], W, U)
    h = cell(h, xs[2], W, U)
    h = cell(h, xs[3], W, U)
    return np.sum(h * h) + np.sum(W * W) + np.sum(h0 * h)


def looped(h0, xs, W, U):
    """The same 4 calls per trip of a loop: ``h`` is rebound at each."""
    h = h0
    for t in range(xs.shape[0] // 4):
        h = cell(h, xs[4 * t], W, U)
        h = cell(h, xs[4 * t + 1], W, U)
        h = cell(h, xs[4 * t + 2], W, U)
        h = cell(h, xs[4 * t + 3], W, U)
    return np.sum(h * h) + np.sum(W * W)


def looped_unrolled(h0, xs, W, U):
    """``looped`` for 8 inputs, unrolled (8 sites)."""
    h = cell(h0, xs[0], W, U)
    h = cell(h, xs[1], W, U)
    h = cell(h, xs[2], W, U)
    h = cell(h, xs[3], W, U)
    h = cell(h, xs[4], W, U)
    h = cell(h, xs[5], W, U)
    h = cell(h, xs[6], W, U)
    h = cell(h, xs[7], W, U)
    return np.sum(h * h) + np.sum(W * W)


def with_ints(x, v):
    """Integer arguments (no gradient) and an array argument read again after the calls."""
    s = 0.0
    for k in range(3):
        s = s + np.sum(bump(x, k)) + np.sum(bump(x * v, k + 1))
        s = s + np.sum(bump(x, 2)) * np.sum(bump(v, k))
    return s + np.sum(x * v)


def impure(x, v):
    """A helper writing its array argument, called 4 times: inlined as before."""
    buf = np.zeros(1)
    s = fill(buf, v)
    s = s + fill(buf, x)
    s = s * fill(buf, v * x)
    s = s + fill(buf, x + v)
    return s * buf[0]


def in_expressions(x, w):
    """Calls inside larger expressions and a condition."""
    y = 2.0 * sq(x, w) + sq(w, x) * sq(x + w, 0.5)
    if sq(y, w) > 1.0:
        y = y * 0.5
    return y + sq(y, y)


def checkpointed(h0, xs, W, U):
    """The 4 calls in a ``jg.checkpointed`` loop (the reverse sweep reruns each trip)."""
    h = h0
    for t in jg.checkpointed(range(xs.shape[0] // 4), snapshots=1):
        h = cell(h, xs[4 * t], W, U)
        h = cell(h, xs[4 * t + 1], W, U)
        h = cell(h, xs[4 * t + 2], W, U)
        h = cell(h, xs[4 * t + 3], W, U)
    return np.sum(h * h)


@njit
def feats(x, W, U):
    return np.tanh(W @ x + U[:, :2] @ x)


@njit
def mix(h, A, B):
    return np.sin(A @ h) * np.cos(B @ h)


@njit
def scaled(h, x, W, a):
    return np.tanh(a * (W @ x) + h)


def all_accumulated(h0, xs, W, U):
    """Only the weights carry gradients (``xs`` rows are constants here): the helper's
    gradient adds into ``dW`` and ``dU`` and returns nothing."""
    s = np.sum(feats(xs[0] * 1.0, W, U) * h0)
    s = s + np.sum(feats(xs[1] * 1.0, W, U))
    s = s * np.sum(feats(xs[2] * 1.0, W, U))
    return s + np.sum(feats(xs[3] * 1.0, W, U) ** 2)


def shared_twice(h0, xs, W, U):
    """The same array passed as two arguments: both gradients add into its adjoint."""
    h = mix(h0, U, U)
    h = mix(h, U, U) + mix(h, U, U.T)
    h = mix(h, U, U)
    return np.sum(h * h) + np.sum(W * xs[0])


def rebound_weights(h0, xs, W, U):
    """The weights rebound between calls (their adjoint is zeroed at each binding)."""
    h = cell(h0, xs[0], W, U)
    W = W * 0.9 + 0.1
    h = cell(h, xs[1], W, U)
    U = U * W[:, :1]
    h = cell(h, xs[2], W, U)
    W = W - 0.05 * h[:, None]
    h = cell(h, xs[3], W, U)
    return np.sum(h * h) + np.sum(W * U[:, :2])


def scalar_weight(h0, xs, W, U):
    """A scalar argument and a column slice of an argument: their gradients are returned
    (nothing to add into), the whole ``W``'s added into ``dW``."""
    a = np.sum(U) * 0.1
    h = scaled(h0, xs[0], W, a)
    h = scaled(h, xs[1], W, a * a)
    h = scaled(h, xs[2], U[:, :2], a)
    h = scaled(h, xs[3], W, 0.5)
    return np.sum(h * h)
