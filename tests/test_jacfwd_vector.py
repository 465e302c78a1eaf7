"""``jg.jacfwd`` by vector forward mode (``transpiler/modes/vector.py``): the primal once,
the tangents of up to ``VECTOR_WIDTH`` input elements at a time.  Every Jacobian entry is
checked against central differences (``gradcheck.numeric_grad`` of each output element)
and against the per-column path, in chunks too, under ``jit=True`` and ``jit=False``;
the value the vector code returns is the function's.  A construct the pass refuses
(a whole-array tangent expression) falls back to one jvp per column, correctly, with
the reason logged and shown."""

import doctest
import logging
import math

import numpy as np
import pytest
from gradcheck import numeric_grad

import jitgrad as jg
from jitgrad import forward_api
from jitgrad.forward_mode import jvp_columns
from jitgrad.transpiler import forward_pipeline
from jitgrad.transpiler.forward_pipeline import VECTOR, example_jvp


def loop(x, n):
    """A scalar loop: the tangent carried from trip to trip."""
    s = 0.0
    for i in range(n):
        s = s * x + math.sin(x * i)
    return s


def _bump(a, b):
    return math.exp(-a * a) * b


def helpers(x, K):
    """A helper inlined, and a user's ``K`` beside ``x``."""
    out = np.empty(x.shape[0])
    for i in range(x.shape[0]):
        out[i] = _bump(x[i], K) + x[i - 1] * x[i]
    return out


def local(x, M):
    """A local array written element by element, a branch, a ``while``; a 2-D ``M``."""
    J = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        if x[i] > 0.0:
            J[i] = x[i] * M[i, 0]
        else:
            J[i] = math.exp(x[i]) + M[i, 1] * x[i]
    k = 0
    s = 0.0
    while k < J.shape[0]:
        s = s + J[k] * J[k]
        k += 1
    out = np.empty(x.shape[0] + 1)
    for i in range(x.shape[0]):
        out[i] = J[i] * s
    out[x.shape[0]] = s
    return out


def pair(x, dx):
    """A tuple output (an array and a scalar); a user's ``dx``."""
    t = 0.0
    y = np.zeros(x.shape[0])
    for i in range(1, x.shape[0]):
        t = t + math.tanh(dx * x[i]) * x[i - 1]
        y[i] = t * x[i]
    return y, t


def rows(M, dx):
    """Views of a 2-D tangent (whole rows read and written back), a 2-D output."""
    P = np.zeros((M.shape[0], M.shape[1]))
    for i in range(M.shape[0]):
        r = M[i]
        P[i] = r
        for j in range(M.shape[1]):
            P[i, j] = P[i, j] * dx + r[j] * r[j - 1]
    return P


def rebind(x, dx):
    """A scalar ``wrt`` argument rebound: its vector of seeds is copied, not written."""
    x = x * dx
    s = 0.0
    for i in range(3):
        s = s + math.sin(x) * i
        x = x + s * dx
    return s, x


def whole(x, dx):
    """A whole-array tangent expression: vector forward mode refuses it."""
    y = x * dx
    z = np.empty(x.shape[0])
    for i in range(x.shape[0]):
        z[i] = y[i] * y[i - 1]
    return z


X = np.array([0.3, -0.7, 1.1, 0.4, -0.2])
M = np.array([[0.5, -1.0, 0.2], [1.5, 0.3, -0.4], [-0.6, 0.8, 1.2],
              [0.1, -0.9, 0.7], [2.0, 0.4, -1.1]])
CASES = [
    (loop, (0.8, 4), 0),
    (helpers, (X, 0.7), 0),
    (local, (X, M), 0),
    (local, (X, M), (0, 1)),
    (pair, (X, 0.9), (0, 1)),
    (rows, (M, 0.6), (0, 1)),
    (rebind, (0.4, 1.3), (0, 1)),
]
IDS = ["loop", "helpers", "local", "local-wrt2", "pair-tuple", "rows-2d", "rebind-scalars"]


