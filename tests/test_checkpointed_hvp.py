"""Forward-over-reverse (``jg.hvp``, ``jg.hessian``) through ``jg.checkpointed`` loops on the
binomial schedule whose state holds arrays: the snapshot slots of the generated gradient
code (``array_slots`` + ``store_slot``/``load_slot``, ``ref_slots``) carry tangents.

Every case is checked against central differences of the reverse-mode gradient (every
element) and against the same loop over a plain ``range`` (round-off), for snapshots 1,
2, 3 and T, ``jit=False`` and ``jit=True``."""

from __future__ import annotations

import numpy as np
import pytest
from test_checkpointed import (
    U0,
    _changed_after,
    _counts_down,
    _rebinds_array,
    _rebound_in_a_branch,
    _trajectory,
    _used_after,
    _view_written,
    _writes_its_argument,
    heat_buffers,
    heat_buffers_plain,
    heat_inplace,
    heat_inplace_plain,
)

import jitgrad as jg


def _rate(u, p):
    """The Lorenz vector field (a helper: inlined into the loop)."""
    du = np.zeros(3)
    du[0] = p[0] * (u[1] - u[0])
    du[1] = u[0] * (p[1] - u[2]) - u[1]
    du[2] = u[0] * u[1] - p[2] * u[2]
    return du


def _rk4(u, p, h):
    """One RK4 step of the state array ``u`` (a helper: inlined into the loop)."""
    a = _rate(u, p)
    b = _rate(u + 0.5 * h * a, p)
    c = _rate(u + 0.5 * h * b, p)
    d = _rate(u + h * c, p)
    return u + h / 6.0 * (a + 2.0 * b + 2.0 * c + d)


def lorenz_rk4_array(p, T, k):
    """RK4 on the state array ``u``, rebound each step (its snapshots are references)."""
    u = np.ones(3)
    for t in jg.checkpointed(range(T), snapshots=k):
        u = _rk4(u, p, 0.004)
    return u[0] * 0.1 + u[1] * 0.2 + u[2] * u[2] * 0.3


def lorenz_rk4_array_plain(p, T, k):
    u = np.ones(3)
    for t in range(T):
        u = _rk4(u, p, 0.004)
    return u[0] * 0.1 + u[1] * 0.2 + u[2] * u[2] * 0.3


def lorenz_rk4_inplace(p, T, k):
    """The same with the state written in place (its snapshots are element copies)."""
    u = np.ones(3)
    for t in jg.checkpointed(range(T), snapshots=k):
        u[:] = _rk4(u, p, 0.004)
    return u[0] * 0.1 + u[1] * 0.2 + u[2] * u[2] * 0.3


P = np.array([10.0, 28.0, 8.0 / 3.0])
VP = np.array([0.3, -0.2, 0.5])
T = 11

#: (checkpointed, plain, args without T and k, wrt, direction)
CASES = {
    "lorenz_rk4_array": (lorenz_rk4_array, lorenz_rk4_array_plain, (P,), 0, VP),
    "lorenz_rk4_inplace": (lorenz_rk4_inplace, lorenz_rk4_array_plain, (P,), 0, VP),
    "heat_buffers": (heat_buffers, heat_buffers_plain, (U0, 0.2), (0, 1),
                     (np.linspace(-1.0, 1.0, U0.size), 0.7)),
    "heat_inplace": (heat_inplace, heat_inplace_plain, (U0, 0.2), (0, 1),
                     (np.cos(np.arange(U0.size)), -0.4)),
}


def _tuple(x):
    return x if isinstance(x, tuple) else (x,)


def fd_of_gradient(f, args, wrt, v, eps=1e-6):
    """Central differences of the (reverse-mode, jit=False) gradient along ``v``."""
    g = jg.grad(f, wrt=wrt, jit=False)
    hi, lo = list(args), list(args)
    for w, d in zip(_tuple(wrt), _tuple(v), strict=True):
        hi[w] = args[w] + eps * d
        lo[w] = args[w] - eps * d
    return [(np.asarray(a) - np.asarray(b)) / (2 * eps)
            for a, b in zip(_tuple(g(*hi)), _tuple(g(*lo)), strict=True)]


#: compiled (jit=True) too: one compile of the tangent code each (RK4: about two minutes,
#: four copies of the step with their tangents)
JIT = ("lorenz_rk4_array", "heat_buffers", "heat_inplace")


@pytest.mark.parametrize("name,jit", [(n, False) for n in sorted(CASES)] + [
    pytest.param(n, True, marks=[pytest.mark.slow] if n.startswith("lorenz") else [])
    for n in JIT])
def test_hvp_with_array_state(name, jit):
    ck, plain, args, wrt, v = CASES[name]
    before = [a.copy() for a in args if isinstance(a, np.ndarray)]
    for k in (1, 2, 3, T):
        full = (*args, T, k)
        hv = _tuple(jg.hvp(ck, full, v, wrt=wrt, jit=jit))
        for h, fd in zip(hv, fd_of_gradient(ck, full, wrt, v), strict=True):
            np.testing.assert_allclose(h, fd, rtol=1e-6, atol=1e-8, err_msg=f"k={k}")
        if not jit:  # (the compiled code is checked against differences: one compile less)
            for h, q in zip(hv, _tuple(jg.hvp(plain, full, v, wrt=wrt, jit=False)),
                            strict=True):
                np.testing.assert_allclose(h, q, rtol=1e-11, atol=1e-13, err_msg=f"k={k}")
    for a, b in zip([a for a in args if isinstance(a, np.ndarray)], before, strict=True):
        np.testing.assert_array_equal(a, b)  # inputs unchanged


def test_hessian_with_array_state():
    """The full Hessian (one hvp per element), rebound and in-place state."""
    for ck in (lorenz_rk4_array, lorenz_rk4_inplace):
        np.testing.assert_allclose(jg.hessian(ck, jit=False)(P, T, 2),
                                   jg.hessian(lorenz_rk4_array_plain, jit=False)(P, T, 2),
                                   rtol=1e-11, atol=1e-13)


def test_the_gradient_code_keeps_tangent_slots():
    """The generated tangent code holds a tangent slot next to each slot."""
    from jitgrad.forward_api import _diff
    from jitgrad.forward_mode import _second

    d = _diff(heat_buffers, (0, 1), False)
    src = _second(d, (U0, 0.2, T, 3)).source(U0, 0.2, T, 3, 1.0, mode="jvp")
    for line in ("_refs_u_dot = ref_slots(u_dot, _slots)", "store_slot(_snaps_u_dot, _top, u_dot)",
                 "load_slot(u_dot, _snaps_u_dot, _top)", "_refs_v_dot[_top] = v_dot"):
        assert line in src, line


@pytest.mark.parametrize("f,jit", [(f, False) for f in (
    _trajectory, _changed_after, _view_written, _rebinds_array, _counts_down,
    _writes_its_argument, _used_after, _rebound_in_a_branch)] + [
    (_view_written, True), (_rebound_in_a_branch, True)])
def test_hvp_of_every_state_shape(f, jit):
    """Each way an array enters the state (see test_checkpointed.test_state_shapes)."""
    x, v = np.array([0.7, 1.3, 0.4]), np.array([0.3, -0.5, 0.8])
    hv = jg.hvp(f, (x, 9), v, jit=jit)
    np.testing.assert_allclose(hv, fd_of_gradient(f, (x, 9), 0, v)[0], rtol=1e-6, atol=1e-8)
    assert np.array_equal(x, [0.7, 1.3, 0.4])
