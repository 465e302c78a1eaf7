"""Integer counters stepped back in the adjoint (``modes/counters.py``): a counter such as
``idx += 1`` read in a loop is stored once per run of its loop and stepped back at the
reverse of each step, instead of stored on every trip.  Each case is checked against
central differences (value, every element of every gradient) compiled and not, through
``hvp``, and by the tape pushes the forward sweep makes; the cases where the counter may
not be stepped back (a ``break``, a rebinding inside the loop) still store it per trip.
"""

import math

import numpy as np
import pytest
from gradcheck import check_grad, check_hvp
from test_pass_decisions import assert_tapes_balanced, sweeps
from test_tape_invariant import push_depths

import jitgrad as jg


def triangle(q, L, x):
    """GradBench gmm's ``Q(q, l) @ x``: ``L`` packs a lower triangle column by column."""
    d = x.shape[0]
    out = np.empty(d)
    for i in range(d):
        out[i] = math.exp(q[i]) * x[i]
    K = 0
    for i in range(d):
        for j in range(i + 1, d):
            out[j] += L[K] * x[i]
            K += 1
    return np.sum(out * out)


def rows(a, w):
    """A counter reset per outer trip, stepped in the inner loop (the gmm shape): ``J`` is
    the user's name, beside ``dJ``."""
    n, m = a.shape
    s = 0.0
    for r in range(n):
        J = 0
        dJ = 0.5
        for c in range(m):
            s += a[r, c] * w[J] * w[J] * dJ
            J = J + 1
    return s


def compress(x, w):
    """A conditional step (the positives packed in order) and a step down."""
    n = x.shape[0]
    k = 0
    M = n - 1
    s = 0.0
    for i in range(n):
        if x[i] > 0.0:
            s += x[i] * w[k] * w[M]
            k += 1
        M -= 1
    return s + k * 0.25


def stride(x, w, step):
    """A step by an argument, two sibling loops stepping the same counter."""
    k = 0
    s = 0.0
    for i in range(x.shape[0]):
        s += np.sin(x[i] * w[k])
        k += step
    for i in range(x.shape[0]):
        k -= step
        s += w[k] * w[k] * x[i]
    return s


def broken(x, w):
    """Not stepped back: the loop may ``break``; the counter is stored on every trip."""
    k = 0
    s = 0.0
    for i in range(x.shape[0]):
        if s > 1e3:
            break
        s += x[i] * w[k] * w[k]
        k += 1
    return s


def rebound(x, w):
    """Not stepped back: the loop also rebinds the counter otherwise."""
    k = 0
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * w[k] * w[k]
        k += 1
        if k == w.shape[0]:
            k = 0
    return s


def _rng(k):
    return np.random.default_rng(k)


CASES = {
    "triangle": (triangle, (_rng(1).normal(size=5) * 0.3, _rng(2).normal(size=10),
                            _rng(3).normal(size=5)), (0, 1, 2)),
    "rows": (rows, (_rng(4).normal(size=(3, 4)), _rng(5).normal(size=4)), (0, 1)),
    "compress": (compress, (_rng(6).normal(size=7), _rng(7).normal(size=7)), (0, 1)),
    "stride": (stride, (_rng(8).normal(size=4), _rng(9).normal(size=9), 2), (0, 1)),
    "broken": (broken, (_rng(10).normal(size=5), _rng(11).normal(size=5)), (0, 1)),
    "rebound": (rebound, (_rng(12).normal(size=7), _rng(13).normal(size=3)), (0, 1)),
}
#: the counter of each case, and whether it is stepped back
COUNTER = {"triangle": ("K", True), "rows": ("J", True), "compress": ("k", True),
           "stride": ("k", True), "broken": ("k", False), "rebound": ("k", False)}


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("case", sorted(CASES))
def test_gradients(case, jit):
    f, args, wrt = CASES[case]
    check_grad(f, args, wrt=wrt, jit=jit)


@pytest.mark.parametrize("case", sorted(CASES))
def test_hvp(case):
    """Forward over the generated reverse code, which steps the counter back."""
    f, args, wrt = CASES[case]
    check_hvp(f, args, wrt, seed=20)


@pytest.mark.parametrize("case", sorted(CASES))
def test_counter_stored_once_per_loop(case):
    """A stepped-back counter is pushed only outside the loops it steps in (once per run
    of its loop, if at all); one that is not is pushed in the innermost loop, every trip."""
    f, args, wrt = CASES[case]
    src = jg.grad(f, wrt=wrt, jit=False).source(*args, stage="forward")
    assert_tapes_balanced(sweeps(f, *args, wrt=wrt))
    n, back = COUNTER[case]
    depths = push_depths(src).get(n, [])
    if back:
        # pushed once per trip of the loops around its loop; not at all where that loop
        # runs once and nothing binds the counter after it (it keeps its last value)
        assert "its adjoint steps it back" in src
        want = {"triangle": [], "rows": [1], "compress": [], "stride": [0]}[case]
        assert depths == want, (depths, src)
    else:
        assert "steps it back" not in src
        assert depths and max(depths) >= 1, (depths, src)


def test_gmm_tape_no_longer_grows_with_the_triangle():
    """The packed triangle's counter was a tape of d(d-1)/2 per point and component;
    stepped back, it is one value per run of the loop: the tape grows as d, not d^2."""
    import sys
    from pathlib import Path

    root = str(Path(__file__).parent.parent)  # (not benchmarks/ itself on the path: its
    sys.path.append(root)  # distributed.py would hide dask's package from its workers)
    try:
        from benchmarks.gradbench import gmm, loader
    finally:
        sys.path.remove(root)

    args = loader.gmm(8, 3, 4)
    src = jg.grad(gmm.gmm, wrt=(0, 1, 2, 3), jit=False).source(*args, stage="forward")
    assert "stored idx1 once per loop over i1" in src
    assert push_depths(src)["idx1"] == [2]  # (in the loops over points and components)
