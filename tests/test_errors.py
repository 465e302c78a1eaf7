"""Clear refusals: unsupported syntax and bad use raise errors that say where and what to do."""

import corpus_bad as B
import numpy as np
import pytest

import jitgrad as jg

REFUSED = [
    (B.uses_try, (1.0,), "try"), (B.uses_with, (1.0,), "with"), (B.uses_yield, (1.0,), "yield"),
    (B.uses_global, (1.0,), "global"), (B.uses_class, (1.0,), "class"),
    (B.uses_lambda, (1.0,), "lambda"), (B.uses_varargs, (1.0,), r"\*args"),
    (B.uses_star_unpack, (1.0, 2.0), "star"), (B.uses_listcomp, (np.ones(3),), "comprehension"),
    (B.uses_dict, (1.0,), "dict"), (B.uses_nested_def, (1.0,), "nested function"),
    (B.uses_while_else, (3.0,), "else"),
    (B.uses_recursion, (1.0, 2), "recursion"), (B.uses_alias_write, (np.ones(3),), "view of 'y'"),
    (B.uses_unknown_function, (np.ones(3),), "no gradient rule"),
    (B.uses_nonlocal_walrus, (1.0,), ":="),
    (B.uses_view_write, (np.ones(3),), "view"),
    (B.uses_list_of_values, (0.7,), "lists and tuples"),
    (B.uses_alias_then_rebind, (np.ones(3),), "view of 'y'"),
]


@pytest.mark.parametrize("f,args,what", REFUSED, ids=[r[0].__name__ for r in REFUSED])
def test_refused_with_location(f, args, what):
    with pytest.raises(jg.TransformError, match=what) as info:
        jg.differentiate(f, jit=False).grad(*args)
    err = info.value
    assert err.filename.endswith("corpus_bad.py")
    assert err.lineno is not None and err.lineno > 1
    assert err.source_line.strip()
    assert "hint:" in str(err) or err.hint == ""


def test_refusals_count():
    assert len(REFUSED) >= 10


def test_non_scalar_output_to_grad():
    def f(x):
        return x * 2.0

    d = jg.differentiate(B.uses_try)  # unrelated: construction never raises
    assert d is not None
    import corpus_straight as C

    with pytest.raises(ValueError, match="scalar output"):
        jg.grad(C.numpy_arrays_vec, jit=False)(np.ones(3), np.ones(3)) \
            if hasattr(C, "numpy_arrays_vec") else jg.grad(_vec_out, jit=False)(np.ones(3))


def _vec_out(x):
    return x * 2.0


def test_wrt_errors():
    import corpus_straight as C

    with pytest.raises(ValueError, match="has 2 parameters"):
        jg.differentiate(C.arith, wrt=5)
    with pytest.raises(ValueError, match="no parameter named"):
        jg.differentiate(C.arith, wrt="z")
    with pytest.raises(TypeError, match="wrt must be"):
        jg.differentiate(C.arith, wrt=1.5)
    with pytest.raises(TypeError, match="integer"):
        jg.differentiate(C.arith, wrt=1, jit=False).grad(1.0, 2)


def test_arity_error():
    import corpus_straight as C

    with pytest.raises(TypeError, match="takes 2 positional arguments"):
        jg.differentiate(C.arith).grad(1.0)
    with pytest.raises(TypeError, match="takes 2 positional arguments"):
        jg.differentiate(C.arith)(1.0, 2.0, 3.0)


def _array_of_array(x):
    return np.sum(np.array(x) * x)


def test_numba_failure_is_jit_error():
    # Numba's np.array does not take an array: a JitError quoting the generated line
    with pytest.raises(jg.JitError, match="jit=False") as info:
        jg.differentiate(_array_of_array).grad(np.ones(2))
    assert "generated line" in str(info.value)
    np.testing.assert_allclose(jg.grad(_array_of_array, jit=False)(np.ones(2)), [2.0, 2.0])


def test_pullback_and_vjp_of_vector_output(jit):
    d = jg.differentiate(_vec_out, jit=jit)
    v, pb = d.vjp(np.arange(3.0))
    np.testing.assert_allclose(v, 2 * np.arange(3.0))
    np.testing.assert_allclose(pb(np.ones(3)), 2 * np.ones(3))
    with pytest.raises(ValueError, match="shape"):
        pb(np.ones(4))


def test_state_survives_errors():
    import corpus_straight as C

    with pytest.raises(jg.TransformError):
        jg.grad(B.uses_try)(1.0)
    assert np.isclose(jg.grad(C.helper_sq)(3.0), 6.0)


def test_rule_registered_after_first_use_is_picked_up(tmp_path):
    import importlib.util
    import sys

    src = (
        "import numpy as np\n"
        "def cube(x):\n    return x * x * x\n"
        "def total(x):\n    s = 0.0\n    for i in range(len(x)):\n"
        "        s += cube(x[i])\n    return s\n")
    path = tmp_path / "late_rule.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("late_rule", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["late_rule"] = mod
    spec.loader.exec_module(mod)
    d = jg.differentiate(mod.total)
    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(d.grad(x), 3 * x * x)

    @jg.grad_rule(mod.cube)
    def _cube(x):
        def back(dy):
            return (dy * 100.0,)
        return x * x * x, back

    np.testing.assert_allclose(d.grad(x), [100.0, 100.0])
    np.testing.assert_allclose(d(x), 9.0)  # the primal calls the compiled primitive


def test_numba_failure_other_than_numba_error_is_a_jit_error():
    """Numba lets a few of its own failures escape as ``NotImplementedError`` and the like
    while compiling: they become a ``JitError``; what compiled code raises passes as is."""
    import numba

    from jitgrad.errors import JitError
    from jitgrad.transpiler.backend.emit import call_compiled

    def gen(x):
        return x

    class Failing:  # a dispatcher with nothing compiled whose compile step raises
        overloads: dict = {}
        py_func = gen

        def typeof_pyval(self, a):
            return numba.typeof(a)

        def __call__(self, *args):
            raise NotImplementedError("an unsupported construct inside Numba")

    with pytest.raises(JitError, match="NotImplementedError: an unsupported construct"):
        call_compiled(Failing(), "def gen(x):\n    return x\n", (1.0,))

    @numba.njit
    def raises_at_run_time(x):
        if x > 0:
            raise ValueError("shapes differ")
        return x

    raises_at_run_time(-1.0)
    with pytest.raises(ValueError, match="shapes differ"):
        call_compiled(raises_at_run_time, "", (1.0,))
