"""GradBench's particle and saddle (evals/particle, evals/saddle): gradient descent whose
objective itself runs gradient descent or an ODE driven by a gradient -- nested
differentiation.  Written with jitgrad the way GradBench's tools write them (``rr``: reverse
over reverse): the inner gradient is a ``jg.grad`` called inside the function the outer
``jg.grad`` differentiates; jitgrad inlines the inner gradient's generated code and
differentiates it again.  The benchmark times the outer gradient (``d r1_cost / d x`` of
saddle's argmin, ``d x0(t_f)^2 / d w`` of particle's); :func:`argmin` runs the whole eval.
"""

from __future__ import annotations

import math

import numba
import numpy as np

import jitgrad as jg


@numba.njit
def saddle_f(p1, p2):
    """f(x, y) = (x1^2 + y1^2) - (x2^2 + y2^2) of evals/saddle."""
    return (p1[0] * p1[0] + p1[1] * p1[1]) - (p2[0] * p2[0] + p2[1] * p2[1])


saddle_inner_grad = jg.grad(saddle_f, wrt=1)


def saddle_r1_cost(p1, start):
    """max_y f(p1, y) by plain gradient ascent from start (the inner optimisation)."""
    p2 = start.copy()
    eta = 1e-5
    for _ in range(1000):
        g = saddle_inner_grad(p1, p2)
        p2 = p2 + eta * g
        eta = eta * 2.0 if eta < 0.1 else eta
    return saddle_f(p1, p2)


def potential(x0, x1, w):
    """Electric potential at (x0, x1) of unit charges at (10, 10 - w) and (10, 0)."""
    d1 = math.sqrt((x0 - 10.0) ** 2 + (x1 - (10.0 - w)) ** 2)
    d2 = math.sqrt((x0 - 10.0) ** 2 + x1 ** 2)
    return 1.0 / d1 + 1.0 / d2


particle_force = jg.grad(potential, wrt=(0, 1))


def naive_euler(w):
    """x0(t_f)^2 where the particle, pushed by -grad potential, crosses the x axis."""
    x0, x1 = 0.0, 8.0
    v0, v1 = 0.75, 0.0
    dt = 0.1
    while True:
        g0, g1 = particle_force(x0, x1, w)
        n0 = x0 + dt * v0
        n1 = x1 + dt * v1
        if n1 <= 0.0:
            break
        x0, x1 = n0, n1
        v0 = v0 - dt * g0
        v1 = v1 - dt * g1
    t_f = -x1 / v1
    return (x0 + t_f * v0) ** 2


def saddle_inputs(start: tuple[float, float] = (1.0, 1.0)) -> tuple:
    """(x, start): the outer point and the inner ascent's start, both GradBench's start."""
    s = np.array(start, dtype=np.float64)
    return s.copy(), s


def particle_inputs(w: float = 0.0) -> tuple:
    """(w,): the control parameter the outer gradient is taken at."""
    return (float(w),)


def argmin(name: str, jit: bool = True, steps: int = 20) -> np.ndarray:
    """The eval's output by plain gradient descent on the outer objective: saddle's x then y
    (y the inner argmax at x), particle's final w."""
    if name == "particle":
        dw = jg.grad(naive_euler, wrt=0, jit=jit)
        w = 0.0
        for _ in range(steps):
            w = w - 0.01 * dw(w)
        return np.array([w])
    x, start = saddle_inputs()
    dx = jg.grad(saddle_r1_cost, wrt=0, jit=jit)
    for _ in range(steps):
        x = x - 0.1 * dx(x, start)
    y = start.copy()
    eta = 1e-5
    for _ in range(1000):
        y = y + eta * saddle_inner_grad(x, y)
        eta = eta * 2.0 if eta < 0.1 else eta
    return np.concatenate([x, y])


def attempt(name: str, jit: bool = False) -> str:
    """Build and call the outer (reverse) gradient of eval ``name``; the
    :class:`jitgrad.TransformError` message, or ``"ok"`` once nesting works."""
    try:
        if name == "saddle":
            start = np.array([1.0, 1.0])
            jg.grad(saddle_r1_cost, wrt=0, jit=jit)(start.copy(), start)
        else:
            jg.grad(naive_euler, wrt=0, jit=jit)(0.0)
    except jg.TransformError as exc:
        return str(exc)
    return "ok"
