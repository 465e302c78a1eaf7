"""Issue 4 through the transpiler: whole-array NumPy, every element against finite differences."""

import corpus_numpy as C
import numpy as np
import pytest
from gradcheck import check_grad
from hypothesis import given, settings
from hypothesis import strategies as st

import jitgrad as jg

R = np.random.default_rng(7)


def _spd(n):
    a = R.normal(size=(n, n))
    return a @ a.T + n * np.eye(n)


CASES = [
    (C.mlp, lambda: (R.normal(size=(4, 5)), R.normal(size=5), R.normal(size=(5, 3)),
                     R.normal(size=3), R.normal(size=(6, 4)), R.normal(size=(6, 3))), (0, 1, 2, 3)),
    (C.softmax_ce, lambda: (R.normal(size=(5, 4)), np.array([0, 3, 1, 2, 2])), 0),
    (C.broadcasting, lambda: (R.normal(size=(3, 4)), R.normal(size=4), 0.7), (0, 1, 2)),
    (C.broadcast_column, lambda: (R.normal(size=(3, 4)), R.normal(size=3)), (0, 1)),
    (C.reductions, lambda: (R.uniform(0.5, 1.5, size=(4, 3)),), 0),
    (C.norms, lambda: (R.normal(size=3), R.normal(size=(2, 3))), (0, 1)),
    (C.linalg, lambda: (R.normal(size=(3, 3)), R.normal(size=(3, 3)), R.normal(size=3)),
     (0, 1, 2)),
    (C.solve_inv_det, lambda: (_spd(3), R.normal(size=3)), (0, 1)),
    (C.shapes, lambda: (R.normal(size=(3, 4)), R.normal(size=12)), (0, 1)),
    (C.slicing, lambda: (R.normal(size=7), 0.3), (0, 1)),
    (C.fancy_read, lambda: (R.normal(size=5), np.array([0, 2, 2, 4, 0])), 0),
    (C.selection, lambda: (R.normal(size=6), R.normal(size=6)), (0, 1)),
    (C.elementwise_arrays, lambda: (R.uniform(-0.5, 0.5, size=5),), 0),
    (C.sum_of_product, lambda: (R.normal(size=4), R.normal(size=4)), (0, 1)),
    (C.mixed_loop_and_arrays, lambda: (R.normal(size=(4, 3)), R.normal(size=3)), (0, 1)),
    (C.loop_whole_array_update, lambda: (R.normal(size=6), 0.2, 3), (0, 1)),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0].__name__ for c in CASES])
def test_numpy_corpus(case, jit):
    f, make, wrt = case
    check_grad(f, make(), wrt=wrt, jit=jit, rtol=1e-5, atol=1e-6, shared=True)


def test_where_takes_only_the_chosen_side(jit):
    x = np.array([-1.0, 0.0, 2.0])
    g = jg.grad(C.where_no_nan, jit=jit)(x)
    assert np.all(np.isfinite(g))
    np.testing.assert_allclose(g, [0.0, 0.0, 0.5 / np.sqrt(2.0)])


def test_float32_in_float32_out(jit):
    x = np.linspace(-1, 1, 5).astype(np.float32)
    g = jg.grad(C.float32_sum, jit=jit)(x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, 2 * x, rtol=1e-6)


_BROADCAST = {}


@settings(max_examples=20, deadline=None)
@given(shapes=st.sampled_from([((3, 4), (4,)), ((3, 4), (1, 4)), ((3, 1), (3, 4)),
                               ((2, 3, 4), (3, 1)), ((4,), (3, 4))]),
       seed=st.integers(0, 1000))
def test_broadcast_shapes_hypothesis(shapes, seed):
    from gradcheck import numeric_grad

    rng = np.random.default_rng(seed)
    a = rng.normal(size=shapes[0])
    b = rng.normal(size=shapes[1])
    for jit in (True, False):
        key = (shapes, jit)
        if key not in _BROADCAST:
            _BROADCAST[key] = jg.differentiate(C.sum_of_product, wrt=(0, 1), jit=jit)
        ga, gb = _BROADCAST[key].grad(a, b)
        np.testing.assert_allclose(ga, numeric_grad(C.sum_of_product, (a, b), 0), atol=1e-6)
        np.testing.assert_allclose(gb, numeric_grad(C.sum_of_product, (a, b), 1), atol=1e-6)
