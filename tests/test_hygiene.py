"""No variable name may change an answer: the user's names are never captured by a name
jitgrad generates or a template's placeholder (the binomial driver's ``N``, ``K``, ``J``,
``M``, ``A``...), and generated code reaches numpy and math however the user names them.

Every case is a module written with one name substituted in, checked (value and every
gradient element) against the plain function and central differences, in both modes.
The property version over every corpus function and fuzz program is test_hygiene_rename.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad, function_from_source

#: template and driver names of the binomial schedule, and the names of generated code
CAPITALS = ["J", "K", "M", "A", "N", "T", "S", "D", "E", "L", "POS", "TOP", "END", "LIVE",
            "SLOTS", "STORE", "LOAD", "PLAIN", "TAPED", "INDEX", "TRIPS", "COUNT", "SNAPS",
            "SPLIT", "RESERVE"]
GENERATED = ["_dret", "_ws", "_t", "_t3", "_dt", "_dt4", "_tape_x", "_tape_J_1", "_j", "_i",
             "_n", "_m", "_a", "_top", "_at", "_end", "_live", "_steps", "_slots", "_start",
             "_stride", "_snapshots", "_snaps_J", "_seed", "_ret", "_value", "_flag", "_r21",
             "dx", "da", "x_dot", "trip_count", "tape_reserve", "revolve_split",
             "snapshot_count", "unbroadcast", "restore_into", "helpers"]

#: the names also checked compiled (the generated text is the same in both modes: the
#: compiled run checks that Numba accepts it)
COMPILED = {"J", "K", "M", "A", "N", "POS", "_dret", "_ws", "_j", "_t3", "dx", "trip_count"}


def _modes(names: list[str]) -> list:
    """(name, jit) pairs: every name uncompiled, those of ``COMPILED`` compiled too."""
    return [pytest.param(n, jit, id=f"{'jit' if jit else 'nojit'}-{n}")
            for n in names for jit in (True, False) if not jit or n in COMPILED]


_SCALAR = '''
import jitgrad as jg


def f(x, a):
    {n} = x
    for t in jg.checkpointed(range(5), snapshots=2):
        {n} = {n} * a + 0.1 * {n} * {n}
    return {n}
'''

_ARRAY = '''
import numpy as np

import jitgrad as jg


def f(x, a):
    {n} = x.copy()
    for t in jg.checkpointed(range(6), snapshots=2):
        for i in range({n}.shape[0]):
            {n}[i] = {n}[i] * a + 0.1 * np.sin({n}[i])
    return np.sum({n} * {n})
'''

_REBOUND = '''
import numpy as np

import jitgrad as jg


def f(x, a):
    {n} = x * 1.0
    for t in jg.checkpointed(range(7), snapshots=3):
        {n} = np.tanh({n} * a) + 0.5 * {n}
    return np.sum({n})
'''


def _load(tmp_path, template: str, n: str, tag: str):
    safe = "".join(c if c.isalnum() else "_" for c in n)
    return function_from_source(tmp_path, f"hyg_{tag}_{safe}", template.format(n=n))


@pytest.mark.parametrize("n,jit", _modes(CAPITALS + GENERATED))
def test_checkpointed_scalar_state_named(tmp_path, jit, n):
    """The issue's repro: value 0.3 and gradient (1.35, 14.5) for J (right: the plain
    loop's); M looped forever, A and N raised from generated code."""
    f = _load(tmp_path, _SCALAR, n, "s")
    check_grad(f, (0.3, 0.5), wrt=(0, 1), jit=jit)


@pytest.mark.parametrize("n,jit", _modes(["J", "K", "M", "A", "N", "POS", "TOP", "_j", "_at",
                                           "_ws"]))
@pytest.mark.parametrize("template", [_ARRAY, _REBOUND], ids=["inplace", "rebound"])
def test_checkpointed_array_state_named(tmp_path, jit, n, template):
    """Arrays named like the driver's placeholders (IndexError, JitError before)."""
    f = _load(tmp_path, template, n, "a" if template is _ARRAY else "r")
    x = np.array([0.3, -0.2, 0.5, 0.1])
    check_grad(f, (x, 0.7), wrt=(0, 1), jit=jit)


