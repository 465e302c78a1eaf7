"""Pass-level decisions, pinned as properties of the generated code (not golden strings).

Each test writes a small function at module level (so its source can be read), asks
for the generated code with ``jit=False`` and asserts one decision the passes made:
push, recompute or nothing; how a loop runs backwards; which views get adjoint
views; how adjoints are initialised and accumulated; the ``stage=`` API.  Every
gradient is also checked against central finite differences (``jit=False``), so a
decision that changes the code keeps being checked for what it computes.
"""

import inspect
import math
import re

import numpy as np
import pytest
from gradcheck import check_grad

import jitgrad as jg
from jitgrad.errors import TransformError
from jitgrad.rules import primitives
from jitgrad.transpiler import pipeline

# --- reading generated code -------------------------------------------------------------


def gen(f, *args, wrt=0, stage="all", auto_checkpoint=None):
    """The generated source of ``f`` at ``stage`` for these example arguments."""
    return jg.grad(f, wrt=wrt, jit=False,
                   auto_checkpoint=auto_checkpoint).source(*args, stage=stage)


def sweeps(f, *args, wrt=0):
    """The forward and adjoint sweeps as the reverse pass makes them, before lowering runs
    a loop of independent iterations fused (which passes on what one iteration pushes and
    pops at once, ``test_fuse.py``): where the tape decisions are read."""
    return gen(f, *args, wrt=wrt, stage="forward") + gen(f, *args, wrt=wrt, stage="adjoint")


def tape_names(src):
    """The tapes the code declares (``_tape_x = np.empty(0, dtype)``), with their dtypes;
    those a compiled variant takes from its workspace (``_tape_x, _tape_y = _ws``) have
    dtype None (the ``forward`` stage declares them all)."""
    out = dict(re.findall(r"^\s*(_tape_\w+) = np\.empty\(0, ([\w.]+)\)", src, re.M))
    for m in re.finditer(r"^\s*\(?([\w, ]+?),?\)? = _ws(?:\[0\])?$", src, re.M):
        out.update(dict.fromkeys((t.strip() for t in m.group(1).split(",")), None))
    return out


def pushes(src):
    """``(tape, value)`` for every push ``tape_put(_tape_x, _tape_xn, x)`` (the lowering's
    unchecked ``_tape_x[_tape_xn] = x``)."""
    return re.findall(r"^\s*tape_put\((_tape_\w+), \1n, (\w+)\)\s*$", src, re.M)


def pops(src):
    """``(name, tape)`` for every pop ``x = tape_get(_tape_x, _tape_xn)``."""
    return re.findall(r"^\s*(\w+) = tape_get\((_tape_\w+), \2n\)\s*$", src, re.M)


def pushed_values(src):
    return [v for _, v in pushes(src)]


def code(src):
    """``src`` without its comment lines (``# line N: ...`` quotes the user's source)."""
    return "\n".join(ln for ln in src.splitlines() if not ln.lstrip().startswith("#"))


def lines_matching(src, pattern):
    return [ln.strip() for ln in code(src).splitlines() if re.search(pattern, ln)]


def user_line(f, text):
    """The file line number of the first line of ``f``'s source that contains ``text``."""
    lines, first = inspect.getsourcelines(f)
    for k, ln in enumerate(lines):
        if text in ln:
            return first + k
    raise AssertionError(f"{text!r} not in {f.__name__}")


def body_of(src, header):
    """The indented block under the first line matching ``header`` (a regex)."""
    out, indent = [], None
    for ln in src.splitlines():
        if indent is None:
            if re.search(header, ln):
                indent = len(ln) - len(ln.lstrip())
            continue
        if ln.strip() and len(ln) - len(ln.lstrip()) <= indent:
            break
        out.append(ln)
    assert indent is not None, f"no line matches {header!r}"
    return "\n".join(out)


