"""Float32 arguments to the linear-algebra rules (``np.dot``, ``@``, ``np.outer``,
``np.linalg.*``), alone and mixed with float64 as NumPy promotes them: the value is the
function's, each gradient comes back in its argument's dtype, and equals the float64
central differences at the same point to float32's precision.  Mixed operands are
checked with ``jit=False`` only: Numba compiles neither the user's function nor its
gradient code on them (its ``np.dot`` and ``np.linalg.solve`` take one dtype).

Numba's ``np.dot`` takes operands of one dtype, and the adjoint arriving at a float32
product is float64 (the seed is 1.0): the gradient kernels convert (``mixed_dot``)."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import numeric_grad

import jitgrad as jg


def tanh_layer(w, X):
    return np.sum(np.tanh(X @ w) ** 2)


def row_times_matrix(v, B):
    return np.sum(np.sin(v @ B))


def matrix_product(A, B):
    return np.sum(np.dot(A, B) ** 2)


def inner(a, b):
    return np.dot(a, b) * np.dot(a, a)


def outer_product(a, b):
    return np.sum(np.cos(np.outer(a, b)))


def solved(A, b):
    return np.sum(np.linalg.solve(A, b) ** 2)


def inverse_and_det(A, b):
    return np.sum(np.linalg.inv(A) @ b) + np.linalg.det(A) + np.linalg.norm(b)


def inverse_squared(A):
    return np.sum(np.linalg.inv(A) ** 2)


R = np.random.default_rng(5)
WELL = np.eye(3) * 3.0 + R.normal(size=(3, 3)) * 0.3  # well conditioned for solve/inv

CASES = {
    "tanh_layer": (tanh_layer, (R.normal(size=3), R.normal(size=(4, 3)))),
    "row_times_matrix": (row_times_matrix, (R.normal(size=3), R.normal(size=(3, 4)))),
    "matrix_product": (matrix_product, (R.normal(size=(2, 3)), R.normal(size=(3, 4)))),
    "inner": (inner, (R.normal(size=4), R.normal(size=4))),
    "outer_product": (outer_product, (R.normal(size=3), R.normal(size=2))),
    "solved": (solved, (WELL, R.normal(size=3))),
    "inverse_and_det": (inverse_and_det, (WELL, R.normal(size=3))),
    "inverse_squared": (inverse_squared, (WELL,)),
}
DTYPES = {"f32": (np.float32, np.float32), "f32-f64": (np.float32, np.float64),
          "f64-f32": (np.float64, np.float32)}


@pytest.mark.parametrize("dtypes", list(DTYPES))
@pytest.mark.parametrize("name", list(CASES))
def test_float32_gradients(name, dtypes, jit):
    f, args = CASES[name]
    if len(set(DTYPES[dtypes][:len(args)])) > 1 and jit:
        pytest.skip("numba.njit refuses the function itself: its np.dot, @ and "
                    "np.linalg.solve take operands of one dtype")
    if len(args) == 1 and dtypes != "f32":
        pytest.skip("one argument: no mix")
    args = tuple(a.astype(t) for a, t in zip(args, DTYPES[dtypes], strict=False))
    wrt = tuple(range(len(args)))
    value, grads = jg.value_and_grad(f, wrt=wrt, jit=jit)(*args)
    np.testing.assert_allclose(value, f(*args), rtol=1e-5)
    at = tuple(a.astype(np.float64) for a in args)  # the same point, in float64
    for w, g in enumerate(grads):
        assert g.dtype == args[w].dtype, (w, g.dtype)
        np.testing.assert_allclose(g, numeric_grad(f, at, w), rtol=2e-3, atol=2e-3,
                                   err_msg=f"gradient w.r.t. argument {w}")


@pytest.mark.parametrize("name", ["outer_product", "solved", "inverse_squared"])
def test_hessian_through_the_conversions(name, jit):
    """The gradient code of ``np.outer``, ``np.linalg.solve`` and ``np.linalg.inv`` calls
    ``mixed_dot``, ``mixed_solve`` and ``in_dtype_of``: forward mode differentiates them
    (``jg.hessian``, float64), as the central differences of the gradient say."""
    f, args = CASES[name]
    x = args[0]
    rest = args[1:]
    hess = jg.hessian(f, wrt=0, jit=jit)(*args)
    grad = jg.grad(f, wrt=0, jit=jit)
    fd = np.stack([numeric_grad(lambda a, k=k: grad(a, *rest).reshape(-1)[k], (x,), 0)
                   for k in range(x.size)]).reshape(x.shape + x.shape)
    np.testing.assert_allclose(hess, fd, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(grad(x, *rest), numeric_grad(f, args, 0), rtol=1e-5,
                               atol=1e-6)


# --- Jacobians and Hessians keep float32 (as JAX's do) --------------------------------------


def squares_and_sines(x):
    return x * x + np.sin(x)


def cubic_sum(x):
    s = np.float32(0.0)
    for i in range(x.shape[0]):
        s += x[i] * x[i] * x[i]
    return s


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("which", ["jacfwd", "jacrev"])
def test_jacobians_of_float32_are_float32(which, jit):
    x = np.array([0.5, -1.0, 2.0], dtype=np.float32)
    J = getattr(jg, which)(squares_and_sines, jit=jit)(x)
    assert J.dtype == np.float32 and J.shape == (3, 3)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(J, np.diag(2 * x64 + np.cos(x64)), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("jit", [False, True])
def test_hessian_of_float32_is_float32(jit):
    x = np.array([0.5, -1.0, 2.0], dtype=np.float32)
    H = jg.hessian(cubic_sum, jit=jit)(x)
    assert H.dtype == np.float32
    np.testing.assert_allclose(H, np.diag(6 * x.astype(np.float64)), rtol=1e-6)
