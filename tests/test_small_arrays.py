"""Small fixed-size arrays made in loop bodies are kept as one scalar per element.

``front/small_arrays.py`` (the ``small_arrays`` pass) turns ``np.array([...])`` of scalars,
``np.zeros(3)`` filled element by element, and their elementwise arithmetic into scalar code,
so the gradient allocates, tapes and zeroes no array per trip (issue 34, item 2: an RK4 step
with a state vector).  Where its preconditions fail (the array returned, aliased, of a size
only known at run time) the array is differentiated as before.  Each case checks the value,
every gradient element against central differences, ``jvp`` and ``hvp``, in both jit modes.
"""

from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg


def oscillator_rk4(k, c, y0, dt, n):
    """A damped oscillator y'' = -k y - c y', RK4 on the state vector (y, y')."""
    y = y0.copy()
    e = 0.0
    for _ in range(n):
        k1 = np.array([y[1], -k * y[0] - c * y[1]])
        a = y + 0.5 * dt * k1
        k2 = np.array([a[1], -k * a[0] - c * a[1]])
        b = y + 0.5 * dt * k2
        k3 = np.array([b[1], -k * b[0] - c * b[1]])
        q = y + dt * k3
        k4 = np.array([q[1], -k * q[0] - c * q[1]])
        y = y + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        e += y[0] * y[0] + 0.5 * y[1] * y[1]
    return e


def predator_prey(p, y0, dt, n):
    """Lotka-Volterra, explicit midpoint steps; the state made with np.array each step."""
    y = np.array([y0[0], y0[1]])
    s = 0.0
    for _ in range(n):
        f = np.array([p[0] * y[0] - p[1] * y[0] * y[1], p[2] * y[0] * y[1] - p[3] * y[1]])
        m = y + 0.5 * dt * f
        g = np.array([p[0] * m[0] - p[1] * m[0] * m[1], p[2] * m[0] * m[1] - p[3] * m[1]])
        y = y + dt * g
        s += np.sum(np.sqrt(y))
    return s


def pair_literal(pos):
    """A pair loop whose difference vector is a literal of three scalars."""
    e = 0.0
    for i in range(pos.shape[0]):
        for j in range(i + 1, pos.shape[0]):
            d = np.array([pos[i, 0] - pos[j, 0], pos[i, 1] - pos[j, 1], pos[i, 2] - pos[j, 2]])
            e += 1.0 / np.sqrt(np.sum(d * d) + 0.1)
    return e


def pair_rows(pos):
    """``d = pos[i] - pos[j]``: its size is the rows' (known at run time only): kept."""
    e = 0.0
    for i in range(pos.shape[0]):
        for j in range(i + 1, pos.shape[0]):
            d = pos[i] - pos[j]
            e += 1.0 / np.sqrt(np.sum(d * d) + 0.1)
    return e


def zeros_filled(x):
    """``np.zeros(3)`` made in a loop body and filled at constant indices."""
    s = 0.0
    for i in range(x.shape[0] - 1):
        f = np.zeros(3)
        f[0] = x[i] * x[i + 1]
        f[1] = np.sin(x[i])
        f[2] += x[i + 1]
        g = f * f - 0.5 * f
        s += g[0] + g[1] * g[2]
    return s


def zeros_filled_by_loop(x):
    """``np.zeros(3)`` filled by a loop over ``range(3)``: the loop is unrolled."""
    s = 0.0
    for i in range(x.shape[0] - 2):
        f = np.zeros(3)
        for k in range(3):
            f[k] = x[i + k] * x[i]
        s += np.sum(f * f)
    return s


def returned(x):
    """The small array is the result: kept."""
    k = np.array([x[0] * x[1], np.cos(x[1])])
    return k * 2.0


def aliased(x):
    """Written through another name: kept."""
    s = 0.0
    for i in range(x.shape[0]):
        f = np.zeros(2)
        w = f
        w[0] = x[i]
        w[1] = x[i] * x[i]
        s += np.sum(f * f)
    return s


def sized_at_run_time(x, m):
    """``np.zeros(m)``: its size is an argument's: kept."""
    s = 0.0
    for i in range(x.shape[0]):
        f = np.zeros(m)
        f[0] = x[i]
        f[1] = x[i] * 2.0
        s += np.sum(f * f)
    return s


def _args(name):
    rng = np.random.default_rng(3)
    return {
        "oscillator_rk4": (1.7, 0.3, np.array([0.8, -0.4]), 0.05, 12),
        "predator_prey": (np.array([1.1, 0.4, 0.3, 0.9]), np.array([1.3, 0.7]), 0.05, 10),
        "pair_literal": (rng.normal(size=(5, 3)),),
        "pair_rows": (rng.normal(size=(5, 3)),),
        "zeros_filled": (rng.normal(size=6),),
        "zeros_filled_by_loop": (rng.normal(size=6),),
        "aliased": (rng.normal(size=4),),
        "sized_at_run_time": (rng.normal(size=4), 3),
    }[name]


#: name -> (function, wrt, kept as scalars: the names whose first element's name is looked for)
CASES = {
    "oscillator_rk4": (oscillator_rk4, (0, 1, 2), ["k1_0", "y_0"]),
    "predator_prey": (predator_prey, (0, 1), ["f_0", "y_0"]),
    "pair_literal": (pair_literal, (0,), ["d_0"]),
    "pair_rows": (pair_rows, (0,), []),
    "zeros_filled": (zeros_filled, (0,), ["f_0", "g_0"]),
    "zeros_filled_by_loop": (zeros_filled_by_loop, (0,), ["f_0", "f_2"]),
    "aliased": (aliased, (0,), []),
    "sized_at_run_time": (sized_at_run_time, (0,), []),
}


