"""Second order starts forward mode from the gradient code's tree (``gradient_tree``), not
from its printed text parsed again: the tree is the one ``ast.parse`` gives back from that
text (``backend/as_parsed.py``), no source is read, parsed or fenced for it, and its lines
still map to the user's."""

from __future__ import annotations

import ast
import math
import re

import numpy as np
import pytest

import jitgrad as jg
from jitgrad import api
from jitgrad.transpiler import front_passes
from jitgrad.transpiler.backend import emit
from jitgrad.transpiler.backend.as_parsed import as_parsed
from jitgrad.transpiler.gradient_code import gradient_tree
from jitgrad.transpiler.notes import Checkpoint


def branchy(x, a):
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] > 0.5:
            s = s - 2.0 * x[i] * a
        elif x[i] < -0.5:
            s = s + x[i] ** 3
        else:
            s = s - math.sin(x[i]) * -1.5
    return s * a - 3.0


def looping(x, n):
    s = 0.0
    k = 0
    while k < n:
        s = s + np.sum(x * x) * (k - 1.0)
        k += 1
    return s


def _branchy_hvp(x, a, v, w):
    """H @ (v, w) of ``branchy`` by hand: f = a * sum(t_i) - 3."""
    hx = np.zeros_like(x)
    ha = 0.0
    for i in range(x.shape[0]):
        if x[i] > 0.5:  # t = -2 x a
            hxx, hxa, haa = 0.0, -4.0 * a, -4.0 * x[i]
        elif x[i] < -0.5:  # t = x ** 3
            hxx, hxa, haa = 6.0 * a * x[i], 3.0 * x[i] ** 2, 0.0
        else:  # t = 1.5 sin(x)
            hxx, hxa, haa = -1.5 * a * math.sin(x[i]), 1.5 * math.cos(x[i]), 0.0
        hx[i] = hxx * v[i] + hxa * w
        ha += hxa * v[i] + haa * w
    return hx, ha


def _locations(t: ast.AST) -> list[tuple[str, int | None, int | None]]:
    return [(type(n).__name__, getattr(n, "lineno", None),
             getattr(n, "end_lineno", None) if isinstance(n, ast.stmt) else None)
            for n in ast.walk(t)]


CASES = [(branchy, (np.array([0.9, -0.8, 0.1, 0.3]), 0.7), (0, 1)),
         (looping, (np.array([0.5, -1.0, 2.0]), 3), 0)]


