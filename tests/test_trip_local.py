"""Arrays every trip sets in full (``dependence.overwritten`` and ``dependence.reset``, used
by ``backend/fuse.py``'s ``_trip_local``): a scratch array made once before a loop that each
trip writes whole before reading it carries nothing from one trip to the next, so it does
not keep the loop and its adjoint apart; each point's adjoint then runs right after the
point (GradBench gmm's shape: the tape holds one point).  Where a trip may read what an
earlier trip left (a partial write, a read before the write, a read after the loop, a write
loop over another length) the loops stay apart.  Values and gradients are checked against
central differences, compiled and not.
"""

import math
import re

import numpy as np
import numpy as onp
import pytest
from gradcheck import check_grad

import jitgrad as jg

FUSED = "iterations over i are independent"


def mixture(x, mu):
    """gmm's shape: a centred point ``xc`` and a per-centre term ``terms`` made once, filled
    in full per point, then a log-sum-exp over the centres."""
    n, d = x.shape
    k = mu.shape[0]
    xc = np.empty(d)
    terms = np.empty(k)
    total = 0.0
    for i in range(n):
        for c in range(k):
            for j in range(d):
                xc[j] = x[i, j] - mu[c, j]
            sq = 0.0
            for a in range(d):
                for b in range(a, d):
                    sq += xc[a] * xc[b] * mu[c, b]
            terms[c] = -0.5 * sq
        mx = terms[0]
        s = 0.0
        for c in range(k):
            s += math.exp(terms[c] - mx)
        total += math.log(s) + mx
    return total


def scratch_row(x, w):
    """A scratch row filled over its whole length at the top of each trip, read twice (the
    fill is cheap: refilled in the adjoint, ``ReadPolicy.refill``)."""
    n, m = x.shape
    t = np.empty(m)
    total = 0.0
    for i in range(n):
        for j in range(m):
            t[j] = x[i, j] * w[j] - 0.5
        for p in range(m):
            total += t[p] * t[(p + 1) % m] * w[p]
    return total


def snapshot_row(x, w):
    """The same with a costly fill: the adjoint takes each trip's row back from a tape of
    copies (``t = _tape_t_1.pop()`` binds ``t`` again), so ``t`` is not made once and the
    loops stay apart (either is right; the gradient is what is checked)."""
    n, m = x.shape
    t = np.empty(m)
    total = 0.0
    for i in range(n):
        for j in range(m):
            t[j] = math.sin(x[i, j] * w[j])
        for p in range(m):
            total += t[p] * t[(p + 1) % m] * w[p]
    return total


def whole_assign(x, w):
    """The scratch array set whole, ``t[:] = e``, before each trip reads it."""
    n, m = x.shape
    t = np.zeros(m)
    total = 0.0
    for i in range(n):
        t[:] = x[i] * w
        for p in range(m):
            total += math.exp(t[p]) * t[p]
    return total


def partial_write(x, w):
    """Not fused: ``t[0]`` is never written in a trip, it keeps the first value."""
    n, m = x.shape
    t = np.ones(m)
    total = 0.0
    for i in range(n):
        for j in range(1, m):
            t[j] = math.sin(x[i, j] * w[j]) + t[0]
        t[0] = t[0] * 0.5 + x[i, 0]
        for p in range(m):
            total += t[p] * t[p] * w[p]
    return total


def read_before_write(x, w):
    """Not fused: each trip reads what the trip before left in ``t``."""
    n, m = x.shape
    t = np.zeros(m)
    total = 0.0
    for i in range(n):
        total += t[m - 1] * w[0]
        for j in range(m):
            t[j] = math.sin(x[i, j] * w[j])
        for p in range(m):
            total += t[p] * t[p] * w[p]
    return total


def read_after(x, w):
    """Not fused: the last trip's ``t`` is read after the loop."""
    n, m = x.shape
    t = np.empty(m)
    total = 0.0
    for i in range(n):
        for j in range(m):
            t[j] = math.sin(x[i, j] * w[j])
        for p in range(m):
            total += t[p] * t[p] * w[p]
    return total + t[0] * t[1]


