"""Workspaces: the tapes of a compiled gradient are kept per thread between calls, grown
when a bigger input needs more, never handed to the caller, dropped by
``release_workspaces()``, and a reentrant call (from a hook) gets its own."""

from __future__ import annotations

import ast
import math
import re
import threading

import numpy as np
import pytest
from gradcheck import numeric_grad

import jitgrad as jg


def relax(x, k, n):
    s = 0.0
    for i in range(n):
        s = s + k * math.sin(s + x[i])
    return s * s


def two_tapes(x, n):
    s = 0.0
    for i in range(n):
        t = math.sin(x[i] * s + 0.3)
        if t > 0.0:
            s = s + t * t
        else:
            s = s - 0.5 * t
    return s * s


def smooth(u, steps):
    v = np.empty_like(u)
    for _ in range(steps):
        for i in range(1, u.shape[0] - 1):
            v[i] = 0.25 * u[i - 1] + 0.5 * u[i] + 0.25 * u[i + 1]
        v[0] = u[0]
        v[-1] = u[-1]
        u, v = v, u
    return np.sum(u * u)


def local_buffer(x, k):
    w = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        w[i] = math.sin(k * x[i])
    total = 0.0
    for i in range(1, x.shape[0]):
        total += w[i] * w[i - 1]
    return total


def straight(x, y):
    return x * y + math.sin(x)


def sine_map(u0, c, steps):
    """One snapshot of ``u`` per step (it is written in place and read by ``sin``)."""
    u = u0.copy()
    for _ in range(steps):
        u[:] = np.sin(u) * c + 0.1
    return np.sum(u * u)


def shrinking(u0, c, n):
    """Snapshots of views of another size each step: ``u[k:]``."""
    u = u0.copy()
    s = 0.0
    for k in range(n):
        w = u[k:]
        s = s + np.sum(np.sin(w))
        u[k:] = w * c
    return s + np.sum(u * u)


def _inner(u, a):
    t = 0.0
    for _ in range(3):
        t = t + np.sum(np.sin(u))
        u[:] = u * a
    return t


def region_in_loop(x, a, n):
    """The region's own tape is pushed again after pops (its rerun, once per trip)."""
    u = x.copy()
    s = 0.0
    for _ in range(n):
        s = s + jg.checkpoint(_inner, u, a)
        u[0] = u[0] * 0.5
    return s


def _pool(d):
    """This thread's kept workspaces of ``d``'s last specialisation."""
    return d._last.compiled.pool.__dict__


def _fd(f, args, wrt):
    return tuple(numeric_grad(f, args, i) for i in wrt)


@pytest.mark.parametrize("jit", [True, False])
def test_second_call_reuses_the_tapes(jit):
    d = jg.differentiate(relax, wrt=(0, 1), jit=jit)
    x = np.linspace(0.1, 0.9, 50)
    first = d.grad(x, 0.4, 50)
    ws = _pool(d)["grad_only"]
    assert all(t.shape[0] >= 50 for t in ws)
    second = d.grad(x, 0.4, 50)
    again = _pool(d)["grad_only"]
    assert all(a is b for a, b in zip(ws, again, strict=True)), "the same buffers"
    np.testing.assert_array_equal(first[0], second[0])
    assert first[1] == second[1]
    d.grad(x[:10], 0.4, 10)  # smaller: the same buffers again
    assert all(a is b for a, b in zip(ws, _pool(d)["grad_only"], strict=True))
    d.value_and_grad(x, 0.4, 50)  # the other variant has its own
    assert set(_pool(d)) == {"grad_only", "grad"}


@pytest.mark.parametrize("jit", [True, False])
def test_workspace_grows_and_gradients_stay_right(jit):
    d = jg.differentiate(two_tapes, wrt=0, jit=jit)
    rng = np.random.default_rng(3)
    for n in (5, 40, 3, 90, 40):  # grow, shrink, grow: every call checked against FD
        x = rng.uniform(-1.0, 1.0, n)
        g = d.grad(x, n)
        np.testing.assert_allclose(g, numeric_grad(two_tapes, (x, n), 0), rtol=1e-5,
                                   atol=1e-6)
        assert all(t.shape[0] >= n for t in _pool(d)["grad_only"])
    dtypes = {t.dtype for t in _pool(d)["grad_only"]}
    assert np.dtype(np.bool_) in dtypes and np.dtype(np.float64) in dtypes