def assert_tapes_balanced(src):
    """Every tape that is pushed is popped, as many times in the text, and vice versa."""
    pu = sorted(t for t, _ in pushes(src))
    po = sorted(t for _, t in pops(src))
    assert pu == po, (pu, po)
    assert set(pu) == set(tape_names(src)), "a tape declared but never pushed (or the reverse)"


# --- the functions under test (module level: their source is read) ----------------------


def overwritten_needed(x, n):
    y = 0.0
    s = 0.0
    for i in range(n):
        y = x[i] * 2.0
        s = s + y * y
    return s


def never_overwritten(x, k, n):
    s = 0.0
    for i in range(n):
        s = s + k * x[i]
    return s


def cheap_sqrt(x, k, n):
    s = 0.0
    for i in range(n):
        r = math.sqrt(k)
        s = s + r * math.sin(x[i])
    return s


def cheap_binop(x, n):
    s = 0.0
    for i in range(n):
        t = x[i] * 3.0
        s = s + math.sin(t)
    return s


def expensive_overwritten(x, n):
    s = 0.0
    for i in range(n):
        t = math.sin(x[i])
        s = s + t * t
    return s


def sqrt_of_written(x, k, n):
    s = 0.0
    for i in range(n):
        r = math.sqrt(k)
        k = k + x[i] * x[i]
        s = s + r * x[i]
    return s


def compare_only(x, n):
    s = 0.0
    for i in range(n):
        t = x[i] * 2.0
        if t > 1.0:
            s = s + x[i] * x[i]
    return s


def index_only(x, idx, n):
    s = 0.0
    for i in range(n):
        k = idx[i]
        s = s + x[k] * x[k]
    return s


def nested_indices(x, n, m):
    s = 0.0
    for i in range(n):
        for j in range(m):
            s = s + x[i, j] * math.sin(s)
    return s


def straight(x, y):
    a = x * y
    a = math.sin(a)
    b = a * x + math.exp(y)
    return b * a


def range_ab(x, a, b):
    s = 0.0
    for i in range(a, b):
        s = s + x[i] * x[i - 1]
    return s


def range_step(x, a, b):
    s = 0.0
    for i in range(a, b, 2):
        s = s + x[i] * x[i] * x[i]
    return s


def while_loop(x):
    s = x
    while s < 10.0:
        s = s * 1.5 + s * s * 0.01
    return s


def break_loop(x, n):
    s = 0.0
    for i in range(n):
        s = s + x[i] * x[i]
        if s > 2.0:
            break
    return s


def early_return(x, n):
    s = 0.0
    for i in range(n):
        s = s + x[i] * x[i]
        if s > 2.0:
            return s * 3.0
    return s


def row_view(x, n):
    A = np.zeros((n, 3))
    for i in range(n):
        r = A[i]
        r[0] = x[i] * x[i]
        r[1] = x[i]
    return np.sum(A * A)


def slice_read(x):
    v = x[1:]
    return np.sum(v * v)


def transpose_read(A):
    B = A.T
    return np.sum(B[0] * B[1])


def transpose_written(A, x):
    B = A.T
    B[0] = x * 2.0
    return np.sum(A * A)


def reshape_read(x):
    A = x * 1.0
    B = A.reshape((2, 3))
    return np.sum(B[0] * B[1])


def reshape_written(x):
    A = x * 1.0
    B = A.reshape((2, 3))
    B[0, 1] = 3.0
    return np.sum(A * A)


def used_once(x, n):
    s = 0.0
    for i in range(n):
        t = x[i] * 3.0
        s = s + math.sin(t)
    return s


def merge_scalar_index(x):
    return x[0] * x[0] + x[0] * 3.0 + math.sin(x[0])


def merge_in_loop(x, y, n):
    for i in range(n):
        y[i] = x[i] * x[i] + x[i] * 3.0
    return np.sum(y)


def stage_case(x, n):
    s = 0.0
    for i in range(n):
        s = s + math.sin(x[i] * s + 0.5)
    return s


def vec(n, seed=0):
    return np.random.default_rng(seed).uniform(0.2, 0.9, n)


