"""Issue 33, items 6 and 8.

6. A pair loop over the rows of a 2-d array (``d = pos[i] - pos[j]``): the adjoint of the
   row ``pos[i]`` is a row, so the promote pass (``backend/promote.py``) must not keep its
   sum in a scalar (``_dpos_i_sum = 0.0; _dpos_i_sum += <row>`` did not compile).
8. A rule whose pullback binds a temporary (``r2`` of ``arctan2``, ``gb`` of ``solve``,
   ``t`` of ``linspace``): the temporary is bound where the pullback runs, not a forward
   value to store (it was taped in the forward sweep, where it was never bound).

Every case: value and every gradient element against central differences, the JVP's value
and tangent, and the HVP against central differences of the gradient, in both jit modes.
"""

import ast
import math
import re

import corpus_rows as R
import corpus_rule_locals as L
import numpy as np
import pytest
from gradcheck import check_grad

import jitgrad as jg
from jitgrad.rules.primitives import records
from jitgrad.transpiler.modes.template import template_of
from jitgrad.transpiler.nodes import walk

RULE_CASES = [(f, a, tuple(range(len(a)))) for f, a in L.CASES + L.POSITION_CASES]
ALL = RULE_CASES + R.CASES


def _plain(f):
    return getattr(f, "py_func", f)


def _direction(args, wrt, seed=0):
    rng = np.random.default_rng(seed)
    return tuple(rng.uniform(-1.0, 1.0, np.shape(args[w])) if np.ndim(args[w])
                 else float(rng.uniform(-1.0, 1.0)) for w in wrt)


def _moved(args, wrt, t, h):
    out = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    for w, tw in zip(wrt, t, strict=True):
        out[w] = out[w] + h * tw
    return out


@pytest.mark.parametrize("f, args, wrt", ALL, ids=[c[0].__name__ for c in ALL])
def test_value_and_gradient(f, args, wrt, jit):
    check_grad(f, args, wrt=wrt, jit=jit)


