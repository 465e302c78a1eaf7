"""A refusal inside an inlined helper names the helper's own file and line, and the calls
that lead there, innermost first (issue 29 item 7)."""

import inspect

import numpy as np
import origin_helpers
import pytest

import jitgrad as jg


def line_of(func, text: str) -> int:
    lines, first = inspect.getsourcelines(func)
    return first + next(k for k, ln in enumerate(lines) if text in ln)


def listed(x):
    out = np.zeros(3)
    out[0] = x[0]
    return [out]


def listed_mid(x):
    y = x * 2.0
    return listed(y)[0]


def uses_list(x):
    return np.sum(listed_mid(x))


def guarded(x):
    try:
        return x[0]
    except IndexError:
        return 0.0


def guarded_mid(x):
    return guarded(x) * 3.0


def uses_try(x):
    return guarded_mid(x) + 1.0


def uses_module(x):
    s = 0.0
    s += origin_helpers.middle(x)
    return s


def site(func, text: str) -> str:
    return f"{func.__name__} at {inspect.getsourcefile(func)}:{line_of(func, text)}"


CASES = [  # (function, helper with the construct, its text, [(caller, call text)])
    (uses_list, listed, "return [out]", "lists and tuples",
     [(listed_mid, "return listed(y)[0]"), (uses_list, "np.sum(listed_mid(x))")]),
    (uses_try, guarded, "try:", "try/except",
     [(guarded_mid, "guarded(x) * 3.0"), (uses_try, "guarded_mid(x) + 1.0")]),
    (uses_module, origin_helpers.deep, "sorted(x)", "only loops over",
     [(origin_helpers.middle, "deep(t)"), (uses_module, "origin_helpers.middle(x)")]),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0].__name__ for c in CASES])
def test_refusal_names_the_helpers_line_and_the_calls(case, jit):
    f, helper, text, what, chain = case
    x = np.linspace(0.1, 0.9, 3)
    with pytest.raises(jg.TransformError, match=what) as info:
        jg.differentiate(f, jit=jit).value_and_grad(x)
    err = info.value
    assert err.filename == inspect.getsourcefile(helper)
    assert err.lineno == line_of(helper, text) and text in err.source_line
    assert err.called_from == tuple(site(c, t) for c, t in chain)
    for s in err.called_from:
        assert f"called from {s}" in str(err)


def test_a_helpers_fine_lines_still_run():
    """The notes do not change what differentiates (a clean helper through two levels)."""
    def f(x):
        return np.sum(listed_mid_ok(x))
    x = np.linspace(0.1, 0.9, 3)
    v, g = jg.differentiate(f, jit=False).value_and_grad(x)
    np.testing.assert_allclose(v, np.sum(4.0 * x * x))
    np.testing.assert_allclose(g, 8.0 * x)


def square(y):
    return y * y


def listed_mid_ok(x):
    return square(x * 2.0)
