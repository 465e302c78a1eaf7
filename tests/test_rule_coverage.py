"""Rule coverage: every ``math`` function and NumPy function or ufunc that Numba compiles
in nopython mode has a gradient rule, is declared non-differentiable, or is listed as
refused in docs/supported.md (and then raises a located TransformError).  The rules
added with this coverage are checked against central finite differences on every
input element, compiled (``jit=True``) and as plain Python (``jit=False``), and the
kinds that kind inference gives their results are checked too.
"""

import builtins
import copy
import math
import operator
import re
from pathlib import Path

import corpus_rules2 as C
import numba
import numpy as np
import pytest
from gradcheck import check_grad, numeric_grad, shared_diff
from hypothesis import given, settings
from hypothesis import strategies as st

import jitgrad as jg
from jitgrad.rules import is_non_differentiable, lookup

DOC = Path(__file__).resolve().parents[1] / "docs" / "supported.md"
REFUSED_SECTION = "## Functions without gradient rules"

#: the builtins that compute with numbers (Numba also compiles print, zip, list...)
NUMERIC_BUILTINS = ("abs", "bool", "complex", "divmod", "float", "int", "len", "max", "min",
                    "pow", "range", "round", "sum")

# --- the inventory -------------------------------------------------------------------


def _numba_callables() -> set[int]:
    """ids of the global callables Numba's CPU typing context knows (math, NumPy, builtins).

    NumPy's overloads register lazily: compiling one function loads them.  This reads
    Numba's registries (a private attribute, stable for years): the typing templates
    are exactly the functions nopython mode accepts.
    """
    from numba.core.registry import cpu_target

    numba.njit(lambda x: np.sum(x))(np.ones(1))
    ctx = cpu_target.typing_context
    ctx.refresh()
    return {id(fn) for reg in ctx._registries for fn, _ in reg.globals}


def _inventory() -> dict[tuple[str, ...], object]:
    """Every math/NumPy/np.linalg callable and numeric builtin Numba compiles, keyed by
    all its spellings (``np.abs`` and ``np.absolute`` are one object)."""
    from numba.np.ufunc_db import get_ufuncs

    known = _numba_callables()
    found: dict[int, tuple[list[str], object]] = {}

    def add(name, obj):
        found.setdefault(id(obj), ([], obj))[0].append(name)

    for prefix, mod in (("math", math), ("np", np), ("np.linalg", np.linalg)):
        for n in sorted(dir(mod)):
            if n.startswith("_"):
                continue
            try:
                obj = getattr(mod, n)
            except AttributeError:
                continue
            if callable(obj) and id(obj) in known:
                add(f"{prefix}.{n}", obj)
    for u in get_ufuncs():
        add(f"np.{u.__name__}", u)
    for n in NUMERIC_BUILTINS:
        add(n, getattr(builtins, n))
    return {tuple(sorted(set(names))): obj for names, obj in found.values()}


def _resolve(name: str):
    mod, _, attr = name.rpartition(".")
    base = {"": builtins, "math": math, "np": np, "np.linalg": np.linalg}[mod]
    return getattr(base, attr, None)


def _refused_names() -> list[str]:
    """The names in the bullet list of docs/supported.md's refused section."""
    section = DOC.read_text().split(REFUSED_SECTION, 1)[1].split("\n## ", 1)[0]
    names = []
    for item in re.split(r"\n- ", section)[1:]:
        item = item.split("\n\n", 1)[0]
        for span in re.findall(r"`([^`]*)`", item):
            names += span.split()
    return names


INVENTORY = _inventory()
REFUSED = _refused_names()


def _category(names, obj) -> list[str]:
    cats = []
    if lookup(obj) is not None:
        cats.append("rule")
    if is_non_differentiable(obj):
        cats.append("non-differentiable")
    if set(names) & set(REFUSED):
        cats.append("refused")
    return cats


def counts() -> dict[str, int]:
    """How many inventory entries fall in each category (and in all)."""
    out = {"enumerated": len(INVENTORY), "rule": 0, "non-differentiable": 0, "refused": 0}
    for names, obj in INVENTORY.items():
        for c in _category(names, obj):
            out[c] += 1
    return out