_PREDATOR_PREY = '''
import jitgrad as jg


def f(p, x0, T, k):
    alpha, beta, delta, gamma = p[0], p[1], p[2], p[3]
    x = x0
    y = 1.0
    J = 0.0
    h = 0.005
    for t in jg.checkpointed(range(T), snapshots=k):
        dx = alpha * x - beta * x * y
        dy = delta * x * y - gamma * y
        x = x + h * dx
        y = y + h * dy
        J = J + h * (x - 1.0) * (x - 1.0)
    return J + 0.1 * y
'''


@pytest.mark.parametrize("T,k", [(50, 4), (2000, 32)])
def test_predator_prey_running_cost_J(tmp_path, jit, T, k):
    """An Euler predator-prey loop with a running cost named J: the value was wrong at
    every T and the gradient 3.6% off at T=2000, snapshots=32."""
    f = function_from_source(tmp_path, f"hyg_pp_{T}", _PREDATOR_PREY)
    p = np.array([1.1, 0.4, 0.1, 0.4])
    check_grad(f, (p, 1.3, T, k), wrt=(0, 1), jit=jit, rtol=1e-5, atol=1e-8)


_STRAIGHT = '''
import math

import numpy as np


def f(x, a):
    {n} = x * a
    s = 0.0
    for i in range(3):
        {n} = {n} * a + math.sin({n})
        s += np.tanh({n})
    return s + {n}
'''


@pytest.mark.parametrize("n,jit", _modes(GENERATED + ["J", "M", "N"]))
def test_generated_names_as_user_variables(tmp_path, jit, n):
    """A user variable named like a generated one (``_dret``: SyntaxError before)."""
    f = _load(tmp_path, _STRAIGHT, n, "g")
    check_grad(f, (0.3, 0.7), wrt=(0, 1), jit=jit)


_MODULE_NAMES = '''
import math as math_

import numpy as numpy_


def f(x, a):
    np = x * a
    math = numpy_.zeros(x.shape[0])
    for i in range(x.shape[0]):
        math[i] = math_.sin(np[i]) + np[i] * np[i]
    y = numpy_.tanh(math) * a
    return numpy_.sum(y * y) + numpy_.sum(np)
'''


def test_local_np_and_math_beside_other_aliases(tmp_path, jit):
    """Locals named ``np`` and ``math`` while the modules have other names: generated code
    still reaches numpy (zeros, tapes) and math."""
    f = function_from_source(tmp_path, "hyg_np_local", _MODULE_NAMES)
    x = np.array([0.3, -0.2, 0.5])
    check_grad(f, (x, 0.7), wrt=(0, 1), jit=jit)


_DRET_ARRAY = '''
import numpy as numpy_


def f(x, _ws):
    _dret = numpy_.zeros_like(x)
    for i in range(x.shape[0]):
        _dret[i] = x[i] * _ws
    dx = _dret * _dret
    _tape_x = numpy_.sum(dx)
    return _tape_x
'''


def test_generated_names_as_arrays_and_parameters(tmp_path, jit):
    """Arrays and parameters named like the seed, the workspace, an adjoint and a tape."""
    f = function_from_source(tmp_path, "hyg_dret_array", _DRET_ARRAY)
    x = np.array([0.3, -0.2, 0.5])
    check_grad(f, (x, 0.7), wrt=(0, 1), jit=jit)


_TAPE_VIEW = '''
import math

import numpy as np


def f(x, a):
    s = 0.0
    for j in range(3):
        s = s + a * x[j]
        _tape_x = x[::-1]
        _tape_x[0] = math.e * s
    _dt = x[0]
    _dy = _dt
    return np.sum(x * x) + _dy * a
'''


def test_user_tape_and_adjoint_temp_names(tmp_path, jit):
    """A user's view named like a tape (its element writes were dropped as a tape's: fuzz
    4242:35 renamed) and copies named like pullback temporaries."""
    f = function_from_source(tmp_path, "hyg_tape_view", _TAPE_VIEW)
    x = np.array([0.3, -0.2, 0.5, 0.8])
    check_grad(f, (x, 0.7), wrt=(0, 1), jit=jit)


_BUILTIN_LOCAL = '''
import math

import numpy as np


def f(x, a):
    {n} = 0.0
    for i in range(3):
        for j in range(x.shape[0]):
            {n} = math.sin({n} * a + x[j])
    y = np.concatenate((x, x * {n}))
    return {n} + np.sum(y * y)
'''


@pytest.mark.parametrize("n,jit", [("max", True), ("max", False), ("min", False),
                                   ("len", False), ("abs", False), ("bool", False),
                                   ("int", False)])
