"""Forward mode drops a rule's ``unbroadcast`` from elementwise tangents also where the
user's module binds the name ``unbroadcast`` (there generated code reaches the helper by
another name); kept, it summed an array tangent to a scalar's shape: a wrong ``jvp``."""

import numpy as np
import pytest
from gradcheck import function_from_source

import jitgrad as jg

SOURCE = """import numpy as {np}


def f(x, a, n):
    y = x[0] * a
    return y[1] + {np}.sum(y * y)
"""


@pytest.mark.parametrize("jit", [True, False], ids=["jit", "nojit"])
@pytest.mark.parametrize("alias", ["np", "unbroadcast"])
def test_jvp_with_numpy_named_unbroadcast(alias, jit, tmp_path):
    f = function_from_source(tmp_path, f"tangent_{alias}", SOURCE.format(np=alias))
    x, a = np.array([[0.45, 0.18], [-0.36, 0.2]]), -0.74
    vx, va = np.array([[0.1, 0.2], [0.3, 0.4]]), 0.5
    value, tangent = jg.differentiate(f, wrt=(0, 1), jit=jit).jvp((x, a, 2), (vx, va))
    eps = 1e-6
    fd = (f(x + eps * vx, a + eps * va, 2) - f(x - eps * vx, a - eps * va, 2)) / (2 * eps)
    assert value == pytest.approx(f(x, a, 2), rel=1e-14)
    assert tangent == pytest.approx(fd, rel=1e-7)