# --- 1. push vs recompute vs nothing ----------------------------------------------------


def test_overwritten_needed_value_is_pushed_once():
    x = vec(4)
    src = sweeps(overwritten_needed, x, 4)
    assert pushed_values(src) == ["y"], "y (read by d(y*y), rebound each trip) is pushed once"
    assert len(tape_names(src)) == 1
    assert [n for n, _ in pops(src)] == ["y"]
    assert_tapes_balanced(src)
    check_grad(overwritten_needed, (x, 4), wrt=0, jit=False)


def test_overwritten_push_sits_after_the_write_in_the_loop():
    src = gen(overwritten_needed, vec(4), 4, stage="forward")
    loop = body_of(src, r"for i in range\(n\):")
    order = [ln.strip() for ln in loop.splitlines()]
    w = next(k for k, ln in enumerate(order) if ln.startswith("y = "))
    p = next(k for k, ln in enumerate(order) if re.match(r"tape_put\(_tape_\w+, \w+, y\)$", ln))
    assert w < p, "the push records the value the adjoint will read (after its write)"
    # a loop with a known trip count reserves the tape once, before the loop
    assert re.search(r"_tape_\w+ = tape_reserve\(_tape_\w+, _tape_\w+, n\)", src)
    assert "tape_reserve" not in loop


def test_needed_value_never_overwritten_is_not_taped():
    x = vec(4)
    src = gen(never_overwritten, x, 2.0, 4, wrt=(0, 1))
    assert "_tape" not in src, "k and x are never written: the adjoint reads them as they are"
    adj = gen(never_overwritten, x, 2.0, 4, wrt=(0, 1), stage="adjoint")
    assert lines_matching(adj, r"^\s*_dt\w* = _dt\w* \* k$"), "d(k * x[i]) reads k itself"
    assert not pops(adj)
    check_grad(never_overwritten, (x, 2.0, 4), wrt=(0, 1), jit=False)


def test_cheap_sqrt_is_recomputed_not_stored():
    assert primitives.cheap(math.sqrt)
    x = vec(4)
    src = sweeps(cheap_sqrt, x, 2.0, 4, wrt=(0, 1))
    assert "r" not in pushed_values(src), "sqrt of an unwritten input is recomputed"
    adj = gen(cheap_sqrt, x, 2.0, 4, wrt=(0, 1), stage="adjoint")
    assert lines_matching(adj, r"= math\.sqrt\(k\)$"), "the adjoint recomputes sqrt(k)"
    # sin is not cheap: its value, read by d(r * sin), is taped
    assert len(pushes(src)) == 1
    assert_tapes_balanced(src)
    check_grad(cheap_sqrt, (x, 2.0, 4), wrt=(0, 1), jit=False)


def test_cheap_arithmetic_on_element_read_is_recomputed():
    x = vec(4)
    src = gen(cheap_binop, x, 4)
    assert "_tape" not in src, "t = x[i] * 3.0 is recomputed from unwritten x"
    adj = gen(cheap_binop, x, 4, stage="adjoint")
    assert lines_matching(adj, r"^\s*t = x\[i\] \* 3\.0$")
    check_grad(cheap_binop, (x, 4), wrt=0, jit=False)


def test_expensive_overwritten_value_is_taped_not_recomputed():
    x = vec(4)
    src = sweeps(expensive_overwritten, x, 4)
    assert pushed_values(src) == ["t"], "sin is not cheap in the primitive table: t is stored"
    adj = gen(expensive_overwritten, x, 4, stage="adjoint")
    assert "math.sin" not in code(adj)
    assert_tapes_balanced(src)
    check_grad(expensive_overwritten, (x, 4), wrt=0, jit=False)


