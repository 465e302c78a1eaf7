"""Purity is one fact of the primitive table, and every pass that asks reads it.

``front.purity.call_pure`` answers for a call; ``is_pure`` (gather, ``last_taken``),
``zero_skip`` (skipping a loop), ``split`` (a helper compiled on its own) and
``call_order`` (a call with effects) all agree with it, and a primitive declared
``pure=True`` is pure to each of them.  ``linear_in`` tells ``zero_skip`` a zero argument
gives a zero result.  The other facts passes ask (fresh arrays from a shape and their
fill, the argument a result has the shape of, sums, numbers, in-place copies, writes
through arguments, costs) are table facts too: a newly declared primitive is followed by
every pass that asks, and how the user spells NumPy (``import numpy as onp``) does not
change the generated code.
"""

from __future__ import annotations

import ast
import builtins
import math
import types

import numba
import numpy as np
import numpy as onp
import pytest
from gradcheck import check_grad

import jitgrad as jg
from jitgrad.kernels import arrays, helpers
from jitgrad.rules.primitives import (
    Result,
    allocates_shape,
    cached_twin,
    declare,
    fact,
    fill_value,
    linear_in,
    on_scalars,
    pure,
    shape_of,
)
from jitgrad.transpiler.analysis.analyse import copy_args
from jitgrad.transpiler.analysis.dataflow import Dataflow, may_alias
from jitgrad.transpiler.analysis.shape_classes import SCALAR, ShapeClasses, reduction_terms
from jitgrad.transpiler.backend.cached_calls import cached_calls
from jitgrad.transpiler.backend.zero_skip import is_zero, skippable
from jitgrad.transpiler.front.call_order import has_effects
from jitgrad.transpiler.front.purity import call_pure, is_pure
from jitgrad.transpiler.front.small_arrays import _Facts
from jitgrad.transpiler.front.split import accumulating, pure_helper
from jitgrad.transpiler.modes.policy import ReadPolicy


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
        check_grad(last_at_most, (v, a), wrt=(0, 1), jit=jit, shared=True)
    src = jg.differentiate(last_at_most, wrt=(0, 1)).source(v, 0.1)
    assert "_hit" in src and "tape_put" not in src


# --- the other facts: each declared once, followed by every pass that asks ----------------


def made_of_shape_f2(shape):
    """A user's allocation from a shape (the table learns it below)."""
    return np.full(shape, 2.0)


def shaped_as_second_f2(a, b):
    """A fresh array of ``b``'s shape."""
    return np.zeros_like(b)


def summed_f2(a):
    return float(np.sum(a))


def copied_into_f2(dst, src):
    dst[...] = src


def counted_f2(a):
    return a.shape[0]


# what a user says of functions of their own (``copies_into``, generated code's, is the
# built-in table's only)
jg.non_differentiable(made_of_shape_f2, shaped_as_second_f2, summed_f2, counted_f2)
declare(copied_into_f2, hides_writes=False)

OWN = {"np": np, "onp": onp, "len": len, "mk": made_of_shape_f2, "like2": shaped_as_second_f2,
       "tot": summed_f2, "cp": copied_into_f2, "cnt": counted_f2}


@pytest.fixture
def forget():
    """Declared facts of this module's functions are undone after the test."""
    yield
    declare(made_of_shape_f2, allocates=False, result=Result("unknown"), fill=None)
    declare(shaped_as_second_f2, shape_of=None)
    declare(summed_f2, sums=False)
    declare(copied_into_f2, copies_into=None)
    declare(counted_f2, fresh=False)


def _classes(src: str, env=OWN) -> ShapeClasses:
    return ShapeClasses(ast.parse(src).body, {"a": 1, "b": 2}, env, ["a", "b"])


