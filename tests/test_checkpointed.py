"""``for t in jg.checkpointed(range(T), snapshots=k)``: the loop's reverse sweep keeps at
most k snapshots of the loop-carried state, placed by the binomial (revolve) schedule, and
one step's tape at a time (inside another loop: test_checkpointed_nested.py).

Every case is checked against the same loop over a plain ``range`` (the gradient must
agree to round-off) for T from 0 to a few thousand and snapshots from 1 to T, in both
modes (and a hypothesis property over (T, snapshots)), and against central finite
differences; the schedule itself against a brute-force optimum; plus what it refuses,
and ``jg.checkpoint`` regions that write arrays from outside them."""

from __future__ import annotations

import math

import numpy as np
import pytest
from gradcheck import check_grad

import jitgrad as jg
from jitgrad.errors import TransformError


def lorenz(p, T, k):
    x, y, z = 1.0, 1.0, 1.0
    s, r, b = p[0], p[1], p[2]
    dt = 0.002
    acc = 0.0
    for t in jg.checkpointed(range(T), snapshots=k):
        dx = s * (y - x)
        dy = x * (r - z) - y
        dz = x * y - b * z
        x = x + dt * dx
        y = y + dt * dy
        z = z + dt * dz
        acc += x * x * 1e-3
    return acc + z


def lorenz_plain(p, T, k):
    x, y, z = 1.0, 1.0, 1.0
    s, r, b = p[0], p[1], p[2]
    dt = 0.002
    acc = 0.0
    for t in range(T):
        dx = s * (y - x)
        dy = x * (r - z) - y
        dz = x * y - b * z
        x = x + dt * dx
        y = y + dt * dy
        z = z + dt * dz
        acc += x * x * 1e-3
    return acc + z


def _rate(x, y, z, s, r, b):
    return s * (y - x), x * (r - z) - y, x * y - b * z


def _rk4(x, y, z, s, r, b, h):
    """One RK4 step of the Lorenz system (a helper: inlined into the loop)."""
    ax, ay, az = _rate(x, y, z, s, r, b)
    bx, by, bz = _rate(x + 0.5 * h * ax, y + 0.5 * h * ay, z + 0.5 * h * az, s, r, b)
    cx, cy, cz = _rate(x + 0.5 * h * bx, y + 0.5 * h * by, z + 0.5 * h * bz, s, r, b)
    dx, dy, dz = _rate(x + h * cx, y + h * cy, z + h * cz, s, r, b)
    return (x + h / 6.0 * (ax + 2.0 * bx + 2.0 * cx + dx),
            y + h / 6.0 * (ay + 2.0 * by + 2.0 * cy + dy),
            z + h / 6.0 * (az + 2.0 * bz + 2.0 * cz + dz))


def lorenz_rk4(p, T, k):
    x, y, z = 1.0, 1.0, 1.0
    for t in jg.checkpointed(range(T), snapshots=k):
        x, y, z = _rk4(x, y, z, p[0], p[1], p[2], 0.004)
    return x * 0.1 + y * 0.2 + z * 0.3


def lorenz_rk4_plain(p, T, k):
    x, y, z = 1.0, 1.0, 1.0
    for t in range(T):
        x, y, z = _rk4(x, y, z, p[0], p[1], p[2], 0.004)
    return x * 0.1 + y * 0.2 + z * 0.3


def heat_inplace(u0, a, T, k):
    u = u0.copy()
    n = u.shape[0]
    for t in jg.checkpointed(range(T), snapshots=k):
        for i in range(1, n - 1):
            u[i] = u[i] + a * (u[i - 1] - 2.0 * u[i] + u[i + 1])
    return np.sum(u * u)


def heat_inplace_plain(u0, a, T, k):
    u = u0.copy()
    n = u.shape[0]
    for t in range(T):
        for i in range(1, n - 1):
            u[i] = u[i] + a * (u[i - 1] - 2.0 * u[i] + u[i + 1])
    return np.sum(u * u)