def test_cheap_value_of_overwritten_operand_is_taped():
    """sqrt(k) is cheap, but k changes in the loop: recomputing would read the wrong k."""
    x = vec(4)
    src = gen(sqrt_of_written, x, 2.0, 4, wrt=(0, 1))
    assert "r" in pushed_values(src)
    adj = gen(sqrt_of_written, x, 2.0, 4, wrt=(0, 1), stage="adjoint")
    assert not lines_matching(adj, r"= math\.sqrt\(k\)$"), "never recomputed from a later k"
    assert_tapes_balanced(src)
    check_grad(sqrt_of_written, (x, 2.0, 4), wrt=(0, 1), jit=False)


def test_one_value_one_push():
    """r is read by two adjoint statements (d(r * x[i]) and sqrt's own pullback): the
    first pop restores it, and the second reads it there (no second tape)."""
    src = gen(sqrt_of_written, vec(4), 2.0, 4, wrt=(0, 1))
    vals = pushed_values(src)
    assert vals == ["r"]
    assert_tapes_balanced(src)


def test_value_only_compared_is_not_taped():
    x = np.array([0.2, 0.7, 0.3, 0.9])
    src = gen(compare_only, x, 4)
    assert "t" not in pushed_values(src), "t feeds only the test: the adjoint never reads it"
    # the branch condition reads only the unwritten x: recomputed, not recorded
    assert "_tape" not in src
    adj = gen(compare_only, x, 4, stage="adjoint")
    assert lines_matching(adj, r"= bool\(x\[i\] \* 2\.0 > 1\.0\)$")
    check_grad(compare_only, (x, 4), wrt=0, jit=False)


def branch_on_state(x, n):
    s = 0.5
    for i in range(n):
        if s > 1.0:
            s = s * x[i]
        else:
            s = s + x[i]
    return s


def test_condition_on_a_rebound_value_is_taped_as_bool():
    x = np.array([0.6, 0.7, 1.3, 0.9])
    dtypes = tape_names(gen(branch_on_state, x, 4, stage="forward"))
    assert "np.bool_" in dtypes.values(), "s changes every trip: its test is recorded"
    assert_tapes_balanced(gen(branch_on_state, x, 4))
    check_grad(branch_on_state, (x, 4), wrt=0, jit=False)


def test_integer_index_is_recomputed_not_taped():
    x = vec(4)
    idx = np.array([2, 0, 3, 2])
    src = gen(index_only, x, idx, 4)
    assert "k" not in pushed_values(src), "k = idx[i] reads an unwritten int array"
    fwd = gen(index_only, x, idx, 4, stage="forward")
    assert all(d != "np.int64" for d in tape_names(fwd).values())
    adj = gen(index_only, x, idx, 4, stage="adjoint")
    assert lines_matching(adj, r"^\s*k = idx\[i\]$")
    check_grad(index_only, (x, idx, 4), wrt=0, jit=False)


def test_element_read_through_recomputed_index_is_not_taped():
    src = gen(index_only, vec(4), np.array([2, 0, 3, 2]), 4)
    assert "_tape" not in src
    assert lines_matching(src, r"= x\[idx\[i\]\]$"), "x[k] re-read through k = idx[i]"


def test_loop_indices_are_never_taped():
    x = vec(6).reshape(2, 3)
    src = gen(nested_indices, x, 2, 3)
    assert not {"i", "j"} & set(pushed_values(src))
    fwd = gen(nested_indices, x, 2, 3, stage="forward")
    assert all(d != "np.int64" for d in tape_names(fwd).values())
    assert "for i in range(n - 1, -1, -1):" in src
    assert "for j in range(m - 1, -1, -1):" in src
    check_grad(nested_indices, (x, 2, 3), wrt=0, jit=False)


def test_straight_line_has_no_tape():
    src = gen(straight, 0.7, 1.3, wrt=(0, 1))
    assert "_tape" not in src and "tape_reserve" not in src
    # the rebound `a` is two versions, so both values are still there for the adjoint
    check_grad(straight, (0.7, 1.3), wrt=(0, 1), jit=False)


# --- 2. loop shapes in reverse ----------------------------------------------------------


