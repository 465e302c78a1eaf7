"""GradBench's lstm (evals/lstm, ADBench's diagonal LSTM), ported from
cpp/gradbench/evals/lstm.hpp to Numba style: row views of the state for each layer."""

from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=False)
def sigmoid(x):
    """1 / (1 + exp(-x))."""
    return 1.0 / (1.0 + math.exp(-x))


def lstm(main_params, extra_params, state, sequence):
    """Mean negative log-likelihood of each next character (evals/lstm's objective)."""
    layers = main_params.shape[0] // 2
    c, b = sequence.shape
    st = state.copy()
    ypred = np.empty(b)
    inp = np.empty(b)
    total = 0.0
    count = 0
    for t in range(c - 1):
        for i in range(b):
            inp[i] = sequence[t, i] * extra_params[0, i]
        for lay in range(layers):
            w = main_params[2 * lay]
            bias = main_params[2 * lay + 1]
            for i in range(b):
                hid = st[2 * lay, i]
                forget = sigmoid(inp[i] * w[i] + bias[i])
                ingate = sigmoid(hid * w[b + i] + bias[b + i])
                outgate = sigmoid(inp[i] * w[2 * b + i] + bias[2 * b + i])
                change = math.tanh(hid * w[3 * b + i] + bias[3 * b + i])
                cell = st[2 * lay + 1, i] * forget + ingate * change
                st[2 * lay + 1, i] = cell
                st[2 * lay, i] = outgate * math.tanh(cell)
            for i in range(b):
                inp[i] = st[2 * lay, i]
        s = 0.0
        for i in range(b):
            ypred[i] = inp[i] * extra_params[1, i] + extra_params[2, i]
            s += math.exp(ypred[i])
        lse = math.log(s + 2.0)
        for i in range(b):
            total += sequence[t + 1, i] * (ypred[i] - lse)
        count += b
    return -total / count
