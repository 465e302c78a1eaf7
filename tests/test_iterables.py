"""Loops over zip, enumerate(zip), np.ndindex, x.flat and literal tuples (issue 29 item 1),
written as real Numba kernels write them: each against central differences, both jit modes."""

import numpy as np
import pytest
from gradcheck import check_grad

import jitgrad as jg


def weighted_residual(pred, obs, w):
    """A zip loop over unequal lengths runs to the shortest, as Python's zip does."""
    s = 0.0
    for p, o, wi in zip(pred, obs, w):  # noqa: B905 (as users write it)
        r = p - o
        s += wi * r * r
    return s


def enumerated_pairs(x, y):
    s = 0.0
    for i, (a, b) in enumerate(zip(x, y, strict=False)):
        s += (i + 1.0) * a * b
        if s > 1e6:
            break
    return s


def zip_rows_break(x, y):
    """A zip with a break that happens (x's entries pass 0.5 partway)."""
    s = 0.0
    for a, b in zip(x[1:], y):  # noqa: B905
        if a > 0.5:
            break
        s += a * np.sin(b)
    return s


def laplace_energy(d):
    """An ndindex stencil over the interior of a 2-D field."""
    s = 0.0
    for i, j in np.ndindex(d.shape):
        if 0 < i < d.shape[0] - 1 and 0 < j < d.shape[1] - 1:
            lap = d[i - 1, j] + d[i + 1, j] + d[i, j - 1] + d[i, j + 1] - 4.0 * d[i, j]
            s += lap * lap
    return s


def field3(d):
    """3-D: ``*shape``, explicit extents, and an index tuple used whole (``d[idx]``)."""
    s = 0.0
    for i, j, k in np.ndindex(*d.shape):
        s += np.sin(d[i, j, k]) * d[i, j, k]
    for idx in np.ndindex(d.shape[0], d.shape[1], 2):
        s += d[idx] ** 3
    return s


def ndindex_break(d):
    """A break inside the nest leaves all of it (here partway through the second row)."""
    s = 0.0
    for i, j in np.ndindex(d.shape):
        if d[i, j] > 2.5:
            break
        s += d[i, j] * d[i, j]
    return s


def flat_cubes(d):
    s = 0.0
    for v in d.flat:
        s += v * v * v
    for k, v in enumerate(d.flat):
        s += k * v
    return s


def two_halves(x, h):
    """A filter applied in two halves (``for kr in (0, 1)``), a literal list of names."""
    n = len(h) // 2
    s = 0.0
    for kr in (0, 1):
        for k in range(n):
            s += x[kr * n + k] * h[kr * n + k] * (1.0 + kr)
    a, b = x[0], x[1]
    for c in [a, b, -2.0]:
        s += c * h[0]
        b = 10.0 * c  # rebinding b does not change what the loop iterates
    return s


def literal_break(x):
    s = 0.0
    for kr in (0, 1, 2):
        if x[kr] > 0.9:
            break
        if x[kr] < -5.0:
            continue
        s += x[kr] ** 2
    return s


RNG = np.random.default_rng(29)
GRID = np.linspace(0.0, 3.0, 12).reshape(3, 4)  # passes 2.5 at [2, 2]
CASES = [
    (weighted_residual, (RNG.normal(size=5), RNG.normal(size=6), RNG.normal(size=4)),
     (0, 1, 2)),
    (enumerated_pairs, (RNG.normal(size=4), RNG.normal(size=5)), (0, 1)),
    (zip_rows_break, (np.array([0.1, 0.2, 0.3, 0.9, 0.1]), RNG.normal(size=4)), (0, 1)),
    (laplace_energy, (RNG.normal(size=(4, 5)),), 0),
    (field3, (RNG.normal(size=(2, 3, 4)),), 0),
    (ndindex_break, (GRID,), 0),
    (flat_cubes, (RNG.normal(size=(3, 2)),), 0),
    (two_halves, (RNG.normal(size=6), RNG.normal(size=6)), (0, 1)),
    (literal_break, (np.array([0.3, -0.2, 1.4]),), 0),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0].__name__ for c in CASES])
def test_iterables(case, jit):
    f, args, wrt = case
    check_grad(f, args, wrt=wrt, jit=jit)


def test_break_leaves_the_whole_nest():
    # the break fires at d[2, 2]: the sum stops there, later entries get no gradient
    val, g = jg.differentiate(ndindex_break, jit=False).value_and_grad(GRID)
    assert GRID[2, 2] > 2.5 and (GRID[:2] <= 2.5).all() and (GRID[2, :2] <= 2.5).all()
    expected = np.zeros_like(GRID)
    expected[:2] = 2 * GRID[:2]
    expected[2, :2] = 2 * GRID[2, :2]
    np.testing.assert_allclose(g, expected)
    np.testing.assert_allclose(val, np.sum(GRID[:2] ** 2) + np.sum(GRID[2, :2] ** 2))


def test_rewrite_is_flat():
    src = jg.differentiate(laplace_energy, jit=False).source(stage="loops")
    assert "for i in range(d.shape[0]):" in src and "for j in range(d.shape[1]):" in src


def idx_unknown_rank(d):
    s = 0.0
    for idx in np.ndindex(d.shape):
        s += d[idx]
    return s


def idx_read_after(d):
    s = 0.0
    for idx in np.ndindex(2, 2):
        s += d[idx]
    return s + d[idx]


def flat_written(d):
    s = 0.0
    for v in d.flat:
        d[0, 0] = v
        s += v
    return s


def zip_one_name(x, y):
    s = 0.0
    for p in zip(x, y):  # noqa: B905
        s += p[0]
    return s


@pytest.mark.parametrize("f, what, hint", [
    (idx_unknown_rank, "np.ndindex of a shape", "for i, j in np.ndindex"),
    (idx_read_after, "read after it", "for i, j in np.ndindex"),
    (flat_written, "d.flat that writes d", "range(d.size)"),
    (zip_one_name, "unsupported zip loop", "one name per array"),
])
def test_refusals_at_the_loop(f, what, hint):
    with pytest.raises(jg.TransformError, match=what) as info:
        jg.differentiate(f, jit=False).value_and_grad(np.ones((2, 2)), np.ones(2)) \
            if f is zip_one_name else jg.differentiate(f, jit=False).value_and_grad(
                np.ones((2, 2)))
    assert info.value.lineno == f.__code__.co_firstlineno + 2
    assert hint in str(info.value)


@pytest.mark.parametrize("case", CASES, ids=[c[0].__name__ for c in CASES])
def test_iterables_forward_mode(case, jit):
    """The rewrites are front-end passes forward mode shares: J v against central
    differences along v, and the value."""
    f, args, wrt = case
    w = wrt if isinstance(wrt, int) else wrt[0]
    v = np.random.default_rng(3).normal(size=np.shape(args[w]))
    eps = 1e-6
    hi, lo = list(args), list(args)
    hi[w], lo[w] = args[w] + eps * v, args[w] - eps * v
    fd = (f(*hi) - f(*lo)) / (2 * eps)
    val, tan = jg.jvp(jg.differentiate(f, wrt=w, jit=jit), args, v)
    np.testing.assert_allclose(val, f(*args), rtol=1e-12)
    np.testing.assert_allclose(tan, fd, rtol=1e-5, atol=1e-6)
