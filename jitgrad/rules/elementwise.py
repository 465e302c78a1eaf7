"""Rules for elementwise math on scalars and arrays: ``math.*``, NumPy ufuncs, builtins.

One rule serves every spelling of a primitive (``np.sin`` and ``math.sin``).
Pullbacks use NumPy spellings so they work on scalars and arrays alike.
"""

import builtins
import math

import numpy as np

from ..runtime.helpers import guard, unbroadcast
from .registry import grad_rule, non_differentiable

# --- trigonometric ----------------------------------------------------------------


@grad_rule(np.sin, math.sin)
def sin(x):
    def back(dy):
        return (dy * np.cos(x),)
    return np.sin(x), back


@grad_rule(np.cos, math.cos)
def cos(x):
    def back(dy):
        return (-dy * np.sin(x),)
    return np.cos(x), back


@grad_rule(np.tan, math.tan)
def tan(x):
    y = np.tan(x)
    def back(dy):
        return (dy * (1.0 + y * y),)
    return y, back


@grad_rule(np.arcsin, math.asin)
def arcsin(x):
    def back(dy):
        return (guard(dy, dy / np.sqrt(1.0 - x * x)),)
    return np.arcsin(x), back


@grad_rule(np.arccos, math.acos)
def arccos(x):
    def back(dy):
        return (guard(dy, -dy / np.sqrt(1.0 - x * x)),)
    return np.arccos(x), back


@grad_rule(np.arctan, math.atan)
def arctan(x):
    def back(dy):
        return (dy / (1.0 + x * x),)
    return np.arctan(x), back


@grad_rule(np.arctan2, math.atan2)
def arctan2(a, b):
    def back(dy):
        r2 = a * a + b * b
        return (unbroadcast(guard(dy, dy * b / r2), a), unbroadcast(guard(dy, -dy * a / r2), b))
    return np.arctan2(a, b), back


@grad_rule(np.hypot, math.hypot)
def hypot(a, b):
    y = np.hypot(a, b)
    def back(dy):
        return (unbroadcast(guard(dy, dy * a / y), a), unbroadcast(guard(dy, dy * b / y), b))
    return y, back


# --- hyperbolic -------------------------------------------------------------------


@grad_rule(np.tanh, math.tanh)
def tanh(x):
    y = np.tanh(x)
    def back(dy):
        return (dy * (1.0 - y * y),)
    return y, back


@grad_rule(np.sinh, math.sinh)
def sinh(x):
    def back(dy):
        return (dy * np.cosh(x),)
    return np.sinh(x), back


@grad_rule(np.cosh, math.cosh)
def cosh(x):
    def back(dy):
        return (dy * np.sinh(x),)
    return np.cosh(x), back


# --- exponential and logarithm ----------------------------------------------------


@grad_rule(np.exp, math.exp)
def exp(x):
    y = np.exp(x)
    def back(dy):
        return (dy * y,)
    return y, back


@grad_rule(np.expm1, math.expm1)
def expm1(x):
    y = np.expm1(x)
    def back(dy):
        return (dy * (y + 1.0),)
    return y, back


@grad_rule(np.log, math.log)
def log(x):
    def back(dy):
        return (guard(dy, dy / x),)
    return np.log(x), back


@grad_rule(np.log1p, math.log1p)
def log1p(x):
    def back(dy):
        return (guard(dy, dy / (1.0 + x)),)
    return np.log1p(x), back


@grad_rule(np.sqrt, math.sqrt)
def sqrt(x):
    y = np.sqrt(x)
    def back(dy):
        return (guard(dy, dy * 0.5 / y),)
    return y, back


@grad_rule(np.power, math.pow)
def power(a, b):
    y = np.power(a, b)
    def back(dy):
        return (unbroadcast(guard(dy, dy * b * np.power(a, b - 1)), a),
                unbroadcast(guard(dy, dy * y * np.log(a)), b))
    return y, back


@grad_rule(math.erf)
def erf(x):
    def back(dy):
        return (dy * 1.1283791670955126 * np.exp(-x * x),)
    return math.erf(x), back


# --- piecewise --------------------------------------------------------------------


@grad_rule(np.abs, np.absolute, builtins.abs, math.fabs)
def abs_(x):
    def back(dy):
        return (dy * np.sign(x),)
    return np.abs(x), back


@grad_rule(np.maximum, builtins.max, np.fmax)
def maximum(a, b):
    def back(dy):
        return (unbroadcast(dy * (a >= b), a), unbroadcast(dy * (a < b), b))
    return np.maximum(a, b), back


@grad_rule(np.minimum, builtins.min, np.fmin)
def minimum(a, b):
    def back(dy):
        return (unbroadcast(dy * (a <= b), a), unbroadcast(dy * (a > b), b))
    return np.minimum(a, b), back


@grad_rule(builtins.float, np.float64, np.float32)
def float_(x):
    def back(dy):
        return (dy,)
    return float(x), back


# --- no gradient ------------------------------------------------------------------

non_differentiable(
    builtins.len, builtins.range, builtins.int, builtins.bool, builtins.round,
    math.floor, math.ceil, math.trunc, math.isnan, math.isinf, math.isfinite,
    np.floor, np.ceil, np.trunc, np.rint, np.round, np.sign, np.isnan, np.isinf,
    np.isfinite, np.int64, np.int32,
    np.zeros, np.ones, np.empty, np.zeros_like, np.ones_like, np.empty_like, np.full,
    np.full_like, np.arange, np.linspace, np.eye, np.identity, np.shape, np.size, np.ndim,
    np.argmax, np.argmin, np.argsort, np.logical_and, np.logical_or, np.logical_not,
    np.greater, np.less, np.equal, np.not_equal, np.greater_equal, np.less_equal,
)