def other_length(x, w):
    """Not fused: the fill runs over ``m`` of ``t``'s ``m + 1`` elements, the last one is
    carried (set once before the loop, read in each trip)."""
    n, m = x.shape
    t = np.empty(m + 1)
    t[m] = 0.5
    total = 0.0
    for i in range(n):
        for j in range(m):
            t[j] = math.sin(x[i, j] * w[j])
        for p in range(m + 1):
            total += t[p] * t[p] * w[p % m]
        t[m] = t[m] * 0.9 + x[i, 0]
    return total


def shape_after(x, w):
    """Fused: after the loop ``t`` is named only for its shape, ``np.ones_like(t)`` (the
    table's ``reads_shape_of``, found through the namespace: ``dependence.beyond_shape``)."""
    n, m = x.shape
    t = np.empty(m)
    total = 0.0
    for i in range(n):
        for j in range(m):
            t[j] = x[i, j] * w[j] - 0.5
        for p in range(m):
            total += t[p] * t[(p + 1) % m] * w[p]
    return total + np.sum(np.ones_like(t) * w)


#: ``np.ones_like`` under another name: the namespace says what it is, not the spelling
ONES_LIKE = onp.ones_like


def shape_after_onp(x, w):
    """``shape_after`` with NumPy imported as ``onp`` and ``ones_like`` bound to a name."""
    n, m = x.shape
    t = onp.empty(m)
    total = 0.0
    for i in range(n):
        for j in range(m):
            t[j] = x[i, j] * w[j] - 0.5
        for p in range(m):
            total += t[p] * t[(p + 1) % m] * w[p]
    return total + onp.sum(ONES_LIKE(t) * w)


def _args(n=4, m=3):
    rng = np.random.default_rng(7)
    return rng.uniform(-1.0, 1.0, (n, m)), rng.uniform(0.3, 1.2, m)


CASES = [
    (mixture, lambda: (np.random.default_rng(3).standard_normal((5, 3)),
                       np.random.default_rng(4).uniform(size=(4, 3))), True),
    (scratch_row, _args, True),
    (snapshot_row, _args, None),
    (whole_assign, _args, True),
    (partial_write, _args, False),
    (read_before_write, _args, False),
    (read_after, _args, False),
    (other_length, _args, False),
    (shape_after, _args, True),
    (shape_after_onp, _args, True),
]


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("f, make, fused", CASES, ids=[c[0].__name__ for c in CASES])
def test_gradient_and_whether_fused(f, make, fused, jit):
    args = make()
    check_grad(f, args, (0, 1), jit)
    src = jg.differentiate(f, wrt=(0, 1), jit=jit).source(*args)
    if fused is not None:
        assert (FUSED in src) == fused, src


@pytest.mark.parametrize("jit", [True, False])
def test_shape_reads_go_by_the_namespace(jit):
    """A shape-only read of the scratch array spelled ``onp.ones_like`` or a name bound to it
    gives the same generated code as ``np.ones_like``."""
    args = _args()
    src = [jg.differentiate(f, wrt=(0, 1), jit=jit).source(*args)
           for f in (shape_after, shape_after_onp)]
    assert FUSED in src[0]
    norm = src[1].replace("onp.", "np.").replace("ONES_LIKE(", "np.ones_like(").replace(
        "shape_after_onp", "shape_after")
    def lines(t: str) -> str:  # comments and bounds messages name the source line
        return re.sub(r"\(line \d+", "(line", re.sub(r"# line \d+", "#", t))
    assert lines(norm) == lines(src[0])


# --- the dependence layer's answers, on loop bodies ---------------------------------------

from jitgrad.transpiler.analysis import dataflow, dependence  # noqa: E402


def _loop_body(src: str) -> tuple[list, str]:
    """The body of the one loop over ``i`` in ``src`` (after ``a = np.empty(n)``), and the
    ``ast.dump`` of ``a``'s length as ``full_sizes`` finds it."""
    import ast
    import textwrap
    body = ast.parse(textwrap.dedent(src)).body
    sizes = dependence.full_sizes(dataflow.Dataflow(body, env={"np": np}))
    loop = next(s for s in body if isinstance(s, ast.For))
    return loop.body, sizes.get("a")