def test_local_named_like_a_builtin_generated_code_calls(tmp_path, jit, n):
    """A running ``max`` (a local shadowing the builtin that sizes nested loops' tapes
    in generated code: 'float' object is not callable before)."""
    f = _load(tmp_path, _BUILTIN_LOCAL, n, "b")
    check_grad(f, (np.array([0.3, -0.2, 0.5]), 0.7), wrt=(0, 1), jit=jit)


_BUILTIN_PARAM = '''
import numpy as np


def rhs(y, {n}):
    return {n} * y * y


def f(x, {n}):
    s = 0.0
    for xi in x:
        for xj in x:
            s += rhs(xi * xj, {n})
    return s + np.sum(x) * {n}
'''

_BUILTIN_ARRAY_PARAM = '''
import numpy as np


def f(x, {n}):
    for xi in x:
        {n}[1:] = {n}[1:] * xi
    return np.sum(np.sin({n})) + x[0] * x[1]
'''


@pytest.mark.parametrize("n", ["max", "len", "range", "min", "int"])
def test_parameter_named_like_a_builtin_generated_code_calls(tmp_path, jit, n):
    """A parameter ``max`` hid the builtin generated code calls ('float' object is not
    callable); it is renamed in the code, and keywords, ``wrt`` by name and the written
    arguments still use the user's name."""
    import jitgrad as jg

    f = _load(tmp_path, _BUILTIN_PARAM, n, "p")
    x = np.array([0.3, -0.2, 0.5])
    check_grad(f, (x, 0.7), wrt=(0, 1), jit=jit)
    value, g = jg.value_and_grad(f, wrt=n, jit=jit)(x, **{n: 0.7})
    assert value == pytest.approx(f(x, 0.7), rel=1e-12)
    assert g == pytest.approx(check_grad(f, (x, 0.7), wrt=1, jit=jit)[0], rel=1e-12)
    v = np.array([0.1, 0.2, -0.3])
    tangent_value, tangent = jg.jvp(f, (x, 0.7), (v,), wrt=0, jit=jit)
    assert tangent_value == pytest.approx(f(x, 0.7), rel=1e-12)
    assert tangent == pytest.approx(float(np.dot(jg.grad(f, jit=jit)(x, 0.7), v)), rel=1e-9)
    h = jg.hvp(f, (x, 0.7), (v,), wrt=0, jit=jit)
    eps = 1e-6
    fd = (jg.grad(f, jit=jit)(x + eps * v, 0.7) - jg.grad(f, jit=jit)(x - eps * v, 0.7)) / (
        2 * eps)
    np.testing.assert_allclose(h, fd, rtol=1e-5, atol=1e-7)

    fa = _load(tmp_path, _BUILTIN_ARRAY_PARAM, n, "pa")
    a = np.array([0.4, -0.6, 0.9, 0.2])
    check_grad(fa, (x, a), wrt=(0, 1), jit=jit)
    with pytest.raises(ValueError, match=n):
        jg.value_and_grad(fa, wrt=0, jit=jit)(a, a)


_KEYWORD_ADJOINT = '''
import numpy as np


def f(x, a):
    s = 0.0
    for xv in x:
        el = a * xv
        s += el * el + np.sin(el) * x[1]
    return s
'''


def test_adjoint_of_a_name_that_would_be_a_keyword(tmp_path, jit):
    """``el``'s adjoint is not ``del`` (a keyword: the generated code did not parse; fuzz
    seed 91001 #151)."""
    f = function_from_source(tmp_path, "hyg_keyword_adjoint", _KEYWORD_ADJOINT)
    check_grad(f, (np.array([0.3, -0.2, 0.5]), 0.7), wrt=(0, 1), jit=jit)


_MODULE_AS_GENERATED = '''
import numpy as _i


def helper(p, q):
    buf = _i.zeros(3)
    buf[1] = p * q
    return p + buf[1]


def f(x, a):
    s = 0.0
    for u, v in zip(x, x[::-1]):
        s += helper(u * a, v)
    return s
'''


def test_helper_module_alias_named_like_a_generated_index(tmp_path, jit):
    """numpy imported as ``_i`` (the zip loop's generated index) and read by an inlined
    helper: the index takes another name (fuzz seed 91001 #246: '_i.zeros' on an int)."""
    f = function_from_source(tmp_path, "hyg_module_as_index", _MODULE_AS_GENERATED)
    check_grad(f, (np.array([0.3, -0.2, 0.5]), 0.7), wrt=(0, 1), jit=jit)
