"""back(): accumulation, reference counting, freeing, failure safety, deep graphs."""

import numpy as np
import pytest

import jitgrad.runtime as rt
from jitgrad.errors import JitgradError, RuleError
from jitgrad.runtime.tracked import record


def test_back_accumulates_into_leaves():
    W = rt.param(np.array([[1.0, 2.0], [3.0, 4.0]]))
    x = np.array([1.0, -1.0])
    rt.back((W @ x).sum())
    np.testing.assert_allclose(W.grad, [[1, -1], [1, -1]])
    rt.back((W @ x).sum())  # a new graph: accumulates
    np.testing.assert_allclose(W.grad, [[2, -2], [2, -2]])
    rt.zero_grad(W)
    np.testing.assert_array_equal(W.grad, 0)


def test_shared_subexpression_reference_counts():
    # y = a*b used three times: its pullback must run once, with the summed gradient
    calls = []
    a, b = rt.param(2.0), rt.param(3.0)
    y = a * b
    y = record(y.data, lambda dy: (calls.append(dy) or dy,), (y,), "spy")
    z = y * y + np.sin(y)
    rt.back(z)
    assert len(calls) == 1
    g = 2 * 6.0 + np.cos(6.0)
    assert calls[0] == pytest.approx(g)
    assert a.grad == pytest.approx(g * 3) and b.grad == pytest.approx(g * 2)


def test_same_value_twice_in_one_call():
    x = rt.param(np.array([1.0, 2.0]))
    rt.back((x * x).sum())
    np.testing.assert_allclose(x.grad, [2.0, 4.0])


def test_non_scalar_needs_dy():
    W = rt.param(np.ones(3))
    y = W * 2
    with pytest.raises(rt.BackpropError, match="pass dy"):
        rt.back(y)
    with pytest.raises(rt.BackpropError, match="shape"):
        rt.back(y, np.ones(2))
    rt.back(y, np.array([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(W.grad, [2, 4, 6])


def test_back_of_untracked_is_type_error():
    with pytest.raises(TypeError, match="tracked"):
        rt.back(np.ones(2))


def test_back_of_a_leaf():
    w = rt.param(np.ones(2))
    rt.back(w, np.array([1.0, 2.0]))
    rt.back(w, np.array([1.0, 2.0]))
    np.testing.assert_array_equal(w.grad, [2, 4])


def test_second_back_over_freed_graph_raises():
    w = rt.param(2.0)
    y = w * w
    rt.back(y)
    assert w.grad == 4.0
    with pytest.raises(rt.BackpropError, match="already consumed") as e:
        rt.back(y)
    assert isinstance(e.value, JitgradError)
    assert w.grad == 4.0
    # a graph that shares a freed part is refused before anything changes
    w2 = rt.param(1.0)
    h = w2 * 3.0
    z1, z2 = h * 2.0, h * 5.0
    rt.back(z1)
    with pytest.raises(rt.BackpropError):
        rt.back(z2)
    assert w2.grad == 6.0


def test_exception_in_pullback_leaves_no_broken_state():
    w = rt.param(np.array([1.0, 2.0]))
    armed = [True]

    def flaky(dy):
        if armed[0]:
            raise ValueError("boom")
        return dy

    y = (rt.hook(flaky, w * 3.0) + w).sum()
    with pytest.raises(ValueError, match="boom"):
        rt.back(y)
    np.testing.assert_array_equal(w.grad, [0.0, 0.0])  # nothing half-accumulated
    armed[0] = False
    rt.back(y)  # the graph was not freed: the retry works
    np.testing.assert_allclose(w.grad, [4.0, 4.0])


def test_wrong_gradient_shape_is_rule_error():
    w = rt.param(np.ones(3))
    y = record(w.data * 1.0, lambda dy: (np.ones(2),), (w,), "badrule")
    with pytest.raises(RuleError, match="badrule.*shape"):
        rt.back(y, np.ones(3))
    y = record(w.data * 1.0, lambda dy: (), (w,), "short")
    with pytest.raises(RuleError, match="short"):
        rt.back(y, np.ones(3))


def test_deep_chain_100k():
    w = rt.param(1.0)
    y = w
    for _ in range(100_000):
        y = y * 1.0
    rt.back(y)
    assert w.grad == 1.0
    del y  # dropping a long freed graph must not blow the C stack either


def test_deep_chain_unfreed_drop():
    w = rt.param(np.ones(2))
    y = w
    for _ in range(100_000):
        y = y + 1.0
    del y  # deallocating a 100k-node live (unfreed) chain is fine


def test_unreached_leaf_keeps_zero_grad():
    a, b = rt.param(1.0), rt.param(2.0)
    rt.back(a * 3.0)
    assert a.grad == 3.0 and b.grad == 0.0


def test_intermediate_without_gradient_still_releases_parents():
    # floordiv sends no gradient; the engine must still walk past it
    a = rt.param(5.0)
    y = (a // 2.0) * a + a
    rt.back(y)
    assert a.grad == pytest.approx(2.0 + 1.0)
