"""Automatic checkpointing (``transpiler/modes/auto_checkpoint.py``): a time loop whose
inner loops' tape would exceed ``jg.config.checkpoint_bytes`` runs on the binomial schedule
of ``jg.checkpointed`` without the user writing it, chosen when the loop starts.

Every case checks the value ``value_and_grad`` returns against the primal and every
gradient element against central differences, in ``jit=True`` and ``jit=False``, and the
same function with ``auto_checkpoint=False`` (its tape) against it.  The threshold is
lowered to 64 kB so that the loops stay small enough for ``jit=False``: the 5,000-step
loop's tape takes 240 kB."""

from __future__ import annotations

import os
import subprocess
import sys
import tracemalloc

import numpy as np
import pytest
from numba import njit

import jitgrad as jg

T = 5_000
X0 = np.array([0.3, 0.9, 0.5, 0.2, 0.8, 0.4, 0.6, 0.1])


@pytest.fixture(autouse=True)
def _small_threshold(monkeypatch):
    monkeypatch.setattr(jg.config, "checkpoint_bytes", 64_000)
    monkeypatch.setattr(jg.config, "auto_checkpoint", True)


def diffuse(x, c, steps):
    """A time loop of an array stencil, with the names the binomial driver's template uses
    (J, K, M) and a ``dx`` beside ``x`` (the name of x's adjoint)."""
    n = x.shape[0]
    J = x.copy()
    K = x.copy()
    M = 0.0
    dx = 1e-3
    for _t in range(steps):
        for i in range(1, n - 1):
            K[i] = J[i] + c * (J[i - 1] - 2.0 * J[i] + J[i + 1]) - dx * J[i] * J[i] * J[i]
        J, K = K, J
        M = M + dx * J[1] * J[2]
    total = M
    for i in range(n):
        total += J[i] * J[i]
    return total


def noisy(x, c, steps):
    """A time loop that draws random numbers: not checkpointed automatically."""
    np.random.seed(5)
    n = x.shape[0]
    u = x.copy()
    v = x.copy()
    for _t in range(steps):
        z = np.random.standard_normal()
        for i in range(1, n - 1):
            v[i] = u[i] + c * (u[i - 1] - 2.0 * u[i] + u[i + 1]) + 1e-4 * z * u[i]
        u, v = v, u
    return np.sum(u * u)


def relax(x, c, steps):
    """A ``while`` time loop: not checkpointed automatically."""
    n = x.shape[0]
    u = x.copy()
    v = x.copy()
    t = 0
    while t < steps:
        for i in range(1, n - 1):
            v[i] = u[i] + c * (u[i - 1] - 2.0 * u[i] + u[i + 1])
        u, v = v, u
        t += 1
    return np.sum(u * u)


def _central(f, x, c, steps, h=1e-6):
    """Central differences of the compiled primal in x (every element) and c."""
    gx = np.empty_like(x)
    for k in range(x.size):
        xp, xm = x.copy(), x.copy()
        xp[k] += h
        xm[k] -= h
        gx[k] = (f(xp, c, steps) - f(xm, c, steps)) / (2 * h)
    gc = (f(x, c + h, steps) - f(x, c - h, steps)) / (2 * h)
    return gx, gc


def _check(f, steps, jit, auto):
    primal = njit(f)
    c = 0.2
    vg = jg.value_and_grad(f, wrt=(0, 1), jit=jit, auto_checkpoint=auto)
    value, (gx, gc) = vg(X0, c, steps)
    assert value == pytest.approx(primal(X0, c, steps), rel=1e-12)
    fx, fc = _central(primal, X0, c, steps)
    np.testing.assert_allclose(gx, fx, rtol=1e-6, atol=1e-8)
    assert gc == pytest.approx(fc, rel=1e-6, abs=1e-8)
    g = jg.grad(f, wrt=(0, 1), jit=jit, auto_checkpoint=auto)(X0, c, steps)
    np.testing.assert_allclose(g[0], gx, rtol=1e-12, atol=1e-15)
    return value, gx, gc, vg.source(X0, c, steps)


