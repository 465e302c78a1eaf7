"""The one dependence query (``transpiler/analysis/dependence.py``) on small hand-written
loops: each verdict with its reason and the statement behind it, and the facts the passes
act on (sums, resets, collisions); element indices compared in one place (``apart``)."""

import ast
import random
import textwrap
import types

import numpy as np
import pytest

from jitgrad.transpiler import notes
from jitgrad.transpiler.analysis import dataflow as df
from jitgrad.transpiler.analysis.dependence import (
    Names,
    Verdict,
    apart,
    beyond_shape,
    constants_apart,
    independent,
    order_free,
    own_slot,
)


def body(src: str) -> list[ast.stmt]:
    return ast.parse(textwrap.dedent(src)).body


def verdict(src: str, scalars: set[str] = frozenset(), only=None, **names) -> Verdict:
    """The verdict on the first ``for`` loop of ``src``, the names ``scalars`` known scalars
    (the others arrays), buffers shared as ``Dataflow.shares`` finds them."""
    b = body(src)
    flow = df.Dataflow(b, is_array=lambda n: n not in scalars)
    loop = next(s for s in b if isinstance(s, ast.For))
    base = Names.of(flow, loop)
    if names:
        base = Names(**{**base.__dict__, **names})
    return independent(loop, base, only)


def stmt_text(v: Verdict) -> str:
    return ast.unparse(v.node).splitlines()[0]


def test_independent_iterations():
    v = verdict("""
        for i in range(n):
            t = x[i - 1] * x[i + 1]
            out[i] = t
        """, {"t", "i", "n"})
    assert v.ok and v.reason == "" and v.node is None
    assert v.sums == () and v.zeroed == () and v.collisions == ()


def test_a_carried_scalar():
    v = verdict("""
        s = 0.0
        for i in range(n):
            t = s * 0.5 + x[i]
            s = t
        """, {"s", "t", "i", "n"})
    assert not v.ok
    assert v.reason == "'s' carries a value from one iteration to the next"
    assert stmt_text(v) == "s = t"


def test_a_sum_reduction_is_independent_and_named():
    v = verdict("""
        s = 0.0
        for i in range(n):
            s += x[i] * w
            p = p * x[i]
        """, {"s", "p", "w", "i", "n"})
    assert v.ok
    assert v.sums == (("s", "+"), ("p", "*"))
    # a sum that is read otherwise is carried
    v = verdict("for i in range(n):\n    s += x[i]\n    y[i] = s", {"s", "i", "n"})
    assert v.reason == "'s' carries a value from one iteration to the next"
    # a sum into what may be an array is no scalar sum
    v = verdict("for i in range(n):\n    s += x[i]", {"i", "n"})
    assert v.reason == "'s' is not a scalar sum"


def test_a_scalar_reset_per_trip():
    src = """
        for i in range(n):
            dt = dt + g[i]
            dx[i] += dt
            dt = 0.0
        """
    v = verdict(src, {"dt", "i", "n"}, zero_before=lambda n: n == "dt")
    assert v.ok and v.zeroed == ("dt",)
    v = verdict(src, {"dt", "i", "n"})  # not zero when the loop starts: carried
    assert v.reason == "'dt' carries a value from one iteration to the next"


@pytest.mark.parametrize("src, reason, where", [
    # iteration i writes what iteration i + 1 reads
    ("for i in range(n):\n    a[i] = a[i + 1]",
     "'a' is written and accessed at 'a[i + 1]', which another iteration may write or read",
     "a[i] = a[i + 1]"),
    ("for i in range(n):\n    a[i + 1] = 2.0 * x[i]\n    y[i] = a[i]",
     "'a' is written and accessed at 'a[i]', which another iteration may write or read",
     "a[i + 1] = 2.0 * x[i]"),
    # an inner loop's index: every outer iteration writes every a[j]
    ("for i in range(n):\n    for j in range(m):\n        a[j] = x[i, j]",
     "'a' is written and accessed at 'a[j]', which another iteration may write or read",
     "a[j] = x[i, j]"),
    ("for i in range(n):\n    a[2 * i] = 1.0",
     "'a' is written and accessed at 'a[2 * i]', which another iteration may write or read",
     "a[2 * i] = 1.0"),
    ("for i in range(n):\n    a[i] = np.sum(a)",
     "'a' is written element by element and used whole in the loop", "a[i] = np.sum(a)"),
])
def test_element_writes_that_conflict(src, reason, where):
    v = verdict(src, {"i", "j", "n", "m"})
    assert v.reason == reason and stmt_text(v) == where
    assert v.collisions == ()


