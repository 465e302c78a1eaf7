"""Arrays remade in the adjoint instead of stored (``modes/policy.py``, ``ReadPolicy.remake``
and ``carried_at``, preconditions 13 to 19): a loop that carries an array from one trip to
the next (``y = y + ...`` at the end of the body) keeps it once per trip by reference, and
the arrays the first part of each trip makes afresh from it (the stages of a Runge-Kutta
step) are made again at the start of the trip's adjoint rather than taped element by
element.  Where a precondition fails they are taped as before.  Every case is checked
against central differences, compiled and not, its tapes balanced, and through ``hvp``.
"""

import numpy as np
import pytest
from gradcheck import check_grad, check_hvp
from test_pass_decisions import assert_tapes_balanced, sweeps

import jitgrad as jg

REMADE = "remade "
CARRIED = "once per trip, at its start"


def shift(x, y):
    """GradBench ode's right-hand side: z_0 = x_0, z_i = x_i * y_{i-1}."""
    n = x.shape[0]
    z = np.empty(n)
    z[0] = x[0]
    for i in range(1, n):
        z[i] = x[i] * y[i - 1]
    return z


def rk4(x, s):
    """GradBench ode: four stages per step, each from the step's ``y``."""
    n = x.shape[0]
    h = 2.0 / s
    y = np.zeros(n)
    for _ in range(s):
        k1 = shift(x, y)
        k2 = shift(x, y + h * k1 / 2.0)
        k3 = shift(x, y + h * k2 / 2.0)
        k4 = shift(x, y + h * k3)
        y = y + h * (k1 + 2.0 * k2 + 2.0 * k3 + k4) / 6.0
    return y[n - 1] + np.sum(y * y)


def damped(x, y):
    """A right-hand side with a product of the state's elements."""
    n = x.shape[0]
    z = np.empty(n)
    z[0] = x[0] - y[0]
    for i in range(1, n):
        z[i] = x[i] * y[i - 1] - 0.5 * y[i] * y[i]
    return z


def rk2(x, y0, s):
    """Midpoint rule with a helper call per stage, from a given start."""
    h = 1.0 / s
    y = y0 * 1.0
    for _ in range(s):
        k1 = damped(x, y)
        k2 = damped(x, y + 0.5 * h * k1)
        y = y + h * k2
    return np.sum(y * y)


def overwritten(x, y0, s):
    """Remaking is wrong here: the stage reads ``w``, which the trip overwrites later."""
    n = x.shape[0]
    h = 1.0 / s
    y = y0 * 1.0
    w = x * 1.0
    for t in range(s):
        k1 = damped(w, y)
        y1 = y + h * k1
        k2 = damped(w, y1)
        w[t % n] = w[t % n] * 0.5 + k2[0]
        y = y + 0.5 * h * (k1 + k2)
    return np.sum(y * y)


def costly(x, y0, s):
    """Remaking costs more than the one tape it saves: three divisions per element."""
    n = x.shape[0]
    h = 1.0 / s
    y = y0 * 1.0
    for _ in range(s):
        e = x / (y * y + 1.0) / (y * y + 2.0) / (x * x + 3.0)
        k = np.empty(n)
        for i in range(n):
            k[i] = e[i] * e[(i + 1) % n]
        y = y - h * k
    return np.sum(y)


def cheap(x, y0, s):
    """``costly`` with one division: remade."""
    n = x.shape[0]
    h = 1.0 / s
    y = y0 * 1.0
    for _ in range(s):
        e = x / (y * y + 1.0)
        k = np.empty(n)
        for i in range(n):
            k[i] = e[i] * e[(i + 1) % n]
        y = y - h * k
    return np.sum(y)


def carried_only(x, s):
    """Only the carried array: read element by element, rebound at the trip's end."""
    n = x.shape[0]
    y = x * 1.0
    out = 0.0
    for _ in range(s):
        for i in range(n):
            out += y[i] * y[(i + 1) % n]
        y = y * 0.5 + x * 0.1
    return out


