"""hook, checkpoint and nobacksies."""

import random

import numpy as np
import pytest

import jitgrad.runtime as rt

# --- hook -------------------------------------------------------------------------


def test_hook_on_array_transforms_incoming_gradient():
    x = rt.param(np.array([1.0, 2.0, 3.0]))
    seen = []

    def spy(g):
        seen.append(g.copy())
        return -2.0 * g

    y = rt.hook(spy, x)
    np.testing.assert_array_equal(rt.data(y), x.data)
    rt.back((y * np.array([1.0, 10.0, 100.0])).sum())
    np.testing.assert_array_equal(seen[0], [1.0, 10.0, 100.0])
    np.testing.assert_array_equal(x.grad, [-2.0, -20.0, -200.0])


def test_hook_affects_only_that_use_of_a_shared_value():
    w = rt.param(np.array([1.0, 2.0]))
    h = w * 3.0  # shared intermediate
    loss = (rt.hook(lambda g: 0.0 * g, h) + h * 2.0).sum()
    rt.back(loss)
    np.testing.assert_array_equal(w.grad, [6.0, 6.0])  # only the unhooked use counts


def test_hook_under_params():
    W = rt.param(np.ones((2, 2)))
    b = rt.param(np.zeros(2))
    x = np.array([1.0, 2.0])
    ps = rt.Params([W, b])
    gs = rt.gradient(lambda: (rt.hook(lambda g: 10 * g, W) @ x + b).sum(), ps)
    np.testing.assert_array_equal(gs[W], 10 * np.array([[1.0, 2.0], [1.0, 2.0]]))
    np.testing.assert_array_equal(gs[b], [1.0, 1.0])


def test_hook_on_untracked_is_identity_and_shape_is_checked():
    x = np.ones(2)
    assert rt.hook(lambda g: g, x) is x
    w = rt.param(np.ones(2))
    with pytest.raises(rt.tracked.RuleError, match="hook.*shape"):
        rt.back(rt.hook(lambda g: g.sum(), w).sum())


# --- checkpoint -------------------------------------------------------------------


def test_checkpoint_runs_once_forward_and_once_in_reverse():
    calls = []

    def block(a, b):
        calls.append(1)
        return np.tanh(a * b).sum()

    a = rt.param(np.array([0.1, 0.2, 0.3]))
    b = rt.param(np.array([1.0, -1.0, 2.0]))
    y = rt.checkpoint(block, a, b)
    assert len(calls) == 1 and rt.istracked(y)
    assert y.node.parents == (a.node, b.node)  # intermediates were not recorded
    rt.back(y)
    assert len(calls) == 2
    t = 1 - np.tanh(a.data * b.data) ** 2
    np.testing.assert_allclose(a.grad, t * b.data)
    np.testing.assert_allclose(b.grad, t * a.data)


def test_checkpoint_matches_plain_gradient(assert_fd):
    f = lambda x, y: (rt.checkpoint(lambda u, v: np.sin(u) * v, x, y) ** 2).sum()
    assert_fd(f, np.array([0.3, -1.2]), np.array([2.0, 0.5]))


def test_checkpoint_delivers_gradients_to_closure_captured_params():
    W = rt.param(np.array([[1.0, 2.0], [3.0, 4.0]]))
    b = rt.param(np.array([0.5, 0.5]))
    h = b * 2.0  # a captured non-leaf too
    layer = lambda x: np.tanh(W @ x + h)
    x = rt.param(np.array([0.1, -0.2]))
    y = (rt.checkpoint(layer, x) ** 2).sum()
    rt.back(y)
    z = W.data @ x.data + 2 * b.data
    dz = 2 * np.tanh(z) * (1 - np.tanh(z) ** 2)
    np.testing.assert_allclose(W.grad, np.outer(dz, x.data))
    np.testing.assert_allclose(b.grad, 2 * dz)
    np.testing.assert_allclose(x.grad, W.data.T @ dz)
    # the same through gradient(.., Params): captured params get their share
    h = b * 2.0  # back() consumed the old h's graph; the closure sees the new one
    ps = rt.Params([W, b])
    gs = rt.gradient(lambda: (rt.checkpoint(layer, np.array([0.1, -0.2])) ** 2).sum(), ps)
    np.testing.assert_allclose(gs[W], np.outer(dz, x.data))
    np.testing.assert_allclose(gs[b], 2 * dz)


def test_checkpoint_replays_numpy_and_python_random():
    w = rt.param(np.ones(4))
    draws = []

    def noisy(v):
        noise = np.random.normal(size=4) + random.random()
        draws.append(noise)
        return (v * noise).sum()

    np.random.seed(1)
    random.seed(1)
    y = rt.checkpoint(noisy, w)
    after_forward = np.random.get_state()[1].copy()
    rt.back(y)
    np.testing.assert_array_equal(draws[0], draws[1])
    np.testing.assert_allclose(w.grad, draws[0])
    # the user's random stream is where the forward pass left it
    np.testing.assert_array_equal(np.random.get_state()[1], after_forward)


def test_nested_checkpoint_and_repeated_pullback():
    counts = {"inner": 0, "outer": 0}

    def inner(u):
        counts["inner"] += 1
        return np.exp(u) * 2.0

    def outer(u):
        counts["outer"] += 1
        return rt.checkpoint(inner, u * 3.0).sum()

    y, pullback = rt.forward(lambda u: rt.checkpoint(outer, u), np.array([0.1, 0.2]))
    assert counts == {"inner": 1, "outer": 1}
    for _ in range(2):
        (g,) = pullback()
        np.testing.assert_allclose(g, 6.0 * np.exp(3.0 * np.array([0.1, 0.2])))
    # each outer recompute runs inner once, then inner's own recompute once more
    assert counts == {"inner": 5, "outer": 3}


def test_checkpoint_without_tracked_inputs_is_plain():
    assert rt.checkpoint(lambda a: a * 2.0, 3.0) == 6.0


def test_checkpoint_nondeterministic_read_is_refused():
    a, b = rt.param(1.0), rt.param(2.0)
    state = {"first": True}

    def f(x):
        if state["first"]:
            state["first"] = False
            return x * 2.0
        return x * b

    y = rt.checkpoint(f, a)
    with pytest.raises(rt.BackpropError, match="deterministic"):
        rt.back(y)
    assert a.grad == 0.0 and b.grad == 0.0


# --- nobacksies ---------------------------------------------------------------------


def test_nobacksies():
    x = rt.param(np.array([1.0, 2.0]))
    y = rt.nobacksies("second derivatives are not defined here", x * 2.0)
    np.testing.assert_array_equal(rt.data(y), [2.0, 4.0])
    with pytest.raises(rt.BackpropError, match="second derivatives"):
        rt.back(y.sum())
    np.testing.assert_array_equal(x.grad, [0.0, 0.0])
    a, b = rt.nobacksies("no", (x, 3.0))
    assert rt.istracked(a) and b == 3.0
    assert rt.nobacksies("no", 1.0) == 1.0
