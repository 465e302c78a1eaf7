"""Adversarial programs against the newest features: store-or-recompute, kept workspaces,
prange and carried njit options, binomial checkpointing, the gather and promote passes.

Each program is built to catch one way a shortcut could read a value that has changed by
the time the adjoint runs (an element written through a view, a helper or a call, a
rebound or swapped name, a loop-carried scalar, a branch, ``break``/``continue``, an
inner loop, integer index arithmetic).  Every gradient element is checked against
central finite differences, without Numba for all of them and compiled for a set that
covers each feature; the two bugs this found are pinned first: calls that write into an
array out of the assignments' sight (``y.fill(0.5)``, ``np.copyto``, ``out=``,
``k.sort()``) gave silently wrong gradients and are refused at their line, and
``parallel=True`` code whose prange loops all run serially crashed in Numba's array
analysis."""

from __future__ import annotations

import doctest
import math
import threading

import numba
import numpy as np
import pytest
from gradcheck import check_grad, numeric_grad
from numba import prange

import jitgrad as jg
from jitgrad.errors import TransformError
from jitgrad.rules.primitives import declare, hides_writes


def vec(n, seed=0, lo=0.3, hi=0.9):
    return np.random.default_rng(seed).uniform(lo, hi, n)


# --- calls that write into an array: refused at their line ----------------------------


def fill_between(x):
    y = x * 2.0
    t = y[1] * 0.5  # cheap: recomputed from y[1] in the adjoint, after the fill
    y.fill(0.3)
    return t * t + y[0] * x[0]


def copyto_between(x):
    y = x * 2.0
    t = y[1] * 0.5
    np.copyto(y, x * 0.3)
    return t * t + y[0] * x[0]


def out_statement(x):
    y = x * 2.0
    t = y[1] * 0.5
    np.multiply(x, 3.0, out=y)
    return t * t + y[0] * x[0]


def out_assigned(x):
    y = x * 2.0
    c = np.ones(4)
    z = np.multiply(c, 3.0, out=y)  # c carries no gradient: y is written all the same
    return y[0] * x[0] + z[1]


def sort_in_place(x):
    y = x * 2.0
    t = y[1] * 0.5
    y.sort()
    return t * t + y[0] * x[0]


def sort_index_array(x, idx):
    k = idx.copy()
    t = x[k[0]] * 0.5
    k.sort()  # an integer array: what x[k[0]] reads after it changes
    return t * t * x[k[0]]


def fill_in_loop(x, n):
    y = x.copy()
    s = 0.0
    for i in range(n):
        s = s + y[i] * y[i]
    y.fill(0.5)
    for i in range(n):
        s = s + y[i] * x[i]
    return s


HIDDEN_WRITES = [
    (fill_between, (vec(4),), "y.fill(0.3)", "'y.fill(...)' may change the array 'y'"),
    (copyto_between, (vec(4),), "np.copyto(y, x * 0.3)", "'np.copyto(...)'"),
    (out_statement, (vec(4),), "np.multiply(x, 3.0, out=y)", "'np.multiply(...)'"),
    (out_assigned, (vec(4),), "z = np.multiply(c, 3.0, out=y)", "array 'y' in place"),
    (sort_in_place, (vec(4),), "y.sort()", "'y.sort(...)'"),
    (sort_index_array, (vec(4), np.array([3, 1, 0, 2])), "k.sort()", "array 'k' in place"),
    (fill_in_loop, (vec(4), 4), "y.fill(0.5)", "'y.fill(...)'"),
]


@pytest.mark.parametrize("f, args, line, msg", HIDDEN_WRITES,
                         ids=[c[0].__name__ for c in HIDDEN_WRITES])
def test_call_writing_an_array_is_refused_at_its_line(f, args, line, msg):
    with pytest.raises(TransformError) as e:
        jg.grad(f, jit=False)(*args)
    text = str(e.value)
    assert msg in text and line in text and "hint:" in text, text
    assert e.value.lineno is not None


@pytest.mark.parametrize("f, args, line, msg", HIDDEN_WRITES,
                         ids=[c[0].__name__ for c in HIDDEN_WRITES])
def test_forward_mode_refuses_a_call_writing_an_active_array(f, args, line, msg):
    """The tangent would keep the old values' tangent; a write into an inactive array (an
    index array) only changes primal values, which forward mode follows in order."""
    v = np.random.default_rng(0).normal(size=args[0].shape)
    if f is sort_index_array:
        _, tan = jg.jvp(f, args, v, jit=False)
        np.testing.assert_allclose(tan, np.dot(numeric_grad(f, args, 0), v), rtol=1e-6)
        return
    with pytest.raises(TransformError, match="in place") as e:
        jg.jvp(f, args, v, jit=False)
    assert line in str(e.value)


