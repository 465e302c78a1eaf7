"""Rules whose pullback (or push) reads a local of the rule's own code (a forward value,
``y`` of ``tanh``, or a pullback temporary, ``r2`` of ``arctan2``) in a loop-carried
position (``b = rule(..., b)``), then in the places values are stored or recomputed: a
``while`` loop, a branch in a loop, nested loops, a checkpointed loop, a ``jg.checkpoint``
region (``tests/test_rows_and_rule_locals.py``)."""

import builtins
import math

import numpy as np

import jitgrad as jg

N = 3


def arctan2_(c, b):
    for _ in range(N):
        b = math.atan2(c, b)
    return b


def arctan2_np(c, b):
    for _ in range(N):
        b = np.arctan2(b, c) + c
    return b


def tan_(c, b):
    for _ in range(N):
        b = math.tan(c * b)
    return b


def hypot_(c, b):
    for _ in range(N):
        b = math.hypot(c, b) * 0.5
    return b


def tanh_(c, b):
    for _ in range(N):
        b = np.tanh(b + c)
    return b


def exp_(c, b):
    for _ in range(N):
        b = math.exp(-c * b)
    return b


def expm1_(c, b):
    for _ in range(N):
        b = math.expm1(c * b)
    return b


def sqrt_(c, b):
    for _ in range(N):
        b = math.sqrt(b + c)
    return b


def power_(c, b):
    for _ in range(N):
        b = np.power(b, c) + 0.5
    return b


def pow_op(c, b):
    for _ in range(N):
        b = b ** c + 0.5
    return b


def exp2_(c, b):
    for _ in range(N):
        b = math.exp2(-c * b)
    return b


def logaddexp_(c, b):
    for _ in range(N):
        b = np.logaddexp(c, b) - 1.0
    return b


def logaddexp2_(c, b):
    for _ in range(N):
        b = np.logaddexp2(c, b) - 1.0
    return b


def reciprocal_(c, b):
    for _ in range(N):
        b = np.reciprocal(b + c)
    return b


def cbrt_(c, b):
    for _ in range(N):
        b = np.cbrt(b + c)
    return b


def gamma_(c, b):
    for _ in range(N):
        b = math.gamma(b + c)
    return b


def max_pair(c, b):
    for _ in range(N):
        b = builtins.max(c, 1.5 * b - 0.2) * 0.9
    return b


def min_pair(c, b):
    for _ in range(N):
        b = builtins.min(c, 0.5 * b + 0.3) * 1.1
    return b


def mean_(x, s):
    for _ in range(N):
        s = np.mean(x * s) + 0.1
    return s


def max_(x, s):
    for _ in range(N):
        s = np.max(x * s) + 0.1
    return s


def min_(x, s):
    for _ in range(N):
        s = np.min(x * s) + 0.1
    return s


def var_(x, s):
    for _ in range(N):
        s = np.var(x * s) + 0.5
    return s


def std_(x, s):
    for _ in range(N):
        s = np.std(x * s) + 0.5
    return s


def max_array(x, s):
    for _ in range(N):
        s = builtins.max(x * s) + 0.1
    return s


def min_array(x, s):
    for _ in range(N):
        s = builtins.min(x * s) + 0.1
    return s


def norm_(x, s):
    for _ in range(N):
        s = np.linalg.norm(x * s) * 0.5
    return s


def solve_(a, v):
    for _ in range(N):
        v = np.linalg.solve(a, v) + 0.1
    return np.sum(v * v)


def inv_(a, m):
    for _ in range(N):
        m = np.linalg.inv(m + a)
    return np.sum(m * m)


def det_(a, s):
    for _ in range(N):
        s = np.linalg.det(a * s) + 0.5
    return s


def linspace_(c, s):
    for _ in range(N):
        s = np.sum(np.linspace(c, s, 4)) * 0.3
    return s


def _peak(x, s):
    return np.max(x * s) * s


def _trough(x, s):
    return np.min(x * s) * s


_dpeak = jg.grad(_peak, wrt=1)
_dtrough = jg.grad(_trough, wrt=1)


def max_nested(x, s):
    # reverse over the gradient code of np.max: its rule reduce_max_r
    for _ in range(N):
        s = 0.3 * _dpeak(x, s) + 0.5 * s
    return s