@pytest.mark.parametrize("jit", [True, False])
def test_gradients_never_alias_a_workspace(jit):
    d = jg.differentiate(relax, wrt=(0, 1), jit=jit)
    x = np.linspace(0.1, 0.9, 30)
    dx, _ = d.grad(x, 0.4, 30)
    kept = dx.copy()
    for t in _pool(d)["grad_only"]:
        assert not np.may_share_memory(dx, t)
    d.grad(x * 2.0, 0.9, 30)  # a later call does not write into what the user holds
    np.testing.assert_array_equal(dx, kept)


def test_release_frees_every_thread_and_the_next_call_is_right():
    d = jg.differentiate(relax, wrt=(0, 1))
    x = np.linspace(0.1, 0.9, 20)
    want = d.grad(x, 0.4, 20)
    assert _pool(d)
    d.release_workspaces()
    assert not _pool(d)
    got = d.grad(x, 0.4, 20)
    np.testing.assert_array_equal(got[0], want[0])
    jg.grad(relax, wrt=(0, 1)).release_workspaces()  # the functional form has it too


def test_function_without_tapes_takes_no_workspace():
    d = jg.differentiate(straight, wrt=(0, 1))
    assert "_ws" not in d.source(1.0, 2.0)
    assert d.grad(1.0, 2.0) == pytest.approx((2.0 + math.cos(1.0), 1.0))
    assert not _pool(d)


def test_source_takes_and_returns_the_tapes():
    src = jg.differentiate(relax, wrt=(0, 1)).source(np.ones(3), 0.5, 3)
    assert "_ws):" in src.splitlines()[0]
    assert "np.empty(0" not in src
    assert "= _ws" in src and src.rstrip().splitlines()[-1].startswith("    return (")


def _in_threads(d, plain, args_of, sizes, calls):
    """Each thread calls ``d.grad`` ``calls`` times at its own size, all at once: every
    result equals ``plain``'s (the generated Python, fresh tapes)."""
    want = {n: plain(*args_of(n)) for n in sizes}
    d.grad(*args_of(sizes[0]))  # compiled before the threads start
    got: dict[int, list] = {}
    barrier = threading.Barrier(len(sizes))

    def work(n):
        barrier.wait()
        got[n] = [d.grad(*args_of(n)) for _ in range(calls)]

    threads = [threading.Thread(target=work, args=(n,)) for n in sizes]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for n in sizes:
        assert len(got[n]) == calls
        for g in got[n]:
            for a, b in zip(g, want[n], strict=True):
                np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)


def test_threads_keep_their_own_workspaces():
    rng = np.random.default_rng(0)
    xs = {n: rng.uniform(0.0, 1.0, n) for n in (7, 60, 25, 120)}
    _in_threads(jg.differentiate(relax, wrt=(0, 1)), jg.grad(relax, wrt=(0, 1), jit=False),
                lambda n: (xs[n], 0.3, n), list(xs), 20)


# a gradient of the same function called from a hook while its own tapes are in use
NESTED: list = []


def _nested_hook(g):
    if not NESTED:  # once: the inner call runs this hook too
        NESTED.append(None)
        NESTED.append(REENTRANT.grad(np.linspace(0.5, 0.6, 5), 5))
    return g


def reentrant(x, n):
    s = 0.0
    for i in range(n):
        s = s + math.sin(0.1 * s + x[i])
    s = jg.hook(_nested_hook, s)
    return s * s


REENTRANT = jg.differentiate(reentrant, wrt=0, jit=False)


