"""Whole-array NumPy rules: pullbacks against central finite differences on every
input element, and the rule templates compiled with Numba against the eager rule.

``compiled(rule)`` does what the transpiler does with a rule: it takes the rule's
source, keeps the forward statements, appends the pullback body, and compiles
``def f(<params>, dy): ...; return value, grads`` with ``numba.njit`` in the rule
module's globals.  Compiled functions are cached per rule, and each test keeps
dtypes and ndims fixed so Numba compiles once per test.
"""

import ast
import inspect
import operator
import textwrap
import warnings

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jitgrad.rules.arrays  # noqa: F401  (registers the rules)
from jitgrad.kernels import arrays as array_helpers
from jitgrad.rules.registry import lookup

FAST = settings(max_examples=12, deadline=None, derandomize=True)

# --- compiling a rule as the transpiler inlines it ----------------------------

_COMPILED = {}


def compiled(rule):
    """``rule`` inlined into one njit function ``f(*params, dy) -> (value, grads)``."""
    if rule in _COMPILED:
        return _COMPILED[rule]
    fn = ast.parse(textwrap.dedent(inspect.getsource(rule))).body[0]
    forward = [s for s in fn.body if not isinstance(s, (ast.FunctionDef, ast.Return))
               and not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    back = next(s for s in fn.body if isinstance(s, ast.FunctionDef))
    value = fn.body[-1].value.elts[0]
    *back_body, grads = back.body
    params = [a.arg for a in fn.args.args] + [back.args.args[0].arg]
    lines = [f"def inlined({', '.join(params)}):"]
    lines += [textwrap.indent(ast.unparse(s), "    ") for s in forward]
    lines.append(f"    value_ = {ast.unparse(value)}")
    lines += [textwrap.indent(ast.unparse(s), "    ") for s in back_body]
    lines.append(f"    return value_, {ast.unparse(grads.value)}")
    ns = dict(rule.__globals__)
    exec("\n".join(lines), ns)
    _COMPILED[rule] = numba.njit(ns["inlined"])
    return _COMPILED[rule]


def run_rule(prim, args, opts):
    """Eager ``(value, grads)`` and compiled ``(value, grads)`` for one random ``dy``."""
    rule = lookup(prim).impl
    value, back = rule(*args, **opts)
    dy = _like(np.random.default_rng(1).standard_normal(np.shape(value)), value)
    grads = back(dy)
    bound = inspect.signature(rule).bind(*args, **opts)
    bound.apply_defaults()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", numba.NumbaPerformanceWarning)
        cvalue, cgrads = compiled(rule)(*bound.args, dy)
    return value, dy, grads, (cvalue, cgrads)


def _like(a, value):
    """``a`` in ``value``'s dtype, a scalar where ``value`` is one."""
    dt = np.asarray(value).dtype
    return dt.type(a) if np.ndim(value) == 0 else a.astype(dt)


def assert_tree_close(a, b, rtol=1e-7, atol=1e-9, dtype=True):
    """Nested tuples of arrays/scalars/None are equal in structure, values and dtype."""
    if a is None or b is None:
        assert a is None and b is None
    elif isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            assert_tree_close(x, y, rtol, atol, dtype)
    else:
        assert np.shape(a) == np.shape(b)
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)
        if dtype and np.ndim(a):  # Numba boxes float32 scalars as Python floats
            assert np.asarray(a).dtype == np.asarray(b).dtype


# --- finite differences on every element --------------------------------------


def _leaves(args, diff):
    """``(arg position, tuple position or None)`` of each array checked by finite differences."""
    for i in diff:
        if isinstance(args[i], tuple):
            yield from ((i, k) for k in range(len(args[i])))
        else:
            yield i, None


def _replace(args, i, k, leaf):
    args = list(args)
    args[i] = leaf if k is None else args[i][:k] + (leaf,) + args[i][k + 1:]
    return args


def check_fd(prim, args, opts, dy, grads, diff, h=1e-6, rtol=1e-5, atol=1e-7):
    """Central differences of ``sum(prim(*args) * dy)`` match ``grads`` element by element."""
    for i, k in _leaves(args, diff):
        base = np.asarray(args[i] if k is None else args[i][k], dtype=np.float64)
        got = grads[i] if k is None else grads[i][k]
        assert np.shape(got) == base.shape, (i, k)
        fd = np.zeros(base.shape)
        for idx in np.ndindex(base.shape):
            loss = []
            for step in (h, -h):
                leaf = base.copy()
                leaf[idx] += step
                leaf = leaf if base.ndim else float(leaf)
                loss.append(np.sum(prim(*_replace(args, i, k, leaf), **opts) * dy))
            fd[idx] = (loss[0] - loss[1]) / (2 * h)
        np.testing.assert_allclose(got, fd, rtol=rtol, atol=atol, err_msg=f"argument {i}.{k}")


