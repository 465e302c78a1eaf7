"""``for v in h``: Python iterates the array the loop started with, writes included.

A body that rebinds ``h`` and writes that first array through another name (``v, h = h, v``
then ``v[2] = ...``) must see its own writes on later trips (fuzz seed 98001 #57: jvp's
value was that of a copy taken before the loop).  Reverse mode refuses the loop at its line.
"""

from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg


def swap_and_write(x):
    v = x.copy()
    h = np.cos(v)
    s = 0.0
    for val in h:
        v, h = h, v
        v[2] = val * 2.0
        s += val
    return s + np.sum(h)


def rebind_only(x):
    h = x * 1.0
    s = 0.0
    for val in h:
        h = h * val
        s += np.sum(h)
    return s


X = np.array([0.3, -0.2, 0.5, 0.1])


def fd_dir(f, x, t, h=1e-6):
    return (f(x + h * t) - f(x - h * t)) / (2 * h)


@pytest.mark.parametrize("jit", [False, True])
def test_jvp_sees_writes_to_the_iterated_array_through_another_name(jit):
    t = np.array([1.0, -0.5, 0.25, 2.0])
    x = X.copy()
    out, tan = jg.jvp(swap_and_write, (x,), (t,), jit=jit)
    assert out == pytest.approx(swap_and_write(X.copy()), rel=1e-12)
    assert tan == pytest.approx(fd_dir(swap_and_write, X, t), rel=1e-6)
    np.testing.assert_array_equal(x, X)


@pytest.mark.parametrize("jit", [False, True])
def test_reverse_mode_refuses_it_at_the_loop(jit):
    with pytest.raises(jg.TransformError, match=r"test_loop_sequences.py:20:"):
        jg.value_and_grad(swap_and_write, jit=jit)(X)


@pytest.mark.parametrize("jit", [False, True])
def test_a_loop_that_only_rebinds_iterates_the_first_array(jit):
    v, g = jg.value_and_grad(rebind_only, jit=jit)(X)
    assert v == pytest.approx(rebind_only(X), rel=1e-12)
    fd = [fd_dir(rebind_only, X, e) for e in np.eye(4)]
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-9)
    out, tan = jg.jvp(rebind_only, (X,), (np.ones(4),), jit=jit)
    assert out == pytest.approx(rebind_only(X), rel=1e-12)
    assert tan == pytest.approx(sum(fd), rel=1e-6)


def write_through_the_base(x):
    # h is bound from y, y is written: the iterated array is written (no copy may be made)
    y = x * 1.0
    h = y
    s = 0.0
    for val in h:
        h = h * 0.5
        y[2] = val * 3.0
        s += val
    return s + np.sum(h)


@pytest.mark.parametrize("jit", [False, True])
def test_a_write_through_the_name_it_was_bound_from_is_seen(jit):
    t = np.array([1.0, -0.5, 0.25, 2.0])
    out, tan = jg.jvp(write_through_the_base, (X.copy(),), (t,), jit=jit)
    assert out == pytest.approx(write_through_the_base(X.copy()), rel=1e-12)
    assert tan == pytest.approx(fd_dir(write_through_the_base, X, t), rel=1e-6)