def test_a_declared_allocation_is_one_to_every_pass(forget):
    """Shape classes (the class of its shape), small arrays (a fill of a constant size)
    and the aliasing of the dataflow (no buffer shared: under another name ``mk`` where
    it has the namespace, else by the function's name) all follow ``allocates`` with the
    ``alloc`` result and its ``fill``."""
    def said():
        return (_classes("z = mk(a.shape)").of("z"), _Facts({}, OWN).form(_call("mk(3)")),
                may_alias(_call("made_of_shape_f2(a)")), may_alias(_call("mk(a)"), env=OWN),
                fill_value(made_of_shape_f2))

    assert said() == (None, None, {"a"}, {"a"}, None)
    jg.non_differentiable(made_of_shape_f2, allocates=True, result=Result("alloc"), fill=2.0)
    assert allocates_shape(made_of_shape_f2)
    assert said() == ("a", 3, set(), set(), 2.0)
    # without the namespace ``mk`` is an unknown call; a Dataflow given it joins nothing
    assert may_alias(_call("mk(a)")) == {"a"}
    body = ast.parse("z = mk(a)\nw = mk(a, out=b)").body
    flow = Dataflow(body, env=OWN)
    assert flow.shares("z") == {"z"} and flow.shares("w") == {"w", "a", "b"}
    # a function spelled like an allocation but bound to another is what it names
    assert may_alias(_call("zeros(a)"), env={"zeros": shaped_as_second_f2}) == {"a"}


def made_empty_f2(shape):
    """A user's allocation from a shape whose elements are not set (declared below)."""
    return np.empty(shape)


def test_uninitialised_allocations_are_a_table_fact():
    """``np.empty`` and ``np.empty_like`` are ``uninitialised`` (one fact each, in their
    records), and ``loop_buffers`` makes once the in-loop allocations from a shape that the
    table says are uninitialised or zero, however they are named: a function declared
    so joins them, ``np.ones`` does not."""
    from jitgrad.rules.primitives import uninitialised
    from jitgrad.transpiler.backend.loop_buffers import _allocation

    assert uninitialised(np.empty) and uninitialised(np.empty_like)
    assert not any(uninitialised(f) for f in (np.zeros, np.zeros_like, np.copy, len))
    own = types.ModuleType("own")
    own.mk = made_empty_f2
    env = {"onp": onp, "own": own}

    def made(src: str) -> bool:
        return _allocation(ast.parse(src).body[0], env) is not None

    assert made("z = onp.empty(3)") and made("z = onp.zeros(n)")
    assert not made("z = onp.ones(3)") and not made("z = onp.empty(3, dtype=onp.int64)")
    assert not made("z = own.mk(3)")
    try:
        jg.non_differentiable(made_empty_f2, allocates=True, result=Result("alloc"),
                              uninitialised=True)
        assert uninitialised(made_empty_f2) and made("z = own.mk(3)")
    finally:
        declare(made_empty_f2, allocates=False, result=Result("unknown"), uninitialised=False)


@pytest.mark.parametrize("mod", ["np", "onp"])
@pytest.mark.parametrize("call, cls", [
    ("full(a.shape, 2.0)", "a"), ("full((a.shape[0],), 1.5)", "a"), ("zeros(b.shape)", "b"),
    ("ones(len(a))", "a"), ("empty(b.shape)", "b"), ("zeros_like(b)", "b"),
    ("full_like(a, 3.0)", "a"), ("copy(b)", "b")])
def test_allocations_have_their_shape_class(mod, call, cls):
    """``np.full`` (not in the old list of allocations), ``np.full_like`` and ``np.copy``
    (not in the old list of ``_like`` calls) have the class of their shape, however NumPy
    is spelled."""
    assert _classes(f"z = {mod}.{call}").of("z") == cls