def check(prim, *args, diff=None, **opts):
    """The whole contract for one call: value, finite differences, compiled == eager."""
    value, dy, grads, (cvalue, cgrads) = run_rule(prim, args, opts)
    np.testing.assert_allclose(value, prim(*args, **opts), rtol=1e-12, atol=1e-12)
    assert len(grads) == len(args)
    diff = range(len(args)) if diff is None else diff
    for i in range(len(args)):
        if i not in diff:
            assert grads[i] is None
    check_fd(prim, args, opts, dy, grads, diff)
    assert_tree_close(cvalue, value, rtol=1e-10, atol=1e-12, dtype=False)
    assert_tree_close(cgrads, grads, rtol=1e-10, atol=1e-12)


# --- registration --------------------------------------------------------------

PRIMITIVES = [
    np.sum, np.mean, np.prod, np.max, np.amax, np.min, np.amin, np.var, np.std,
    np.linalg.norm, np.dot, np.matmul, operator.matmul, np.outer, np.linalg.solve,
    np.linalg.inv, np.linalg.det, np.trace, np.reshape, np.transpose, np.ravel,
    np.concatenate, np.stack, np.hstack, np.vstack, np.expand_dims, operator.getitem,
    np.where, np.clip, np.cumsum, np.copy, np.ndarray.copy, np.ndarray.sum,
]


@pytest.mark.parametrize("prim", PRIMITIVES, ids=lambda p: getattr(p, "__name__", str(p)))
def test_registered(prim):
    assert lookup(prim) is not None
    assert lookup(prim).impl.__module__ == "jitgrad.rules.arrays"


# --- reductions ----------------------------------------------------------------

REDUCTIONS = [np.sum, np.mean, np.prod, np.max, np.min, np.var, np.std]
shapes2 = st.tuples(st.integers(1, 4), st.integers(2, 4))
seeds = st.integers(0, 2**16)


def randn(seed, shape, dtype=np.float64):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("prim", REDUCTIONS, ids=lambda p: p.__name__)
@pytest.mark.parametrize("axis", [None, 1, -2])
@FAST
@given(shape=shapes2, seed=seeds)
def test_reduction_2d(prim, axis, shape, seed):
    check(prim, randn(seed, shape), axis=axis)


@pytest.mark.parametrize("prim, shape, axis", [(np.max, (5,), 0), (np.max, (2, 3, 4), 1),
                                             (np.var, (2, 3, 4), -1)])
def test_reduction_other_ndims(prim, shape, axis):
    check(prim, randn(0, shape), axis=axis)


def test_reduction_ddof():
    check(np.var, randn(2, (3, 4)), axis=0, ddof=1)
    check(np.std, randn(3, (3, 4)), ddof=1)


def test_prod_with_zeros_is_exact():
    x = np.array([[2.0, 0.0, 3.0], [0.0, 0.0, 5.0]])
    _, _, grads, _ = run_rule(np.prod, (x,), {"axis": 1})
    check(np.prod, x, axis=1)
    check(np.prod, x[0])
    assert np.all(np.isfinite(grads[0]))


def test_max_ties_split_the_gradient():
    x = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])
    rule = lookup(np.max).impl
    _, back = rule(x, axis=1)
    np.testing.assert_allclose(back(np.ones(2))[0], [[0, 0.5, 0.5], [1 / 3, 1 / 3, 1 / 3]])
    _, cgrads = compiled(rule)(x, 1, False, np.ones(2))
    np.testing.assert_allclose(cgrads[0], back(np.ones(2))[0])


@FAST
@given(n=st.integers(1, 6), m=st.integers(1, 4), seed=seeds)
def test_norm(n, m, seed):
    check(np.linalg.norm, randn(seed, (n,)))
    check(np.linalg.norm, randn(seed, (n, m)))


def test_norm_at_zero_is_zero():
    _, back = lookup(np.linalg.norm).impl(np.zeros(3))
    assert np.array_equal(back(1.0)[0], np.zeros(3))


