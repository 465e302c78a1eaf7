"""Loops with independent iterations run each iteration's adjoint right after it
(``backend/fuse.py``): the gradient is the same, the tape holds one iteration, and any
loop whose iterations may depend on each other keeps its two sweeps."""

import math

import numpy as np
import pytest
from gradcheck import check_grad
from test_recompute import logsumexp_rows  # independent rows whose loops tape (softmax)

import jitgrad as jg

FUSED = "are independent: each runs its adjoint right after it"


def scaled_sum(x, k):
    """A scalar ``wrt`` whose adjoint sums over the iterations, and a value taped per trip."""
    total = 0.0
    for i in range(x.shape[0]):
        t = math.exp(k * x[i])
        total += t * math.sin(x[i]) - k * t
    return 3.0 * total


def branchy(x, k):
    """A branch per iteration; two sums; a trailing use of the loop's result."""
    a = 0.0
    b = 0.0
    for i in range(x.shape[0]):
        if x[i] > 0.2:
            a += math.exp(x[i] * k)
        else:
            b += x[i] * x[i] * k
    return 2.0 * a - b + k


def carried(x, k):
    """Not independent: ``y`` carries from one iteration to the next."""
    y = 0.5
    total = 0.0
    for i in range(x.shape[0]):
        y = math.sin(y * k + x[i])
        total += y * y
    return total


def seed_needs_result(x):
    """Not fusable: the seed of ``total`` (``1 / total``) needs the loop's result."""
    total = 0.0
    for i in range(x.shape[0]):
        total += math.exp(x[i])
    return math.log(total)


def writes_array(x):
    """Not fusable: the loop writes an array the adjoint reads."""
    y = np.zeros(x.shape[0])
    total = 0.0
    for i in range(x.shape[0]):
        y[i] = math.exp(x[i])
        total += y[i] * x[i]
    return total + y[0]


def in_time_loop(x, k, steps):
    """Independent iterations inside a loop that is not: the outer pair keeps its sweeps,
    and so does the inner one (its pair is split between the outer sweeps)."""
    total = 0.0
    c = 1.0
    for _step in range(steps):
        for i in range(x.shape[0]):
            total += math.exp(c * x[i]) * k
        c = c * 0.9 + k
    return total


def two_loops(x, k):
    """Two independent loops in a row, the second reading the first's result: only the
    second can run fused (the first one's seed comes from the second)."""
    a = 0.0
    for i in range(x.shape[0]):
        a += math.sin(k * x[i])
    b = 0.0
    for i in range(x.shape[0]):
        b += math.exp(x[i] * a)
    return b


def index_after(x):
    """The loop index is read after the loop: it must end as the plain loops leave it."""
    total = 0.0
    i = 0
    for i in range(x.shape[0]):
        total += math.exp(x[i])
    return total * (i + 1.0)


def decaying(x):
    """``total = 0.5 * total + ...``: its adjoint changes from one iteration to the next."""
    total = 0.0
    for i in range(x.shape[0]):
        total = 0.5 * total + math.exp(x[i])
    return total


def row_max_reused(z):
    """The row maximum is rebound per row and read again by the adjoint (``exp(z - m)``
    needs it): stored per row and restored within the iteration."""
    total = 0.0
    for i in range(z.shape[0]):
        m = z[i, 0]
        for j in range(1, z.shape[1]):
            m = max(m, z[i, j])
        for j in range(z.shape[1]):
            total += math.exp(z[i, j] - m) * m
    return total


def inner_while(x, k):
    """A while loop with a break in each iteration (its trip count is taped)."""
    total = 0.0
    for i in range(x.shape[0]):
        y = x[i]
        n = 0
        while y < 3.0:
            y = y * 1.5 + k
            n += 1
            if n > 6:
                break
        total += y * y
    return total


def rebound_in_branch(x):
    """A value taped for the adjoint is rebound later in the same iteration, in a branch:
    the pop must not be replaced by the name's later value."""
    total = 0.0
    for i in range(x.shape[0]):
        t = math.exp(x[i])
        u = t * math.sin(t)
        if x[i] > 0.3:
            t = t * 0.5 + math.cos(u)
        total += u * t
    return total


