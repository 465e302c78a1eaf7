"""The control-flow corpus: every case against finite differences, jit and no-jit."""

import corpus_loops as C
import numpy as np
import pytest
from gradcheck import check_grad

import jitgrad as jg


def _id(case):
    return case[0].__name__


@pytest.mark.parametrize("case", C.CASES, ids=[f"{c[0].__name__}-{k}" for k, c in
                                                enumerate(C.CASES)])
def test_corpus(case, jit):
    f, make, wrt = case
    check_grad(f, make(), wrt=wrt, jit=jit)


def test_corpus_size():
    assert len({c[0] for c in C.CASES}) >= 80


def test_float32_gradient_dtype(jit):
    x = np.linspace(-1, 1, 4).astype(np.float32)
    g = jg.grad(C.arr_write_local, jit=jit)(x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, 5 * x ** 4 * 0 + 3 * x * x, rtol=1e-5)


def test_recursion_refused():
    def rec(a):
        return C.h_recursive(a, 3)

    import corpus_loops

    with pytest.raises(jg.TransformError, match="recursion"):
        jg.grad(corpus_loops.h_recursive)(0.5, 3)


def test_tapes_only_where_needed():
    src = jg.differentiate(C.combo_rosenbrock).source(np.ones(4))
    assert "_tape" not in src  # x is never written: reads are recomputed
    src = jg.differentiate(C.for_loop_carried_scalar).source(0.5, 3)
    assert ".append(i)" not in src  # loop indices are never pushed