def print_and_pure_calls(x, n):
    y = x * 2.0
    print(y[0] > 100.0)
    np.sum(y)  # a primitive's result dropped: pure
    y.sum()
    return y[0] * y[1] + np.sum(y * x)


def test_pure_calls_for_effect_are_kept():
    check_grad(print_and_pure_calls, (vec(4), 4), jit=False)


@numba.njit
def _peek_first(y):
    return y[0]


@numba.njit
def _fill_half(y):
    y[:] = 0.5
    return 0.0


jg.non_differentiable(_peek_first)
jg.non_differentiable(_fill_half)
declare(_fill_half, hides_writes=True)


def peek_statement(x):
    y = x * 2.0
    _peek_first(y)  # declared non-differentiable: its dropped result hides no write
    return y[0] * y[1] + np.sum(y * x)


def fill_statement(x):
    y = x * 2.0
    _fill_half(y)  # the table says it hides a write: refused
    return np.sum(y * x)


def test_non_differentiable_call_for_effect_is_kept(jit):
    """The primitive table's ``hides_writes`` fact: a user's ``non_differentiable``
    function whose result is dropped writes no array unless its record says so."""
    assert not hides_writes(_peek_first) and not hides_writes(print)
    assert hides_writes(_fill_half) and hides_writes(fill_in_loop)
    check_grad(peek_statement, (vec(4),), jit=jit)
    with pytest.raises(TransformError, match="'_fill_half\\(...\\)' may change the array 'y'"):
        jg.grad(fill_statement, jit=jit)(vec(4))


def test_hidden_write_doctest():
    from jitgrad.transpiler.analysis import effects

    assert doctest.testmod(effects).failed == 0


# --- parallel=True code whose prange loops all run serially ------------------------------


@numba.njit(parallel=True)
def dot_of_local(x, k):
    """The adjoint pops the local array from a list tape after zeroing its adjoint: Numba's
    parfor array analysis (numba 0.68) sized the popped array as empty."""
    s = 0.0
    for i in range(x.shape[0]):
        tmp = np.zeros(3)
        for j in range(3):
            tmp[j] = x[i] * (j + k)
        s = s + np.dot(tmp, tmp) * x[i]
    return s


@numba.njit(parallel=True)
def prange_local_array(x, k):
    s = 0.0
    for i in prange(x.shape[0]):  # serial in the sweeps: the tape push runs for its effect
        tmp = np.zeros(3)
        for j in range(3):
            tmp[j] = x[i] * (j + k)
        s += np.sum(tmp * tmp)
    return s


@pytest.mark.parametrize("f", [dot_of_local, prange_local_array])
def test_parallel_code_with_serial_sweeps(f, jit):
    check_grad(f, (vec(5), 0.5), wrt=(0, 1), jit=jit)


# --- store or recompute: operands changed by the time the adjoint runs -------------------


def view_write(x, n):
    y = x.copy()
    v = y[1:]
    s = 0.0
    for i in range(n - 1):
        t = y[i + 1] * 0.5
        v[i] = t * t + 0.1  # writes the y[i + 1] that t was made from
        s = s + t * y[i + 1]
    return s


def view_read_base_written(x, n):
    y = x.copy()
    v = y[1:]
    s = 0.0
    for i in range(n - 1):
        t = v[i] * 0.5
        y[i + 1] = t * t + 0.1
        s = s + t * v[i]
    return s


def _bump(a, i, val):
    a[i] = a[i] * 0.5 + val


def helper_write(x, n):
    y = x.copy()
    s = 0.0
    for i in range(n):
        t = y[i] * 2.0
        _bump(y, i, t)
        s = s + t * y[i]
    return s


def helper_view_write(x, n):
    y = x.copy()
    s = 0.0
    for i in range(n - 1):
        t = y[i + 1] * 2.0
        _bump(y[1:], i, t)
        s = s + t * y[i + 1]
    return s


def scalar_swap(x, n):
    a = 0.5
    b = 1.5
    s = 0.0
    for i in range(n):
        t = a * x[i]
        a, b = b, a
        s = s + t * a
    return s


