"""Automatic checkpointing (``transpiler/modes/auto_checkpoint.py``): a time loop whose
inner loops' tape would exceed ``jg.config.checkpoint_bytes`` runs on the binomial schedule
of ``jg.checkpointed`` without the user writing it, chosen when the loop starts.

Every case checks the value ``value_and_grad`` returns against the primal and every
gradient element against central differences, in ``jit=True`` and ``jit=False``, and the
same function with ``auto_checkpoint=False`` (its tape) against it.  The threshold is
lowered to 64 kB so that the loops stay small enough for ``jit=False``: the 5,000-step
loop's tape takes 240 kB."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import tracemalloc

import numpy as np
import pytest
from numba import njit

import jitgrad as jg
from jitgrad.kernels import revolve

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


@functools.cache
def _primal(f):
    """``njit(f)``, compiled once per function (the reference of every check)."""
    return njit(f)


@functools.cache
def _fresh(f, jit, auto, threshold):
    """A ``jg.differentiate`` object transformed with ``threshold`` (the code reads it), one
    per threshold: the cases with the same threshold share its compiled code."""
    return jg.differentiate(f, wrt=(0, 1), jit=jit, auto_checkpoint=auto, cache=False)


def _check(f, steps, jit, auto, fresh=False):
    """``fresh``: a ``jg.differentiate`` object transformed with the threshold set now
    (``jg.value_and_grad`` of a plain function reuses the one made for its options)."""
    primal = _primal(f)
    c = 0.2
    d = _fresh(f, jit, auto, jg.config.checkpoint_bytes) if fresh else None
    vg = d.value_and_grad if fresh else jg.value_and_grad(f, wrt=(0, 1), jit=jit,
                                                          auto_checkpoint=auto)
    value, (gx, gc) = vg(X0, c, steps)
    assert value == pytest.approx(primal(X0, c, steps), rel=1e-12)
    fx, fc = _central(primal, X0, c, steps)
    np.testing.assert_allclose(gx, fx, rtol=1e-6, atol=1e-8)
    assert gc == pytest.approx(fc, rel=1e-6, abs=1e-8)
    grad = d.grad if fresh else jg.grad(f, wrt=(0, 1), jit=jit, auto_checkpoint=auto)
    g = grad(X0, c, steps)
    np.testing.assert_allclose(g[0], gx, rtol=1e-12, atol=1e-15)
    return value, gx, gc, (d or vg).source(X0, c, steps)


@pytest.mark.parametrize("jit", [False, True])
def test_long_loop_is_checkpointed(jit):
    value, gx, gc, src = _check(diffuse, T, jit, None, fresh=True)  # (test_blocks_of_steps')
    assert "_checkpointed = " in src and "block_split(" in src
    off = _check(diffuse, T, jit, False)
    assert "_checkpointed" not in off[3] and "block_split(" not in off[3]
    assert off[0] == pytest.approx(value, rel=1e-13)
    np.testing.assert_allclose(off[1], gx, rtol=1e-11, atol=1e-15)
    assert off[2] == pytest.approx(gc, rel=1e-11)


def _peak(auto: bool, steps: int) -> int:
    d = _fresh(diffuse, False, auto, jg.config.checkpoint_bytes)
    d.value_and_grad(X0, 0.2, steps)  # the kept tapes and slots are made by the first call
    d.release_workspaces()
    tracemalloc.start()
    try:
        d.value_and_grad(X0, 0.2, steps)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_peak_memory_lower(monkeypatch):
    """The binomial branch is taken: a 60 kB tape (1,250 steps over a 16 kB threshold)
    gives way to snapshots of 144 bytes and one block's tape (83 steps: 4 kB, a quarter
    of the threshold).  (A quarter of the loop of the other tests with a quarter of their
    threshold: tracemalloc slows every allocation of the jit=False loop.)"""
    monkeypatch.setattr(jg.config, "checkpoint_bytes", 16_000)
    steps = T // 4
    on, off = _peak(True, steps), _peak(False, steps)
    assert off > 48 * steps
    assert on < off / 3


@pytest.mark.parametrize("jit", [False, True])
def test_short_loop_keeps_its_tape(jit):
    """A loop whose tape fits takes the plain branch: its results are the tape's."""
    value, gx, gc, src = _check(diffuse, 40, jit, None, fresh=True)
    assert "_checkpointed = " in src  # (decided when the loop starts)
    off = _check(diffuse, 40, jit, False)
    assert off[0] == value and np.array_equal(off[1], gx) and off[2] == gc


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("f", [noisy, relax])
def test_not_checkpointed(f, jit):
    """Random draws and ``while`` loops keep their tape (no second branch)."""
    src = _check(f, 2_000, jit, None)[3]
    assert "_checkpointed" not in src and "block_split(" not in src


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


