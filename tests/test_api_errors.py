"""Soundness at the API level: inputs never written, what was passed is what is
differentiated, clear refusals up front, and IEEE semantics at singularities.

Every behaviour is checked with ``jit=True`` and ``jit=False`` (the ``jit`` fixture).
"""

import functools
import math
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numba
import numpy as np
import pytest

import jitgrad as jg
from jitgrad import cli

REPO = Path(__file__).resolve().parents[1]

# --- 1. no gradient entry point writes into the caller's arrays --------------------------


def writes_arg(x):
    for i in range(len(x)):
        x[i] = x[i] * x[i]
    return x.sum()


def writes_arg_vec(x, c):
    for i in range(len(x)):
        x[i] = c * x[i] * x[i]
    return x


def test_no_entry_point_writes_its_inputs(jit):
    x0 = np.array([1.0, 2.0, 3.0])
    x = x0.copy()
    d = jg.differentiate(writes_arg, jit=jit)
    np.testing.assert_allclose(d.grad(x), 2 * x0)
    v, g = d.value_and_grad(x)
    assert np.isclose(v, 14.0)
    np.testing.assert_allclose(g, 2 * x0)
    v, pb = d.vjp(x)
    assert np.isclose(v, 14.0)
    np.testing.assert_allclose(pb(1.0), 2 * x0)
    np.testing.assert_allclose(pb(2.0), 4 * x0)  # the pullback reruns on its own copies
    v, pb = jg.vjp(writes_arg, x, jit=jit)
    assert np.isclose(v, 14.0)
    np.testing.assert_allclose(pb(1.0), 2 * x0)
    np.testing.assert_allclose(jg.grad(writes_arg, jit=jit)(x), 2 * x0)
    np.testing.assert_allclose(jg.value_and_grad(writes_arg, jit=jit)(x)[1], 2 * x0)
    np.testing.assert_array_equal(x, x0)


def test_vjp_of_an_array_output_written_in_place(jit):
    x0 = np.array([1.0, -2.0, 3.0])
    x = x0.copy()
    dy = np.array([1.0, 0.5, -1.0])
    dy0 = dy.copy()
    v, pb = jg.vjp(writes_arg_vec, x, 0.5, wrt=(0, 1), jit=jit)
    np.testing.assert_allclose(v, 0.5 * x0 * x0)
    gx, gc = pb(dy)
    np.testing.assert_allclose(gx, dy * x0)
    assert np.isclose(gc, np.sum(dy * x0 * x0))
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(dy, dy0)


def test_bridge_does_not_write_tracked_data(jit):
    x0 = np.array([1.0, 2.0, 3.0])
    W = jg.param(x0)
    d = jg.differentiate(writes_arg, jit=jit)
    gs = jg.gradient(lambda: d(W) * 2.0, jg.Params([W]))
    np.testing.assert_allclose(gs[W], 4 * x0)
    np.testing.assert_array_equal(jg.data(W), x0)
    assert np.isclose(jg.data(d(W)), 14.0)


def test_calling_the_primal_behaves_like_the_users_function(jit):
    x = np.array([1.0, 2.0, 3.0])
    assert np.isclose(jg.differentiate(writes_arg, jit=jit)(x), 14.0)
    np.testing.assert_array_equal(x, [1.0, 4.0, 9.0])  # as writes_arg(x) does


# --- 2. functools.wraps: the wrapper passed is differentiated, never __wrapped__ ------------


def square(x):
    return x * x


def doubled(fn):
    @functools.wraps(fn)
    def wrapper(x):
        return 2.0 * fn(x)
    return wrapper


