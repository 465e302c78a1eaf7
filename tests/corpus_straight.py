"""Straight-line functions for gradient tests (module-level: jitgrad reads their source)."""

import math

import numpy as np

SCALE = 1.5


def helper_sq(a):
    return a * a


def arith(x, y):
    a = x * y + x / y - y ** 3
    b = -a + (x - y) * 2.0
    return a * b + x ** 2.5


def tuple_unpack(x, y):
    a, b = x * y, x + y
    a, b = b, a
    return a * b - a


def aug(x, y):
    z = x
    z += y
    z *= x
    z -= 1.0
    z /= y
    z **= 2
    return z


def floordiv_mod(x, y):
    return x % y + (x // y) * 0.5 + x * y


def ternary(x, y):
    z = x * 2.0 if x > y else y * 3.0
    return z * x


def boolean_ops(x, y):
    c = x > 0 and y > 0 or x < -10
    return x * y if c else x + y


def globals_closure_builtins(x, y):
    m = max(x, y) + min(x * 2, y)
    return abs(x) * SCALE + float(m) + math.erf(x)


def multiple_returns(x, y):
    if x > y:
        return x * x
    elif x < 0:
        return -x * y
    return x + y * y


def name_collision(x, dx):
    d_x = x * dx
    _t = d_x + dx
    return _t * x


def helper_call(x, y):
    return helper_sq(x + y) * helper_sq(x)


def math_scalars(x, y):
    a = math.sin(x) + math.cos(y) + math.tan(x * 0.3) + math.exp(x * 0.2)
    b = math.log(y) + math.log1p(y) + math.expm1(x) + math.sqrt(y) + math.tanh(x)
    c = math.sinh(x) + math.cosh(y) + math.asin(0.5 * math.tanh(x)) + math.atan(x)
    d = math.atan2(x, y) + math.hypot(x, y) + math.acos(0.3 * math.tanh(y)) + math.pow(y, x)
    return a * b + c * d


def numpy_arrays(x, y):
    a = np.sin(x) * np.cos(y) + np.exp(0.1 * x) * np.log(y) + np.sqrt(y) * np.tanh(x)
    b = np.arctan2(x, y) + np.hypot(x, y) + np.maximum(x, y) + np.minimum(x * 2, y)
    c = np.abs(x) + np.power(y, 1.5) + np.arcsin(0.5 * np.tanh(x)) + np.arctan(x)
    d = np.sinh(x) + np.cosh(y) + np.log1p(y) + np.expm1(x) + np.arccos(0.3 * np.tanh(y))
    s = 0.0
    for i in range(len(a)):
        s += a[i] * b[i] + c[i] * d[i]
    return s


def broadcast_scalar(x, a):
    y = x * a + a
    s = 0.0
    for i in range(len(y)):
        s += y[i] * y[i]
    return s
