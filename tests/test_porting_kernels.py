"""Numba's kernel decorators called from differentiated code (issue 29 item 5): a
``@numba.vectorize`` ufunc's scalar function is inlined, a ``@numba.stencil`` call becomes
a loop over the interior with the kernel inlined (border ``cval``, or ``out`` left as is)."""

import math

import numba
import numpy as np
import pytest
from gradcheck import check_grad

import jitgrad as jg


@numba.vectorize
def softplus(x, b):
    if x > 2.0:  # (log1p(exp(x)) for large x, in the real thing)
        return x * b
    return math.log1p(math.exp(x)) * b


@numba.vectorize(["float64(float64)"])
def cube(x):
    return x * x * x


@numba.stencil
def laplacian(a):
    return a[-1, 0] + a[1, 0] + a[0, -1] + a[0, 1] - 4.0 * a[0, 0]


@numba.stencil(cval=1.0)
def smooth(a, w):
    return w * a[-1] + (1.0 - 2.0 * w) * a[0] + w * a[2]


def loss_elementwise(x, b):
    s = 0.0
    for i in range(len(x)):
        s += softplus(x[i], b) * cube(x[i])
    return s


def loss_on_array(x, b):
    return np.sum(softplus(x, b))


def energy(u, c):
    v = laplacian(u * c)
    return np.sum(v * v)


def energy_out(u, c):
    w = u.copy()
    laplacian(u * c, out=w)
    return np.sum(w * w) + np.sum(smooth(u[0], c) ** 2)


@pytest.mark.parametrize("jit", [True, False])
def test_vectorize_ufunc_on_numbers(jit):
    x = np.array([0.3, -1.2, 2.5, 1.7, 0.9])  # 2.5 takes the scalar function's branch
    check_grad(loss_elementwise, (x, 0.7), wrt=(0, 1), jit=jit)


def test_vectorize_ufunc_on_an_array_is_refused_with_the_loop_to_write():
    with pytest.raises(jg.TransformError, match="'softplus' is called on an array") as e:
        jg.differentiate(loss_on_array, wrt=0, jit=False).value_and_grad(np.ones(3), 0.5)
    assert "return np.sum(softplus(x, b))" in str(e.value)
    assert "y[i] = softplus(x[i], ...)" in str(e.value)


@pytest.fixture(scope="module")
def compiled():
    """The energies compiled by Numba, for their central differences: a stencil called
    from Python compiles again on every call (0.2 s), one called from njit code once."""
    return {f: numba.njit(f) for f in (energy, energy_out)}


@pytest.mark.parametrize("jit", [True, False])
def test_stencil_with_and_without_out(jit, compiled):
    u = np.random.default_rng(6).random((4, 5))
    check_grad(energy, (u, 1.3), wrt=(0, 1), jit=jit, primal=compiled[energy])
    check_grad(energy_out, (u, 0.3), wrt=(0, 1), jit=jit, primal=compiled[energy_out])


@pytest.mark.parametrize("decorator, call", [("@numba.vectorize", "g(x)"),
                                             ("@numba.stencil", "g(x)")])
def test_the_cache_digest_reads_the_kernel(tmp_path, decorator, call):
    from gradcheck import function_from_source

    from jitgrad.transpiler.backend.cache import function_digest

    src = (f"import numba\n\n\n{decorator}\ndef g(x):\n    return x[0] * {{k}}\n\n\n"
           f"def f(x):\n    return {call}\n")
    if "vectorize" in decorator:
        src = src.replace("x[0]", "x")
    name = decorator[7:]
    d1 = function_digest(function_from_source(tmp_path, f"kd_{name}_1", src.format(k=2.0)))
    d2 = function_digest(function_from_source(tmp_path, f"kd_{name}_2", src.format(k=3.0)))
    assert d1 != d2