def test_range_a_b_reverses_to_b_minus_1_down_to_a():
    x = vec(6)
    src = gen(range_ab, x, 1, 4, stage="reverse")
    assert "for i in range(a, b):" in src
    assert re.search(r"for i in range\(b - 1, a - 1, -1\):", src)
    src = gen(range_ab, x, 1, 4)
    assert "_tape" not in src
    # then gather form: over the output index, i in [a - 1, b), dx[i] written once each
    assert "_lo = a" in src and "_hi = b" in src and "dx[i - 1]" not in src
    g = check_grad(range_ab, (x, 1, 4), wrt=0, jit=False)[0]
    assert g[4] == 0.0 and g[5] == 0.0, "elements outside [a-1, b) get no gradient"


def test_range_with_step_reverses_through_a_counter():
    x = vec(7)
    src = gen(range_step, x, 1, 6)
    assert "trip_count(a, b, 2)" in src
    assert re.search(r"i = a \+ _\w+ \* 2", src), "the index is recomputed from the counter"
    assert "_tape" not in src
    g = check_grad(range_step, (x, 1, 6), wrt=0, jit=False)[0]
    assert np.all(g[[0, 2, 4, 6]] == 0.0)


def test_while_loop_records_trip_count_and_replays_it():
    fwd = gen(while_loop, 1.0, stage="forward")
    loop = body_of(fwd, r"^\s*while ")
    counters = re.findall(r"^\s*(\w+) \+= 1$", loop, re.M)
    counters = [c for c in counters if not c.startswith("_tape")]
    assert len(counters) == 1, loop
    c = counters[0]
    assert re.search(rf"^\s*{c} = 0$", fwd, re.M), "the counter starts at 0 before the loop"
    adj = gen(while_loop, 1.0, stage="adjoint")
    assert re.search(rf"for \w+ in range\({c}\):", adj), "the adjoint runs the loop that often"
    assert not re.search(r"^\s*while ", adj, re.M)
    check_grad(while_loop, (1.0,), wrt=0, jit=False)


def test_break_counts_trips_and_reverses_over_them():
    x = np.array([0.5, 0.9, 1.2, 0.3, 0.7])
    src = gen(break_loop, x, 5)
    fwd = body_of(src, r"for i in range\(n\):")
    counters = [c for c in re.findall(r"^\s*(\w+) \+= 1$", fwd, re.M)
                if not c.startswith("_tape")]
    assert len(counters) == 1
    # (over the counted trips; reversed, or ascending where its iterations are independent,
    # as here: backend/ascending.py)
    c = counters[0]
    assert f"for i in range({c} - 1, -1, -1):" in src or (
        f"for i in range({c}):" in src and "over i are independent: run ascending" in src)
    assert "i" not in pushed_values(src)
    g = check_grad(break_loop, (x, 5), wrt=0, jit=False)[0]
    assert np.all(g[3:] == 0.0), "iterations after the break contribute nothing"


def test_break_not_taken():
    x = np.array([0.1, 0.2, 0.3])
    check_grad(break_loop, (x, 3), wrt=0, jit=False)


def test_nested_loops_reverse_inside_out():
    x = vec(6).reshape(2, 3)
    # (the loop's tape, without the binomial branch of automatic checkpointing)
    src = gen(nested_indices, x, 2, 3, auto_checkpoint=False)
    outer = body_of(src, r"for i in range\(n - 1, -1, -1\):")
    assert "for j in range(m - 1, -1, -1):" in outer
    # s (read by d sin(s)) is pushed once per inner trip; reserves sit in the outer loop
    assert pushed_values(src).count("s") == 1
    fwd_outer = body_of(src, r"for i in range\(n\):")
    assert "tape_reserve" in fwd_outer and ", m)" in fwd_outer
    assert_tapes_balanced(src)


@pytest.mark.parametrize("x", [np.array([0.5, 0.9, 1.2, 0.3]), np.array([0.1, 0.2, 0.3, 0.4])],
                         ids=["returns-early", "runs-through"])