OVERWRITTEN = [
    ("for j in range(n):\n        a[j] = x[i, j]\n    t = a[0]", True),
    ("for j in range(0, n):\n        a[j] = x[i, j]\n    t = a[0]", True),
    ("for j in range(n - 1, -1, -1):\n        a[j] = x[i, j]\n    t = a[0]", True),
    ("a[:] = x[i]\n    t = a[0]", True),
    ("a[...] = 0.5\n    t = a[0]", True),
    ("for c in range(3):\n        for j in range(n):\n            a[j] = x[i, j]\n"
     "        t = a[c]", True),
    ("t = a[0]\n    for j in range(n):\n        a[j] = x[i, j]", False),  # read first
    ("for j in range(1, n):\n        a[j] = x[i, j]\n    t = a[0]", False),  # partial
    ("for j in range(m):\n        a[j] = x[i, j]\n    t = a[0]", False),  # other length
    ("for j in range(n):\n        if x[i, j] > 0:\n            a[j] = 1.0\n    t = a[0]",
     False),  # conditional
    ("for j in range(n):\n        a[j] = x[i, j]\n        if j > 2:\n            break\n"
     "    t = a[0]", False),  # early exit
    ("for j in range(n):\n        a[j] = a[j - 1] + 1.0\n    t = a[0]", False),
    ("a[:] = a * 2.0\n    t = a[0]", False),
    ("a = x[i]\n    t = a[0]", False),  # bound again
]


@pytest.mark.parametrize("trip, expected", OVERWRITTEN)
def test_overwritten(trip, expected):
    body, size = _loop_body(f"n, m = x.shape\na = np.empty(n)\nfor i in range(m):\n"
                            f"    {trip}\n")
    assert size is not None or not expected  # (``a`` bound twice: no one length)
    assert dependence.overwritten("a", body, size) is expected


RESET = [
    ("for j in range(n - 1, -1, -1):\n        t = a[j]\n        a[j] = 0.0", True),
    ("a[i % n] += 1.0\n    for j in range(n):\n        a[j] = 0.0", True),
    ("a[i % n] += 1.0\n    a[...] = 0.0", True),
    ("for c in range(3):\n        a[c % n] += 1.0\n        for j in range(n):\n"
     "            a[j] = 0.0", True),  # each inner trip leaves it zero, nothing before
    ("a[0] += 1.0\n    for c in range(i):\n        for j in range(n):\n"
     "            a[j] = 0.0", False),  # the inner loop may make no trip
    ("for j in range(n):\n        a[j] = 0.0\n    a[0] += 1.0", False),  # written after
    ("a[i % n] += 1.0\n    for j in range(1, n):\n        a[j] = 0.0", False),  # partial
    ("a[i % n] += 1.0\n    for j in range(n):\n        a[j] = 1.0", False),  # not zero
]


@pytest.mark.parametrize("trip, expected", RESET)
def test_reset(trip, expected):
    body, size = _loop_body(f"n, m = x.shape\na = np.zeros(n)\nfor i in range(m):\n"
                            f"    {trip}\n")
    assert dependence.reset("a", body, size) is expected


def test_full_sizes_need_one_length():
    """A length whose name is bound again (or in a loop) gives no size."""
    _, size = _loop_body("n = 3\nn = 4\na = np.empty(n)\nfor i in range(n):\n    a[0] = 1.0\n")
    assert size is None


def test_full_sizes_go_by_what_the_callee_is():
    """``full_sizes`` finds an allocation by the primitive table through the namespace, not
    by its spelling: NumPy under another name counts, a user's ``zeros`` does not, and
    without a namespace nothing does."""
    import ast

    src = "a = onp.zeros(n)\nb = onp.empty_like(a)\nc = zeros(n)\n"
    body = ast.parse(src).body
    n = ast.dump(ast.Name(id="n", ctx=ast.Load()))
    sizes = dependence.full_sizes(dataflow.Dataflow(body, env={"onp": np, "zeros": len}))
    assert sizes == {"a": n, "b": n}
    assert dependence.full_sizes(dataflow.Dataflow(body)) == {}