def passthrough(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    return wrapper


def test_wraps_decorator_is_differentiated_as_itself(jit):
    w = doubled(square)
    assert w.__wrapped__ is square and w.__name__ == "square"
    d = jg.differentiate(w, jit=jit)
    assert d(3.0) == 18.0
    assert np.isclose(d.grad(3.0), 12.0)  # d/dx 2 x^2, not d/dx x^2
    v, g = jg.value_and_grad(w, jit=jit)(3.0)
    assert np.isclose(v, 18.0) and np.isclose(g, 12.0)
    assert d.source(3.0).startswith("def wrapper_grad")  # the wrapper's source was read


def test_generic_wrapper_is_refused_not_unwrapped(jit):
    with pytest.raises(jg.TransformError, match="functools.wraps around 'square'") as info:
        jg.grad(passthrough(square), jit=jit)(3.0)
    err = info.value
    assert err.filename.endswith("test_api_errors.py") and "def wrapper" in err.source_line
    assert "undecorated" in err.hint


# --- 3. a function without a return value is refused ------------------------------------


def no_return(x, out):
    out[0] = x * x


def returns_none(x):
    if x > 0:
        return None
    return


def test_no_return_is_refused(jit):
    for f, args in [(no_return, (2.0, np.zeros(1))), (returns_none, (2.0,))]:
        with pytest.raises(jg.TransformError, match="returns no value") as info:
            jg.value_and_grad(f, jit=jit)(*args)
        err = info.value
        assert err.filename.endswith("test_api_errors.py") and err.lineno > 1
        assert f"def {f.__name__}" in err.source_line and "return" in err.hint


def test_helpers_without_return_still_inline(jit):
    import corpus_loops as L

    x = np.linspace(-1, 1, 4)
    g = jg.grad(L.call_helper_fills_array, wrt=(0, 1), jit=jit)(x, 0.7)
    assert len(g) == 2


# --- 4. CUDA kernels are refused (no GPU needed: checked by type) --------------------------

_CUDA_SCRIPT = textwrap.dedent("""
    import sys
    from numba import cuda
    import jitgrad as jg

    @cuda.jit
    def kernel(x, out):
        i = cuda.grid(1)
        if i < x.shape[0]:
            out[i] = x[i] * x[i]

    @cuda.jit(device=True)
    def device_fn(x):
        return x * x

    for f in (kernel, device_fn):
        for jit in (True, False):
            try:
                jg.differentiate(f, jit=jit)
            except jg.TransformError as e:
                assert "CUDA" in str(e) and "hint:" in str(e), str(e)
            else:
                sys.exit("not refused: " + repr(f))
        try:
            jg.grad(f)
        except jg.TransformError:
            pass
        else:
            sys.exit("jg.grad did not refuse " + repr(f))
    print("refused")
""")


@pytest.mark.parametrize("sim", ["1", "0"], ids=["cudasim", "cuda-dispatcher"])
def test_cuda_kernels_are_refused(tmp_path, sim):
    script = tmp_path / "kernels.py"
    script.write_text(_CUDA_SCRIPT)
    env = dict(os.environ, PYTHONPATH=str(REPO), NUMBA_ENABLE_CUDASIM=sim)
    r = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True,
                       timeout=300)
    if sim == "0" and r.returncode != 0 and "cuda" in r.stderr.lower() \
            and "not refused" not in r.stderr and "did not refuse" not in r.stderr:
        pytest.skip(f"numba.cuda.jit unusable here: {r.stderr.strip().splitlines()[-1]}")
    assert r.returncode == 0 and "refused" in r.stdout, r.stdout + r.stderr


# --- 5. complex, float16 and 0-d array arguments: a clear error up front ------------------


def real_part(z):
    return (z * np.conj(z)).real


def sum_sq(x):
    return np.sum(x * x)


def scaled_sum(x, c):
    return np.sum(x * x) * c.real.sum()


@pytest.mark.parametrize("args,f,match", [
    ((1.0 + 2.0j,), real_part, "complex"),
    ((np.array([1.0 + 2.0j, 0.5j]),), real_part, "complex"),
    ((np.complex64(1.0 + 1j),), real_part, "complex"),
    ((np.ones(3), np.ones(2, complex)), scaled_sum, "argument 1 .* is complex"),
    ((np.ones(3, np.float16),), sum_sq, "float16.*float32"),
    ((np.float16(1.5),), sum_sq, "float16"),
    ((np.array(2.0),), sum_sq, "0-d array"),
], ids=["complex-scalar", "complex-array", "complex64", "complex-non-wrt", "float16-array",
        "float16-scalar", "0d-array"])
