"""Gather form with sums into scalars (``backend/gather.py``, ``_Lanes``): a reversed loop
that scatters into ``dx[i + c]`` and also sums into a scalar (the gradient of a parameter,
``dk += ...``) runs over the output index; each iteration's term of the sum goes to a
buffer of partial sums, summed after the main loop (``lane_sum``), and tapes are read
through a view from the loop's first entry (``tape_from``).  Values and every gradient
element against central differences in both ``jit`` modes; the decision in the source."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from gradcheck import benchmark_workloads, check_grad, check_hvp

import jitgrad as jg

GATHERED = "_inner_lo"  # the gather form's main range
heat = benchmark_workloads()["heat"].primal


def _src(f, *args, **kw) -> str:
    return jg.differentiate(f, **kw).source(*args)


def _squares(y):
    s = 0.0
    for i in range(y.shape[0]):
        s += y[i] * y[i]
    return s


def three(x, k):
    """Offsets -1, 0, +1 and a parameter: ``dk`` sums over the loop."""
    y = np.zeros(x.shape[0])
    for i in range(1, x.shape[0] - 1):
        y[i] = k * x[i - 1] * x[i + 1] - math.cos(k * x[i]) * x[i + 1]
    return _squares(y)


def asymmetric(x, k):
    """Offsets -2 and +1 (no zero offset: the sums are made at offset -2's iteration)."""
    y = np.zeros(x.shape[0])
    for i in range(2, x.shape[0] - 1):
        y[i] = math.sin(k * x[i - 2]) * x[i + 1]
    return _squares(y)


def single(x, k):
    """One offset (+2): each element of ``dx`` gets one term."""
    y = np.zeros(x.shape[0])
    for i in range(x.shape[0] - 2):
        y[i] = k * x[i + 2] * x[i + 2]
    return _squares(y)


def far(x, k):
    """Offsets 0 and -4: for ``n < 5`` the loop has no trip, for ``n < 9`` no middle."""
    y = np.zeros(x.shape[0])
    for i in range(4, x.shape[0]):
        y[i] = k * x[i] * x[i - 4]
    return _squares(y)


def bounds(x, k, lo, hi):
    """Loop bounds from variables."""
    y = np.zeros(x.shape[0])
    for i in range(lo, hi):
        y[i] = k * x[i] * x[i + 1] + k * k * x[i - 1]
    return _squares(y)


def collide(x, du, dx, j, _t1):
    """User names that the generated code also makes (``du``, ``dx``, ``j``, ``_t1``)."""
    y = np.zeros(x.shape[0])
    for i in range(1, x.shape[0] - 1):
        y[i] = du * x[i - 1] * x[i + 1] + dx * x[i] + j * _t1 * x[i + 1]
    return _squares(y)


def two_sums(x, a, b):
    """Two scalars summed in one loop: a buffer each."""
    y = np.zeros(x.shape[0])
    for i in range(1, x.shape[0]):
        y[i] = a * x[i] * x[i - 1] + b * math.exp(-x[i])
    return _squares(y)


def energy(x, k):
    """Iterations that share only the sum: the fuse step runs each iteration's adjoint
    right after it (no tape, no reversed loop), which the gather form leaves alone."""
    e = 0.0
    for i in range(x.shape[0] - 1):
        d = x[i + 1] - x[i] - 1.0
        e += k * d * d
    return e


def grid(u0, alpha, nsteps):
    """A 2-D five-point heat step, two buffers swapped: the inner loop's adjoint scatters
    into ``du[i, j + c]`` (a 2-D subscript: the gather form is 1-D, so it stays)."""
    n, m = u0.shape
    u = u0.copy()
    v = u0.copy()
    for _ in range(nsteps):
        for i in range(1, n - 1):
            for j in range(1, m - 1):
                v[i, j] = u[i, j] + alpha * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1]
                                             + u[i, j + 1] - 4.0 * u[i, j])
        u, v = v, u
    total = 0.0
    for i in range(n):
        for j in range(m):
            total += u[i, j] * u[i, j]
    return total