def test_shape_of_sums_copies_and_numbers_follow_the_table(forget):
    def said():
        shapes = _classes("z = like2(a, b)\nt = tot(b)")
        return (shapes.of("z"), reduction_terms(_call("tot(b)"), shapes, OWN) is not None,
                copy_args(_call("cp(a, b)"), OWN) is not None,
                may_alias(_call("counted_f2(a)")))

    assert said() == (None, False, False, {"a"})
    jg.non_differentiable(shaped_as_second_f2, shape_of=1)
    jg.non_differentiable(summed_f2, sums=True)
    jg.non_differentiable(counted_f2, fresh=True)
    declare(copied_into_f2, copies_into=(0, 1))
    assert shape_of(shaped_as_second_f2) == 1
    shapes = _classes("z = like2(a, b)\nt = tot(b)")
    assert shapes.of("z") == "b" and shapes.of("t") == SCALAR
    assert [n.id for n in reduction_terms(_call("tot(b)"), shapes, OWN)] == ["b"]
    dst, src = copy_args(_call("cp(a, b)"), OWN)
    assert (dst.id, src.id) == ("a", "b")
    assert said()[3] == set() and may_alias(_call("counted_f2(a, out=b)")) == {"a", "b"}


def writer_f2(a):
    a[0] = 1.0


@pytest.mark.parametrize("src, env, stored", [
    ("n = len(a)", {}, set()),
    ("n = size(a)", {"size": len}, set()),  # (a builtin under another name)
    ("n = len(a)", {"len": writer_f2}, {"a"}),  # (a writer under a builtin's name)
    ("n = writer_f2(a)", {"writer_f2": writer_f2}, {"a"}),
    ("n = np.random.shuffle(a)", {"np": np}, {"a"}),
    ("n = onp.sum(a, out=b)", {"onp": onp}, {"a", "b"})])
def test_the_read_policy_asks_the_table_not_the_spelling(src, env, stored):
    """Which arrays a call may write (the tape policy's never-written test) is the table's
    ``hides_writes`` of what the call names, not a list of builtin names: ``len`` bound to
    a function that writes its argument writes ``a``."""
    body = ast.parse(src).body
    assert ReadPolicy(body, None, env)._stored_into() - {"n", "onp"} == stored


# --- spelling: ``import numpy as onp`` gets the same code ---------------------------------


def test_cached_twins_are_table_facts():
    """``cached_calls`` rewrites what the table gives a cached twin, however it is named."""
    assert cached_twin(np.zeros_like) == "np_zeros_like" and cached_twin(np.zeros) is None
    body = ast.parse("d = onp.zeros_like(x)\ne = zl(x)\nf = a @ b\ng = onp.zeros(3)").body
    out = cached_calls(body, {"onp": onp, "zl": np.empty_like}, str)
    assert [ast.unparse(s) for s in out] == [
        "d = np_zeros_like(x)", "e = np_empty_like(x)", "f = np_matmul(a, b)", "g = onp.zeros(3)"]


def spelled_np(x, a):
    m = x.shape[0]
    s = 0.0
    for t in range(len(x) - 2):
        z = np.empty(m)
        for j in range(m):
            z[j] = math.sin(x[j] * (t + 1.0)) * a
        w = np.full(x.shape, 2.0) * x + np.zeros_like(x)
        s += np.sum(z) * (t + 2.0) + np.sum(w * x) * a
    return s


def spelled_onp(x, a):
    m = x.shape[0]
    s = 0.0
    for t in range(len(x) - 2):
        z = onp.empty(m)
        for j in range(m):
            z[j] = math.sin(x[j] * (t + 1.0)) * a
        w = onp.full(x.shape, 2.0) * x + onp.zeros_like(x)
        s += onp.sum(z) * (t + 2.0) + onp.sum(w * x) * a
    return s


def scratch_np(x, k, m):
    total = 0.0
    for i in range(x.shape[0]):
        t = np.zeros(4)
        for j in range(m):
            t[j + 1] = math.exp(k * x[i] * (j + 1.0)) + t[j]
        total += t[1] * t[2] + math.sin(t[3])
    return total


def scratch_onp(x, k, m):
    total = 0.0
    for i in range(x.shape[0]):
        t = onp.zeros(4)
        for j in range(m):
            t[j + 1] = math.exp(k * x[i] * (j + 1.0)) + t[j]
        total += t[1] * t[2] + math.sin(t[3])
    return total


