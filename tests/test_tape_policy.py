"""The tape policy (``modes/policy.py``): a read of an array nothing writes is read again in
the adjoint, never taped, however it is reached (a helper's parameter bound to a row of an
argument, a view rebound every iteration), and a counter indexing such a read is restored
once instead of the element being taped; where an operand is overwritten the value is
still stored.  Every gradient is checked against central differences, compiled and not."""

import math
import re

import numpy as np
import pytest
from gradcheck import check_grad
from numba import njit
from test_pass_decisions import assert_tapes_balanced, code, pushed_values, sweeps

import jitgrad as jg


@njit(cache=False)
def tri_apply(qrow, lrow, xc):
    """Q(q, l) @ xc, Q lower triangular with diagonal exp(q), l filled column-wise (gmm's)."""
    d = xc.shape[0]
    out = np.empty(d)
    for i in range(d):
        out[i] = math.exp(qrow[i]) * xc[i]
    idx = 0
    for i in range(d):
        for j in range(i + 1, d):
            out[j] += lrow[idx] * xc[i]
            idx += 1
    return out


def rows_helper(q, lo, x):
    """A helper taking rows of arguments (``q[ik]``, ``lo[ik]``): gmm's shape."""
    k, d = q.shape
    total = 0.0
    xc = np.empty(d)
    for i in range(x.shape[0]):
        for ik in range(k):
            for j in range(d):
                xc[j] = x[i, j] - 0.1 * ik
            qx = tri_apply(q[ik], lo[ik], xc)
            for j in range(d):
                total += qx[j] * qx[j]
    return total


def view_rebound(a, b):
    """A view of an argument rebound every iteration, read through in an inner loop."""
    s = 0.0
    for i in range(a.shape[0]):
        row = a[i]
        for j in range(a.shape[1]):
            s += row[j] * b[j] * row[j]
    return s


def view_of_written(a, b):
    """The same shape, but the array under the view is written after the read: the read
    must be stored (recomputing would read the new value)."""
    c = a.copy()
    s = 0.0
    for i in range(c.shape[0]):
        row = c[i]
        for j in range(c.shape[1]):
            s += row[j] * b[j] * row[j]
            c[i, j] = 2.0 * row[j]
    return s


def counter_read(a, w):
    """An element read at a counter (``k`` rebound every trip) of an unwritten argument."""
    s = 0.0
    k = 0
    for i in range(w.shape[0]):
        for j in range(i + 1, w.shape[0]):
            s += a[k] * w[i] * a[k] * w[j]
            k += 1
    return s


def invariant_read(a, b):
    """A loop-invariant read of a row (``ra[i]`` in the loop over ``j``), read twice."""
    s = 0.0
    for i in range(a.shape[0]):
        ra = a[i]
        for j in range(b.shape[0]):
            t = ra[i % a.shape[1]] * b[j]
            s += t * ra[i % a.shape[1]]
    return s


def read_twice(x, n):
    """``y[i] * y[i]`` of a buffer written after the read: stored, once for both reads."""
    y = x.copy()
    s = 0.0
    for i in range(n):
        s += y[i] * y[i]
        y[i] = 2.0 * y[i] + 1.0
    return s


def stages(x, s):
    """Whole-array RK stages (their arrays are stored whole: second-order code could not
    read a stored shape)."""
    y = np.zeros(x.shape[0])
    for _ in range(s):
        k1 = x * y + 1.0
        k2 = x * (y + 0.5 * k1)
        y = y + 0.1 * (k1 + 2.0 * k2)
    return y[x.shape[0] - 1] + np.sum(y)


def broadcast_stage(x, s):
    """A stage of shape (1,) broadcast against the state: its adjoint sums to its
    shape."""
    y = x * 1.0
    for _ in range(s):
        b = x[:1] * 0.5
        c = y + b
        y = 0.5 * y + 0.1 * c * c
    return np.sum(y * y)


