"""Element loops (``backend/elements.py``): chains of whole-array statements and their
adjoints run, under ``jit=True``, as one loop over the elements.  Each case checks the
value and every gradient element against central differences in both jit modes, and
that the fused form is (or, where an operand is overwritten in between, is not) emitted."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad, numeric_grad

import jitgrad as jg

FUSED = "one loop over the elements"


def scaled_chain(x, a):
    """A scalar broadcast into the chain, a sum at its end."""
    return np.sum(np.tanh(a * x + 0.5) * np.cos(x) - a)


def matrix_chain(A, b):
    """2-D arrays and a scalar, through sqrt and a division."""
    return np.sum(np.sqrt(A * A + b) / (1.0 + A * A))


def two_arguments(x, y):
    """Two arguments of one shape (checked at run time; else as written)."""
    u = np.exp(-x * y)
    return np.dot(u, x - y) + np.sum(np.log(1.0 + u))


def overwritten(x, c):
    """``u`` is written in place while a reversed view of it is read: not one chain."""
    u = x * 1.0
    v = u[::-1]
    w = np.sin(u) * c
    u += w
    t = v * u
    return np.sum(t * t)


def transposed_view(x):
    """The adjoint adds to ``dA`` in a loop and reads ``dB = dA.T`` after it: that read
    stays after the loop (an element read of another name of the buffer)."""
    A = np.zeros((2, 2))
    B = A.T
    B[0, 1] = x[0]
    B[1, 1] = x[1] * B[0, 1]
    return np.sum(A * A * 2.0 + A) + A[1, 0]


CASES = [
    (scaled_chain, lambda r: (r.normal(size=7), 0.7), (0, 1)),
    (matrix_chain, lambda r: (r.normal(size=(3, 4)), 0.3), (0, 1)),
    (two_arguments, lambda r: (r.normal(size=6), r.normal(size=6)), (0, 1)),
    (overwritten, lambda r: (r.normal(size=5), 0.4), (0, 1)),
    (transposed_view, lambda r: (r.normal(size=4),), (0,)),
]


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("f,make,wrt", CASES, ids=[c[0].__name__ for c in CASES])
def test_value_and_gradient(f, make, wrt, jit):
    check_grad(f, make(np.random.default_rng(3)), wrt=wrt, jit=jit)


@pytest.mark.parametrize("f,make,wrt", CASES[:3], ids=[c[0].__name__ for c in CASES[:3]])
def test_fused_form_emitted(f, make, wrt):
    """Under jit=True the forward chain and its adjoint are element loops; not without."""
    args = make(np.random.default_rng(3))
    src = jg.differentiate(f, wrt=wrt, jit=True).source(*args)
    assert src.count(FUSED) >= 2, src
    assert FUSED not in jg.differentiate(f, wrt=wrt, jit=False).source(*args)


def test_sum_is_added_in_the_loop():
    """The sum at the chain's end is an accumulator, not an array."""
    args = (np.random.default_rng(1).normal(size=5), 0.7)
    src = jg.differentiate(scaled_chain, wrt=(0, 1), jit=True).source(*args)
    assert "_sum += " in src and "= np.sum(" not in src, src


def test_broadcast_arguments_run_as_written():
    """Two arguments that broadcast (6 and 1 elements): the check fails, the statements
    as written run, value and gradient right in both modes."""
    r = np.random.default_rng(5)
    for jit in (True, False):
        check_grad(two_arguments, (r.normal(size=6), r.normal(size=1)), wrt=(0, 1), jit=jit)
    src = jg.differentiate(two_arguments, wrt=(0, 1), jit=True).source(
        r.normal(size=6), r.normal(size=6))
    assert "x.shape == y.shape" in src, src