# --- linear algebra ------------------------------------------------------------

dims = st.integers(1, 4)


@pytest.mark.parametrize("prim", [np.dot, operator.matmul])
@pytest.mark.parametrize("nds", [(1, 1), (2, 1), (1, 2), (2, 2)])
@FAST
@given(n=dims, k=dims, m=dims, seed=seeds)
def test_dot_matmul(prim, nds, n, k, m, seed):
    a = randn(seed, (n, k)[2 - nds[0]:])
    b = randn(seed + 1, (k, m)[: nds[1]])
    check(prim, a, b)


@FAST
@given(n=dims, m=dims, seed=seeds)
def test_outer(n, m, seed):
    check(np.outer, randn(seed, n), randn(seed + 1, m))


def well_conditioned(seed, n):
    return randn(seed, (n, n)) + 2 * n * np.eye(n)


@pytest.mark.parametrize("rhs_ndim", [1, 2])
@FAST
@given(n=dims, m=dims, seed=seeds)
def test_solve(rhs_ndim, n, m, seed):
    check(np.linalg.solve, well_conditioned(seed, n), randn(seed + 1, (n, m)[:rhs_ndim]))


@pytest.mark.parametrize("prim", [np.linalg.inv, np.linalg.det], ids=lambda p: p.__name__)
@FAST
@given(n=dims, seed=seeds)
def test_inv_det(prim, n, seed):
    check(prim, well_conditioned(seed, n))


@FAST
@given(shape=shapes2, seed=seeds)
def test_trace(shape, seed):
    check(np.trace, randn(seed, shape))


# --- shape ---------------------------------------------------------------------


def test_reshape_ravel_expand_dims_transpose():
    x = randn(0, (2, 3))
    check(np.reshape, x, (3, -1), diff=[0])
    check(np.ravel, x)
    check(np.ravel, x.T)
    check(np.expand_dims, x, 1, diff=[0])
    check(np.transpose, x)
    check(np.transpose, randn(1, (2, 3, 4)), axes=(2, 0, -2))
    check(np.copy, x)
    check(np.ndarray.copy, x)


@pytest.mark.parametrize("axis", [0, 1, -1])
@FAST
@given(sizes=st.tuples(dims, dims, dims), rows=dims, seed=seeds)
def test_concatenate(axis, sizes, rows, seed):
    shape = [(s, rows) if axis == 0 else (rows, s) for s in sizes]
    arrays = tuple(randn(seed + i, sh) for i, sh in enumerate(shape))
    check(np.concatenate, arrays, axis=axis)


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
@FAST
@given(shape=shapes2, seed=seeds)
def test_stack(axis, shape, seed):
    check(np.stack, tuple(randn(seed + i, shape) for i in range(3)), axis=axis)


@pytest.mark.parametrize("prim", [np.hstack, np.vstack], ids=lambda p: p.__name__)
def test_hstack_vstack(prim):
    check(prim, (randn(0, 3), randn(1, 3)))
    check(prim, (randn(2, (2, 3)), randn(3, (2, 3))))


def test_concatenate_gradient_is_a_tuple():
    arrays = (np.ones(2), np.ones(3))
    _, back = lookup(np.concatenate).impl(arrays)
    (g,) = back(np.arange(5.0))
    assert isinstance(g, tuple)
    assert_tree_close(g, (np.arange(2.0), np.arange(2.0, 5.0)))


# --- indexing ------------------------------------------------------------------

INDICES = {
    "int": (5, 2),
    "negative-int": (5, -1),
    "slice": (5, slice(1, 4)),
    "int-array-repeats": (5, np.array([0, 3, 0, 0, -1])),
    "2d-int": ((3, 4), 1),
    "2d-tuple": ((3, 4), (1, 2)),
    "2d-slices": ((3, 4), (slice(0, 2), slice(1, None, 2))),
    "2d-int-slice": ((3, 4), (slice(None), 2)),
    "2d-newaxis": ((3, 4), (None, 1)),
    "2d-rows-repeat": ((3, 4), np.array([2, 0, 2])),
}


@pytest.mark.parametrize("shape, index", INDICES.values(), ids=INDICES.keys())
def test_getitem(shape, index):
    check(operator.getitem, randn(0, shape), index, diff=[0])


def test_getitem_repeats_accumulate():
    x = np.zeros(3)
    _, back = lookup(operator.getitem).impl(x, np.array([1, 1, 1]))
    assert np.array_equal(back(np.ones(3))[0], [0.0, 3.0, 0.0])


