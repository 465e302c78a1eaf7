"""Second order (forward-over-reverse): ``jg.hessian`` and ``jg.hvp`` against central
differences of the reverse-mode gradient, every element, for loops with overwrites,
``while`` Newton iterations, in-place stencils with buffer swaps, softmax cross-entropy,
an MLP and straight-line math; both ``jit=False`` and (a sample) ``jit=True``."""

import corpus_forward as CF
import corpus_loops as CL
import corpus_numpy as CN
import corpus_rules2 as CR
import corpus_soundness as CSN
import corpus_straight as CS
import numpy as np
import pytest

import jitgrad as jg

R = np.random.default_rng(5)
_BY_NAME = {c[0].__name__: c for c in CL.CASES}

NAMES = ["while_newton_sqrt", "arr_heat", "combo_rosenbrock", "combo_lorenz",
         "for_loop_carried_scalar", "arr_2d_stencil", "combo_softplus_sum", "combo_pow_loop",
         "combo_max_tracking", "for_break_data", "if_array_cond", "arr_write_local",
         "combo_ode_euler", "arr_swap_buffers", "while_return_inside",
         "call_helper_mutates_arg", "arr_rebind_in_loop"]
CASES = [_BY_NAME[n] for n in NAMES] + [
    (CN.softmax_ce, lambda: (R.normal(size=(4, 3)), np.array([0, 2, 1, 2])), 0),
    (CN.mlp, lambda: (R.normal(size=(3, 4)), R.normal(size=4), R.normal(size=(4, 2)),
                      R.normal(size=2), R.normal(size=(5, 3)), R.normal(size=(5, 2))),
     (0, 1, 2, 3)),
    (CS.math_scalars, lambda: (0.7, 1.3), (0, 1)),
    (CS.arith, lambda: (0.7, 1.3), (0, 1)),
    (CN.reductions, lambda: (R.uniform(0.5, 1.5, size=(4, 3)),), 0),  # prod, max, var, std
    (CR.math_new, lambda: (0.3, 1.7), (0, 1)),  # gamma, lgamma: digamma's tangent
    (CR.nary_max_min, lambda: (0.3, -0.7, 1.2), (0, 1, 2)),
    (CR.keepdims, lambda: (R.uniform(0.5, 1.5, size=(3, 4)),), 0),
    (CR.orders, lambda: (R.normal(size=4), R.normal(size=(3, 4))), (0, 1)),  # sort, flip
] + [c for c in CF.CASES if c[0].__name__ in ("view_write", "alias_arg", "transpose_write",
                                              "swap_loop", "row_view_loop", "while_newton",
                                              "early_ret", "pos_then_write")]
JIT = {"while_newton_sqrt", "arr_heat", "combo_rosenbrock", "nary_max_min"}


def _copy(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def fd_hessian(f, args, wrts, eps=1e-5):
    """Central differences of the (reverse-mode, jit=False) gradient: H[a][b]."""
    g = jg.differentiate(f, wrt=wrts, jit=False)
    out = [[None] * len(wrts) for _ in wrts]
    for b, wb in enumerate(wrts):
        xb = args[wb]
        cols = []
        for j in range(int(np.size(xb))):
            e = np.zeros(np.shape(xb))
            e.flat[j] = 1.0
            e = e if np.ndim(xb) else 1.0
            hi, lo = _copy(args), _copy(args)
            hi[wb] = xb + eps * e
            lo[wb] = xb - eps * e
            gh, gl = g.grad(*hi), g.grad(*lo)
            cols.append([(np.asarray(p, float) - np.asarray(q, float)) / (2 * eps)
                         for p, q in zip(gh, gl, strict=True)])
        for a, wa in enumerate(wrts):
            m = np.stack([c[a].reshape(-1) for c in cols], axis=-1)
            out[a][b] = m.reshape(np.shape(args[wa]) + np.shape(xb))
    return out


def check_hessian(f, args, wrt, jit):
    wrts = wrt if isinstance(wrt, tuple) else (wrt,)
    before = _copy(args)
    H = jg.hessian(f, wrt=wrts, jit=jit)(*args)
    for a, b in zip(args, before, strict=True):
        np.testing.assert_array_equal(a, b, err_msg="hessian mutated an input")
    fd = fd_hessian(f, args, wrts)
    for a in range(len(wrts)):
        for b in range(len(wrts)):
            assert np.shape(H[a][b]) == np.shape(fd[a][b])
            np.testing.assert_allclose(H[a][b], fd[a][b], rtol=1e-4, atol=1e-5,
                                       err_msg=f"H[{a}][{b}]")
    # symmetric, as a Hessian of a twice-differentiable function is
    for a in range(len(wrts)):
        for b in range(len(wrts)):
            na, nb = np.size(args[wrts[a]]), np.size(args[wrts[b]])
            np.testing.assert_allclose(np.reshape(H[a][b], (na, nb)),
                                       np.reshape(H[b][a], (nb, na)).T, rtol=1e-7, atol=1e-9)
    return H


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0].__name__}-{k}" for k, c in enumerate(CASES)])
def test_hessian_nojit(case):
    f, make, wrt = case
    check_hessian(f, make(), wrt, jit=False)