def array_swap(x, n):
    u = x.copy()
    w = x * 2.0
    s = 0.0
    for i in range(n):
        t = u[i] * 0.5
        u, w = w, u
        u[i] = t * t
        s = s + t * u[i]
    return s


def branch_write(x, n):
    y = x.copy()
    s = 0.0
    for i in range(n):
        t = y[i] * 0.5
        if x[i] > 0.5:
            y[i] = t * 3.0
        s = s + t * y[i]
    return s


def while_break(x, n):
    s = 0.0
    i = 0
    a = 0.3
    while i < n:
        t = a * x[i]
        a = a + x[i] * 0.1
        s = s + t * t
        if s > 1.0:
            break
        i = i + 1
    return s + a


def nested_changes(x, n):
    s = 0.0
    c = 1.0
    for k in range(3):
        c = c * x[k] + 0.2  # the inner loop's operand, new each outer trip
        for j in range(n):
            t = c * x[j]
            s = s + t * t
    return s


def nested_array(x, n):
    y = x.copy()
    s = 0.0
    for k in range(3):
        for j in range(n):
            t = y[j] * 0.5
            s = s + t * t
        y[k] = y[k] * 1.5 + s * 0.01
    return s


def index_offset(x, n):
    s = 0.0
    off = 0
    for i in range(n):
        k = (i + off) % n
        t = x[k] * 0.5
        off = off + 1
        s = s + t * t * x[k]
    return s


def index_array_written(x, idx, n):
    idx2 = idx.copy()
    y = x.copy()
    s = 0.0
    for i in range(n):
        t = y[idx2[i]] * 0.5
        idx2[i] = (idx2[i] + 1) % n
        s = s + t * t * y[idx2[i]]
    return s


def cond_overwritten(x, n):
    y = x.copy()
    s = 0.0
    for i in range(n):
        c = y[i] > 0.6
        y[i] = 1.2 - y[i]
        if c:
            s = s + y[i] * y[i]
        else:
            s = s + y[i] * 3.0
    return s


def loop_bound_rebound(x, n):
    s = 0.0
    m = n
    for i in range(m):
        t = x[i] * 0.5
        m = m - 1
        s = s + t * t * x[m]
    return s


def index_after_two_loops(x, n):
    s = 0.0
    for i in range(n):
        s = s + x[i] * x[i]
    t = x[i] * 0.5
    for i in range(n - 2):
        s = s + x[i] * t
    return s * t


def int_from_float_written(x, n):
    y = x.copy()
    s = 0.0
    for i in range(n):
        k = int(y[i] * 3.0)
        t = y[k] * 0.5
        y[k] = y[k] * 0.9
        s = s + t * t
    return s


def swap_carried(x, n):
    a = 0.3
    b = 0.7
    s = 0.0
    for i in range(n):
        t = a * x[i]
        a, b = b, a + t
        s = s + a * b * x[i]
    return s


def continue_before_update(x, n):
    a = 0.3
    s = 0.0
    for i in range(n):
        if x[i] > 0.6:
            continue
        t = a * x[i]
        a = a * 0.5 + t
        s = s + a * a
    return s


def carried_inner_loop_write(x, n):
    a = 0.3
    s = 0.0
    for i in range(n):
        t = a * x[i]
        a = a * 0.5 + t
        for _j in range(2):
            a = a * 0.9
        s = s + a * t
    return s


def joint_chain(x, n):
    a = 0.3
    b = 0.2
    s = 0.0
    for i in range(n):
        k1 = a * b
        k2 = (a + 0.5 * k1) * b
        k3 = (a + 0.5 * k2) * b
        a = a + (k1 + 2.0 * k2 + k3) * 0.1 + x[i]
        b = b * 0.9 + k3 * 0.1
        s = s + k1 * k2 * k3 + a * b
    return s


IDX = np.array([3, 1, 4, 0, 2, 5])
RECOMPUTE = {f.__name__: (f, args) for f, args in [
    (view_write, (vec(5), 5)), (view_read_base_written, (vec(5), 5)),
    (helper_write, (vec(4), 4)), (helper_view_write, (vec(5), 5)),
    (scalar_swap, (vec(5), 5)), (array_swap, (vec(5), 5)), (branch_write, (vec(6, 1), 6)),
    (while_break, (vec(8), 8)), (nested_changes, (vec(4), 4)), (nested_array, (vec(4), 4)),
    (index_offset, (vec(5), 5)), (index_array_written, (vec(6), IDX, 6)),
    (cond_overwritten, (vec(6, 2), 6)), (loop_bound_rebound, (vec(6), 6)),
    (index_after_two_loops, (vec(5), 5)), (int_from_float_written, (vec(5), 5)),
    (swap_carried, (vec(6), 6)), (continue_before_update, (vec(6), 6)),
    (carried_inner_loop_write, (vec(6), 6)), (joint_chain, (vec(6), 6)),
]}
#: compiled too (each costs a Numba compile): one per way an operand changes
RECOMPUTE_JIT = ["view_write", "helper_view_write", "array_swap", "while_break",
                 "index_array_written", "swap_carried"]