def test_reentrant_call_from_a_hook_gets_its_own_tapes():
    NESTED.clear()
    x = np.linspace(-0.4, 0.3, 9)

    def plain(x, n):
        s = 0.0
        for i in range(n):
            s = s + math.sin(0.1 * s + x[i])
        return s * s

    NESTED[:] = [None]  # a first call without the nested one: its tapes are kept
    REENTRANT.grad(x, 9)
    NESTED.clear()
    g = REENTRANT.grad(x, 9)  # the nested call must not write into the tapes in use
    np.testing.assert_allclose(g, numeric_grad(plain, (x, 9), 0), rtol=1e-5, atol=1e-6)
    assert len(NESTED) == 2
    inner_x = np.linspace(0.5, 0.6, 5)
    np.testing.assert_allclose(NESTED[-1], numeric_grad(plain, (inner_x, 5), 0), rtol=1e-5,
                               atol=1e-6)



@pytest.mark.parametrize("jit", [True, False])
def test_local_adjoint_buffers_are_kept_and_zeroed(jit):
    d = jg.differentiate(local_buffer, wrt=(0, 1), jit=jit)
    src = d.source(np.ones(4), 0.5)
    assert "ws_zeros_like(" in src and "dw = np.zeros_like" not in src
    rng = np.random.default_rng(5)
    stores = []
    for n in (6, 30, 4, 30):  # grow, shrink, grow again
        x = rng.uniform(-1.0, 1.0, n)
        dx, dk = d.grad(x, 0.7)
        want = _fd(local_buffer, (x, 0.7), (0, 1))
        np.testing.assert_allclose(dx, want[0], rtol=1e-5, atol=1e-6)
        assert dk == pytest.approx(want[1], rel=1e-5, abs=1e-6)
        stores.append(_pool(d)["grad_only"][-1])
        assert stores[-1].shape[0] >= n
    assert stores[2] is stores[1] and stores[3] is stores[1], "kept, not reallocated"


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("steps", [2, 3])
def test_swapped_buffer_returned_as_a_gradient_is_not_kept(jit, steps):
    d = jg.differentiate(smooth, wrt=0, jit=jit)
    u = np.linspace(0.0, 1.0, 7) ** 2
    g1 = d.grad(u, steps)
    kept = g1.copy()
    for w in _pool(d)["grad_only"]:
        assert not np.may_share_memory(g1, w), "the caller's gradient is not a workspace"
    g2 = d.grad(u * 3.0, steps)
    np.testing.assert_array_equal(g1, kept)
    np.testing.assert_allclose(g2, numeric_grad(smooth, (u * 3.0, steps), 0), rtol=1e-5,
                               atol=1e-6)


def hooked_buffer(x, k):
    w = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        w[i] = math.sin(k * x[i])
    w = jg.hook(_keep_gradient, w)
    return np.sum(w * w)


def _keep_gradient(g):
    return g


def test_no_buffer_reuse_where_a_hook_sees_gradients():
    src = jg.differentiate(hooked_buffer, wrt=(0, 1), jit=False).source(np.ones(3), 0.5)
    assert "ws_zeros_like" not in src


