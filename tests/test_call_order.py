"""A helper that writes an array (or draws random numbers), called inside an expression,
runs where Python runs it: operands to its left are read before its writes, those to its
right after (``front/call_order.py``).  Inlining used to put every helper body ahead of
the whole expression, so ``fill(buf, a) + fill(buf, b)`` read ``buf`` after both writes:
a wrong value and gradient in both modes.  Where Python may skip the call (``and``/``or``,
``x if c else y``) or reads the target of ``t[i] += call(...)`` first, it is refused at
the user's line with a hint.
"""

from __future__ import annotations

import numba
import numpy as np
import pytest
from gradcheck import check_grad, numeric_grad
from test_random import seed

import jitgrad as jg
from jitgrad.errors import TransformError

GBUF = np.zeros(2)
X = np.array([0.3, 0.7, 0.4])


@numba.njit
def fill(buf, v):
    buf[0] = v
    return buf[0] * 2.0


def gfill(v):
    GBUF[0] = v
    return GBUF[0] * 2.0


def peek(buf):
    return buf[0] + 0.0


def noisy(v):
    z = np.random.normal()
    return v * z


def expr_local(x):
    buf = np.zeros(1)
    return fill(buf, x[0]) + fill(buf, x[1]) * fill(buf, x[2])


def expr_arg(x, buf):
    s = fill(buf, x[0]) + fill(buf, x[1]) * fill(buf, x[2])
    return s


def read_before(x):
    buf = np.zeros(1)
    buf[0] = x[2]
    return buf[0] * x[0] + fill(buf, x[1])


def read_after(x):
    buf = np.zeros(1)
    buf[0] = x[2]
    return fill(buf, x[1]) * buf[0] + x[0]


def peek_before(x):
    buf = np.zeros(1)
    buf[0] = x[2]
    return peek(buf) * fill(buf, x[1]) + x[0]


def global_array(x):
    return gfill(x[0]) * gfill(x[1]) + GBUF[0] * x[2]


def condition(x):
    buf = np.zeros(1)
    if fill(buf, x[1]) > fill(buf, x[0]):
        return buf[0] * x[2]
    return x[2] * x[2]


def call_arguments(x):
    buf = np.zeros(1)
    return np.maximum(fill(buf, x[0]), fill(buf, x[1])) * np.sin(fill(buf, x[2]))


def list_argument(x):
    buf = np.zeros(1)
    return np.sum(np.array([buf[0] + x[2], fill(buf, x[0]), fill(buf, x[1])]) * x)


def array_operand(x):
    buf = np.zeros(1)
    return np.sum(x * fill(buf, x[0])) + buf[0] * fill(buf, x[1])


def augmented(x):
    buf = np.zeros(1)
    s = fill(buf, x[0])
    s += buf[0] * fill(buf, x[1]) + fill(buf, x[2])
    return s * x[2]


def in_loop(x):
    buf = np.zeros(1)
    s = 0.0
    for k in range(2):
        s = s + buf[0] * fill(buf, x[k + 1]) + x[k]
    return s


def twice(buf, a, b):
    return buf[0] + fill(buf, a) * fill(buf, b)


def nested_helper(x):
    buf = np.zeros(1)
    buf[0] = x[0]
    return twice(buf, x[1], x[2]) * buf[0]


CASES = [nested_helper, expr_local, read_before, read_after, peek_before, global_array, condition,
         call_arguments, list_argument, array_operand, augmented, in_loop]


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_helper_effects_in_python_order(f, jit):
    if jit and f is global_array:
        pytest.skip("Numba freezes a global array: code writing one does not compile")
    GBUF[:] = 0.0
    check_grad(f, (X.copy(),), jit=jit)


def test_buffer_argument(jit):
    check_grad(expr_arg, (X.copy(), np.zeros(1)), jit=jit)


def test_every_entry_point(jit):
    want = 2.0 * X[0] + 4.0 * X[1] * X[2]
    grad = np.array([2.0, 4.0 * X[2], 4.0 * X[1]])
    v, g = jg.value_and_grad(expr_local, jit=jit)(X.copy())
    np.testing.assert_allclose(v, want, rtol=1e-12)
    np.testing.assert_allclose(g, grad, rtol=1e-12)
    np.testing.assert_allclose(jg.grad(expr_local, jit=jit)(X.copy()), grad, rtol=1e-12)
    t = np.array([0.5, -1.0, 2.0])
    v, dv = jg.jvp(expr_local, (X.copy(),), (t,), jit=jit)
    np.testing.assert_allclose(v, want, rtol=1e-12)
    np.testing.assert_allclose(dv, grad @ t, rtol=1e-12)


def draws_in_order(x):
    return np.random.normal() * x[0] + noisy(x[1]) * x[2]


def test_random_draws_in_python_order(jit):
    seed(3)
    want = draws_in_order(X.copy())
    fd = numeric_grad(lambda a: (seed(3), draws_in_order(a))[1], (X.copy(),), 0)
    seed(3)
    v, g = jg.value_and_grad(draws_in_order, jit=jit)(X.copy())
    np.testing.assert_allclose(v, want, rtol=1e-12)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)


def short_circuit(x):
    buf = np.zeros(1)
    buf[0] = x[2]
    if x[0] > 10.0 and fill(buf, x[1]) > 0.0:
        return x[0]
    return buf[0] * x[0]


def conditional_expression(x):
    buf = np.zeros(1)
    buf[0] = x[2]
    s = fill(buf, x[1]) if x[0] > 10.0 else x[0]
    return s * buf[0]


def augmented_element(x):
    buf = np.zeros(2)
    buf[0] = x[2]
    buf[0] += fill(buf, x[1])
    return buf[0] * x[0]


def chained(x):
    buf = np.zeros(1)
    if x[0] < x[1] < fill(buf, x[2]):
        return buf[0] * x[0]
    return x[1]


def while_test(x):
    buf = np.zeros(1)
    s = 0.0
    k = 0
    while fill(buf, x[k]) > 0.0 and k < 2:
        s += buf[0] * x[k]
        k += 1
    return s


def setall(a, v):
    a.fill(v)
    return a * 1.0


def method_write(x):
    a = np.zeros(2)
    a[0] = x[0]
    return a[0] * x[1] + np.sum(setall(a, x[2]))


@pytest.mark.parametrize("f, line, words", [
    (short_circuit, "if x[0] > 10.0 and fill(buf, x[1]) > 0.0:", "Python may not call it"),
    (conditional_expression, "s = fill(buf, x[1]) if x[0] > 10.0 else x[0]",
     "Python may not call it"),
    (chained, "if x[0] < x[1] < fill(buf, x[2]):", "Python may not call it"),
    (augmented_element, "buf[0] += fill(buf, x[1])", "is read before the helper call"),
    (while_test, "while fill(buf, x[k]) > 0.0 and k < 2:", "while condition"),
    (method_write, "return a[0] * x[1] + np.sum(setall(a, x[2]))",
     "may change the array 'a' in place"),
], ids=["and", "if-else", "chained", "augmented-element", "while", "method"])
def test_refused_at_the_users_line(f, line, words, jit):
    with pytest.raises(TransformError) as e:
        jg.value_and_grad(f, jit=jit)(X.copy())
    assert e.value.source_line.strip() == line
    assert words in e.value.msg and e.value.hint


def pure_short_circuit(x):
    buf = np.zeros(1)
    buf[0] = x[2]
    if x[0] > 0.1 and peek(buf) > 0.0:
        return x[0] * buf[0]
    return x[1]


def test_pure_helpers_stay_allowed_anywhere(jit):
    check_grad(pure_short_circuit, (X.copy(),), jit=jit)
