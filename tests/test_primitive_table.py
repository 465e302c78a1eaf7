"""The primitive table: every registered primitive has one complete record, and the
facts the transpiler reads from it (views, fresh arrays, spellings...) are the right ones."""

import ast
import builtins
import math
import operator

import numpy as np
import pytest

import jitgrad as jg
from jitgrad.errors import RuleError
from jitgrad.markers import nobacksies
from jitgrad.rules import fact, is_non_differentiable, lookup, version
from jitgrad.rules.primitives import (
    RESULT_HOWS,
    SETTABLE,
    Result,
    allocating_names,
    attribute_function,
    hides_writes,
    is_library,
    library_module,
    method_function,
    query_attrs,
    records,
    result_of,
)
from jitgrad.rules.registry import RULE_FACTS

FLAGS = ("non_differentiable", "linear", "elementwise", "view", "allocates", "cheap",
         "device", "query")


def _registered():
    return [r for r in records() if r.rule is not None or r.non_differentiable]


def _name(rec):
    return f"{getattr(rec.fn, '__module__', '')}.{getattr(rec.fn, '__name__', rec.fn)}"


def _check_result(r: Result) -> None:
    assert isinstance(r, Result) and r.how in RESULT_HOWS
    if r.how == "fixed":
        assert r.cls in ("b", "i", "f") and isinstance(r.ndim, int)
    elif r.how in ("declared", "sequence"):
        assert callable(r.ndim)
    elif r.how == "same":
        assert r.ndim is None or isinstance(r.ndim, int) or callable(r.ndim)
    elif r.how == "broadcast":
        assert r.cls in (None, "keep")
    elif r.how == "arg":
        assert isinstance(r.arg, int) and r.arg >= 0


def test_every_registered_primitive_has_a_complete_record():
    recs = _registered()
    assert len(recs) > 250
    for rec in recs:
        name = _name(rec)
        for flag in FLAGS:
            assert isinstance(getattr(rec, flag), bool), f"{name}.{flag} undecided"
        _check_result(rec.result)
        assert rec.tangent is None or callable(rec.tangent), name
        assert all(isinstance(m, str) for m in (*rec.methods, *rec.attrs)), name
        if rec.rule is not None:
            assert rec.fn in rec.rule.primitives, name
            assert rec.result.how != "unknown", f"{name} has a rule but no result kind"
        assert not (rec.view and rec.allocates), f"{name}: a view cannot be a fresh array"
        assert not (rec.allocates and rec.device), f"{name}: allocation is not for the device"
        assert not rec.query or rec.non_differentiable, f"{name}: a query has no gradient"


def test_records_without_rule_or_declaration_are_the_known_few():
    # the helpers generated gradient code calls have only kinds and tangent rules (second
    # order, jitgrad/rules/second_order.py)
    # (the random draws have no rule on purpose: np.random.normal(mu, s) with an active
    # mu is refused, never given a zero gradient; their record says they draw)
    # (methods that write their object have only that fact: ``xs.pop()``, ``a.sort()``;
    # ``print`` only that its dropped result hides no write)
    loose = {r.fn for r in records() if r.rule is None and not r.non_differentiable
             and not r.random and not r.mutates and r.hides_writes is None
             and not (getattr(r.fn, "__module__", None) or "").startswith("jitgrad.kernels")}
    # (and math functions known only for their plain-Python IEEE stand-in, np.append only
    # as a call that changes a shape)
    assert loose == {np.squeeze, np.diagonal, nobacksies, math.fmod, np.append,
                     *([math.cbrt] if hasattr(math, "cbrt") else [])}


