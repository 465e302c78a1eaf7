"""Reversed loops run ascending where their iterations are independent
(``backend/ascending.py``).

Each workload's adjoint has a loop over a descending range: a polynomial fit whose
inner loop pops a taped power, one starting at 2 whose names collide with the generated
ones, rows of a matrix.  Each checks the value and every gradient element against
central differences in both ``jit`` modes, and whether the loop runs ascending in the
generated source: never where it sums (``dw``, ``dc``).
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from gradcheck import check_grad

import jitgrad as jg
from benchmarks.gradbench.simple import llsq  # the adjoint reads the taped power ``mul``

JITS = [True, False]
NOTE = "are independent: run ascending"


def collide(x, c):
    """From index 2, with the user's ``_n``, ``_t``, ``dm`` and ``_tape_m_1``: names the
    generated code makes too (a length, a temporary, the adjoint of ``m``, the tape)."""
    _n = x.shape[0]
    m = 1.0
    dm = 0.5
    _t = 0.0
    _tape_m_1 = 0.0
    for j in range(2, _n):
        _t += math.sin(x[j]) * m * c
        _tape_m_1 = m
        m = m * c + dm
        dm = 0.5 * _tape_m_1
    return _t


def rows(X, w):
    """Rows of a matrix, each a power series in ``w``: the inner adjoint writes ``dX[i, j]``."""
    s = 0.0
    for i in range(X.shape[0]):
        p = 1.0
        r = 0.0
        for j in range(X.shape[1]):
            r += X[i, j] * p
            p *= w
        s += r * r
    return s


def pairs(x, c):
    """Two neighbours per trip: the adjoint adds into ``dx[j]`` and ``dx[j + 1]``."""
    m = 1.0
    s = 0.0
    for j in range(x.shape[0] - 1):
        s += x[j] * x[j + 1] * m
        m *= c
    return s


def _args(name):
    rng = np.random.default_rng(3)
    return {"llsq": (rng.random(6), 16),
            "collide": (rng.random(7), 0.7),
            "rows": (rng.random((4, 5)), 0.8),
            "pairs": (rng.random(6), 0.9)}[name]


FLIPPED = {"llsq": (llsq, 0), "collide": (collide, 0), "rows": (rows, 0)}
KEPT = {"sums into dw": (rows, (0, 1)), "sums into dc": (collide, (0, 1))}
#: not this step's: two iterations add into ``dx[j + 1]``, and the loop is gathered
OTHERS = {"pairs": (pairs, 0)}


@pytest.mark.parametrize("jit", JITS)
@pytest.mark.parametrize("name", sorted(FLIPPED) + sorted(KEPT) + sorted(OTHERS))
def test_values_and_gradients(name, jit):
    f, wrt = {**FLIPPED, **KEPT, **OTHERS}[name]
    check_grad(f, _args(f.__name__), wrt=wrt, jit=jit)


@pytest.mark.parametrize("name", sorted(FLIPPED))
def test_independent_reversed_loop_runs_ascending(name):
    """The reversed inner loop runs ascending and reads its tape at the iteration's slot;
    the same gradient, bit for bit, in both modes."""
    f, wrt = FLIPPED[name]
    args = _args(f.__name__)
    src = jg.differentiate(f, wrt=wrt).source(*args)
    assert NOTE in src
    assert "range(" in src and ", -1, -1)" not in src.split(NOTE)[1].split("\n")[1]
    on = jg.grad(f, wrt=wrt, jit=True)(*args)
    off = jg.grad(f, wrt=wrt, jit=False)(*args)
    np.testing.assert_array_equal(on, off)


def test_slot_of_a_loop_from_two():
    """The loop from 2 reads its tape at ``cursor + (j - 2)``."""
    src = jg.differentiate(collide, wrt=0).source(*_args("collide"))
    assert "for j in range(2, _n" in src.split(NOTE)[1]
    assert "+ (j - 2))" in src


@pytest.mark.parametrize("name", sorted(KEPT))
def test_order_kept_where_it_changes_a_value(name):
    """A sum (``dw``, ``dc``: its rounding depends on the order): the loop stays
    descending."""
    f, wrt = KEPT[name]
    src = jg.differentiate(f, wrt=wrt).source(*_args(f.__name__))
    assert NOTE not in src
    assert re.search(r"for j in range\(.*, -1\):", src)


def test_tape_accessors_compiled_read_the_slot():
    """Compiled, ``tape_get`` and ``tape_put`` index unsigned (a cursor is never negative):
    the elements are those Python reads and writes."""
    from numba import njit

    from jitgrad.kernels.helpers import tape_get, tape_put

    def fill_and_read(n, base):
        buf = np.zeros(base + n)
        for j in range(n):
            tape_put(buf, base + j, j * 0.5)
        out = np.zeros(n)
        for j in range(n):
            out[j] = tape_get(buf, base + j)
        return out

    np.testing.assert_array_equal(njit(fill_and_read)(5, 3), fill_and_read(5, 3))
    np.testing.assert_array_equal(fill_and_read(5, 3), np.arange(5) * 0.5)


def test_loops_carrying_a_value_are_refused_before_the_clone(monkeypatch):
    """``_carries`` (a reversed loop reads a name an earlier iteration bound, not a cursor
    moved by one) answers before the clone only what the full check would: every such
    loop of the corpora and of these workloads is refused by slotting and
    ``independent`` too; the others are still checked, and some run ascending."""
    import corpus_loops
    import corpus_soundness

    from jitgrad.transpiler.analysis.kinds import of_value
    from jitgrad.transpiler.backend import ascending
    from jitgrad.transpiler.backend.lower import VARIANTS
    from jitgrad.transpiler.pipeline import prepare, transform

    carries, flipped = ascending._carries, ascending._flipped
    said: dict[int, bool] = {}
    seen: list[tuple[bool, bool]] = []  # (carries, flipped by the full check)

    def asked(loop):  # the full check runs on every loop
        said[id(loop)] = carries(loop)
        return False

    def full_check(loop, names, env):
        out = flipped(loop, names, env)
        seen.append((said.pop(id(loop)), out is not None))
        return out

    monkeypatch.setattr(ascending, "_carries", asked)
    monkeypatch.setattr(ascending, "_flipped", full_check)
    ours = [(f, lambda f=f: _args(f.__name__), wrt)
            for f, wrt in {**FLIPPED, **KEPT, **OTHERS}.values()]
    for f, make, wrt in corpus_loops.CASES + corpus_soundness.CASES + ours:
        params = f.__code__.co_varnames[:f.__code__.co_argcount]
        kinds = {p: of_value(a) for p, a in zip(params, make(), strict=True)}
        names = [params[i] for i in ((wrt,) if isinstance(wrt, int) else wrt)]
        try:
            u = transform(prepare(f), names, kinds)
        except Exception:  # refused: nothing to lower
            continue
        for v in VARIANTS:
            u.sources[v]  # noqa: B018 (lowered when read)
    assert not [s for s in seen if s == (True, True)]
    assert sum(c for c, _ in seen) > 20 and sum(k for _, k in seen) >= 3, seen
