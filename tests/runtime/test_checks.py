"""ngradient, gradcheck and gradcheck_report."""

import warnings

import numpy as np
import pytest

import jitgrad.runtime as rt
from jitgrad.rules.registry import grad_rule


def test_ngradient_every_element():
    x = np.array([[0.1, -0.4], [1.2, 2.0]])
    (g,) = rt.ngradient(lambda a: (np.sin(a) * a).sum(), x)
    np.testing.assert_allclose(g, np.cos(x) * x + np.sin(x), rtol=1e-8)
    gx, gy = rt.ngradient(lambda a, b: a * b * b, 2.0, 3.0)
    assert isinstance(gx, float)
    assert gx == pytest.approx(9.0) and gy == pytest.approx(12.0)
    np.testing.assert_array_equal(x, [[0.1, -0.4], [1.2, 2.0]])


def test_ngradient_needs_scalar():
    with pytest.raises(ValueError, match="scalar"):
        rt.ngradient(lambda a: a * 2, np.ones(2))


def test_gradcheck_passes_for_correct_rules():
    assert rt.gradcheck(lambda a, b: (np.tanh(a) @ b), np.array([0.2, 0.4]), np.array([1.0, 2.0]))


def _buggy(x):
    def back(dy):
        return (dy * 2.0 * x * 1.01,)  # 1% wrong
    return x * x, back


class _Square:
    """A primitive with a deliberately wrong rule, registered under its own key."""

    def __call__(self, x):
        return rt.tracked.apply(self, x) if rt.istracked(x) else x * x


square = _Square()
grad_rule(square)(_buggy)


def test_gradcheck_fails_and_reports_the_worst_element():
    x = np.array([1.0, 3.0, 2.0])
    with pytest.warns(UserWarning, match=r"argument 0 .*worst element \(1,\)"):
        ok = rt.gradcheck(lambda a: square(a).sum(), x)
    assert ok is False
    reports = rt.gradcheck_report(lambda a: square(a).sum(), x)
    (r,) = reports
    assert set(r) >= {"index", "shape", "max_abs_err", "max_rel_err", "passed"}
    assert r["index"] == 0 and r["shape"] == (3,) and r["passed"] is False
    assert r["max_abs_err"] == pytest.approx(0.06, rel=1e-4)
    assert r["max_rel_err"] == pytest.approx(0.01 / 1.01, rel=1e-3)
    assert r["worst"] == (1,)


def test_gradcheck_report_with_given_grads():
    f = lambda a, b: (a * b).sum()
    a, b = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    good = rt.gradcheck_report(f, a, b, grads=(b, a))
    assert all(r["passed"] for r in good)
    bad = rt.gradcheck_report(f, a, b, grads=(b, np.zeros(3)))
    assert bad[0]["passed"] and not bad[1]["passed"] and bad[1]["max_abs_err"] == np.inf
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert rt.gradcheck(f, a, b)