def read_after_rebind(x, s):
    """Not carried: the trip reads the new ``y`` after rebinding it."""
    n = x.shape[0]
    y = x * 1.0
    out = 0.0
    for _ in range(s):
        for i in range(n):
            out += y[i] * y[(i + 1) % n]
        y = y * 0.5 + x * 0.1
        out += y[0] * y[1]
    return out


def squared_step(x, s):
    """The stage ``y1`` is remade, and the rebinding's adjoint reads it (``y1 * y1``)."""
    n = x.shape[0]
    y = x * 1.0
    out = 0.0
    for _ in range(s):
        k = np.empty(n)
        for i in range(n):
            k[i] = y[i] * y[(i + 1) % n]
        y1 = y + 0.1 * k
        for i in range(n):
            out += y1[i] * y1[i]
        y = y1 * y1 - 0.5
    return out + np.sum(y)


def reads_old_state(x, s):
    """Carried, and the rebinding's adjoint reads the trip's old ``y`` (``y * y``)."""
    n = x.shape[0]
    y = x * 1.0
    out = 0.0
    for _ in range(s):
        for i in range(n):
            out += y[i] * y[(i + 1) % n]
        y = y * y - 0.5 * x
    return out + np.sum(y)


def nested(x, s):
    """The step loop inside another loop that rebinds ``y`` after it."""
    n = x.shape[0]
    y = x * 1.0
    out = 0.0
    for _ in range(2):
        for _ in range(s):
            k = np.empty(n)
            for i in range(n):
                k[i] = y[i] * y[(i + 1) % n]
            y1 = y + 0.1 * k
            for i in range(n):
                out += y1[i] * y[i]
            y = y1 * 0.9 + 0.05 * x
        out += y[0] * y[1]
        y = y * 0.5 + x
    return out + np.sum(y * y)


def step_index(x, s):
    """The part rerun reads a scalar made in the trip from the step's index."""
    n = x.shape[0]
    y = x * 1.0
    out = 0.0
    for t in range(s):
        c = t * 0.1
        k = np.empty(n)
        for i in range(n):
            k[i] = y[i] * c + x[i]
        y1 = y + k
        for i in range(n):
            out += y1[i] * y1[i]
        y = 0.5 * y1
    return out


def _rng(k):
    return np.random.default_rng(k)


CASES = {
    "rk4": (rk4, (_rng(1).normal(size=6) * 0.5, 4), (0,)),
    "rk2": (rk2, (_rng(2).normal(size=5) * 0.5, _rng(3).normal(size=5) * 0.5, 4), (0, 1)),
    "overwritten": (overwritten, (_rng(4).normal(size=5) * 0.5,
                                  _rng(5).normal(size=5) * 0.5, 6), (0, 1)),
    "costly": (costly, (_rng(6).normal(size=5) * 0.3, _rng(7).normal(size=5) * 0.3, 3),
               (0, 1)),
    "cheap": (cheap, (_rng(6).normal(size=5) * 0.3, _rng(7).normal(size=5) * 0.3, 3),
              (0, 1)),
    "nested": (nested, (_rng(12).normal(size=5) * 0.4, 3), (0,)),
    "step_index": (step_index, (_rng(13).normal(size=5) * 0.4, 3), (0,)),
    "carried_only": (carried_only, (_rng(8).normal(size=5), 3), (0,)),
    "squared_step": (squared_step, (_rng(10).normal(size=5) * 0.5, 3), (0,)),
    "reads_old_state": (reads_old_state, (_rng(11).normal(size=5) * 0.5, 3), (0,)),
    "read_after_rebind": (read_after_rebind, (_rng(9).normal(size=5), 3), (0,)),
}


