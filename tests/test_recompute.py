"""Store or recompute by cost (``analysis/cost.py``, ``modes/tapes.py``): what is taped and
what is recomputed on small programs, the comments saying so, soundness where an operand
is overwritten, and the gradients of the loop workloads the decisions change (every input
element against central differences, compiled and not)."""

import math
import re

import numpy as np
import pytest
from gradcheck import benchmark_workloads, check_grad, function_from_source
from test_pass_decisions import (
    assert_tapes_balanced,
    code,
    gen,
    lines_matching,
    pushed_values,
    pushes,
    sweeps,
    tape_names,
    vec,
)

from jitgrad.rules.primitives import TAPE_COST

# --- the loop workloads (benchmarks/workloads, at small sizes) ------------------------

BENCH = benchmark_workloads()


def logsumexp_rows(z):
    """Row-wise log-sum-exp with max shift (softmax_ce without the labels)."""
    total = 0.0
    for i in range(z.shape[0]):
        m = z[i, 0]
        for j in range(1, z.shape[1]):
            if z[i, j] > m:
                m = z[i, j]
        s = 0.0
        for j in range(z.shape[1]):
            s += np.exp(z[i, j] - m)
        total += np.log(s) + m
    return total


def _small(name: str, **sizes):
    w = BENCH[name]
    return w.primal, w.make_args(np.random.default_rng(3), **sizes), w.wrt


pairwise, lorenz, heat = (BENCH[n].primal for n in ("pairwise", "lorenz", "heat"))
WORKLOADS = {
    "pairwise": _small("pairwise", n=6, eps=0.01),
    "logsumexp_rows": (logsumexp_rows, (np.random.default_rng(3).normal(size=(4, 5)),), (0,)),
    "softmax_ce": _small("softmax_ce", n=4, classes=5),
    "lorenz": _small("lorenz", nsteps=12, dt=0.01),
    "heat": _small("heat", n=9, nsteps=5),
    "rosenbrock": _small("rosenbrock", n=7),
}


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_workload_gradient(name, jit):
    f, args, wrt = WORKLOADS[name]
    check_grad(f, args, wrt=tuple(wrt), jit=jit, rtol=1e-5, atol=1e-6)


# --- what is recomputed, what is stored ---------------------------------------------------


def test_pairwise_recomputes_each_value_once_and_tapes_nothing():
    pos, eps = WORKLOADS["pairwise"][1]
    src = gen(pairwise, pos, eps)
    assert "_tape" not in src, "every value comes back from pos, never written, and eps"
    adj = gen(pairwise, pos, eps, stage="adjoint")
    assert code(adj).count("np.sqrt(") == 1, "the sqrt read by two pullbacks is made once"
    for v in ("dx", "dy", "dz"):
        assert len(lines_matching(adj, rf"^\s*{v} = pos\[i, \d\] - pos\[j, \d\]$")) == 1
    # dx, dy, dz are needed by the products' pullbacks too: charged beyond that only
    assert re.search(r"# recomputed dx, dy, dz, _t9 from eps, pos \(cost 6 <= tape "
                     rf"{TAPE_COST:g}, the rest shared with earlier lines\)", adj)


def exp_of_element(x, n):
    s = 0.0
    for i in range(n):
        t = math.exp(x[i] * 0.5)
        s = s + t * t
    return s


def test_transcendental_value_is_stored_with_its_reason():
    x = vec(4)
    src = sweeps(exp_of_element, x, 4)
    assert pushed_values(src) == ["t"]
    fwd = gen(exp_of_element, x, 4, stage="forward")
    assert "# stored t: math.exp costs 20 > tape 16" in fwd
    assert "math.exp" not in code(gen(exp_of_element, x, 4, stage="adjoint"))
    assert_tapes_balanced(src)
    check_grad(exp_of_element, (x, 4), wrt=0, jit=False)


def four_divisions(x, n):
    s = 0.0
    for i in range(n):
        t = x[i] / 1.5 / 2.5 / 3.5 / 4.5
        s = s + t * t
    return s


def five_divisions(x, n):
    s = 0.0
    for i in range(n):
        t = x[i] / 1.5 / 2.5 / 3.5 / 4.5 / 5.5
        s = s + t * t
    return s