def test_inventory_is_complete_enough():
    """The enumeration found what Numba documents (a guard against a registry change)."""
    flat = {n for names in INVENTORY for n in names}
    for expected in ("math.sin", "math.gamma", "np.sum", "np.linalg.svd", "np.sort",
                     "np.add", "np.diag", "np.atleast_2d", "sum", "max"):
        assert expected in flat
    assert len(INVENTORY) > 300


def test_every_function_numba_compiles_is_covered():
    missing = ["/".join(n) for n, obj in INVENTORY.items() if not _category(n, obj)]
    assert not missing, ("no rule, not declared non-differentiable and not refused in "
                         f"docs/supported.md: {missing}")


def test_categories_do_not_overlap():
    both = {"/".join(n): c for n, obj in INVENTORY.items() if len(c := _category(n, obj)) > 1}
    assert not both


def test_refused_list_names_functions_without_rules():
    assert len(REFUSED) == len(set(REFUSED)), "a name is listed twice"
    for name in REFUSED:
        obj = _resolve(name)
        if obj is None:
            assert name.startswith("math."), name  # math grows between Python versions
            continue
        assert lookup(obj) is None, f"{name} is listed as refused but has a rule"
        assert not is_non_differentiable(obj), f"{name} is listed as refused but is declared"


def _refused_objects():
    seen, out = set(), []
    for name in REFUSED:
        obj = _resolve(name)
        if obj is not None and id(obj) not in seen:
            seen.add(id(obj))
            out.append(pytest.param(obj, id=name))
    return out


@pytest.mark.parametrize("fn", _refused_objects())
def test_refused_function_raises_located_transform_error(fn):
    """A refused function applied to a differentiated value: TransformError at its line."""
    scalar = getattr(fn, "__module__", None) in ("math", "builtins") or fn in (complex, divmod)
    arg = 0.5 if scalar else np.full((3, 3), 0.5)
    C.set_fn(fn)
    try:
        with pytest.raises(jg.TransformError) as err:
            jg.differentiate(C.calls_fn, jit=False).grad(arg)
    finally:
        C.set_fn(None)
    assert "no gradient rule" in err.value.msg
    assert err.value.lineno is not None and err.value.filename.endswith("corpus_rules2.py")
    assert "FN(x)" in err.value.source_line


def test_counts_are_reported(capsys):
    c = counts()
    assert c["rule"] + c["non-differentiable"] + c["refused"] == c["enumerated"]
    with capsys.disabled():
        print(f"\nrule coverage: {c}")


# --- one rule serves every spelling ----------------------------------------------

SPELLINGS = [
    (np.add, operator.add), (np.subtract, operator.sub), (np.multiply, operator.mul),
    (np.divide, operator.truediv), (np.true_divide, operator.truediv),
    (np.negative, operator.neg), (np.positive, operator.pos), (np.remainder, operator.mod),
    (np.floor_divide, operator.floordiv), (builtins.pow, operator.pow),
    (np.arcsinh, math.asinh), (np.arccosh, math.acosh), (np.arctanh, math.atanh),
    (np.exp2, math.exp2), (np.log2, math.log2), (np.log10, math.log10),
    (np.degrees, math.degrees), (np.rad2deg, math.degrees), (np.radians, math.radians),
    (np.deg2rad, math.radians), (np.copysign, math.copysign), (np.ldexp, math.ldexp),
    (np.fabs, math.fabs), (np.float_power, np.power), (np.max, np.amax),
    (np.array, np.asarray), (np.ascontiguousarray, np.asfortranarray),
]


@pytest.mark.parametrize("a, b", SPELLINGS, ids=lambda p: getattr(p, "__name__", str(p)))
def test_one_rule_per_operation(a, b):
    assert lookup(a) is not None and lookup(a) is lookup(b)


def test_builtin_max_is_not_the_elementwise_maximum():
    assert lookup(builtins.max) is not lookup(np.maximum)
    assert lookup(np.maximum) is lookup(np.fmax)


# --- finite differences, compiled and plain --------------------------------------

R = np.random.default_rng(11)


def _u(lo, hi, *shape):
    return R.uniform(lo, hi, size=shape)