def _normalised(src: str) -> str:
    import re

    src = re.sub(r"\(line \d+", "(line", re.sub(r"# line \d+", "#", src))  # bounds messages
    return src.replace("_onp", "_np").replace("onp.", "np.")


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("pair, args", [
    ((spelled_np, spelled_onp), (np.linspace(0.1, 1.0, 6), 0.7)),
    ((scratch_np, scratch_onp), (np.linspace(0.1, 0.5, 4), 0.3, 3))], ids=["zeros_like", "loop"])
def test_numpy_under_another_name_gets_the_same_code(jit, pair, args):
    """The loop's array made once (``loop_buffers``), the cached ``zeros_like``
    (``cached_calls``) and the rest: the same generated code for ``onp`` as for ``np``."""
    for f in pair:
        check_grad(f, args, wrt=(0, 1), jit=jit)
    src = [jg.differentiate(f, wrt=(0, 1), jit=jit).source(*args) for f in pair]
    assert _normalised(src[1]) == _normalised(src[0])
    if jit and pair[0] is spelled_np:
        assert "np_zeros_like(x)" in src[1]
    if pair[0] is scratch_np:
        loop = src[1][src[1].index("for i in range("):]
        assert "onp.zeros(" not in loop and "onp.empty(" not in loop, src[1]


#: ``np.zeros_like`` under another name (the namespace says what it is, not the spelling)
ZEROS_LIKE = onp.zeros_like


def fused_np(x, y, a):
    n = x.shape[0]
    z = np.exp(y)
    w = np.cos(x)
    t = np.zeros_like(x)
    for i in range(n):
        u = z[i] * a
        w[i] = u * u
        t[i] = w[i] * x[i]
    s = 0.0
    for i in range(n):
        s += t[i] * math.sin(z[i])
    return s + np.sum(np.reshape(w, (n,)) * y)


def fused_onp(x, y, a):
    n = x.shape[0]
    z = onp.exp(y)
    w = onp.cos(x)
    t = ZEROS_LIKE(x)
    for i in range(n):
        u = z[i] * a
        w[i] = u * u
        t[i] = w[i] * x[i]
    s = 0.0
    for i in range(n):
        s += t[i] * math.sin(z[i])
    return s + onp.sum(onp.reshape(w, (n,)) * y)


@numba.njit(parallel=True)
def parallel_np(x, y, a):
    n = x.shape[0]
    z = np.exp(y)
    out = np.zeros(n)
    for i in numba.prange(n):
        out[i] = a * z[i] * math.sin(x[i])
    return np.sum(out * np.reshape(y, (n,)))


@numba.njit(parallel=True)
def parallel_onp(x, y, a):
    n = x.shape[0]
    z = onp.exp(y)
    out = onp.zeros(n)
    for i in numba.prange(n):
        out[i] = a * z[i] * math.sin(x[i])
    return onp.sum(out * onp.reshape(y, (n,)))


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("pair, step", [((fused_np, fused_onp), "are independent"),
                                        ((parallel_np, parallel_onp), "in prange(")],
                         ids=["fuse", "prange"])
def test_numpy_under_another_name_through_fuse_and_prange(jit, pair, step):
    """A loop pair fused (``fuse``) and a prange loop kept parallel (``prange``): the same
    generated code for ``onp`` (and ``np.zeros_like`` bound to another name) as for
    ``np``, and the gradients right."""
    args = (np.linspace(0.1, 1.0, 5), np.linspace(0.3, 0.8, 5), 0.7)
    for f in pair:
        check_grad(f, args, wrt=(0, 1, 2), jit=jit)
    src = [jg.differentiate(f, wrt=(0, 1, 2), jit=jit).source(*args) for f in pair]
    assert step in src[1], src[1]
    assert _normalised(src[1]).replace("ZEROS_LIKE(", "np.zeros_like(") == _normalised(src[0])


def counted_np(x):
    a = np.zeros_like(x)
    for i in range(x.shape[0]):
        a[i] = i * 2.0
    return np.sum(x * x) + a[1]


def counted_onp(x):
    a = ZEROS_LIKE(x)
    for i in range(x.shape[0]):
        a[i] = i * 2.0
    return onp.sum(x * x) + a[1]