def test_unsupported_argument_types_refused(args, f, match, jit):
    d = jg.differentiate(f, jit=jit)
    for entry in (d.grad, d.value_and_grad, d.vjp, jg.grad(f, jit=jit)):
        with pytest.raises(TypeError, match=match):
            entry(*args)


# --- 6. parameters, lambdas, and the CLI's arguments -----------------------------------------


def with_kwargs(x, **kwargs):
    return x * x


def with_kwonly(x, *, k):
    return x * k


def with_varargs(x, *rest):
    return x * x


@pytest.mark.parametrize("f,match", [(with_kwargs, r"\*\*kwargs"),
                                     (with_kwonly, "keyword-only"),
                                     (with_varargs, r"\*args")])
def test_parameters_refused_by_fence(f, match, jit):
    d = jg.differentiate(f, jit=jit)  # construction never raises for unsupported source
    for call in (lambda: d.grad(2.0), lambda: d.value_and_grad(2.0), lambda: d.vjp(2.0)):
        with pytest.raises(jg.TransformError, match=match) as info:
            call()
        err = info.value
        assert err.filename.endswith("test_api_errors.py")
        assert f"def {f.__name__}" in err.source_line and err.hint


def test_lambda_in_a_multiline_expression(jit):
    d = jg.differentiate(
        lambda x: x * x, jit=jit)
    with pytest.raises(jg.TransformError, match="lambdas cannot be differentiated; use def") \
            as info:
        d.grad(3.0)
    assert info.value.filename.endswith("test_api_errors.py")
    assert "lambda x" in info.value.source_line
    with pytest.raises(jg.TransformError, match="use def"):
        jg.grad(lambda x: x * 2.0, jit=jit)(1.0)


def test_non_function_targets_say_what_they_are():
    with pytest.raises(TypeError, match=r"numpy\.sum \(a numpy\._ArrayFunctionDispatcher\)"):
        jg.grad(np.sum)
    with pytest.raises(TypeError, match=r"math\.sin .*built-in"):
        jg.differentiate(math.sin)


def test_cli_rejects_bad_tolerances(tmp_path, capsys):
    (tmp_path / "t.py").write_text("def f(x):\n    return x * x\n")
    target = f"{tmp_path / 't.py'}:f"
    for bad in ("-1", "nan", "inf", "abc"):
        with pytest.raises(SystemExit) as info:
            cli.main(["check", target, "--args", "1.0", "--rtol", bad])
        assert info.value.code == 2
        assert "--rtol" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["check", target, "--args", "1.0", "--atol", "-1e-3"])
    assert "--atol" in capsys.readouterr().err
    assert cli.main(["check", target, "--args", "1.0", "--rtol", "0", "--atol", "1e-6"]) == 0


def test_cli_library_function_target(capsys):
    for argv in (["check", "numpy:sum", "--args", "(np.ones(3),)"], ["show", "numpy:sum"],
                 ["check", "numpy:sum", "--args", "(np.ones(3),)", "--wrt", "0"]):
        assert cli.main(argv) == 2
        err = capsys.readouterr().err
        assert "numpy.sum (a numpy._ArrayFunctionDispatcher) is not" in err, err
        assert "expected a Python function" not in err and "--wrt" not in err


# --- 7. IEEE semantics at derivative singularities, the same in both modes ----------------


def f_sqrt(x):
    return math.sqrt(x)


def f_log(x):
    return math.log(x)


def f_norm(x):
    return np.linalg.norm(x)


def f_norm_loop(x):
    s = 0.0
    for i in range(len(x)):
        s += x[i] * x[i]
    return math.sqrt(s)


def f_div(x, y):
    return x / y


def f_pow(x):
    return x ** 0.5


