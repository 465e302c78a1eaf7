"""Functions using the rules added for the rule-coverage issue (tests/test_rule_coverage.py)."""

import math

import numpy as np

# --- ufuncs that spell operators, and new elementwise rules ------------------


def ufunc_operators(x, y):
    return np.sum(np.multiply(x, y) + np.add(x, 1.0) - np.subtract(y, x) + np.divide(x, y)
                  + np.true_divide(y, 2.0) + np.negative(x) * np.positive(y) + np.square(x)
                  + np.reciprocal(y) + np.remainder(y, 0.7) + np.floor_divide(y, 0.3)
                  + np.power(y, x) + np.float_power(y, 1.5))


def ufunc_elementwise(x, y):
    return np.sum(np.exp2(x) + np.log2(y) + np.log10(y) + np.arcsinh(x) + np.arccosh(y + 1.5)
                  + np.arctanh(x * 0.5) + np.cbrt(y) + np.logaddexp(x, y)
                  + np.logaddexp2(x, y) + np.degrees(x) + np.rad2deg(y) + np.radians(x)
                  + np.deg2rad(y) + np.copysign(y, x) + np.fmod(y, 0.7) + np.ldexp(x, 3)
                  + np.fabs(x))


def ufunc_broadcast(A, v, s):
    return np.sum(np.multiply(A, v) + np.divide(s, A + 3.0) + np.logaddexp(A, s)
                  + np.subtract(v, A) * s + np.fmod(A, v + 2.5) + np.copysign(A, v))


def math_new(a, b):
    return (math.erfc(a) + math.log2(b) + math.log10(b) + math.gamma(b) + math.lgamma(b)
            + math.asinh(a) + math.acosh(b + 1.5) + math.atanh(a * 0.5) + math.exp2(a)
            + math.degrees(a) + math.radians(b) + math.copysign(b, a) + math.ldexp(a, 2)
            + pow(b, a))


def gamma_negative(a):
    return math.gamma(a) + math.lgamma(a) * 2.0


def scalar_mix(x, y):
    """Elementwise rules on scalars: NumPy ufuncs and math together (hypothesis test)."""
    return (np.exp2(x) + np.log2(y) + np.log10(y) + np.arcsinh(x) + np.arccosh(y + 1.0)
            + np.arctanh(0.5 * x) + np.cbrt(y) + np.square(x) * np.reciprocal(y)
            + np.logaddexp(x, y) + np.logaddexp2(y, x) + math.erfc(x) + math.gamma(y)
            + math.lgamma(y) + math.log2(y) + math.log10(y) + np.degrees(x) + math.radians(y)
            + np.multiply(x, y) - np.divide(x, y) + np.negative(y))


# --- reductions with keepdims ----------------------------------------------------


def keepdims(A):
    s = np.sum(A, axis=1, keepdims=True)
    m = np.max(A, axis=0, keepdims=True)
    n = np.min(A, axis=1, keepdims=True)
    u = np.mean(A, axis=0, keepdims=True)
    t = np.sum(A, keepdims=True)
    return (np.sum(A * s + A / (2.0 + m) + n * u) + t[0, 0]
            + np.sum(A.max(axis=1, keepdims=True)) + np.sum(np.std(A, axis=1, keepdims=True))
            + np.sum(np.var(A, axis=0, keepdims=True))
            + np.sum(np.prod(A, axis=1, keepdims=True)) + np.sum(A.min(axis=-1, keepdims=True))
            + np.sum(np.mean(A, keepdims=True) * A))


def keepdims_vector(x):
    return np.sum(np.max(x, axis=0, keepdims=True) * x) + np.sum(np.mean(x, keepdims=True))


# --- Python's sum, max, min ------------------------------------------------------


def nary_max_min(a, b, c):
    return (max(a, b, c) * 2.0 + min(a, b, c) + max(a, 0.1) + min(b, c, a, 0.5)
            + max(c, b) * min(a, b))


def builtins_of_array(x):
    return max(x) + min(x) * 2.0 + sum(x) + sum(x * x, 1.0) + max(x[0], x[1], x[2])


def builtins_of_list(a, b):
    return sum([a, b * 2.0, 1.0]) + max([a, b]) + min((a, b)) + sum((a, a * b))


def max_of_two(a, b):
    return max(a, b)


def max_first_of_ties(a, b):
    return max(a, b, a) + min(b, a, b)


# --- shape and order -------------------------------------------------------------


def diagonals(v, A, B):
    D = np.diag(v)
    D2 = np.diag(v, -1)
    return (np.sum(D * D) + np.sum(np.diag(A) * v) + np.sum(np.diag(A, 1))
            + np.sum(D2 * np.sin(D2)) + np.sum(np.diag(B) ** 2) + np.sum(np.diag(B, 1) * 3.0)
            + np.sum(np.diag(B, -1) ** 2))


