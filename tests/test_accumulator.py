"""A per-iteration accumulator array (issue 29 item 4): created in an outer loop body,
updated with ``f += ...`` in an inner loop, read later in the same body, as force
accumulation in molecular dynamics is written. Both jit modes, central differences."""

import numba
import numpy as np
import pytest
from gradcheck import check_grad

import jitgrad as jg


def forces_energy(pos, w):
    n = pos.shape[0]
    e = 0.0
    for i in range(n):
        f = np.zeros(2)
        for j in range(n):
            if j != i:
                f += w[j] * pos[j] * np.sin(pos[i, 0])
        e += np.sum(f * f) + f[0] * f[1]
    return e


def forces_out(pos, w):
    """``out[i] = f`` after the inner loop; the elementwise and whole forms together."""
    n = pos.shape[0]
    out = np.zeros((n, 2))
    for i in range(n):
        f = np.zeros(2)
        for j in range(n):
            dx = pos[i, 0] - pos[j, 0]
            f[0] += w[j] * dx * dx
            f += 0.5 * pos[j] * pos[i, 1]
        out[i] = f
    return np.sum(out * out)


def scaled_accumulator(pos, w):
    """Products and differences (the adjoint needs f's value at each inner step)."""
    n = pos.shape[0]
    e = 0.0
    for i in range(n):
        f = np.ones(2)
        for j in range(n):
            if w[j] > 0.5:
                f *= 1.0 + 0.1 * pos[j] * pos[i, 1]
            else:
                f -= pos[j] * w[j]
        e += np.sum(f * f) + f[0]
    return e


def accumulator_break(pos, w):
    n = pos.shape[0]
    e = 0.0
    for i in range(n):
        f = np.zeros(2)
        for j in range(n):
            if w[j] > 2.5:
                break
            f += pos[j] * w[j] * pos[i, 0]
        e += np.sum(f * f)
    return e


def accumulator_prange(pos, w):
    n = pos.shape[0]
    out = np.zeros((n, 2))
    for i in numba.prange(n):
        f = np.zeros(2)
        for j in range(n):
            f += w[j] * pos[j] * pos[i, 1]
        out[i] = f
    return np.sum(out * out)


def pair_force(xi, yi, xj, yj):
    dx = xi - xj
    dy = yi - yj
    r2 = dx * dx + dy * dy + 0.5
    return np.array([dx / r2, dy / r2])


def forces_from_helper(pos, w):
    """``f += g(...)`` with a helper returning the pair's force (scalar arguments)."""
    n = pos.shape[0]
    e = 0.0
    for i in range(n):
        f = np.zeros(2)
        for j in range(n):
            if i != j:
                f += w[j] * pair_force(pos[i, 0], pos[i, 1], pos[j, 0], pos[j, 1])
        e += np.sum(f * f)
    return e


POS = np.random.default_rng(4).normal(size=(4, 2))
W = np.array([0.2, 0.9, 3.0, 0.4])  # the break fires at j = 2
CASES = [forces_energy, forces_out, scaled_accumulator, accumulator_break,
         accumulator_prange, forces_from_helper]


@pytest.mark.parametrize("f", CASES, ids=[f.__name__ for f in CASES])
def test_per_iteration_accumulator(f, jit):
    check_grad(f, (POS, W), wrt=(0, 1), jit=jit)


def used_after_the_loop(pos, w):
    n = pos.shape[0]
    for i in range(n):
        f = np.zeros(2)
        for j in range(n):
            f += w[j] * pos[j] * pos[i, 0]
    return np.sum(f * f)


def test_read_after_the_outer_loop_is_refused_at_its_creation():
    with pytest.raises(jg.TransformError, match="created inside a loop") as info:
        jg.differentiate(used_after_the_loop, wrt=(0, 1), jit=False).value_and_grad(POS, W)
    assert info.value.lineno == used_after_the_loop.__code__.co_firstlineno + 3