@pytest.mark.parametrize("f,args,wrt,value,grads", [
    (f_sqrt, (0.0,), 0, 0.0, np.inf),
    (f_log, (0.0,), 0, -np.inf, np.inf),
    (f_pow, (0.0,), 0, 0.0, np.inf),
    (f_div, (1.0, 0.0), (0, 1), np.inf, (np.inf, -np.inf)),
    (f_div, (0.0, 0.0), (0, 1), np.nan, (np.inf, np.nan)),
    (f_norm, (np.zeros(3),), 0, 0.0, np.zeros(3)),  # the norm rule: 0, a subgradient
    (f_norm_loop, (np.zeros(3),), 0, 0.0, np.full(3, np.nan)),  # 0.5/sqrt(0) * 2x: inf*0
], ids=["sqrt", "log", "pow", "div", "div00", "norm", "norm-loop"])
def test_ieee_semantics_at_singularities(f, args, wrt, value, grads, jit):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no exception and no warning from generated code
        v, g = jg.value_and_grad(f, wrt=wrt, jit=jit)(*args)
        g_only = jg.grad(f, wrt=wrt, jit=jit)(*args)
    np.testing.assert_equal(v, value)
    np.testing.assert_equal(g, grads)
    np.testing.assert_equal(g_only, grads)


def test_ieee_with_numpy_and_python_scalars(jit):
    for x in (0.0, np.float64(0.0)):
        assert jg.grad(f_sqrt, jit=jit)(x) == np.inf
    assert jg.grad(f_sqrt, jit=jit)(np.float32(0.0)) == np.inf
    assert np.isclose(jg.grad(f_sqrt, jit=jit)(4.0), 0.25)  # regular points unchanged


# --- messages that blame the user's line (issue 33, item 7) -------------------------------


def _line_of(f, text: str) -> int:
    """The file line of ``f``'s source holding ``text``."""
    import inspect

    lines, first = inspect.getsourcelines(f)
    return first + next(k for k, ln in enumerate(lines) if text in ln)


def _sq(x):
    return np.sum(x * x * x)


_grad_sq = jg.grad(_sq, jit=False)
_vg_sq = jg.value_and_grad(_sq, jit=False)
_d_sq = jg.differentiate(_sq, jit=False)


def nested_grad(x):
    y = 0.0
    for i in range(2):
        y = y + _grad_sq(x)[i]
    return y


def nested_value_and_grad(x):
    v, g = _vg_sq(x)
    return v + np.sum(g)


def nested_method(x):
    y = 0.0
    y = y + np.sum(_d_sq.grad(x))
    return y


def nested_vjp(x):
    v, pullback = jg.vjp(_sq, x)
    return pullback(1.0)


def calls_the_object(x):
    y = 0.5 * _d_sq(x)
    return y + np.sum(x)


@pytest.mark.parametrize("f, grad, hess", [
    (nested_grad, lambda x: np.array([6.0 * x[0], 6.0 * x[1], 0.0]),
     lambda x: np.diag([6.0, 6.0, 0.0])),
    (nested_value_and_grad, lambda x: 3.0 * x ** 2 + 6.0 * x, lambda x: np.diag(6.0 * x + 6.0)),
    (nested_method, lambda x: 6.0 * x, lambda x: 6.0 * np.eye(3)),
], ids=["grad", "value_and_grad", "method"])
def test_nested_gradient_is_differentiated_again(f, grad, hess, jit):
    """A jg.grad / jg.value_and_grad result or a .grad method called inside: its gradient
    code inlined and differentiated again (tests/test_nested.py), in every entry point."""
    x = np.array([0.5, 1.0, 1.5])
    v, g = jg.value_and_grad(f, jit=jit)(x)
    assert np.isclose(v, f(x), rtol=1e-12)
    np.testing.assert_allclose(g, grad(x), rtol=1e-12)
    v, t = jg.jvp(f, (x,), x, jit=jit)
    assert np.isclose(v, f(x), rtol=1e-12) and np.isclose(t, grad(x) @ x, rtol=1e-12)
    np.testing.assert_allclose(jg.hvp(f, (x,), x, jit=jit), hess(x) @ x, rtol=1e-12)


