"""GradBench's scalar evals written as a Numba user writes them: lse, llsq, ode, det.

Each objective is plain Python over float64 arrays (``numba.njit`` compiles it unchanged);
``lse_hand`` and ``ode_hand`` are the hand-written Numba adjoints (GradBench's "manual"
role).  Definitions: gradbench/gradbench ``evals/<name>/README.md`` and
``cpp/gradbench/evals/<name>.hpp``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit


def lse(x):
    """log(sum(exp(x))) with the max shift (evals/lse)."""
    a = x[0]
    for i in range(1, x.shape[0]):
        if x[i] > a:
            a = x[i]
    s = 0.0
    for i in range(x.shape[0]):
        s += math.exp(x[i] - a)
    return math.log(s) + a


@njit(cache=False)
def lse_hand(x):
    """Hand adjoint of :func:`lse`: softmax(x)."""
    n = x.shape[0]
    a = x[0]
    for i in range(1, n):
        a = max(a, x[i])
    s = 0.0
    for i in range(n):
        s += math.exp(x[i] - a)
    g = np.empty(n)
    for i in range(n):
        g[i] = math.exp(x[i] - a) / s
    return (g,)


def llsq(x, n):
    """0.5 * sum_i (sign(t_i) - sum_j x_j t_i^j)^2, t_i = -1 + 2i/(n-1) (evals/llsq)."""
    m = x.shape[0]
    total = 0.0
    for i in range(n):
        ti = -1.0 + i * 2.0 / (n - 1)
        r = 0.0
        if ti > 0.0:
            r = 1.0
        elif ti < 0.0:
            r = -1.0
        mul = 1.0
        for j in range(m):
            r -= x[j] * mul
            mul *= ti
        total += r * r
    return total / 2.0


@njit(cache=False)
def ode_fun(x, y):
    """z_0 = x_0, z_i = x_i * y_{i-1}: the right-hand side of evals/ode."""
    n = x.shape[0]
    z = np.empty(n)
    z[0] = x[0]
    for i in range(1, n):
        z[i] = x[i] * y[i - 1]
    return z


def ode(x, s):
    """Last component of the RK4 solution at t=2 with s steps, y(0)=0 (evals/ode)."""
    n = x.shape[0]
    h = 2.0 / s
    y = np.zeros(n)
    for _ in range(s):
        k1 = ode_fun(x, y)
        k2 = ode_fun(x, y + h * k1 / 2.0)
        k3 = ode_fun(x, y + h * k2 / 2.0)
        k4 = ode_fun(x, y + h * k3)
        y = y + h * (k1 + 2.0 * k2 + 2.0 * k3 + k4) / 6.0
    return y[n - 1]


@njit(cache=False)
def _ode_fun_adj(x, y, zbar, xbar, ybar):
    """Adjoint of ode_fun: accumulate into xbar and ybar."""
    xbar[0] += zbar[0]
    for i in range(1, x.shape[0]):
        xbar[i] += zbar[i] * y[i - 1]
        ybar[i - 1] += zbar[i] * x[i]


@njit(cache=False)
def _ode_stages(x, y, h):
    n = x.shape[0]
    k1 = np.empty(n)
    k2 = np.empty(n)
    k3 = np.empty(n)
    y1 = np.empty(n)
    y2 = np.empty(n)
    y3 = np.empty(n)
    k1[0] = x[0]
    for i in range(1, n):
        k1[i] = x[i] * y[i - 1]
    for i in range(n):
        y1[i] = y[i] + h * k1[i] / 2.0
    k2[0] = x[0]
    for i in range(1, n):
        k2[i] = x[i] * y1[i - 1]
    for i in range(n):
        y2[i] = y[i] + h * k2[i] / 2.0
    k3[0] = x[0]
    for i in range(1, n):
        k3[i] = x[i] * y2[i - 1]
    for i in range(n):
        y3[i] = y[i] + h * k3[i]
    return k1, k2, k3, y1, y2, y3


@njit(cache=False)
def ode_hand(x, s):
    """Hand adjoint of :func:`ode`: stores y per step, recomputes the stages backwards."""
    n = x.shape[0]
    h = 2.0 / s
    ys = np.zeros((s + 1, n))
    for t in range(s):
        k1, k2, k3, y1, y2, y3 = _ode_stages(x, ys[t], h)
        for i in range(n):
            k4 = x[0] if i == 0 else x[i] * y3[i - 1]
            ys[t + 1, i] = ys[t, i] + h * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4) / 6.0
    xbar = np.zeros(n)
    ybar = np.zeros(n)
    ybar[n - 1] = 1.0
    kbar = np.empty(n)
    for t in range(s - 1, -1, -1):
        y = ys[t]
        k1, k2, k3, y1, y2, y3 = _ode_stages(x, y, h)
        ynew = ybar.copy()          # adjoint of y before this step, direct part
        for i in range(n):
            kbar[i] = h / 6.0 * ybar[i]
        y3bar = np.zeros(n)
        _ode_fun_adj(x, y3, kbar, xbar, y3bar)               # k4 = f(y3)
        for i in range(n):
            ynew[i] += y3bar[i]
            kbar[i] = 2.0 * h / 6.0 * ybar[i] + h * y3bar[i]  # k3
        y2bar = np.zeros(n)
        _ode_fun_adj(x, y2, kbar, xbar, y2bar)
        for i in range(n):
            ynew[i] += y2bar[i]
            kbar[i] = 2.0 * h / 6.0 * ybar[i] + h / 2.0 * y2bar[i]  # k2
        y1bar = np.zeros(n)
        _ode_fun_adj(x, y1, kbar, xbar, y1bar)
        for i in range(n):
            ynew[i] += y1bar[i]
            kbar[i] = h / 6.0 * ybar[i] + h / 2.0 * y1bar[i]  # k1
        _ode_fun_adj(x, y, kbar, xbar, ynew)
        ybar = ynew
    return (xbar,)


def det(A, ell):
    """det(A) of the flat row-major ell x ell matrix A, summed over all ell! permutations.

    The loop form of evals/det: permutation ``p`` is decoded from its index by its
    Lehmer code (digit r picks the d-th unused column), whose digit sum is the number
    of inversions, hence the sign.
    """
    nperm = 1
    for r in range(2, ell + 1):
        nperm *= r
    used = np.zeros(ell, np.int64)
    total = 0.0
    for p in range(nperm):
        for c in range(ell):
            used[c] = 0
        rest = p
        f = nperm
        inversions = 0
        prod = 1.0
        for r in range(ell):
            f = f // (ell - r)
            d = rest // f
            rest = rest - d * f
            inversions += d
            col = 0
            seen = -1
            for c in range(ell):
                if used[c] == 0:
                    seen += 1
                    if seen == d:
                        col = c
                        break
            used[col] = 1
            prod *= A[r * ell + col]
        if inversions % 2 == 0:
            total += prod
        else:
            total -= prod
    return total


def det_of_minor(A, n, m, r, c):
    """cmpad's recursive expansion by minors (cpp/gradbench/evals/det.hpp): jitgrad
    refuses the recursion today, see docs/performance.md."""
    R0 = r[n]
    Cj = c[n]
    if m == 1:
        return A[R0 * n + Cj]
    detM = 0.0
    sign = 1
    r[n] = r[R0]
    Cj1 = n
    for _ in range(m):
        M0j = A[R0 * n + Cj]
        c[Cj1] = c[Cj]
        detS = det_of_minor(A, n, m - 1, r, c)
        c[Cj1] = Cj
        if sign > 0:
            detM = detM + M0j * detS
        else:
            detM = detM - M0j * detS
        Cj1 = Cj
        Cj = c[Cj]
        sign = -sign
    r[n] = R0
    return detM


def det_recursive(A, ell):
    """det(A) by the recursive Laplace expansion (evals/det's reference form)."""
    r = np.zeros(ell + 1, np.int64)
    c = np.zeros(ell + 1, np.int64)
    for i in range(ell):
        r[i] = i + 1
        c[i] = i + 1
    return det_of_minor(A, ell, ell, r, c)
