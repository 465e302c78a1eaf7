"""Whole-array NumPy functions differentiated through the transpiler."""

import numpy as np


def mlp(W1, b1, W2, b2, X, Y):
    h = np.tanh(X @ W1 + b1)
    out = h @ W2 + b2
    return np.mean((out - Y) ** 2)


def softmax_ce(logits, labels):
    m = logits.max(axis=1)
    z = logits - m[:, None]
    lse = np.log(np.sum(np.exp(z), axis=1))
    s = 0.0
    for i in range(logits.shape[0]):
        s += lse[i] - z[i, labels[i]]
    return s / logits.shape[0]


def broadcasting(A, b, c):
    return np.sum(A * b + c * A - b / (1.0 + A * A))


def broadcast_column(A, col):
    return np.sum(np.sin(A + col[:, None]) * col[:, None])


def reductions(A):
    return (np.sum(A, axis=0) @ np.mean(A, axis=1)[:3] + A.sum() * A.mean()
            + np.max(A) + np.min(A, axis=1).sum() + np.prod(A[0]) + A.max()
            + np.var(A) + np.std(A, axis=0).sum())


def norms(x, A):
    return np.linalg.norm(x) * 2.0 + np.linalg.norm(A)


def linalg(A, B, x):
    y = np.dot(A, x) + A @ x
    C = np.matmul(A, B) + A.dot(B)
    z = np.outer(x, y)
    return np.sum(C * C) + np.dot(x, y) + np.trace(z) + np.sum(np.dot(x, A))


def solve_inv_det(A, b):
    x = np.linalg.solve(A, b)
    Ai = np.linalg.inv(A)
    return np.sum(x * x) + np.sum(Ai) + np.linalg.det(A)


def shapes(A, x):
    B = A.reshape(6, 2)
    C = np.transpose(A) @ A
    v = np.ravel(A) * 2.0
    w = np.concatenate((x, v))
    S = np.stack((x, x * 2.0))
    H = np.hstack((x, x))
    V = np.vstack((x, x))
    e = np.expand_dims(x, 0)
    return (np.sum(B[:, 0] * B[:, 1]) + np.sum(C) + np.sum(w * w) + np.sum(S * S)
            + np.sum(H) * np.sum(V) + np.sum(e * e) + np.sum(A.T[0]))


def slicing(u, c):
    v = u.copy()
    v[1:-1] = u[1:-1] + c * (u[2:] - 2.0 * u[1:-1] + u[:-2])
    v[::2] += u[::2] * c
    return np.sum(v * v) + np.sum(u[None, :] * u[:, None])


def fancy_read(x, idx):
    return np.sum(x[idx] * x[idx])


def selection(x, y):
    a = np.where(x > 0, np.sqrt(np.abs(x) + 1e-3) * y, np.log(np.abs(x) + 1.0))
    b = np.clip(x * y, -0.5, 0.5)
    c = np.maximum(x, y) + np.minimum(x, y * 2.0)
    return np.sum(a + b + c) + np.sum(np.cumsum(x * y) ** 2)


def where_no_nan(x):
    return np.sum(np.where(x > 0, np.sqrt(np.abs(x)), 0.0))


def elementwise_arrays(x):
    return np.sum(np.exp(x) + np.log(x + 2.0) + np.sin(x) * np.cos(x) + np.sqrt(x + 2.0)
                  + np.tanh(x) + x ** 3 + np.abs(x) + np.arctan(x) + np.log1p(x + 1.0))


def sum_of_product(x, y):
    return np.sum(x * y)


def float32_sum(x):
    return np.sum(x * x)


def mixed_loop_and_arrays(A, x):
    y = A @ x
    s = 0.0
    for i in range(len(y)):
        if y[i] > 0:
            s += y[i] * y[i]
        else:
            s -= y[i]
    return s + np.sum(np.tanh(y))


def loop_whole_array_update(u0, c, n):
    u = u0.copy()
    for k in range(n):
        lap = u[2:] - 2.0 * u[1:-1] + u[:-2]
        u = u.copy()
        u[1:-1] = u[1:-1] + c * lap
    return np.sum(u * u)