def test_nested_vjp_is_refused_at_its_call(jit):
    """Not at 'y = 0.0' ("cannot tell whether 'y' is a number or an array"): at the call,
    naming the called object, in every entry point (a nested jvp is differentiated:
    tests/test_nested_forward.py)."""
    x = np.array([0.5, 1.0, 1.5])
    f, what = nested_vjp, "'jg.vjp' is jitgrad's vjp"
    for run in (lambda: jg.grad(f, jit=jit)(x), lambda: jg.jvp(f, (x,), x, jit=jit),
                lambda: jg.hvp(f, (x,), x, jit=jit)):
        with pytest.raises(jg.TransformError, match="nested differentiation") as info:
            run()
        e = info.value
        assert what in e.msg
        assert e.filename == __file__ and e.lineno == _line_of(f, "jg.vjp(")
        assert "pass it in" in e.hint and "jg.grad(fc)" in e.hint


def test_a_differentiate_object_called_inside_is_its_function(jit):
    """``d(x)`` inside differentiated code is the user's function: inlined, value and
    gradient right."""
    x = np.array([0.5, -1.0, 1.5])
    v, g = jg.value_and_grad(calls_the_object, jit=jit)(x)
    assert np.isclose(v, 0.5 * np.sum(x ** 3) + np.sum(x), rtol=1e-12)
    np.testing.assert_allclose(g, 1.5 * x ** 2 + 1.0, rtol=1e-12)


def concat_reshape(x):
    y = np.concatenate((x, x * x)).reshape(2, -1)
    return np.sum(y * y)


def concat_axis1(x):
    m = x.reshape(2, 3)
    y = np.concatenate((m, np.sin(m), m * m), axis=1)
    return np.sum(y * y * y)


def stacked(x):
    y = np.stack((x, np.cos(x)), axis=1)
    z = np.hstack((x, x * x))
    w = np.vstack((x, np.exp(x)))
    return np.sum(y * y) * np.sum(z ** 3) + np.sum(w * w)


@pytest.mark.parametrize("f", [concat_reshape, concat_axis1, stacked])
def test_hvp_through_concatenate_and_stack(f, jit):
    """The gradient code's ``split_like`` pieces have kinds and a tangent: hvp and hessian
    of concatenate/stack work (they were refused at a generated line); checked against
    central differences of the gradient, the value against the function."""
    x = np.array([0.5, 1.0, 1.5, -0.3, 0.7, 1.2])
    v = np.array([0.3, -0.7, 1.1, 0.2, 0.5, -0.4])
    eps = 1e-5
    g = jg.grad(f, jit=jit)
    fd = (g(x + eps * v) - g(x - eps * v)) / (2 * eps)
    np.testing.assert_allclose(g(x), _fd_grad(f, x), rtol=1e-6, atol=1e-6)
    scale = max(1.0, float(np.max(np.abs(fd))))
    hv = jg.hvp(f, (x,), (v,), jit=jit)  # (a 1-tuple of tangents, as JAX spells it)
    np.testing.assert_allclose(hv, fd, rtol=1e-6, atol=1e-6 * scale)
    np.testing.assert_allclose(jg.hessian(f, jit=jit)(x) @ v, hv, rtol=1e-10, atol=1e-10)
    value, _ = jg.value_and_grad(f, jit=jit)(x)
    assert np.isclose(value, f(x.copy()), rtol=1e-12)


