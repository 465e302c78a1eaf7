"""numba.prange loops under parallel=True: the generated sweeps keep prange where the
iterations are independent and run serially (with a comment) where not; a racy primal is
refused; the user's njit options carry over to the generated code.  Every gradient is
checked against central finite differences, jit=True and jit=False."""

import re

import corpus_prange as P
import numba
import numpy as np
import pytest
from gradcheck import check_grad, function_from_source
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jitgrad as jg
from jitgrad.errors import TransformError

X = np.linspace(-0.8, 0.9, 9)
IDX = np.array([0, 3, 3, 8, 1, 3, 7])
A = np.linspace(-1.0, 1.2, 12).reshape(3, 4)
W = np.linspace(0.3, 0.9, 4)

#: workload -> (arguments, wrt)
CASES = {
    "reduction": (P.reduction, (X, 0.6), (0, 1)),
    "elementwise": (P.elementwise, (X, 0.6), (0, 1)),
    "stencil": (P.stencil, (X, 0.6), (0, 1)),
    "inner_loop": (P.inner_loop, (X, 0.7), (0, 1)),
    "nested_2d": (P.nested_2d, (A, W), (0, 1)),
    "product": (P.product, (X, 0.4), (0, 1)),
    "gather": (P.gather, (X, IDX, 0.8), (0, 2)),
    "branchy": (P.branchy, (X, 0.6), (0, 1)),
    "rows": (P.rows, (A, W), (0, 1)),
    "heat": (P.heat, (X, 0.2), (0, 1)),
    "in_place": (P.in_place, (X, 0.7), (0, 1)),
    "columns": (P.columns, (A, W), (0, 1)),
    "gather_rows": (P.gather_rows, (A, np.array([0, 2, 2, 1, 0]), W), (0, 2)),
    "plain": (P.plain, (X, 0.6), (0, 1)),
    "branch_store": (P.branch_store, (X, 0.6), (0, 1)),
    "branch_nested": (P.branch_nested, (X, 0.9), (0, 1)),
    "branch_steps": (P.branch_steps, (X, 0.7), (0, 1)),
    "wraps": (P.wraps, (X, 0.6), (0, 1)),
    "wraps_only": (P.wraps_only, (X, 0.6), (0, 1)),
    "branch_stencil": (P.branch_stencil, (np.linspace(-0.8, 0.9, 40), 0.6), (0, 1)),
    "branch_gather": (P.branch_gather, (X, IDX, 0.8), (0, 2)),
    "row_chain": (P.row_chain, (X, np.linspace(0.3, 0.9, 4)), (0, 1)),
    "branch_chain": (P.branch_chain, (X, np.linspace(0.3, 0.9, 4)), (0, 1)),
}


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("case", list(CASES))
def test_prange_gradients(case, jit):
    f, args, wrt = CASES[case]
    check_grad(f, args, wrt=wrt, jit=jit)


def _loops(src: str) -> list[str]:
    """The headers of the generated loops over i (a chunked loop's over _c), each with the
    comment line before it."""
    lines = [ln.strip() for ln in src.splitlines()]
    return [(lines[k - 1] + " / " if lines[k - 1].startswith("#") else "") + ln
            for k, ln in enumerate(lines)
            if re.match(r"for (i|_c\d*|_half) in prange\(|for i in range\(", ln)
            and "_trips // _chunks" not in ln]


