"""A plain scalar copy ``t = s`` is recomputed at cost 0 in the store-or-recompute decision
(``modes/recompute.py``'s ``_Again.copy``) where ``s`` still holds, at the adjoint, the
value it had at the copy: the copy reads ``s`` again (or ``s``'s own recomputation), and a
value made from copies is recomputed from the values already kept, instead of a tape each.
A copy of a name rebound before the adjoint reads it stays taped.  Every program: value
and every gradient element against central differences, compiled and not; the positive
cases push fewer values than with copies taped (``_Again.copy`` patched to refuse)."""

import re

import numpy as np
import pytest
from gradcheck import check_grad
from test_pass_decisions import code, lines_matching, pushed_values

import jitgrad as jg
from jitgrad.transpiler.modes import recompute


def rk4_small(p, y0, dt, nsteps):
    """RK4 of the Lorenz system on a 3-vector state (scalarised: element copies)."""
    y = y0.copy()
    total = 0.0
    for _ in range(nsteps):
        k1 = np.array([p[0] * (y[1] - y[0]), y[0] * (p[1] - y[2]) - y[1],
                       y[0] * y[1] - p[2] * y[2]])
        a = y + 0.5 * dt * k1
        k2 = np.array([p[0] * (a[1] - a[0]), a[0] * (p[1] - a[2]) - a[1],
                       a[0] * a[1] - p[2] * a[2]])
        b = y + 0.5 * dt * k2
        k3 = np.array([p[0] * (b[1] - b[0]), b[0] * (p[1] - b[2]) - b[1],
                       b[0] * b[1] - p[2] * b[2]])
        c = y + dt * k3
        k4 = np.array([p[0] * (c[1] - c[0]), c[0] * (p[1] - c[2]) - c[1],
                       c[0] * c[1] - p[2] * c[2]])
        y = y + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        total += np.sum(y * y)
    return total


def carried(p, n):
    """Scalars carried across iterations, read through copies of the trip's start values."""
    x = p[0]
    v = p[1]
    total = 0.0
    for _ in range(n):
        xo = x
        vo = v
        a = -p[2] * xo * vo
        x = xo + 0.1 * vo
        v = vo + 0.1 * a
        total += x * x
    return total


def rebound(p, n):
    """``t`` copies ``s``, then ``s`` is rebound before the adjoint reads ``t``."""
    s = p[0]
    total = 0.0
    for _ in range(n):
        t = s
        s = s * 1.1 + p[1]
        total += t * t * s
    return total


def rebound_linear(p, n):
    """``s`` is rebound after the copy's reader by an update whose adjoint never restores
    ``s``: at that reader's adjoint ``s`` holds a later value, so ``t`` is taped."""
    s = p[0]
    total = 0.0
    for _ in range(n):
        t = s
        u = t * p[1]
        s = s + p[2]
        total += u * u
    return total


def branchy(x, n):
    """Copies of a value nothing rebinds, in a branch and in an inner loop."""
    w = x[2] * 2.0
    s = x[0]
    total = 0.0
    for i in range(n):
        s = np.sin(s) + x[i % 3]
        if s > 0.5:
            c = w
            q = s * x[1]
            e = q
            total += c * c * s + e * np.sin(e)
        else:
            for j in range(2):
                d = w
                total += d * np.cos(s + j)
    return total


P3 = np.array([0.7, 1.3, 0.4])
CASES = {  # name: (function, arguments, wrt, fewer pushes than with copies taped)
    "rk4_small": (rk4_small, (np.array([10.0, 28.0, 8.0 / 3.0]), np.array([1.0, 1.2, 0.9]),
                              0.01, 6), (0, 1), True),
    "carried": (carried, (np.array([0.3, 0.2, 0.5]), 5), (0,), True),
    "rebound": (rebound, (np.array([0.3, 0.2]), 4), (0,), False),
    "rebound_linear": (rebound_linear, (P3, 4), (0,), False),
    "branchy": (branchy, (np.array([0.3, 0.7, 0.2]), 6), (0,), True),
}


def taped_copies(monkeypatch, f, args, wrt) -> str:
    """The generated code with every plain copy taped (the decision before copies were
    recomputed): ``_Again.copy`` refuses."""
    def refuse(self, v):
        self.why(f"{self.n} is not an operation jitgrad redoes")

    with monkeypatch.context() as m:
        m.setattr(recompute._Again, "copy", refuse)
        return jg.differentiate(f, wrt=wrt, jit=False).source(*args)


def source(f, args, wrt) -> str:
    return jg.differentiate(f, wrt=wrt, jit=False).source(*args)


@pytest.mark.parametrize("name", list(CASES))
def test_gradient(name, jit):
    f, args, wrt, _ = CASES[name]
    check_grad(f, args, wrt=wrt, jit=jit, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", [n for n, c in CASES.items() if c[3]])
def test_copies_are_not_taped(name, monkeypatch):
    f, args, wrt, _ = CASES[name]
    new, old = source(f, args, wrt), taped_copies(monkeypatch, f, args, wrt)
    assert len(pushed_values(new)) < len(pushed_values(old))
    assert "not an operation jitgrad redoes" not in new


def test_rk4_reads_the_kept_state_again():
    """The stage's copies of ``y`` read the restored ``y_0``.. in the adjoint, and
    ``y[1] - y[0]`` is recomputed from them: no value pushed is a copy of the state."""
    f, args, wrt, _ = CASES["rk4_small"]
    src = source(f, args, wrt)
    copies = {v for v, _ in re.findall(r"^\s*(\w+) = (y_[012])$", code(src), re.M)}
    assert copies, "the scalarised stages read the state through copies"
    assert not copies & set(pushed_values(src))
    assert lines_matching(src, r"^\s*_t\d+ = y_1 - y_0$"), "k1's y[1] - y[0], recomputed"
    assert {"y_0", "y_1", "y_2"} <= set(pushed_values(src)), "the state, kept once per trip"


@pytest.mark.parametrize("name,copy", [("rebound", "t"), ("rebound_linear", "t")])
def test_copy_of_a_rebound_name_stays_taped(name, copy):
    f, args, wrt, _ = CASES[name]
    src = source(f, args, wrt)
    assert copy in pushed_values(src)
    assert re.search(rf"# stored {copy}: s is rebound later", src)


def test_branch_and_inner_loop_copies_read_the_invariant_again():
    f, args, wrt, _ = CASES["branchy"]
    src = source(f, args, wrt)
    assert not {"c", "d"} & set(pushed_values(src)), "copies of w, never rebound"
    assert "e" in pushed_values(src), "a copy of s * x[1], s rebound by the next trip"