@pytest.mark.parametrize("jit", [True, False])
def test_dead_code_finds_fresh_arrays_through_the_namespace(jit):
    """The gradient-only code drops the loop filling an array only the value reads: the
    array is fresh (``dataflow.fresh_binds`` through the namespace), so writes into it
    reach nothing else, however ``np.zeros_like`` is named."""
    x = np.linspace(0.1, 1.0, 5)
    src = []
    for f in (counted_np, counted_onp):
        check_grad(f, (x,), wrt=0, jit=jit)
        d = jg.differentiate(f, jit=jit)
        d(x)
        src.append(d._generated((x,)).unit.sources["grad_only"].replace("counted_onp",
                                                                        "counted_np"))
    assert "for i in" not in src[1], src[1]
    assert _normalised(src[1]) == _normalised(src[0])


def test_fuse_asks_the_namespace_not_the_spelling():
    """Whether the statements between a forward loop and its reversed loop may move
    (``fuse._mid_movable``: they write an array the loop names under no name sharing its
    buffer) is the same for ``onp.cos(x)`` as for ``np.cos(x)``: by the spelling alone,
    every ``onp.f(...)`` would share a buffer with a name ``onp``, so with each other."""
    from jitgrad.transpiler.backend.fuse import _mid_movable

    arrays = {"x", "y", "z", "q", "dz"}

    def is_array(n: str) -> bool | None:
        return True if n in arrays else False if n in ("s", "ds", "n", "i") else None

    for mod in ("np", "onp"):
        b = ast.parse(f"z = {mod}.exp(y)\nq = {mod}.cos(x)\nfor i in range(n):\n"
                      "    s = s + z[i]\nq[0] = 1.0\nfor i in range(n - 1, -1, -1):\n"
                      "    dz[i] += ds").body
        assert _mid_movable(b, [b[3]], b[2], set(), {}, is_array, {"np": np, "onp": onp}), mod


def test_fuse_zeros_are_the_tables_fill():
    """A scratch array made zero (``fuse._zeros``, for ``dependence.reset``) is a call the
    table fills with 0.0, through the namespace: ``np.zeros``, ``np.zeros_like`` under
    any name; a ``zeros_like`` that fills ones is none."""
    from jitgrad.transpiler.backend.fuse import _zeros

    env = {"onp": onp, "zl": onp.zeros_like, "mine": _mine}
    one = lambda src: ast.parse(src).body[0]  # noqa: E731
    assert _zeros(one("a = zl(x)"), env) and _zeros(one("a = onp.zeros(3)"), env)
    assert not any(_zeros(one(src), env) for src in (
        "a = mine.zeros_like(x)", "a = onp.empty(3)", "a = onp.ones_like(x)", "a = x * 0.0"))
    assert not _zeros(one("a = zl(x)"), None)


def test_prange_fresh_values_are_table_facts():
    """The prange check's new arrays (private to an iteration) are the calls the table
    says allocate, through the namespace or an array method (``x.copy()`` is ``np.copy``):
    a module's own ``copy()`` is none, whatever it is spelled like."""
    from jitgrad.transpiler.backend.prange import Parallel

    mod = types.ModuleType("shared_store")
    mod.copy = lambda: _SHARED  # (hands out one array to every caller)
    env = {"onp": onp, "mod": mod, "cp": np.copy}
    check = types.SimpleNamespace(env=env)

    def fresh(src: str) -> bool:
        return Parallel.fresh(check, ast.parse(src, mode="eval").body)

    assert all(fresh(e) for e in ("x.copy()", "onp.copy(x)", "cp(x)", "onp.zeros(3)",
                                  "x * 2.0"))
    assert not any(fresh(e) for e in ("mod.copy()", "x[0]", "onp.reshape(x, 3)", "x"))


_SHARED = np.zeros(3)