@pytest.mark.parametrize("case, forward, adjoint", [
    ("reduction", "prange", "prange"),
    ("elementwise", "prange", "prange"),
    ("stencil", "prange", "gather"),
    ("inner_loop", "prange", "prange"),
    ("nested_2d", "prange", "chunks: dw"),
    ("rows", "prange", "chunks: dw"),
    ("gather", "prange", "chunks: dx"),
    ("product", "'p' carries a value", "'dp' carries a value"),
    ("branchy", "prange", "prange"),
    ("branch_store", "prange", "prange"),
    ("branch_nested", "prange", "prange"),
    ("branch_steps", "prange", "prange"),
    ("branch_stencil", "prange", "phased: dx"),
    ("branch_gather", "prange", "chunks: dx"),
    ("plain", "range", "range"),
    ("heat", "prange", "gather"),
    ("in_place", "prange", "prange"),
    ("gather_rows", "prange", "chunks: da, dw"),
])
def test_generated_loops(case, forward, adjoint):
    """prange where each iteration is independent; a parallel gather over the output index
    where a stencil's accumulations collide (each thread writes only its own dx[i], no
    partial buffers); chunks with partial buffers where other accumulations collide; a
    serial loop and why elsewhere."""
    f, args, wrt = CASES[case]
    src = jg.differentiate(f, wrt=wrt).source(*args)
    loops = _loops(src)
    fwd, adj = loops[0], loops[-1]  # (the first forward loop, the last reversed one)
    if adjoint == "gather":  # (then the resets dv[i] = 0.0 of a loop of their own)
        adj = next(ln for ln in loops if "_inner_lo" in ln)
        assert "_part" not in src and "serially" not in src, src
    assert len(loops) in ((2, 3, 4, 5) if adjoint == "gather" else (2, 4)), src
    for loop, want in ((fwd, forward), (adj, adjoint)):
        if want.startswith("phased: "):
            assert loop == "for _half in prange((_chunks - _phase + 1) // 2):", src
            assert f"the even ones at once, then the odd ones ({want[8:]} added into " \
                   "directly" in src and "_part" not in src, src
            continue
        if want == "gather":
            assert loop.endswith("for i in prange(_inner_lo, _inner_hi):"), src
            continue
        if want == "range":
            assert "for i in range(" in loop and "prange" not in src, src
        elif want == "prange":
            assert "for i in prange(" in loop and "serially" not in loop, src
        elif want.startswith("chunks: "):
            parts = want.split(": ")[1]
            m = re.fullmatch(r"(.* / )?for (_c\d*) in prange\(_chunks\):", loop)
            assert m, src
            c = m.group(2)
            assert f"one chunk of iterations per thread; {parts} accumulated per chunk" in src
            for part in parts.split(", "):
                assert f"_{part}_part[{c}, " in src and f"{part} += _{part}_part[{c}]" in src
        else:
            assert "runs serially" in loop and want in loop and "in range(" in loop, src


def test_tapes_indexed_by_iteration():
    """A tape pushed once per iteration is written and read at cursor + i (no shared
    cursor moves inside the parallel loops)."""
    src = jg.differentiate(P.reduction, wrt=(0, 1)).source(X, 0.6)
    assert "tape_put(_tape_t2_1, _tape_t2_1n + i, _t2)" in src
    assert "_t2 = tape_get(_tape_t2_1, _tape_t2_1n + i)" in src
    assert "_tape_t2_1n += 1" not in src and "_tape_t2_1n -= 1" not in src


def test_serial_function_keeps_range():
    """Without parallel=True (a plain def over prange) the sweeps are plain range loops."""
    src = jg.differentiate(P.plain, wrt=(0, 1)).source(X, 0.6)
    assert "prange" not in src and "for i in range(" in src


@pytest.mark.parametrize("f, words", [
    (P.recurrence, "'y' is written and accessed at 'y[i - 1]'"),
    (P.carried, "'t' carries a value from one iteration to the next"),
    (P.last_value, "'t' is bound in the loop and read after it"),
])
def test_racy_primal_refused(f, words):
    with pytest.raises(TransformError) as e:
        jg.differentiate(f).grad(*((X, 0.5) if f is P.last_value else (X,)))
    msg = str(e.value)
    assert "prange loop are not independent" in msg and words in msg, msg
    assert "corpus_prange.py" in msg


def test_racy_primal_refused_in_forward_mode():
    with pytest.raises(TransformError, match="prange loop are not independent"):
        jg.jvp(P.recurrence, (X,), (np.ones_like(X),))


@pytest.mark.parametrize("case", ["reduction", "inner_loop", "stencil", "heat", "branch_store",
                                  "branch_stencil"])
def test_prange_hvp(case):
    """Second order through parallel gradient code (forward over reverse) against central
    differences of the gradient, every element."""
    f, args, _ = CASES[case]
    x = args[0]
    v = np.random.default_rng(2).standard_normal(x.shape)
    hv = jg.hvp(f, args, v, wrt=0)
    g = jg.grad(f, wrt=0)
    eps = 1e-5
    fd = (g(x + eps * v, *args[1:]) - g(x - eps * v, *args[1:])) / (2 * eps)
    np.testing.assert_allclose(hv, fd, rtol=1e-5, atol=1e-7)