@pytest.mark.parametrize(("f", "args", "wrt"), CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_the_tree_is_the_parsed_text(f, args, wrt):
    """The tree forward mode starts from is the parse of the gradient code's text, node for
    node and line for line (what the second-order path parsed before)."""
    d = jg.differentiate(f, wrt=wrt, jit=False)
    g = gradient_tree(d, d._generated(args), tangents=True)
    assert g.parsed is not None
    parsed = ast.parse(g.parsed.text()).body[0]
    assert ast.dump(g.parsed.tree) == ast.dump(parsed)
    assert _locations(g.parsed.tree) == _locations(parsed)


def test_lines_map_to_the_users():
    """Each statement after a ``# line N:`` comment of the printed code maps to line N."""
    args = CASES[0][1]
    d = jg.differentiate(branchy, wrt=(0, 1), jit=False)
    g = gradient_tree(d, d._generated(args), tangents=True)
    text = g.parsed.text().splitlines()
    marks = [(k + 1, int(m[1])) for k, ln in enumerate(text)
             if (m := re.match(r"\s*# line (\d+): ", ln))]
    assert marks
    for k, line in marks:
        after = next(j for j in range(k + 1, len(text) + 1)
                     if not text[j - 1].lstrip().startswith("#"))
        assert g.function.user_lines[after] == line


def test_parsed_and_fenced_once(monkeypatch):
    """A first ``jg.hvp`` parses and fences the user's function once (the API's refusals'
    parse is the one the passes start from), and no generated code (the gradient code's
    printed text was parsed and fenced twice before, the user's function twice too)."""
    seen = []
    for mod in (api, front_passes):
        for name in ("parse_function", "fence"):
            real = getattr(mod, name)

            def spy(arg, real=real, name=name):
                func = arg if name == "parse_function" else arg.func
                seen.append((name, func.__code__.co_filename))
                return real(arg)
            monkeypatch.setattr(mod, name, spy)
    x, a = CASES[0][1]
    hx, ha = jg.hvp(_once, (x, a), (np.ones(4), 0.0), wrt=(0, 1), jit=False)
    assert seen == [("parse_function", __file__), ("fence", __file__)]
    np.testing.assert_allclose(hx, 6.0 * a * x, rtol=1e-12)  # (H @ (1, 0) of sum(a x^3))
    assert ha == pytest.approx(3.0 * np.sum(x * x), rel=1e-12)


def _once(x, a):
    """Differentiated in ``test_parsed_and_fenced_once`` only (a first call there)."""
    s = 0.0
    for i in range(x.shape[0]):
        s += a * x[i] ** 3
    return s


@pytest.mark.parametrize("jit", [False, True])
def test_hvp_values(jit):
    """The hvp made from the tree, against the Hessian by hand and central differences of
    the gradient."""
    x, a = CASES[0][1]
    v, w = np.array([0.3, -0.2, 0.5, 1.0]), 0.4
    hx, ha = jg.hvp(branchy, (x, a), (v, w), wrt=(0, 1), jit=jit)
    ex, ea = _branchy_hvp(x, a, v, w)
    np.testing.assert_allclose(hx, ex, rtol=1e-10, atol=1e-12)
    assert ha == pytest.approx(ea, rel=1e-10, abs=1e-12)
    grad = jg.grad(branchy, wrt=(0, 1), jit=jit)
    h = 1e-6
    up, down = grad(x + h * v, a + h * w), grad(x - h * v, a - h * w)
    np.testing.assert_allclose(hx, (up[0] - down[0]) / (2 * h), rtol=1e-5, atol=1e-7)
    assert ha == pytest.approx((up[1] - down[1]) / (2 * h), rel=1e-5, abs=1e-7)


def _body(src: str) -> list[ast.stmt]:
    return ast.parse(src).body[0].body


@pytest.mark.parametrize("src", [
    "def f(x):\n    y = x * -1.0\n    z = -2 + -0.0 ** x\n    return (y, z)\n",
    "def f(x):\n    if x:\n        y = 1.0\n    elif x > 1:\n        y = 2.0\n    else:\n"
    "        if x < 0:\n            y = 3.0\n    a, b = (y, x)\n    return a\n",
])
def test_as_parsed_matches_the_parser(src):
    """Negative constants (the parser's ``-c``), ``elif`` and comments' lines."""
    body = _body(src)
    for k, s in enumerate(list(body)):  # made constants, as the passes make them
        for n in ast.walk(s):
            if isinstance(n, ast.UnaryOp) and isinstance(n.operand, ast.Constant):
                n.__class__, n.value = ast.Constant, -n.operand.value
                del n.op, n.operand
        body.insert(2 * k, emit.comment(f"line {k}: a comment"))
    printed = as_parsed("f", ["x"], body)
    ref = ast.parse(emit.unparse(emit.function_def("f", ["x"], body))).body[0]
    assert printed.tree is not None
    assert ast.dump(printed.tree) == ast.dump(ref)
    assert _locations(printed.tree) == _locations(ref)


@pytest.mark.parametrize("value", [float("nan"), 1 + 2j, np.float64(2.0)])
def test_as_parsed_refuses_constants_printed_as_expressions(value):
    body = [ast.Return(value=ast.BinOp(left=ast.Name(id="x", ctx=ast.Load()), op=ast.Add(),
                                       right=ast.Constant(value=value)))]
    assert as_parsed("f", ["x"], body).tree is None


def test_as_parsed_refuses_what_would_parse_otherwise():
    """``-1.0 ** x`` parses as ``-(1.0 ** x)``; a region is not plain ``ast``."""
    power = ast.BinOp(left=ast.Constant(value=-1.0), op=ast.Pow(),
                      right=ast.Name(id="x", ctx=ast.Load()))
    assert as_parsed("f", ["x"], [ast.Return(value=power)]).tree is None
    where = ast.Pass(lineno=1)
    region = Checkpoint.region([ast.Pass()], where)
    assert as_parsed("f", ["x"], [region, ast.Return(value=ast.Name(id="x"))]).tree is None