def test_shape_queries_are_the_tables_query_attributes():
    """``recompute.shape_query``: ``len(x)``, an attribute the table calls a query
    (``query_attrs``: ``x.size``, ``x.shape``, ``x.dtype``) or an entry of one
    (``x.shape[0]``); ``x.T`` is a view, ``x.real`` a value."""
    from jitgrad.rules.primitives import query_attrs
    from jitgrad.transpiler.modes.recompute import shape_operands, shape_query

    def q(src: str) -> bool:
        return shape_query(ast.parse(src, mode="eval").body)

    assert {"shape", "size", "ndim", "dtype"} <= query_attrs()
    assert all(q(e) for e in ("len(x)", "x.size", "x.ndim", "x.shape[1]", "x.shape",
                              "x.dtype"))
    assert not any(q(e) for e in ("x.T", "x.real", "x[0]", "x.shape[i]", "f(x).size"))
    assert shape_operands(ast.parse("len(x) + y.shape[0] * z.size - w", mode="eval").body) \
        == {"x", "y", "z"}


# --- on_scalars: elements.py fuses what compiled code may call on an array's elements ------


@numba.njit
def soft_f3(x):
    """``x / (1 + x * x)``: elementwise, compiled for scalars as for arrays."""
    return x / (1.0 + x * x)


@numba.njit
def soft_sign_f3(x):
    """The same function, declared without ``on_scalars``."""
    return x / (1.0 + x * x)


def _soft_rule(soft):
    """The gradient rule of ``soft`` (its value the call itself, kept in generated code)."""
    def rule(x):
        def back(dy):
            q = 1.0 + x * x
            return (dy * (1.0 - x * x) / (q * q),)
        return soft(x), back
    return rule


jg.grad_rule(soft_f3, elementwise=True, pure=True, on_scalars=True)(_soft_rule(soft_f3))
jg.grad_rule(soft_sign_f3, elementwise=True, pure=True)(_soft_rule(soft_sign_f3))


def soft_chain(x, a):
    return np.sum(soft_f3(a * x + 0.5) * np.cos(x))


def soft_sign_chain(x, a):
    return np.sum(soft_sign_f3(a * x + 0.5) * np.cos(x))


@pytest.mark.parametrize("jit", [True, False])
def test_a_primitive_called_on_scalars_is_fused(jit):
    """A new primitive declared ``on_scalars`` joins an element loop under ``jit=True``,
    called on each element (one without the fact is called on the array, the loop split
    around it); values and gradients against central differences."""
    import re

    args = (np.linspace(-1.0, 1.2, 7), 0.7)
    for f in (soft_chain, soft_sign_chain):
        check_grad(f, args, wrt=(0, 1), jit=jit)
    on = jg.differentiate(soft_chain, wrt=(0, 1), jit=jit).source(*args)
    off = jg.differentiate(soft_sign_chain, wrt=(0, 1), jit=jit).source(*args)
    on_element = r"soft\(_\w+_e\)"  # (the element loops' scalars end in _e)
    assert bool(re.search(on_element, on)) == jit and "soft(_t4)" in off, (on, off)
    assert not re.search(on_element, off) and ("one loop over the elements" in on) == jit
    assert on_scalars(soft_f3) and not on_scalars(soft_sign_f3) and on_scalars(np.where) \
        and on_scalars(math.exp) and not on_scalars(len)


def _grad_onp(x, dy):
    dx = onp.zeros_like(x)
    dx += dy * x
    return (dx,)


_mine = types.ModuleType("mine")
_mine.zeros_like = np.ones_like  # (spelled like a zeroing, but is none)


def _grad_ones(x, dy):
    dx = _mine.zeros_like(x)
    dx += dy * x
    return (dx,)


def test_split_adds_into_a_zeroing_the_table_knows():
    """A split helper's gradient adds into the caller's buffer where its own was a
    zeroing the table knows (``fills_with`` 0.0, shaped like its argument), however
    numpy is spelled; a ``zeros_like`` that fills ones is no zeroing."""
    x = np.arange(3.0)
    acc, done = accumulating(_grad_onp, [0])
    buf = np.ones(3)
    assert done == (0,)
    acc(x, 2.0, buf)
    assert np.allclose(buf, 1.0 + 2.0 * x)
    assert accumulating(_grad_ones, [0]) == (_grad_ones, ())