@pytest.mark.slow
@pytest.mark.parametrize("f, args, wrt", ALL, ids=[c[0].__name__ for c in ALL])
def test_jvp(f, args, wrt, jit):
    t = _direction(args, wrt)
    value, tangent = jg.jvp(f, args, t, wrt=wrt, jit=jit)
    g = _plain(f)
    np.testing.assert_allclose(value, g(*args), rtol=1e-10, atol=1e-12)
    h = 1e-6
    fd = (g(*_moved(args, wrt, t, h)) - g(*_moved(args, wrt, t, -h))) / (2 * h)
    np.testing.assert_allclose(tangent, fd, rtol=1e-5, atol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("f, args, wrt", ALL, ids=[c[0].__name__ for c in ALL])
def test_hvp(f, args, wrt, jit):
    t = _direction(args, wrt, seed=1)
    hv = jg.hvp(f, args, t, wrt=wrt, jit=jit)
    # central differences of the gradient (checked against f's own in the test above)
    grad = jg.grad(_plain(f), wrt=wrt, jit=False)
    h = 1e-5
    hi, lo = grad(*_moved(args, wrt, t, h)), grad(*_moved(args, wrt, t, -h))
    for k, w in enumerate(wrt):
        fd = (np.asarray(hi[k]) - np.asarray(lo[k])) / (2 * h)
        assert np.shape(hv[k]) == np.shape(args[w])
        np.testing.assert_allclose(hv[k], fd, rtol=1e-4, atol=1e-5,
                                   err_msg=f"hvp w.r.t. argument {w}")


def test_row_sums_stay_rows():
    """The adjoint of ``pos[i]`` (a row) goes into ``dpos[i]`` itself; the element reads
    of ``element_pairs`` still sum in scalars (``_dpos_i_0_sum``) added after the loop."""
    src = jg.differentiate(R.energy_sum).source(R._POS)
    # (compiled code updates the row as a named view: ``backend/view_updates.py``)
    assert re.search(r"= dpos\[i\]\n\s*_view\d* \+= ", src) and "_dpos_i_sum" not in src, src
    src = jg.differentiate(R.energy_sum, jit=False).source(R._POS)
    assert "dpos[i] += " in src and "_dpos_i_sum" not in src, src
    src = jg.differentiate(R.element_pairs).source(R._POS)
    assert "_dpos_i_0_sum += " in src and "dpos[i, 0] += _dpos_i_0_sum" in src, src


def _rule_locals(rule) -> tuple[set[str], set[str]]:
    """(the forward part's locals its pullback reads, the pullback's own temporaries)."""
    tpl = template_of(rule)
    read = {n.id for x in [*tpl.back_body, *[g for g in tpl.grads if g is not None]]
            for n in walk(x) if isinstance(n, ast.Name)}
    return tpl.forward_locals & read, tpl.locals - tpl.forward_locals


#: jitgrad's rules whose pullback reads a local of their own code -> the cases calling them
COVERED = {
    "arctan2": (L.arctan2_, L.arctan2_np, L.atan2_while, L.atan2_branch, L.atan2_nested,
                L.atan2_twice, L.atan2_checkpointed, L.atan2_region),
    "solve": (L.solve_, L.solve_while), "linspace": (L.linspace_, L.linspace_branch),
    "tan": (L.tan_,), "hypot": (L.hypot_, L.atan2_nested), "tanh": (L.tanh_,),
    "exp": (L.exp_,), "expm1": (L.expm1_,), "sqrt": (L.sqrt_,), "power": (L.power_,),
    "pow_": (L.pow_op, R.lennard_jones), "exp2": (L.exp2_,), "logaddexp": (L.logaddexp_,),
    "logaddexp2": (L.logaddexp2_,), "reciprocal": (L.reciprocal_,), "cbrt": (L.cbrt_,),
    "gamma": (L.gamma_,), "max_builtin": (L.max_pair, L.max_array, L.max_checkpointed),
    "min_builtin": (L.min_pair, L.min_array), "mean": (L.mean_,), "max_": (L.max_,),
    "min_": (L.min_,), "var": (L.var_,), "std": (L.std_, L.std_nested),
    "norm": (L.norm_,), "inv": (L.inv_,), "det": (L.det_,),
    "reduce_max_r": (L.max_nested,), "reduce_min_r": (L.min_nested,),
}


def test_every_rule_with_locals_is_exercised():
    """Each built-in rule whose pullback reads a local of its own forward part or binds a
    temporary has loop-carried cases above (a new such rule must add one)."""
    found = set()
    for rec in records():
        rule = rec.rule
        if rule is None or not (getattr(rule.impl, "__module__", "") or "").startswith(
                "jitgrad."):
            continue
        if any(_rule_locals(rule)):
            found.add(rule.name)
    assert found == set(COVERED), found ^ set(COVERED)
    cases = {f for f, _, _ in ALL}
    assert all(f in cases for fs in COVERED.values() for f in fs)


def _softplus_of_product(a, b):
    return math.log1p(math.exp(a * b))


def _uses_softplus(c, b):
    for _ in range(3):
        b = _softplus_of_product(c, b) - 0.5
    return b


def test_user_rule_with_forward_locals_and_pullback_temporaries(scratch_rules, jit):
    """A user's rule, its forward part binding ``z`` and its pullback ``s`` and ``w``,
    loop-carried: ``z`` is stored per trip, ``s`` and ``w`` are bound in the adjoint."""
    @jg.grad_rule(_softplus_of_product)
    def _rule(a, b):
        z = a * b
        y = math.log1p(math.exp(z))

        def back(dy):
            s = 1.0 / (1.0 + math.exp(-z))
            w = dy * s
            return (w * b, w * a)

        return y, back

    check_grad(_uses_softplus, (0.4, 0.3), wrt=(0, 1), jit=jit)
