"""Tracked values: param, NumPy interop, immutability, missing rules."""

import math

import numpy as np
import pytest

import jitgrad.runtime as rt
from jitgrad.errors import RuleError


def test_param_copies_and_floats():
    x = np.arange(3)
    p = rt.param(x)
    assert p.data.dtype == np.float64 and p.data is not x
    np.testing.assert_array_equal(p.grad, np.zeros(3))
    x[0] = 99
    assert p.data[0] == 0
    s = rt.param(3)
    assert isinstance(s.data, float) and s.data == 3.0 and s.grad == 0.0
    assert rt.param(np.float32(2)).data.dtype == np.float32
    assert rt.param(np.ones(2, np.float32)).data.dtype == np.float32


def test_param_rejects_non_numbers():
    with pytest.raises(TypeError, match="numbers"):
        rt.param("abc")


def test_param_of_tracked_is_recorded_identity():
    w = rt.param(2.0)
    v = rt.param(w)
    assert rt.istracked(v) and not rt.isleaf(v)
    rt.back(v * 3.0)
    assert w.grad == 3.0


def test_data_istracked_isleaf():
    w = rt.param(np.ones(2))
    y = w * 2
    assert rt.istracked(w) and rt.istracked(y) and not rt.istracked(np.ones(2))
    assert rt.isleaf(w) and not rt.isleaf(y) and rt.isleaf(1.0)
    np.testing.assert_array_equal(rt.data(y), [2.0, 2.0])
    assert rt.data(5) == 5
    assert rt.data((w, 1))[1] == 1
    assert y.grad is None


def test_numpy_interop_records_nodes():
    W = rt.param(np.arange(6.0).reshape(2, 3))
    x = np.array([1.0, 2.0, 3.0])
    outs = [np.sin(W), W @ x, W.sum(), W[1:3], W.T, W + x, x + W, x * W, 2.0 - W,
            np.float64(2.0) * W, np.maximum(W, 1.0), W.mean(axis=0), np.exp(W) / (1 + W),
            -W, abs(W), W ** 2, np.sum(W, axis=1), W.reshape(3, 2), W.ravel()]
    for y in outs:
        assert rt.istracked(y), y
        assert not rt.isleaf(y)
    np.testing.assert_allclose(rt.data(x @ W.T), rt.data(W) @ x)
    assert rt.istracked(x @ W.T)


def test_iteration_and_len():
    W = rt.param(np.arange(6.0).reshape(2, 3))
    rows = list(W)
    assert len(W) == 2 and len(rows) == 2 and all(rt.istracked(r) for r in rows)
    rt.back(rows[1].sum())
    np.testing.assert_array_equal(W.grad, [[0, 0, 0], [1, 1, 1]])


def test_comparisons_are_untracked():
    W = rt.param(np.array([-1.0, 2.0]))
    m = W > 0
    assert not rt.istracked(m) and m.tolist() == [False, True]
    assert not rt.istracked(np.greater(W, 0))
    assert bool(rt.param(1.0) < 2.0)
    assert np.argmax(W) == 1


def test_writes_raise_type_error():
    W = rt.param(np.zeros(3))
    with pytest.raises(TypeError, match="immutable"):
        W[0] = 1.0
    with pytest.raises(TypeError, match="out="):
        np.add(W, 1.0, out=np.zeros(3))


def test_missing_rule_names_the_function():
    W = rt.param(np.ones(3))
    with pytest.raises(RuleError, match="numpy.nextafter"):
        np.nextafter(W, 2.0)
    with pytest.raises(RuleError, match="numpy.add.reduce"):
        np.add.reduce(W)
    with pytest.raises(RuleError, match="rot90"):
        np.rot90(rt.param(np.ones((2, 2))))


def test_silent_detach_is_refused():
    w = rt.param(0.5)
    with pytest.raises(TypeError, match="drop its gradient"):
        math.sin(w)
    with pytest.raises(TypeError, match="jg.data"):
        np.asarray(w)
    assert w.item() == 0.5 and f"{w:.2f}" == "0.50"


def test_tracked_keyword_argument_is_refused():
    w = rt.param(np.ones(3))
    with pytest.raises(TypeError, match="positionally"):
        np.clip(w, 0.0, a_max=rt.param(1.0))


def test_params_hash_by_identity():
    a, b = rt.param(np.ones(2)), rt.param(np.ones(2))
    d = {a: 1, b: 2}
    assert d[a] == 1 and d[b] == 2


def test_list_arguments_get_gradients():
    a, b = rt.param(np.ones(2)), rt.param(np.full(3, 2.0))
    y = np.concatenate([a, np.zeros(1), b])
    assert rt.istracked(y) and y.shape == (6,)
    rt.back((y * np.arange(6.0)).sum())
    np.testing.assert_array_equal(a.grad, [0, 1])
    np.testing.assert_array_equal(b.grad, [3, 4, 5])