def atleast(v, A):
    return (np.sum(np.atleast_2d(v) ** 2) + np.sum(np.atleast_3d(A) * 2.0)
            + np.sum(np.atleast_1d(v) * v) + np.sum(np.atleast_3d(v) ** 3))


def orders(v, A):
    w = np.arange(v.shape[0]) * 1.0
    return (np.sum(np.sort(v) * w) + np.sum(np.sort(A) * A) + np.sum(np.sort(A, axis=0) * np.cos(A))
            + np.sum(np.sort(A, axis=None) ** 3) + np.sum(np.flip(v) * w)
            + np.sum(np.flip(A, 1) * A) + np.sum(np.flip(A) * A) + np.sum(np.fliplr(A) * A)
            + np.sum(np.flipud(A) * A) + np.sum(np.roll(v, 2) * w))


def views(v, A):
    B = np.broadcast_to(v, (4, 3))
    T = np.swapaxes(A, 0, 1)
    L = np.tril(A) + np.triu(A, 1) * 2.0 + np.tril(A, -1)
    c = np.ascontiguousarray(A)
    return np.sum(B * B) + np.sum(T * T * T) + np.sum(L * L) + np.sum(c * A)


def differences(x, y, A):
    return (np.sum(np.diff(x) ** 2) + np.sum(np.diff(A) * A[:, 1:]) + np.sum(np.diff(x, 2) ** 2)
            + np.vdot(x, y) * 2.0)


def from_scalars(a, b):
    v = np.array([a, b * 2.0, 1.0])
    w = np.asarray((b, a))
    f = np.full(3, a)
    g = np.full_like(v, b)
    s = np.linspace(a, b, 5)
    return (np.sum(v * v) + np.sum(w * np.exp(w)) + np.sum(f * v) + np.sum(g * v)
            + np.sum(s * s))


# --- inside loops ----------------------------------------------------------------


def loop_rules(x, n):
    s = 0.0
    for i in range(n):
        v = np.array([x[i], x[i + 1] * 2.0])
        s += max(x[i], x[i + 1], 0.3) + np.sum(np.sort(x * (i + 1.0)) * v[0])
        s += math.gamma(x[i] + 2.0) + np.log2(x[i] + 3.0) + min(v)
    return s


def loop_keepdims(A, n):
    B = A.copy()
    for k in range(n):
        B = B - np.max(B, axis=1, keepdims=True) * 0.5 + np.flip(B, 0) * 0.1
    return np.sum(B * B)


def loop_elementwise(x, n):
    y = x.copy()
    for k in range(n):
        y = np.multiply(np.arcsinh(y), 1.1) + np.square(np.subtract(y, 0.5)) * 0.1
    return np.sum(np.logaddexp(y, 0.3))


# --- singular points -------------------------------------------------------------


def singular(x):
    return np.sum(np.log2(x) + np.cbrt(x) + np.arctanh(x) + np.arccosh(x + 1.0))


def masked_singular(x):
    return np.sum(np.log2(x) * 0.0 + np.cbrt(x) * 0.0) + np.sum(x)


# --- kinds -----------------------------------------------------------------------


def kinds_demo(v, A, a, b):
    D = np.diag(v)
    d = np.diag(A)
    P = np.atleast_2d(v)
    Q = np.atleast_3d(A)
    K = np.sum(A, axis=1, keepdims=True)
    M = np.max(A, keepdims=True)
    N = A.min(axis=0, keepdims=True)
    r = np.mean(A, axis=0)
    m = max(a, b, 1.0)
    i = max(1, 2)
    s = sum(v)
    mv = max(v)
    arr = np.array([a, b])
    iarr = np.array([1, 2])
    farr = np.array([1, 2], dtype=np.float64)
    B = np.broadcast_to(v, (2, 3))
    S = np.sort(A, axis=None)
    F = np.flip(A)
    vd = np.vdot(v, v)
    Z = np.squeeze(A)
    return (np.sum(D) + np.sum(d) + np.sum(P) + np.sum(Q) + np.sum(K) + np.sum(M) + np.sum(N)
            + np.sum(r) + m + i + s + mv + np.sum(arr) + np.sum(iarr) + np.sum(farr) + np.sum(B)
            + np.sum(S) + np.sum(F) + vd + np.sum(Z))


# --- refused functions -----------------------------------------------------------

FN = None


def set_fn(f):
    global FN
    FN = f


def calls_fn(x):
    y = FN(x)
    return np.sum(y)
