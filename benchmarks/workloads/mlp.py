"""Two-layer tanh MLP with mean-squared-error loss (whole-array NumPy)."""

from __future__ import annotations

import numpy as np
from numba import njit

from workloads.base import Workload


def mlp(X, W1, b1, W2, b2, Y):
    """mean((tanh(X @ W1 + b1) @ W2 + b2 - Y) ** 2)."""
    h = np.tanh(X @ W1 + b1)
    d = h @ W2 + b2 - Y
    return np.mean(d * d)


@njit(cache=True)
def mlp_adjoint(X, W1, b1, W2, b2, Y):
    """Standard backprop: keep ``h`` from the forward pass, three GEMMs backwards."""
    h = np.tanh(X @ W1 + b1)
    dout = (h @ W2 + b2 - Y) * (2.0 / (Y.shape[0] * Y.shape[1]))
    gW2 = h.T @ dout
    gb2 = np.sum(dout, axis=0)
    dz = (dout @ W2.T) * (1.0 - h * h)
    gW1 = X.T @ dz
    gb1 = np.sum(dz, axis=0)
    return gW1, gb1, gW2, gb2


def _make_args(rng, batch, n_in, n_hidden, n_out):
    X = rng.standard_normal((batch, n_in))
    W1 = rng.standard_normal((n_in, n_hidden)) / np.sqrt(n_in)
    b1 = 0.1 * rng.standard_normal(n_hidden)
    W2 = rng.standard_normal((n_hidden, n_out)) / np.sqrt(n_hidden)
    b2 = 0.1 * rng.standard_normal(n_out)
    Y = rng.standard_normal((batch, n_out))
    return (X, W1, b1, W2, b2, Y)


def _peer_loss(b, args):
    X, Y = b.const(args[0]), b.const(args[5])

    def loss(W1, b1, W2, b2):
        d = b.tanh(X @ W1 + b1) @ W2 + b2 - Y
        return b.sum(d * d) / (Y.shape[0] * Y.shape[1])

    return loss


WORKLOAD = Workload(
    name="mlp",
    description="2-layer MLP MSE, grad wrt W1, b1, W2, b2",
    primal=mlp,
    adjoint=mlp_adjoint,
    wrt=(1, 2, 3, 4),
    sizes={
        "verify": {"batch": 32, "n_in": 16, "n_hidden": 16, "n_out": 4},
        "quick": {"batch": 256, "n_in": 128, "n_hidden": 128, "n_out": 10},
        "full": {"batch": 512, "n_in": 256, "n_hidden": 256, "n_out": 10},
    },
    make_args=_make_args,
    work=lambda batch, n_in, n_hidden, n_out: batch * n_hidden * (n_in + n_out),
    peer_loss=_peer_loss,
    peer_note="all tools: whole-array ops (BLAS matmuls)",
)