def test_a_chain_is_recomputed_up_to_the_cost_of_a_tape():
    x = vec(4)
    cheap = sweeps(four_divisions, x, 4)
    assert "_tape" not in cheap, "4 divisions cost 16: no more than a tape round trip"
    assert "# recomputed t from x (cost 16 <= tape 16)" in cheap
    dear = sweeps(five_divisions, x, 4)
    assert pushed_values(dear) == ["t"]
    assert "# stored t: div costs 4, in all costs 20 > tape 16" in dear
    for f in (four_divisions, five_divisions):
        check_grad(f, (x, 4), wrt=0, jit=False)


def sqrt_of_overwritten(x, n):
    y = x.copy()
    s = 0.0
    for i in range(n):
        r = math.sqrt(y[i] + 1.0)
        y[i] = r * 0.5
        s = s + r * y[i]
    return s


def test_value_whose_operand_is_overwritten_is_stored():
    """sqrt(y[i] + 1) is cheap, but y[i] is overwritten right after it is read: a
    recomputation in the adjoint would read the new y[i] (the classic bug)."""
    x = vec(4)
    src = gen(sqrt_of_overwritten, x, 4)
    assert "r" in pushed_values(src)
    assert "# stored r, _t5: y is written later" in gen(sqrt_of_overwritten, x, 4,
                                                         stage="forward")
    assert not lines_matching(gen(sqrt_of_overwritten, x, 4, stage="adjoint"),
                              r"math\.sqrt\(y\[i\]")
    check_grad(sqrt_of_overwritten, (x, 4), wrt=0, jit=True)
    check_grad(sqrt_of_overwritten, (x, 4), wrt=0, jit=False)


def shifted_overwrite(x, n):
    y = x.copy()
    s = 0.0
    for i in range(1, n):
        t = y[i] * 0.7
        y[i - 1] = y[i - 1] + t * t  # next trip, this writes the y[i] read here
        s = s + t * y[i - 1]
    return s


def test_value_read_from_an_element_written_next_trip_is_stored():
    """t = y[i] * 0.7 is cheap, but the next trip overwrites y[i]: recomputed in the
    adjoint it would read the final y (the gradient would be wrong)."""
    x = vec(5)
    assert "t" in pushed_values(gen(shifted_overwrite, x, 5))
    check_grad(shifted_overwrite, (x, 5), wrt=0, jit=True)
    check_grad(shifted_overwrite, (x, 5), wrt=0, jit=False)


def shape_arithmetic(x, T):
    s = 0.0
    for _ in range(T):
        for i in range(len(x) - 1):
            s = s + x[i] * x[i + 1] * 0.5
    return s


def test_integer_shape_arithmetic_is_never_taped():
    x = vec(5)
    for f, args in ((shape_arithmetic, (x, 3)), (heat, WORKLOADS["heat"][1])):
        fwd = gen(f, *args, stage="forward")
        assert "np.int64" not in tape_names(fwd).values()
        assert not any(v.startswith("_n") for v in pushed_values(gen(f, *args)))
    adj = gen(shape_arithmetic, x, 3, stage="adjoint")
    assert lines_matching(adj, r"= len\(x\) - 1$"), "the inner bound is recomputed"
    check_grad(shape_arithmetic, (x, 3), wrt=0, jit=False)


def shape_of_written(x, T):
    y = x.copy()
    s = 0.0
    for _ in range(T):
        for i in range(len(y) - 1):
            y[i] = y[i] * 0.5 + y[i + 1] * 0.25
        s = s + y[0] * y[1]
    return s


def shape_of_swapped(x, T):
    u = x.copy()
    v = x.copy()
    s = 0.0
    for _ in range(T):
        for i in range(len(u) - 1):
            v[i] = u[i] * 0.5 + u[i + 1] * 0.25
        u, v = v, u
        s = s + u[0] * u[1]
    return s


def test_shape_of_an_array_written_in_place_is_recomputed():
    """Writes into y keep its shape: len(y) - 1 comes back in the adjoint; a name swapped
    with another may name an array of another shape next trip: its length is taped."""
    x = vec(5)
    src = gen(shape_of_written, x, 3)
    assert "np.int64" not in tape_names(gen(shape_of_written, x, 3, stage="forward")).values()
    assert lines_matching(src, r"= len\(y\) - 1$")
    fwd = gen(shape_of_swapped, x, 3, stage="forward")
    assert "np.int64" in tape_names(fwd).values()
    assert "u is rebound later (its shape may change)" in fwd
    for f in (shape_of_written, shape_of_swapped):
        check_grad(f, (x, 3), wrt=0, jit=True)
        check_grad(f, (x, 3), wrt=0, jit=False)