def test_spellings_resolve_to_registered_primitives():
    for rec in records():
        for m in rec.methods:
            assert method_function(m) is rec.fn
        for a in rec.attrs:
            assert a in query_attrs() if rec.query else attribute_function(a) is rec.fn
        for spelled in (*rec.methods, *rec.attrs):
            assert lookup(rec.fn) is not None or is_non_differentiable(rec.fn), spelled
    assert method_function("sum") is np.sum and method_function("flatten") is np.ravel
    assert method_function("item") is builtins.float and method_function("nope") is None
    assert attribute_function("T") is np.transpose and attribute_function("shape") is None
    assert query_attrs() == {"shape", "size", "ndim", "dtype"}


def test_aliases_resolve_to_the_same_rule():
    for rec in _registered():
        for a in rec.aliases:
            other = fact(a)
            assert other is not None and other.rule is rec.rule, _name(rec)
            assert rec.fn in other.aliases, _name(rec)
    for ufunc, op in [(np.add, operator.add), (np.subtract, operator.sub),
                      (np.multiply, operator.mul), (np.true_divide, operator.truediv),
                      (np.negative, operator.neg), (np.matmul, operator.matmul)]:
        assert op in fact(ufunc).aliases and lookup(ufunc) is lookup(op)
    assert np.amax in fact(np.max).aliases


def test_direct_facts():
    assert fact(np.reshape).view and not fact(np.reshape).allocates
    assert fact(np.asarray).view and not fact(np.array).view and fact(np.array).allocates
    assert fact(np.zeros).allocates and fact(np.zeros).non_differentiable
    assert fact(math.sqrt).cheap and fact(np.sqrt).cheap and not fact(np.sin).cheap
    # costs, in tape round trips of 16: an add 1, a division 4, sqrt 6, exp and sin 20
    assert fact(operator.add).cost == 1 and fact(operator.truediv).cost == 4
    assert fact(np.sqrt).cost == 6 and fact(np.exp).cost == fact(math.sin).cost == 20
    assert fact(np.linalg.solve).cost is None  # unknown: never recomputed
    assert not fact(np.linalg.solve).device and not fact(np.zeros).device
    assert fact(math.sin).device and fact(operator.mul).device
    assert fact(np.sum).linear and fact(operator.add).linear and not fact(np.sin).linear
    assert not fact(operator.mul).linear and not fact(np.dot).linear
    assert fact(np.sin).elementwise and fact(math.exp).elementwise
    assert not fact(np.sum).elementwise
    assert fact(builtins.len).query and fact(np.shape).query
    assert result_of(np.argmax).how == "fixed" and result_of(np.sum).how == "declared"
    assert result_of(np.heaviside).how == "broadcast"  # an unrecorded ufunc
    assert result_of(print).how == "unknown"
    assert fact(np.copy).copies and not fact(np.zeros_like).copies
    assert fact(np.sin).device_as == "math.sin" and fact(np.minimum).device_as == "min"
    assert fact(math.log).ieee(0.0) == -np.inf and fact(np.log).ieee is None
    assert fact(np.where).pure and fact(np.sin).pure and fact(np.sum).pure  # (a rule)
    assert not fact(list.append).pure and not fact(print).pure and fact(np.zeros).pure
    # a dropped result: print writes no array, an unknown call or a mutating method may
    assert fact(print).hides_writes is False and not hides_writes(np.sum)
    assert hides_writes(np.copyto) and hides_writes(list.append)
    assert fact(np.concatenate).reshapes and not fact(np.sin).reshapes
    assert fact(list.pop).mutates and fact(np.ndarray.fill).mutates
    assert allocating_names() == {"zeros", "empty", "ones", "full", "zeros_like",
                                  "empty_like", "ones_like", "full_like", "copy", "array",
                                  "arange", "linspace", "snapshot", "shape_stand_in"}


def test_library_facts():
    assert is_library(np.sin) and is_library(math.exp) and is_library(operator.add)
    assert not is_library(np.matmul) and not is_library(test_library_facts)
    assert library_module("numpy.linalg") and library_module("jitgrad.rules")
    assert not library_module("tests.test_primitive_table")


