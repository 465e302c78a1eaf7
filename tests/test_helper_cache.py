"""Runtime helpers compiled once per machine (``kernels/cached.py``): a second process
loads the helpers that generated code calls (tapes, workspaces, ``unbroadcast``,
``guard``, ``dot_grad_b``, ``shape_stand_in``, the NumPy calls of ``cached_calls``...)
from Numba's on-disk cache instead of compiling them, and gets the same gradients;
``unbroadcast``'s rank-generic loop nest matches the Python twin."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import jitgrad as jg
from jitgrad.kernels import cached
from jitgrad.kernels.helpers import SHAPE_MISMATCH, unbroadcast

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

MODULE = '''
import numpy as np


def heat(u0, alpha, nsteps):
    n = u0.shape[0]
    u = u0.copy()
    v = u0.copy()
    for _ in range(nsteps):
        for i in range(1, n - 1):
            v[i] = u[i] + alpha * (u[i - 1] - 2.0 * u[i] + u[i + 1])
        u, v = v, u
    total = 0.0
    for i in range(n):
        total += u[i] * u[i]
    return total


def layer(X, W, b, c):
    h = np.tanh(X @ W + b) * c
    return np.sum(np.sqrt(h * h + 1.0))
'''

SCRIPT = '''
import json, sys
sys.path.insert(0, {folder!r})
import numpy as np
from numba.core import event
import jitgrad as jg
from jitgrad.kernels import cached
from hcmod import heat, layer
from args import ARGS
rec = event.RecordingListener()
event.register("numba:compile", rec)
grads = [[np.asarray(d).tolist() for d in jg.grad(f, wrt=w)(*ARGS[f.__name__])]
         for f, w in ((heat, (0, 1)), (layer, (1, 2, 3)))]
funcs = [ev.data["dispatcher"].py_func for _, ev in rec.buffer]
helpers = sorted({{f"{{f.__module__}}.{{f.__qualname__}}" for f in funcs
                  if (f.__module__ or "").startswith("jitgrad.kernels")}})
numpy = sorted({{f"{{f.__module__}}.{{f.__qualname__}}" for f in funcs
                if (f.__module__ or "").startswith("numba.np")}})
print(json.dumps({{"grads": grads, "compiled": helpers, "numpy": numpy,
                  "disk": cached.DISK_CACHE}}))
'''

ARGS = '''
import numpy as np
rng = np.random.default_rng(3)
ARGS = {"heat": (rng.standard_normal(9), 0.2, 4),
        "layer": (rng.standard_normal((5, 3)), rng.standard_normal((3, 2)),
                  rng.standard_normal(2), rng.standard_normal((5, 1)))}
'''


def _run(folder, cache_dir) -> dict:
    env = dict(os.environ, PYTHONPATH=ROOT, NUMBA_CACHE_DIR=str(cache_dir))
    out = subprocess.run([sys.executable, str(folder / "run.py")], capture_output=True,
                         text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def _central(f, args, k, h=1e-6):
    """Central differences of ``f`` in argument ``k`` (a float or a float array)."""
    x = np.asarray(args[k], dtype=float)
    out = np.zeros(x.shape)
    for i in np.ndindex(x.shape):
        up, dn = list(args), list(args)
        xu, xd = x.copy(), x.copy()
        xu[i] += h
        xd[i] -= h
        up[k], dn[k] = (xu if x.ndim else float(xu)), (xd if x.ndim else float(xd))
        out[i] = (f(*up) - f(*dn)) / (2 * h)
    return out


@pytest.mark.skipif(not cached.DISK_CACHE, reason="Numba cannot cache here")
def test_second_process_compiles_no_helper(tmp_path):
    (tmp_path / "hcmod.py").write_text(MODULE)
    (tmp_path / "args.py").write_text(ARGS)
    (tmp_path / "run.py").write_text(SCRIPT.format(folder=str(tmp_path)))
    cache_dir = tmp_path / "numba_cache"
    first = _run(tmp_path, cache_dir)
    assert first["disk"]
    names = set(first["compiled"])
    for helper in ("tape_reserve", "ws_zeros_like", "_ol_unbroadcast", "_ol_guard",
                   "_sum_to_shape", "arrays.<lambda>", "shape_stand_in", "np_zeros_like",
                   "np_matmul"):
        assert any(helper in n for n in names), (helper, names)
    index = [f for _, _, fs in os.walk(cache_dir) for f in fs if f.endswith(".nbi")]
    assert any(f.startswith("helpers.tape_reserve") for f in index), index
    second = _run(tmp_path, cache_dir)
    assert second["compiled"] == []  # every helper came from the disk
    # nor NumPy's implementations of the stand-ins, the adjoints' zeroing and ``X @ W``
    # (``backend/cached_calls.py``): they come with the helpers that call them
    for impl in ("ol_np_zeros_like", "ol_np_empty_like", "_default_broadcast_to_impl",
                 "dot_2_impl"):
        assert not any(impl in n for n in second["numpy"]), (impl, second["numpy"])
    assert second["grads"] == first["grads"]

    sys.path.insert(0, str(tmp_path))
    try:
        import hcmod
        from args import ARGS as args
    finally:
        sys.path.remove(str(tmp_path))
    for fn, wrt, got in ((hcmod.heat, (0, 1), second["grads"][0]),
                         (hcmod.layer, (1, 2, 3), second["grads"][1])):
        plain = jg.grad(fn, wrt=wrt, jit=False)(*args[fn.__name__])
        for k, g, p in zip(wrt, got, plain, strict=True):
            np.testing.assert_allclose(g, p, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(g, _central(fn, args[fn.__name__], k),
                                       rtol=1e-5, atol=1e-6)


def test_no_cache_where_numba_has_no_locator(monkeypatch):
    import numba.core.caching as caching

    def refuse(py_func):
        raise RuntimeError("cannot cache function: no locator available")

    monkeypatch.setattr(caching, "FunctionCache", refuse)
    assert cached._disk_cache_works() is False


def test_cached_overload_refuses_a_closure():
    from numba import njit

    def twin(x):
        return x

    k = 2.0

    @cached.cached_overload(twin)
    def _ol(x):
        return lambda x: x * k

    with pytest.raises(Exception, match="free variables"):
        njit(lambda x: twin(x))(1.0)


SHAPES = [((3, 4), (4,)), ((3, 4), (1, 4)), ((3, 4), (3, 1)), ((2, 3, 4), (3, 1)),
          ((2, 3, 4), (1, 1, 4)), ((2, 3, 4), (2, 3, 4)), ((2, 3, 4), (2, 1, 4)),
          ((5,), (1,)), ((5,), (5,)), ((0, 3), (3,)), ((3, 0), (1, 0)), ((2, 3, 4), (4,)),
          ((2, 3), ()), ((2, 1, 3, 2), (1, 3, 1))]


@pytest.mark.parametrize("gs,xs", SHAPES)
def test_unbroadcast_sums_like_numpy(gs, xs, jit):
    from numba import njit

    rng = np.random.default_rng(1)
    g = rng.standard_normal(gs)
    x = np.zeros(xs)
    run = njit(lambda g, x: unbroadcast(g, x)) if jit else unbroadcast
    lead = len(gs) - len(xs)
    want = np.sum(g, axis=tuple(range(lead))) if lead else g
    want = np.sum(want, axis=tuple(i for i, n in enumerate(xs) if n == 1), keepdims=True)
    for gg in (g, np.asfortranarray(g), g[..., ::-1][..., ::-1]):
        got = run(gg, x)
        assert np.shape(got) == xs
        np.testing.assert_allclose(got, want.reshape(xs), rtol=1e-13, atol=1e-13)
    if len(gs) > 1:  # a transposed (not contiguous) g
        gt = np.ascontiguousarray(np.moveaxis(g, 0, -1))
        np.testing.assert_allclose(run(np.moveaxis(gt, -1, 0), x), want.reshape(xs),
                                   rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("gs,xs", [((3, 4), (3,)), ((3, 4), (2, 4)), ((2, 3, 4), (2, 4))])
def test_unbroadcast_refuses_a_shape_it_cannot_come_from(gs, xs, jit):
    from numba import njit

    run = njit(lambda g, x: unbroadcast(g, x)) if jit else unbroadcast
    with pytest.raises(ValueError, match="does not have the shape"):
        run(np.ones(gs), np.zeros(xs))
    assert "does not have the shape" in SHAPE_MISMATCH


READ_ONLY = '''
import numba.core.caching as caching
# as where the package's directory is not writable: Numba's in-tree locator gives up
caching.InTreeCacheLocator.from_function = classmethod(lambda cls, f, p: None)
import numba
import numpy as np
from jitgrad.kernels import cached
from jitgrad.kernels.helpers import tape_reserve
buf = numba.njit(lambda b, used, more: tape_reserve(b, used, more))(np.ones(2), 1, 5)
print(cached.DISK_CACHE, buf.shape[0], buf[0])
'''


def test_package_not_writable_uses_the_user_wide_cache(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env.update(PYTHONPATH=ROOT, XDG_CACHE_HOME=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", READ_ONLY], capture_output=True, text=True,
                         env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "6", "1.0"]
    index = [f for _, _, fs in os.walk(tmp_path / "numba") for f in fs if f.endswith(".nbi")]
    assert any(f.startswith("helpers.tape_reserve") for f in index), index