# --- a value carried from one trip to the next: taped once per trip ----------------------


def test_lorenz_tapes_each_state_once_per_step():
    args, wrt = WORKLOADS["lorenz"][1], tuple(WORKLOADS["lorenz"][2])
    src = gen(lorenz, *args, wrt=wrt)
    assert sorted(pushed_values(src)) == ["x", "y", "z"], "x, y, z once per step, no stages"
    fwd = gen(lorenz, *args, wrt=wrt, stage="forward")
    loop = fwd[fwd.index("for _ in range(nsteps):"):]
    for v in "xyz":
        push = loop.index(f", {v})\n")
        assert push < loop.index(f"\n        {v} = {v} + "), "taped before its update"
    assert "# stored x before the loop rebinds it" in fwd
    adj = gen(lorenz, *args, wrt=wrt, stage="adjoint")
    assert "# recomputed z4 (and " in adj, "the stages come back from x, y, z"
    assert_tapes_balanced(src)


def carried_end_only(x, n):
    a = 1.0
    s = 0.0
    for i in range(n):
        a = a * 0.5 + x[i]
        s = s + a * a
    return s


def carried_then_rebound(x, n):
    a = 1.0
    s = 0.0
    for i in range(n):
        a = a * 0.5 + x[i]
        s = s + a * a
    if s > 0.5:
        a = a * 3.0  # a name rebound after the loop (in a branch: one name, two values)
    return s + a * a


def carried_with_break(x, n):
    a = 1.0
    s = 0.0
    for i in range(n):
        a = a * 0.5 + x[i]
        s = s + a * a
        if s > 2.0:
            break
    return s


def carried_in_inner_loop(x, n):
    s = 0.0
    for k in range(2):
        a = 1.0
        for i in range(n):
            a = a * 0.5 + x[i] * x[k]
            s = s + a * a
    return s


@pytest.mark.parametrize("f", [carried_end_only, carried_then_rebound, carried_with_break,
                               carried_in_inner_loop])
def test_carried_value_restored_by_the_next_trip(f, jit):
    x = vec(4)
    src = gen(f, x, 4)
    assert_tapes_balanced(src)
    assert len(pushes(src)) >= 1
    check_grad(f, (x, 4), wrt=0, jit=jit)


def test_carried_value_pushes_before_its_update_only_where_sound():
    x = vec(4)
    before_update = "stored a before the loop rebinds it"
    assert before_update in gen(carried_end_only, x, 4, stage="forward")
    for f in (carried_then_rebound, carried_with_break, carried_in_inner_loop):
        assert before_update not in gen(f, x, 4, stage="forward"), f.__name__


# --- random loops with carried values and recomputable chains -------------------------

_TERMS = ["a * b", "a - x[i]", "b * x[i]", "math.sin(a)", "math.sqrt(b * b + 1.0)",
          "a / (1.5 + b * b)", "x[i] * x[i]", "math.exp(0.2 * a)", "t * a", "t - b"]


def _carried_source(rng: np.random.Generator) -> str:
    """A loop whose carried scalars a, b are read before and after their updates, and a
    temporary t made from them (recomputable or not, by the draw)."""
    def term() -> str:
        return str(rng.choice(_TERMS))
    body = [f"        t = {rng.choice(_TERMS[:8])}",
            f"        s = s + {term()} * 0.5",
            f"        a = 0.5 * a + 0.3 * ({term()})",
            f"        s = s + {term()} * 0.25",
            f"        b = 0.6 * b + 0.2 * ({term()})",
            f"        s = s + {term()}"]
    if rng.integers(2):
        body.insert(int(rng.integers(1, len(body))), f"        s = s * 0.9 + {term()}")
    return ("import math\n\n\ndef f(x, n):\n    a = 0.3\n    b = 0.7\n    s = 0.0\n"
            "    for i in range(n):\n" + "\n".join(body) + "\n    return s + a * b\n")


@pytest.mark.parametrize("seed", range(12))
def test_random_carried_loops(tmp_path_factory, seed):
    rng = np.random.default_rng(1000 + seed)
    f = function_from_source(tmp_path_factory.mktemp("carried"), f"carried_{seed}",
                             _carried_source(rng))
    x = np.random.default_rng(seed).uniform(0.2, 0.9, 5)
    for jit in (False, True) if seed % 4 == 0 else (False,):
        check_grad(f, (x, 5), wrt=0, jit=jit)
