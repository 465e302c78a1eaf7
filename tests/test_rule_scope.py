"""A rule's free names mean what they mean in Python: its module's globals, and over
them the values its closure holds (a rule made by a factory reads the factory's
arguments, not a module global of the same name); a name bound nowhere is refused."""

from __future__ import annotations

import numba
import pytest

import jitgrad as jg
from jitgrad.errors import RuleError

k = 1.0  # the module's k: not the one the rule closes over
X0 = 1.5


@numba.njit
def _prim(a):
    return a * a


def _fn(x):
    return _prim(x) + x


def _register(k):
    @jg.grad_rule(_prim)
    def _rule(a):
        y = _prim(a)

        def back(dy):
            return (dy * k * a,)  # a surrogate gradient: k a, not 2 a

        return y, back


def test_a_rule_reads_the_values_it_closes_over(jit, scratch_rules):
    _register(3.0)
    d = jg.differentiate(_fn, jit=jit)
    v, g = d.value_and_grad(X0)
    assert v == pytest.approx(X0 * X0 + X0, rel=1e-14)
    assert g == pytest.approx(3.0 * X0 + 1.0, rel=1e-14)
    assert d(X0) == pytest.approx(X0 * X0 + X0, rel=1e-14)
    _register(5.0)  # another factory call: a new rule with its own k
    assert d.grad(X0) == pytest.approx(5.0 * X0 + 1.0, rel=1e-14)


def _fn_unbound(x):
    return _prim(x) * 2.0


def test_a_rule_reading_an_unbound_name_is_refused(jit, scratch_rules):
    @jg.grad_rule(_prim)
    def _rule(a):
        y = _prim(a)

        def back(dy):
            return (dy * not_defined_anywhere * a,)  # noqa: F821

        return y, back

    with pytest.raises(RuleError, match="not_defined_anywhere"):
        jg.grad(_fn_unbound, jit=jit)(X0)