# --- selection and cumulative sums ---------------------------------------------

bshape = st.tuples(st.sampled_from([1, 3]), st.sampled_from([1, 4]))


@FAST
@given(sc=bshape, sa=bshape, sb=bshape, seed=seeds)
def test_where_broadcasts(sc, sa, sb, seed):
    cond = randn(seed, sc) > 0
    check(np.where, cond, randn(seed + 1, sa), randn(seed + 2, sb), diff=[1, 2])


def test_where_scalar_side_and_no_nan_leak():
    x = np.array([-1.0, 0.0, 4.0])
    check(np.where, x > 0, x, 0.0, diff=[1, 2])
    rule = lookup(np.where).impl
    with np.errstate(all="ignore"):
        untaken = np.log(x)  # -inf and nan where cond is False
    _, back = rule(x > 0, x, untaken)
    _, ga, gb = back(np.ones(3))
    assert np.all(np.isfinite(ga)) and np.all(np.isfinite(gb))
    assert np.array_equal(gb, [1.0, 1.0, 0.0])


@FAST
@given(sx=bshape, slo=bshape, seed=seeds)
def test_clip(sx, slo, seed):
    x = 2 * randn(seed, sx)
    lo = randn(seed + 1, slo) - 0.5
    check(np.clip, x, lo, lo + 1.0)


def test_clip_scalar_bounds():
    check(np.clip, randn(0, (3, 4)) * 2, -0.5, 0.5)


@pytest.mark.parametrize("x", [-2.0, 0.3, 2.0])
def test_clip_and_where_on_scalars(x):
    check(np.clip, x, -0.5, 0.5)
    check(np.where, x > 0, x, 2 * x, diff=[1, 2])


@pytest.mark.parametrize("shape, axis", [((6,), None), ((2, 3), None), ((2, 3, 2), 1)])
def test_cumsum(shape, axis):
    check(np.cumsum, randn(0, shape), axis=axis)


# --- float32 in, float32 out ---------------------------------------------------

F32_CASES = {
    "sum": (np.sum, lambda x: (x,), {"axis": 1}),
    "mean": (np.mean, lambda x: (x,), {}),
    "prod": (np.prod, lambda x: (x,), {"axis": 0}),
    "max": (np.max, lambda x: (x,), {"axis": 1}),
    "std": (np.std, lambda x: (x,), {"axis": 0}),
    "norm": (np.linalg.norm, lambda x: (x,), {}),
    "matmul": (np.matmul, lambda x: (x, x.T), {}),
    "det": (np.linalg.det, lambda x: (x[:3, :3] + 6 * np.eye(3, dtype=x.dtype),), {}),
    "trace": (np.trace, lambda x: (x,), {}),
    "getitem": (operator.getitem, lambda x: (x, np.array([0, 0, 2])), {}),
    "where": (np.where, lambda x: (x > 0, x, x.T.T), {}),
    "clip": (np.clip, lambda x: (x, np.float32(-0.5), np.float32(0.5)), {}),
    "cumsum": (np.cumsum, lambda x: (x,), {}),
}


@pytest.mark.parametrize("prim, make, opts", F32_CASES.values(), ids=F32_CASES.keys())
def test_float32_gradients_stay_float32(prim, make, opts):
    args = make(randn(0, (3, 4), np.float32))
    _, _, grads, (_, cgrads) = run_rule(prim, args, opts)
    for g, cg, a in zip(grads, cgrads, args, strict=True):
        if isinstance(a, np.ndarray) and a.dtype == np.float32:
            assert g.dtype == np.float32 and cg.dtype == np.float32
    assert_tree_close(cgrads, grads, rtol=1e-5, atol=1e-6)


# --- helpers directly ------------------------------------------------------------


def test_batched_matmul_is_refused_not_wrong():
    _, back = lookup(operator.matmul).impl(np.ones((2, 3, 3)), np.ones((2, 3, 3)))
    with pytest.raises(ValueError, match="1-d and 2-d"):
        back(np.ones((2, 3, 3)))


def test_helpers_reject_what_they_cannot_compile():
    f = numba.njit(lambda dy, x, i: array_helpers.scatter_add(dy, x, i))
    with pytest.raises(numba.core.errors.TypingError, match="integer arrays inside"):
        f(np.ones(2), np.zeros((3, 3)), (np.array([0, 1]), 0))
