"""Functions using jg.hook / jg.checkpoint / jg.nobacksies inside differentiated code."""

import numpy as np

import jitgrad as jg


def double(g):
    return 2.0 * g


def clip_grad(g):
    return np.minimum(np.maximum(g, -0.1), 0.1)


def with_hook(x, y):
    a = jg.hook(double, x)
    return a * y + x * y


def with_array_hook(x):
    h = jg.hook(clip_grad, x * 3.0)
    return np.sum(h * h)


def with_nobacksies(x, y):
    z = jg.nobacksies("no second derivatives here", x * y)
    return z + x


def with_nobacksies_inactive(x, y):
    z = jg.nobacksies("fine: y is not differentiated", y * 2.0)
    return z * x


def body(s, n):
    for i in range(n):
        s = np.sin(s) * 1.1 + 0.1
    return s


def plain_loop(x, n, m):
    s = x
    for k in range(m):
        s = body(s, n)
    return s


def checkpointed_loop(x, n, m):
    s = x
    for k in range(m):
        s = jg.checkpoint(body, s, n)
    return s


def checkpoint_array_body(u, c):
    out = np.zeros_like(u)
    for i in range(len(u)):
        out[i] = c * u[i] * u[i]
    return out


def checkpoint_arrays(x, c):
    y = jg.checkpoint(checkpoint_array_body, x, c)
    z = jg.checkpoint(checkpoint_array_body, y, c)
    return np.sum(z * x)
