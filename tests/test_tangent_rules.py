"""Forward-mode (tangent) rules: every differentiable primitive has one (or is a listed,
justified exception the forward pass refuses), and each agrees with its gradient rule by
the transpose identity <J v, w> = <v, J^T w> on random inputs, called eagerly and inlined
by the transpiler (``jit=False``), and with central differences of the directional
derivative."""

import builtins
import linecache
import math
import operator
import textwrap

import numpy as np
import pytest

import jitgrad as jg
from jitgrad.rules import lookup
from jitgrad.rules.primitives import fact, records
from jitgrad.rules.tangents import UNSUPPORTED, eager_jvp, how_tangent, missing_tangents

R = np.random.default_rng(3)


def test_every_differentiable_primitive_has_a_tangent():
    """Every primitive with a gradient rule has a tangent rule, a linear or elementwise
    shortcut, or is one of the listed exceptions (which forward mode refuses)."""
    # jitgrad's own rules: tests elsewhere in the process register rules of their own
    # without tangents (forward mode refuses those, see test_user_rule_without_tangent)
    builtin = {id(r.fn) for r in records() if r.rule is not None
               and (getattr(r.rule.impl, "__module__", "") or "").startswith("jitgrad.")}
    missing = {fn for fn in missing_tangents() if id(fn) in builtin}
    assert missing == set(UNSUPPORTED), missing
    for rec in records():
        if rec.rule is not None and id(rec.fn) in builtin and rec.fn not in UNSUPPORTED:
            assert how_tangent(rec.fn) in ("rule", "linear", "elementwise", "zero"), rec.fn
        assert rec.tangent is None or callable(rec.tangent)


def test_unsupported_primitive_is_refused_with_location(monkeypatch):
    """A primitive listed in UNSUPPORTED (none today) is refused at the user's line."""
    monkeypatch.setitem(UNSUPPORTED, np.cos, "a listed exception")
    with pytest.raises(jg.TransformError, match="listed exception") as e:
        jg.jvp(_cos_sum, (np.ones(3),), np.ones(3), jit=False)
    assert "test_tangent_rules.py" in str(e.value) and "np.cos(x)" in str(e.value)


def _cos_sum(x):
    return np.sum(np.cos(x) * x)


def u(lo, hi, *shape):
    return R.uniform(lo, hi, shape) if shape else float(R.uniform(lo, hi))


