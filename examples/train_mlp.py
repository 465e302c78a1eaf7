"""Train a small MLP on synthetic data with the eager runtime: Params, gradient, update.

    python examples/train_mlp.py

Fits y = sin(3 x0) + x1**2 with one tanh hidden layer and Adam; prints the loss
every 25 steps. Runs in a few seconds.
"""

import numpy as np

import jitgrad as jg


def make_data(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Inputs in [-1, 1]^2 and a smooth nonlinear target."""
    X = rng.uniform(-1.0, 1.0, size=(n, 2))
    return X, np.sin(3.0 * X[:, 0]) + X[:, 1] ** 2


def init_mlp(sizes: list[int], rng: np.random.Generator) -> list[jg.Tracked]:
    """Weights and biases of each layer as tracked leaves."""
    layers = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:], strict=False):
        layers += [jg.param(rng.normal(0.0, 1.0 / np.sqrt(n_in), size=(n_in, n_out))),
                   jg.param(np.zeros(n_out))]
    return layers


def mlp(layers: list[jg.Tracked], X: np.ndarray) -> jg.Tracked:
    """tanh hidden layers, linear output; ordinary NumPy on tracked values."""
    h = X
    for i in range(0, len(layers) - 2, 2):
        h = np.tanh(h @ layers[i] + layers[i + 1])
    return (h @ layers[-2] + layers[-1])[:, 0]


def main(steps: int = 300, lr: float = 0.02, seed: int = 0) -> list[float]:
    rng = np.random.default_rng(seed)
    X, y = make_data(256, rng)
    layers = init_mlp([2, 32, 1], rng)
    ps = jg.Params(layers)
    loss = lambda: ((mlp(layers, X) - y) ** 2).mean()

    # Adam, in a few lines: first and second moment per parameter
    m = {id(p): np.zeros_like(p.data) for p in ps}
    v = {id(p): np.zeros_like(p.data) for p in ps}
    b1, b2, eps = 0.9, 0.999, 1e-8
    history = []
    for t in range(1, steps + 1):
        gs = jg.gradient(loss, ps)
        for p in ps:
            g = gs[p]
            m[id(p)] = b1 * m[id(p)] + (1 - b1) * g
            v[id(p)] = b2 * v[id(p)] + (1 - b2) * g * g
            mhat, vhat = m[id(p)] / (1 - b1 ** t), v[id(p)] / (1 - b2 ** t)
            jg.update(p, -lr * mhat / (np.sqrt(vhat) + eps))
        if t == 1 or t % 25 == 0:
            value = jg.data(loss())
            history.append(float(value))
            print(f"step {t:4d}  loss {value:.5f}")
    return history


if __name__ == "__main__":
    main()