@pytest.mark.parametrize("name", list(RECOMPUTE))
def test_recompute_soundness(name):
    f, args = RECOMPUTE[name]
    check_grad(f, args, jit=False)


@pytest.mark.parametrize("name", RECOMPUTE_JIT)
def test_recompute_soundness_compiled(name):
    f, args = RECOMPUTE[name]
    check_grad(f, args, jit=True)


# --- workspaces kept across calls ---------------------------------------------------------


def loopy(x, n):
    y = x.copy()
    s = 0.0
    a = 0.3
    for i in range(n):
        k = i % x.shape[0]
        t = math.exp(y[k] * 0.3)
        a = a * 0.5 + t * x[k] * 0.1
        y[k] = y[k] * 0.5 + a * 0.1
        s = s + t * a
    if n > 1000:
        raise ValueError("too many steps")
    return s + np.sum(y * y)


@pytest.fixture(scope="module", params=[True, False], ids=["jit", "nojit"])
def loopy_grad(request):
    return jg.grad(loopy, jit=request.param)


def _close_to_fd(g, x, n, tol=1e-5):
    fd = numeric_grad(loopy, (x.astype(np.float64), n), 0)
    np.testing.assert_allclose(g, fd, rtol=tol, atol=tol)


def test_workspace_sizes_trips_and_dtypes(loopy_grad):
    """Grow, shrink, zero trips, float32 after float64: every call against differences."""
    rng = np.random.default_rng(0)
    for n, m in [(5, 4), (40, 7), (3, 2), (60, 9), (1, 1), (0, 3), (2, 30), (7, 7)]:
        x = rng.uniform(0.2, 0.8, m)
        _close_to_fd(loopy_grad(x, n), x, n)
        _close_to_fd(loopy_grad(x.astype(np.float32), n), x.astype(np.float32), n, tol=1e-3)


def test_workspace_after_an_exception(loopy_grad):
    rng = np.random.default_rng(1)
    x = rng.uniform(0.2, 0.8, 5)
    _close_to_fd(loopy_grad(x, 30), x, 30)
    with pytest.raises(ValueError):
        loopy_grad(x, 2000)
    for n in (30, 4):
        _close_to_fd(loopy_grad(x, n), x, n)


def test_workspace_threads(loopy_grad):
    errors = []

    def worker(seed):
        r = np.random.default_rng(seed)
        for _ in range(6):
            n, m = int(r.integers(0, 50)), int(r.integers(1, 9))
            x = r.uniform(0.2, 0.8, m)
            try:
                _close_to_fd(loopy_grad(x, n), x, n)
            except AssertionError as e:  # (raised in the thread: reported here)
                errors.append((seed, n, m, str(e)[:200]))

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_hvp_and_jvp_workspaces_across_calls(jit):
    rng = np.random.default_rng(2)
    g = jg.grad(loopy, jit=False)
    for n, m in [(5, 4), (30, 7), (0, 2), (9, 4)]:
        x, v = rng.uniform(0.2, 0.8, m), rng.normal(size=m)
        ref = (g(x + 1e-5 * v, n) - g(x - 1e-5 * v, n)) / 2e-5
        np.testing.assert_allclose(jg.hvp(loopy, (x, n), v, jit=jit), ref, rtol=1e-4,
                                   atol=1e-5)
        _, tan = jg.jvp(loopy, (x, n), v, jit=jit)
        np.testing.assert_allclose(tan, np.dot(g(x, n), v), rtol=1e-6, atol=1e-8)


# --- binomial checkpointing ---------------------------------------------------------------


def ckpt_counter_index(x, T, k):
    y = x.copy()
    c = 0
    s = 0.0
    for _t in jg.checkpointed(range(T), snapshots=k):
        s = s + y[c] * y[(c + 1) % 4]
        y[c] = math.sin(y[c]) + s * 0.1
        c = (c + 3) % 4
    return s + np.sum(y)


