"""What a call of a jitgrad transform redoes: the source analyses run once per prepared
unit (redone when a rule is registered), not on every call.

``vjp``, ``jacfwd``, ``jacrev`` and ``hessian`` ask whether the function draws from a
random generator (then they replay its state); the answer walks the syntax trees of the
function and its inlined helpers, which cost GradBench's ht Jacobian 19 of its 24 ms
per call before it was kept with the prepared unit.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import numeric_grad

import jitgrad as jg
from jitgrad import api
from jitgrad.rules import primitives


def _wobble(v):
    return np.sin(v) * v


def waves(x):
    return _wobble(x) + 0.5 * x * x


def spring(x, k):
    e = 0.0
    for i in range(x.shape[0] - 1):
        d = x[i + 1] - x[i] - 1.0
        e += k * d * d
    return e + np.sum(_wobble(x))


X = np.array([0.3, -1.2, 0.8, 2.1])


def _fd_jacobian(f, x):
    """Central-difference Jacobian of vector ``f`` at ``x``, shape ``f(x).shape + x.shape``."""
    rows = [numeric_grad(lambda a, o=o: f(a)[o], (x,), 0) for o in range(f(x).size)]
    return np.stack(rows)


def _jacfwd(jit):
    return jg.jacfwd(waves, jit=jit)(X), waves(X), _fd_jacobian(waves, X)


def _jacrev(jit):
    return jg.jacrev(waves, jit=jit)(X), waves(X), _fd_jacobian(waves, X)


def _spring_hessian(x, k):
    """``spring``'s Hessian in closed form: 2k times the chain's Laplacian, plus the
    second derivative of ``sin(x) * x`` on the diagonal."""
    n = x.shape[0]
    lap = 2.0 * np.eye(n) - np.eye(n, k=1) - np.eye(n, k=-1)
    lap[0, 0] = lap[-1, -1] = 1.0
    return 2.0 * k * lap + np.diag(2.0 * np.cos(x) - x * np.sin(x))


def _hessian(jit):
    return jg.hessian(spring, jit=jit)(X, 2.0), spring(X, 2.0), _spring_hessian(X, 2.0)


def _vjp(jit):
    value, pullback = jg.vjp(spring, X, 2.0, jit=jit)
    return (value, pullback(1.0)), spring(X, 2.0), numeric_grad(spring, (X, 2.0), 0)


ENTRIES = {"jacfwd": _jacfwd, "jacrev": _jacrev, "hessian": _hessian, "vjp": _vjp}


def _check(entry: str, jit: bool) -> None:
    """Run ``entry`` and check its value (vjp) and derivative against central differences."""
    out, value, fd = ENTRIES[entry](jit)
    if entry == "vjp":
        assert out[0] == pytest.approx(value, rel=1e-12)
        out = out[1]
    np.testing.assert_allclose(out, fd, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("entry", list(ENTRIES))
def test_the_draw_analysis_runs_once_per_prepared_unit(entry, jit, monkeypatch):
    """Calls after the first do not walk the function's trees again; a registered rule
    (a new rules version) prepares the function again, and the analysis reruns once."""
    walks = []
    real = api.first_draw

    def counted(stmts, env):
        walks.append(len(stmts))
        return real(stmts, env)

    monkeypatch.setattr(api, "first_draw", counted)
    primitives.bump()  # (a Differentiated another test made starts afresh too)
    for _ in range(3):
        _check(entry, jit)
    assert len(walks) == 1
    primitives.bump()
    for _ in range(2):
        _check(entry, jit)
    assert len(walks) == 2


def test_jacfwd_looks_up_its_code_once_per_call(jit, monkeypatch):
    """A Jacobian by forward mode checks the primals and finds the jvp code once per
    call (``forward_mode.jvp_columns``: the unit seeds checked once, then set in place),
    not once per column; the columns match central differences."""
    from jitgrad import forward_mode

    lookups = []
    real = forward_mode.generated_jvp

    def counted(d, args):
        lookups.append(d)
        return real(d, args)

    monkeypatch.setattr(forward_mode, "generated_jvp", counted)
    for _ in range(2):
        _check("jacfwd", jit)
    assert len(lookups) == 2  # one per jacfwd call, for the 4 columns of X
    J = jg.jacfwd(spring, wrt=(0, 1), jit=jit)(X, 2.0)
    np.testing.assert_allclose(J[0], numeric_grad(spring, (X, 2.0), 0), rtol=1e-6)
    np.testing.assert_allclose(J[1], numeric_grad(spring, (X, 2.0), 1), rtol=1e-6)
