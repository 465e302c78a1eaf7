"""Purity is one fact of the primitive table, and every pass that asks reads it.

``front.purity.call_pure`` answers for a call; ``is_pure`` (gather, ``last_taken``),
``zero_skip`` (skipping a loop), ``split`` (a helper compiled on its own) and
``call_order`` (a call with effects) all agree with it, and a primitive declared
``pure=True`` is pure to each of them.  ``linear_in`` tells ``zero_skip`` a zero argument
gives a zero result.
"""

from __future__ import annotations

import ast
import builtins
import math

import numpy as np
import pytest
from gradcheck import check_grad

import jitgrad as jg
from jitgrad.kernels import arrays, helpers
from jitgrad.rules.primitives import declare, fact, linear_in, pure
from jitgrad.transpiler.backend.zero_skip import is_zero, skippable
from jitgrad.transpiler.front.call_order import has_effects
from jitgrad.transpiler.front.purity import call_pure, is_pure
from jitgrad.transpiler.front.split import pure_helper


def scaled(x):
    """A primitive the table first knows as not pure, then as pure."""
    return 2.0 * x


jg.grad_rule(scaled, pure=False)(lambda x: (scaled(x), lambda dy: (2.0 * dy,)))
declare(scaled, methods="scaled")  # (``a.scaled()``: what ``call_order`` tests of a call)


def calls_scaled(x, y):
    return scaled(x) + y


def calls_sum(x, y):
    return np.sum(x) * y


def calls_draw(x, y):
    return np.random.normal() * x + y


ENV = {"np": np, "math": math, "scaled": scaled, "tape_get": helpers.tape_get,
       "unbroadcast": helpers.unbroadcast, "dot_grad_a": arrays.dot_grad_a}


def _call(src: str) -> ast.Call:
    return ast.parse(src, mode="eval").body


def _consumers(f: str, helper, method: str | None) -> dict[str, bool]:
    """What each pass says of a call of ``f`` (``call_order``: of ``a.method()`` where
    ``f`` has that spelling, since it takes a plain function to write no argument): pure?"""
    loop = ast.parse(f"for c in range(3):\n    dx[c] += dv * {f}(w[c])").body[0]
    ordered = [ast.parse(f"y = a.{method}()" if method else f"y = {f}(a)").body[0]]
    return {"call_pure": call_pure(_call(f"{f}(a)"), ENV),
            "is_pure": is_pure(_call(f"1.0 + {f}(a)"), ENV),
            "zero_skip": skippable(loop, "dv", {"dx", "dv", "w"}, ENV),
            "split": pure_helper(helper),
            "call_order": not has_effects(ordered, ENV)}


@pytest.mark.parametrize("f, helper, method, table", [
    ("np.sum", calls_sum, "sum", True), ("np.random.normal", calls_draw, None, False)])
def test_consumers_agree_with_the_table(f, helper, method, table):
    assert pure(eval(f, ENV)) is table
    said = _consumers(f, helper, method)
    assert said == dict.fromkeys(said, table)


def test_declaring_pure_makes_every_consumer_agree():
    assert not pure(scaled)
    assert not any(_consumers("scaled", calls_scaled, "scaled").values())
    declare(scaled, pure=True)
    try:
        assert all(_consumers("scaled", calls_scaled, "scaled").values())
    finally:
        declare(scaled, pure=False)


def test_table_facts_of_helpers_and_builtins():
    """The read-only helpers of generated code and the builtins it calls are pure; the
    generators' state, an ``out=`` and a mutating method are not."""
    from jitgrad.kernels import rng

    for fn in (helpers.tape_get, helpers.unbroadcast, helpers.broadcast_like, helpers.guard,
               arrays.expand_along, arrays.dot_grad_a, arrays.dot_grad_b, np.sum, np.dot,
               builtins.len, builtins.range, np.zeros, math.exp, np.sin):
        assert pure(fn), fn
    for fn in (rng.rng_load, rng.rng_store, helpers.tape_put, list.append, print):
        assert not pure(fn), fn
    assert not call_pure(_call("np.add(a, b, out=c)"), ENV)
    assert call_pure(_call("x.sum()"), ENV) and not call_pure(_call("xs.pop()"), ENV)
    assert call_pure(_call("tape_get(t, k)"), ENV) and call_pure(_call("len(x)"), ENV)


def test_linear_in():
    assert linear_in(helpers.guard) == (0, 1) and linear_in(helpers.unbroadcast) == (0,)
    assert fact(np.sin).linear_in == ()

    def z(e):
        return is_zero(_call(e), {"dv"}, ENV)

    assert z("unbroadcast(dv * a, b)") and z("dot_grad_a(dv, a, b)")
    assert not z("unbroadcast(a, dv)") and not z("scaled(dv)")
    declare(scaled, linear_in=(0,))
    try:
        assert z("scaled(dv)")
    finally:
        declare(scaled, linear_in=())


def last_at_most(v, a):
    """A value taken on the last trip its test held, read through ``len`` (pure): taken
    once after the loop (``last_taken``), no tape of the test's outcomes."""
    for i in range(4):
        if v[i % len(v)] <= a:
            a = v[i % len(v)]
    return a * a + v[0] * a


@pytest.mark.parametrize("jit", [True, False])
def test_len_is_pure_for_last_taken(jit):
    v = np.array([0.3, -0.2, 0.7])
    for a in (0.1, -0.5):
        check_grad(last_at_most, (v, a), wrt=(0, 1), jit=jit)
    src = jg.differentiate(last_at_most, wrt=(0, 1)).source(v, 0.1)
    assert "_hit" in src and "tape_put" not in src