def ckpt_view_state(x, T, k):
    u = x.copy()
    v = u[1:]
    s = 0.0
    for _t in jg.checkpointed(range(T), snapshots=k):
        for i in range(v.shape[0]):
            v[i] = v[i] * 0.8 + math.sin(u[i]) * 0.3
        s = s + u[0] * v[0]
    return s + np.sum(u * u)


def ckpt_stepped(x, T, k):
    y = x[0]
    s = 0.0
    for t in jg.checkpointed(range(T, 0, -2), snapshots=k):
        y = math.sin(y * x[1]) + y * 0.5 + t * 0.01
        s = s + y * t
    return s + y


def ckpt_cond_state(x, T, k):
    y = x[0]
    c = x[1]
    for t in jg.checkpointed(range(T), snapshots=k):
        if t % 2 == 0:
            c = c * 0.9 + y * 0.1
        y = math.sin(y * c) + y * 0.5
    return y + c


def ckpt_inner_index_live(x, T, k):
    y = x.copy()
    j = 0
    s = 0.0
    for t in jg.checkpointed(range(T), snapshots=k):
        for j in range(t % 3 + 1):
            y[j] = y[j] * 0.9 + math.cos(y[j + 1]) * 0.1
        s = s + y[j] * y[j]
    return s


def ckpt_while_inside(x, T, k):
    y = x[0]
    for _t in jg.checkpointed(range(T), snapshots=k):
        z = y
        while z < 2.0:
            z = z * 1.7 + 0.1
        y = math.sin(z) * 0.5 + y * x[1]
    return y


def ckpt_read_after_write(x, T, k):
    w = x * 1.0
    u = x.copy()
    for _t in jg.checkpointed(range(T), snapshots=k):
        u = np.tanh(u * w) + 0.1
    w[0] = 5.0 * w[1]
    return np.sum(u * w)


CHECKPOINTED = [ckpt_counter_index, ckpt_view_state, ckpt_stepped, ckpt_cond_state,
                ckpt_inner_index_live, ckpt_while_inside, ckpt_read_after_write]


@pytest.mark.parametrize("f", CHECKPOINTED, ids=[f.__name__ for f in CHECKPOINTED])
@pytest.mark.parametrize("T, k", [(0, 2), (1, 1), (7, 3), (6, 6)])
def test_checkpointed(f, T, k):
    check_grad(f, (vec(4), T, k), jit=False)


@pytest.mark.parametrize("f", [ckpt_view_state, ckpt_inner_index_live],
                         ids=["view_state", "inner_index_live"])
def test_checkpointed_compiled_and_hvp(f):
    args = (vec(4), 7, 3)
    check_grad(f, args, jit=True)
    v = np.random.default_rng(0).normal(size=4)
    g = jg.grad(f, jit=False)
    ref = (g(args[0] + 1e-5 * v, 7, 3) - g(args[0] - 1e-5 * v, 7, 3)) / 2e-5
    np.testing.assert_allclose(jg.hvp(f, args, v, jit=False), ref, rtol=1e-4, atol=1e-6)


# --- gather and promote -------------------------------------------------------------------


def gather_neg_start(x, a):
    s = 0.0
    for i in range(a, x.shape[0] - 1):  # i < 0 wraps: the gather's edges
        s += x[i + 1] * math.sin(x[i]) + x[i - 1] * x[i]
    return s


def gather_big_offset(x):
    s = 0.0
    for i in range(x.shape[0] - 5):
        s += x[i + 5] * math.sin(x[i]) + x[i + 3] * x[i + 1]
    return s


def pair_through_self(pos):
    n = pos.shape[0]
    s = 0.0
    for i in range(n):
        for j in range(i + 1, -1, -1):  # starts past i, but runs down through it
            if j < n:
                d = pos[i] - pos[j]
                s = s + d * d * pos[i]
    return s


def pair_stop_below(pos):
    n = pos.shape[0]
    s = 0.0
    for i in range(n):
        for j in range(n - 1, i - 2, -1):
            d = pos[i] * pos[j] + pos[i]
            s = s + d * d
    return s


GATHER = [(gather_neg_start, (vec(7), -2)), (gather_neg_start, (vec(4), 0)),
          (gather_big_offset, (vec(9),)), (gather_big_offset, (vec(4),)),
          (pair_through_self, (vec(5),)), (pair_stop_below, (vec(5),))]


@pytest.mark.parametrize("f, args", GATHER,
                         ids=[f"{f.__name__}-{len(a[0])}" for f, a in GATHER])
