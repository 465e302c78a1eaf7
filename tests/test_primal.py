"""The primal is the user's function, and every entry point returns what it returns.

``d(*args)`` runs the user's own function (their ``@numba.njit`` dispatcher, else
``numba.njit(func)``, else under ``jit=False`` the plain function); ``value_and_grad``,
``vjp``, ``jg.value_and_grad``, ``jg.vjp`` and the runtime bridge return the same value,
to round-off, for the whole gradient corpus in both modes.
"""

import math

import corpus_loops as L
import corpus_runtime as RT
import corpus_straight as S
import numba
import numpy as np
import pytest
import test_numpy_transpiled as TN
import test_straightline as TS
from gradcheck import shared_diff

import jitgrad as jg

# --- the corpus: (function, args factory, wrt) --------------------------------------------

CORPUS = list(L.CASES)
CORPUS += [(f, (lambda a=args: a), (0, 1)) for f, args in TS.SCALAR_CASES]
CORPUS += [
    (S.numpy_arrays, lambda: (np.linspace(-1, 1, 5), np.linspace(0.5, 2, 5)), (0, 1)),
    (S.broadcast_scalar, lambda: (np.linspace(-1, 1, 4), 0.7), (0, 1)),
]
CORPUS += list(TN.CASES)
IDS = [f"{c[0].__module__.split('_')[-1]}.{c[0].__name__}-{k}" for k, c in enumerate(CORPUS)]

def _diff(f, wrt, jit):
    """One Differentiated per (function, wrt, mode) and process: compiled code is reused
    across cases and with the modules that check these corpora's gradients (``test_loops``,
    ``test_straightline``, ``test_numpy_transpiled``; one xdist group, conftest.py)."""
    return shared_diff(f, wrt, jit)


def _copies(args):
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


def _close(got, expected, what):
    dt = np.result_type(*(np.asarray(v).dtype for v in (got, expected)))
    rtol = 1e-5 if dt == np.float32 else 1e-10
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=1e-12, err_msg=what)


def _tracked(args):
    """Float scalars and float arrays as jg.param leaves (the bridge); the rest as is."""
    out = []
    for a in args:
        is_float = isinstance(a, float) or (isinstance(a, np.ndarray) and a.dtype.kind == "f")
        out.append(jg.param(a) if is_float else a)
    return out


def _check_entry_points(f, make, wrt, jit):
    args = make()
    before = _copies(args)
    expected = f(*_copies(args))
    d = _diff(f, wrt, jit)
    name = f.__name__

    try:
        got = d(*_copies(args))
    except jg.JitError as e:
        # Numba cannot compile the user's own function (e.g. ``x.max(axis=1)``): d(...)
        # says so; vjp and the bridge then take the value from the function as Python
        assert jit and f"could not compile {name} " in str(e)
        with pytest.raises(numba.core.errors.NumbaError):
            numba.njit(f)(*_copies(args))
    else:
        _close(got, expected, f"{name}: d(*args)")
    v, _ = d.value_and_grad(*args)
    _close(v, expected, f"{name}: value_and_grad")
    v, _ = d.vjp(*args)
    _close(v, expected, f"{name}: vjp")
    # the functional forms: with jit=True on ``d`` itself, which shares its compiled code
    fn = d if jit else f
    v, _ = jg.value_and_grad(fn, wrt=wrt, jit=jit)(*args)
    _close(v, expected, f"{name}: jg.value_and_grad")
    v, _ = jg.vjp(fn, *args, wrt=wrt, jit=jit)
    _close(v, expected, f"{name}: jg.vjp")
    out = d(*_tracked(args))  # the runtime bridge: one recorded node
    _close(jg.data(out), expected, f"{name}: bridge")

    for a, b in zip(args, before, strict=True):
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b, err_msg=f"{name}: an entry point wrote an input")


def test_corpus_size():
    assert len(CORPUS) >= 120


@pytest.mark.parametrize("case", CORPUS, ids=IDS)
def test_entry_points_return_the_users_value_nojit(case):
    _check_entry_points(*case, jit=False)


@pytest.mark.slow
@pytest.mark.parametrize("case", CORPUS, ids=IDS)
def test_entry_points_return_the_users_value_jit(case):
    _check_entry_points(*case, jit=True)


# --- the two functions of the issue -----------------------------------------------------


def fixed_point(a, x):
    c = 0.1 * np.sum(x * x)
    y = 0.0
    it = 0
    while True:
        y_new = 0.5 * math.cos(a * y) + c
        it += 1
        if abs(y_new - y) < 1e-14 or it > 400:
            y = y_new
            break
        y = y_new
    return y * a + c


def skip_negative(x, n):
    s = 0.0
    for i in range(n):
        if x[i] < 0.0:
            continue
        s += x[i] * x[i]
    return s