def carried(x, k):
    """A value carried from one iteration to the next: the scatter stays."""
    p = 1.0
    s = 0.0
    for i in range(1, x.shape[0] - 1):
        p = p * 0.5 + k * x[i - 1] * x[i + 1]
        s += p
    return s


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("n", [1, 2, 3, 4, 6, 11])
def test_offsets(n, jit):
    x = np.random.default_rng(n).uniform(-1, 1, n)
    for f in (three, asymmetric, single, far, energy):
        check_grad(f, (x, 0.7), (0, 1), jit=jit, shared=True)


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("n,lo,hi", [(6, 1, 5), (6, 2, 3), (6, 3, 3), (6, 4, 2), (3, 1, 2),
                                      (7, 0, 5), (2, 1, 1)])
def test_variable_bounds(n, lo, hi, jit):
    """``lo = 0`` reads ``x[-1]`` (the last element: Python's wrap), ``lo >= hi`` no trip."""
    x = np.random.default_rng(n + lo).uniform(-1, 1, n)
    check_grad(bounds, (x, 0.3, lo, hi), (0, 1), jit=jit, shared=True)


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("n", [1, 2, 3, 7])
def test_names_collide(n, jit):
    x = np.random.default_rng(n).uniform(-1, 1, n)
    check_grad(collide, (x, 0.4, -0.3, 1.5, 0.7), (0, 1, 2, 3, 4), jit=jit, shared=True)
    check_grad(two_sums, (x, 0.4, -0.3), (0, 1, 2), jit=jit, shared=True)


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("n,steps", [(1, 2), (2, 1), (3, 1), (4, 3), (9, 5)])
def test_heat(n, steps, jit):
    u0 = np.random.default_rng(n).uniform(0, 1, n)
    check_grad(heat, (u0, 0.2, steps), (0, 1), jit=jit, shared=True)


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("shape", [(3, 3), (4, 5), (2, 6)])
def test_grid(shape, jit):
    u0 = np.random.default_rng(shape[1]).uniform(0, 1, shape)
    check_grad(grid, (u0, 0.1, 3), (0, 1), jit=jit, shared=True)


@pytest.mark.parametrize("jit", [True, False])
def test_heat_checkpointed(jit):
    """The automatic schedule's step: its reversed stencil is gathered too."""
    u0 = np.random.default_rng(5).uniform(0, 1, 7)
    d = jg.differentiate(heat, wrt=(0, 1), jit=jit, auto_checkpoint=True)
    plain = jg.differentiate(heat, wrt=(0, 1), jit=jit)
    v, (g0, ga) = d.value_and_grad(u0, 0.2, 300)
    w, (h0, ha) = plain.value_and_grad(u0, 0.2, 300)
    assert v == pytest.approx(w, rel=1e-12)
    np.testing.assert_allclose(g0, h0, rtol=1e-9)
    assert ga == pytest.approx(ha, rel=1e-9)


@pytest.mark.parametrize("jit", [True, False])
def test_carried_keeps_the_scatter(jit):
    x = np.random.default_rng(2).uniform(-1, 1, 6)
    check_grad(carried, (x, 0.6), (0, 1), jit=jit, shared=True)


def test_gathered_with_sums():
    """The decision: each of these sums into a parameter's gradient in the reversed loop,
    and is gathered (the scatter ``dx[i + 1] +=`` is gone; before, a sum kept it)."""
    x = np.ones(8)
    for f in (three, asymmetric, single, far, two_sums):
        src = _src(f, x, 0.5, 0.5, wrt=(0, 1, 2)) if f is two_sums else \
            _src(f, x, 0.5, wrt=(0, 1))
        assert GATHERED in src and "lane_sum(_lanes_" in src, f.__name__
        assert "dx[i + 1] +=" not in src and "dx[i - 1] +=" not in src, f.__name__
    src = _src(two_sums, x, 0.5, 0.5, wrt=(0, 1, 2))
    assert "da += lane_sum(_lanes_da, " in src and "db += lane_sum(_lanes_db, " in src
    src = _src(heat, x, 0.2, 3, wrt=(0, 1))
    reverse = src.split("for _ in range(nsteps - 1")[1]
    assert "_lanes_dalpha[i - _inner_lo] = _dt * _t4" in reverse
    assert "_t4 = tape_get(_tape_t4_1_at, i - _lo)" in reverse
    assert "du[i + 1] +=" not in reverse


