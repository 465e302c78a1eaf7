"""Pickling gradients (by reference to the module-level function, plus options), the
runtime's Params/Grads, a spawn pool, and concurrent calls from threads."""

from __future__ import annotations

import multiprocessing
import os
import pickle
import subprocess
import sys
import threading

import numpy as np
import pytest
from distfns import dloss, loss, nloss, with_info

import jitgrad as jg

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
X = np.linspace(-1.0, 2.0, 7)


def _roundtrip(obj):
    return pickle.loads(pickle.dumps(obj))


def test_grad_function_roundtrip():
    g = jg.grad(loss, wrt=(0, 1))
    want = g(X, 1.5)
    for h in (_roundtrip(g), _roundtrip(_roundtrip(g))):
        got = h(X, 1.5)
        np.testing.assert_allclose(got[0], want[0])
        assert got[1] == pytest.approx(want[1])
        assert h.diff.wrt == (0, 1) and h.diff.jit
    vg = _roundtrip(jg.value_and_grad(loss, jit=False))
    value, dx = vg(X, 1.5)
    assert value == pytest.approx(loss(X, 1.5))
    np.testing.assert_allclose(dx, want[0])
    assert not vg.diff.jit and vg.with_value


def test_pickle_after_compiling_is_small():
    g = jg.grad(loss)
    g(X, 1.0)  # compiled code, locks and caches do not travel
    assert len(pickle.dumps(g)) < 300


def test_decorated_object_is_a_reference():
    assert _roundtrip(dloss) is dloss  # the module attribute: compiled code shared
    other = _roundtrip(jg.grad(dloss, wrt=0))  # same function, other options
    assert other.diff is not dloss and other.diff.wrt == 0 and other.diff.cache
    np.testing.assert_allclose(other(X, 0.5), 2 * (X - 0.5))


def test_numba_dispatcher_roundtrip():
    g = _roundtrip(jg.grad(nloss))
    np.testing.assert_allclose(g(X), X)


def _nested():
    def inner(x):
        return x * x
    return inner


@pytest.mark.parametrize("make, why", [
    (lambda: jg.grad(lambda x: x * x), "lambda"),
    (lambda: jg.grad(_nested()), "inside another function"),
])
def test_unpicklable_functions_say_what_to_do(make, why):
    with pytest.raises(pickle.PicklingError, match=why) as exc:
        pickle.dumps(make())
    assert "top level of an importable module" in str(exc.value)


def test_interactive_main_is_refused(tmp_path):
    code = ("import pickle, jitgrad as jg\n"
            "exec('def f(x):\\n    return x * x\\n')\n"
            "try:\n    pickle.dumps(jg.grad(f))\n"
            "except pickle.PicklingError as e:\n    print('REFUSED', e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=ROOT), timeout=120)
    assert "REFUSED" in out.stdout and "interactive __main__" in out.stdout, out.stderr


def test_unpickling_a_missing_function_is_clear():
    from jitgrad.api import _rebuild

    with pytest.raises(pickle.UnpicklingError, match="__main__ script"):
        _rebuild("__main__", "no_such_function_here", 0, True, False)


def test_params_and_grads_roundtrip():
    W = jg.param(np.arange(6.0).reshape(2, 3))
    b = jg.param(np.ones(2))
    ps = jg.Params([W, b, W])
    gs = jg.gradient(lambda: ((W @ np.ones(3) + b) ** 2).sum(), ps)
    ps2, gs2 = _roundtrip((ps, gs))
    assert len(ps2) == 2 and ps2[0] in ps2 and ps2[0] in gs2
    np.testing.assert_array_equal(jg.data(ps2[0]), jg.data(W))
    np.testing.assert_allclose(gs2[ps2[0]], gs[W])
    np.testing.assert_allclose(gs2[ps2[1]], gs[b])


def _unrelated(x):
    return x + 1.0


@jg.grad_rule(_unrelated)
def _unrelated_rule(x):
    return x + 1.0, lambda dy: (dy,)


def test_spawn_pool():
    # a rule registered in this process only (as the suite's other modules do) for a
    # primitive dloss never reaches must not change dloss's key: the workers, which
    # never saw it, load what this process saved
    g = jg.grad(dloss, wrt=(0, 1))  # cache=True: the pool's workers load from disk
    want = g(X, 0.25)
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(2) as pool:
        res = pool.starmap(with_info, [(g, X, 0.25)] * 4)
    for (dx, da), info in res:
        np.testing.assert_allclose(dx, want[0])
        assert da == pytest.approx(want[1])
        assert info["hits"] == 1 and info["misses"] == 0


def test_threads_share_one_function():
    """Concurrent first calls and later calls from threads on one object are correct."""
    d = jg.differentiate(loss, wrt=(0, 1))
    xs = [X * (1 + 0.1 * i) for i in range(8)]
    want = [jg.grad(loss, wrt=(0, 1), jit=False)(x, 0.7) for x in xs]
    got: dict[int, list] = {}
    barrier = threading.Barrier(4)

    def work(t):
        barrier.wait()
        got[t] = [d.grad(x, 0.7) for x in xs for _ in range(3)]

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 4 and len(d._specs.entries("vjp")) == 1
    for res in got.values():
        for (dx, da), (wx, wa) in zip(res, [w for w in want for _ in range(3)], strict=True):
            np.testing.assert_allclose(dx, wx, rtol=1e-12)
            assert da == pytest.approx(wa, rel=1e-12)