def test_racy_primal_allowed_without_parallel():
    """The same loop compiled without parallel=True is a serial loop: no race."""
    serial = numba.njit(P.recurrence.py_func)
    check_grad(serial, (X,), jit=True)


def test_parallel_generated_code_runs_in_parallel():
    """The compiled adjoint is a Numba parallel dispatcher with a parfor for the loop."""
    d = jg.differentiate(P.reduction, wrt=(0, 1))
    d.grad(X, 0.6)  # (the gradient-only variant: lowered and loaded for this call)
    disp = d._last.compiled.jitted["grad_only"]
    assert disp.targetoptions.get("parallel") is True
    diag = disp.parallel_diagnostics  # raises unless parfors were made
    assert callable(diag)


def test_njit_options_carry_over():
    """fastmath, error_model and boundscheck of the user's dispatcher are the generated
    code's too; the gradient still matches finite differences (round-off only)."""
    d = jg.differentiate(P.fast, wrt=(0, 1))
    check_grad(P.fast, (X, 0.3), wrt=(0, 1), jit=True, rtol=1e-5)
    d.grad(X, 0.3)
    opts = d._last.compiled.jitted["grad_only"].targetoptions
    assert opts.get("fastmath") and opts.get("error_model") == "numpy"
    assert opts.get("boundscheck") is True
    assert d.options == {"fastmath": True, "error_model": "numpy", "boundscheck": True}


def test_default_options_without_dispatcher():
    d = jg.differentiate(P.plain, wrt=(0, 1))
    d.grad(X, 0.6)
    opts = d._last.compiled.jitted["grad_only"].targetoptions
    assert "fastmath" not in opts and "parallel" not in opts
    assert opts.get("error_model") == "numpy"
    # every index of the gradient is checked by the code itself (backend/bounds.py)
    assert opts.get("boundscheck") is False and "boundscheck=False" in d.source(X, 0.6)


def test_jvp_compiled_with_user_options():
    d = jg.differentiate(P.fast, wrt=0)
    val, tan = d.jvp((X, 0.3), np.ones_like(X))
    fd = (P.fast(X + 1e-6, 0.3) - P.fast(X - 1e-6, 0.3)) / 2e-6
    np.testing.assert_allclose(tan, fd, rtol=1e-5)
    gen = d._specs.entries("jvp")
    assert all(g.compiled.jitted["jvp"].targetoptions.get("fastmath") for g in gen)


def test_options_in_cache_key():
    """Two functions that differ only in their options never share a cache entry."""
    from jitgrad.transpiler.analysis.kinds import of_value
    from jitgrad.transpiler.backend import cache

    slow = numba.njit(P.fast.py_func)
    kinds = {"x": of_value(X), "k": of_value(0.3)}
    a = cache.key(P.fast.py_func, ["x", "k"], kinds, True, jg.differentiate(P.fast).options)
    b = cache.key(P.fast.py_func, ["x", "k"], kinds, True, jg.differentiate(slow).options)
    assert a is not None and b is not None and a != b


def test_prange_pass_shows_verdicts():
    src = jg.differentiate(P.stencil, wrt=(0, 1)).source(X, 0.6, stage="prange")
    assert src.startswith("# prange loop over i: iterations independent")


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("case", ["reduction", "elementwise", "stencil", "nested_2d"])
def test_prange_jvp(case, jit):
    """Forward mode keeps prange too (the tangent loop is the primal's, independent where
    the primal's is); every tangent element against central differences."""
    f, args, wrt = CASES[case]
    d = jg.differentiate(f, wrt=wrt[0], jit=jit)
    x = args[0]
    rng = np.random.default_rng(1)
    v = rng.standard_normal(x.shape)
    _, tan = d.jvp(args, v)
    eps = 1e-6
    fd = (f(x + eps * v, *args[1:]) - f(x - eps * v, *args[1:])) / (2 * eps)
    np.testing.assert_allclose(tan, fd, rtol=1e-5, atol=1e-7)
    src = d.source(*args, mode="jvp")
    assert "for i in prange(" in src and "serially" not in src, src


