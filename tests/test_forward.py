"""Forward mode (jvp, jacfwd, jacrev): the corpora against central differences of the
directional derivative and against reverse mode by the transpose identity
<J v, w> = <v, J^T w>, every output element, in both ``jit=False`` (every case) and
``jit=True`` (a sample: each Numba compile costs ~0.5 s)."""

import math
import re
import subprocess
import sys

import corpus_forward as CF
import corpus_loops as CL
import corpus_soundness as CS
import numpy as np
import pytest
import test_numpy_transpiled as TN
import test_rule_coverage as TR
import test_straightline as TS
from gradcheck import check_grad

import jitgrad as jg

ALL = ([(f, (lambda a=a: a), (0, 1)) for f, a in TS.SCALAR_CASES] + list(TN.CASES)
       + list(CL.CASES) + list(TR.CASES) + list(CS.CASES) + list(CF.CASES))
CASES = ALL
IDS = [f"{c[0].__name__}-{k}" for k, c in enumerate(CASES)]
JIT_SAMPLE = {"for_break_data", "while_newton_sqrt", "arr_heat", "arr_swap_buffers",
              "softmax_ce", "mlp", "combo_lorenz", "arr_view_write", "helper_call", "row_view_loop",
              "alias_arg"}


def _copy(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def _rand(rng, x):
    return rng.standard_normal(np.shape(x)) if np.ndim(x) else float(rng.standard_normal())


def _inner(a, b):
    if isinstance(a, tuple):
        return sum(_inner(x, y) for x, y in zip(a, b, strict=True))
    return float(np.sum(np.asarray(a, dtype=float) * np.asarray(b, dtype=float)))


def directional_fd(f, args, wrts, vs, eps=1e-6):
    """Central differences of ``f`` along ``vs`` (one per ``wrts`` argument)."""
    def at(h):
        a = _copy(args)
        for w, v in zip(wrts, vs, strict=True):
            a[w] = a[w] + h * v
        return f(*a)

    hi, lo = at(eps), at(-eps)
    if isinstance(hi, tuple):
        return tuple((np.asarray(p, float) - np.asarray(q, float)) / (2 * eps)
                     for p, q in zip(hi, lo, strict=True))
    return (np.asarray(hi, float) - np.asarray(lo, float)) / (2 * eps)


def check_jvp(f, args, wrt, jit, rtol=1e-5, atol=1e-6):
    """jvp against FD of the directional derivative and against vjp (transpose identity);
    the inputs (primals and tangents) unchanged."""
    wrts = wrt if isinstance(wrt, tuple) else (wrt,)
    rng = np.random.default_rng(sum(map(ord, f.__name__)))
    vs = tuple(_rand(rng, args[w]) for w in wrts)
    before, vbefore = _copy(args), _copy(vs)
    value, tan = jg.jvp(f, tuple(args), vs, wrt=wrts, jit=jit)
    for a, b in zip([*args, *vs], [*before, *vbefore], strict=True):
        np.testing.assert_array_equal(a, b, err_msg="jvp mutated an input")
    expected = f(*_copy(args))
    if isinstance(expected, tuple):
        assert isinstance(tan, tuple) and len(tan) == len(expected)
    else:
        assert np.shape(tan) == np.shape(expected)
    np.testing.assert_allclose(np.asarray(value, float) if not isinstance(value, tuple)
                               else np.concatenate([np.ravel(v) for v in value]),
                               np.asarray(expected, float) if not isinstance(expected, tuple)
                               else np.concatenate([np.ravel(v) for v in expected]),
                               rtol=1e-10, atol=1e-12)
    fd = directional_fd(f, args, wrts, vs)
    for t, e in zip(tan if isinstance(tan, tuple) else (tan,),
                    fd if isinstance(fd, tuple) else (fd,), strict=True):
        np.testing.assert_allclose(t, e, rtol=rtol, atol=atol, err_msg="jvp vs finite "
                                   "differences of the directional derivative")
    # the transpose identity against reverse mode
    w = tuple(_rand(rng, e) for e in expected) if isinstance(expected, tuple) \
        else _rand(rng, expected)
    d = jg.differentiate(f, wrt=wrts, jit=False)
    if np.ndim(expected) == 0 and not isinstance(expected, tuple):
        g = tuple(w * gk for gk in d.value_and_grad(*_copy(args))[1])
    else:
        g = d.vjp(*_copy(args))[1](w)
    rhs = sum(_inner(v, gk) for v, gk in zip(vs, g, strict=True))
    assert _inner(tan, w) == pytest.approx(rhs, rel=1e-7, abs=1e-9)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_corpus_jvp_nojit(case):
    f, make, wrt = case
    check_jvp(f, make(), wrt, jit=False)


JIT_CASES = [c for c in CASES if c[0].__name__ in JIT_SAMPLE]


@pytest.mark.parametrize("case", JIT_CASES, ids=[c[0].__name__ for c in JIT_CASES])
def test_corpus_jvp_jit(case):
    f, make, wrt = case
    check_jvp(f, make(), wrt, jit=True)


def test_jit_sample_is_present():
    assert len({c[0].__name__ for c in JIT_CASES}) >= 8


def test_corpus_size():
    assert len(CASES) >= 150


# --- the API ------------------------------------------------------------------------


def poly(x, c):
    s = 0.0
    for i in range(x.shape[0]):
        s = s * c + x[i] * x[i]
    return s


def vec(x, a):
    y = np.empty_like(x)
    for i in range(x.shape[0]):
        y[i] = a * np.sin(x[i]) * x[(i + 1) % x.shape[0]]
    return y


def two_out(x, a):
    return np.sum(x * x) * a, x * a


def test_method_form_and_single_tangent():
    d = jg.differentiate(poly, jit=False)
    x = np.array([0.3, -0.2, 0.5])
    v, t = d.jvp((x, 0.7), np.ones(3))
    assert v == pytest.approx(poly(x, 0.7))
    assert t == pytest.approx(float(d.grad(x, 0.7) @ np.ones(3)))


def test_tuple_wrt_needs_tuple_of_tangents():
    x = np.array([0.3, -0.2, 0.5])
    v, t = jg.jvp(poly, (x, 0.7), (np.ones(3), 1.0), wrt=(0, 1), jit=False)
    g = jg.grad(poly, wrt=(0, 1), jit=False)(x, 0.7)
    assert t == pytest.approx(float(g[0].sum() + g[1]))
    with pytest.raises(ValueError, match="tangents must be a tuple of 2"):
        jg.jvp(poly, (x, 0.7), np.ones(3), wrt=(0, 1), jit=False)
    with pytest.raises(ValueError, match="1 tangents for 2"):
        jg.jvp(poly, (x, 0.7), (np.ones(3),), wrt=(0, 1), jit=False)


def test_bad_input_is_refused_clearly():
    x = np.array([0.3, -0.2, 0.5])
    with pytest.raises(ValueError, match=r"shape \(2,\).*\(3,\)"):
        jg.jvp(poly, (x, 0.7), np.ones(2), jit=False)
    with pytest.raises(ValueError, match="scalar"):
        jg.jvp(poly, (x, 0.7), np.ones(3), wrt=1, jit=False)
    with pytest.raises(TypeError, match="integer"):
        jg.jvp(lambda_free_int, (np.ones(3), 2), 1, wrt=1, jit=False)
    with pytest.raises(TypeError, match="primals must be a tuple"):
        jg.jvp(poly, x, np.ones(3), jit=False)
    with pytest.raises(TypeError, match="positional arguments"):
        jg.jvp(poly, (x,), np.ones(3), jit=False)


@pytest.mark.parametrize("jit", [False, True])
def test_transforms_of_a_gradient_differentiate_the_gradient(jit):
    """jacfwd/jacrev/jvp of ``jg.grad(poly)`` give the Hessian (not the function's own
    derivative again); hessian of it, a vector output, is a clear error."""
    x, c = np.array([0.3, -0.5, 0.8]), 0.5
    H = np.diag([c ** 2, c, 1.0]) * 2.0  # d2/dx2 of sum_i c^(n-1-i) x_i^2
    for t in (jg.jacfwd, jg.jacrev):
        np.testing.assert_allclose(t(jg.grad(poly), jit=jit)(x, c), H, rtol=1e-12)
    v = np.array([1.0, -2.0, 0.5])
    g, hv = jg.jvp(jg.grad(poly), (x, c), v, jit=jit)
    np.testing.assert_allclose(g, 2.0 * np.array([c ** 2, c, 1.0]) * x, rtol=1e-12)
    np.testing.assert_allclose(hv, H @ v, rtol=1e-12)
    with pytest.raises(ValueError, match="scalar output"):
        jg.hessian(jg.grad(poly), jit=jit)(x, c)


def lambda_free_int(x, n):
    return np.sum(x) * n


def test_jacobians_agree_with_each_other_and_fd():
    x = np.array([0.3, -0.2, 0.5, 1.1])
    jf = jg.jacfwd(vec, jit=False)(x, 0.7)
    jr = jg.jacrev(vec, jit=False)(x, 0.7)
    assert jf.shape == (4, 4)
    fd = np.stack([directional_fd(vec, [x, 0.7], (0,), (e,)) for e in np.eye(4)], axis=-1)
    np.testing.assert_allclose(jf, fd, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(jr, jf, rtol=1e-12, atol=1e-12)
    both = jg.jacfwd(vec, wrt=(0, 1), jit=False)(x, 0.7)
    assert both[0].shape == (4, 4) and both[1].shape == (4,)
    np.testing.assert_allclose(both[1], vec(x, 1.0), rtol=1e-12)
    np.testing.assert_allclose(jg.jacrev(vec, wrt=(0, 1), jit=False)(x, 0.7)[1], both[1])


def test_jacobian_of_tuple_outputs_nests_outputs_outer():
    x = np.array([0.3, -0.2, 0.5])
    jf = jg.jacfwd(two_out, wrt=(0, 1), jit=False)(x, 0.7)
    jr = jg.jacrev(two_out, wrt=(0, 1), jit=False)(x, 0.7)
    assert jf[0][0].shape == (3,) and jf[0][1].shape == () and jf[1][0].shape == (3, 3)
    for a, b in zip(jf, jr, strict=True):
        for p, q in zip(a, b, strict=True):
            np.testing.assert_allclose(p, q, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(jf[1][0], 0.7 * np.eye(3))


def test_jit_jacfwd_matches_nojit():
    x = np.array([0.3, -0.2, 0.5, 1.1])
    np.testing.assert_allclose(jg.jacfwd(vec)(x, 0.7), jg.jacfwd(vec, jit=False)(x, 0.7),
                               rtol=1e-12)


def test_source_shows_tangent_variables():
    src = jg.differentiate(poly).source(np.ones(3), 0.5, mode="jvp")
    assert "def poly_jvp" in src and "s_dot = _t_dot + _t2_dot" in src and "_tape" not in src
    with pytest.raises(ValueError, match="mode"):
        jg.differentiate(poly).source(np.ones(3), 0.5, mode="fwd")
    stage = jg.differentiate(poly).source(np.ones(3), 0.5, mode="jvp", stage="analyse")
    assert "# active" in stage


def test_source_mode_hvp_is_what_hvp_runs():
    """``mode="hvp"``: the tangent-only forward mode of the gradient code, the function
    ``jg.hvp`` calls (no value returned: the gradient's own accumulations are gone)."""
    d = jg.differentiate(poly)
    src = d.source(np.ones(3), 0.5, mode="hvp")
    assert "def poly_g_" in src and "_tangent_" in src.splitlines()[0]
    assert "dx_dot" in src and "return (None, " in src and "dx[" not in src
    with pytest.raises(ValueError, match="stage"):
        d.source(np.ones(3), 0.5, mode="hvp", stage="analyse")
    out = subprocess.run([sys.executable, "-m", "jitgrad", "show", f"{__file__}:poly",
                          "--mode", "hvp", "--args", "np.ones(3), 0.5", "--no-color"],
                         capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert "forward over reverse" in out.stdout and "dx_dot" in out.stdout


def test_cli_show_mode_jvp():
    out = subprocess.run([sys.executable, "-m", "jitgrad", "show", f"{__file__}:poly",
                          "--mode", "jvp", "--args", "np.ones(3), 0.5", "--no-color"],
                         capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert "x_dot" in out.stdout and "s_dot" in out.stdout


def test_forward_passes_doctests():
    """Forward mode's pass docstrings show what each pass produces (as test_passes does)."""
    import doctest

    from jitgrad.transpiler import forward_pipeline as FP

    for p in FP.JVP:
        if p.run.__module__ != FP.__name__:
            continue  # a pass of the reverse pipeline's (its example runs in test_passes)
        for t in doctest.DocTestFinder().find(p.run, globs={**vars(FP), "np": np}):
            assert t.examples, p.name
            r = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE).run(t)
            assert r.failed == 0, p.name


# --- markers and refusals -------------------------------------------------------------


def hooked(x):
    y = jg.hook(lambda_neg, x * x)
    return jg.nobacksies("no reverse here", y) * 2.0


def lambda_neg(g):
    return -g


def checkpointed(x):
    return jg.checkpoint(_inner_sq, x) + x


def _inner_sq(x):
    return x * x * x


def test_hook_nobacksies_checkpoint_are_identities():
    _, t = jg.jvp(hooked, (0.7,), 1.0, jit=False)
    assert t == pytest.approx(4 * 0.7)
    _, t = jg.jvp(checkpointed, (0.7,), 1.0, jit=False)
    assert t == pytest.approx(3 * 0.49 + 1)


def unknown_primitive(x):
    return np.sum(np.diagonal(np.outer(x, x)))


def test_unsupported_primitive_raises_located_error():
    with pytest.raises(jg.TransformError) as e:
        jg.jvp(unknown_primitive, (np.ones(3),), np.ones(3), jit=False)
    msg = str(e.value)
    assert "test_forward.py" in msg and "np.diagonal" in msg


def sorted_sum(x):
    return np.sum(np.sort(x) * x)


def test_sort_tangent_compiled():
    x = np.array([0.3, -0.2, 0.5, 0.1])
    check_jvp(sorted_sum, [x], 0, jit=True)


def keepdims_sum(A):
    return np.sum(np.sum(A, axis=1, keepdims=True) * A)


def test_numpy_options_numba_lacks_compile():
    """``axis=``/``keepdims=`` spelled calls run the rule's forward code under jit=True."""
    check_jvp(keepdims_sum, [np.arange(6.0).reshape(2, 3)], 0, jit=True)


def test_float32_tangent_keeps_dtype():
    x = np.linspace(-1, 1, 4).astype(np.float32)
    v, t = jg.jvp(vec, (x, 0.5), np.ones(4), jit=False)
    assert t.dtype == np.float32


@pytest.mark.parametrize("name", ["heat", "lorenz", "pairwise", "rosenbrock"])
def test_benchmark_hand_tangents_agree_with_jvp(name):
    """``benchmarks/forward.py`` compares jitgrad's jvp with each workload's hand-written
    tangent: both agree, and the directional derivative matches central differences."""
    from gradcheck import benchmark_workloads

    w = benchmark_workloads()[name]
    rng = np.random.default_rng(1)
    args = w.args("verify")
    vs = tuple(rng.standard_normal(np.shape(args[k])) if np.ndim(args[k]) else 0.7
               for k in w.wrt)
    value, tan = jg.jvp(w.primal, args, vs, wrt=tuple(w.wrt))
    hv, ht = w.tangent(*args, *vs)
    assert hv == pytest.approx(value, rel=1e-12) and ht == pytest.approx(tan, rel=1e-9)
    eps = 1e-6

    def at(sign):
        a = list(args)
        for k, v in zip(w.wrt, vs, strict=True):
            a[k] = args[k] + sign * eps * v
        return w.primal(*a)

    assert tan == pytest.approx((at(1.0) - at(-1.0)) / (2 * eps), rel=1e-5, abs=1e-6)


def inverse_distances(p, c):
    s = 0.0
    for i in range(p.shape[0]):
        for j in range(i + 1, p.shape[0]):
            r2 = (p[i] - p[j]) ** 2 + c
            s += 1.0 / np.sqrt(r2) + c / math.sqrt(r2 + 1.0)
    return s


def inverse_sqrt_rebound(x, c):
    s = 0.0
    for i in range(x.shape[0]):
        u = x[i] * x[i] + c
        r = math.sqrt(u)
        u = u * 3.0  # u changes after r: the fused tangent must not read it
        s += 2.0 / r + u
    return s


def inverse_sqrt_shared(x, c):
    s = 0.0
    for i in range(x.shape[0]):
        u = x[i] * x[i] + c
        r = np.sqrt(u)
        s += 1.5 / r + r * c  # r has another use: its own adjoint still flows
    return s


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("f", [inverse_distances, inverse_sqrt_rebound, inverse_sqrt_shared])
def test_reciprocal_sqrt_adjoint(f, jit):
    """Reverse mode shares the fused derivative (``modes/fused.py``): ``du += -0.5 c dt /
    (r u)``, one division where the chain rule through ``dr`` takes two."""
    x = np.linspace(0.2, 1.4, 6)
    check_grad(f, (x, 0.3), (0, 1), jit)
    src = jg.differentiate(f, wrt=(0, 1)).source(x, 0.3, stage="adjoint")
    if f is inverse_sqrt_rebound:
        assert "-0.5 *" not in src
    else:
        assert re.search(r"guard\(_dt\w*, -0\.(5|75) \* _dt\w* / \(\w+ \* \w+\)\)", src), src


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("f", [inverse_distances, inverse_sqrt_rebound])
def test_reciprocal_sqrt_tangent(f, jit):
    """``c / sqrt(u)`` has the fused tangent ``-0.5 u_dot t / u`` (``t^3`` for c = 1): one
    division fewer per pair; it applies only where u still holds its value."""
    x = np.linspace(0.2, 1.4, 6)
    check_jvp(f, (x, 0.3), (0, 1), jit)
    src = jg.differentiate(f, wrt=(0, 1)).source(x, 0.3, mode="jvp")
    if f is inverse_distances:
        assert "-0.5 * " in src and "* _t" in src
    else:
        assert "-0.5 *" not in src