def test_collisions_keep_their_names():
    src = _src(collide, np.ones(5), 0.4, -0.3, 1.5, 0.7, wrt=(0, 1, 2, 3, 4))
    assert GATHERED in src
    for user in ("du", "dx", "j", "_t1"):  # the gradients of these get other names
        assert not re.search(rf"\s{user} \+= lane_sum\(", src), user
    assert "ddu += lane_sum(_lanes_ddu, " in src


def test_rejected_keep_the_scatter():
    """A value carried between iterations, or a 2-D subscript: the scatter stays; a loop
    the fuse step takes stays fused."""
    src = _src(energy, np.ones(6), 0.6, wrt=(0, 1))
    assert GATHERED not in src and "are independent: each runs its adjoint" in src
    src = _src(carried, np.ones(6), 0.6, wrt=(0, 1))
    assert GATHERED not in src and "lane_sum" not in src
    src = _src(grid, np.ones((4, 4)), 0.1, 2, wrt=(0, 1))
    assert GATHERED not in src and "lane_sum" not in src


def test_checkpointed_indices_proved():
    """The binomial schedule's stack of positions (grown by ``tape_reserve``, unpacked from
    the workspace) and its slots of references (a list) leave no index to Numba's checks:
    the automatically checkpointed heat gradient compiles without them."""
    src = _src(heat, np.ones(6), 0.2, 3, wrt=(0, 1), auto_checkpoint=True)
    assert "every index is checked explicitly" in src.splitlines()[1]
    assert "_refs_u2[_top2] = u" in src and "_at2[_top2] = _j2" in src


def test_hvp_through_gathered_sums():
    """Forward mode over the gathered gradient code (``jg.hvp``): the buffers of partial
    sums and the tape views have tangents (``lane_sum``, ``tape_from``, ``tape_get``)."""
    x = np.random.default_rng(0).uniform(-1, 1, 9)
    check_hvp(three, (x, 0.7), (0, 1))
    check_hvp(two_sums, (x, 0.4, -0.3), (0, 1, 2))
    check_hvp(heat, (np.random.default_rng(1).uniform(0, 1, 7), 0.2, 4), (0, 1))


@pytest.mark.parametrize("m", [0, 1, 3, 4, 17, 1_996])
def test_lane_sum_compiled_vectorises(m):
    """Compiled, ``lane_sum`` adds the partial sums with reassociation allowed (only that:
    NaN and infinities propagate), so LLVM sums in vector lanes (a ``fadd reassoc`` of
    ``<N x double>`` in its IR); the sum equals NumPy's to round-off."""
    from numba import njit

    from jitgrad.kernels.helpers import lane_sum

    @njit(boundscheck=False, error_model="numpy")
    def total(buf, m):
        return lane_sum(buf, m)

    buf = np.random.default_rng(m).uniform(-1.0, 1.0, max(m, 1) + 3)
    assert total(buf, m) == pytest.approx(np.sum(buf[:m]), rel=1e-13, abs=1e-15)
    assert total(buf, m) == pytest.approx(lane_sum(buf, m), rel=1e-13, abs=1e-15)
    ir = next(iter(total.inspect_llvm().values()))
    assert re.search(r"fadd reassoc <\d+ x double>", ir)
    assert math.isnan(total(np.array([np.inf, 1.0, -np.inf, 2.0, 0.5]), 5))
    assert total(np.array([1.0, np.inf, 2.0, 3.0, 4.0]), 5) == np.inf