CASES = [
    (C.ufunc_operators, lambda: (_u(-0.9, 0.9, 5), _u(0.5, 2.0, 5)), (0, 1)),
    (C.ufunc_elementwise, lambda: (_u(-0.9, 0.9, 5), _u(0.5, 2.0, 5)), (0, 1)),
    (C.ufunc_broadcast, lambda: (_u(0.2, 1.0, 3, 4), _u(-1, 1, 4), 0.6), (0, 1, 2)),
    (C.math_new, lambda: (0.3, 1.7), (0, 1)),
    (C.gamma_negative, lambda: (-2.4,), 0),
    (C.keepdims, lambda: (_u(0.5, 1.5, 3, 4),), 0),
    (C.keepdims_vector, lambda: (_u(-1, 1, 5),), 0),
    (C.nary_max_min, lambda: (0.3, -0.7, 1.2), (0, 1, 2)),
    (C.nary_max_min, lambda: (1.1, 0.7, -0.2), (0, 1, 2)),
    (C.builtins_of_array, lambda: (R.normal(size=5),), 0),
    (C.builtins_of_list, lambda: (0.3, 0.8), (0, 1)),
    (C.diagonals, lambda: (R.normal(size=3), R.normal(size=(3, 3)), R.normal(size=(3, 4))),
     (0, 1, 2)),
    (C.atleast, lambda: (R.normal(size=3), R.normal(size=(3, 3))), (0, 1)),
    (C.orders, lambda: (R.normal(size=4), R.normal(size=(3, 4))), (0, 1)),
    (C.views, lambda: (R.normal(size=3), R.normal(size=(3, 3))), (0, 1)),
    (C.differences, lambda: (R.normal(size=6), R.normal(size=6), R.normal(size=(3, 4))),
     (0, 1, 2)),
    (C.from_scalars, lambda: (0.3, 0.8), (0, 1)),
    (C.loop_rules, lambda: (_u(0.1, 1.0, 6), 4), 0),
    (C.loop_keepdims, lambda: (R.normal(size=(3, 4)), 3), 0),
    (C.loop_elementwise, lambda: (_u(-1, 1, 5), 3), 0),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0].__name__}-{k}" for k, c in enumerate(CASES)])
def test_new_rules_against_finite_differences(case, jit):
    f, make, wrt = case
    check_grad(f, make(), wrt=wrt, jit=jit, rtol=1e-5, atol=1e-6, shared=True)


def _grad_of(f, jit):
    """One Differentiated per function and mode, the one the corpus test above checked
    (``ufunc_elementwise`` is compiled once)."""
    return shared_diff(f, (0, 1), jit)


@settings(max_examples=25, deadline=None)
@given(x=st.floats(-0.9, 0.9), y=st.floats(0.3, 3.0))
def test_elementwise_rules_hypothesis_scalars(x, y):
    for jit in (True, False):
        g = _grad_of(C.scalar_mix, jit).grad(x, y)
        for k in range(2):
            fd = numeric_grad(C.scalar_mix, (x, y), k)
            np.testing.assert_allclose(g[k], fd, rtol=1e-4, atol=1e-5)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**16), n=st.integers(1, 6))
def test_elementwise_rules_hypothesis_arrays(seed, n):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-0.9, 0.9, n)
    y = rng.uniform(0.5, 2.0, n)
    for jit in (True, False):
        g = _grad_of(C.ufunc_elementwise, jit).grad(x, y)
        for k, arg in enumerate((x, y)):
            fd = numeric_grad(C.ufunc_elementwise, (x, y), k)
            assert np.shape(g[k]) == np.shape(arg)
            np.testing.assert_allclose(g[k], fd, rtol=1e-4, atol=1e-5)


# --- semantics at ties, NaNs and singular points ----------------------------------


def test_max_and_min_give_the_first_of_ties_everything(jit):
    g = jg.differentiate(C.max_first_of_ties, wrt=(0, 1), jit=jit).grad(1.0, 1.0)
    np.testing.assert_allclose(g, (1.0, 1.0))


def test_max_follows_python_with_nan(jit):
    d = jg.differentiate(C.max_of_two, wrt=(0, 1), jit=jit)
    v, g = d.value_and_grad(np.nan, 1.0)  # Python: 1.0 > nan is False, max is nan
    assert np.isnan(v)
    np.testing.assert_array_equal(g, (1.0, 0.0))
    v, g = d.value_and_grad(1.0, np.nan)
    assert v == 1.0
    np.testing.assert_array_equal(g, (1.0, 0.0))


