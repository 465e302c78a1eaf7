"""The random-program fuzzer (tests/fuzz/) in CI, and tests of the fuzzer itself.

``test_fuzz_chunk`` checks programs ``0 .. CHUNKS * PER_CHUNK - 1`` of ``SEED``,
in parametrized chunks so pytest-xdist spreads them: every program without Numba,
every ``JIT_EVERY``-th one also with ``jit=True`` (Numba compiles three functions
per program, about 1-2 s, so compiling all of them would not fit the CI budget).
A chunk fails on any wrong gradient/value, crash or hang, with the shrunk repro of
the first failure of each kind in the message.  Re-run one program with::

    python tests/fuzz/run.py --seed 20240 --only INDEX --shrink
"""

from __future__ import annotations

import ast
import os
import re
import sys
import tempfile

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))

from fuzz import check as fcheck  # noqa: E402
from fuzz.gen import Program, generate  # noqa: E402
from fuzz.run import run_fuzz  # noqa: E402
from fuzz.shrink import shrink  # noqa: E402

import jitgrad  # noqa: E402

SEED = 20240
CHUNKS = 10
PER_CHUNK = 20
JIT_EVERY = 8


@pytest.mark.slow
@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_fuzz_chunk(chunk):
    lines: list = []
    summary = run_fuzz(SEED, PER_CHUNK, start=chunk * PER_CHUNK, jit="both",
                       jit_every=JIT_EVERY, workers=1, do_shrink=True, shrink_budget=30.0,
                       shrink_total=60.0, out=lines.append)
    t = summary.tally()
    bad = t["wrong"] + t["crash"] + t["hang"]
    if bad:
        shown = {pr.index for pr, *_ in summary.shrunk}
        unshrunk = [f"# --- program #{pr.index} (not shrunk: same kind as one above, or out "
                    f"of time)\n{pr.program.source if pr.program else '(source unknown)'}"
                    for pr in summary.failures() if pr.index not in shown][:3]
        msg = "\n".join([summary.last_line()] +
                        [ln for ln in lines if not ln.startswith("# ---")
                         and "\n" not in ln] +
                        [text for *_, text in summary.shrunk] + unshrunk)
        pytest.fail(f"fuzz seed {SEED}, programs {chunk * PER_CHUNK}.."
                    f"{(chunk + 1) * PER_CHUNK - 1}: {bad} failing\n{msg}", pytrace=False)
    assert len(summary.programs) == PER_CHUNK


# --- the fuzzer itself -----------------------------------------------------------------------

SIMPLE = """import math
import numpy as np


def f(x, a, n):
    s = 0.0
    for i in range(len(x)):
        s += x[i] * x[i] * a
    return s + math.sin(a)
"""


def test_generator_is_deterministic_and_valid():
    for i in range(40):
        p, q = generate(3, i), generate(3, i)
        assert p.source == q.source and p.shape == q.shape and p.wrt == q.wrt
        compile(p.source, f"<fuzz {i}>", "exec")
        assert f"def f({', '.join(p.params)}):" in p.source
        assert p.original is None or "def f(x, a, n):" in p.original
    assert generate(3, 1).source != generate(3, 2).source
    assert generate(3, 1).source != generate(4, 1).source


def test_generated_programs_run_as_plain_python():
    """Most generated programs run and give finite scalars (the rest are regenerated)."""
    tmp = tempfile.mkdtemp()
    good = 0
    for i in range(30):
        mod, path = fcheck.load(generate(5, i), tmp)
        try:
            fcheck.plain(mod.f, fcheck.sample(generate(5, i), 0))
            good += 1
        except Exception:
            pass
        finally:
            fcheck.unload(mod, path)
    assert good >= 25


