"""A custom gradient rule: a numerically stable softplus, used inside a loop.

    python examples/custom_rule.py

``softplus(x) = log(1 + exp(x))`` written naively overflows for large ``x``, and
differentiating the naive form gives ``exp(x) / (1 + exp(x)) = inf / inf = nan``.
We write the primitive stably, register its derivative (the logistic sigmoid,
in a form that cannot overflow) with ``@jg.grad_rule``, and use it in a logistic
regression loss written as plain loops.  The transpiler inlines the rule's
pullback body into the adjoint sweep, so the compiled gradient never calls back
into Python.  Runs in a few seconds.
"""

import math

import numba
import numpy as np

import jitgrad as jg


@numba.njit
def softplus(x):
    """log(1 + exp(x)) without overflow."""
    if x > 0.0:
        return x + math.log1p(math.exp(-x))
    return math.log1p(math.exp(x))


@jg.grad_rule(softplus)
def _softplus_rule(x):
    y = softplus(x)

    def back(dy):
        # d softplus / dx = sigmoid(x) = (1 + tanh(x / 2)) / 2: finite for every x
        return (dy * (0.5 + 0.5 * math.tanh(0.5 * x)),)

    return y, back


def naive_softplus(x):
    """The textbook formula: jitgrad differentiates it through exp and log."""
    return math.log(1.0 + math.exp(x))


@jg.differentiate(wrt=0)
def logistic_loss(w, X, labels):
    """Mean logistic loss: softplus(-label * <w, x>) over the rows of X."""
    total = 0.0
    for i in range(X.shape[0]):
        margin = 0.0
        for k in range(X.shape[1]):
            margin += w[k] * X[i, k]
        total += softplus(-labels[i] * margin)
    return total / X.shape[0]


@jg.differentiate(wrt=0)
def naive_loss(w, X, labels):
    """The same loss with the naive softplus."""
    total = 0.0
    for i in range(X.shape[0]):
        margin = 0.0
        for k in range(X.shape[1]):
            margin += w[k] * X[i, k]
        total += naive_softplus(-labels[i] * margin)
    return total / X.shape[0]


def main(steps: int = 200, lr: float = 0.5, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    w_true = np.array([2.0, -1.0, 0.5])
    X = rng.normal(size=(200, 3))
    labels = np.where(X @ w_true + 0.3 * rng.normal(size=200) > 0.0, 1.0, -1.0)

    w = np.zeros(3)
    g = logistic_loss.grad(w, X, labels)
    fd = jg.ngradient(lambda v: logistic_loss(v, X, labels), w)[0]
    print(f"gradient vs finite differences: max abs err {np.abs(g - fd).max():.2e}")

    for it in range(steps + 1):
        loss, g = logistic_loss.value_and_grad(w, X, labels)
        if it % 40 == 0:
            print(f"step {it:4d}  loss {loss:.5f}  w {np.array2string(w, precision=3)}")
        w = w - lr * g

    # one badly misclassified point (margin -800): the naive formula overflows
    w1, x1, y1 = np.array([800.0]), np.array([[1.0]]), np.array([-1.0])
    for name, f in (("rule ", logistic_loss), ("naive", naive_loss)):
        value, grad = f.value_and_grad(w1, x1, y1)
        print(f"{name}: loss {value}  gradient {grad}")
    return w


if __name__ == "__main__":
    main()
