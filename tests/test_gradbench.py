"""benchmarks/gradbench at tiny sizes: jitgrad's output on every GradBench eval against
central differences (and the hand-written adjoints where there is one), both jit modes;
particle and saddle (nested differentiation) and the recursive det refused at their line;
the PyTorch versions against jitgrad; the SVG chart of a fabricated run."""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import jitgrad as jg
from benchmarks.gradbench import nested, runner, simple, torchtools
from benchmarks.gradbench.evals import EVALS
from benchmarks.gradbench.plot import svg
from benchmarks.gradbench.report import table
from benchmarks.gradbench.runner import EvalResult, ToolResult
from benchmarks.harness.checks import compare

GRADIENT_EVALS = ["gmm", "lstm", "ba", "ht", "ode", "kmeans", "lse", "llsq", "det"]
#: jit=True compiles each (seconds on a loaded machine): a few small ones only
COMPILED = ["lse", "llsq", "det"]


def _numpy(out) -> tuple:
    return tuple(np.asarray(g, dtype=np.float64) for g in out)


def _check(name: str, jit: bool) -> tuple:
    ev = EVALS[name]
    args = ev.args("test")
    before = [np.copy(a) for a in args]
    got = _numpy(ev.gradient(jit)(*args))
    compare(got, _numpy(ev.reference(*args)), rtol=1e-5, atol_scale=1e-6)
    for a, b in zip(args, before, strict=True):
        np.testing.assert_array_equal(a, b)          # inputs untouched
    return got


@pytest.mark.parametrize("name", GRADIENT_EVALS)
def test_eval_gradient_python(name):
    got = _check(name, jit=False)
    hand = EVALS[name].hand
    if hand is not None:
        compare(_numpy(hand(*EVALS[name].args("test"))), got, rtol=1e-9, atol_scale=1e-12)


@pytest.mark.parametrize("name", COMPILED)
def test_eval_gradient_compiled(name):
    _check(name, jit=True)


@pytest.mark.parametrize("jit", [False, True])
def test_value_and_grad_value(jit):
    """The value jitgrad returns next to the gradient is the objective's."""
    x, n = EVALS["llsq"].args("test")
    value, g = jg.value_and_grad(simple.llsq, wrt=0, jit=jit)(x, n)
    assert value == pytest.approx(simple.llsq(x, n), rel=1e-12)
    compare(_numpy((g,)), _numpy(EVALS["llsq"].reference(x, n)), rtol=1e-5, atol_scale=1e-6)


@pytest.mark.parametrize("name, line", [("particle", "particle_force(x0, x1, w)"),
                                        ("saddle", "saddle_inner_grad(p1, p2)")])
def test_nested_evals_refused_at_their_line(name, line):
    msg = nested.attempt(name, jit=False)
    assert "nested differentiation" in msg and line in msg and "nested.py:" in msg


def test_recursive_det_refused():
    with pytest.raises(jg.TransformError, match="recursion"):
        jg.grad(simple.det_recursive, wrt=0, jit=False)(np.eye(3).ravel(), 3)


@pytest.mark.parametrize("name", GRADIENT_EVALS)
def test_torch_agrees_with_jitgrad(name):
    """Every PyTorch version's gradient (Jacobian blocks for ba and ht, (J, H) for kmeans)
    equals jitgrad's, and its objective the Numba objective's, inputs untouched."""
    pytest.importorskip("torch")
    ev = EVALS[name]
    args = ev.args("test")
    before = [np.copy(a) for a in args]
    objective, gradient = torchtools.make(name, args)
    compare(_numpy(gradient()), _check(name, jit=False), rtol=1e-9, atol_scale=1e-12)
    want = ev.objective(*args)
    got = objective()
    want, got = (want, got) if isinstance(want, tuple) else ((want,), (got,))
    compare(_numpy(got), _numpy(want), rtol=1e-12, atol_scale=1e-14)
    for a, b in zip(args, before, strict=True):
        np.testing.assert_array_equal(a, b)


def test_missing_torch_is_a_note(monkeypatch):
    """Without torch the eval runs on: the PyTorch row says why it is empty."""
    monkeypatch.setitem(sys.modules, "torch", None)
    monkeypatch.setattr(torchtools, "_torch", None)
    monkeypatch.setattr(runner, "PEERS", {"pytorch": (torchtools, "PyTorch")})
    res = EvalResult("lse", "n=30")
    thunks = runner._peer_tools(EVALS["lse"], EVALS["lse"].args("test"), res)
    assert thunks == {} and res.tools["pytorch"].note == "PyTorch not installed (torch)"


def _fabricated() -> list[EvalResult]:
    timed = dict(objective_s=1e-3, first_call_s=1.0)
    gmm = EvalResult("gmm", "d=2", {"objective": ToolResult(),
                                    "jitgrad": ToolResult(gradient_s=2e-3, **timed),
                                    "hand": ToolResult(gradient_s=1e-3, **timed),
                                    "jax": ToolResult(gradient_s=4e-2, **timed),
                                    "pytorch": ToolResult(note="PyTorch not installed (torch)")})
    ode = EvalResult("ode", "n=3", {"jitgrad": ToolResult(gradient_s=1e-4, **timed),
                                    "pytorch": ToolResult(gradient_s=3e-5, **timed)})
    return [gmm, ode, EvalResult("particle", "-", refused="nested differentiation")]


def test_svg_one_bar_per_eval_and_tool():
    """The chart parses as SVG and has one bar per timed (eval, tool), its height the
    log of the ratio to jitgrad's gradient time."""
    root = ET.fromstring(svg(_fabricated()))
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    bars = [r for r in root.iter("{http://www.w3.org/2000/svg}rect") if r.get("class") == "bar"]
    got = {(b.get("data-eval"), b.get("data-tool")): float(b.get("height")) for b in bars}
    assert len(bars) == len(got) == 5
    assert set(got) == {("gmm", "jitgrad"), ("gmm", "hand"), ("gmm", "jax"),
                        ("ode", "jitgrad"), ("ode", "pytorch")}
    decade = got[("gmm", "jax")] - got[("gmm", "jitgrad")]      # jax is 20x jitgrad
    assert decade == pytest.approx(220 / 3 * np.log10(20), abs=0.2)  # axis 0.1x..100x
    assert got[("gmm", "jitgrad")] == got[("ode", "jitgrad")]


def test_table_notes_a_missing_tool():
    text = table(_fabricated())
    assert "| gmm | d=2 | pytorch | PyTorch not installed (torch) |" in text
    assert "| ode | n=3 | pytorch | 1 ms | 0.03 ms | 0.03 | 3.33 |" in text