def test_grad_rule_keywords_set_record_fields():
    def double(x):
        return 2.0 * x

    before = version()

    @jg.grad_rule(double, linear=True, elementwise=True, device=True)
    def _double(x):
        def back(dy):
            return (2.0 * dy,)
        return 2.0 * x, back

    rec = fact(double)
    assert version() > before
    assert rec.linear and rec.elementwise and rec.device and not rec.view
    assert rec.result.how == "broadcast" and lookup(double).impl is _double

    def first_of(x, axis):
        return x

    jg.grad_rule(first_of, kind_of=0, view=True)(_double)
    assert fact(first_of).result == Result("arg", arg=0) and fact(first_of).view

    def fresh_buffer(x):
        return x.copy()

    assert "fresh_buffer" not in allocating_names()
    jg.grad_rule(fresh_buffer, allocates=True)(_double)
    assert "fresh_buffer" in allocating_names()
    assert set(RULE_FACTS) == {"linear", "elementwise", "result", "view", "allocates", "cheap",
                               "cost", "device", "random", "copies", "pure", "reshapes",
                               "shape_args", "device_as", "device_rewrite", "linear_in",
                               "shape_of", "sums", "fill", "uninitialised", "fresh",
                               "on_scalars", "power"}
    assert set(RULE_FACTS) < set(SETTABLE)


@pytest.mark.parametrize("meta", [{"viewish": True}, {"float_result": True},
                                  {"methods": "sum"}, {"tangent": None}])
def test_grad_rule_refuses_unknown_keywords(meta):
    with pytest.raises(RuleError):
        jg.grad_rule(np.sin, **meta)


def test_reregistering_one_spelling_leaves_its_aliases():
    def f(x):
        return x

    def g(x):
        return x

    def rule(x):
        def back(dy):
            return (dy,)
        return x, back

    jg.grad_rule(f, g)(rule)
    assert fact(f).aliases == (g,)
    jg.grad_rule(f)(rule)
    assert fact(f).aliases == () and fact(g).aliases == ()


# --- one list of the methods that write their object ------------------------------------
# (the dead-loop/fusion passes and the prange/CUDA privacy analysis had a list each: the
# first lacked the list methods, so it took ``v = xs.pop()`` for a loop that writes only
# names and dropped it; the second lacked ``byteswap``, which writes its array in place)


def _loop_verdict(src: str):
    from jitgrad.transpiler.analysis.dependence import Names, independent

    loop = ast.parse(src).body[0]
    names = Names(frozenset(), lambda n: n in ("a", "xs"), lambda n: {n},
                  lambda e: False, lambda c: False)
    return independent(loop, names)


def test_a_loop_that_pops_a_list_is_not_dead():
    from jitgrad.transpiler.backend.optimize import dead_loops

    body = ast.parse("for i in range(2):\n    v = xs.pop()\nv = 0.0\nn = len(xs)\n").body
    assert len(dead_loops(body)) == 3  # xs loses two entries: len(xs) reads them


def test_an_in_place_byteswap_makes_iterations_dependent():
    verdict = _loop_verdict("for i in range(n):\n    b = a.byteswap(True)\n")
    assert not verdict.ok and "may write into what it is given" in verdict.reason
    assert _loop_verdict("for i in range(n):\n    b = a[i] * 2.0\n").ok


def test_both_passes_read_one_list_of_writing_methods():
    from jitgrad.transpiler.backend.optimize import writes_through_call

    for m in ("append", "pop", "extend", "insert", "remove", "clear", "reverse", "sort",
              "fill", "resize", "put", "partition", "setfield", "byteswap"):
        call = ast.parse(f"xs.{m}(0)").body[0].value
        assert writes_through_call(call), m
        assert not _loop_verdict(f"for i in range(n):\n    v = xs.{m}(0)\n").ok, m
    assert not writes_through_call(ast.parse("xs.copy()").body[0].value)