def test_prange_over_columns():
    """prange over j with out[i, j]: the j-th column is the iteration's own; the promote
    pass's per-column sum dw[j] += _dw_j_sum keeps the adjoint loop parallel too."""
    src = jg.differentiate(P.columns, wrt=(0, 1)).source(A, W)
    assert src.count("for j in prange(n):") == 2 and "serially" not in src, src
    assert "dw[j] += _dw_j_sum" in src


@pytest.mark.parametrize("case", ["branchy", "branch_store", "branch_nested", "branch_steps"])
def test_branch_tapes_indexed_by_iteration(case):
    """A value stored under an ``if`` goes to the iteration's own slot of a tape reserved
    for every trip (no cursor moves in either parallel loop); on 2000 elements, where every
    thread takes both branches, the parallel gradient (both variants) is the serial one."""
    f, args, wrt = CASES[case]
    src = jg.differentiate(f, wrt=wrt).source(*args)
    assert "serially" not in src and "n += 1" not in src and "n -= 1" not in src, src
    assert any(ln.strip().startswith("tape_put(_tape") and "n + i, " in ln
               for ln in src.splitlines()), src
    x = np.random.default_rng(3).uniform(-1.0, 1.0, 2000)
    big = (x, *args[1:])
    want = jg.value_and_grad(numba.njit(f.py_func), wrt=wrt)(*big)[1]
    d = jg.differentiate(f, wrt=wrt)
    for got in (d.value_and_grad(*big)[1], d.grad(*big)):
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("case", ["stencil", "heat", "wraps", "wraps_only"])
def test_stencil_gathered_in_parallel(case):
    """A stencil's colliding accumulations (dx[i - 1] += ...; dx[i + 1] += ...) become a
    parallel loop over the output index, each thread writing only its own dx[i]: no
    partial buffers; the sum into dk stays a reduction of that loop.  On 3000 elements the
    parallel gradient is the serial (scattering) one."""
    f, args, wrt = CASES[case]
    src = jg.differentiate(f, wrt=wrt).source(*args)
    assert "for i in prange(_inner_lo, _inner_hi):" in src and "_part" not in src, src
    x = np.random.default_rng(4).uniform(-1.0, 1.0, 3000)
    big = (x, *args[1:])
    want = jg.grad(numba.njit(f.py_func), wrt=wrt)(*big)
    got = jg.grad(f, wrt=wrt)(*big)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12)


def test_gathered_loop_does_not_wrap():
    """Where the output index may be negative (x[i - 1] at i = 0 is the last element), the
    parallel part of the gather starts at 0: the index -1 is done with the edges, serially
    (it is the element another iteration writes as n - 1)."""
    src = jg.differentiate(P.wraps_only, wrt=(0, 1)).source(X, 0.6)
    assert "_inner_lo = max(_lo - 1, 0)" in src, src
    src = jg.differentiate(P.wraps, wrt=(0, 1)).source(X, 0.6)
    assert "_inner_lo = _lo\n" in src, src  # (lo + 0 >= 0: no max)


def test_no_parallel_warning_for_serial_code():
    """A generated function whose prange loops all run serially is compiled without
    parallel=True (Numba would warn that it found nothing to parallelise); the user's
    other options still carry over."""
    import warnings

    from numba.core.errors import NumbaPerformanceWarning

    f = numba.njit(parallel=True, fastmath=True)(P.product.py_func)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        d = jg.differentiate(f, wrt=(0, 1))
        d.grad(X, 0.4)
        d.value_and_grad(X, 0.4)
    assert not [w for w in caught if issubclass(w.category, NumbaPerformanceWarning)]
    for v in ("grad", "grad_only"):
        opts = d._last.compiled.jitted[v].targetoptions
        assert "parallel" not in opts and opts.get("fastmath") is True
    d = jg.differentiate(P.reduction, wrt=(0, 1))
    d.grad(X, 0.6)
    assert d._last.compiled.jitted["grad_only"].targetoptions.get("parallel") is True


_FUNCS = ("math.sin", "math.tanh", "")


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(terms=st.lists(st.tuples(st.integers(-2, 2), st.integers(-2, 2),
                                st.sampled_from(_FUNCS)), min_size=1, max_size=3),
       lo=st.integers(0, 2), n=st.integers(3, 40))