class _Fake:
    """Stands in for jitgrad.differentiate(f, wrt=(0, 1)) of SIMPLE, with a bug knob."""

    def __init__(self, f, bug):
        self.f, self.bug = f, bug

    def __call__(self, x, a, n):
        return self.f(x.copy(), a, n)

    def _grads(self, x, a):
        dx, da = 2 * x * a, float(np.sum(x * x)) + np.cos(a)
        if self.bug == "grad":
            dx = dx + np.array([0.0] * (len(x) - 1) + [0.5])
        if self.bug == "mutate":
            x[0] += 1.0
        if self.bug == "refuse":
            raise jitgrad.TransformError("no rule for this", filename=self.f.__code__.co_filename,
                                         lineno=7, source_line="s += x[i] * x[i] * a")
        if self.bug == "unlocated":
            raise jitgrad.TransformError("no rule for this")
        if self.bug == "crash":
            raise TypeError("boom")
        return dx, da

    def value_and_grad(self, x, a, n):
        v = self.f(x.copy(), a, n)
        return v, self._grads(x, a)

    def grad(self, x, a, n):
        return self._grads(x, a)

    def vjp(self, x, a, n):
        v = self.f(x.copy(), a, n)
        return v, lambda dy: tuple(np.multiply(dy, g) for g in self._grads(x.copy(), a))

    def jvp(self, primals, tangents):
        x, a, n = primals
        v = self.f(x.copy(), a, n)
        g = self._grads(x, a)
        return v, float(np.sum(g[0] * tangents[0]) + g[1] * tangents[1])


@pytest.mark.parametrize("bug, outcome", [(None, "ok"), ("grad", "wrong"), ("mutate", "wrong"),
                                          ("refuse", "refused"), ("unlocated", "crash"),
                                          ("crash", "crash")])
def test_checker_classifies(monkeypatch, bug, outcome):
    monkeypatch.setattr(jitgrad, "differentiate",
                        lambda f, wrt, jit: _Fake(f, bug))
    prog = Program(SIMPLE, (4,), 2, (0, 1))
    res = fcheck.check(prog, jit=False, tmpdir=tempfile.mkdtemp())
    assert res["outcome"] == outcome, res
    if bug == "grad":
        assert "d/dx[3]" in res["reason"]


def test_checker_on_real_jitgrad_simple_program():
    res = fcheck.check(Program(SIMPLE, (4,), 2, (0, 1)), jit=False, tmpdir=tempfile.mkdtemp())
    assert res["outcome"] == "ok", res


def test_checker_wrong_value(monkeypatch):
    class Off(_Fake):
        def value_and_grad(self, x, a, n):
            v, g = super().value_and_grad(x, a, n)
            return v + 1e-6, g

    monkeypatch.setattr(jitgrad, "differentiate", lambda f, wrt, jit: Off(f, None))
    res = fcheck.check(Program(SIMPLE, (4,), 2, (0, 1)), jit=False, tmpdir=tempfile.mkdtemp())
    assert res["outcome"] == "wrong" and "value" in res["reason"], res


def test_pool_catches_hangs_and_dead_workers():
    hang = Program(SIMPLE.replace("    s = 0.0\n", "    s = 0.0\n    while True:\n"
                                                   "        s += 1.0\n"), (3,), 2, (0, 1))
    die = Program("import ctypes\n" + SIMPLE.replace("    s = 0.0\n",
                                                     "    s = ctypes.string_at(0)\n"),
                  (3,), 2, (0, 1))
    ok = Program(SIMPLE, (3,), 2, (0, 1))
    with fcheck.Pool(1) as pool:
        got = dict(pool.run([("hang", ("prog", hang, False), 3.0),
                             ("die", ("prog", die, False), 20.0),
                             ("ok", ("prog", ok, False), 20.0)]))
    assert got["hang"]["outcome"] == "hang"
    assert got["die"]["outcome"] == "crash" and "died" in got["die"]["reason"]
    assert got["ok"]["outcome"] == "ok", got["ok"]


def test_shrinker_minimises_while_the_failure_reproduces():
    prog = max((generate(2, i) for i in range(10)), key=lambda p: len(p.source))
    marker = "return"
    small = shrink(prog, lambda p: marker in p.source, budget_s=30)
    assert marker in small.source
    assert len(small.source) < len(prog.source) / 2
    compile(small.source, "<shrunk>", "exec")


# --- the alpha-renaming, long-loop and random-draw streams ------------------------------------