@pytest.mark.parametrize("case", [c for c in CASES if c[0].__name__ in JIT],
                         ids=lambda c: c[0].__name__)
def test_hessian_jit(case):
    f, make, wrt = case
    check_hessian(f, make(), wrt, jit=True)


def test_at_least_fifteen_functions():
    assert len(CASES) >= 15


def quad(x, A):
    return 0.5 * x @ (A @ x) + np.sum(np.sin(x))


def test_hvp_structure_and_value():
    A = R.normal(size=(3, 3))
    A = A + A.T
    x, v = R.normal(size=3), R.normal(size=3)
    hv = jg.hvp(quad, (x, A), v, jit=False)
    np.testing.assert_allclose(hv, A @ v - np.sin(x) * v, rtol=1e-12)
    H = jg.hessian(quad, jit=False)(x, A)
    np.testing.assert_allclose(H, A - np.diag(np.sin(x)), rtol=1e-12)
    both = jg.hvp(CS.arith, (0.7, 1.3), (1.0, 0.0), wrt=(0, 1), jit=False)
    assert isinstance(both, tuple) and len(both) == 2


def test_hvp_refuses_non_scalar_output():
    with pytest.raises(ValueError, match="scalar output"):
        jg.hvp(np_vec, (np.ones(3),), np.ones(3), jit=False)


def np_vec(x):
    return x * 2.0


def _halfsq(x):
    return 0.5 * x * x


@jg.grad_rule(_halfsq)
def _halfsq_rule(x):  # a reverse rule only: forward mode has no tangent for _halfsq
    y = _halfsq(x)

    def back(dy):
        return (dy * x,)

    return y, back