# (source expression in a, b, c, d; primitive; primals)
CASES = [
    *[(f"np.{n}(a)", getattr(np, n), (u(0.1, 0.9, 4),))
      for n in ("sin", "cos", "tan", "arcsin", "arccos", "arctan", "tanh", "sinh", "cosh",
                "arcsinh", "arctanh", "exp", "expm1", "log", "log1p", "sqrt", "exp2", "log2",
                "log10", "square", "reciprocal", "cbrt", "degrees", "radians", "abs",
                "fabs", "negative", "positive")],
    ("np.arccosh(a)", np.arccosh, (u(1.2, 2.0, 4),)),
    *[(f"math.{n}(a)", getattr(math, n), (u(0.1, 0.9),))
      for n in ("sin", "erf", "erfc", "gamma", "lgamma", "exp", "log", "sqrt", "atan")],
    *[(f"np.{n}(a, b)", getattr(np, n), (u(0.5, 1.5, 3, 4), u(0.5, 1.5, 4)))
      for n in ("arctan2", "hypot", "power", "logaddexp", "logaddexp2", "maximum", "minimum",
                "copysign", "fmod", "add", "subtract", "multiply", "divide")],
    ("math.atan2(a, b)", math.atan2, (0.3, 0.7)),
    ("math.pow(a, b)", math.pow, (1.3, 0.7)),
    ("np.ldexp(a, 3)", np.ldexp, (u(-1, 1, 4), 3)),
    ("a + b", operator.add, (u(-1, 1, 3, 1), u(-1, 1, 4))),
    ("a - b", operator.sub, (0.4, u(-1, 1, 4))),
    ("a * b", operator.mul, (u(-1, 1, 4), u(-1, 1, 3, 4))),
    ("a / b", operator.truediv, (u(-1, 1, 4), u(1, 2, 4))),
    ("a ** b", operator.pow, (u(0.5, 1.5, 4), 1.7)),
    ("a % b", operator.mod, (u(0.1, 3.0, 4), 0.7)),
    ("a // b", operator.floordiv, (u(0.1, 3.0, 4), 0.7)),
    ("-a", operator.neg, (u(-1, 1, 4),)),
    ("abs(a)", builtins.abs, (0.3,)),
    ("float(a)", builtins.float, (0.3,)),
    ("max(a, b, c)", builtins.max, (0.3, 0.9, 0.5)),
    ("min(a, b)", builtins.min, (0.3, 0.9)),
    ("max(a)", builtins.max, (u(-1, 1, 5),)),
    ("sum(a)", builtins.sum, (u(-1, 1, 5),)),
    ("np.sum(a, axis=1)", np.sum, (u(-1, 1, 3, 4),)),
    ("np.mean(a, axis=0)", np.mean, (u(-1, 1, 3, 4),)),
    ("np.prod(a, axis=1)", np.prod, (u(0.5, 1.5, 3, 4),)),
    ("np.max(a, axis=1)", np.max, (u(-1, 1, 3, 4),)),
    ("np.min(a)", np.min, (u(-1, 1, 3, 4),)),
    ("np.var(a, axis=1)", np.var, (u(-1, 1, 3, 4),)),
    ("np.std(a)", np.std, (u(-1, 1, 3, 4),)),
    ("np.linalg.norm(a)", np.linalg.norm, (u(-1, 1, 4),)),
    ("np.dot(a, b)", np.dot, (u(-1, 1, 3, 4), u(-1, 1, 4))),
    ("a @ b", operator.matmul, (u(-1, 1, 3, 4), u(-1, 1, 4, 2))),
    ("np.vdot(a, b)", np.vdot, (u(-1, 1, 4), u(-1, 1, 4))),
    ("np.outer(a, b)", np.outer, (u(-1, 1, 3), u(-1, 1, 4))),
    ("np.linalg.solve(a, b)", np.linalg.solve, (np.eye(3) * 3 + u(-1, 1, 3, 3),
                                                 u(-1, 1, 3))),
    ("np.linalg.inv(a)", np.linalg.inv, (np.eye(3) * 3 + u(-1, 1, 3, 3),)),
    ("np.linalg.det(a)", np.linalg.det, (np.eye(3) * 3 + u(-1, 1, 3, 3),)),
    ("np.trace(a)", np.trace, (u(-1, 1, 3, 3),)),
    ("np.reshape(a, (4, 3))", np.reshape, (u(-1, 1, 3, 4), (4, 3))),
    ("np.ravel(a)", np.ravel, (u(-1, 1, 3, 4),)),
    ("np.expand_dims(a, 0)", np.expand_dims, (u(-1, 1, 4), 0)),
    ("np.transpose(a)", np.transpose, (u(-1, 1, 3, 4),)),
    ("np.concatenate((a, b))", np.concatenate, ((u(-1, 1, 3), u(-1, 1, 2)),)),
    ("np.stack((a, b))", np.stack, ((u(-1, 1, 3), u(-1, 1, 3)),)),
    ("np.hstack((a, b))", np.hstack, ((u(-1, 1, 3), u(-1, 1, 2)),)),
    ("np.vstack((a, b))", np.vstack, ((u(-1, 1, 3), u(-1, 1, 3)),)),
    ("np.copy(a)", np.copy, (u(-1, 1, 4),)),
    ("np.array([a, b])", np.array, ([0.3, 0.5],)),
    ("np.atleast_2d(a)", np.atleast_2d, (u(-1, 1, 4),)),
    ("np.broadcast_to(a, (3, 4))", np.broadcast_to, (u(-1, 1, 4), (3, 4))),
    ("np.swapaxes(a, 0, 1)", np.swapaxes, (u(-1, 1, 3, 4), 0, 1)),
    ("np.diag(a)", np.diag, (u(-1, 1, 4),)),
    ("np.tril(a)", np.tril, (u(-1, 1, 3, 3),)),
    ("np.triu(a, 1)", np.triu, (u(-1, 1, 3, 3), 1)),
    ("np.flip(a)", np.flip, (u(-1, 1, 4),)),
    ("np.fliplr(a)", np.fliplr, (u(-1, 1, 3, 3),)),
    ("np.flipud(a)", np.flipud, (u(-1, 1, 3, 3),)),
    ("np.roll(a, 2)", np.roll, (u(-1, 1, 5), 2)),
    ("np.diff(a)", np.diff, (u(-1, 1, 5),)),
    ("np.full(3, a)", np.full, (3, 0.7)),
    ("np.full_like(a, b)", np.full_like, (u(-1, 1, 3), 0.7)),
    ("np.linspace(a, b, 5)", np.linspace, (0.2, 1.3, 5)),
    ("a[1:3]", operator.getitem, (u(-1, 1, 5), slice(1, 3))),
    ("np.where(a > 0, a, b)", np.where, (u(-1, 1, 5) > 0, u(-1, 1, 5), u(-1, 1, 5))),
    ("np.clip(a, -0.5, 0.5)", np.clip, (u(-1, 1, 5), -0.5, 0.5)),
    ("np.cumsum(a)", np.cumsum, (u(-1, 1, 5),)),
    ("np.sort(a)", np.sort, (u(-1, 1, 5),)),
    ("np.sort(a, axis=0)", np.sort, (u(-1, 1, 3, 4), 0)),
    ("np.sort(a, axis=None)", np.sort, (u(-1, 1, 3, 4), None)),
]


