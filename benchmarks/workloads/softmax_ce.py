"""Mean softmax cross-entropy with max shift over a logits matrix and integer labels."""

from __future__ import annotations

import numpy as np
from numba import njit

from workloads.base import Workload


def softmax_ce(z, labels):
    """Row-wise log-sum-exp with max shift, loop form."""
    n = z.shape[0]
    c = z.shape[1]
    total = 0.0
    for i in range(n):
        m = z[i, 0]
        for j in range(1, c):
            if z[i, j] > m:
                m = z[i, j]
        s = 0.0
        for j in range(c):
            s += np.exp(z[i, j] - m)
        total += np.log(s) + m - z[i, labels[i]]
    return total / n


@njit(cache=True)
def softmax_ce_adjoint(z, labels):
    """Per row: exponentials written straight into the gradient, then one rescale."""
    n, c = z.shape
    g = np.empty_like(z)
    inv_n = 1.0 / n
    for i in range(n):
        m = z[i, 0]
        for j in range(1, c):
            if z[i, j] > m:
                m = z[i, j]
        s = 0.0
        for j in range(c):
            e = np.exp(z[i, j] - m)
            g[i, j] = e
            s += e
        scale = inv_n / s
        for j in range(c):
            g[i, j] *= scale
        g[i, labels[i]] -= inv_n
    return (g,)


def _make_args(rng, n, classes):
    return (3.0 * rng.standard_normal((n, classes)), rng.integers(0, classes, n))


def _peer_loss(b, args):
    labels = args[1]
    rows, cols = b.const(np.arange(labels.shape[0])), b.const(labels)

    def loss(z):
        m = b.amax(z, axis=1)
        lse = b.log(b.sum(b.exp(z - m), axis=1)) + m[:, 0]
        return b.sum(lse - z[rows, cols]) / labels.shape[0]

    return loss


WORKLOAD = Workload(
    name="softmax_ce",
    description="softmax cross-entropy, grad wrt logits",
    primal=softmax_ce,
    adjoint=softmax_ce_adjoint,
    wrt=(0,),
    sizes={
        "verify": {"n": 40, "classes": 30},
        "quick": {"n": 500, "classes": 500},
        "full": {"n": 1_000, "classes": 1_000},
    },
    make_args=_make_args,
    work=lambda n, classes: n * classes,
    peer_loss=_peer_loss,
    peer_note="peers: whole-array max / exp / log-sum with gather of the label logits",
)
