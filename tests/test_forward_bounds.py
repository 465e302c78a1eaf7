"""Forward mode's ``bounds`` passes (``forward_pipeline.bounds_jvp_``, ``vector_bounds_``):
under ``jit=True`` the jvp and the vector jvp check every index explicitly and are
compiled with ``boundscheck=False``; an argument whose shape does not match the loops
still raises ``IndexError`` (``jit=False``: Python's own).  Values, tangents and Jacobians
are checked against closed forms and central differences, in both modes."""

import numpy as np
import pytest
from gradcheck import numeric_grad

import jitgrad as jg
from jitgrad.transpiler.backend.bounds import proved


def dot_shift(x, y):
    """Reads ``y[i + 1]`` over ``x``'s length: ``y`` must be one longer."""
    out = np.empty(x.shape[0])
    for i in range(x.shape[0]):
        out[i] = x[i] * y[i + 1] + x[i] * x[i]
    return out


def gather(x, idx):
    """An element used as an index, ``x[idx[i]]`` (ht's ``absolutes[parents[b]]``)."""
    out = np.empty(idx.shape[0])
    for i in range(idx.shape[0]):
        out[i] = x[idx[i]] * x[idx[i]] + 2.0 * x[i]
    return out


def _jac_dot_shift(x, y):
    return np.diag(y[1:] + 2.0 * x)


def _jac_gather(x, idx):
    J = np.zeros((idx.shape[0], x.shape[0]))
    for i, j in enumerate(idx):
        J[i, j] += 2.0 * x[j]
        J[i, i] += 2.0
    return J


CASES = [(dot_shift, lambda: (np.linspace(0.1, 0.9, 5), np.linspace(1.0, 2.0, 6)),
          _jac_dot_shift),
         (gather, lambda: (np.linspace(0.2, 1.4, 4), np.array([3, 0, 2, 2])), _jac_gather)]


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("f, args, jac", CASES, ids=["dot_shift", "gather"])
def test_values_and_tangents(f, args, jac, jit):
    """Every entry of ``f``'s Jacobian (``jacfwd``, vector code) and a jvp's tangent
    against the closed form and central differences; the values are ``f``'s."""
    x, other = args()
    J = jac(x, other)
    g = lambda x, o: f(x, o)  # noqa: E731
    np.testing.assert_allclose(jg.jacfwd(f, wrt=0, jit=jit)(x, other), J, rtol=1e-12)
    for r in range(J.shape[0]):
        fd = numeric_grad(lambda x, o, r=r: g(x, o)[r], (x, other), 0)
        np.testing.assert_allclose(J[r], fd, rtol=1e-5, atol=1e-6)
    dx = np.linspace(-1.0, 1.0, x.shape[0])
    val, tan = jg.jvp(f, (x, other), (dx,), wrt=0, jit=jit)
    np.testing.assert_allclose(val, f(x, other), rtol=1e-14)
    np.testing.assert_allclose(tan, J @ dx, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("f, args, jac", CASES, ids=["dot_shift", "gather"])
def test_checked_under_jit(f, args, jac):
    """``jit=True``: the jvp and the vector jvp are proved (``MARK``: no Numba checks);
    ``jit=False``: no explicit checks (Python checks each index)."""
    x, other = args()
    d = jg.differentiate(f, wrt=0, jit=True)
    assert proved(d.source(x, other, mode="jvp"))
    assert proved(d.source(x, other, mode="jvp", stage="vector_bounds"))
    plain = jg.differentiate(f, wrt=0, jit=False)
    assert "IndexError" not in plain.source(x, other, mode="jvp")


@pytest.mark.parametrize("jit", [True, False])
def test_out_of_range_raises(jit):
    """``y`` too short for ``y[i + 1]``, an ``idx`` element past ``x``: IndexError from the
    jvp and from jacfwd (vector and per-column code), never a read past the array."""
    x = np.linspace(0.1, 0.9, 5)
    short = np.ones(5)
    with pytest.raises(IndexError):
        jg.jvp(dot_shift, (x, short), (np.ones(5),), wrt=0, jit=jit)
    with pytest.raises(IndexError):
        jg.jacfwd(dot_shift, wrt=0, jit=jit)(x, short)
    bad = np.array([0, 7])
    with pytest.raises(IndexError):
        jg.jvp(gather, (x, bad), (np.ones(5),), wrt=0, jit=jit)
    with pytest.raises(IndexError):
        jg.jacfwd(gather, wrt=0, jit=jit)(x, bad)
    with pytest.raises(IndexError):
        jg.jacfwd(gather, wrt=0, jit=jit)(x, np.array([0, -6]))


def test_out_of_range_per_column(monkeypatch):
    """The per-column jacfwd (vector mode off) raises IndexError too."""
    monkeypatch.setattr(jg.config, "vector_jacfwd", False)
    with pytest.raises(IndexError):
        jg.jacfwd(dot_shift, wrt=0)(np.ones(5), np.ones(5))
    with pytest.raises(IndexError):
        jg.jacfwd(gather, wrt=0)(np.ones(5), np.array([5]))
