"""Arguments that share memory (issue 33, item 5).

The generated code writes copies of the arguments it writes in place, so ``f(x, x)`` with
``f`` writing one of them cannot be run as the user's function runs it: every entry point
refuses it with a ValueError naming both arguments (views too).  Where nothing is written,
aliasing is fine: each argument gets its own partial derivative, and their sum is the
derivative of ``x -> f(x, x)``.  Every test runs with ``jit=True`` and ``jit=False``.
"""

import numpy as np
import pytest
from gradcheck import numeric_grad

import jitgrad as jg


def writes_x(x, y):
    x[0] = x[0] * 2.0
    return np.sum(x * y) + y[0] * y[1]


def fill(a, c):
    for i in range(len(a)):
        a[i] = c * a[i]


def helper_writes_y(x, y):
    fill(y, 3.0)
    return np.sum(np.sin(x) * y)


def reads_only(x, y):
    return np.sum(x * y * y) + np.sin(x[0]) * y[1] + np.sum(np.exp(0.1 * x))


X0 = np.array([0.5, 1.0, 1.5])
V = np.array([0.3, -0.7, 1.1])


def _entry_points(f, jit):
    """Every entry point, called on ``(x, y)``."""
    d = jg.differentiate(f, wrt=(0, 1), jit=jit)
    return {
        "grad": lambda x, y: jg.grad(f, wrt=(0, 1), jit=jit)(x, y),
        "value_and_grad": lambda x, y: jg.value_and_grad(f, wrt=1, jit=jit)(x, y),
        "vjp": lambda x, y: jg.vjp(f, x, y, jit=jit),
        "jvp": lambda x, y: jg.jvp(f, (x, y), V, jit=jit),
        "hvp": lambda x, y: jg.hvp(f, (x, y), V, jit=jit),
        "jacfwd": lambda x, y: jg.jacfwd(f, wrt=1, jit=jit)(x, y),
        "jacrev": lambda x, y: jg.jacrev(f, jit=jit)(x, y),
        "hessian": lambda x, y: jg.hessian(f, jit=jit)(x, y),
        "d.grad": d.grad,
        "d.value_and_grad": d.value_and_grad,
        "d.vjp": d.vjp,
        "d.jvp": lambda x, y: d.jvp((x, y), (V, V)),
    }


@pytest.mark.parametrize("f, written, other", [(writes_x, "x", "y"),
                                               (helper_writes_y, "y", "x")])
def test_shared_written_argument_is_refused_everywhere(f, written, other, jit):
    for what, call in _entry_points(f, jit).items():
        for x, y in ((X0.copy(),) * 2, _overlapping_views()):
            before = (x.copy(), y.copy())
            with pytest.raises(ValueError, match=rf"arguments 0 \('x'\) and 1 \('y'\) of "
                               rf"{f.__name__} share memory and {f.__name__} writes "
                               rf"'{written}' in place.*{other}\.copy\(\)") as info:
                call(x, y)
            assert "share memory" in str(info.value), what
            np.testing.assert_array_equal(x, before[0], err_msg=what)
            np.testing.assert_array_equal(y, before[1], err_msg=what)


def _overlapping_views():
    base = np.array([0.5, 1.0, 1.5, 2.0])
    return base[:3], base[1:]


def test_the_issue_repro_is_refused_not_wrong(jit):
    """value_and_grad gave 2.05 where f gave 3.55: now a clear error, never a value."""
    def f(x, y):
        y[0] = 2.0 * x[0]
        return np.sum(x * y)

    x = X0.copy()
    assert f(x.copy(), x.copy()) != f(x, x)  # (aliasing changes the function's value)
    with pytest.raises(ValueError, match="share memory"):
        jg.value_and_grad(f, wrt=(0, 1), jit=jit)(x, x)


def test_disjoint_views_of_one_array_are_fine(jit):
    """Views of one buffer that do not overlap may be written: value and gradient right."""
    base = np.array([0.5, 1.0, 1.5, 2.0, 2.5, 3.0])
    x, y = base[::2], base[1::2]
    before = base.copy()
    value, (gx, gy) = jg.value_and_grad(writes_x, wrt=(0, 1), jit=jit)(x, y)
    np.testing.assert_array_equal(base, before)
    assert np.isclose(value, writes_x(x.copy(), y.copy()), rtol=1e-12)
    np.testing.assert_allclose(gx, numeric_grad(writes_x, (x, y), 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gy, numeric_grad(writes_x, (x, y), 1), rtol=1e-6, atol=1e-8)


def _partials(x):
    """Central differences of ``reads_only`` w.r.t. each argument at ``(x, x)``."""
    return (numeric_grad(reads_only, (x, x), 0), numeric_grad(reads_only, (x, x), 1))


def test_read_only_aliasing_gives_each_partial(jit):
    x = X0.copy()
    d = jg.differentiate(reads_only, wrt=(0, 1), jit=jit)
    want = reads_only(x, x)
    gx, gy = _partials(x)
    value, (ax, ay) = d.value_and_grad(x, x)
    assert np.isclose(value, want, rtol=1e-12)
    np.testing.assert_allclose(ax, gx, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(ay, gy, rtol=1e-6, atol=1e-8)
    total = numeric_grad(lambda z: reads_only(z, z), (x,), 0)  # d/dx f(x, x)
    np.testing.assert_allclose(ax + ay, total, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(jg.grad(reads_only, wrt=1, jit=jit)(x, x[:]), gy,
                               rtol=1e-6, atol=1e-8)
    value, pb = d.vjp(x, x)
    assert np.isclose(value, want, rtol=1e-12)
    np.testing.assert_allclose(pb(2.0)[0], 2 * gx, rtol=1e-6, atol=1e-8)
    value, t = d.jvp((x, x), (V, V))
    assert np.isclose(value, want, rtol=1e-12)
    assert np.isclose(t, np.dot(gx + gy, V), rtol=1e-6)
    np.testing.assert_array_equal(x, X0)


def test_read_only_aliasing_second_order(jit):
    """hvp and hessian at ``(x, x)``: central differences of the (checked) gradient."""
    x = X0.copy()
    h = jg.hvp(reads_only, (x, x), (V, V), wrt=(0, 1), jit=jit)
    eps = 1e-5

    def grads(z, w):
        return np.concatenate(jg.grad(reads_only, wrt=(0, 1), jit=jit)(z, w))

    fd = (grads(x + eps * V, x + eps * V) - grads(x - eps * V, x - eps * V)) / (2 * eps)
    np.testing.assert_allclose(np.concatenate(h), fd, rtol=1e-6, atol=1e-7)
    hxx = jg.hessian(reads_only, jit=jit)(x, x)
    cols = [(jg.grad(reads_only, jit=jit)(x + eps * e, x)
             - jg.grad(reads_only, jit=jit)(x - eps * e, x)) / (2 * eps) for e in np.eye(3)]
    np.testing.assert_allclose(hxx, np.stack(cols, axis=-1), rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(x, X0)
