"""The user's function is parsed and fenced once, also where a second unit is prepared
from it: the split unit (``pipeline.split_unit``) and the unit with a nested gradient's
code inlined (``pipeline.with_nested``) start from the first parse (``Parsed.again``)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import split_cases as sc
from gradcheck import check_grad

import jitgrad as jg
from jitgrad import api
from jitgrad.transpiler import front_passes


@pytest.fixture
def parses(monkeypatch):
    """The ``(step, function name)`` of each parse and fence of a function from now on."""
    seen: list[tuple[str, str]] = []
    for mod in (api, front_passes):
        for name in ("parse_function", "fence"):
            real = getattr(mod, name)

            def spy(arg, real=real, name=name):
                func = arg if name == "parse_function" else arg.func
                seen.append((name, func.__name__))
                return real(arg)
            monkeypatch.setattr(mod, name, spy)
    return seen


def _split_user(x, w):
    """``sc.scalar4``'s body: its helper ``sq`` called at 4 sites is split."""
    y = sc.sq(x, w)
    y = sc.sq(y, w)
    y = sc.sq(y, 2.0)
    y = sc.sq(y, w)
    return y * 3.0


@pytest.mark.parametrize("jit", [False, True])
def test_split_unit_parses_once(parses, jit):
    f = jg.grad(_split_user, wrt=(0, 1), jit=jit)
    assert "sq_vjp(" in f.source(0.3, 0.7)  # (split: the second unit was made)
    assert parses.count(("parse_function", "_split_user")) == 1
    assert parses.count(("fence", "_split_user")) == 1
    check_grad(_split_user, (0.3, 0.7), wrt=(0, 1), jit=jit)


def _potential(x0, x1, w):
    r = math.sqrt((x0 - 2.0) ** 2 + (x1 - w) ** 2 + 0.5)
    return 1.0 / r + 0.1 * x0 * x1


_force = jg.grad(_potential, wrt=(0, 1), jit=False)


def _nested_user(w, dt):
    x0, x1 = 0.0, 2.0
    for _ in range(3):
        g0, g1 = _force(x0, x1, w)
        x0 = x0 - dt * g0
        x1 = x1 - dt * g1
    return x0 * x1 + w


@pytest.mark.parametrize("jit", [False, True])
def test_nested_unit_parses_once(parses, jit):
    g = jg.grad(_nested_user, wrt=(0, 1), jit=jit)
    gw, gdt = g(0.7, 0.1)
    assert parses.count(("parse_function", "_nested_user")) == 1
    assert parses.count(("fence", "_nested_user")) == 1
    check_grad(_nested_user, (0.7, 0.1), wrt=(0, 1), jit=jit)
    h = 1e-6
    fd = (_nested_user(0.7 + h, 0.1) - _nested_user(0.7 - h, 0.1)) / (2 * h)
    assert gw == pytest.approx(fd, rel=1e-6)
    assert np.isfinite(gdt)