def _diff_positions(fn, primals):
    tpl_grads = __import__("jitgrad.transpiler.modes.template", fromlist=["template_of"]) \
        .template_of(lookup(fn)).grads
    out = []
    for k, p in enumerate(primals):
        ok = k < len(tpl_grads) and tpl_grads[k] is not None
        if isinstance(p, np.ndarray) and p.dtype.kind != "f" or isinstance(p, (int, slice,
                                                                             tuple)) \
                and not (isinstance(p, tuple) and all(isinstance(q, np.ndarray) for q in p)):
            ok = False
        out.append(ok)
    return out


def _rand_like(p):
    if isinstance(p, (tuple, list)):
        return type(p)(_rand_like(q) for q in p)
    return R.standard_normal(np.shape(p)) if np.ndim(p) else float(R.standard_normal())


def _inner(a, b):
    if isinstance(a, (tuple, list)):
        return sum(_inner(x, y) for x, y in zip(a, b, strict=True))
    return float(np.sum(np.asarray(a) * np.asarray(b)))


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_transpose_identity_eager(case):
    """<J v, w> = <v, J^T w> with the gradient rule's pullback, and J v against central
    differences."""
    _, fn, primals = case
    diff = _diff_positions(fn, primals)
    vs = tuple(_rand_like(p) if d else None for p, d in zip(primals, diff, strict=True))
    value, jv = eager_jvp(fn, primals, vs)
    np.testing.assert_allclose(value, fn(*primals), rtol=1e-12, atol=1e-12)
    assert np.shape(jv) == np.shape(value)
    w = _rand_like(value)
    _, back = lookup(fn).impl(*primals)
    g = back(np.array(w) if np.ndim(value) else w)
    g = g if isinstance(g, tuple) else (g,)
    rhs = sum(_inner(v, gk) for v, gk in zip(vs, g, strict=False) if v is not None)
    assert _inner(jv, w) == pytest.approx(rhs, rel=1e-9, abs=1e-10)
    eps = 1e-6

    def shifted(h):
        return fn(*[_shift(p, v, h) for p, v in zip(primals, vs, strict=True)])

    fd = (np.asarray(shifted(eps), float) - np.asarray(shifted(-eps), float)) / (2 * eps)
    np.testing.assert_allclose(jv, fd, rtol=1e-5, atol=1e-6)


