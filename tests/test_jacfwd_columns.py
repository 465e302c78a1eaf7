"""``jg.jacfwd`` runs one jvp per input element with the seeds checked once and one unit
element set in place per column (``forward_api._forward_columns``): every block matches
central differences, also where the tangent returned is the seed itself, for tuple
outputs and arguments, float32, 2-D inputs and scalar ``wrt``; the user's arrays are
left as they were."""

import numpy as np
import pytest

import jitgrad as jg


def identity(x):
    """The tangent returned is the seed array itself."""
    return x


def pair(x, k):
    """A tuple output: a scalar and an array, each depending on both arguments."""
    y = np.empty(x.shape[0])
    s = 0.0
    for i in range(x.shape[0]):
        y[i] = np.sin(k * x[i]) * x[i - 1]
        s += y[i] * y[i]
    return s, y


def grid(M, dx):
    """A 2-D argument and user names beside generated ones (``M``, ``dx``)."""
    out = np.empty(M.shape[0])
    for i in range(M.shape[0]):
        J = 0.0
        for j in range(M.shape[1]):
            J += np.exp(dx * M[i, j]) * M[i, j - 1]
        out[i] = J
    return out


def fd_jacobian(f, args, i, out, eps=1e-6):
    """Central differences of output ``out`` (or the only one) w.r.t. argument ``i``."""
    def pick(*a):
        r = f(*a)
        return np.asarray(r[out] if out is not None else r, dtype=float)

    x = np.asarray(args[i], dtype=float)
    cols = []
    for idx in np.ndindex(x.shape):
        hi = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        lo = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        xp, xm = x.copy(), x.copy()
        xp[idx] += eps
        xm[idx] -= eps
        hi[i] = xp if x.shape else float(xp)
        lo[i] = xm if x.shape else float(xm)
        cols.append((pick(*hi) - pick(*lo)) / (2 * eps))
    ref = np.stack(cols, axis=-1) if cols else np.zeros(np.shape(pick(*args)) + (0,))
    return ref.reshape(np.shape(pick(*args)) + x.shape)


@pytest.mark.parametrize("jit", [True, False])
def test_identity_each_column_its_own(jit):
    x = np.array([0.5, -1.0, 2.0])
    before = x.copy()
    J = jg.jacfwd(identity, jit=jit)(x)
    np.testing.assert_array_equal(J, np.eye(3))
    np.testing.assert_array_equal(x, before)


@pytest.mark.parametrize("jit", [True, False])
def test_tuple_output_and_arguments(jit):
    x = np.random.default_rng(1).standard_normal(5)
    args = (x, 0.7)
    before = x.copy()
    J = jg.jacfwd(pair, wrt=(0, 1), jit=jit)(*args)
    value = pair(x, 0.7)
    for o in range(2):
        for i in range(2):
            ref = fd_jacobian(pair, args, i, o)
            assert J[o][i].shape == np.shape(value[o]) + np.shape(args[i])
            np.testing.assert_allclose(J[o][i], ref, rtol=1e-6, atol=1e-8)
    np.testing.assert_array_equal(x, before)
    v, t = jg.jvp(pair, args, (np.ones(5), 1.0), wrt=(0, 1), jit=jit)  # the value beside it
    np.testing.assert_allclose(v[0], value[0], rtol=1e-12)
    np.testing.assert_allclose(v[1], value[1], rtol=1e-12)


@pytest.mark.parametrize("jit", [True, False])
def test_two_dimensional_argument_and_user_names(jit):
    M = np.random.default_rng(2).standard_normal((3, 4))
    J = jg.jacfwd(grid, wrt=(0, 1), jit=jit)(M, 0.3)
    np.testing.assert_allclose(J[0], fd_jacobian(grid, (M, 0.3), 0, None), rtol=1e-6,
                               atol=1e-8)
    np.testing.assert_allclose(J[1], fd_jacobian(grid, (M, 0.3), 1, None), rtol=1e-6,
                               atol=1e-8)
    assert J[0].shape == (3, 3, 4)


@pytest.mark.parametrize("jit", [True, False])
def test_float32_stays_float32(jit):
    x = np.linspace(-1.0, 1.0, 4).astype(np.float32)
    J = jg.jacfwd(identity, jit=jit)(x)
    assert J.dtype == np.float32
    np.testing.assert_array_equal(J, np.eye(4))
    J = jg.jacfwd(pair, wrt=0, jit=jit)(x, np.float32(0.5))  # y is float64: so is J[1]
    ref = fd_jacobian(pair, (x.astype(float), 0.5), 0, 1)
    np.testing.assert_allclose(J[1], ref, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("jit", [True, False])
def test_empty_argument(jit):
    """As JAX: the value's shape and the argument's, though no column runs."""
    J = jg.jacfwd(identity, jit=jit)(np.zeros(0))
    assert J.shape == (0, 0)
    J = jg.jacfwd(pair, wrt=(0, 1), jit=jit)(np.zeros(0), 0.5)
    assert J[0][0].shape == (0,) and J[1][0].shape == (0, 0) and J[1][1].shape == (0,)