def test_singular_points_give_inf_not_exceptions(jit):
    x = np.array([0.0, 1.0, 0.5])
    g = jg.differentiate(C.singular, jit=jit).grad(x)
    assert np.isinf(g[0]) and np.isinf(g[1])  # log2, cbrt at 0; arctanh at 1
    assert np.isfinite(g[2])


def test_zero_gradient_at_a_singular_point_stays_zero(jit):
    g = jg.differentiate(C.masked_singular, jit=jit).grad(np.array([0.0, 1.0]))
    np.testing.assert_array_equal(g, [1.0, 1.0])


def test_gamma_at_a_pole_is_nan_not_an_error(jit):
    g = jg.differentiate(C.gamma_negative, jit=jit).grad(-2.0)
    assert not np.isfinite(g)


# --- kinds ------------------------------------------------------------------------


def test_kinds_of_new_rules():
    from jitgrad.transpiler.analysis.kinds import infer, of_value
    from jitgrad.transpiler.pipeline import prepare

    args = (np.ones(3), np.ones((3, 3)), 0.5, 1.5)
    prep = prepare(C.kinds_demo)
    kinds = infer(copy.deepcopy(prep.body), dict(prep.env),
                  {p: of_value(a) for p, a in zip(prep.params, args, strict=True)})
    expected = {"D": "f2", "d": "f1", "P": "f2", "Q": "f3", "K": "f2", "M": "f2", "N": "f2",
                "r": "f1", "m": "f0", "i": "i0", "s": "f0", "mv": "f0", "arr": "f1",
                "iarr": "i1", "farr": "f1", "B": "f2", "S": "f1", "F": "f2", "vd": "f0",
                "Z": "o?"}  # np.squeeze (no rule; Numba lacks it): ndim unknown
    got = {n: str(kinds[n]) for n in expected}
    assert got == expected


def test_result_ndim_functions():
    from jitgrad.rules.results import RUNTIME, extreme, reduced, shaped, sorted_

    assert reduced(2, axis=1, keepdims=True) == 2 and reduced(3, axis=0) == 2
    assert reduced(2, keepdims=RUNTIME) is None
    assert extreme(1) == 0 and extreme(0, b=RUNTIME) == 0
    assert shaped(1, shape=(RUNTIME, RUNTIME)) == 2 and shaped(1, shape=RUNTIME) is None
    assert sorted_(2, axis=None) == 1


# --- float32 arguments ----------------------------------------------------------------


#: ``y = f(y) * 1.1`` in a loop: float32 times a float is float64 in Numba (NumPy keeps
#: float32), so Numba cannot unify the loop's array; its primal fails as the gradient does
NUMBA_UNSTABLE_ON_FLOAT32 = (C.loop_keepdims, C.loop_elementwise)


def _float32(v):
    return v.astype(np.float32) if isinstance(v, np.ndarray) else v


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0].__name__}-{k}" for k, c in enumerate(CASES)])
def test_rules_on_float32_arguments(case, jit):
    """Float32 arrays in: the value is the function's on them, and each gradient is
    float32, the float64 central differences at the same (float32) point to float32's
    precision."""
    f, make, wrt = case
    if jit and f in NUMBA_UNSTABLE_ON_FLOAT32:
        pytest.skip("numba.njit refuses the function itself on float32 (its array changes "
                    "dtype in the loop)")
    args = tuple(_float32(a) for a in make())
    wrts = wrt if isinstance(wrt, tuple) else (wrt,)
    value, grads = jg.differentiate(f, wrt=wrts, jit=jit).value_and_grad(*args)
    np.testing.assert_allclose(value, f(*[copy.copy(a) for a in args]), rtol=1e-4, atol=1e-5)
    at = tuple(a.astype(np.float64) if isinstance(a, np.ndarray) else a for a in args)
    for w, g in zip(wrts, grads, strict=True):
        if isinstance(args[w], np.ndarray):
            assert g.dtype == np.float32, (w, g.dtype)
        np.testing.assert_allclose(g, numeric_grad(f, at, w), rtol=2e-3, atol=2e-3,
                                   err_msg=f"gradient w.r.t. argument {w}")
