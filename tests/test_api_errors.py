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