def test_overwritten_operand_not_fused():
    """The chain through ``u += w`` and ``t = v * u`` reads ``v``, a view of ``u``: no loop
    reads ``v`` element by element."""
    args = (np.random.default_rng(2).normal(size=5), 0.4)
    src = jg.differentiate(overwritten, wrt=(0, 1), jit=True).source(*args)
    assert "v[_k" not in src, src


def row_sums(X, pts, h):
    """Arrays made in each iteration of a loop whose iterations are independent."""
    total = 0.0
    for j in range(pts.shape[0]):
        z = (pts[j] - X) / h
        total += np.log(np.sum(np.exp(-z * z) + 0.1))
    return total


@pytest.mark.parametrize("jit", [True, False])
def test_arrays_of_a_fused_iteration_are_not_taped(jit):
    """The fused iteration pushes each array on a list tape and pops it at once: the array
    is passed on (``fuse.forward_pops``), no tape is made; under jit=True its chains are
    element loops."""
    r = np.random.default_rng(4)
    args = (r.normal(size=6), np.linspace(-1.0, 1.0, 3), 0.7)
    check_grad(row_sums, args, wrt=(0, 1, 2), jit=jit)
    src = jg.differentiate(row_sums, wrt=(0, 1, 2), jit=jit).source(*args)
    assert "_tape" not in src and "(nothing is taped)" in src, src
    assert (FUSED in src) == jit, src


@pytest.mark.parametrize("jit", [True, False])
def test_hvp_through_element_loops(jit):
    """Second order differentiates the gradient code, element loops and all: its
    Hessian-vector product equals central differences of the gradient."""
    r = np.random.default_rng(6)
    x, a, v = r.normal(size=5), 0.7, r.normal(size=5)
    got = jg.hvp(scaled_chain, (x, a), (v,), wrt=0, jit=jit)
    g = jg.grad(scaled_chain, wrt=0, jit=jit)
    eps = 1e-5
    want = (g(x + eps * v, a) - g(x - eps * v, a)) / (2 * eps)
    np.testing.assert_allclose(np.asarray(got).ravel(), want, rtol=1e-5, atol=1e-7)


def written_through_view(x, c):
    """``y`` is cheap to compute again from ``A``, but ``A`` is written through its view
    ``B`` after ``y`` is made: the adjoint reads ``y`` as it was, not ``A + c`` now."""
    A = x * 2.0
    B = A[::-1]
    y = A * c + 1.0
    u = np.sin(y) * y
    B[0] = 5.0 * c
    return np.sum(u * A + y)


@pytest.mark.parametrize("jit", [True, False])
def test_array_written_through_a_view_is_not_computed_again(jit):
    check_grad(written_through_view, (np.random.default_rng(8).normal(size=5), 0.6),
               wrt=(0, 1), jit=jit)


def cube_sum(x):
    return np.sum(x * x * x)


_d_cube = jg.differentiate(cube_sum, jit=False)


def nested_method(x):
    """The inlined gradient code of ``_d_cube.grad`` adds to its adjoint ``dx = dx + t``
    (the ``dx`` bound before): the element loop reads the old ``dx``, not the buffer it
    writes (a nan value before)."""
    y = 0.0
    y = y + np.sum(np.sin(_d_cube.grad(x)))
    return y


@pytest.mark.parametrize("jit", [True, False])
def test_nested_gradient_method_reads_the_adjoint_bound_before(jit):
    check_grad(nested_method, (np.random.default_rng(9).normal(size=4),), wrt=(0,), jit=jit)


def mixed_precision(x, c):
    """Float32 and float64 arrays in one chain (NumPy makes float64 of them)."""
    u = np.exp(x * 0.5) * c
    v = np.sin(u) * x
    return np.sum(u * v) + v[0]


def narrowed(x):
    """Float64 arguments, a float32 array made in the code."""
    y = np.zeros(x.shape[0], dtype=np.float32) * 1.0
    y[:] = x
    u = np.tanh(y * 0.5) * y
    w = u * u + y
    return np.sum(w) + w[1]


