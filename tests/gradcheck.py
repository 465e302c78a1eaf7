"""One finite-difference check used by every gradient test."""

from __future__ import annotations

import numpy as np

import jitgrad as jg


def numeric_grad(f, args, i, eps=1e-6):
    """Central differences of scalar ``f`` w.r.t. argument ``i``, every element."""
    x = args[i]
    if np.ndim(x) == 0:
        a = list(args)
        a[i] = x + eps
        hi = f(*[v.copy() if isinstance(v, np.ndarray) else v for v in a])
        a[i] = x - eps
        lo = f(*[v.copy() if isinstance(v, np.ndarray) else v for v in a])
        return (hi - lo) / (2 * eps)
    g = np.zeros(x.shape)
    for idx in np.ndindex(x.shape):
        xp = x.astype(float).copy()
        xm = x.astype(float).copy()
        xp[idx] += eps
        xm[idx] -= eps
        a = [v.copy() if isinstance(v, np.ndarray) else v for v in args]
        a[i] = xp
        hi = f(*a)
        a = [v.copy() if isinstance(v, np.ndarray) else v for v in args]
        a[i] = xm
        lo = f(*a)
        g[idx] = (hi - lo) / (2 * eps)
    return g


_SHARED: dict = {}


def shared_diff(f, wrt, jit):
    """One ``jg.differentiate(f, wrt=wrt, jit=jit)`` per process for the corpus functions
    that several test modules check (conftest's xdist group ``corpus`` runs those modules
    on one worker): each gradient is compiled by Numba once, not once per module."""
    key = (f, repr(wrt), bool(jit))
    if key not in _SHARED:
        _SHARED[key] = jg.differentiate(f, wrt=wrt, jit=jit)
    return _SHARED[key]


def check_grad(f, args, wrt=0, jit=True, rtol=1e-5, atol=1e-6, shared=False, primal=None):
    """Compare jitgrad's gradient with central differences on every element; inputs unchanged.
    ``shared``: differentiate with ``wrt`` as given through ``shared_diff`` (else a new
    object with ``wrt`` as a tuple): cases that differ in sizes and values, not in the
    arguments' types, then run one compiled gradient (what jitgrad reuses for a user too).
    ``primal``: the function whose central differences are taken, ``f`` by default;
    ``numba.njit(f)`` where ``f`` is slow from Python (a ``@numba.stencil`` it calls
    compiles again on every call from Python)."""
    wrts = wrt if isinstance(wrt, tuple) else (wrt,)
    before = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    d = shared_diff(f, wrt, jit) if shared else jg.differentiate(f, wrt=wrts, jit=jit)
    value, grads = d.value_and_grad(*args)
    if shared and not isinstance(wrt, tuple):
        grads = (grads,)
    for a, b in zip(args, before, strict=True):
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b, err_msg="gradient call mutated an input")
    expected = f(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    np.testing.assert_allclose(value, expected, rtol=1e-10, atol=1e-12)
    for w, g in zip(wrts, grads, strict=True):
        fd = numeric_grad(primal or f, args, w)
        assert np.shape(g) == np.shape(fd), (np.shape(g), np.shape(fd))
        np.testing.assert_allclose(g, fd, rtol=rtol, atol=atol,
                                   err_msg=f"gradient w.r.t. argument {w}")
    return grads


def check_hvp(f, args, wrt, seed: int = 11, eps: float = 1e-6) -> None:
    """``jg.hvp`` (forward over the generated reverse code, ``jit=False``) against central
    differences of the gradient along a random direction, for each argument of ``wrt``."""
    for w in wrt:
        v = np.random.default_rng(seed).normal(size=np.shape(args[w]))
        h = jg.hvp(f, args, (v,), wrt=w, jit=False)
        g = jg.grad(f, wrt=w, jit=False)
        hi, lo = list(args), list(args)
        hi[w], lo[w] = args[w] + eps * v, args[w] - eps * v
        np.testing.assert_allclose(h, (g(*hi) - g(*lo)) / (2 * eps), rtol=1e-5, atol=1e-6)


def function_from_source(folder, name: str, source: str, func: str = "f"):
    """``func`` of a module written to ``folder/name.py`` and imported (jitgrad reads a
    function's source from its file): for tests that generate programs."""
    import importlib
    import sys

    (folder / f"{name}.py").write_text(source)
    sys.path.insert(0, str(folder))
    try:
        return getattr(importlib.import_module(name), func)
    finally:
        sys.path.remove(str(folder))


def benchmark_workloads() -> dict:
    """``benchmarks/workloads``' WORKLOADS (name -> Workload), imported with
    ``benchmarks/`` on ``sys.path`` only meanwhile: it holds a ``distributed.py`` that
    would shadow dask's package in processes started later (the Dask test's workers)."""
    import sys
    from pathlib import Path

    bench = str(Path(__file__).resolve().parents[1] / "benchmarks")
    sys.path.insert(0, bench)
    try:
        from workloads import WORKLOADS
    finally:
        sys.path.remove(bench)
    return WORKLOADS
