"""Lists of numbers (front/value_lists.py) under other names: numpy imported as another
name (``dJ.array(xs)`` is recognised by what it calls), and a local named ``np`` beside
the preallocated array (generated code reaches numpy by a name of its own)."""

import numpy as np
import pytest
from gradcheck import check_grad, function_from_source

ALIASED = """import numpy as dJ


def f(x, a):
    xs = [a, 0.9]
    for i in range(2, 5):
        xs.append(a)
        a = a * 0.9 + x[i - 1]
    return a + dJ.sum(dJ.array(xs) * 1.1) + dJ.asarray(xs)[1]
"""

LOCAL_NP = """import numpy as dJ


def f(x, a):
    np = 0.5
    xs = [a, np]
    for i in range(2, 5):
        xs.append(a * a)
        a = a * 0.9 + x[i - 1]
    return a + xs[-1] * len(xs) + xs[1]
"""


@pytest.mark.parametrize("jit", [True, False], ids=["jit", "nojit"])
@pytest.mark.parametrize("name, source", [("aliased", ALIASED), ("local_np", LOCAL_NP)],
                         ids=["aliased", "local_np"])
def test_lists_under_other_names(name, source, jit, tmp_path):
    f = function_from_source(tmp_path, f"lists_{name}", source)
    x = np.array([0.57, -0.96, -0.68, 0.31, -0.35])
    check_grad(f, (x, -0.67), wrt=(0, 1), jit=jit)