def min_nested(x, s):
    for _ in range(N):
        s = 0.3 * _dtrough(x, s) + 0.5 * s
    return s


# (function, primals); every argument is differentiated
RNG = np.random.default_rng(7)
_X = RNG.uniform(0.5, 1.5, 4)
_A = np.eye(3) * 2.0 + RNG.uniform(-0.3, 0.3, (3, 3))
CASES = [
    (arctan2_, (0.3, 0.7)), (arctan2_np, (0.4, 0.6)), (tan_, (0.5, 0.6)),
    (hypot_, (0.6, 0.8)), (tanh_, (0.2, 0.5)), (exp_, (0.6, 0.3)), (expm1_, (0.4, 0.5)),
    (sqrt_, (0.7, 0.4)), (power_, (1.3, 0.8)), (pow_op, (1.3, 0.8)), (exp2_, (0.6, 0.3)),
    (logaddexp_, (0.3, 0.2)), (logaddexp2_, (0.3, 0.2)), (reciprocal_, (0.9, 0.4)),
    (cbrt_, (0.5, 0.4)), (gamma_, (1.2, 0.5)), (max_pair, (0.3, 0.8)),
    (min_pair, (0.9, 0.5)), (mean_, (_X, 0.7)), (max_, (_X, 0.7)), (min_, (_X, 0.7)),
    (var_, (_X, 0.7)), (std_, (_X, 0.7)), (max_array, (_X, 0.7)), (min_array, (_X, 0.7)),
    (norm_, (_X, 0.7)), (solve_, (_A, RNG.uniform(0.5, 1.0, 3))),
    (inv_, (_A, np.eye(3))), (det_, (_A, 0.9)), (linspace_, (0.4, 0.7)),
    (max_nested, (_X, 0.7)), (min_nested, (_X, 0.7)),
]


def atan2_while(c, b):
    k = 0
    while k < 3:
        b = math.atan2(c, b) + 0.5
        k += 1
    return b


def atan2_branch(c, b):
    for i in range(4):
        if i % 2 == 0:
            b = math.atan2(c, b) + 0.5
        else:
            b = np.tanh(b * c) + 0.3
    return b


def atan2_nested(c, b):
    for _ in range(2):
        for _ in range(2):
            b = math.atan2(b, c) + math.hypot(b, c)
    return b


def atan2_twice(c, b):
    for _ in range(3):
        a = math.atan2(c, b)
        b = math.atan2(a, c) + a
    return b


def atan2_checkpointed(c, b):
    for _ in jg.checkpointed(range(5), snapshots=2):
        b = math.atan2(c, b) + 0.5
    return b


def max_checkpointed(c, b):
    for _ in jg.checkpointed(range(5), snapshots=2):
        b = max(c, 1.5 * b - 0.2) * 0.9
    return b


def _step(c, b):
    return math.atan2(c, b) + np.tanh(b)


def atan2_region(c, b):
    for _ in range(3):
        b = jg.checkpoint(_step, c, b)
    return b


def solve_while(a, v):
    k = 0
    while k < 2:
        v = np.linalg.solve(a, v) + 0.1
        k += 1
    return np.sum(v * v)


def linspace_branch(c, s):
    for i in range(3):
        if s > 0.0:
            s = np.sum(np.linspace(c, s, 4)) * 0.3
    return s


def std_nested(x, s):
    for _ in range(2):
        for _ in range(2):
            s = np.std(x * s) + 0.5
    return s


POSITION_CASES = [
    (atan2_while, (0.3, 0.7)), (atan2_branch, (0.3, 0.7)), (atan2_nested, (0.4, 0.6)),
    (atan2_twice, (0.4, 0.6)), (atan2_checkpointed, (0.3, 0.7)),
    (max_checkpointed, (0.3, 0.8)), (atan2_region, (0.3, 0.7)),
    (solve_while, (np.eye(3) * 2.0 + RNG.uniform(-0.3, 0.3, (3, 3)),
                   RNG.uniform(0.5, 1.0, 3))),
    (linspace_branch, (0.4, 0.7)), (std_nested, (RNG.uniform(0.5, 1.5, 4), 0.7)),
]
