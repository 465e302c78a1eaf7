"""Rules for elementwise math on scalars and arrays: ``math.*``, NumPy ufuncs, builtins.

One rule serves every spelling of a primitive (``np.sin`` and ``math.sin``).
Pullbacks use NumPy spellings so they work on scalars and arrays alike.
"""

import builtins
import math

import numpy as np

from ..kernels.helpers import digamma, guard, unbroadcast
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


@grad_rule(np.arcsinh, math.asinh)
def arcsinh(x):
    def back(dy):
        return (dy / np.hypot(x, 1.0),)
    return np.arcsinh(x), back


@grad_rule(np.arccosh, math.acosh)
def arccosh(x):
    """Singular at 1 (inf) and undefined below (NaN)."""
    def back(dy):
        return (guard(dy, dy / np.sqrt((x - 1.0) * (x + 1.0))),)
    return np.arccosh(x), back


@grad_rule(np.arctanh, math.atanh)
def arctanh(x):
    """Singular at -1 and 1 (inf)."""
    def back(dy):
        return (guard(dy, dy / ((1.0 - x) * (1.0 + x))),)
    return np.arctanh(x), back


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


@grad_rule(np.power, math.pow, np.float_power)
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


@grad_rule(np.exp2, math.exp2)
def exp2(x):
    y = np.exp2(x)
    def back(dy):
        return (dy * y * 0.6931471805599453,)
    return y, back


@grad_rule(np.log2, math.log2)
def log2(x):
    def back(dy):
        return (guard(dy, dy / (x * 0.6931471805599453)),)
    return np.log2(x), back


@grad_rule(np.log10, math.log10)
def log10(x):
    def back(dy):
        return (guard(dy, dy / (x * 2.302585092994046)),)
    return np.log10(x), back


@grad_rule(np.logaddexp)
def logaddexp(a, b):
    """``log(exp(a) + exp(b))``: the weights ``exp(a - y)`` and ``exp(b - y)`` cannot overflow."""
    y = np.logaddexp(a, b)
    def back(dy):
        return (unbroadcast(guard(dy, dy * np.exp(a - y)), a),
                unbroadcast(guard(dy, dy * np.exp(b - y)), b))
    return y, back


@grad_rule(np.logaddexp2)
def logaddexp2(a, b):
    y = np.logaddexp2(a, b)
    def back(dy):
        return (unbroadcast(guard(dy, dy * np.exp2(a - y)), a),
                unbroadcast(guard(dy, dy * np.exp2(b - y)), b))
    return y, back


@grad_rule(np.square)
def square(x):
    def back(dy):
        return (dy * (x + x),)
    return np.square(x), back


@grad_rule(np.reciprocal)
def reciprocal(x):
    y = np.reciprocal(x)
    def back(dy):
        return (guard(dy, -dy * (y * y)),)
    return y, back


@grad_rule(np.cbrt)
def cbrt(x):
    """Singular at 0 (inf)."""
    y = np.cbrt(x)
    def back(dy):
        return (guard(dy, dy / (3.0 * (y * y))),)
    return y, back


@grad_rule(np.ldexp, math.ldexp)
def ldexp(x, i):
    """``x * 2**i`` for an integer ``i``, which gets no gradient."""
    def back(dy):
        return (unbroadcast(np.ldexp(dy, i), x), None)
    return np.ldexp(x, i), back


@grad_rule(np.degrees, np.rad2deg, math.degrees)
def degrees(x):
    def back(dy):
        return (dy * 57.29577951308232,)
    return np.degrees(x), back


@grad_rule(np.radians, np.deg2rad, math.radians)
def radians(x):
    def back(dy):
        return (dy * 0.017453292519943295,)
    return np.radians(x), back


# --- special functions ------------------------------------------------------------


@grad_rule(math.erfc)
def erfc(x):
    def back(dy):
        return (dy * -1.1283791670955126 * np.exp(-x * x),)
    return math.erfc(x), back


@grad_rule(math.gamma)
def gamma(x):
    """``Gamma' = Gamma * digamma``; NaN at the poles (0, -1, -2, ...)."""
    y = math.gamma(x)
    def back(dy):
        return (guard(dy, dy * y * digamma(x)),)
    return y, back


@grad_rule(math.lgamma)
def lgamma(x):
    """``log|Gamma|' = digamma``, also for negative ``x``; NaN at the poles."""
    def back(dy):
        return (guard(dy, dy * digamma(x)),)
    return math.lgamma(x), back


# --- piecewise --------------------------------------------------------------------


@grad_rule(np.abs, np.absolute, builtins.abs, math.fabs, np.fabs)
def abs_(x):
    def back(dy):
        return (dy * np.sign(x),)
    return np.abs(x), back


@grad_rule(np.maximum, np.fmax)
def maximum(a, b):
    def back(dy):
        return (unbroadcast(dy * (a >= b), a), unbroadcast(dy * (a < b), b))
    return np.maximum(a, b), back


@grad_rule(np.minimum, np.fmin)
def minimum(a, b):
    def back(dy):
        return (unbroadcast(dy * (a <= b), a), unbroadcast(dy * (a > b), b))
    return np.minimum(a, b), back


@grad_rule(np.copysign, math.copysign)
def copysign(a, b):
    """``|a|`` with the sign of ``b``; no gradient reaches ``b`` (piecewise constant in it)."""
    def back(dy):
        return (unbroadcast(dy * np.copysign(1.0, a) * np.copysign(1.0, b), a), None)
    return np.copysign(a, b), back


@grad_rule(np.fmod)
def fmod(a, b):
    """``a - b * trunc(a / b)`` (C's remainder, with the sign of ``a``)."""
    def back(dy):
        return (unbroadcast(dy, a), unbroadcast(guard(dy, -dy * np.trunc(a / b)), b))
    return np.fmod(a, b), back


@grad_rule(builtins.float, np.float64, np.float32)
def float_(x):
    def back(dy):
        return (dy,)
    return float(x), back


# --- no gradient ------------------------------------------------------------------

non_differentiable(
    builtins.len, builtins.range, builtins.int, builtins.bool, builtins.round,
    math.floor, math.ceil, math.trunc, math.isnan, math.isinf, math.isfinite, math.gcd,
    np.floor, np.ceil, np.trunc, np.rint, np.round, np.around, np.sign, np.signbit,
    np.spacing, np.isnan, np.isinf, np.isfinite, np.isnat, np.isneginf, np.isposinf,
    np.isclose, np.iscomplex, np.isreal, np.iscomplexobj, np.isrealobj, np.isscalar,
    np.gcd, np.lcm, np.bitwise_and, np.bitwise_or, np.bitwise_xor, np.invert,
    np.left_shift, np.right_shift,
    np.logical_and, np.logical_or, np.logical_not, np.logical_xor,
    np.greater, np.less, np.equal, np.not_equal, np.greater_equal, np.less_equal,
    np.int64, np.int32, np.int16, np.int8, np.uint64, np.uint32, np.uint16, np.uint8,
    np.intc, np.uintc, np.intp, np.uintp, np.byte, np.ubyte, np.short, np.ushort, np.uint,
    np.ulong, np.bool_, np.dtype, np.finfo, np.iinfo,
    np.zeros, np.ones, np.empty, np.zeros_like, np.ones_like, np.empty_like,
    np.arange, np.eye, np.identity, np.shape, np.size, np.ndim,
    np.argmax, np.argmin, np.argsort, pure=True,
)