def scratch_per_trip(x, k):
    """A scratch array made once and rewritten by every trip, read only by the forward
    sweep (which columns are taken, as det's permutation decoding): the iterations still
    run their adjoints one at a time; the forward trips keep their order."""
    n = x.shape[0]
    taken = np.zeros(n, np.int64)
    total = 0.0
    for i in range(n):
        for c in range(n):
            taken[c] = 0
        prod = 1.0
        for r in range(3):
            col = (i + 2 * r) % n
            while taken[col] == 1:
                col = (col + 1) % n
            taken[col] = 1
            prod *= math.sin(k * x[col])
        total += prod * x[i]
    return total


def scratch_carried(x, k):
    """A count carried from trip to trip and read after the loop, never by the adjoint."""
    counts = np.zeros(3)
    total = 0.0
    for i in range(x.shape[0]):
        b = i % 3
        counts[b] += 1.0
        total += math.exp(k * x[i]) * counts[b]
    return total + counts[0]


def scratch_through_view(x):
    """The scratch array is read through a view: the view's reads keep it apart."""
    buf = np.zeros(2)
    view = buf[0:1]
    total = 0.0
    for i in range(x.shape[0]):
        buf[0] = x[i] * x[i]
        total += math.sin(view[0]) * x[i]
    return total


def nearest_sum(p, c):
    """Each point's nearest centre (k-means' cost): the inner loop's adjoint resets the
    distance's adjoint at the end of every trip, so each row's adjoint leaves it at 0."""
    cost = 0.0
    for i in range(p.shape[0]):
        closest = np.inf
        for j in range(c.shape[0]):
            dist = 0.0
            for d in range(p.shape[1]):
                diff = p[i, d] - c[j, d]
                dist += diff * diff
            if dist < closest:
                closest = dist
        cost += closest
    return cost


def inner_zero_trips(x, k):
    """An inner loop that runs no trip for the first row: what its adjoint resets must
    still hold the value the row started with."""
    total = 0.0
    for i in range(x.shape[0]):
        s = 0.0
        for j in range(i):
            t = math.sin(k * x[j]) * x[i]
            s += t * t
        total += s * k + x[i]
    return total


CASES = [
    (logsumexp_rows, lambda: (np.random.default_rng(1).standard_normal((5, 4)),), (0,), True),
    (scaled_sum, lambda: (np.linspace(-0.8, 0.9, 7), 0.7), (0, 1), True),
    (branchy, lambda: (np.linspace(-0.5, 0.9, 8), 0.6), (0, 1), True),
    (carried, lambda: (np.linspace(-0.5, 0.9, 6), 0.8), (0, 1), False),
    (seed_needs_result, lambda: (np.linspace(-0.5, 0.9, 6),), (0,), False),
    (writes_array, lambda: (np.linspace(-0.5, 0.9, 6),), (0,), False),
    (in_time_loop, lambda: (np.linspace(-0.5, 0.9, 5), 0.3, 3), (0, 1), False),
    (two_loops, lambda: (np.linspace(-0.5, 0.9, 5), 0.4), (0, 1), True),
    (index_after, lambda: (np.linspace(-0.5, 0.9, 5),), (0,), None),
    (decaying, lambda: (np.linspace(-0.5, 0.9, 5),), (0,), False),
    (row_max_reused, lambda: (np.random.default_rng(3).standard_normal((4, 5)),), (0,), True),
    (inner_while, lambda: (np.linspace(0.3, 1.9, 6), 0.2), (0, 1), True),
    (rebound_in_branch, lambda: (np.linspace(-0.4, 0.9, 7),), (0,), True),
    (scratch_per_trip, lambda: (np.linspace(-0.7, 0.9, 6), 0.8), (0, 1), True),
    (scratch_carried, lambda: (np.linspace(-0.7, 0.9, 7), 0.6), (0, 1), True),
    (scratch_through_view, lambda: (np.linspace(-0.7, 0.9, 5),), (0,), None),
    (nearest_sum, lambda: (np.random.default_rng(4).standard_normal((9, 2)),
                           np.random.default_rng(5).standard_normal((3, 2))), (0, 1), True),
    (inner_zero_trips, lambda: (np.linspace(-0.7, 0.9, 5), 0.6), (0, 1), None),
]


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("f, make, wrt, fused", CASES, ids=[c[0].__name__ for c in CASES])
def test_gradient_and_whether_fused(f, make, wrt, fused, jit):
    args = make()
    check_grad(f, args, wrt, jit)
    src = jg.differentiate(f, wrt=wrt, jit=jit).source(*args)
    if fused is not None:  # (None: either is right, the gradient is what is checked)
        assert (FUSED in src) == fused, src


