"""Long checkpointed loops for the fuzzer: ``jg.checkpointed(range(T), snapshots=k)`` with
``T`` up to 5,000, ``k`` in 1, 2, 3, 8, 32, ``n`` and ``None``, loop-carried state named
from the alpha-renaming pool (``J``, ``K``, ``M``, ``_t3``, ``dx``...) and, in half of the
programs with one, random draws (``np.random.standard_normal()``...) inside the loop.

Bodies are cheap and contractive (``J = 0.5 * J + 0.1 * math.tanh(...)``), so values stay
bounded and the derivative of the loop's result forgets old steps: finite differences of
5,000 steps stay meaningful.  State couples to state through ``math.tanh(a)``, never ``a``
(unbounded): ``v = 0.8 * v + 0.1 * np.tanh(v[::-1] * a + J)`` with ``|a| > 2`` expands the
antisymmetric part of ``v``; a palindromic ``v`` (``np.ones(4) * 0.1``) never leaves that
unstable subspace, so ``f`` is smooth but its adjoint grows like 1.2**T and cancels only in
exact arithmetic (reverse mode of any tool gives noise, ``hvp`` overflows to NaN).
``T`` is capped per ``k`` so that the binomial schedule's
recomputation stays near ``RECOMPUTE_BUDGET`` steps per reverse sweep (``k = 1`` reruns
about ``T**2 / 2`` steps): a program costs about the same without Numba at every ``k``.
Everything is drawn from the module's long-loop stream ``mod.lp``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .rename import POOL

T_MAX = 5000
RECOMPUTE_BUDGET = 25000
SNAPSHOTS = ("1", "2", "2", "3", "8", "32", "None", "None", "n")
#: pool names a generated program may bind (not the modules it imports)
STATE_NAMES = tuple(p for p in POOL if p not in ("np", "math", "numba", "jg", "helpers"))
DRAWS = ("np.random.standard_normal()", "np.random.uniform(-0.5, 0.5)",
         "np.random.uniform(0.0, 1.0)", "np.random.normal(0.0, 0.5)")


def recompute_steps(T: int, k: int | None) -> int:
    """Untaped steps the binomial schedule reruns in one reverse sweep (an upper bound)."""
    if k is None or k >= T:
        return 2 * T
    r = 0
    while math.comb(k + r, k) < T:
        r += 1
    return r * T


def trip_count(lp, k: int | None) -> int:
    """``T`` log-uniform in 10 .. 5,000 (or uniform in 2,000 .. 5,000 a third of the time),
    lowered until the recomputation fits the budget."""
    T = lp.randint(2000, T_MAX) if lp.random() < 0.33 else \
        int(round(10 ** lp.uniform(1.0, math.log10(T_MAX))))
    while T > 2 and recompute_steps(T, k) > RECOMPUTE_BUDGET:
        T = int(T * 0.8)
    return T


def _fresh(g, sc, lp, avoid: set) -> str | None:
    cands = [p for p in STATE_NAMES if p not in g.kinds and p not in sc.floats
             and p not in sc.arrays and p not in sc.ints and p not in avoid]
    return lp.choice(cands) if cands else None


def _elem(x_shape: tuple, i: str) -> str:
    """An element of ``x`` at a step-dependent index."""
    if len(x_shape) == 1:
        return f"x[{i} % {x_shape[0]}]"
    return f"x[{i} % {x_shape[0]}, {i} % {x_shape[1]}]"


@dataclass
class LongLoop:
    lines: list  # the state's bindings and the loop
    floats: list  # the loop-carried floats
    array: str | None  # a loop-carried array of x.shape[0] elements
    index: str
    result: str  # an expression of the loop's results, for the function's return


def long_loop(g, sc, draws: bool) -> LongLoop | None:
    """One long checkpointed loop for a function's top level (``g``: its ``FuncGen``,
    ``sc``: its scope; nothing registered), or None when no names fit."""
    lp = g.mod.lp
    if "x" not in sc.arrays or sc.arrays["x"].kind != "arg":
        return None
    taken: set = set()
    names = []
    for _ in range(lp.choice([1, 2, 2, 3])):
        nm = _fresh(g, sc, lp, taken)
        if nm is None:
            return None
        taken.add(nm)
        names.append(nm)
    IV = _fresh(g, sc, lp, taken)
    arr = _fresh(g, sc, lp, taken | {IV}) if lp.random() < 0.4 else None
    if IV is None:
        return None
    k_text = lp.choice(SNAPSHOTS)
    k = None if k_text == "None" else g.mod.n if k_text == "n" else int(k_text)
    T = trip_count(lp, k)
    xs = g.mod.shape
    outside = [f for f in sc.floats if f not in names]
    x0 = "x[0]" if len(xs) == 1 else "x[0, 0]"
    lines = []
    for nm in names:  # the state: bound before the loop
        init = ["0.0", "0.1 * a", f"{x0} * 0.5", "0.2", f"{lp.choice(outside)} * 0.3"]
        lines.append(f"{nm} = {lp.choice(init)}")
    if arr is not None:
        m = xs[0]
        lines.append(f"{arr} = {lp.choice([f'np.zeros({m})', f'np.ones({m}) * 0.1'])}")
    body = []
    draw = (lambda: f" + {lp.choice(['0.1', '0.3', '1.0'])} * {lp.choice(DRAWS)}") if draws \
        else (lambda: "")
    for j, nm in enumerate(names):
        other = names[(j + 1) % len(names)]
        terms = [lp.choice([_elem(xs, IV), f"a * {_elem(xs, IV)}", f"{other} * math.tanh(a)"]),
                 lp.choice([other, f"0.5 * {other}", "a", f"{0.1 * lp.randint(1, 9):.1f}"])]
        inner = " + ".join(terms) + (draw() if lp.random() < 0.6 else "")
        fn = lp.choice(["math.tanh", "math.sin", "np.tanh"])
        decay = lp.choice(["0.5", "0.9", "0.7"])
        body.append(f"{nm} = {decay} * {nm} + 0.1 * {fn}({inner})")
    if arr is not None:
        m = xs[0]
        if lp.random() < 0.5:  # written in place: its elements are part of the state
            e = f"{arr}[{IV} % {m}]"
            body.append(f"{e} = 0.5 * {e} + 0.1 * math.tanh({names[0]} + a{draw()})")
        else:  # rebound each step
            body.append(f"{arr} = 0.8 * {arr} + 0.1 * np.tanh({arr}[::-1] * math.tanh(a) + "
                        f"{names[0]}{draw()})")
        body.append(f"{names[-1]} = {names[-1]} + 0.05 * {arr}[{IV} % {m}]")
    if lp.random() < 0.2:  # a branch on the step index (smooth in the inputs)
        body = [f"if {IV} % 2 == 0:"] + ["    " + body[0]] + body[1:]
    rng = f"range({T})"
    if lp.random() < 0.85:
        rng = f"jg.checkpointed({rng}, snapshots={k_text})"
        g.mod.uses_jg = True
    lines.append(f"for {IV} in {rng}:")
    lines += ["    " + ln for ln in body]
    result = " + ".join(names + ([f"np.sum({arr})"] if arr else []))
    return LongLoop(lines, names, arr, IV, result)