@pytest.mark.parametrize("jit", [False, True])
def test_long_loop_is_checkpointed(jit):
    value, gx, gc, src = _check(diffuse, T, jit, None)
    assert "_checkpointed = " in src and "revolve_split(" in src
    off = _check(diffuse, T, jit, False)
    assert "_checkpointed" not in off[3] and "revolve_split(" not in off[3]
    assert off[0] == pytest.approx(value, rel=1e-13)
    np.testing.assert_allclose(off[1], gx, rtol=1e-11, atol=1e-15)
    assert off[2] == pytest.approx(gc, rel=1e-11)


def _peak(auto: bool) -> int:
    vg = jg.value_and_grad(diffuse, wrt=(0, 1), jit=False, auto_checkpoint=auto)
    vg(X0, 0.2, T)  # the kept tapes and slots are made by the first call
    vg.release_workspaces()
    tracemalloc.start()
    try:
        vg(X0, 0.2, T)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_peak_memory_lower():
    """The binomial branch is taken: a 240 kB tape gives way to about 99 snapshots of
    144 bytes and one step's tape."""
    on, off = _peak(True), _peak(False)
    assert off > 240_000
    assert on < off / 3


@pytest.mark.parametrize("jit", [False, True])
def test_short_loop_keeps_its_tape(jit):
    """A loop whose tape fits takes the plain branch: its results are the tape's."""
    value, gx, gc, src = _check(diffuse, 40, jit, None)
    assert "_checkpointed = " in src  # (decided when the loop starts)
    off = _check(diffuse, 40, jit, False)
    assert off[0] == value and np.array_equal(off[1], gx) and off[2] == gc


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("f", [noisy, relax])
def test_not_checkpointed(f, jit):
    """Random draws and ``while`` loops keep their tape (no second branch)."""
    src = _check(f, 2_000, jit, None)[3]
    assert "_checkpointed" not in src and "revolve_split(" not in src


def test_config_switch(monkeypatch):
    monkeypatch.setattr(jg.config, "auto_checkpoint", False)
    src = jg.differentiate(diffuse, wrt=(0, 1), jit=False).source(X0, 0.2, T)
    assert "_checkpointed" not in src
    assert "_checkpointed" in jg.differentiate(diffuse, wrt=(0, 1), jit=False,
                                               auto_checkpoint=True).source(X0, 0.2, T)


@pytest.mark.parametrize("value, on", [(None, "False"), ("0", "False"), ("1", "True"),
                                       ("on", "True")])
def test_environment_variable(value, on):
    code = "import jitgrad as jg; print(jg.config.auto_checkpoint, jg.config.checkpoint_bytes)"
    env = {k: v for k, v in os.environ.items() if k != "JITGRAD_AUTO_CHECKPOINT"}
    env["JITGRAD_CHECKPOINT_BYTES"] = "1000"
    if value is not None:
        env["JITGRAD_AUTO_CHECKPOINT"] = value
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout.split()
    assert out == [on, "1000"]


def test_hvp_through_the_branch(monkeypatch):
    """``jg.hvp`` (forward mode over the gradient code) through the binomial branch, forced
    with ``checkpoint_bytes = 0``, equals the Hessian-vector product of the loop's tape and
    central differences of the gradient."""
    monkeypatch.setattr(jg.config, "checkpoint_bytes", 0)
    args, v, h = (X0, 0.2, 300), np.linspace(0.1, 0.8, 8), 1e-6
    d = jg.differentiate(diffuse, wrt=0, jit=False)
    assert "_checkpointed = _tape_bytes > 0" in d.source(*args)
    on = jg.hvp(d, args, v, jit=False)
    off = jg.hvp(jg.differentiate(diffuse, wrt=0, jit=False, auto_checkpoint=False), args, v,
                 jit=False)
    np.testing.assert_allclose(on, off, rtol=1e-12, atol=1e-15)
    fd = (d.grad(X0 + h * v, 0.2, 300) - d.grad(X0 - h * v, 0.2, 300)) / (2 * h)
    np.testing.assert_allclose(on, fd, rtol=1e-5, atol=1e-7)
