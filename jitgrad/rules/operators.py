"""Rules for Python's arithmetic operators (``+ - * / ** // %`` and unary minus).

Binary operators broadcast, so each gradient is summed back to its operand's
shape with ``unbroadcast`` (the transpiler drops it when both sides are scalars).
The NumPy ufuncs that spell the same operation (``np.add``, ``np.multiply``...)
share the operator's rule.
"""

import builtins
import operator

import numpy as np

from ..kernels.helpers import guard, pow_log, unbroadcast
from .registry import grad_rule, non_differentiable

# --- arithmetic ---------------------------------------------------------------


@grad_rule(operator.add, np.add)
def add(a, b):
    def back(dy):
        return (unbroadcast(dy, a), unbroadcast(dy, b))
    return a + b, back


@grad_rule(operator.sub, np.subtract)
def sub(a, b):
    def back(dy):
        return (unbroadcast(dy, a), unbroadcast(-dy, b))
    return a - b, back


@grad_rule(operator.mul, np.multiply)
def mul(a, b):
    def back(dy):
        return (unbroadcast(dy * b, a), unbroadcast(dy * a, b))
    return a * b, back


@grad_rule(operator.truediv, np.divide, np.true_divide)
def truediv(a, b):
    def back(dy):
        return (unbroadcast(guard(dy, dy / b), a), unbroadcast(guard(dy, -dy * a / (b * b)), b))
    return a / b, back


@grad_rule(operator.pow, builtins.pow)
def pow_(a, b):
    y = a ** b
    def back(dy):
        return (unbroadcast(guard(dy, dy * b * a ** (b - 1)), a),
                unbroadcast(dy * y * pow_log(a), b))
    return y, back


@grad_rule(operator.floordiv, np.floor_divide)
def floordiv(a, b):
    def back(dy):
        return (None, None)
    return a // b, back


@grad_rule(operator.mod, np.remainder)
def mod(a, b):
    def back(dy):
        return (unbroadcast(dy, a), unbroadcast(-dy * np.floor(a / b), b))
    return a % b, back


# --- unary ----------------------------------------------------------------------


@grad_rule(operator.neg, np.negative)
def neg(a):
    def back(dy):
        return (-dy,)
    return -a, back


@grad_rule(operator.pos, np.positive)
def pos(a):
    def back(dy):
        return (dy,)
    return +a, back


@grad_rule(np.real)
def real(a):
    # jitgrad differentiates real values only (complex ones are refused): x.real is x
    def back(dy):
        return (dy,)
    return np.real(a), back


# --- comparisons and logic carry no gradient ------------------------------------

non_differentiable(
    operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne,
    operator.not_, operator.and_, operator.or_, operator.xor, operator.invert,
    np.imag,  # of a real value: zero
    pure=True,
)
