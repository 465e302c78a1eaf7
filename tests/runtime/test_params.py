"""Params, Grads, gradient, forward, update, zero_grad."""

import numpy as np
import pytest

import jitgrad.runtime as rt


def test_params_ordered_and_deduplicated_by_identity():
    a, b = rt.param(np.ones(2)), rt.param(np.ones(2))  # equal values, distinct params
    ps = rt.Params([a, b, a, [b, a]])
    assert len(ps) == 2 and list(ps) == [a, b] and ps[0] is a
    assert a in ps and rt.param(np.ones(2)) not in ps
    ps.add(rt.Params([b]))
    assert len(ps) == 2
    with pytest.raises(TypeError, match="jg.param"):
        rt.Params([np.ones(2)])


def test_gradient_with_params_keys_by_object_and_zeros_unused():
    W = rt.param(np.array([[1.0, 2.0], [3.0, 4.0]]))
    b = rt.param(np.array([0.5, -0.5]))
    unused = rt.param(np.ones(3))
    x = np.array([1.0, 2.0])
    gs = rt.gradient(lambda: ((W @ x + b) ** 2).sum(), rt.Params([W, b, unused]))
    r = W.data @ x + b.data
    np.testing.assert_allclose(gs[b], 2 * r)
    np.testing.assert_allclose(gs[W], 2 * np.outer(r, x))
    np.testing.assert_array_equal(gs[unused], np.zeros(3))
    assert list(gs) == [W, b, unused] and len(gs) == 3 and W in gs
    with pytest.raises(KeyError, match="not one of the Params"):
        gs[rt.param(1.0)]
    # gradient never touches .grad
    np.testing.assert_array_equal(W.grad, 0)


def test_gradient_with_params_of_an_intermediate():
    w = rt.param(2.0)
    h = w * 3.0
    gs = rt.gradient(lambda: h * h, rt.Params([h, w]))
    assert gs[h] == pytest.approx(12.0) and gs[w] == pytest.approx(36.0)


def test_gradient_plain_inputs_returns_tuple_and_leaves_inputs_alone():
    x = np.array([1.0, 2.0, 3.0])
    y = 2.0
    gx, gy = rt.gradient(lambda a, b: (a * b).sum() + b, x, y)
    np.testing.assert_allclose(gx, [2.0, 2.0, 2.0])
    assert gy == pytest.approx(7.0)
    np.testing.assert_array_equal(x, [1.0, 2.0, 3.0])
    (g,) = rt.gradient(lambda a: np.sin(a).sum(), x)
    np.testing.assert_allclose(g, np.cos(x))
    (gi,) = rt.gradient(lambda a: a * a, 3)
    assert gi == 6.0
    g0, g1 = rt.gradient(lambda a, b: a * 2.0, 1.0, np.ones(2))
    assert g0 == 2.0
    np.testing.assert_array_equal(g1, [0.0, 0.0])


def test_gradient_needs_finite_scalar_loss():
    with pytest.raises(rt.BackpropError, match="scalar loss"):
        rt.gradient(lambda a: a * 2, np.ones(3))
    with np.errstate(all="ignore"):
        with pytest.raises(rt.BackpropError, match="nan"):
            rt.gradient(lambda a: np.log(a - 5.0), 1.0)
        with pytest.raises(rt.BackpropError, match="inf"):
            rt.gradient(lambda a: np.exp(a * 1000.0), 1.0)
    with pytest.raises(TypeError):
        rt.gradient(lambda: 1.0)


def test_forward_pullback_is_reusable():
    y, pullback = rt.forward(lambda a, b: a * b, np.array([1.0, 2.0]), 3.0)
    np.testing.assert_array_equal(y, [3.0, 6.0])
    assert not rt.istracked(y)
    for _ in range(3):
        ga, gb = pullback(np.array([1.0, 10.0]))
        np.testing.assert_array_equal(ga, [3.0, 30.0])
        assert gb == pytest.approx(21.0)
    with pytest.raises(rt.BackpropError, match="shape"):
        pullback(np.ones(3))


def test_forward_with_params():
    w = rt.param(np.array([1.0, -2.0]))
    y, pullback = rt.forward(lambda: (w * w).sum(), rt.Params([w]))
    assert y == 5.0
    np.testing.assert_array_equal(pullback()[w], [2.0, -4.0])
    np.testing.assert_array_equal(pullback(2.0)[w], [4.0, -8.0])


def test_update_arithmetic_and_zeroes_grad():
    W = rt.param(np.array([1.0, 2.0]))
    rt.back((W * W).sum())
    np.testing.assert_array_equal(W.grad, [2.0, 4.0])
    data_before = W.data
    out = rt.update(W, -0.5 * W.grad)
    assert out is W and W.data is data_before  # in place, like Tracker's update!
    np.testing.assert_array_equal(W.data, [0.0, 0.0])
    np.testing.assert_array_equal(W.grad, [0.0, 0.0])
    s = rt.param(1.5)
    rt.back(s * 4.0)
    rt.update(s, -0.25 * s.grad)
    assert s.data == 0.5 and isinstance(s.data, float) and s.grad == 0.0
    rt.update(W, rt.param(np.array([1.0, 1.0])))  # tracked delta: its data is used
    np.testing.assert_array_equal(W.data, [1.0, 1.0])
    with pytest.raises(ValueError, match="shape"):
        rt.update(W, np.ones(3))
    with pytest.raises(TypeError, match="leaf"):
        rt.update(W * 2, 1.0)
    with pytest.raises(TypeError, match="leaf"):
        rt.update(np.ones(2), 1.0)


def test_zero_grad_forms():
    a, b = rt.param(np.ones(2)), rt.param(3.0)
    rt.back((a * b).sum())
    assert b.grad == 2.0
    rt.zero_grad(rt.Params([a, b]))
    np.testing.assert_array_equal(a.grad, 0)
    assert b.grad == 0.0
    rt.back((a * b).sum())
    rt.zero_grad([a])
    rt.zero_grad(b)
    assert b.grad == 0.0 and not a.grad.any()


def test_sgd_loop_with_params_converges():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 3))
    w_true = np.array([1.0, -2.0, 0.5])
    yv = X @ w_true
    w = rt.param(np.zeros(3))
    ps = rt.Params([w])
    for _ in range(200):
        gs = rt.gradient(lambda: ((X @ w - yv) ** 2).mean(), ps)
        rt.update(w, -0.1 * gs[w])
    np.testing.assert_allclose(w.data, w_true, atol=1e-3)