@pytest.mark.parametrize("src", [
    "for i in range(n):\n    a[i, 0] = x[i]\n    a[i, 1] += a[i, 0]",
    "for i in range(n - 1, -1, -1):\n    d[i + 1] += g[i]",
    "for i in range(n):\n    for j in range(m):\n        d[i, j] += w[i, j]",
    "for i in range(n):\n    t[k + i] = x[i]",        # a tape slot: k fixed in the loop
    "for i in range(n):\n    a[i] = len(a) + a.shape[0]",
])
def test_element_writes_apart(src):
    assert verdict(src, {"i", "j", "n", "m", "k"}).ok


def test_accumulations_into_one_element_are_collisions():
    """``dx[i] += a; dx[i + 1] += b``: only sums collide, so the verdict names the array
    (``prange`` runs such a loop in chunks)."""
    v = verdict("""
        for i in range(n):
            dx[i] += a[i]
            dx[i + 1] += b[i]
        """, {"i", "n"})
    assert v.reason == "several iterations accumulate into the same element of 'dx' " \
                       "('dx[i + 1]')"
    assert v.collisions == ("dx",) and stmt_text(v) == "dx[i] += a[i]"


def test_aliasing_through_a_view():
    src = """
        v = d.reshape(n)
        for i in range(n):
            d[i] = v[i] * 2.0
        """
    v = verdict(src, {"i", "n"})
    assert v.reason == "'d' and 'v' may share memory, and the loop writes 'd'"
    assert stmt_text(v) == "d[i] = v[i] * 2.0"
    # a fresh array shares nothing
    assert verdict(src.replace("d.reshape(n)", "np.zeros(n)"), {"i", "n"}).ok


@pytest.mark.parametrize("src, reason", [
    ("for i in range(n):\n    a[i] = 1.0\n    if x[i] > 0:\n        break",
     "it may break out of the loop"),
    ("for i in range(n):\n    a[i] = 1.0\n    t.append(i)", "'t.append(i)' runs for its effect"),
    ("for i in range(n):\n    a[i] = random.random()",
     "'random.random()' may write into what it is given"),
    ("for i in range(n):\n    np.sin(x, out=a)", "'np.sin(x, out=a)' runs for its effect"),
    ("for i in range(n):\n    i = i + 1", "it rebinds the loop index 'i'"),
    ("for i in range(n):\n    f(a)[i] = 1.0", "'f(a)[i]' is written through an expression"),
    ("for i in range(n):\n    u = x[i]\nr = u", "'u' is bound in the loop and read after it "
     "(its value would be any iteration's)"),
])
def test_control_and_effects(src, reason):
    assert verdict(src, {"i", "n", "u"}).reason == reason


def test_only_some_names():
    """``only``: the loop's control and effects always count, names only those asked of."""
    src = """
        for i in range(n):
            s = s * 0.5 + x[i]
            y[i] = x[i]
        """
    assert not verdict(src, {"s", "i", "n"}).ok
    assert verdict(src, {"s", "i", "n"}, only={"y"}).ok
    assert verdict(src, {"s", "i", "n"}, only={"s"}).reason == \
        "'s' carries a value from one iteration to the next"