def test_early_return_in_loop(x):
    src = gen(early_return, x, 4)
    ln_early = user_line(early_return, "return s * 3.0")
    ln_late = user_line(early_return, "    return s\n")
    assert f"# line {ln_early}: return s * 3.0" in src
    assert f"# line {ln_late}: return s" in src
    assert "i" not in pushed_values(src)
    assert_tapes_balanced(src)
    check_grad(early_return, (x, 4), wrt=0, jit=False)


# --- 3. views -----------------------------------------------------------------------------


def test_row_view_written_gets_adjoint_view():
    x = vec(3)
    src = gen(row_view, x, 3)
    assert re.search(r"^\s*dr = dA\[i\]$", src, re.M)
    assert "dr = np.zeros" not in src
    adj_loop = body_of(src, r"for i in range\(n - 1, -1, -1\):")
    assert "dr = dA[i]" in adj_loop, "the adjoint view is made afresh in each reversed trip"
    assert "_tape" not in src
    check_grad(row_view, (x, 3), wrt=0, jit=False)


def test_slice_view_read_only_has_no_adjoint_view():
    x = vec(5)
    src = gen(slice_read, x)
    assert not re.search(r"\bdv = dx\[", src), "a read-only view needs no adjoint view"
    assert "dx[1:] += dv" in src
    check_grad(slice_read, (x,), wrt=0, jit=False)


def test_transpose_read_only_gets_adjoint_view():
    """Read by rows, the transpose of an argument nothing writes has the transpose of
    its adjoint as its adjoint (analyse._read_only_view): nothing is transposed back."""
    A = vec(6).reshape(3, 2)
    src = gen(transpose_read, A)
    assert re.search(r"^\s*dB = dA\.T$", src, re.M), src
    assert "transpose_back(dB" not in src
    check_grad(transpose_read, (A,), wrt=0, jit=False)


def test_transpose_written_gets_adjoint_view():
    A, x = vec(6).reshape(3, 2), vec(3, 1)
    src = gen(transpose_written, A, x, wrt=(0, 1))
    assert re.search(r"^\s*dB = dA\.T$", src, re.M)
    assert "A = A.copy()" in src, "the caller's array is written: the gradient works on a copy"
    check_grad(transpose_written, (A, x), wrt=(0, 1), jit=False)


def test_reshape_read_only_is_accepted():
    x = vec(6)
    src = gen(reshape_read, x)
    assert "reshape_like(dB, A)" in src
    check_grad(reshape_read, (x,), wrt=0, jit=False)


def test_reshape_view_written_is_refused_at_its_line():
    with pytest.raises(TransformError) as e:
        gen(reshape_written, vec(6))
    assert e.value.lineno == user_line(reshape_written, "B = A.reshape")
    assert "'B'" in e.value.msg and "'A'" in e.value.msg
    assert e.value.filename.endswith("test_pass_decisions.py")
    assert ".copy()" in e.value.hint


# --- 4. initialisation and accumulation ---------------------------------------------------


def test_scalar_adjoint_used_once_is_assigned():
    x = vec(4)
    adj = gen(used_once, x, 4, stage="adjoint")
    assert lines_matching(adj, r"^\s*dt = \S"), "dt is assigned where it is made"
    assert not lines_matching(adj, r"^\s*dt = 0\.0$")
    assert not lines_matching(adj, r"^\s*dt \+=")
    check_grad(used_once, (x, 4), wrt=0, jit=False)


def test_array_adjoints_zeroed_once_outside_loops():
    x = vec(4)
    src = gen(used_once, x, 4)
    # (made empty: the loop writes each element once, ``backend/write_once.py``)
    assert lines_matching(src, r"^\s*dx = np\.empty_like\(x\)$") == ["dx = np.empty_like(x)"]
    # (the loop's iterations are independent: it runs forward with each adjoint inside)
    assert "_like" not in body_of(src, r"for i in range\(n\):")
    assert src.index("dx = np.empty_like(x)") < src.index("for i in range(n):")


