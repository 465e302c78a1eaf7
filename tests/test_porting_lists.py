"""Lists grown with append in a loop (issue 29 item 8): refused at the list's line with
the preallocated array to write instead, and that rewrite differentiates."""

import numpy as np
import pytest
from gradcheck import check_grad

import jitgrad as jg


def kalman_list(ys, q, r):
    x = 0.0
    p = 1.0
    xs = [x]
    for k in range(len(ys)):
        p = p + q
        g = p / (p + r)
        x = x + g * (ys[k] - x)
        p = (1.0 - g) * p
        xs.append(x)
    s = 0.0
    for k in range(len(xs)):
        s += xs[k] * xs[k]
    return s


def kalman_array(ys, q, r):  # the hint applied
    x = 0.0
    p = 1.0
    xs = np.zeros(len(ys) + 1); xs[0] = x  # noqa: E702
    for k in range(len(ys)):
        p = p + q
        g = p / (p + r)
        x = x + g * (ys[k] - x)
        p = (1.0 - g) * p
        xs[k + 1] = x
    s = 0.0
    for k in range(len(xs)):
        s += xs[k] * xs[k]
    return s


def states_list(ys, a):
    x = ys[0] * 0.5
    xs = []
    for k in range(1, ys.shape[0]):
        x = a * x + np.sin(ys[k])
        xs.append(x)
    return np.sum(np.array(xs) ** 2)


def states_array(ys, a):  # the hint applied
    x = ys[0] * 0.5
    xs = np.zeros((ys.shape[0] - 1,) + x.shape)
    for k in range(1, ys.shape[0]):
        x = a * x + np.sin(ys[k])
        xs[k - 1] = x
    return np.sum(xs ** 2)


@pytest.mark.parametrize("f, args, expected", [
    (kalman_list, (np.array([1.0, 2.0, 0.5]), 0.3, 0.5),
     ["xs = [x]", "'xs = np.zeros(len(ys) + 1); xs[0] = x' before the loop",
      "'xs[k + 1] = x' in place of 'xs.append(x)'"]),
    (states_list, (np.ones((3, 2)), 0.7),
     ["xs = []", "'xs = np.zeros((ys.shape[0] - 1,) + x.shape)' before the loop",
      "'xs[k - 1] = x' in place of 'xs.append(x)'", "'np.array(xs)' is 'xs'"]),
])
def test_list_grown_in_a_loop_is_refused_with_the_array_to_write(f, args, expected):
    with pytest.raises(jg.TransformError) as e:
        jg.differentiate(f, wrt=0, jit=False).value_and_grad(*args)
    text = str(e.value)
    assert "grows with append" in text
    for part in expected:
        assert part in text, (part, text)


@pytest.mark.parametrize("jit", [True, False])
def test_the_hinted_rewrite_differentiates(jit):
    ys = np.array([1.0, 2.0, 0.5, -0.3])
    check_grad(kalman_array, (ys, 0.3, 0.5), wrt=(0, 1, 2), jit=jit)
    Y = np.random.default_rng(5).random((4, 3))
    check_grad(states_array, (Y, 0.7), wrt=(0, 1), jit=jit)
