"""Lists grown with append in a loop (issue 29 item 8): lists of numbers appended once per
trip and read after the loop differentiate (they become preallocated arrays); the others
are refused at their line with the preallocated array to write, which differentiates."""

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


def kalman_read_in_loop(ys, q):
    xs = [0.0]
    for k in range(len(ys)):
        xs.append(xs[-1] + q * (ys[k] - xs[-1]))
    return np.sum(np.array(xs) ** 2)


def smoothed(ys, q):
    x = ys[0]
    xs = []
    for k in range(1, len(ys)):
        x = x + q * (ys[k] - x)
        xs.append(x)
    s = 0.0
    for k in range(len(xs) - 1, 0, -1):  # a backward pass over the states, as a smoother
        s = 0.5 * s + xs[k] * xs[k - 1]
    return s + np.sum(np.array(xs)) + len(xs)


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


@pytest.mark.parametrize("jit", [True, False])
def test_list_of_numbers_appended_in_a_loop(jit):
    ys = np.array([1.0, 2.0, 0.5, -0.3])
    check_grad(kalman_list, (ys, 0.3, 0.5), wrt=(0, 1, 2), jit=jit)
    check_grad(smoothed, (ys, 0.4), wrt=(0, 1), jit=jit)


def test_list_read_while_it_grows_is_refused_with_the_array_to_write():
    with pytest.raises(jg.TransformError) as e:
        jg.differentiate(kalman_read_in_loop, wrt=0, jit=False).value_and_grad(np.ones(3), 0.3)
    text = str(e.value)
    assert "grows with append" in text and "xs = [0.0]" in text
    assert "'xs = np.zeros(len(ys) + 1); xs[0] = 0.0' before the loop" in text, text
    assert "'xs[k + 1] = xs[-1] + q * (ys[k] - xs[-1])' in place of" in text, text
    assert "inside the loop the last entry so far is 'xs[k]'" in text, text


def test_list_of_arrays_is_refused_at_the_append():
    with pytest.raises(jg.TransformError) as e:
        jg.differentiate(states_list, wrt=0, jit=False).value_and_grad(np.ones((3, 2)), 0.7)
    text = str(e.value)
    assert "'xs' holds values that are not float numbers" in text and "xs.append(x)" in text
    assert "'xs = np.zeros((n,) + x0.shape)'" in text


@pytest.mark.parametrize("jit", [True, False])
def test_the_hinted_rewrite_differentiates(jit):
    ys = np.array([1.0, 2.0, 0.5, -0.3])
    check_grad(kalman_array, (ys, 0.3, 0.5), wrt=(0, 1, 2), jit=jit)
    Y = np.random.default_rng(5).random((4, 3))
    check_grad(states_array, (Y, 0.7), wrt=(0, 1), jit=jit)