@pytest.mark.parametrize("f, make", [
    (relax, lambda n: (np.linspace(0.0, 1.0, n), 0.4, n)),
    (two_tapes, lambda n: (np.linspace(-1.0, 1.0, n), n)),
    (smooth, lambda n: (np.linspace(0.0, 1.0, n), 3)),
    (local_buffer, lambda n: (np.linspace(0.0, 1.0, n), 0.7)),
    (sine_map, lambda n: (np.linspace(0.0, 1.0, n), 0.7, n // 2)),
], ids=["relax", "two_tapes", "smooth", "local_buffer", "sine_map"])
def test_kept_workspaces_compile_once(f, make):
    """The workspace a call returns has the types of the empty one the first call got:
    Numba compiles each variant once, whatever the sizes."""
    d = jg.differentiate(f, wrt=0)
    for n in (5, 50, 7):
        d.grad(*make(n))
        d.value_and_grad(*make(n))
    assert {v: len(j.signatures) for v, j in d._last.compiled.jitted.items()} == \
        {"grad": 1, "grad_only": 1}


def _hvp_pool(d, args):
    """This thread's kept workspaces of ``d``'s hvp code (the tangent-only forward mode of
    its gradient code)."""
    from jitgrad.forward_mode import _second, generated_jvp, tangent_code

    d2 = _second(d, args)
    return tangent_code(d2, generated_jvp(d2, (*args, 1.0))).pool.__dict__


def _fd_hvp(f, args, v, eps=1e-6):
    """Central differences of the gradient along ``v`` (w.r.t. argument 0)."""
    g = jg.grad(f, wrt=0, jit=False)
    x = args[0]
    return (g(x + eps * v, *args[1:]) - g(x - eps * v, *args[1:])) / (2 * eps)


@pytest.mark.parametrize("jit", [True, False])
def test_hvp_keeps_its_tapes_between_calls(jit):
    """hvp's code (forward mode of the gradient code) takes the gradient's tapes and their
    tangents from a workspace too: reused, grown, right at every size, released."""
    d = jg.differentiate(two_tapes, wrt=0, jit=jit)
    rng = np.random.default_rng(5)
    kept: tuple = ()
    for n in (6, 40, 3, 70, 40):  # grow, shrink, grow: every call checked
        x = rng.uniform(-1.0, 1.0, n)
        v = rng.standard_normal(n)
        hv = jg.hvp(d, (x, n), v, jit=jit)
        np.testing.assert_allclose(hv, _fd_hvp(two_tapes, (x, n), v), rtol=1e-4, atol=1e-5)
        ws = _hvp_pool(d, (x, n))["tangent"]
        assert all(t.shape[0] >= n for t in ws)
        if n < 70 and kept and kept[0].shape[0] >= n:  # big enough: the same buffers
            assert all(a is b for a, b in zip(kept, ws, strict=True)), "regrown"
        kept = ws
    assert {t.dtype for t in kept} == {np.dtype(np.float64), np.dtype(np.bool_)}
    src = jg.differentiate(two_tapes, wrt=0)  # the tapes come in, the tangents too
    from jitgrad.forward_mode import _second

    code = _second(src, (np.ones(3), 3)).source(np.ones(3), 3, 1.0, mode="jvp")
    assert "_ws):" in code.splitlines()[0] and "np.empty(0" not in code
    d.release_workspaces()
    assert not _hvp_pool(d, (x, n))
    np.testing.assert_allclose(jg.hvp(d, (x, n), v, jit=jit), hv, rtol=1e-12)


def test_jvp_workspace_keeps_only_what_is_used_as_a_tape():
    """A kept tape comes back with garbage past its pushed entries, so only names used by
    element, grown by ``tape_reserve`` and never otherwise read or rebound are kept: here
    ``t``; ``u`` (its length is read) and ``w`` (handed to a call) stay declared."""
    from jitgrad.kernels import helpers
    from jitgrad.transpiler.backend.jvp_workspace import tape_workspace
    from jitgrad.transpiler.naming import Namer

    src = '''
def f(n):
    t = np.empty(0, np.float64)
    u = np.empty(0, np.float64)
    w = np.empty(0, np.float64)
    k = 0
    for i in range(n):
        t = tape_reserve(t, k, 1)
        t[k] = 1.0
        u = tape_reserve(u, k, 1)
        u[k] = 2.0
        w = tape_reserve(w, k, 1)
        w[k] = 3.0
        k += 1
    return (t[0], len(u), np.sum(w))
'''
    body = ast.parse(src).body[0].body
    env = {"np": np, "tape_reserve": helpers.tape_reserve}
    out, dtypes = tape_workspace(body, env, Namer({"f", "n", "t", "u", "w", "k", "i"}))
    code = "\n".join(ast.unparse(ast.fix_missing_locations(st)) for st in out)
    assert dtypes == ("float64",)
    assert code.startswith("t = _ws[0]\n") and "t = np.empty" not in code
    assert "u = np.empty(0, np.float64)" in code and "w = np.empty(0, np.float64)" in code
    assert code.rstrip().endswith("return (t[0], len(u), np.sum(w), (t,))")


# --- list tapes of array snapshots -------------------------------------------------------


def _store(d, variant="grad_only"):
    """This thread's kept snapshot store of ``d``'s last specialisation (its last entry)."""
    src = d._last.compiled.sources[variant]
    assert re.search(r"_ws_snaps,?\)\)$", src.rstrip()), "the store comes last"
    return _pool(d)[variant][-1]


def _check(f, args, got, wrt=(0, 1)):
    want = _fd(f, args, wrt)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("jit", [True, False])
def test_snapshot_copies_are_kept_reused_and_right(jit):
    d = jg.differentiate(sine_map, wrt=(0, 1), jit=jit)
    src = d.source(np.ones(4), 0.9, 3)
    assert "ws_snapshot(_ws_snaps, _ws_snapsn, u" in src and "snapshot(u_1))" not in src
    rng = np.random.default_rng(7)
    prev = None
    for n, steps in ((8, 5), (8, 5), (5, 3), (40, 6), (8, 5)):  # same, smaller, bigger
        u0 = rng.uniform(-1.0, 1.0, n)
        got = d.grad(u0, 0.8, steps)
        _check(sine_map, (u0, 0.8, steps), got)
        store = _store(d)
        assert store.shape[0] >= n * steps  # grown at the end of a call that needed more
        assert not any(np.may_share_memory(store, g) for g in got), "never the caller's"
        if prev is not None and n * steps <= prev.shape[0]:
            assert store.ctypes.data == prev.ctypes.data, "the same store, not a new one"
        elif prev is not None:
            assert store.shape[0] > prev.shape[0], "grown"
        prev = store


@pytest.mark.parametrize("jit", [True, False])
def test_snapshots_of_changing_shapes(jit):
    """Within a call each push is another size; a later call with more points grows them."""
    d = jg.differentiate(shrinking, wrt=(0, 1), jit=jit)
    rng = np.random.default_rng(2)
    for n, k in ((6, 4), (12, 9), (6, 4), (20, 3)):
        u0 = rng.uniform(-1.0, 1.0, n)
        _check(shrinking, (u0, 0.7, k), d.grad(u0, 0.7, k))
        assert _store(d).shape[0] >= sum(n - j for j in range(k))


@pytest.mark.parametrize("jit", [True, False])
def test_snapshots_pushed_after_pops_stay_fresh_copies(jit):
    d = jg.differentiate(region_in_loop, wrt=(0, 1), jit=jit)
    src = d.source(np.ones(4), 0.5, 3)
    assert src.count("ws_snapshot(") == 1, "the entry state only, not the region's rerun"
    assert ".append(snapshot(u))" in src
    rng = np.random.default_rng(4)
    for n, trips in ((5, 3), (9, 4), (5, 2)):
        x = rng.uniform(0.1, 1.0, n)
        _check(region_in_loop, (x, 0.9, trips), d.grad(x, 0.9, trips))


def test_threads_keep_their_own_snapshot_stores():
    rng = np.random.default_rng(1)
    xs = {n: rng.uniform(-1.0, 1.0, n) for n in (6, 50, 17, 90)}
    _in_threads(jg.differentiate(sine_map, wrt=(0, 1)),
                jg.grad(sine_map, wrt=(0, 1), jit=False),
                lambda n: (xs[n], 0.8, n // 3 + 2), list(xs), 15)


def test_release_drops_the_snapshot_store():
    d = jg.differentiate(sine_map, wrt=(0, 1))
    u0 = np.linspace(-0.5, 0.5, 10)
    want = d.grad(u0, 0.8, 4)
    assert _store(d).shape[0] >= 40
    d.release_workspaces()
    assert not _pool(d)
    got = d.grad(u0, 0.8, 4)
    np.testing.assert_array_equal(got[0], want[0])


def test_a_store_a_returned_array_shares_is_not_kept():
    """``jit.call`` lets a store go that a returned array views (the caller owns it now);
    a copy that does not fit is a new array, and ``ws_grow`` makes room for the next call."""
    from jitgrad.kernels.snapshots import ws_grow, ws_snapshot
    from jitgrad.transpiler.backend.jit import BUFFER, _unshared

    store = np.empty(5)
    view = ws_snapshot(store, 1, np.arange(3.0))
    assert np.shares_memory(view, store) and view.tolist() == [0.0, 1.0, 2.0]
    assert not np.shares_memory(ws_snapshot(store, 4, np.arange(3.0)), store)
    assert _unshared((store,), (BUFFER,), (np.ones(3), 2.0))[0] is store
    after = _unshared((store,), (BUFFER,), (np.ones(2), view[1:]))[0]
    assert after is not store and after.shape == (0,)
    assert ws_grow(store, 5) is store and ws_grow(store, 7).shape == (10,)


def test_snapshot_lowering_keeps_only_tapes_pushed_before_popped():
    """``t`` qualifies; ``u`` is pushed again after a pop; ``w``'s length is read."""
    from jitgrad.transpiler.backend.snapshots import keep_snapshots
    from jitgrad.transpiler.ir import Snapshots

    src = '''
def f(x, n):
    t = []
    u = []
    w = []
    for i in range(n):
        t.append(snapshot(x))
        u.append(snapshot(x))
        w.append(snapshot(x))
    for i in range(n):
        y = t.pop()
        z = u.pop()
        u.append(snapshot(x))
        z = u.pop()
    k = len(w)
    return y
'''
    body = ast.parse(src).body[0].body
    snaps = Snapshots(("t", "u", "w"), "snapshot", "ws_snapshot", "ws_grow", "_ws_snaps",
                      "_ws_snapsn")
    out = keep_snapshots(body, snaps)
    code = "\n".join(ast.unparse(ast.fix_missing_locations(st)) for st in out)
    assert code.startswith("_ws_snapsn = 0\n")
    assert "t.append(ws_snapshot(_ws_snaps, _ws_snapsn, x))\n    _ws_snapsn += x.size" in code
    assert code.endswith("_ws_snaps = ws_grow(_ws_snaps, _ws_snapsn)\nreturn y")
    assert code.count("ws_snapshot(") == 1
    assert "u.append(snapshot(x))" in code and "w.append(snapshot(x))" in code
    assert keep_snapshots(body, Snapshots(("u", "w"), "snapshot", "ws_snapshot", "ws_grow",
                                          "_s", "_n")) is None


def stencil_steps(u0, k, steps):
    """An inner loop's tape whose size is known before the outer loop (``_n`` from ``n``):
    reserved once for all steps, not doubled step by step."""
    n = u0.shape[0]
    u = u0.copy()
    v = u0.copy()
    for _ in range(steps):
        for i in range(1, n - 1):
            v[i] = u[i] + k * math.sin(u[i - 1] - 2.0 * u[i] + u[i + 1])
        u, v = v, u
    return np.sum(u * u)


@pytest.mark.parametrize("jit", [True, False])
def test_inner_tape_reserved_once_for_all_trips(jit):
    u0 = np.random.default_rng(5).uniform(-1, 1, 9)
    d = jg.differentiate(stencil_steps, wrt=(0, 1), jit=jit)
    src = d.source(u0, 0.3, 7)
    assert re.search(r"tape_reserve\((_tape_\w+), \1n, max\(0, steps\) \* max\(0, n - 1 - 1\)\)",
                     src), src
    g = d.grad(u0, 0.3, 7)
    fd = numeric_grad(lambda a: stencil_steps(a, 0.3, 7), (u0,), 0)
    np.testing.assert_allclose(g[0], fd, rtol=1e-6, atol=1e-7)
    fd_k = numeric_grad(lambda k: stencil_steps(u0, k, 7), (0.3,), 0)
    np.testing.assert_allclose(g[1], fd_k, rtol=1e-6, atol=1e-7)
    tapes = [t for t in _pool(d)["grad_only"] if t.dtype == np.float64 and t.shape[0]]
    assert sorted(t.shape[0] for t in tapes)[-1] == 7 * 7  # steps * (n - 2): no doubling