def sums_halfsq(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += _halfsq(x[i]) * x[i]  # the gradient code needs the value of _halfsq
    return s


def test_hessian_refusal_is_clear():
    """A gradient code forward mode cannot differentiate (here: a primitive with a reverse
    rule only) is refused, saying so at the user's line and quoting the generated one."""
    import inspect

    x = np.linspace(0.1, 0.5, 4)
    np.testing.assert_allclose(jg.grad(sums_halfsq, jit=False)(x), 1.5 * x * x)
    with pytest.raises(jg.TransformError,
                       match="gradient code of this line.*no tangent.*_halfsq.*generated "
                             "line '[^']*_halfsq") as e:
        jg.hvp(sums_halfsq, (x,), np.ones(4), jit=False)
    lines, first = inspect.getsourcelines(sums_halfsq)
    assert e.value.filename == __file__
    assert e.value.lineno == first + next(k for k, ln in enumerate(lines) if "+= _halfsq" in ln)
    assert "s += _halfsq(x[i]) * x[i]" in e.value.source_line


# --- every corpus function with a scalar output: hvp against differences of the gradient --


#: the refusals left (forward mode over a view of an adjoint the gradient code writes)
#: refusals an hvp of a corpus function may give (none now: forward mode follows views of
#: adjoints in gradient code wherever they are made)
_HVP_REFUSALS: tuple[str, ...] = ()


def _corpus_cases():
    for mod in (CL, CN, CF, CS, CSN):
        for f, make, wrt in getattr(mod, "CASES", ()):
            yield pytest.param(f, make, wrt, id=f"{mod.__name__}.{f.__name__}")


@pytest.mark.parametrize("f,make,wrt", list(_corpus_cases()))
def test_hvp_of_every_corpus_function(f, make, wrt):
    """Forward over the generated reverse code, list tapes included (array snapshots,
    arrays rebound in loops): the directional derivative of the gradient, every element."""
    wrts = wrt if isinstance(wrt, tuple) else (wrt,)
    args = list(make())
    if any(np.asarray(args[w]).dtype.kind != "f" for w in wrts):
        pytest.skip("integer wrt")
    g = jg.differentiate(f, wrt=wrts, jit=False)
    if np.ndim(g(*_copy(args))) != 0:
        pytest.skip("not a scalar output")
    rng = np.random.default_rng(0)
    v = tuple(rng.normal(size=np.shape(args[w])) if np.ndim(args[w]) else float(rng.normal())
              for w in wrts)
    try:
        hv = jg.hvp(f, tuple(args), v if len(wrts) > 1 else v[0],
                    wrt=wrts if len(wrts) > 1 else wrts[0], jit=False)
    except jg.TransformError as exc:
        assert any(r in str(exc) for r in _HVP_REFUSALS), exc
        return
    hv = hv if isinstance(hv, tuple) else (hv,)
    eps = 1e-5
    hi, lo = _copy(args), _copy(args)
    for w, d in zip(wrts, v, strict=True):
        hi[w] = args[w] + eps * d
        lo[w] = args[w] - eps * d
    gh, gl = g.grad(*hi), g.grad(*lo)
    gh, gl = (gh if isinstance(gh, tuple) else (gh,)), (gl if isinstance(gl, tuple) else (gl,))
    for h, a, b in zip(hv, gh, gl, strict=True):
        np.testing.assert_allclose(h, (np.asarray(a) - np.asarray(b)) / (2 * eps),
                                   rtol=1e-4, atol=1e-5)


def rebound_in_loop(x, n):
    y = x.copy()
    s = 0.0
    for _ in range(n):
        y = np.sin(y) * 1.5
        s = s + np.sum(y * y)
    return s


@pytest.mark.parametrize("jit", [False, True])
def test_hvp_through_list_tapes(jit):
    """Arrays rebound in a loop are taped on lists; their tangents ride on tangent lists."""
    x, v = np.linspace(0.1, 0.9, 4), np.linspace(-1.0, 1.0, 4)
    assert "_tape_y_1 = []" in jg.differentiate(rebound_in_loop, wrt=0).source(x, 3)
    check_hessian(rebound_in_loop, [x, 3], 0, jit=jit)
    g = jg.grad(rebound_in_loop, jit=False)
    fd = (g(x + 1e-6 * v, 3) - g(x - 1e-6 * v, 3)) / 2e-6
    np.testing.assert_allclose(jg.hvp(rebound_in_loop, (x, 3), v, jit=jit), fd, rtol=1e-6)


def segments_in_place(x, s, n):
    """A checkpointed loop inside another loop is a region: it snapshots ``x`` at entry and
    copies it back with ``restore_into`` (which must carry the tangent)."""
    for _ in range(2):
        for i in jg.checkpointed(range(1, 5), snapshots=n):
            x[:] = x + np.tanh(x) * (x[5 - i] * s)
    return np.sum(x * x)


@pytest.mark.parametrize("jit", [False, True])
def test_hvp_through_restored_snapshots(jit):
    x, v = np.linspace(-0.4, 0.7, 6), np.linspace(1.0, -0.5, 6)
    assert "restore_into(" in jg.differentiate(segments_in_place, wrt=0).source(x, 0.3, 2)
    g = jg.grad(segments_in_place, jit=False)
    fd = (g(x + 1e-6 * v, 0.3, 2) - g(x - 1e-6 * v, 0.3, 2)) / 2e-6
    np.testing.assert_allclose(jg.hvp(segments_in_place, (x, 0.3, 2), v, jit=jit), fd,
                               rtol=1e-5, atol=1e-7)


def cubes(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] ** 3
    return s


def test_functional_transforms_of_a_module_function_compile_once():
    """``jg.hvp(f, ...)`` in a loop (a Newton iteration) reuses one compiled code, as
    ``jg.grad(f)`` made twice does; a local function gets its own each time."""
    x = np.linspace(0.5, 1.5, 4)
    first = jg.hvp(cubes, (x,), np.ones(4))
    np.testing.assert_allclose(first, 6.0 * x)
    assert jg.grad(cubes).diff is jg.grad(cubes).diff
    assert jg.grad(cubes, jit=False).diff is not jg.grad(cubes).diff

    def local(x):
        return np.sum(x * x)

    assert jg.grad(local).diff is not jg.grad(local).diff