def test_repeated_element_accumulations_merge_in_optimize():
    x = vec(3)
    rev = gen(merge_scalar_index, x, stage="reverse")
    opt = gen(merge_scalar_index, x, stage="optimize")
    final = gen(merge_scalar_index, x)
    assert len(lines_matching(rev, r"^\s*dx\[0\] \+=")) == 4
    assert len(lines_matching(opt, r"^\s*dx\[0\] \+=")) == 1
    assert len(lines_matching(final, r"^\s*dx\[0\] \+=")) == 1
    merged = lines_matching(opt, r"^\s*dx\[0\] \+=")[0]
    assert merged.count(" + ") == 3, "the four contributions are summed in one store"
    check_grad(merge_scalar_index, (x,), wrt=0, jit=False)


def test_accumulations_merge_inside_a_reversed_loop():
    x, y = vec(3), vec(3, 1)
    rev = gen(merge_in_loop, x, y, 3, wrt=(0, 1), stage="reverse")
    final = gen(merge_in_loop, x, y, 3, wrt=(0, 1))
    assert len(lines_matching(rev, r"^\s*dx\[i\] \+=")) == 3
    # (its iterations are independent: it runs ascending, ``backend/ascending.py``)
    loop = body_of(final.split("over i are independent: run ascending")[1],
                   r"for i in range\(n\):")
    # (one write: ``=``, the loop being dx's first writer, ``backend/write_once.py``)
    assert len(lines_matching(loop, r"^\s*dx\[i\] \+?=")) == 1
    # the element write reads its adjoint, then zeroes it
    assert loop.index("= dy[i]") < loop.index("dy[i] = 0.0")
    check_grad(merge_in_loop, (x, y, 3), wrt=(0, 1), jit=False)


def test_line_comments_name_user_lines():
    x = vec(4)
    src = sweeps(overwritten_needed, x, 4)
    for text in ("y = x[i] * 2.0", "s = s + y * y"):
        assert f"# line {user_line(overwritten_needed, text)}: {text}" in src


def _line_helper(a, b):
    c = math.sin(a) * b
    return c * c + a


def calls_line_helper(x, b):
    s = 0.0
    for i in range(3):
        s = s + _line_helper(x[i], b)
    return s


def test_line_comments_of_an_inlined_helper_name_the_call():
    """Every statement inlined from a helper, its return expression's included, is
    attributed to the call site (the return's own line in the helper once leaked out as a
    line of the caller: ``# line 3: s = 0.0``)."""
    x = vec(3)
    src = gen(calls_line_helper, x, 2.0)
    call = user_line(calls_line_helper, "s = s + _line_helper(x[i], b)")
    lines = set(re.findall(r"# line (\d+): (.*)", src))
    assert lines == {(str(call), "s = s + _line_helper(x[i], b)")}, lines
    check_grad(calls_line_helper, (x, 2.0), wrt=(0, 1), jit=False)


# --- 5. the stage API ---------------------------------------------------------------------


@pytest.mark.parametrize("name", pipeline.STAGES)
def test_every_stage_is_accepted(name):
    src = gen(stage_case, vec(3), 3, stage=name)
    assert isinstance(src, str)
    assert re.search(r"^(# .*\n)?def \w+\(", src, re.M), src


def test_stage_names_cover_every_pass():
    assert {p.name for p in pipeline.PASSES} <= set(pipeline.STAGES)
    assert {"all", "forward", "adjoint", "normalized"} <= set(pipeline.STAGES)


def test_unknown_stage_raises_value_error():
    with pytest.raises(ValueError, match="stage must be one of"):
        gen(stage_case, vec(3), 3, stage="no-such-pass")
    with pytest.raises(ValueError):
        pipeline.stage(stage_case, "no-such-pass", ["x"], {})


