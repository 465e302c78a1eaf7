"""Gather form (``backend/gather.py``): reversed loops whose adjoint scatters into
``dx[i + c]`` run over the output index instead.  Each case checks where the pass
applies (or must not) in the generated source, and every gradient element against
central differences in both ``jit`` modes."""

from __future__ import annotations

import math

import numpy as np
import pytest
from gradcheck import benchmark_workloads, check_grad, function_from_source
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jitgrad as jg

GATHERED = "_inner_lo"  # the gather form's main range


def rosen(x):
    s = 0.0
    for i in range(x.shape[0] - 1):
        s += 100.0 * (x[i + 1] - x[i] * x[i]) ** 2 + (1.0 - x[i]) ** 2
    return s


def wraps(x):
    """``x[i - 1]`` at ``i = 0`` is the last element (Python's negative index)."""
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i - 1] * math.sin(x[i])
    return s


def three_point(x, k):
    s = 0.0
    for i in range(1, x.shape[0] - 1):
        s += k * x[i - 1] * x[i + 1] - math.cos(x[i]) * x[i + 1]
    return s


#: two buffers and a swap (the benchmark's heat workload): the adjoint resets ``dv[i]``
#: (moved after the gather)
heat_state = benchmark_workloads()["heat"].primal


def taped(x, n):
    """``x`` is written after the loop, so the loop's reads of it come from tapes (read at
    ``base + i`` in the gather form)."""
    s = 0.0
    for j in range(1, n):
        s += math.exp(0.5 * math.tanh(x[j])) - x[j - 1] * x[j + 1]
    x[0] += s * s
    return s + x[0] * x[1]


def with_sum(x, k):
    """The adjoint sums into ``dk`` in the loop: the fuse step runs each iteration's adjoint
    right after it (no reversed loop to gather)."""
    s = 0.0
    for i in range(x.shape[0] - 1):
        s += k * x[i] * x[i + 1]
    return s


def reads_late(x):
    """The adjoint of the second loop needs ``dx`` complete: each loop is its own sweep."""
    s = 0.0
    for i in range(x.shape[0] - 1):
        s += x[i] * x[i + 1]
    t = 0.0
    for i in range(x.shape[0]):
        t += s * x[i]
    return t


def _src(f, *args, **kw) -> str:
    """The generated source, the cached helpers of compiled code (``np_empty_like``,
    ``backend/cached_calls.py``) spelled as the NumPy calls they make."""
    src = jg.differentiate(f, **kw).source(*args)
    return src.replace("np_empty_like(", "np.empty_like(").replace("np_zeros_like(",
                                                                    "np.zeros_like(")


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("n", [1, 2, 3, 8])
def test_rosenbrock(n, jit):
    x = np.random.default_rng(n).uniform(-1.2, 1.2, n)
    check_grad(rosen, (x,), 0, jit=jit, shared=True)


def test_rosenbrock_is_gathered():
    src = _src(rosen, np.ones(5), wrt=0)
    assert GATHERED in src
    assert "dx[i + 1] +=" not in src  # one write per element
    # the main loop and the edge loop write each element once: no zeroing before them
    assert src.count("dx[i] = ") == 2 and "dx[i] +=" not in src
    assert "dx = np.empty_like(x)" in src and "np.zeros_like" not in src
    assert "dx[_hi + 1:] = 0.0" in src and "dx[:] = 0.0" in src  # no loop trip: all zero


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("n", [1, 2, 5])
def test_negative_index_wraps(n, jit):
    x = np.random.default_rng(n).uniform(-1, 1, n)
    check_grad(wraps, (x,), 0, jit=jit, shared=True)
    assert GATHERED in _src(wraps, x, wrt=0)


def late_start(x):
    """Indices from 2: ``dx[0]`` and ``dx[1]`` are reached by no iteration (set to 0)."""
    s = 0.0
    for i in range(2, x.shape[0] - 1):
        s += x[i] * x[i + 1] * x[i]
    return s


def touched_first(x):
    """``dx[0]`` gets a term before the loop's adjoint runs: the loop adds, as it did."""
    s = 0.0
    for i in range(x.shape[0] - 1):
        s += x[i] * x[i + 1]
    return s + 3.0 * x[0] * x[0]


def twice(x):
    """Two gathered loops into ``dx``: only the first may write instead of adding."""
    s = 0.0
    for i in range(x.shape[0] - 1):
        s += x[i] * x[i + 1]
    for i in range(x.shape[0] - 2):
        s += math.sin(x[i]) * x[i + 2]
    return s


