"""numba.prange loops are differentiated as the range they iterate (serial sweeps; the
primal stays the user's parallel dispatcher), against finite differences."""

import corpus_prange as P
import numpy as np
import pytest
from gradcheck import check_grad


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("f", [P.reduction, P.elementwise], ids=["reduction", "elementwise"])
def test_prange_gradients(f, jit):
    x = np.linspace(-0.8, 0.9, 7)
    check_grad(f, (x, 0.6), wrt=(0, 1), jit=jit)


def test_prange_source_is_a_range_loop():
    import jitgrad as jg

    src = jg.differentiate(P.reduction, wrt=(0, 1)).source(np.ones(3), 0.5)
    assert "for i in range(" in src and "prange" not in src
