"""Shared setup for the runtime tests: the full rule tables and a finite-difference check."""

import numpy as np
import pytest

import jitgrad.rules
import jitgrad.rules.arrays  # noqa: F401  (array rules; harmless once jitgrad.rules imports it)
from jitgrad.runtime import gradcheck_report, gradient

assert jitgrad.rules.lookup(np.sum) is not None


def _assert_fd(f, *xs, rtol=1e-6, atol=1e-6):
    """Gradient of ``f`` at ``xs`` equals central differences, for every element."""
    before = [np.array(x, copy=True) for x in xs]
    reports = gradcheck_report(f, *xs, rtol=rtol, atol=atol)
    for r in reports:
        assert r["passed"], r
    for x, b in zip(xs, before, strict=True):
        np.testing.assert_array_equal(x, b)  # inputs unchanged
    return gradient(f, *xs)


@pytest.fixture
def assert_fd():
    return _assert_fd