def nested(x, m):
    """Gathered inside an outer loop: every outer step adds to ``dx``."""
    s = 0.0
    for k in range(m):
        for i in range(x.shape[0] - 1):
            s += (k + 1.0) * x[i] * x[i + 1]
    return s


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("n", [1, 2, 3, 4, 7])
def test_written_once(n, jit):
    """Where the gathered loop is the first writer of ``dx`` and its indices cannot wrap,
    ``dx`` is made empty and written once per element; elsewhere it stays zeroed and
    added to.  Every element is checked, including those no iteration reaches."""
    x = np.random.default_rng(n).uniform(-1, 1, n)
    for f in (late_start, touched_first, twice, wraps, rosen):
        check_grad(f, (x,), 0, jit=jit, shared=True)
    check_grad(nested, (x, 3), 0, jit=jit, shared=True)
    x = np.ones(6)
    src = _src(late_start, x, wrt=0)
    assert "dx = np.empty_like(x)" in src and "dx[:2] = 0.0" in src
    for f in (touched_first, wraps):
        src = _src(f, x, wrt=0)
        assert GATHERED in src and "np.empty_like" not in src and "dx[i] +=" in src
    src = _src(twice, x, wrt=0)
    assert "dx = np.empty_like(x)" in src and src.count("dx[i] = ") == 2
    assert src.count("dx[i] +=") == 2  # the second loop
    src = _src(nested, x, 3, wrt=0)
    assert GATHERED in src and "np.empty_like" not in src


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("n", [2, 3, 4, 9])
def test_three_point(n, jit):
    x = np.random.default_rng(n).uniform(-1, 1, n)
    check_grad(three_point, (x, 0.7), 0, jit=jit, shared=True)


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("n,steps", [(3, 1), (4, 3), (7, 4), (2, 2)])
def test_two_buffer_stencil(n, steps, jit):
    u0 = np.random.default_rng(n).uniform(0, 1, n)
    check_grad(heat_state, (u0, 0.2, steps), 0, jit=jit, shared=True)
    src = _src(heat_state, u0, 0.2, steps, wrt=0)
    # (``jit=True`` reads ``i`` unsigned: ``backend/unsigned.py``)
    assert GATHERED in src and ("dv[i] = 0.0" in src or "dv[np.uintp(i)] = 0.0" in src)


def test_sum_into_a_scalar_is_gathered():
    """The sum into ``dalpha`` goes to a buffer of partial sums, one per iteration of the
    main loop, summed after it (``lane_sum``); the tape is read through a view."""
    src = _src(heat_state, np.ones(5), 0.2, 2, wrt=(0, 1))
    reverse = src.split("for _ in range(nsteps - 1")[1]
    assert GATHERED in reverse and "du[i + 1] +=" not in src
    assert "_lanes_dalpha[i - _inner_lo] = " in reverse
    assert "dalpha += lane_sum(_lanes_dalpha, _inner_hi - _inner_lo)" in reverse
    assert "tape_from(_tape_t4_1, _tape_t4_1n_base + _lo)" in reverse
    src = _src(with_sum, np.ones(4), 0.5, wrt=(0, 1))  # its seed known first: fused
    assert GATHERED not in src and "are independent: each runs its adjoint" in src


@pytest.mark.parametrize("jit", [True, False])
def test_sum_into_a_scalar(jit):
    u0 = np.random.default_rng(1).uniform(0, 1, 6)
    check_grad(heat_state, (u0, 0.2, 3), (0, 1), jit=jit, shared=True)
    check_grad(with_sum, (u0, 0.5), (0, 1), jit=jit, shared=True)


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("n", [1, 2, 3])
def test_tape_reads_at_base_plus_index(n, jit):
    x = np.random.default_rng(n).uniform(-1, 1, n + 2)
    check_grad(taped, (x, n), 0, jit=jit, shared=True)
    src = _src(taped, x, n, wrt=0)
    assert GATHERED in src and "_base + j)" in src


@pytest.mark.parametrize("jit", [True, False])
def test_two_loops(jit):
    x = np.random.default_rng(3).uniform(-1, 1, 6)
    check_grad(reads_late, (x,), 0, jit=jit, shared=True)


# --- random stencils ---------------------------------------------------------------------

_FUNCS = ("math.sin", "math.cos", "math.tanh", "")


def _stencil_source(terms: list[tuple[int, int, str]], lo: int, hi_off: int) -> str:
    body = " + ".join(f"{f}(x[i + {a}]) * x[i + {b}]" if f else f"x[i + {a}] * x[i + {b}]"
                      for a, b, f in terms)
    return ("import math\n\n\ndef f(x):\n    s = 0.0\n"
            f"    for i in range({lo}, x.shape[0] - {hi_off}):\n"
            f"        s += {body}\n    return s\n")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(terms=st.lists(st.tuples(st.integers(-2, 2), st.integers(-2, 2),
                                st.sampled_from(_FUNCS)), min_size=1, max_size=3),
       n=st.integers(1, 9), data=st.data())
def test_random_stencils(tmp_path_factory, terms, n, data):
    """Loops reading ``x`` at offsets -2..2 (from a start that keeps indices in range, or
    wrapping below 0), every element of the gradient in both modes."""
    lo = data.draw(st.integers(0, 2))
    hi_off = max(0, max(max(a, b) for a, b, _ in terms))
    n = max(n, 2, hi_off + lo)  # x[i - 2] stays within [-n, n)
    name = f"stencil_{abs(hash((tuple(terms), lo, hi_off))) % 10**12}"
    f = function_from_source(tmp_path_factory.mktemp("gather"), name,
                             _stencil_source(terms, lo, hi_off))
    x = np.random.default_rng(n).uniform(-1, 1, n)
    for jit in (False, True):
        check_grad(f, (x,), 0, jit=jit, shared=True)
