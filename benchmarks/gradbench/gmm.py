"""GradBench's gmm (evals/gmm): log posterior of a Gaussian mixture with a Wishart prior.

``gmm`` is written the way cpp/gradbench/evals/gmm.hpp (ADBench's C++) is, ported to
Numba: small helpers over rows, a centred point and ``Q (x - mu)`` in scratch arrays.
``gmm_hand`` is the hand-written adjoint (one pass over points, nothing stored but one
point's ``k x d`` block).
"""

# ruff: noqa: E741 - ``l`` is GradBench's name for gmm's lower-triangle parameters

from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=False)
def logsumexp(v):
    """max(v) + log(sum(exp(v - max(v))))."""
    mx = v[0]
    for i in range(1, v.shape[0]):
        if v[i] > mx:
            mx = v[i]
    s = 0.0
    for i in range(v.shape[0]):
        s += math.exp(v[i] - mx)
    return math.log(s) + mx


@njit(cache=False)
def log_gamma_distrib(a, p):
    """log of the multivariate gamma function Gamma_p(a)."""
    out = 0.25 * p * (p - 1) * math.log(math.pi)
    for j in range(1, p + 1):
        out += math.lgamma(a + 0.5 * (1 - j))
    return out


@njit(cache=False)
def q_times_x(qrow, lrow, xc):
    """Q(q, l) @ xc, Q lower triangular with diagonal exp(q) and l filled column-wise."""
    d = xc.shape[0]
    out = np.empty(d)
    for i in range(d):
        out[i] = math.exp(qrow[i]) * xc[i]
    idx = 0
    for i in range(d):
        for j in range(i + 1, d):
            out[j] += lrow[idx] * xc[i]
            idx += 1
    return out


@njit(cache=False)
def log_wishart_prior(q, l, wishart_gamma, wishart_m):
    """log p(theta): the Wishart prior on the k precision matrices."""
    k, d = q.shape
    n = d + wishart_m + 1
    c = n * d * (math.log(wishart_gamma) - 0.5 * math.log(2.0)) - log_gamma_distrib(0.5 * n, d)
    out = 0.0
    for ik in range(k):
        frob = 0.0
        sum_q = 0.0
        for j in range(d):
            frob += math.exp(2.0 * q[ik, j])
            sum_q += q[ik, j]
        for j in range(l.shape[1]):
            frob += l[ik, j] * l[ik, j]
        out += 0.5 * wishart_gamma * wishart_gamma * frob - wishart_m * sum_q
    return k * c - out


def gmm(alpha, mu, q, l, x, wishart_gamma, wishart_m):
    """Log posterior F_X(theta, phi) of evals/gmm."""
    n, d = x.shape
    k = alpha.shape[0]
    sum_qs = np.empty(k)
    for ik in range(k):
        s = 0.0
        for j in range(d):
            s += q[ik, j]
        sum_qs[ik] = s
    main_term = np.empty(k)
    xc = np.empty(d)
    slse = 0.0
    for i in range(n):
        for ik in range(k):
            for j in range(d):
                xc[j] = x[i, j] - mu[ik, j]
            qx = q_times_x(q[ik], l[ik], xc)
            sq = 0.0
            for j in range(d):
                sq += qx[j] * qx[j]
            main_term[ik] = alpha[ik] + sum_qs[ik] - 0.5 * sq
        slse += logsumexp(main_term)
    const = -n * d * 0.5 * math.log(2.0 * math.pi)
    return (const + slse - n * logsumexp(alpha)
            + log_wishart_prior(q, l, wishart_gamma, wishart_m))


@njit(cache=False)
def _softmax_into(v, out):
    mx = v[0]
    for i in range(1, v.shape[0]):
        mx = max(mx, v[i])
    s = 0.0
    for i in range(v.shape[0]):
        out[i] = math.exp(v[i] - mx)
        s += out[i]
    for i in range(v.shape[0]):
        out[i] /= s


@njit(cache=False)
def _point_terms(alpha, sum_qs, eq, mu, l, xi, xc, qx, main_term):
    """Fill xc[k, d], qx[k, d] and main_term[k] for one point."""
    k, d = mu.shape
    for ik in range(k):
        for j in range(d):
            xc[ik, j] = xi[j] - mu[ik, j]
            qx[ik, j] = eq[ik, j] * xc[ik, j]
        idx = 0
        for a in range(d):
            for b in range(a + 1, d):
                qx[ik, b] += l[ik, idx] * xc[ik, a]
                idx += 1
        sq = 0.0
        for j in range(d):
            sq += qx[ik, j] * qx[ik, j]
        main_term[ik] = alpha[ik] + sum_qs[ik] - 0.5 * sq


@njit(cache=False)
def gmm_hand(alpha, mu, q, l, x, wishart_gamma, wishart_m):
    """Hand-written adjoint of :func:`gmm`: (dalpha, dmu, dq, dl)."""
    n, d = x.shape
    k = alpha.shape[0]
    eq = np.exp(q)
    sum_qs = q.sum(axis=1)
    dalpha = np.zeros(k)
    dmu = np.zeros((k, d))
    dq = np.zeros((k, d))
    dl = np.zeros(l.shape)
    xc = np.empty((k, d))
    qx = np.empty((k, d))
    main_term = np.empty(k)
    w = np.empty(k)
    dxc = np.empty(d)
    for i in range(n):
        _point_terms(alpha, sum_qs, eq, mu, l, x[i], xc, qx, main_term)
        _softmax_into(main_term, w)
        for ik in range(k):
            wk = w[ik]
            dalpha[ik] += wk
            for j in range(d):
                g = -wk * qx[ik, j]            # d(-0.5 |qx|^2) / d qx_j, times w_k
                dq[ik, j] += wk + g * eq[ik, j] * xc[ik, j]
                dxc[j] = g * eq[ik, j]
            idx = 0
            for a in range(d):
                for b in range(a + 1, d):
                    g = -wk * qx[ik, b]
                    dl[ik, idx] += g * xc[ik, a]
                    dxc[a] += g * l[ik, idx]
                    idx += 1
            for j in range(d):
                dmu[ik, j] -= dxc[j]
    sa = np.empty(k)
    _softmax_into(alpha, sa)
    for ik in range(k):
        dalpha[ik] -= n * sa[ik]
        for j in range(d):
            dq[ik, j] += wishart_m - wishart_gamma * wishart_gamma * eq[ik, j] * eq[ik, j]
        for j in range(l.shape[1]):
            dl[ik, j] -= wishart_gamma * wishart_gamma * l[ik, j]
    return dalpha, dmu, dq, dl
