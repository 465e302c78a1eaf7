"""Element loops across tape pushes and pops and across arrays of different proven
shapes (``backend/elements.py``, issue 34 item 3): a chain of elementwise statements is
one loop though the tape policy pushes (``_tape.append(t)``) or pops between its
statements, and though it combines arrays the shape classes cannot prove one shape
(``np.dot(X, w)`` with ``Y``, a cotangent with what was stored) where one array of each
proven class is compared at run time; where they differ (broadcasting) the statements
run as written.  Values and every gradient element against central differences in both
``jit`` modes, and the loops the compiled code has."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad

import jitgrad as jg


def logistic_regression(Y, X, w, steps):
    for _i in range(steps):
        w = w - 0.01 * np.dot(((1.0 / (1.0 + np.exp(-Y * np.dot(X, w))) - 1.0) * Y), X)
    return np.sum(w * w)


def softplus_steps(x, a, steps):
    """A scalar rebound every step: the arrays the chain makes are pushed between its
    statements."""
    total = 0.0
    for _i in range(steps):
        e = np.exp(-a * x)
        s = np.log(1.0 + e) * x
        total = total + np.sum(s * e)
        a = a * 0.9
    return total


def tanh_fit(Y, X, w):
    """A matrix-vector product combined elementwise with an argument."""
    r = np.tanh(np.dot(X, w)) - Y
    q = np.exp(-r * r)
    return np.sum(q * Y)


def rows_scaled(A, B, c):
    """A matrix product (2-D) combined with an argument that may broadcast (``c`` of one
    row): the shapes are compared, the statements run as written where they differ."""
    P = np.dot(A, B)
    Q = np.sin(P) * c
    return np.sum(Q * Q + P)


def _data(m=7, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, d))
    Y = X @ rng.normal(size=d) + 0.1 * rng.normal(size=m)
    return Y, X, rng.normal(size=d) * 0.1


def _rows(k, seed=3):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(5, 4)), rng.normal(size=(4, 3)), rng.normal(size=(k, 3))


CASES = [
    (logistic_regression, lambda: (np.sign(_data()[0]), *_data()[1:], 3), (1, 2)),
    (softplus_steps, lambda: (np.linspace(0.1, 1.0, 6), 0.7, 3), (0, 1)),
    (tanh_fit, lambda: _data(seed=1), (0, 1, 2)),
    (rows_scaled, lambda: _rows(5), (0, 1, 2)),
    (rows_scaled, lambda: _rows(1), (0, 1, 2)),  # (broadcast: run as written)
]


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("f, make, wrt", CASES,
                         ids=["logistic", "softplus", "tanh_fit", "rows", "rows_broadcast"])
def test_gradients_match_central_differences(f, make, wrt, jit):
    check_grad(f, make(), wrt=wrt, jit=jit)


def _loops(src: str) -> int:
    return src.count("# one loop over the elements")


def test_logistic_step_is_one_loop_each_way():
    """Each step's forward chain (``-Y * (X @ w)`` to ``(... - 1) * Y``, four pushes
    between) and its adjoint (four pops between) are one loop each; the stand-ins of
    arrays not kept are of the loop's reference array."""
    f, make, wrt = CASES[0]
    src = jg.differentiate(f, wrt=wrt, jit=True).source(*make())
    rev = src.index("range(steps - 1, -1, -1)")
    fwd, back = src[:rev], src[rev:]
    assert _loops(fwd) == 1 and _loops(back) == 1, src
    assert "if _t9.shape == _t10.shape:" in fwd, src
    assert "_tape_t5_1.append(shape_stand_in(Y))" in fwd, src
    assert "np_exp(" not in fwd and "guard(_dt5_e" in back, src
    plain = jg.differentiate(f, wrt=wrt, jit=False).source(*make())
    assert _loops(plain) == 0


@pytest.mark.parametrize("case", [1, 2, 3])
def test_chain_is_one_loop(case):
    """The other programs: forward and adjoint chains fused across pushes, pops and
    shapes compared at run time."""
    f, make, wrt = CASES[case]
    src = jg.differentiate(f, wrt=wrt, jit=True).source(*make())
    assert _loops(src) >= 2, src
    assert case == 1 or ".shape ==" in src, src


def test_chains_checking_the_same_shapes_keep_only_what_fused_chains_read():
    """A chain's arrays are kept for the statements as written of later chains only where
    those check other shapes: with ``unbroadcast(g, x)`` of ``x``'s class, the adjoint's
    chain of ``selection`` checks ``x`` and ``y`` as the forward's do, and the forward's
    first chain keeps what the fused chains read (its statements as written would read
    ``_t``, ``_t4``, ``_t5``, ``_t6`` too)."""
    import corpus_numpy as C

    rng = np.random.default_rng(5)
    x, y = rng.normal(size=6), rng.normal(size=6)
    src = jg.differentiate(C.selection, wrt=(0, 1), jit=True).source(x, y)
    first = src[src.index("# one loop over"):].splitlines()[0]
    assert "arrays kept: _t2, _t7, _t8, a;" in first, src
    assert {line.strip() for line in src.splitlines() if ".shape ==" in line} \
        == {"if x.shape == y.shape:"}, src
    check_grad(C.selection, (x, y), wrt=(0, 1), jit=True)