def _outs(f, args):
    out = f(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    return out if isinstance(out, tuple) else (out,)


def _fd(f, args, o, w):
    """Central differences of output ``o`` w.r.t. argument ``w``: shape out + arg."""
    out = np.asarray(_outs(f, args)[o], dtype=float)
    ref = np.empty(out.shape + np.shape(args[w]))
    for idx in np.ndindex(out.shape):
        ref[idx] = numeric_grad(lambda *a: np.asarray(_outs(f, a)[o], dtype=float)[idx],
                                args, w)
    return ref


def _blocks(jac, f, args, wrt):
    """The blocks of ``jac`` as a dict ``(o, k) -> array`` (JAX's nesting)."""
    tuple_out = isinstance(_outs(f, args), tuple) and isinstance(f(*args), tuple)
    rows_ = jac if tuple_out else (jac,)
    wrts = wrt if isinstance(wrt, tuple) else (wrt,)
    return {(o, k): np.asarray(row if not isinstance(wrt, tuple) else row[k])
            for o, row in enumerate(rows_) for k in range(len(wrts))}


def _per_column(monkeypatch, f, wrt, jit, args):
    """The Jacobian by one jvp per column (the vector path switched off)."""
    with monkeypatch.context() as m:
        m.setattr(forward_api, "_vector_columns", lambda *a: None)
        return jg.jacfwd(f, wrt=wrt, jit=jit)(*args)


def _no_columns(*a):
    raise AssertionError("the per-column path ran")


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize(("f", "args", "wrt"), CASES, ids=IDS)
def test_vector_jacobian(monkeypatch, f, args, wrt, jit):
    before = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    with monkeypatch.context() as m:
        m.setattr(forward_api, "_forward_columns", _no_columns)  # the vector path only
        jac = jg.jacfwd(f, wrt=wrt, jit=jit)(*args)
    for a, b in zip(args, before, strict=True):
        np.testing.assert_array_equal(a, b)
    cols = _blocks(_per_column(monkeypatch, f, wrt, jit, args), f, args, wrt)
    wrts = wrt if isinstance(wrt, tuple) else (wrt,)
    for (o, k), b in _blocks(jac, f, args, wrt).items():
        np.testing.assert_allclose(b, _fd(f, args, o, wrts[k]), rtol=1e-5, atol=1e-6,
                                   err_msg=f"output {o}, argument {wrts[k]}")
        np.testing.assert_allclose(b, cols[o, k], rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize(("f", "args", "wrt"), CASES, ids=IDS)
def test_vector_code_value(f, args, wrt, jit):
    """The value the vector code returns is the function's; its tangents for unit seeds
    are the per-column jvps'."""
    d = jg.differentiate(f, wrt=wrt, jit=jit)
    pos = list(d.wrt_positions)
    zeros = [np.zeros(np.shape(args[i])) if np.ndim(args[i]) else 0.0 for i in pos]
    columns = jvp_columns(d, args, zeros[0] if d.single else tuple(zeros))
    vec, fixed = columns.vector(), columns.fixed
    assert vec.refused is None
    seeds = [forward_api._unit_seeds(args[i], int(sum(np.size(args[j]) for j in pos[:k])),
                                     0, 2) for k, i in enumerate(pos)]
    value, tan = vec.call((*fixed, *seeds))
    for v, e in zip(value if isinstance(value, tuple) else (value,), _outs(f, args),
                    strict=True):
        np.testing.assert_allclose(v, e, rtol=1e-12, atol=1e-14)
    tans = tan if isinstance(value, tuple) else (tan,)
    for col in range(2):
        unit = [s[..., col] if np.ndim(s) > 1 else float(s[col]) for s in seeds]
        _, t1 = jg.jvp(f, args, unit[0] if d.single else tuple(unit), wrt=wrt, jit=jit)
        for a, b in zip(tans, t1 if isinstance(value, tuple) else (t1,), strict=True):
            np.testing.assert_allclose(np.asarray(a)[..., col], b, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("jit", [True, False])
def test_chunks(monkeypatch, jit):
    """Three directions per call: the chunks cross the boundary between two arguments."""
    monkeypatch.setattr(forward_api, "VECTOR_WIDTH", 3)
    monkeypatch.setattr(forward_api, "_forward_columns", _no_columns)
    args = (X, M)
    jac = jg.jacfwd(local, wrt=(0, 1), jit=jit)(*args)
    for k, w in enumerate((0, 1)):
        np.testing.assert_allclose(jac[k], _fd(local, args, 0, w), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("jit", [True, False])
def test_fallback(monkeypatch, caplog, jit):
    """A whole-array tangent expression: refused with the reason, the columns one by one,
    still right."""
    args = (X, 0.8)
    d = jg.differentiate(whole, wrt=(0, 1), jit=jit)
    assert "whole-array tangent expression" in d.source(*args, mode="jvp", stage="vector")
    calls = []
    real = forward_api._forward_columns
    monkeypatch.setattr(forward_api, "_forward_columns",
                        lambda *a: calls.append(1) or real(*a))
    with caplog.at_level(logging.INFO, logger="jitgrad"):
        jac = jg.jacfwd(whole, wrt=(0, 1), jit=jit)(*args)
    assert calls and "vector forward mode does not apply" in caplog.text
    for k, w in enumerate((0, 1)):
        np.testing.assert_allclose(jac[k], _fd(whole, args, 0, w), rtol=1e-5, atol=1e-6)


def test_vector_passes_examples():
    """The vector passes' before/after examples hold (shown with ``stage=``)."""
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    finder = doctest.DocTestFinder(recurse=False)
    for p in VECTOR:
        for t in finder.find(p.run, p.name, globs={"example_jvp": example_jvp}):
            runner.run(t)
    res = runner.summarize(verbose=False)
    assert res.attempted >= 2 and res.failed == 0
    assert "_nd" in forward_pipeline.example_jvp("lower_vector", "def f(x):\n    return x * x\n")


def test_switched_off(monkeypatch):
    """``jg.config.vector_jacfwd = False``: one jvp per column, the same Jacobian."""
    monkeypatch.setattr(jg.config, "vector_jacfwd", False)
    calls = []
    real = forward_api._forward_columns
    monkeypatch.setattr(forward_api, "_forward_columns",
                        lambda *a: calls.append(1) or real(*a))
    jac = jg.jacfwd(helpers, wrt=0, jit=False)(X, 0.7)
    assert calls
    np.testing.assert_allclose(jac, _fd(helpers, (X, 0.7), 0, 0), rtol=1e-5, atol=1e-6)


def test_cli_shows_the_vector_stages(tmp_path, capsys):
    """``jitgrad show --mode jvp --stage fuse_directions`` prints the fused vector code."""
    from jitgrad import cli

    src = tmp_path / "vf_cli.py"
    src.write_text("import math\n\ndef f(x, dx):\n    a = x * dx\n    return math.sin(a) * dx\n")
    assert cli.main(["show", f"{src}:f", "--mode", "jvp", "--stage", "fuse_directions",
                     "--args", "0.5,2.0", "--wrt", "0,1", "--no-color"]) == 0
    out = capsys.readouterr().out
    assert "for _k in range(_nd):" in out and "a_dot = x_dot[_k] * dx + dx_dot[_k] * x" in out