def heat_buffers(u0, a, T, k):
    u = u0.copy()
    v = np.zeros_like(u0)
    n = u.shape[0]
    for t in jg.checkpointed(range(T), snapshots=k):
        v[0] = u[0]
        v[n - 1] = u[n - 1]
        for i in range(1, n - 1):
            v[i] = u[i] + a * (u[i - 1] - 2.0 * u[i] + u[i + 1])
        u, v = v, u
    return np.sum(u * u) + 0.5 * np.sum(v)


def heat_buffers_plain(u0, a, T, k):
    u = u0.copy()
    v = np.zeros_like(u0)
    n = u.shape[0]
    for t in range(T):
        v[0] = u[0]
        v[n - 1] = u[n - 1]
        for i in range(1, n - 1):
            v[i] = u[i] + a * (u[i - 1] - 2.0 * u[i] + u[i + 1])
        u, v = v, u
    return np.sum(u * u) + 0.5 * np.sum(v)


def inner_while(x, T, k):
    s = 0.0
    y = x[0]
    for t in jg.checkpointed(range(1, T + 1), snapshots=k):
        m = 0
        while m < t % 3 + 1:  # trip count varies per step: counted, kept per segment
            y = y * 0.9 + math.sin(y * x[1]) * 0.1
            m += 1
        s = s + y * t
    return s


def inner_while_plain(x, T, k):
    s = 0.0
    y = x[0]
    for t in range(1, T + 1):
        m = 0
        while m < t % 3 + 1:
            y = y * 0.9 + math.sin(y * x[1]) * 0.1
            m += 1
        s = s + y * t
    return s


def sqrt_default(x, T, k):
    y = x[0]
    acc = 0.0
    for t in jg.checkpointed(range(2, 2 * T + 2, 2)):  # snapshots=None: about sqrt(T)
        y = y + 0.01 * math.sin(y * x[1]) * t
        acc += y * x[1]
    return acc


def sqrt_default_plain(x, T, k):
    y = x[0]
    acc = 0.0
    for t in range(2, 2 * T + 2, 2):
        y = y + 0.01 * math.sin(y * x[1]) * t
        acc += y * x[1]
    return acc


def nested(x, T):
    y = x[0]
    for e in range(3):
        for t in jg.checkpointed(range(T), snapshots=3):  # in a loop: a region
            y = y * 0.9 + math.sin(y * x[1]) * 0.1
    return y


def nested_plain(x, T):
    y = x[0]
    for e in range(3):
        for t in range(T):
            y = y * 0.9 + math.sin(y * x[1]) * 0.1
    return y


P = np.array([10.0, 28.0, 8.0 / 3.0])
U0 = np.sin(np.linspace(0.0, 3.0, 9))
X2 = np.array([0.7, 1.3])

#: (checkpointed, plain, args without T and k, wrt)
CASES = {
    "lorenz": (lorenz, lorenz_plain, (P,), 0),
    "lorenz_rk4": (lorenz_rk4, lorenz_rk4_plain, (P,), 0),
    "heat_inplace": (heat_inplace, heat_inplace_plain, (U0, 0.2), (0, 1)),
    "heat_buffers": (heat_buffers, heat_buffers_plain, (U0, 0.2), (0, 1)),
    "inner_while": (inner_while, inner_while_plain, (X2,), 0),
    "sqrt_default": (sqrt_default, sqrt_default_plain, (X2,), 0),
}

#: (T, snapshots): no step, one, fewer snapshots than steps, as many, more, uneven segments
SCHEDULES = [(0, 3), (1, 1), (2, 1), (7, 3), (12, 12), (12, 40), (40, 1), (41, 6), (300, 17)]


def _same(a, b):
    for ga, gb in zip(a if isinstance(a, tuple) else (a,), b if isinstance(b, tuple) else (b,),
                      strict=True):
        np.testing.assert_allclose(ga, gb, rtol=1e-11, atol=1e-13)