def test_own_slot_and_apart():
    e = lambda src: ast.parse(src, mode="eval").body  # noqa: E731
    assert own_slot(e("(j, i + 1)"), ("i",), set()) == (1, ast.dump(e("i + 1")))
    assert own_slot(e("k + i"), ("i",), {"k"}) is None      # k changes in the loop
    assert own_slot(e("a[1:, i]"), ("i",), set()) is None
    assert constants_apart(0, 2) and constants_apart(-1, -2)
    assert not constants_apart(-1, 3) and not constants_apart(1, 1)
    parts = lambda src: list(e(src).elts)  # noqa: E731
    # a[0, j] and a[1, j]: two constants; a[i, :] against a[j, :] with j from i + 1
    assert apart(parts("(0, j)"), parts("(1, j)"), "j", e("0"), e("n"), (), {})
    assert apart(parts("(i, 0)"), parts("(j, 0)"), "j", e("i + 1"), e("n"), {"i"}, {})
    assert apart(parts("(i, 0)"), parts("(j, 0)"), "j", e("lo"), e("n"), {"i"},
                 {"lo": e("i + 2")})                        # through a name bound to it
    assert not apart(parts("(i, 0)"), parts("(j, 0)"), "j", e("i"), e("n"), {"i"}, {})
    assert not apart(parts("(-1, j)"), parts("(0, j)"), "j", e("0"), e("n"), (), {})


def test_order_free_sums():
    rev = body("""
        g = dy[i] * w
        dx[i] += g
        dx[i + 1] -= g
        """)
    never = lambda e: False  # noqa: E731
    assert order_free(rev, body("y[i] = x[i] * w"), {}, never).ok
    v = order_free(rev, body("y[i] = x[i] * dx[i]"), {}, never)
    assert v.reason == "'dx' is summed into and used around the loop"
    v = order_free(body("dx[i] += g\nq = dx[0]"), [], {}, never)
    assert v.reason == "'dx' is summed into and used otherwise"
    v = order_free(body("dx[i] *= g"), [], {}, never)
    assert v.reason == "'dx[i]' is updated other than by a sum"
    # a view of the array summed into (the adjoint-view map)
    v = order_free(body("dx[i] += g\nq = dv[0]"), [], {"dv": "dx"}, never)
    assert v.reason == "'dv' is summed into and used otherwise"


# --- facts from the primitive table, not the spelling ------------------------------------

_MINE = types.ModuleType("mine")
_MINE.zeros_like = lambda a: a + 1.0  # (a user's function that reads the values)
_MINE.random = lambda: 0.5  # (pure)


def test_shape_queries_are_table_facts():
    """``np.zeros_like(a)`` reads only ``a``'s shape however numpy is spelled; a user's
    ``mine.zeros_like(c)`` reads ``c``; without the namespace a call is a use, but for
    ``len`` and the zeroings the reverse pass marks (``notes.ZEROING``)."""
    b = body("""
        z = onp.zeros_like(a)
        n = len(b) + x.shape[0]
        w = mine.zeros_like(c)
        e = onp.empty_like(d)
        """)
    env = {"onp": np, "mine": _MINE, "len": len}
    assert beyond_shape(b, env) & {"a", "b", "c", "d", "x"} == {"c"}
    assert beyond_shape(b) & {"a", "b", "c", "d", "x"} == {"a", "c", "d"}
    marked = body("dz = np.zeros_like(a)")
    notes.ZEROING.set(marked[0].value, True)
    assert "a" not in beyond_shape(marked)


def test_a_draw_is_a_table_fact():
    """A loop calling a function the table says draws runs in order, however the module
    is spelled; one that calls a pure function spelled ``random.random`` does not."""
    src = """
        for i in range(n):
            y[i] = {}.random() * x[i]
        """
    for spelled, env, ok in [("rnd", {"rnd": random}, False),
                             ("random", {"random": _MINE}, True)]:
        b = body(src.format(spelled))
        flow = df.Dataflow(b, is_array=lambda n: n != "n", env={**env, "range": range})
        loop = b[0]
        assert independent(loop, Names.of(flow, loop)).ok is ok, spelled