def test_renaming_stream_maps_wrt_and_keeps_the_original():
    progs = [generate(11, i) for i in range(80)]
    renamed = [p for p in progs if p.original is not None]
    assert 8 <= len(renamed) <= 32  # about a quarter
    for p in renamed:
        names = [w for w in (p.wrt if isinstance(p.wrt, tuple) else (p.wrt,))
                 if isinstance(w, str)]
        assert all(w in p.params for w in names)
        assert p.wrt_positions == Program(p.original, p.shape, p.n, p.wrt if not names else
                                          tuple(("x", "a", "n")[p.params.index(w)]
                                                if isinstance(w, str) else w
                                                for w in p.wrt)).wrt_positions
        assert p.with_source(p.source).original is None  # a shrunk program is its own reference
    plain_ones = [p for p in progs if p.original is None]
    assert all(p.params == ("x", "a", "n") for p in plain_ones)


def test_checker_compares_a_renamed_program_with_its_original():
    good = SIMPLE.replace("s = ", "S = ").replace("s += ", "S += ").replace("return s", "return S")
    prog = Program(good, (4,), 2, (0, 1), original=SIMPLE)
    assert fcheck.check(prog, jit=False, tmpdir=tempfile.mkdtemp())["outcome"] == "ok"
    bad = Program(good.replace("* a\n", "* a * 1.5\n"), (4,), 2, (0, 1), original=SIMPLE)
    res = fcheck.check(bad, jit=False, tmpdir=tempfile.mkdtemp())
    assert res["outcome"] == "crash" and res["signature"] == "crash:rename", res


def test_long_loops_stay_within_their_budget():
    from fuzz.long_loops import RECOMPUTE_BUDGET, T_MAX, recompute_steps

    assert recompute_steps(5000, None) == 10000 and recompute_steps(10, 1) == 90  # (an upper bound)
    seen = []
    for i in range(300):
        src = generate(20240, i).original or generate(20240, i).source
        for m in re.finditer(r"range\((\d+)\), snapshots=(\w+)\)", src):
            T, k = int(m.group(1)), m.group(2)
            kk = None if k == "None" else 4 if k == "n" else int(k)
            assert T <= T_MAX and recompute_steps(T, kk) <= RECOMPUTE_BUDGET, m.group(0)
            seen.append(T)
    assert len(seen) >= 10 and max(seen) > 500


def test_long_loops_couple_state_through_a_bounded_factor():
    """State couples to state through ``math.tanh(a)``, so long bodies stay contractive:
    ``v = 0.8 * v + 0.1 * np.tanh(v[::-1] * a + J)`` with ``a = -4.5`` (seed 120531 #1425)
    left a palindromic ``v`` on an unstable subspace, whose adjoint overflowed in ``hvp``."""
    src = generate(120531, 1425).original or generate(120531, 1425).source
    assert "[::-1] * math.tanh(a) + " in src, src
    for i in range(300):
        src = generate(20240, i).original or generate(20240, i).source
        assert "[::-1] * a + " not in src, src


DRAWS = """import math
import numpy as np


def f(x, a, n):
    s = 0.0
    for i in range(len(x)):
        s = 0.5 * s + 0.1 * math.tanh(x[i] * a + np.random.standard_normal())
        s += 0.2 * math.sin(np.random.uniform(-1.0, 1.0) * a * x[i])
    return s
"""


@pytest.mark.parametrize("jit", [False, True])
def test_checker_seeds_every_evaluation_of_a_program_with_random_draws(jit):
    res = fcheck.check(Program(DRAWS, (4,), 2, (0, 1)), jit=jit, tmpdir=tempfile.mkdtemp())
    assert res["outcome"] == "ok", res


def test_neutralise_renames_pool_names_to_plain_ones():
    from fuzz.rename import alpha_rename, neutralise
    from fuzz.run import DRAW_CALL

    src, _ = alpha_rename(SIMPLE, 4)
    plain = neutralise(src)
    ns: dict = {}
    exec(compile(plain, "<plain>", "exec"), ns)
    assert abs(ns["f"](np.arange(4.0), 0.5, 2) - 7.0 - np.sin(0.5)) < 1e-12
    names = {n.id for n in ast.walk(ast.parse(plain)) if isinstance(n, ast.Name)}
    assert not names & {"J", "K", "_dret", "_t3"}
    assert DRAW_CALL.sub("0.25", "a + np.random.uniform(0.0, 1.0)") == "a + 0.25"


# --- the pair-loop stream (issue 29 item 2) ---------------------------------------------------