def test_gather_copies_and_zeroings_are_table_facts():
    """A fresh copy is the table's ``copies`` of the function or array method called (a
    module's ``copy()`` is none); a zeroing is ``zeros_shaped_like``, however spelled."""
    from jitgrad.transpiler.backend.gather import _copies, _zeroed_untouched

    env = {"onp": onp, "mine": _mine}
    _mine.copy = lambda: np.ones(2)
    one = lambda src: ast.parse(src).body[0]  # noqa: E731
    assert _copies(one("t = x.copy()"), env) and _copies(one("t = onp.copy(x)"), env)
    assert not _copies(one("t = mine.copy()"), env)
    before = [one("a = onp.zeros_like(x)"), one("b = mine.zeros_like(x)")]
    assert _zeroed_untouched(before, {"a", "b"}, env) == {"a"}


def _user_empty():
    def empty(shape, dtype):  # (named as np.empty: the table's allocating names stay)
        """A user allocation declared like ``np.empty``: uninitialised, from a shape."""
        return np.empty(shape, dtype)

    jg.non_differentiable(empty, allocates=True, uninitialised=True, result=Result("alloc"))
    return empty


_my_empty = _user_empty()


def test_tape_declarations_and_tangent_zeroings_are_table_facts():
    """Forward mode's tape families start at an uninitialised allocation from a shape
    (``uninitialised`` and ``allocates_shape``: ``np.empty(0, dt)`` or a primitive declared
    so) and their tangents at a zeroing (``zeros_shaped_like``), however spelled; the
    helper ``zeros_like`` generated code calls answers the zeroing query too."""
    from jitgrad.rules.primitives import fills_with, uninitialised, zeros_shaped_like
    from jitgrad.transpiler.backend.jvp_workspace import _scan

    assert uninitialised(onp.empty) and allocates_shape(onp.empty)
    assert uninitialised(_my_empty) and allocates_shape(_my_empty)
    assert not allocates_shape(np.empty_like) and not uninitialised(np.zeros)
    assert zeros_shaped_like(helpers.zeros_like) and fills_with(helpers.zeros_like) == 0.0
    assert not zeros_shaped_like(np.ones_like) and not zeros_shaped_like(np.zeros)
    env = {"onp": onp, "mine": _my_empty, "np": np}
    for alloc, zeros in [("onp.empty", "onp.zeros_like"), ("mine", "np.zeros_like")]:
        body = ast.parse(f"t = {alloc}(0, onp.float64)\nt_dot = {zeros}(t)\n").body
        families, _ = _scan(body, env)
        assert [(f.root, f.dtype) for f in families] == [("t", "float64"), ("t_dot", "float64")]
    body = ast.parse("t = np.ones(0, np.float64)\nt_dot = np.ones_like(t)\n").body
    assert _scan(body, env) == ([], {})


def _inverse_norm_onp(x, c):
    s = 0.0
    for i in range(x.shape[0]):
        u = x[i] * x[i] + c
        s += 2.0 / onp.sqrt(u)
    return s


@pytest.mark.parametrize("jit", [True, False])
def test_reciprocal_sqrt_is_the_tables_power(jit):
    """``t = c / f(u)`` takes the fused derivative where the table says ``f(x)`` is
    ``x ** 0.5`` (``power``), however numpy is spelled."""
    from jitgrad.rules.primitives import power

    assert power(np.sqrt) == power(onp.sqrt) == power(math.sqrt) == 0.5
    assert power(np.exp) is None and power(print) is None
    x = np.linspace(0.2, 1.4, 6)
    check_grad(_inverse_norm_onp, (x, 0.3), (0, 1), jit)
    src = jg.differentiate(_inverse_norm_onp, wrt=(0, 1)).source(x, 0.3, stage="adjoint")
    assert "guard(_dt4, -1.0 * _dt4 / (_t5 * u))" in src, src  # (-0.5 * 2.0, folded)