def _args(seed=0):
    rng = np.random.default_rng(seed)
    d, k = 4, 3
    return (rng.normal(size=(k, d)) * 0.3, rng.normal(size=(k, d * (d - 1) // 2)),
            rng.normal(size=(2, d)))


CASES = {
    "rows_helper": (rows_helper, _args(), (0, 1, 2)),
    "view_rebound": (view_rebound, (np.random.default_rng(1).normal(size=(3, 4)),
                                    np.random.default_rng(2).normal(size=4)), (0, 1)),
    "view_of_written": (view_of_written, (np.random.default_rng(1).normal(size=(3, 4)),
                                          np.random.default_rng(2).normal(size=4)), (0, 1)),
    "counter_read": (counter_read, (np.random.default_rng(3).normal(size=10),
                                    np.random.default_rng(4).normal(size=5)), (0, 1)),
    "stages": (stages, (np.random.default_rng(8).normal(size=4), 3), (0,)),
    "broadcast_stage": (broadcast_stage, (np.random.default_rng(9).normal(size=4), 3), (0,)),
    "read_twice": (read_twice, (np.random.default_rng(7).normal(size=5), 5), (0,)),
    "invariant_read": (invariant_read, (np.random.default_rng(5).normal(size=(3, 4)),
                                        np.random.default_rng(6).normal(size=5)), (0, 1)),
}


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("case", sorted(CASES))
def test_gradients(case, jit):
    f, args, wrt = CASES[case]
    check_grad(f, args, wrt=wrt, jit=jit)


def test_helper_rows_are_read_not_taped():
    """``lrow[idx]`` (``lo[ik]`` bound to the helper's parameter) is read again as
    ``lo[ik, idx]``; the counter ``idx`` is taped once, its element not at all."""
    src = sweeps(rows_helper, *_args(), wrt=(0, 1, 2))
    assert_tapes_balanced(src)
    assert "lrow1 is written later" not in src and "qrow1 is written later" not in src
    assert "= lo[ik, idx1]" in code(src)
    elem = re.search(r"(\w+) = lrow1\[idx1\]", src).group(1)
    taped = pushed_values(src)
    assert "idx1" in taped and elem not in taped  # the counter, not the element


def test_invariant_row_reads_are_not_taped():
    src = sweeps(invariant_read, *CASES["invariant_read"][1], wrt=(0, 1))
    assert_tapes_balanced(src)
    assert pushed_values(src) == [], pushed_values(src)
    assert "a[i, i % a.shape[1]]" in code(src)


def test_view_rebound_reads_are_not_taped():
    src = sweeps(view_rebound, *CASES["view_rebound"][1], wrt=(0, 1))
    assert_tapes_balanced(src)
    assert pushed_values(src) == [], pushed_values(src)
    assert "row is written later" not in src
    assert "a[i, j]" in code(src)


def test_view_of_written_array_is_stored():
    src = sweeps(view_of_written, *CASES["view_of_written"][1], wrt=(0, 1))
    assert "row is written later" in src or "c is written later" in src
    assert pushed_values(src), "a read of a written buffer must be taped"
    assert "c[i, j]" not in "".join(ln for ln in code(src).splitlines()
                                     if "= c[i, j]" in ln and "2.0" not in ln)


def test_counter_read_is_read_again():
    """The reads at the counter are read again, and the counter itself is stepped back in
    the adjoint (``modes/counters.py``): its loop runs once, so nothing is stored."""
    src = sweeps(counter_read, *CASES["counter_read"][1], wrt=(0, 1))
    assert_tapes_balanced(src)
    assert pushed_values(src) == [], pushed_values(src)
    assert "k keeps its last value: its adjoint steps it back" in src


def test_value_read_twice_is_stored_once():
    src = sweeps(read_twice, *CASES["read_twice"][1], wrt=0)
    assert_tapes_balanced(src)
    assert len(pushed_values(src)) == 1, pushed_values(src)
    assert "the same value, stored once" in src




@pytest.mark.parametrize("case", sorted(CASES))
def test_hvp_through_the_policy(case):
    """Second order differentiates the gradient code the policy wrote (reads again,
    counters restored, twins): ``hvp`` against central differences of the gradient."""
    f, args, wrt = CASES[case]
    w = wrt[0] if isinstance(wrt, tuple) else wrt
    x = args[w]
    v = np.random.default_rng(7).normal(size=np.shape(x))
    h = jg.hvp(f, args, (v,), wrt=w, jit=False)
    g = jg.grad(f, wrt=w, jit=False)
    eps = 1e-6

    def at(t):
        a = list(args)
        a[w] = x + t * v
        return g(*a)

    np.testing.assert_allclose(h, (at(eps) - at(-eps)) / (2 * eps), rtol=1e-5, atol=1e-6)