ISSUE = [(fixed_point, lambda: (0.7, np.array([0.3, -0.2, 0.5])), (0, 1)),
         (skip_negative, lambda: (np.array([0.3, -0.2, 0.5]), 3), 0)]


@pytest.mark.parametrize("case", ISSUE, ids=[c[0].__name__ for c in ISSUE])
def test_issue_examples(case, jit):
    f, make, wrt = case
    args = make()
    expected = f(*args)
    d = jg.differentiate(f, wrt=wrt, jit=jit)
    v, _ = d.value_and_grad(*args)
    _close(v, expected, "value_and_grad")
    if jit:
        # the primal is exactly what numba.njit makes of the user's function.  (Numba
        # 0.68 miscompiles fixed_point's `while True` loop whose `if a or b: ... break`
        # ends it: its njit result differs from Python's; jitgrad's gradient does not.)
        _close(d(*args), numba.njit(f)(*args), "d(*args) is numba.njit(f)")
    else:
        _close(d(*args), expected, "d(*args)")
    if f is skip_negative or not jit:
        _check_entry_points(f, make, wrt, jit)


# --- which function runs -------------------------------------------------------------------


def cube_plus(x):
    return x * x * x + 1.0


def test_the_users_dispatcher_runs_with_its_options():
    nf = numba.njit(fastmath=True)(cube_plus)
    d = jg.differentiate(nf)
    assert d(2.0) == 9.0
    assert d._primal_fn() is nf  # their dispatcher, options and all
    assert len(nf.signatures) == 1  # compiled by the call through d
    np.testing.assert_allclose(d.grad(2.0), 12.0)


def test_plain_function_under_jit_false_runs_as_python():
    calls = []

    def traced(x):
        calls.append(x)  # a Python side effect: Numba could not compile this
        return x * 2.0

    d = jg.differentiate(traced, jit=False)
    assert d(1.5) == 3.0 and calls == [1.5]
    nf = numba.njit(cube_plus)
    assert jg.differentiate(nf, jit=False)(2.0) == 9.0  # py_func, not the dispatcher
    assert len(nf.signatures) == 0


def uses_python_only(x):
    return np.float64(x).tolist() * 2.0  # Numba has no .tolist() of a scalar


def test_uncompilable_primal_is_a_jit_error_about_the_users_function():
    d = jg.differentiate(uses_python_only)
    with pytest.raises(jg.JitError) as info:
        d(1.5)
    msg = str(info.value)
    assert "uses_python_only" in msg and "test_primal.py" in msg
    assert "generated" not in msg and "jit=False" in msg
    assert jg.differentiate(uses_python_only, jit=False)(1.5) == 3.0


def test_primal_mutates_like_the_users_function(jit):
    x = np.array([1.0, 2.0, 3.0])
    v = jg.differentiate(L.arr_write_arg, jit=jit)(x, 0.7)
    y = np.array([1.0, 2.0, 3.0])
    assert np.isclose(v, L.arr_write_arg(y, 0.7))
    np.testing.assert_array_equal(x, y)  # d(x) writes into x exactly as f(x) does


# --- helpers: plain, njit, and user primitives with rules ----------------------------------


def _mycube(x):
    return x * x * x


@jg.grad_rule(_mycube)
def _mycube_rule(x):
    def back(dy):
        return (dy * 3.0 * x * x,)
    return x * x * x, back


@numba.njit
def _njit_helper(x):
    return 2.0 * x


def calls_helpers(x):
    s = 0.0
    for i in range(len(x)):
        s += _mycube(x[i]) + L.h_square(x[i]) + _njit_helper(x[i]) + L.h_nested(x[i])
    return s


def test_helpers_and_rule_primitives_in_the_primal(jit):
    x = np.array([0.5, -1.0, 2.0])
    d = jg.differentiate(calls_helpers, jit=jit)
    _close(d(x), calls_helpers(x), "primal")
    v, g = d.value_and_grad(x)
    _close(v, calls_helpers(x), "value")
    np.testing.assert_allclose(g, 3 * x * x + 2 * x + 2.0 + 2 * x + 2 * (x + 1.0))
    assert not isinstance(L.h_square, numba.core.registry.CPUDispatcher)  # module untouched


def test_hooks_checkpoint_in_the_primal(jit):
    for f, args in [(RT.with_hook, (0.7, 1.3)), (RT.checkpointed_loop, (0.3, 5, 4)),
                    (RT.with_nobacksies_inactive, (0.7, 1.3)),
                    (RT.checkpoint_arrays, (np.linspace(-1, 1, 4), 0.7))]:
        _close(jg.differentiate(f, jit=jit)(*args), f(*args), f.__name__)