@pytest.mark.parametrize("jit", [True, False])
def test_fused_tape_holds_one_iteration(jit):
    """The row loop's tapes are used one row at a time: after a call, each kept tape has
    room for a row or two (tapes grow by doubling), not for every row."""
    rows, cols = 300, 20
    z = np.random.default_rng(2).standard_normal((rows, cols))
    d = jg.differentiate(logsumexp_rows, wrt=(0,), jit=jit)
    check_grad(logsumexp_rows, (z[:6],), (0,), jit)
    d.grad(z)
    tapes = d._last.compiled.pool.__dict__["grad_only"]
    assert tapes and all(isinstance(t, np.ndarray) for t in tapes)
    # an inner loop's trips (cols) at most: the row loop, fused, asks for one entry per
    # tape before it (not one per row) and the inner loop for one per column
    assert max(t.shape[0] for t in tapes) <= 2 * cols, [t.shape for t in tapes]


def branch_taped(x, k):
    """Values made in a branch and read by its adjoint go on tapes, in a loop that fuses."""
    total = 0.0
    for i in range(x.shape[0]):
        a = x[i, 0]
        if a > 0.0:
            u = math.sin(a * k)
        else:
            u = a * a * k
        if x[i, 1] > 0.0:
            v = x[i, 1] * u
        else:
            v = math.cos(x[i, 1] * u)
        total += u * v
    return total


def rebound_after_branch(x, k):
    """``u``, made in a branch and read by its adjoint, is rebound before that adjoint runs:
    it stays on a tape, pushed in the branch and popped in the adjoint's."""
    total = 0.0
    for i in range(x.shape[0]):
        a = x[i, 0]
        if a > 0.0:
            u = math.sin(a * k)
            t = u * u
        else:
            u = a * k
            t = a * u
        u = 2.0 * x[i, 1] * u
        total += t * u
    return total


@pytest.mark.parametrize("jit", [True, False])
def test_fused_branch_tapes_have_room_for_one_trip(jit):
    """A tape pushed in a branch of a fused loop is popped by the same iteration's
    adjoint: its room is one entry (``TRIP_ROOM``), not one per trip of the loop (GradBench
    ba kept 40 tapes of 31843 entries, 9.7 MiB, for one observation's values)."""
    x = np.random.default_rng(3).standard_normal((2000, 2))
    check_grad(rebound_after_branch, (x[:9], 0.7), (0, 1), jit)
    d = jg.differentiate(rebound_after_branch, wrt=(0, 1), jit=jit)
    src = d.source(x, 0.7)
    assert FUSED in src and "tape_put" in src and ", _n)" not in src, src
    d.grad(x, 0.7)
    tapes = d._last.compiled.pool.__dict__["grad_only"]
    assert tapes and max(t.shape[0] for t in tapes) <= 2, [t.shape for t in tapes]


@pytest.mark.parametrize("jit", [True, False])
def test_fused_branch_values_not_taped(jit):
    """Values made in a branch and read by that branch's adjoint, in the same fused
    iteration, are passed on, not taped (``forward_branch_pops``)."""
    x = np.random.default_rng(5).standard_normal((7, 2))
    check_grad(branch_taped, (x, 0.7), (0, 1), jit)
    src = jg.differentiate(branch_taped, wrt=(0, 1), jit=jit).source(x, 0.7)
    assert FUSED in src and "tape_put" not in src and "(nothing is taped)" in src, src