def _perturbed(args, a, idx, h):
    out = list(args)
    if np.ndim(args[a]) == 0:
        out[a] = args[a] + h
    else:
        x = np.array(args[a], dtype=float)
        x[idx] += h
        out[a] = x
    return out


def _fd(f, args, a, h=1e-6):
    """Central differences of ``f`` in every element of argument ``a``."""
    shape = np.shape(args[a])
    g = np.zeros(shape)
    for idx in np.ndindex(*shape) if shape else [()]:
        g[idx] = (f(*_perturbed(args, a, idx, h)) - f(*_perturbed(args, a, idx, -h))) / (2 * h)
    return g


def _tangents(args, wrt, seed=5):
    rng = np.random.default_rng(seed)
    return tuple(rng.normal(size=np.shape(args[a])) if np.ndim(args[a]) else float(rng.normal())
                 for a in wrt)


def _moved(args, wrt, tans, h):
    out = list(args)
    for a, t in zip(wrt, tans, strict=True):
        out[a] = args[a] + h * t
    return out


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("case", sorted(CASES))
def test_value_gradient_jvp_hvp(case, jit):
    f, wrt, _ = CASES[case]
    args = _args(case)
    kept = [np.copy(a) for a in args]
    value, grads = jg.value_and_grad(f, wrt=wrt, jit=jit)(*args)
    assert value == pytest.approx(f(*args), rel=1e-12)
    for a, g in zip(wrt, grads, strict=True):
        np.testing.assert_allclose(g, _fd(f, args, a), rtol=1e-6, atol=1e-8)
    tans = _tangents(args, wrt)
    out, tan = jg.jvp(f, args, tans, wrt=wrt, jit=jit)
    assert out == pytest.approx(f(*args), rel=1e-12)
    h = 1e-6
    fd = (f(*_moved(args, wrt, tans, h)) - f(*_moved(args, wrt, tans, -h))) / (2 * h)
    assert tan == pytest.approx(fd, rel=1e-6, abs=1e-8)
    hv = jg.hvp(f, args, tans, wrt=wrt, jit=jit)
    gf = jg.grad(f, wrt=wrt, jit=jit)
    up, down = gf(*_moved(args, wrt, tans, 1e-5)), gf(*_moved(args, wrt, tans, -1e-5))
    for a, u, d in zip(hv, up, down, strict=True):
        np.testing.assert_allclose(a, (np.asarray(u) - np.asarray(d)) / 2e-5, rtol=1e-5,
                                   atol=1e-6)
    for a, b in zip(args, kept, strict=True):
        np.testing.assert_array_equal(a, b)


def _loop_source(case):
    """The lines of the generated gradient's loops (forward and adjoint sweeps)."""
    f, wrt, _ = CASES[case]
    lines = jg.differentiate(f, wrt=wrt, jit=False).source(*_args(case)).splitlines()
    out, depth = [], None
    for line in lines:
        ind = len(line) - len(line.lstrip())
        if depth is not None and ind <= depth:
            depth = None
        if depth is None and line.lstrip().startswith("for "):
            depth = ind
        elif depth is not None and not line.lstrip().startswith("#"):
            out.append(line)
    return "\n".join(out)


@pytest.mark.parametrize("case", sorted(c for c in CASES if CASES[c][2]))
def test_kept_as_scalars(case):
    src = _loop_source(case)
    assert "np.array(" not in src and "np.zeros(" not in src
    assert "zeros_like" not in src and ".append(" not in src
    for n in CASES[case][2]:
        assert n in src


@pytest.mark.parametrize("case", sorted(c for c in CASES if not CASES[c][2]))
def test_kept_as_arrays(case):
    src = _loop_source(case)
    assert not any(f"{v}_0 " in src for v in ("d", "f", "k"))


@pytest.mark.parametrize("jit", [True, False])
def test_returned_small_array_vjp(jit):
    x = np.array([0.7, -1.2])
    out, pullback = jg.vjp(returned, x, jit=jit)
    np.testing.assert_allclose(out, returned(x), rtol=1e-12)
    dy = np.array([0.3, -2.0])
    (g,) = pullback(dy) if isinstance(pullback(dy), tuple) else (pullback(dy),)
    fd = _fd(lambda z: float(np.dot(returned(z), dy)), (x,), 0)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("jit", [True, False])
def test_an_entry_of_another_size_is_refused_at_run_time(jit):
    """The state enters with 3 elements where the steps make it 2: a clear ValueError."""
    args = (1.7, 0.3, np.array([0.8, -0.4, 0.1]), 0.05, 3)
    with pytest.raises(ValueError, match="'y'.*must have 2 elements"):
        jg.grad(oscillator_rk4, wrt=(0, 1), jit=jit)(*args)


def divides_by_a_zero_fill(x):
    s = 0.0
    for i in range(x.shape[0]):
        z = np.zeros(2)
        z[1] = x[i]
        h = np.array([1.0, -1.0]) / z
        s += h[0] * 0.0 + h[1]
    return s


@pytest.mark.parametrize("jit", [True, False])
def test_elements_divide_as_the_arrays_did(jit):
    """1.0 / 0.0 of elements is inf (then nan here) as the arrays gave, never an exception."""
    x = np.array([0.5, -2.0])
    with np.errstate(divide="ignore", invalid="ignore"):
        value, _ = jg.value_and_grad(divides_by_a_zero_fill, jit=jit)(x)
        np.testing.assert_equal(value, divides_by_a_zero_fill(x))
    assert "h_0" in jg.differentiate(divides_by_a_zero_fill, jit=False).source(x)