def _shift(p, v, h):
    if v is None:
        return p
    if isinstance(p, (tuple, list)):
        return type(p)(_shift(q, w, h) for q, w in zip(p, v, strict=True))
    return p + h * v if isinstance(p, np.ndarray) else p + h * v


_N = iter(range(10 ** 6))


def _function_of(expr: str, nargs: int):
    """A module-level-like function ``f(a, b, ...)`` returning ``expr`` (source readable)."""
    names = "abcd"[:nargs]
    fname = f"<tangent-case-{next(_N)}>"
    src = f"def f({', '.join(names)}):\n    return {expr}\n"
    linecache.cache[fname] = (len(src), None, src.splitlines(True), fname)
    ns = {"np": np, "math": math}
    exec(compile(textwrap.dedent(src), fname, "exec"), ns)
    return ns["f"]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_transpose_identity_inlined(case):
    """The transpiler's inlined tangent against the vjp of the same generated module."""
    expr, fn, primals = case
    args = primals
    if expr.startswith("np.concatenate") or expr.startswith(("np.stack", "np.hstack",
                                                             "np.vstack")):
        args = primals[0]
    elif expr == "np.array([a, b])":
        args = tuple(primals[0])
    elif expr.startswith("np.where"):
        args = primals[1:]
    elif any(k in expr for k in ("(4, 3)", "(3, 4)", "0, 1)", "[1:3]", "axis=")) or expr in (
            "np.expand_dims(a, 0)", "np.ldexp(a, 3)", "np.triu(a, 1)", "np.roll(a, 2)",
            "np.full(3, a)", "np.linspace(a, b, 5)"):
        args = tuple(p for p in primals if isinstance(p, (float, np.ndarray)))
        if expr == "np.full(3, a)":
            args = (primals[1],)
    f = _function_of(expr, len(args))
    wrt = tuple(k for k, a in enumerate(args)
                if isinstance(a, float) or isinstance(a, np.ndarray) and a.dtype.kind == "f")
    vs = tuple(_rand_like(args[k]) for k in wrt)
    value, jv = jg.jvp(f, tuple(args), vs, wrt=wrt, jit=False)
    np.testing.assert_allclose(value, f(*args), rtol=1e-12, atol=1e-12)
    w = _rand_like(value)
    if np.ndim(value) == 0:
        g = jg.differentiate(f, wrt=wrt, jit=False).grad(*args)
        rhs = sum(_inner(v, gk) * w for v, gk in zip(vs, g, strict=True))
    else:
        _, pb = jg.vjp(f, *args, wrt=wrt, jit=False)
        rhs = sum(_inner(v, gk) for v, gk in zip(vs, pb(w), strict=True))
    assert _inner(jv, w) == pytest.approx(rhs, rel=1e-9, abs=1e-10)


def test_tangent_rule_slot_holds_callable_rules():
    rec = fact(np.dot)
    a, b = R.standard_normal((2, 3)), R.standard_normal(3)
    va, vb = R.standard_normal((2, 3)), R.standard_normal(3)
    value, t = rec.tangent((a, b), (va, vb))
    np.testing.assert_allclose(t, va @ b + a @ vb)
    value, t = rec.tangent((a, b), (None, vb))
    np.testing.assert_allclose(t, a @ vb)


def _plain_cube(x):
    return x * x * x


def _uses_plain_cube(x):
    return np.sum(_plain_cube(x))


def test_user_rule_without_tangent_is_refused_in_forward_mode(scratch_rules):
    """A rule registered with only a gradient: reverse mode uses it, forward mode refuses
    at the call's line instead of guessing a tangent."""
    @jg.grad_rule(_plain_cube)
    def _cube_rule(x):
        y = x * x * x

        def back(dy):
            return (3.0 * x * x * dy,)

        return y, back

    x = np.array([0.5, 1.5])
    np.testing.assert_allclose(jg.grad(_uses_plain_cube, jit=False)(x), 3.0 * x * x)
    with pytest.raises(jg.TransformError, match="tangent") as e:
        jg.jvp(_uses_plain_cube, (x,), np.ones(2), jit=False)
    assert "test_tangent_rules.py" in str(e.value) and "_plain_cube(x)" in str(e.value)