def fused_loop(src: str) -> str:
    """The loop under the fusion comment, as text."""
    lines = src.splitlines()
    k = next(n for n, ln in enumerate(lines) if FUSED in ln)
    indent = len(lines[k]) - len(lines[k].lstrip())
    out = [lines[k + 1]]
    for ln in lines[k + 2:]:
        if ln.strip() and len(ln) - len(ln.lstrip()) <= indent:
            break
        out.append(ln)
    return "\n".join(out)


def test_two_loops_fuse_only_the_second():
    """The first loop's sum ``a`` seeds nothing known before the second loop has run."""
    x = np.linspace(-0.5, 0.9, 5)
    src = jg.differentiate(two_loops, wrt=(0, 1)).source(x, 0.4)
    assert src.count(FUSED) == 1
    loop = fused_loop(src)
    assert "math.exp" in loop and "math.sin" not in loop and "np.cos" not in loop, loop
    # the exp pushed and popped in the same iteration is passed on, not taped
    assert "_tape" not in src and "(nothing is taped)" in src, src


def test_value_and_grad_of_fused_loop():
    x = np.linspace(-0.8, 0.9, 7)
    value, _ = jg.differentiate(scaled_sum, wrt=(0, 1)).value_and_grad(x, 0.7)
    assert value == pytest.approx(scaled_sum(x, 0.7), rel=1e-14)


@pytest.mark.parametrize("jit", [True, False])
def test_hvp_through_fused_loop(jit):
    """Forward mode over the fused gradient code: hvp matches differences of the gradient."""
    x = np.linspace(-0.8, 0.9, 7)
    v = np.cos(np.arange(7.0))
    hv = jg.hvp(scaled_sum, (x, 0.7), v, wrt=0, jit=jit)
    d = jg.differentiate(scaled_sum, wrt=0, jit=jit)
    eps = 1e-6
    fd = (d.grad(x + eps * v, 0.7) - d.grad(x - eps * v, 0.7)) / (2 * eps)
    np.testing.assert_allclose(hv, fd, rtol=1e-5, atol=1e-7)


def doubled(g):
    return 2.0 * g


def hooked(x):
    total = 0.0
    for i in range(x.shape[0]):
        t = jg.hook(doubled, math.exp(x[i]))
        total += t
    return total


@pytest.mark.parametrize("jit", [True, False])
def test_no_fusion_where_a_hook_sees_the_gradients(jit):
    """A hook is called in the order of the adjoint sweep: that order stays."""
    x = np.linspace(-0.5, 0.9, 4)
    d = jg.differentiate(hooked, wrt=0, jit=jit)
    assert FUSED not in d.source(x)
    np.testing.assert_allclose(d.grad(x), 2.0 * np.exp(x), rtol=1e-12)


def unheaded_stored(src: str) -> list[str]:
    """The ``# stored ...`` comments of ``src`` not followed (past comments) by a push."""
    lines = [ln.strip() for ln in src.splitlines()]
    out = []
    for k, ln in enumerate(lines):
        if not ln.startswith("# stored "):
            continue
        nxt = next((x for x in lines[k + 1:] if not x.startswith("#")), "")
        if not ("_tape" in nxt and ("tape_put" in nxt or "tape_reserve" in nxt
                                    or ".append(" in nxt or "] = " in nxt)):
            out.append(ln)
    return out


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("f", [scaled_sum, branch_taped, rebound_after_branch])
def test_no_stored_comment_without_its_push(f, jit):
    """A fused iteration passes a value on in a variable where a push met its pop: the
    ``# stored x: ...`` comment that headed the push goes with it (``unheaded_decisions``);
    a push that stays keeps its comment."""
    x = np.random.default_rng(4).standard_normal((6, 2))
    x = x[:, 0].copy() if f is scaled_sum else x
    check_grad(f, (x, 0.7), (0, 1), jit)
    src = jg.differentiate(f, wrt=(0, 1), jit=jit).source(x, 0.7)
    assert FUSED in src and not unheaded_stored(src), unheaded_stored(src)
    if f is rebound_after_branch:
        assert "# stored" in src, src
