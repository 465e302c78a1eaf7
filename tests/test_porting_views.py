"""Views read while other regions of their array are written (issue 29 item 3): QuantEcon's
GTH solver with its early exit, and multi-time-level ocean-model arrays."""

import numpy as np
import pytest
from gradcheck import check_grad

import jitgrad as jg


def gth_solve(P, w):
    # the shape of quantecon's gth_solve: in-place elimination, an early exit, back-substitution
    n = P.shape[0]
    A = P.copy()
    x = np.zeros(n)
    for k in range(n - 1):
        scale = np.sum(A[k, k + 1:n])
        if scale <= 0:
            n = k + 1
            break
        for i in range(k + 1, n):
            A[i, k] /= scale
            for j in range(k + 1, n):
                A[i, j] += A[i, k] * A[k, j]
    x[n - 1] = 1.0
    for k in range(n - 2, -1, -1):
        for i in range(k + 1, n):
            x[k] += x[i] * A[i, k]
    x /= np.sum(x)
    return np.sum(x * w)


def tke_levels(tke, forc, dt, tau, taup1):
    # Veros/pyhpc style: read time level tau through a view, write level taup1
    nx, ny, nz, nt = tke.shape
    for i in range(nx):
        for j in range(ny):
            ks = 1
            old = tke[i, j, ks:, tau]
            tke[i, j, ks:, taup1] = old + dt * forc[i, j, ks:] * old
            tke[i, j, ks:, taup1] += dt * old * old
    return np.sum(tke[:, :, :, taup1] ** 2) + np.sum(tke[:, :, 0, tau])


def tke_constant_levels(tke, forc, dt):
    tau, taup1 = 0, 1
    nx, ny, nz, nt = tke.shape
    for i in range(nx):
        for j in range(ny):
            old = tke[i, j, 1:, tau]
            tke[i, j, 1:, taup1] = old + dt * forc[i, j, 1:] * old
            tke[i, j, 1:, taup1] += dt * old * old
    return np.sum(tke[:, :, :, taup1] ** 2)


def _markov(seed: int) -> np.ndarray:
    P = np.random.default_rng(seed).random((4, 4)) + 0.1
    return P / P.sum(1, keepdims=True)


@pytest.mark.parametrize("jit", [True, False])
def test_gth_solver_with_its_early_exit(jit):
    w = np.array([0.3, -1.2, 0.7, 2.0])
    check_grad(gth_solve, (_markov(1), w), wrt=(0, 1), jit=jit)
    P = _markov(2)
    P[2, 3] = -1.0  # scale <= 0 at k = 2: the early exit runs (n = 3)
    check_grad(gth_solve, (P, w), wrt=(0, 1), jit=jit)


@pytest.mark.parametrize("jit", [True, False])
def test_time_levels_read_through_a_view_while_another_is_written(jit):
    rng = np.random.default_rng(3)
    tke, forc = rng.random((2, 2, 3, 3)), rng.random((2, 2, 3))
    check_grad(tke_levels, (tke, forc, 0.1, 2, 0), wrt=(0, 1, 2), jit=jit)
    check_grad(tke_constant_levels, (tke[..., :2].copy(), forc, 0.1), wrt=(0, 1, 2), jit=jit)


def test_time_level_indices_that_coincide_are_refused_when_the_gradient_runs():
    rng = np.random.default_rng(4)
    tke, forc = rng.random((2, 2, 3, 2)), rng.random((2, 2, 3))
    f = jg.differentiate(tke_levels, wrt=0, jit=False)
    with pytest.raises(AssertionError, match="needs tau != taup1"):
        f.value_and_grad(tke, forc, 0.1, 1, 1)
    with pytest.raises(AssertionError, match="needs tau != taup1"):
        f.value_and_grad(tke, forc, 0.1, -1, 1)  # the same level, counted from the end