@pytest.mark.parametrize("jit", [False, True], ids=["nojit", "jit"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_equals_the_plain_loop(name, jit):
    ck, plain, args, wrt = CASES[name]
    g_ck = jg.value_and_grad(ck, wrt=wrt, jit=jit)
    g_plain = jg.value_and_grad(plain, wrt=wrt, jit=jit)
    for T, k in SCHEDULES:
        before = [a.copy() for a in args if isinstance(a, np.ndarray)]
        v1, d1 = g_ck(*args, T, k)
        v2, d2 = g_plain(*args, T, k)
        assert v1 == pytest.approx(v2, rel=1e-12, abs=1e-14), (T, k)
        _same(d1, d2)
        for a, b in zip([a for a in args if isinstance(a, np.ndarray)], before, strict=True):
            np.testing.assert_array_equal(a, b)  # inputs unchanged
    # the primal (the user's function as Numba or Python runs it) is the plain loop's value
    assert jg.differentiate(ck, wrt=wrt, jit=jit)(*args, 41, 6) == \
        pytest.approx(plain(*args, 41, 6), rel=1e-12)


@pytest.mark.parametrize("jit", [False, True], ids=["nojit", "jit"])
@pytest.mark.parametrize("name", ["lorenz", "lorenz_rk4", "heat_buffers", "inner_while"])
def test_finite_differences(name, jit):
    ck, _, args, wrt = CASES[name]
    check_grad(ck, (*args, 23, 5), wrt=wrt, jit=jit, rtol=1e-5, atol=1e-7)


def test_keeps_snapshots_not_a_tape_per_step():
    """The reverse sweep holds the snapshots and one step's tape at a time (binomial
    schedule), also inside another loop (a region rerun on the binomial schedule)."""
    src = jg.grad(lorenz, jit=False).source(P, 400, 20)
    assert "restore_into" not in src  # scalars only: restored by rebinding
    assert "binomial schedule (revolve), snapshots of x, y, z, acc" in src
    assert "revolve_split(" in src and "for _s in range(0, _steps, _seg):" not in src
    src = jg.grad(heat_inplace, wrt=(0, 1), jit=False).source(U0, 0.2, 40, 5)
    assert src.count("load_slot(u, _snaps_u, _top)") == 1  # the state array, in place
    src = jg.grad(nested, jit=False).source(X2, 5)
    assert "for _s in range(0, _steps, _seg):" not in src and "revolve_split" in src


def _region(u, a):
    for i in range(1, u.shape[0] - 1):
        u[i] = u[i] * a + u[i - 1] * 0.1
    return np.sum(u)


def region_writes_outer(x, a):
    u = x * 2.0
    s = jg.checkpoint(_region, u, a)
    return s + np.sum(u * u)


def region_writes_outer_plain(x, a):
    u = x * 2.0
    s = _region(u, a)
    return s + np.sum(u * u)


@pytest.mark.parametrize("jit", [False, True], ids=["nojit", "jit"])
def test_checkpoint_region_writes_an_array_from_outside(jit):
    """jg.checkpoint(f, u) where f writes u in place: u is snapshot at entry and written back
    before the rerun (this was refused)."""
    x = np.linspace(0.3, 1.4, 6)
    check_grad(region_writes_outer, (x, 0.8), wrt=(0, 1), jit=jit)
    _same(jg.grad(region_writes_outer, wrt=(0, 1), jit=jit)(x, 0.8),
          jg.grad(region_writes_outer_plain, wrt=(0, 1), jit=jit)(x, 0.8))


def breaks_out(x, T):
    s = 0.0
    for t in jg.checkpointed(range(T), snapshots=4):
        s = s + x[0] * t
        if s > 3.0:
            break
    return s


def returns_early(x, T):
    s = 0.0
    for t in jg.checkpointed(range(T), snapshots=4):
        s = s + x[0] * t
        if s > 3.0:
            return s
    return s


def not_a_range(x, T):
    s = 0.0
    for v in jg.checkpointed(x, snapshots=2):
        s = s + v
    return s


@pytest.mark.parametrize("f,words", [(breaks_out, "break"), (returns_early, "break (or return)"),
                                     (not_a_range, "takes a range")])
def test_refusals_name_the_line(f, words):
    with pytest.raises(TransformError) as e:
        jg.grad(f, jit=False)(np.ones(3), 5)
    msg = str(e.value)
    assert words in msg and __file__.rsplit("/", 1)[-1] in msg
    assert e.value.lineno is not None


def test_outside_differentiated_code_it_is_the_range():
    assert jg.checkpointed(range(5), snapshots=2) == range(5)
    assert lorenz(P, 30, 4) == lorenz_plain(P, 30, 4)


@pytest.mark.parametrize("name", ["lorenz", "heat_buffers", "inner_while"])
def test_forward_mode_and_hvp_see_the_plain_loop(name):
    """In forward mode a checkpointed loop is the loop (its regions run once); the
    Hessian-vector product (forward over the reverse code) goes through the binomial
    driver, its snapshot slots carrying tangents (test_checkpointed_hvp.py)."""
    ck, plain, args, wrt = CASES[name]
    w = wrt if isinstance(wrt, int) else wrt[0]
    v = np.linspace(0.2, 1.0, np.size(args[w])).reshape(np.shape(args[w]))
    full = (*args, 23, 5)
    y1, t1 = jg.jvp(ck, full, v, wrt=w, jit=False)
    y2, t2 = jg.jvp(plain, full, v, wrt=w, jit=False)
    assert y1 == pytest.approx(y2, rel=1e-12)
    np.testing.assert_allclose(t1, t2, rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(jg.hvp(ck, full, v, wrt=w, jit=False),
                               jg.hvp(plain, full, v, wrt=w, jit=False), rtol=1e-10, atol=1e-12)


# --- the binomial schedule ------------------------------------------------------------

from functools import lru_cache  # noqa: E402

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from jitgrad.kernels.revolve import revolve_split, simulate, snapshot_count  # noqa: E402


@lru_cache(None)
def _reverse_cost(n: int, free: int) -> int:
    """Fewest untaped step runs to reverse n steps whose first state is kept, with ``free``
    more slots (the last step runs taped from its own state): Griewank and Walther's."""
    if n == 1:
        return 0
    if free == 0:
        return n * (n - 1) // 2
    return min(j + _reverse_cost(n - j, free - 1) + _reverse_cost(j, free)
               for j in range(1, n))


@lru_cache(None)
def _optimum(n: int, free: int) -> int:
    """The same when the forward sweep must run all n steps (the loop's value is needed
    after it), by brute force over the first snapshot's place."""
    if n == 1:
        return 1
    if free == 0:
        return n + _reverse_cost(n, 0)
    return min(j + _optimum(n - j, free - 1) + _reverse_cost(j, free) for j in range(1, n))


def test_schedule_reverses_each_step_once_in_order_with_k_slots_at_the_optimum():
    for T in range(1, 61):
        for k in range(1, T + 2):
            order = np.zeros(T, np.int64)
            runs = np.zeros(T, np.int64)
            untaped, taped, peak = simulate(T, k, order, runs)
            assert list(order) == list(range(T - 1, -1, -1)), (T, k)
            assert taped == T and peak <= k and runs.sum() == untaped
            assert untaped == _optimum(T, min(k, T) - 1), (T, k)
    assert simulate(0, 3, order[:0], runs[:0]) == (0, 0, 0)


def test_schedule_report():
    s = jg.schedule(10**6, 32, state_bytes=24, step_tape_bytes=64)
    assert (s.snapshots, s.taped, s.peak_snapshots) == (32, 10**6, 32)
    assert s.peak_tape_bytes == 64 and s.peak_bytes == 32 * 24 + 64
    assert 6 < s.recompute_factor < 7 and s.repetitions == 6
    d = jg.schedule(10**4)  # snapshots=None: each step recomputed at most once
    assert d.repetitions == 2 and d.recompute_factor <= 3.0
    assert snapshot_count(10**4, -1) == d.snapshots == 140
    assert jg.schedule(12, 40).recompute_factor == 2.0  # a slot per step: no recompute
    assert "recompute factor" in str(s)
    assert revolve_split(0, 1, 5) == 1 and revolve_split(0, 10, 0) == 10


@pytest.fixture(scope="module")
def compiled():
    """Compiled gradients of every case, checkpointed and plain (compiled once)."""
    return {(n, jit): (jg.value_and_grad(ck, wrt=wrt, jit=jit),
                       jg.value_and_grad(plain, wrt=wrt, jit=jit))
            for n, (ck, plain, _, wrt) in CASES.items() for jit in (False, True)}


@pytest.mark.parametrize("name", ["lorenz_rk4", "heat_inplace", "heat_buffers", "inner_while"])
def test_long_loops_and_every_snapshot_count(compiled, name):
    """T up to a few thousand (compiled), snapshots from 1 to T (small T, both modes)."""
    _, _, args, _ = CASES[name]
    ck, plain = compiled[(name, True)]
    for T, k in [(2500, 1), (2500, 7), (3000, 32), (3000, 78), (3000, 3000)]:
        v1, d1 = ck(*args, T, k)
        v2, d2 = plain(*args, T, k)
        assert v1 == pytest.approx(v2, rel=1e-12)
        _same(d1, d2)
    for jit in (False, True):
        ck, plain = compiled[(name, jit)]
        for T in (1, 2, 5, 9):
            for k in range(1, T + 1):
                _same(ck(*args, T, k)[1], plain(*args, T, k)[1])


@pytest.mark.parametrize("jit", [False, True], ids=["nojit", "jit"])
@pytest.mark.parametrize("name", ["heat_inplace", "sqrt_default"])
def test_finite_differences_more(name, jit):
    ck, _, args, wrt = CASES[name]
    check_grad(ck, (*args, 17, 3), wrt=wrt, jit=jit, rtol=1e-5, atol=1e-7)


@settings(max_examples=40, deadline=None)
@given(T=st.integers(0, 120), k=st.integers(1, 130),
       name=st.sampled_from(["lorenz_rk4", "heat_inplace", "heat_buffers", "inner_while"]))
def test_property_equals_the_plain_loop(compiled, T, k, name):
    _, _, args, _ = CASES[name]
    ck, plain = compiled[(name, True)]
    v1, d1 = ck(*args, T, k)
    v2, d2 = plain(*args, T, k)
    assert v1 == pytest.approx(v2, rel=1e-12, abs=1e-14)
    _same(d1, d2)


def test_nested_loop():
    for jit in (False, True):
        _same(jg.grad(nested, jit=jit)(X2, 7), jg.grad(nested_plain, jit=jit)(X2, 7))


def _trajectory(x, T):
    out = np.zeros(T)
    y = x[0]
    for t in jg.checkpointed(range(T), snapshots=3):
        y = y * 0.9 + math.sin(y * x[1]) * 0.1
        out[t] = y  # written, never read in the loop: not part of the state
    return np.sum(out * out)


def _changed_after(x, T):
    c = x * 1.0
    y = x[0]
    for t in jg.checkpointed(range(T), snapshots=3):
        y = y * 0.9 + math.sin(y * c[1]) * 0.1
    c[1] = 5.0  # read by the loop, changed after it: kept once
    return y + np.sum(c * c)


def _view_written(x, T):
    u = x * 1.0
    v = u[1:]
    s = 0.0
    for t in jg.checkpointed(range(T), snapshots=2):
        for i in range(v.shape[0]):
            v[i] = v[i] * 0.5 + u[i] * 0.3  # u changes through its view
        s = s + u[0] * u[2]
    return s + np.sum(u * u)


def _rebinds_array(x, T):
    u = x * 1.0
    for t in jg.checkpointed(range(1, T, 2), snapshots=2):
        u = np.sin(u) * 0.9 + x * 0.1 * t
    return np.sum(u)


def _counts_down(x, T):
    y = x[0]
    c = 0
    flag = False
    for t in jg.checkpointed(range(T, 0, -2), snapshots=2):  # int and bool state too
        y = y * 0.9 + math.sin(y * x[1]) * 0.1 * t
        c += 1
        if c % 3 == 0:
            flag = not flag
        if flag:
            y = y * 1.01
    return y + c


def _writes_its_argument(x, T):
    for t in jg.checkpointed(range(T), snapshots=3):
        for i in range(1, x.shape[0]):
            x[i] = x[i] * 0.8 + math.sin(x[i - 1]) * 0.2
    return np.sum(x * x)


def _used_after(x, T):
    y = x[0]
    last = 0.0
    for t in jg.checkpointed(range(T), snapshots=3):
        last = y * x[1]  # bound before it is read: not state, its last value used after
        y = math.tanh(y + last)
    return last * y


def _rebound_in_a_branch(x, T):
    u = x.copy()
    w = np.zeros(3)
    for t in jg.checkpointed(range(T), snapshots=2):
        if t % 2 == 0:
            w = u * 0.5
        u = np.sin(u + w)
    return np.sum(u) + np.sum(w)


@pytest.mark.parametrize("jit", [False, True], ids=["nojit", "jit"])
@pytest.mark.parametrize("f", [_trajectory, _changed_after, _view_written, _rebinds_array,
                               _counts_down, _writes_its_argument, _used_after,
                               _rebound_in_a_branch])
def test_state_shapes(f, jit):
    x = np.array([0.7, 1.3, 0.4])
    check_grad(f, (x, 9), wrt=0, jit=jit, rtol=1e-6, atol=1e-8)
    assert np.array_equal(x, [0.7, 1.3, 0.4])  # inputs unchanged
    assert "revolve_split" in jg.grad(f, jit=False).source(x, 9)


def _reads_before_binding(x, T):
    y = x[0]
    for t in jg.checkpointed(range(T), snapshots=3):
        if t == 0:
            prev = 0.0
        y = y + prev  # the previous step's, except in the first
        prev = y * x[1]
    return y


def test_state_without_a_value_before_the_loop_is_refused():
    with pytest.raises(TransformError) as e:
        jg.grad(_reads_before_binding, jit=False)(np.array([0.7, 1.3]), 5)
    assert "prev" in str(e.value) and e.value.lineno is not None


def _index_after_its_loop(x, T, k):
    """``j`` is read after the inner loop that binds it (every step), bound again only
    after the checkpointed loop: the first step's snapshot would read it unbound (fuzz
    seed 24680 #866 crashed with ``UnboundLocalError``)."""
    s = 0.0
    for t in jg.checkpointed(range(T), snapshots=k):
        for j in range(x.shape[0]):
            s += x[j] * (t + 1.0)
        s += x[j] * 2.0
    for j in range(2):
        s += x[j]
    return s


@pytest.mark.parametrize("jit", [True, False])
def test_state_bound_only_after_the_loop_is_refused(jit):
    with pytest.raises(TransformError) as e:
        jg.grad(_index_after_its_loop, jit=jit)(np.array([0.7, 1.3, 0.2]), 4, 2)
    assert "'j'" in str(e.value) and e.value.lineno is not None


def test_peak_memory_does_not_grow_with_T():
    """snapshots=8: the snapshots and one step's tape, however many steps (jit=False, traced
    by tracemalloc); the plain loop's tape grows with T."""
    import tracemalloc

    def peak(f, T):
        tracemalloc.start()
        tracemalloc.reset_peak()
        f(P, T, 8)
        out = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return out

    ck, plain = jg.grad(lorenz_rk4, jit=False), jg.grad(lorenz_rk4_plain, jit=False)
    ck(P, 10, 8), plain(P, 10, 8)
    short, long = peak(ck, 60), peak(ck, 600)
    assert long < short + 2000, (short, long)  # bytes: no growth with T
    assert long * 5 < peak(plain, 600), (long, peak(plain, 600))


@pytest.mark.parametrize("jit", [False, True], ids=["nojit", "jit"])
def test_hvp_and_hessian_through_the_binomial_driver(jit):
    """Forward over the generated reverse code, scalar state: equal to the plain loop's."""
    v = np.array([0.3, -0.2, 0.5])
    np.testing.assert_allclose(jg.hvp(lorenz_rk4, (P, 40, 5), v, wrt=0, jit=jit),
                               jg.hvp(lorenz_rk4_plain, (P, 40, 5), v, wrt=0, jit=jit),
                               rtol=1e-11, atol=1e-14)
    np.testing.assert_allclose(jg.hessian(lorenz_rk4, wrt=0, jit=jit)(P, 40, 3),
                               jg.hessian(lorenz_rk4_plain, wrt=0, jit=jit)(P, 40, 3),
                               rtol=1e-11, atol=1e-14)


def _grows(x, T):
    u = x * 1.0
    for t in jg.checkpointed(range(T), snapshots=2):
        u = np.concatenate((u, x * 0.5))
    return np.sum(u * u)


def _shrinks(x, T):
    u = x * 1.0
    for t in jg.checkpointed(range(T), snapshots=2):
        u = u[1:] * 0.9
    return np.sum(u * u)


def _shrinks_in_a_call(x, T):
    u = x * 1.0
    for t in jg.checkpointed(range(T), snapshots=2):
        u = np.tanh(u[:-1])
    return np.sum(u * u)


def _keeps_its_shape(x, T):
    u = x * 1.0
    for t in jg.checkpointed(range(T), snapshots=2):
        u = np.tanh(u[0:]) * 2.0 + u[::1]
    return np.sum(u * u)


@pytest.mark.parametrize("f,line", [(_grows, "np.concatenate((u, x * 0.5))"),
                                    (_shrinks, "u = u[1:] * 0.9"),
                                    (_shrinks_in_a_call, "np.tanh(u[:-1])")])
def test_state_changing_shape_is_refused_at_its_line(f, line):
    """A state array rebound to another shape: its snapshots and adjoint need one shape
    (the gradient of such a loop came out wrong or crashed when compiled)."""
    with pytest.raises(TransformError) as e:
        jg.grad(f, jit=False)(np.linspace(0.1, 0.9, 6), 3)
    msg = str(e.value)
    assert "'u' changes shape" in msg and line in msg and e.value.lineno is not None


@pytest.mark.parametrize("jit", [False, True], ids=["nojit", "jit"])
def test_slices_that_keep_the_shape_are_not_refused(jit):
    check_grad(_keeps_its_shape, (np.linspace(0.1, 0.9, 6), 3), wrt=0, jit=jit, rtol=1e-6,
               atol=1e-8)


def swap_then_view(w, s, T, k):
    """After a checkpointed loop that swaps two buffers, a view of one feeds a scalar's
    adjoint: the loop's reverse recomputes into those buffers, so that adjoint term must
    not be moved past it (fuzzer find: ds read the view after the reverse changed it)."""
    r = s * s
    D = w * w
    B = np.zeros_like(D)
    for t in jg.checkpointed(range(T), snapshots=k):
        for e in range(len(D)):
            B[e] = 0.5 * D[e]
        D, B = (B, D)
    B = D[::1] * s
    r /= B[2]
    return r


def swap_then_view_plain(w, s, T, k):
    r = s * s
    D = w * w
    B = np.zeros_like(D)
    for t in range(T):
        for e in range(len(D)):
            B[e] = 0.5 * D[e]
        D, B = (B, D)
    B = D[::1] * s
    r /= B[2]
    return r


@pytest.mark.parametrize("jit", [False, True], ids=["nojit", "jit"])
def test_view_of_swapped_buffer_after_the_loop(jit):
    w, s = np.array([0.53, -0.61, -0.79, -0.41]), 0.84
    g_ck = jg.value_and_grad(swap_then_view, wrt=(0, 1), jit=jit)
    g_plain = jg.value_and_grad(swap_then_view_plain, wrt=(0, 1), jit=jit)
    for T, k in [(3, 2), (4, 2), (7, 3), (1, 1)]:
        v1, d1 = g_ck(w, s, T, k)
        v2, d2 = g_plain(w, s, T, k)
        assert v1 == pytest.approx(v2, rel=1e-12)
        _same(d1, d2)
        check_grad(swap_then_view, (w, s, T, k), wrt=(0, 1), jit=jit, rtol=1e-5, atol=1e-7,
                   shared=True)