def test_gather_and_promote(f, args, jit):
    check_grad(f, args, jit=jit)


# --- prange ------------------------------------------------------------------------------


@numba.njit(parallel=True)
def prange_branch(x, k):
    s = 0.0
    for i in prange(x.shape[0]):
        v = x[i] * k
        if v > 0.4:
            v = math.sin(v) * v
        s += v * v
    return s


@numba.njit(parallel=True)
def prange_gather(x, idx, k):
    s = 0.0
    for i in prange(idx.shape[0]):
        s += x[idx[i]] * x[idx[i]] * k
    return s


@pytest.mark.parametrize("f, args", [(prange_branch, (vec(6, 3), 0.9)),
                                     (prange_gather, (vec(5), np.array([1, 1, 3, 0, 4]), 0.5))],
                         ids=["branch", "gather"])
def test_prange(f, args, jit):
    check_grad(f, args, wrt=(0, len(args) - 1), jit=jit)


# --- a loop-carried array that changes shape -------------------------------------------


def grows_by_broadcasting(x, T):
    """``y`` has one element before the loop and ``x``'s three after its first trip: its one
    adjoint buffer (shaped like its last value) took the first trip's adjoint broadcast
    into three elements, and the gradient w.r.t. ``x[0]`` came out three times too big."""
    y = np.ones(1) * x[0]
    s = 0.0
    for _t in range(T):
        y = y * x + 0.1
        s = s + np.sum(y * y)
    return s


def grows_by_adding(x, T):
    y = np.ones(1) * x[0]
    s = 0.0
    for _t in range(T):
        y = y + x
        s = s + np.sum(y * y)
    return s


def shrinks_to_one(x, T):
    y = x * 1.0
    s = 0.0
    for _t in range(T):
        y = np.ones(1) * np.sum(y * y) * 0.5
        s = s + y[0]
    return s


@pytest.mark.parametrize("f", [grows_by_broadcasting, grows_by_adding, shrinks_to_one])
def test_loop_carried_array_changing_shape_raises(f):
    with pytest.raises(ValueError, match="does not have the shape of its value"):
        jg.grad(f, jit=False)(vec(3), 3)


def test_loop_carried_array_changing_shape_raises_compiled():
    with pytest.raises(ValueError, match="does not have the shape of its value"):
        jg.grad(grows_by_adding, jit=True)(vec(3), 3)


def test_loop_carried_array_keeping_its_shape(jit):
    """The same loop from an array of ``x``'s shape: the checks pass, the gradient holds."""
    check_grad(_same_shape_growth, (vec(3), 3), jit=jit)


def _same_shape_growth(x, T):
    y = x * 0.5
    s = 0.0
    for _t in range(T):
        y = y * x + 0.1
        s = s + np.sum(y * y)
    return s


# --- a view read in a loop that writes its base (fuzz seed 40417 #30) ------------------------
# The adjoint of ``np.sum(t)`` for the view ``t`` goes to ``dt``, the same view of ``dy``:
# ``dt += ...`` writes ``dy``.  The reversed loop writes names only, so the pass that drops
# loops whose results are rebound before they are read dropped it (all five gave 1, the
# derivative of the last line alone).


def _view_helper(uu):
    for i0 in range(len(uu)):
        uu[i0] += uu.T.sum() / 2.0


def view_in_helper(x):
    _view_helper(x)
    return np.sum(x)


def transposed_view(x):
    y = x.copy()
    for i in range(len(y)):
        t = y.T
        y[i] += np.sum(t)
    return np.sum(y)


def sliced_view(x):
    y = x.copy()
    for i in range(len(y)):
        t = y[:]
        y[i] += np.sum(t) * 0.5
    return np.sum(y * y)


def transpose_call(x):
    y = x.copy()
    for i in range(len(y)):
        y[i] += np.sum(np.transpose(y)) / 3.0
    return np.sum(y)


@pytest.mark.parametrize("f", [view_in_helper, transposed_view, sliced_view, transpose_call])
def test_view_read_in_a_loop_writing_its_base(f, jit):
    x = np.array([-0.6, 0.6, 0.13, -0.59, 0.34])
    check_grad(f, (x,), 0, jit=jit)
    v = np.array([0.3, -1.0, 0.5, 0.2, 0.9])
    _, t = jg.jvp(f, (x.copy(),), v, jit=jit)
    np.testing.assert_allclose(t, numeric_grad(f, (x.copy(),), 0) @ v, rtol=1e-5)