PRECISIONS = {"f32": (np.float32, np.float32), "f32-f64": (np.float32, np.float64),
              "f64-f32": (np.float64, np.float32)}


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("dtypes", list(PRECISIONS))
def test_float32_arguments(dtypes, jit):
    """Float32 arguments: no element loops (their arrays would be float64 where NumPy's
    and Numba's are float32, or the reverse); value and gradients in the arguments' dtypes
    equal float64 central differences to float32's precision."""
    r = np.random.default_rng(10)
    args = tuple(a.astype(t) for a, t in zip((r.normal(size=5), r.normal(size=5)),
                                             PRECISIONS[dtypes], strict=True))
    value, grads = jg.value_and_grad(mixed_precision, wrt=(0, 1), jit=jit)(*args)
    wide = tuple(a.astype(np.float64) for a in args)
    np.testing.assert_allclose(value, mixed_precision(*wide), rtol=1e-5)
    for w, g in enumerate(grads):
        assert g.dtype == args[w].dtype
        np.testing.assert_allclose(g, numeric_grad(mixed_precision, wide, w), rtol=2e-3,
                                   atol=2e-3)
    src = jg.differentiate(mixed_precision, wrt=(0, 1), jit=True).source(*args)
    assert FUSED not in src, src


@pytest.mark.parametrize("jit", [True, False])
def test_float32_made_in_the_code(jit):
    """A float32 array made from float64 arguments: no element loops either."""
    x = np.random.default_rng(11).normal(size=5)
    value, (g,) = jg.value_and_grad(narrowed, wrt=(0,), jit=jit)(x)
    np.testing.assert_allclose(value, narrowed(x), rtol=1e-5)
    np.testing.assert_allclose(g, numeric_grad(narrowed, (x,), 0, eps=1e-2), rtol=2e-3,
                               atol=2e-3)  # (float32 inside: a wider step)
    assert FUSED not in jg.differentiate(narrowed, jit=True).source(x)


def test_float64_arguments_still_fused():
    """The same chain with float64 arguments runs as element loops."""
    r = np.random.default_rng(10)
    src = jg.differentiate(mixed_precision, wrt=(0, 1), jit=True).source(
        r.normal(size=5), r.normal(size=5))
    assert src.count(FUSED) >= 2, src


@pytest.mark.parametrize("jit", [True, False])
def test_float64_then_float32_calls_of_one_function(jit):
    """One function called with float64, float32, then float64 arguments of the same
    kinds: the float32 call gets code without element loops, the float64 ones keep theirs;
    each value and gradient right."""
    d = jg.differentiate(mixed_precision, wrt=(0, 1), jit=jit)
    r = np.random.default_rng(12)
    wide = (r.normal(size=5), r.normal(size=5))
    for args in (wide, tuple(a.astype(np.float32) for a in wide), wide):
        value, grads = d.value_and_grad(*args)
        tol = 1e-6 if args[0].dtype == np.float64 else 2e-3
        np.testing.assert_allclose(value, mixed_precision(*wide), rtol=tol / 100)
        for w, g in enumerate(grads):
            assert g.dtype == args[w].dtype
            np.testing.assert_allclose(g, numeric_grad(mixed_precision, wide, w), rtol=tol,
                                       atol=tol)
    assert (FUSED in d.source(*wide)) == jit


def test_which_arguments_are_float64():
    """``all_float64``: arrays and NumPy scalars, in tuples and (homogeneous) lists."""
    from jitgrad.transpiler.pipeline import all_float64

    assert all_float64((np.ones(3), 1.0, 2, np.arange(3), [np.ones(2)], ()))
    assert not all_float64((np.ones(3), np.ones(3, np.float32)))
    assert not all_float64((np.float32(1.0),))
    assert not all_float64(([np.ones(2, np.float32)],))
    assert not all_float64(((1.0, np.ones(2, np.float16)),))