@pytest.mark.parametrize("threshold", [0, 4_000])
def test_hvp_through_the_branch(monkeypatch, threshold):
    """``jg.hvp`` (forward mode over the gradient code) through the binomial branch, forced
    with ``checkpoint_bytes = 0`` (blocks of one step) or small (blocks of 20 steps), equals
    the Hessian-vector product of the loop's tape and central differences of the
    gradient."""
    monkeypatch.setattr(jg.config, "checkpoint_bytes", threshold)
    args, v, h = (X0, 0.2, 300), np.linspace(0.1, 0.8, 8), 1e-6
    d = jg.differentiate(diffuse, wrt=0, jit=False)
    assert f"_checkpointed = _tape_bytes > {threshold}" in d.source(*args)
    on = jg.hvp(d, args, v, jit=False)
    off = jg.hvp(jg.differentiate(diffuse, wrt=0, jit=False, auto_checkpoint=False), args, v,
                 jit=False)
    np.testing.assert_allclose(on, off, rtol=1e-12, atol=1e-15)
    fd = (d.grad(X0 + h * v, 0.2, 300) - d.grad(X0 - h * v, 0.2, 300)) / (2 * h)
    np.testing.assert_allclose(on, fd, rtol=1e-5, atol=1e-7)


def strided(x, c, steps):
    """A time loop over ``range(1, steps, 3)`` whose steps read the loop index and carry a
    scalar (``M``): the blocked driver's ``INDEX`` gives each step its own ``t``."""
    n = x.shape[0]
    J = x.copy()
    K = x.copy()
    M = 0.0
    for t in range(1, steps, 3):
        w = 1.0 + 1e-5 * t
        for i in range(1, n - 1):
            K[i] = J[i] + c * w * (J[i - 1] - 2.0 * J[i] + J[i + 1])
        J, K = K, J
        M = 0.999 * M + J[3] * J[4]
    return M + np.sum(J * J)


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("threshold, steps, block", [
    (0, 701, 1), (4_000, T, 20), (64_000, 1_777, 333), (64_000, T, 333)])