def test_sweeps_split_the_compiled_function():
    x = vec(3)
    fwd = gen(stage_case, x, 3, stage="forward")
    adj = gen(stage_case, x, 3, stage="adjoint")
    full = gen(stage_case, x, 3, stage="all")
    assert "_dret" not in fwd.split("\n", 1)[1], "the forward sweep never reads the seed"
    assert re.match(r"def \w+\(_dret\):", adj)
    assert pushes(fwd) and not pops(fwd)
    assert pops(adj) and not pushes(adj)
    assert len(pushes(full)) == len(pushes(fwd)) and len(pops(full)) == len(pops(adj))
    norm = gen(stage_case, x, 3, stage="normalized")
    assert "_tape" not in norm and "_dret" not in norm
    check_grad(stage_case, (x, 3), wrt=0, jit=False)


def loop_var_read_after(x):
    s = 0.0
    for i in range(len(x)):
        s += x[i]
    return s * i


@pytest.mark.parametrize("jit", [False, True], ids=["nojit", "jit"])
def test_grad_only_keeps_a_loop_whose_variable_is_read_after_it(jit):
    """The gradient-only variant needs no forward work of the loop but does need ``i``
    after it: the loop stays (as ``for i in range(n): pass``) instead of ``i`` being
    unbound (it was: UnboundLocalError, or a Numba error under jit)."""
    x = vec(5)
    d = jg.differentiate(loop_var_read_after, jit=False)
    only = d._generated((x,)).unit.sources["grad_only"]
    assert re.search(r"for i in range\(_n\):\n\s+pass", only), only
    g = jg.grad(loop_var_read_after, jit=jit)(x)
    np.testing.assert_allclose(g, np.full(5, 4.0))
    check_grad(loop_var_read_after, (x,), jit=jit)


# --- dead loops (flow-sensitive) --------------------------------------------------------


def recomputed_energy(p, c):
    """The adjoint recomputes every value it needs from ``p``: the forward loop's results
    are all bound again before they are read."""
    s = 0.0
    for i in range(p.shape[0]):
        for j in range(i + 1, p.shape[0]):
            d = p[i] - p[j]
            s += 1.0 / math.sqrt(d * d + c)
    return s


def loop_result_read(x, k):
    """The loop's result ``y`` is read by the adjoint: the loop stays."""
    y = 0.5
    for i in range(x.shape[0]):
        y = math.sin(y * k) + x[i]
    return y * y


@pytest.mark.parametrize("jit", [True, False])
def test_forward_loop_without_live_results_is_dropped(jit):
    """``grad`` (no value) of a function whose adjoint recomputes everything has no forward
    loop: name-based dead code keeps it (its names are read later), ``dead_loops`` sees
    that each is bound again first."""
    p = np.linspace(0.1, 1.3, 5)
    check_grad(recomputed_energy, (p, 0.2), wrt=(0, 1), jit=jit)
    d = jg.differentiate(recomputed_energy, wrt=(0, 1), jit=jit)
    d.grad(p, 0.2)
    only = d._last.unit.sources["grad_only"]
    assert len(lines_matching(only, r"^\s*for i in range")) == 1, only
    assert lines_matching(only, r"^\s*for i in range\(n - 1, -1, -1\):|"
                                r"^\s*for i in range\(\w+ - 1, -1, -1\):"), only
    # the value variant needs its forward loop: it runs fused with the adjoint (fuse.py)
    both = d.source(p, 0.2)
    assert len(lines_matching(both, r"^\s*for i in range")) == 1, both
    assert "iterations over i are independent" in both, both


def test_forward_loop_with_a_read_result_stays():
    x = np.linspace(0.1, 1.3, 5)
    check_grad(loop_result_read, (x, 0.7), wrt=(0, 1), jit=False)
    d = jg.differentiate(loop_result_read, wrt=(0, 1), jit=False)
    d.grad(x, 0.7)
    only = d._last.unit.sources["grad_only"]
    assert len(lines_matching(only, r"^\s*for i in range")) == 2, only
