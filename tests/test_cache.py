"""The on-disk cache (``cache=True``): a second process loads the generated module and
Numba's machine code instead of transforming and compiling; edits and corrupt entries
are rebuilt, never trusted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import jitgrad as jg
from jitgrad.transpiler.analysis.kinds import of_value
from jitgrad.transpiler.backend import cache

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

MODULE = '''
import math

import numpy as np

import jitgrad as jg

SCALE = {scale}


def _sq(a):
    return a * a * SCALE


@jg.differentiate(wrt=(0, 1), cache=True)
def energy(x, k):
    e = 0.0
    for i in range(len(x) - 1):
        d = x[i + 1] - x[i] - 1.0
        e += k * _sq(d)
    if x[0] < 0.0:
        e += np.exp(-x[0]) - 1.0
    return e + math.sin(k)
'''

SCRIPT = '''
import json, sys, time
sys.path.insert(0, {folder!r})
import numpy as np
import jitgrad.api as api
calls = []
_generate = api.generate
api.generate = lambda *a: calls.append(1) or _generate(*a)
from cachefn import energy
x = np.array([-0.1, 0.9, 2.2, 2.8, 4.1])
t = time.perf_counter()
dx, dk = energy.grad(x, 2.0)
seconds = time.perf_counter() - t
info = energy.cache_info()
sweeps = [energy.source(x, 2.0, stage=s) for s in ("forward", "adjoint")]
print(json.dumps({{"dx": dx.tolist(), "dk": dk, "seconds": seconds, "transforms": len(calls),
                  "sweeps": sweeps, **info}}))
'''


def _write(folder, scale="2.0", asked=True):
    module = MODULE if asked else MODULE.replace(", cache=True)", ")")
    (folder / "cachefn.py").write_text(module.format(scale=scale))
    (folder / "run.py").write_text(SCRIPT.format(folder=str(folder)))


def _run(folder, **environ: str) -> dict:
    env = dict(os.environ, PYTHONPATH=ROOT, **environ)
    out = subprocess.run([sys.executable, str(folder / "run.py")], capture_output=True,
                         text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def _check_fd(res, scale):
    sys.path.insert(0, str(res["folder"]))
    x = np.array([-0.1, 0.9, 2.2, 2.8, 4.1])

    def energy(x, k):
        e = sum(k * scale * (x[i + 1] - x[i] - 1.0) ** 2 for i in range(len(x) - 1))
        return e + (np.exp(-x[0]) - 1.0 if x[0] < 0 else 0.0) + np.sin(k)

    h = 1e-6
    fd = [(energy(x + h * e, 2.0) - energy(x - h * e, 2.0)) / (2 * h) for e in np.eye(len(x))]
    np.testing.assert_allclose(res["dx"], fd, rtol=1e-6, atol=1e-6)
    dk = (energy(x, 2.0 + h) - energy(x, 2.0 - h)) / (2 * h)
    np.testing.assert_allclose(res["dk"], dk, rtol=1e-6)


def test_second_process_loads_from_disk(tmp_path):
    _write(tmp_path)
    first = _run(tmp_path)
    assert (first["misses"], first["hits"], first["transforms"]) == (1, 0, 1)
    assert first["numba_misses"] == 1
    assert first["dir"] == str(tmp_path / "__pycache__" / "jitgrad")
    second = _run(tmp_path)
    # no transform, no Numba compile: the module and the machine code come from disk
    assert (second["hits"], second["misses"], second["transforms"]) == (1, 0, 0)
    assert (second["numba_hits"], second["numba_misses"]) == (1, 0)
    assert second["seconds"] < first["seconds"]
    # the one-sweep sources (written when first read) are kept with the rest
    assert second["sweeps"] == first["sweeps"]
    assert [s.split("(")[0] for s in first["sweeps"]] == ["def energy_forward",
                                                          "def energy_adjoint"]
    for res in (first, second):
        res["folder"] = tmp_path
        _check_fd(res, 2.0)

    # an edited function (here a constant its helper reads) is a new entry
    _write(tmp_path, scale="3.0")
    edited = _run(tmp_path)
    assert (edited["hits"], edited["misses"], edited["transforms"]) == (0, 1, 1)
    edited["folder"] = tmp_path
    _check_fd(edited, 3.0)

    # a corrupt entry is rebuilt, not trusted
    folder = tmp_path / "__pycache__" / "jitgrad"
    files = [f for f in os.listdir(folder) if f.endswith(".py")]
    assert len(files) == 2
    for f in files:
        (folder / f).write_text("this is not python (\n")
    fixed = _run(tmp_path)
    assert (fixed["hits"], fixed["misses"], fixed["transforms"]) == (0, 1, 1)
    fixed["folder"] = tmp_path
    _check_fd(fixed, 3.0)
    again = _run(tmp_path)
    assert (again["hits"], again["transforms"]) == (1, 0)

    # so is Numba's machine code: an unreadable index or data file is compiled again
    numba_files = [f for f in os.listdir(folder / "__pycache__") if f.endswith((".nbi", ".nbc"))]
    assert numba_files
    for f in numba_files:
        (folder / "__pycache__" / f).write_bytes(b"garbage\n")
    recompiled = _run(tmp_path)
    assert (recompiled["hits"], recompiled["numba_misses"], recompiled["numba_hits"]) == (1, 1, 0)
    recompiled["folder"] = tmp_path
    _check_fd(recompiled, 3.0)
    assert _run(tmp_path)["numba_hits"] == 1


def _key(f, *args):
    params = f.__code__.co_varnames[:f.__code__.co_argcount]
    kinds = {p: of_value(a) for p, a in zip(params, args, strict=True)}
    return cache.key(f, [params[0]], kinds, True)


def _poly(x):
    return x * x + 1.0


def _uses_prim(x):
    return _prim(x) * 2.0


def _prim(x):
    return x * x


def test_key_covers_kinds_rules_and_sources(scratch_rules):
    k = _key(_poly, 1.0)
    assert k == _key(_poly, 2.0)  # values do not matter, kinds do
    assert k != _key(_poly, np.ones(3))
    before = _key(_uses_prim, 1.0)

    # a new rule changes the key of the functions that reach its primitive, and only
    # theirs: rules registered elsewhere in the process (other tests, other modules) do
    # not turn a fresh worker's load into a miss
    @jg.grad_rule(_prim)
    def _prim_rule(x):
        return x * x, lambda dy: (2.0 * x * dy,)

    assert _key(_uses_prim, 1.0) != before
    assert _key(_poly, 1.0) == k


def test_unbindable_names_are_not_cached():
    assert cache._binding("np", np) == "np = __jg_module('numpy')"
    assert cache._binding("len", len) == ""
    assert cache._binding("c", 2.5).startswith("c = __jg_pickle.loads(")
    assert cache._binding("obj", object()) is None
    assert cache._binding("f", lambda x: x) is None


def test_config_cache_on_for_every_function(tmp_path):
    """``JITGRAD_CACHE=1`` (``jg.config.cache``): a function differentiated without
    ``cache=True`` is cached on disk all the same; without it, nothing is kept."""
    _write(tmp_path, asked=False)
    off = _run(tmp_path, JITGRAD_CACHE="0")
    assert (off["misses"], off["hits"], off["transforms"], off["dir"]) == (0, 0, 1, None)
    first = _run(tmp_path, JITGRAD_CACHE="1")
    assert (first["misses"], first["hits"], first["transforms"]) == (1, 0, 1)
    assert first["dir"] == str(tmp_path / "__pycache__" / "jitgrad")
    second = _run(tmp_path, JITGRAD_CACHE="1")
    assert (second["hits"], second["misses"], second["transforms"]) == (1, 0, 0)
    assert (second["numba_hits"], second["numba_misses"]) == (1, 0)
    for res in (off, first, second):
        res["folder"] = tmp_path
        _check_fd(res, 2.0)


@pytest.mark.parametrize("jit", [True, False])
def test_config_cache_in_process(tmp_path, monkeypatch, jit):
    """``jg.config.cache = True``: ``differentiate`` and ``grad`` cache unless told
    ``cache=False``; ``jg.grad`` of one function twice is one object (not a disk load per
    call); a closure's cells are part of its key."""
    (tmp_path / "cachefn3.py").write_text(textwrap.dedent('''
        import numpy as np

        M = np.array([1.5, -2.0])

        def quad(x, dx):
            return M[0] * x * x + M[1] * dx * x

        def scaled(J):
            def inner(x):
                return J * x * x * x
            return inner
    '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(jg.config, "cache", True)
    import cachefn3

    assert jg.differentiate(cachefn3.quad, jit=jit).cache is True
    assert jg.differentiate(cachefn3.quad, jit=jit, cache=False).cache is False
    g = jg.value_and_grad(cachefn3.quad, wrt=(0, 1), jit=jit)
    assert jg.value_and_grad(cachefn3.quad, wrt=(0, 1), jit=jit).diff is g.diff
    value, (gx, gdx) = g(2.0, 0.5)
    assert value == pytest.approx(1.5 * 4.0 - 2.0 * 0.5 * 2.0)
    assert (gx, gdx) == (pytest.approx(3.0 * 2.0 - 2.0 * 0.5), pytest.approx(-2.0 * 2.0))
    assert g.cache_info()["misses"] == 1
    for J, want in ((2.0, 24.0), (3.0, 36.0)):  # d/dx J x**3 at 2: each J its own entry
        h = jg.grad(cachefn3.scaled(J), jit=jit)
        assert h(2.0) == pytest.approx(want)
        assert h.cache_info()["misses"] == 1
    again = jg.grad(cachefn3.scaled(2.0), jit=jit)
    assert again(2.0) == pytest.approx(24.0) and again.cache_info()["hits"] == 1
    sys.modules.pop("cachefn3", None)


def test_cache_off_by_default():
    d = jg.differentiate(_poly)
    assert d.cache is False
    d.grad(1.0)
    assert d.cache_info()["hits"] == 0 and d.cache_info()["dir"] is None


@pytest.mark.parametrize("jit", [True, False])
def test_in_process_cache_dir(tmp_path, monkeypatch, jit):
    (tmp_path / "cachefn2.py").write_text(textwrap.dedent('''
        def cube(x):
            return x * x * x
    '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    import cachefn2

    g = jg.grad(cachefn2.cube, cache=True, jit=jit)
    assert g(2.0) == pytest.approx(12.0)
    assert g.cache_info()["misses"] == 1
    fresh = jg.grad(cachefn2.cube, cache=True, jit=jit)  # a new object: from disk
    assert fresh(2.0) == pytest.approx(12.0)
    assert fresh.cache_info()["hits"] == 1
    sys.modules.pop("cachefn2", None)


def _uses_tanh(x):
    return np.tanh(x) * 2.0


def test_key_covers_an_overridden_library_rule(scratch_rules):
    before = _key(_uses_tanh, 1.0)
    poly = _key(_poly, 1.0)

    @jg.grad_rule(np.tanh)
    def _tanh_rule(x):
        y = np.tanh(x)
        return y, lambda dy: (dy * (1.0 - y * y),)

    assert _key(_uses_tanh, 1.0) != before  # reached as np.tanh
    assert _key(_poly, 1.0) == poly


NJIT_MODULE = '''
import numba
import numpy as np


@numba.njit(cache=True, fastmath=True, error_model="numpy", nogil=True)
def spring(x, k):
    e = 0.0
    for i in range(len(x) - 1):
        d = x[i + 1] - x[i] - 1.0
        e += k * d * d
    return e + np.sin(k)
'''

NJIT_SCRIPT = '''
import json, sys, time
sys.path.insert(0, {folder!r})
import numpy as np
import jitgrad as jg
import jitgrad.api as api
calls = []
_generate = api.generate
api.generate = lambda *a: calls.append(1) or _generate(*a)
from njitfn import spring
x = np.array([-0.1, 0.9, 2.2, 2.8, 4.1])
g = jg.value_and_grad(spring, wrt=(0, 1))
value, (dx, dk) = g(x, 2.0)
info = g.cache_info()
print(json.dumps({{"value": value, "dx": dx.tolist(), "dk": dk, "transforms": len(calls),
                  "options": sorted(g.diff.options), "cache": g.diff.cache, **info}}))
'''


def test_njit_cache_true_carries_to_the_gradient(tmp_path):
    """``@numba.njit(cache=True)`` on the user's function: its gradient uses the on-disk
    cache unasked (a second process neither transforms nor compiles), and the other
    options (fastmath, error_model) carry over."""
    (tmp_path / "njitfn.py").write_text(NJIT_MODULE)
    (tmp_path / "run.py").write_text(NJIT_SCRIPT.format(folder=str(tmp_path)))
    first = _run(tmp_path)
    assert first["cache"] is True and first["options"] == ["error_model", "fastmath", "nogil"]
    assert (first["misses"], first["hits"], first["transforms"]) == (1, 0, 1)
    assert first["numba_misses"] == 1
    second = _run(tmp_path)
    assert (second["hits"], second["misses"], second["transforms"]) == (1, 0, 0)
    assert (second["numba_hits"], second["numba_misses"]) == (1, 0)
    x = np.array([-0.1, 0.9, 2.2, 2.8, 4.1])

    def spring(x, k):
        return sum(k * (x[i + 1] - x[i] - 1.0) ** 2 for i in range(len(x) - 1)) + np.sin(k)

    h = 1e-6
    fd = [(spring(x + h * e, 2.0) - spring(x - h * e, 2.0)) / (2 * h) for e in np.eye(len(x))]
    dk = (spring(x, 2.0 + h) - spring(x, 2.0 - h)) / (2 * h)
    for res in (first, second):
        assert res["value"] == pytest.approx(spring(x, 2.0), rel=1e-12)
        np.testing.assert_allclose(res["dx"], fd, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(res["dk"], dk, rtol=1e-6)


def test_njit_without_cache_is_not_cached():
    import numba

    plain = numba.njit(_poly)
    assert jg.differentiate(plain).cache is False
    assert jg.grad(plain).diff.cache is False
    assert jg.grad(plain, cache=True).diff.cache is True  # asked explicitly