def _fd_grad(f, x, eps=1e-6):
    return np.array([(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in np.eye(len(x))])


@jg.differentiate(wrt=(0, 1), jit=False)
def cubic_pair(x, a):
    return np.sum(x * x * x) * a * a


def test_tangents_follow_the_objects_wrt(jit):
    """``jg.hvp(d, primals, (v, 1.0))`` on a ``wrt=(0, 1)`` object: one tangent per wrt
    argument (NumPy's "inhomogeneous shape" error before); so for every transform."""
    d = jg.differentiate(cubic_pair._orig, wrt=(0, 1), jit=jit)
    x, a, v, w = np.array([0.5, -1.0, 1.5]), 2.0, np.array([0.3, -0.7, 1.1]), 0.4
    hx = 6 * x * a * a * v + 6 * a * x * x * w  # H @ (v, w), closed form
    ha = np.sum(6 * a * x * x * v) + 2 * np.sum(x ** 3) * w
    for obj in (d, cubic_pair):
        got = jg.hvp(obj, (x, a), (v, w), jit=jit)
        np.testing.assert_allclose(got[0], hx, rtol=1e-12)
        assert np.isclose(got[1], ha, rtol=1e-12)
    value, t = jg.jvp(d, (x, a), (v, w), jit=jit)
    assert np.isclose(value, np.sum(x ** 3) * a * a, rtol=1e-12)
    assert np.isclose(t, np.sum(3 * x * x * a * a * v) + 2 * a * np.sum(x ** 3) * w)
    gx, ga = jg.grad(d, jit=jit)(x, a)
    np.testing.assert_allclose(gx, 3 * x * x * a * a, rtol=1e-12)
    assert np.isclose(ga, 2 * a * np.sum(x ** 3), rtol=1e-12)
    h = jg.hessian(d, jit=jit)(x, a)
    np.testing.assert_allclose(h[0][0] @ v + h[0][1] * w, hx, rtol=1e-12)
    # an explicit wrt still wins
    np.testing.assert_allclose(jg.hvp(d, (x, a), v, wrt=0, jit=jit), 6 * x * a * a * v,
                               rtol=1e-12)


@pytest.mark.parametrize("tangents, match", [
    (np.ones(3), r"wrt=\(0, 1\) is a tuple, so tangents must be a tuple of 2 "
                 r"\(wrt=\(0, 1\): 'x', 'a'\)"),
    ((np.ones(3),), r"1 tangents for 2 wrt arguments \(wrt=\(0, 1\): 'x', 'a'\)"),
    ((np.ones(2), 1.0), r"argument 0 \('x'\): tangent has shape \(2,\), the primal has "
                        r"shape \(3,\)"),
    ((np.ones(3), np.ones(3)), r"argument 1 \('a'\): the primal is a scalar, the tangent "
                               r"is an array of shape \(3,\)"),
])
def test_wrong_tangents_say_what_is_expected(tangents, match, jit):
    d = jg.differentiate(cubic_pair._orig, wrt=(0, 1), jit=jit)
    x = np.array([0.5, -1.0, 1.5])
    for run in (jg.hvp, jg.jvp):
        with pytest.raises(ValueError, match=match):
            run(d, (x, 2.0), tangents, jit=jit)
    single = jg.differentiate(cubic_pair._orig, wrt=0, jit=jit)
    with pytest.raises(ValueError, match=r"hvp of cubic_pair, argument 0 \('x'\): the "
                                         r"tangent is a tuple that is not an array"):
        jg.hvp(single, (x, 2.0), (np.ones(3), 1.0), jit=jit)


@numba.njit
def _weigh(x):
    return np.sum(x) * np.median(x)


def _weigh_rule(x):
    m = np.median(x)

    def back(dy):
        return (dy * m + 0.0 * x,)

    return np.sum(x) * m, back


def uses_weigh(x):
    y = x * x
    return _weigh(y) + np.sum(y)


def test_hvp_refusal_names_the_users_line(scratch_rules, jit):
    """Forward mode refusing the gradient code (a rule's pullback calls ``np.median``, which
    has no rule) names the user's line whose gradient code it is, not ``<jitgrad:...>``."""
    jg.grad_rule(_weigh, ndim_of=lambda nd: 0, float_result=True)(_weigh_rule)
    x = np.array([0.5, 1.0, 1.5])
    with pytest.raises(jg.TransformError, match="gradient code of this line") as info:
        jg.hvp(uses_weigh, (x,), x, jit=jit)
    e = info.value
    assert e.filename == __file__ and e.lineno == _line_of(uses_weigh, "return _weigh(y)")
    assert "np.median" in e.msg and "_weigh(y)" in e.source_line
    with pytest.raises(jg.TransformError, match="gradient code of this line") as info:
        jg.differentiate(uses_weigh, jit=jit).source(x, mode="hvp")
    assert info.value.filename == __file__
