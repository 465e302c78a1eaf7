"""Loop-invariant accumulations kept in a scalar (``backend/promote.py``): where the pass
applies (or must not) in the generated source, and every gradient element against
central differences in both ``jit`` modes."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad, function_from_source

import jitgrad as jg


def pairs(pos, eps):
    n = pos.shape[0]
    total = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            dx = pos[i, 0] - pos[j, 0]
            dy = pos[i, 1] - pos[j, 1]
            total += 1.0 / np.sqrt(dx * dx + dy * dy + eps)
    return total


def lower_triangle(x):
    """``j < i``: the inner loop stops before the outer index."""
    s = 0.0
    for i in range(x.shape[0]):
        for j in range(i):
            s += x[i] * np.sin(x[j])
    return s


def full_square(x):
    """``j`` runs over every index, ``i`` included: the scatter must stay."""
    s = 0.0
    for i in range(x.shape[0]):
        for j in range(x.shape[0]):
            s += x[i] * x[j] * x[j]
    return s


def shifted(x, k):
    """``j`` starts at ``i - 1``: it meets ``i``, so no promotion."""
    s = 0.0
    for i in range(1, x.shape[0]):
        for j in range(i - 1, x.shape[0]):
            s += k * x[i] * x[j]
    return s


def columns(a):
    """Accumulations into ``da[i, 0]`` and ``da[i, 1]`` beside ``da[j, 0]``."""
    s = 0.0
    for i in range(a.shape[0]):
        for j in range(i + 2, a.shape[0]):
            s += a[i, 0] * a[j, 0] + a[i, 1] * a[j, 0]
    return s


def _src(f, *args, wrt=0):
    return jg.differentiate(f, wrt=wrt).source(*args)


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("n", [1, 2, 5])
def test_pairs(n, jit):
    pos = np.random.default_rng(n).normal(size=(n, 2))
    check_grad(pairs, (pos, 0.1), 0, jit=jit, shared=True)


def test_pairs_source():
    src = _src(pairs, np.ones((3, 2)), 0.1)
    assert "_dpos_i_0_sum += " in src and "dpos[i, 0] += _dpos_i_0_sum" in src
    assert "dpos[j, 0] +=" in src  # the other element stays a scatter


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("f", [lower_triangle, full_square])
def test_triangles(f, jit):
    x = np.random.default_rng(4).normal(size=5)
    check_grad(f, (x,), 0, jit=jit, shared=True)


def test_where_it_applies():
    x = np.ones(4)
    assert "_dx_i_sum" in _src(lower_triangle, x)
    assert "_dx_i_sum" not in _src(full_square, x)
    assert "_dx_i_sum" not in _src(shifted, x, 0.5)
    src = _src(columns, np.ones((5, 2)))
    assert "_da_i_0_sum" in src and "_da_i_1_sum" in src


@pytest.mark.parametrize("jit", [True, False])
def test_shifted_and_columns(jit):
    rng = np.random.default_rng(7)
    check_grad(shifted, (rng.normal(size=6), 0.5), (0, 1), jit=jit, shared=True)
    for n in (1, 2, 3, 6):
        check_grad(columns, (rng.normal(size=(n, 2)),), 0, jit=jit, shared=True)


# --- random pair loops --------------------------------------------------------------------


from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


def _pair_source(inner: str, term: str) -> str:
    return ("import math\nimport numpy as np\n\n\ndef f(x):\n    s = 0.0\n"
            "    for i in range(x.shape[0]):\n"
            f"        for j in range({inner}):\n"
            f"            s += {term}\n    return s\n")


_INNER = ("i + 1, x.shape[0]", "i + 2, x.shape[0]", "i, x.shape[0]", "i", "max(0, i - 1)",
          "0, i + 1", "x.shape[0]", "i - 1, x.shape[0]")
_TERMS = ("x[i] * x[j]", "math.sin(x[i]) * x[j] * x[j]", "x[i] * x[i] * math.cos(x[j])",
          "x[j] / (1.5 + x[i] * x[i])", "x[i] * x[j] + x[j - 1] * x[i]")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inner=st.sampled_from(_INNER), term=st.sampled_from(_TERMS), n=st.integers(2, 6))
def test_random_pair_loops(tmp_path_factory, inner, term, n):
    """Inner ranges that start after, at or before the outer index (or cover it all);
    n >= 2 keeps x[j - 1] at j = -1 inside the array."""
    name = f"pairs_{abs(hash((inner, term))) % 10**12}"
    f = function_from_source(tmp_path_factory.mktemp("promote"), name, _pair_source(inner, term))
    x = np.random.default_rng(n).uniform(-1, 1, n)
    for jit in (False, True):
        check_grad(f, (x,), 0, jit=jit, shared=True)