def _has_pairs(p: Program) -> bool:
    src = p.original or p.source
    return "def dist" in src or "dr = " in src or "dq = " in src


def test_pair_loops_come_in_matrix_programs_and_differentiate():
    progs = [generate(11, i) for i in range(160)]
    pairs = [p for p in progs if _has_pairs(p)]
    assert len(pairs) >= 6 and all(len(p.shape) == 2 for p in pairs)
    assert any("def dist" in (p.original or p.source) for p in pairs)
    for p in [p for p in pairs if p.original is None][:3]:  # (renaming: its own test)
        res = fcheck.check(p, jit=False, tmpdir=tempfile.mkdtemp())
        assert res["outcome"] in ("ok", "refused"), (p.describe(), res)


# --- the list stream (issue 29 item 8) --------------------------------------------------------

def test_lists_of_numbers_are_generated_and_differentiate():
    progs = [generate(11, i) for i in range(120)]
    lists = [p for p in progs if ".append(" in (p.original or p.source)]
    assert len(lists) >= 8
    checked = 0
    for p in [p for p in lists if p.original is None]:  # (renaming: its own test)
        res = fcheck.check(p, jit=False, tmpdir=tempfile.mkdtemp())
        if res["outcome"] in ("invalid", "skipped"):
            continue  # the program itself fails, or has no smooth point
        assert res["outcome"] == "ok", (p.describe(), res)
        checked += 1
        if checked == 3:
            break
    assert checked == 3


def test_points_whose_intermediates_cancel_are_rejected():
    # fuzz seed 97006 #2219: two values near 1e18 cancel to the result, so the float
    # function is flat where the exact derivative is 1e17; no point of it may be judged
    src = ("def f(x, a, n):\n"
           "    t = a\n"
           "    for k in range(40):\n"
           "        t = t * (3.0 + x[0] * x[0])\n"
           "    return (t + a) - t + x[1]\n")
    ns: dict = {}
    exec(compile(src, "<cancel>", "exec"), ns)
    args = (np.array([0.5, 0.25]), 0.75, 2)
    assert fcheck.peak(ns["f"], args) > fcheck.MAX_ABS_INTERMEDIATE
    small = (np.array([0.5, 0.25]), 1e-20, 2)
    assert fcheck.peak(ns["f"], small) < fcheck.MAX_ABS_INTERMEDIATE


# --- ill-conditioned adjoints (fuzz seed 99711 #1447) -----------------------------------------

ILL = ("import numpy as np\n"
       "def f(x, a, n):\n"
       "    s = -10.0 - a * a\n"
       "    d = np.zeros(4)\n"
       "    acc = 0.0\n"
       "    for t in range(600):\n"
       "        d = 0.8 * d + 0.1 * np.tanh(d[::-1] * s + 0.3)\n"
       "        acc = acc + 0.05 * d[t % 4]\n"
       "    return acc + x[0]\n")


@pytest.mark.parametrize("jit", [False, True])
def test_an_ill_conditioned_adjoint_is_told_apart_from_a_wrong_one(jit):
    # d stays palindromic (every element computed alike), so its antisymmetric mode,
    # growing 1.8x a step, never reaches the value or a tangent; the adjoint seeds it
    # (d[t % 4]) and grows to 1e150, whose rounding is reverse mode's result
    prog = Program(ILL, (3,), 3, 1, seed=5)
    res = fcheck.check(prog, jit=jit, tmpdir=tempfile.mkdtemp())
    assert res["outcome"] == "skipped" and res.get("ill"), res
    # a wrong formula is a smooth function of the inputs: never taken for rounding
    point = fcheck.find_point(fcheck.load(prog, tempfile.mkdtemp())[0].f, prog)[1]
    wrong = [dict(outcome="wrong", api="grad", signature="wrong:grad:gradient")]

    class Smooth:  # reverse mode 1e7 times too big, the same at every nearby point
        def grad(self, x, a, n):
            return 1e7 * (1.0 + a)

    assert fcheck.ill_conditioned(Smooth(), prog, point, wrong) == ""
    assert fcheck.ill_conditioned(Smooth(), prog, point, wrong + [dict(
        outcome="wrong", api="f(...)", signature="wrong:f(...):value")]) == ""