def _source(case):
    f, args, wrt = CASES[case]
    return jg.grad(f, wrt=wrt, jit=False).source(*args)


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("case", sorted(CASES))
def test_gradients(case, jit):
    f, args, wrt = CASES[case]
    check_grad(f, args, wrt=wrt, jit=jit)


@pytest.mark.parametrize("case", ["rk4", "rk2", "carried_only", "nested"])
def test_hvp(case):
    """Forward over the reverse code: the rerun is differentiated like the forward sweep."""
    f, args, wrt = CASES[case]
    check_hvp(f, args, wrt)


@pytest.mark.parametrize("case", ["rk4", "rk2"])
def test_auto_checkpoint(case, monkeypatch):
    """With automatic checkpointing on for any tape (``checkpoint_bytes`` 0), the gradient
    is the same (the loop tapes no element now: it is remade, not checkpointed)."""
    f, args, wrt = CASES[case]
    want = jg.differentiate(f, wrt=wrt, jit=False).value_and_grad(*args)[1]
    monkeypatch.setattr(jg.config, "checkpoint_bytes", 0)
    d = jg.differentiate(f, wrt=wrt, jit=False, auto_checkpoint=True)
    got = d.value_and_grad(*args)[1]
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("case", sorted(CASES))
def test_tapes_balanced(case):
    f, args, wrt = CASES[case]
    assert_tapes_balanced(sweeps(f, *args, wrt=wrt))


@pytest.mark.parametrize("case", ["rk4", "rk2", "squared_step", "cheap"])
def test_stages_remade(case):
    """The stages are made again from the step's state: nothing taped per element."""
    src = _source(case)
    assert REMADE in src and CARRIED in src, src
    assert "tape_put" not in src, src


@pytest.mark.parametrize("case", ["nested", "step_index"])
def test_remade_in_context(case):
    """Remade and carried; what is taped is outside the step loop (``nested``: ``y[0]``
    after it) or a scalar of the trip (``step_index``: ``c``), not the stage's elements."""
    src = _source(case)
    assert REMADE in src and CARRIED in src and "y1 is written later" not in src, src


def test_overwritten_input_not_remade():
    """``w`` changes after the stages read it: remaking them would read the new ``w``
    (``y`` is still kept once per trip)."""
    src = _source("overwritten")
    assert REMADE not in src and CARRIED in src, src


def test_costly_not_remade():
    """The cost rule (precondition 19), not another precondition, refuses it: ``cheap``,
    the same program with one division, is remade."""
    src = _source("costly")
    assert REMADE not in src and CARRIED not in src, src


@pytest.mark.parametrize("case", ["carried_only", "reads_old_state"])
def test_carried_kept_once_per_trip(case):
    src = _source(case)
    assert CARRIED in src and "tape_put" not in src, src


def test_read_after_rebind_not_carried():
    src = _source("read_after_rebind")
    assert CARRIED not in src, src


def test_state_popped_keeps_its_shape_class():
    """``y = t.pop()`` of a list only ever appended ``y`` has ``y``'s shape class (a pop is
    one of the values pushed), so the adjoint's elementwise lines stay fused; a list bound
    to anything but ``[]``, or appended other values, gives no class."""
    import ast

    from jitgrad.transpiler.analysis.shape_classes import ShapeClasses

    def cls(src):
        body = ast.parse(src).body
        return ShapeClasses(body, {"a": 1, "b": 1}, {"np": np}, ["a", "b"]).of("y")

    assert cls("t = []\ny = a * 2.0\nt.append(y)\ny = t.pop()") == "a"
    assert cls("t = [b]\ny = a * 2.0\nt.append(y)\ny = t.pop()") is None
    assert cls("t = []\ny = a * 2.0\nt.append(y)\nt.append(1.0)\ny = t.pop()") is None
    f, args, wrt = CASES["rk4"]
    src = jg.grad(f, wrt=wrt, jit=True).source(*args)
    assert "arrays kept: dk1, dk2, dk3, dk4" in src, src