def test_random_parallel_stencils(tmp_path_factory, terms, lo, n):
    """prange loops reading ``x`` at offsets -2..2 and summing into ``k`` (from a start that
    keeps indices in range or wraps below 0, to an end that may pass ``n``), gathered in
    parallel: every gradient element against central differences, both modes."""
    def at(c: int) -> str:
        return f"x[i + {c}]" if c > 0 else f"x[i - {-c}]" if c < 0 else "x[i]"

    body = " + ".join(f"{f}({at(a)}) * {at(b)}" if f else f"{at(a)} * {at(b)}"
                      for a, b, f in terms)
    top = max(max(a, b) for a, b, _ in terms)  # x[i + top] < n: i < n - top
    src = ("import math\n\nimport numba\nfrom numba import prange\n\n\n"
           "@numba.njit(parallel=True)\ndef f(x, k):\n    s = 0.0\n"
           f"    for i in prange({lo}, x.shape[0] - ({top})):\n"
           f"        s += k * ({body})\n    return s\n")
    name = f"pstencil_{abs(hash((tuple(terms), lo, n))) % 10**12}"
    f = function_from_source(tmp_path_factory.mktemp("pstencil"), name, src)
    x = np.random.default_rng(n).uniform(-1, 1, n)
    if any(a or b for a, b, _ in terms) and n - top > lo:
        assert "_part" not in jg.differentiate(f, wrt=(0, 1)).source(x, 0.7), src
    for jit in (False, True):
        check_grad(f, (x, 0.7), (0, 1), jit=jit)


def test_phased_chunks_match_serial():
    """The even-then-odd chunks of a stencil the gather form does not take (a branch) add
    into dx directly; on 3001 elements (many chunks, both branches in each) the gradient is
    the serial one, both variants."""
    f, args, wrt = CASES["branch_stencil"]
    x = np.random.default_rng(5).uniform(-1.0, 1.0, 3001)
    want = jg.value_and_grad(numba.njit(f.py_func), wrt=wrt)(x, 0.6)[1]
    d = jg.differentiate(f, wrt=wrt)
    for got in (d.value_and_grad(x, 0.6)[1], d.grad(x, 0.6)):
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


CHUNKED_SHADOWED = '''import math
import numba
import numpy as np

prange = None  # the module's own name: the rewrite reads numba.prange under another


@numba.njit(parallel=True)
def f(x, k):
    s = 0.0
    for i in numba.prange(1, x.shape[0] - 1):
        v = x[i - 1] * x[i + 1]
        for t in range(3):
            v = math.sin(v * k) + 0.5 * v
        s += v * v
    return s
'''


def test_chunk_loops_are_prange_whatever_its_name(tmp_path):
    """The prange rewrite's loop over chunks is a prange loop for the steps after it
    (``notes.is_prange``) under whatever name it reads ``numba.prange``: zero_skip puts no
    guard inside it (it did where that name was ``_prange``); values and gradients in both
    modes."""
    f = function_from_source(tmp_path, "pchunk_shadowed", CHUNKED_SHADOWED)
    x = np.linspace(0.1, 1.0, 40)
    src = jg.differentiate(f, wrt=(0, 1)).source(x, 0.7)
    assert "_prange(" in src and "_dk_chunk" in src, src
    assert "!= 0.0" not in src, src
    for jit in (False, True):
        check_grad(f, (x, 0.7), (0, 1), jit=jit)


@pytest.mark.parametrize("case", ["row_chain", "branch_chain"])
def test_element_loops_keep_prange(case):
    """A prange loop whose body (or a branch in it) holds a whole-array chain stays a prange
    loop when jit=True runs the chain as an element loop: the step copying the loop keeps
    its notes (the copy was a plain ``range`` loop, without a word, before); its reversed
    loop is given the prange verdict (serial, or in chunks where the adjoint's element loop
    adds into ``dx`` element by element: ``unbroadcast``'s shape argument shares no
    buffer).  Values and gradients in both modes."""
    f, args, wrt = CASES[case]
    src = jg.differentiate(f, wrt=wrt, jit=True).source(*args)
    assert "one loop over the elements of x" in src, src
    fwd, adj = _loops(src)[0], _loops(src)[-1]
    assert fwd.startswith("for i in prange("), src
    assert "prange loop over i runs serially" in adj or (
        re.match(r"for _c\d* in prange\(", adj) and "# prange loop over i: one chunk" in src), src
    for jit in (True, False):
        check_grad(f, args, wrt=wrt, jit=jit)