def test_blocks_of_steps(monkeypatch, jit, threshold, steps, block):
    """The automatic schedule reverses a block of steps at a time (as many as keep the
    block's tape within a quarter of the threshold: ``block`` of 48-byte steps), with
    partial last blocks (1,777 = 5 x 333 + 112); every gradient element matches central
    differences and the tape's gradient."""
    monkeypatch.setattr(jg.config, "checkpoint_bytes", threshold)
    value, gx, gc, src = _check(diffuse, steps, jit, None, fresh=True)
    assert f"_tape_bytes > {threshold}" in src
    assert f"block_steps(_tape_bytes, steps, {threshold // 4})" in src
    assert revolve.block_steps(48 * steps, steps, threshold // 4) == block
    off = _check(diffuse, steps, jit, False)
    assert off[0] == pytest.approx(value, rel=1e-13)
    np.testing.assert_allclose(off[1], gx, rtol=1e-11, atol=1e-15)
    assert off[2] == pytest.approx(gc, rel=1e-11)


@njit
def _three_slots(steps, block, state_bytes, tape_bytes):
    return 3


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("f, steps", [(diffuse, 2_000), (strided, 3_001)])
def test_blocks_recomputed_from_few_snapshots(monkeypatch, jit, f, steps):
    """With fewer snapshot slots than blocks (3 here, forced) the driver splits segments of
    blocks on the binomial schedule and recomputes blocks from the snapshots; the gradient
    is still every element's central difference and the tape's."""
    monkeypatch.setattr(jg.config, "checkpoint_bytes", 4_000)
    monkeypatch.setattr(revolve, "block_slots", _three_slots)
    d = jg.differentiate(f, wrt=(0, 1), jit=jit, cache=False)
    value, (gx, gc) = d.value_and_grad(X0, 0.2, steps)
    assert "_three_slots(" in d.source(X0, 0.2, steps)
    primal = _primal(f)
    assert value == pytest.approx(primal(X0, 0.2, steps), rel=1e-12)
    fx, fc = _central(primal, X0, 0.2, steps)
    np.testing.assert_allclose(gx, fx, rtol=1e-6, atol=1e-8)
    assert gc == pytest.approx(fc, rel=1e-6, abs=1e-8)
    off = jg.value_and_grad(f, wrt=(0, 1), jit=jit, auto_checkpoint=False)(X0, 0.2, steps)
    assert off[0] == pytest.approx(value, rel=1e-13)
    np.testing.assert_allclose(off[1][0], gx, rtol=1e-11, atol=1e-15)
    assert off[1][1] == pytest.approx(gc, rel=1e-11)


@pytest.mark.parametrize("steps, k, block", [
    (1, 1, 1), (5, 2, 3), (17, 1, 4), (100, 3, 7), (100, 15, 7), (2_000, 32, 64),
    (2_001, 5, 64), (333, 100, 333), (60, 4, 1)])
def test_blocked_driver_reverses_each_step_once_in_order(steps, k, block):
    """The driver over blocks (run without the steps, ``revolve.simulate``) reverses every
    step once, last to first, keeps at most ``k`` snapshots, and with a slot per block
    runs each step untaped once (the forward sweep) and no more."""
    order = np.zeros(steps, np.int64)
    runs = np.zeros(steps, np.int64)
    untaped, taped, peak = revolve.simulate(steps, k, order, runs, block)
    assert taped == steps and np.array_equal(order, np.arange(steps)[::-1])
    assert peak <= k and untaped == runs.sum() and runs.min() >= 1
    if k >= -(-steps // block):
        assert untaped == steps
    if block == 1:
        assert (untaped, taped, peak) == revolve.simulate(steps, k, np.zeros(0, np.int64),
                                                          np.zeros(0, np.int64))


def test_block_sizes():
    """Blocks keep their tape within the budget (at least one step, at most all); a slot
    per block where those take at most a quarter of the tape, else as many as do, and at
    least the default count over the blocks."""
    assert revolve.block_steps(32_000_000, 2_000, 1 << 20) == 65
    assert revolve.block_steps(32_000_000, 2_000, 0) == 1
    assert revolve.block_steps(1_000, 10, 1 << 20) == 10
    assert revolve.block_slots(2_000, 65, 32_016, 32_000_000) == 31
    assert revolve.block_slots(2_000, 1, 32_016, 32_000_000) == 249
    assert revolve.block_slots(10_000, 1, 1 << 30, 1 << 20) == revolve.snapshot_count(10_000, -1)
    assert revolve.block_slots(0, 1, 8, 0) == 1


def test_show_schedule_describes_the_blocks(monkeypatch):
    """``jitgrad show --schedule`` reports for an automatic loop what runs at the example
    arguments: the block size and snapshot count the generated code computes where the loop
    starts (recorded here from its calls of ``block_steps`` and ``block_slots``), the step
    runs the blocked driver makes, and the tape kept where the loop's tape fits."""
    from jitgrad import cli

    seen = {}

    def record(fn, key):
        @functools.wraps(fn)
        def kept(*a):
            seen[key] = fn(*a)
            return seen[key]
        return kept

    monkeypatch.setattr(revolve, "block_steps", record(revolve.block_steps, "block"))
    monkeypatch.setattr(revolve, "block_slots", record(revolve.block_slots, "slots"))
    d = jg.differentiate(diffuse, wrt=(0, 1), jit=False, cache=False)
    value, (gx, gc) = d.value_and_grad(X0, 0.2, T)
    assert value == pytest.approx(njit(diffuse)(X0, 0.2, T), rel=1e-12)
    fx, fc = _central(njit(diffuse), X0, 0.2, T)
    np.testing.assert_allclose(gx, fx, rtol=1e-6, atol=1e-8)
    assert gc == pytest.approx(fc, rel=1e-6, abs=1e-8)
    ran = dict(seen)
    text = cli.schedule_report(d, T, (X0, 0.2, T))
    k = revolve.snapshot_count(-(-T // ran["block"]), ran["slots"])
    b = ran["block"]
    assert b == 62 and k == 81  # (256 B of tape per step: 62 steps within 16 kB)
    assert "automatic (auto_checkpoint): its tape where that takes at most 64000 B" in text
    assert "one step's tape 256 B, 5000 steps' 1280000 B; a snapshot 152 B" in text
    assert (f"blocks of {b} steps, {k} snapshots: 5000 untaped + 5000 taped step runs, "
            "recompute factor 2.00, each step run untaped at most 1 times; peak memory "
            f"{k} x 152 B of snapshots + {256 * b} B of tape (one block)") in text
    assert "binomial schedule" not in text and "snapshots=auto" not in text
    short = cli.schedule_report(d, 40, (X0, 0.2, 40))
    assert "10240 B; a snapshot 152 B" in short and "runs with its tape" in short
    assert "(give --args)" in cli.schedule_report(d, T, None)


def test_show_takes_a_decorated_targets_option(monkeypatch, tmp_path, capsys):
    """``jitgrad show`` of a ``@jg.differentiate(..., auto_checkpoint=True)`` target shows
    the code that option makes (the config's is off here), its schedule reported as run."""
    from jitgrad import cli

    monkeypatch.setattr(jg.config, "auto_checkpoint", False)
    (tmp_path / "target.py").write_text(
        "import numpy as np\nimport jitgrad as jg\n\n\n"
        "@jg.differentiate(wrt=(0, 1), auto_checkpoint=True)\n"
        "def decorated(x, c, steps):\n"
        "    n = x.shape[0]\n    J = x.copy()\n    K = x.copy()\n"
        "    for _t in range(steps):\n"
        "        for i in range(1, n - 1):\n"
        "            K[i] = J[i] + c * (J[i - 1] - 2.0 * J[i] + J[i + 1])\n"
        "        J, K = K, J\n"
        "    return np.sum(J * J)\n")
    args = "(np.linspace(0.1, 0.8, 8), 0.2, 5000)"
    assert cli.main(["show", f"{tmp_path / 'target.py'}:decorated", "--no-color", "--args",
                     args, "--schedule", "5000"]) == 0
    out = capsys.readouterr().out
    assert "_checkpointed = _tape_bytes > 64000" in out
    assert "line 10: automatic (auto_checkpoint)" in out
    assert "one step's tape 48 B, 5000 steps' 240000 B; a snapshot 144 B" in out
    assert "blocks of 333 steps" in out
