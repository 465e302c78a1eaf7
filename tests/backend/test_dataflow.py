"""The dataflow analysis of generated bodies (``transpiler/analysis/dataflow.py``) on small
hand-written bodies: exact defs, uses, must-defs, affine indices, carried names and
independence (a wrong independence answer would silently break a gradient)."""

import ast
import textwrap

import numpy as np
import pytest

from jitgrad.transpiler.analysis import dataflow as df
from jitgrad.transpiler.analysis.dependence import Names, independent


def body(src: str) -> list[ast.stmt]:
    return ast.parse(textwrap.dedent(src)).body


def one(src: str) -> ast.stmt:
    return body(src)[0]


@pytest.mark.parametrize("src, plain, elements", [
    ("x = a + b", ["x"], ["x"]),
    ("x, (y, *z) = t", ["x", "y", "z"], ["x", "y", "z"]),
    ("a = b = f(c)", ["a", "b"], ["a", "b"]),
    ("a[i, j + 1] = v", [], ["a"]),
    ("a[i][j] = v", [], ["a"]),
    ("a.T[i] = v", [], ["a"]),
    ("a[i], b = v, w", ["b"], ["a", "b"]),
    ("s += x[i]", ["s"], ["s"]),
    ("d[k] -= g", [], ["d"]),
    ("y: float = 1.0", ["y"], ["y"]),
    ("for i, (j, k) in z:\n    q = 1", ["i", "j", "k"], ["i", "j", "k"]),
    ("with f() as (u, v):\n    w = 1", ["u", "v"], ["u", "v"]),
    ("if c:\n    x = 1", [], []),
    ("obj.attr = 3", [], []),
    ("t.append(v)", [], []),
])
def test_binds(src, plain, elements):
    s = one(src)
    assert df.binds(s) == plain
    assert df.binds(s, elements=True) == elements


def test_binds_appends_and_nested():
    assert df.binds(one("t.append(v)"), appends=True) == ["t"]
    assert df.binds(one("f(t)"), appends=True) == []
    b = body("""
        for i in range(n):
            t = x[i]
            if t > 0:
                out[i] = t
            else:
                s += t
        """)
    assert df.binds_in(b) == {"i", "t", "out", "s"}
    assert df.binds_in(b, elements=False) == {"i", "t", "s"}


@pytest.mark.parametrize("src, must", [
    ("x = 1", {"x"}),
    ("x, y = t", {"x", "y"}),
    ("a[i] = 1", set()),
    ("s += 1", {"s"}),
    ("y: int", set()),
    ("if c:\n    x = 1\n    y = 2\nelse:\n    x = 3", {"x"}),
    ("if c:\n    x = 1", set()),
    ("if c:\n    if d:\n        x = 1\n    else:\n        x = 2\nelse:\n    x = 3", {"x"}),
    ("for i in range(n):\n    x = 1", set()),
    ("while c:\n    x = 1", set()),
    ("with f() as u:\n    x = 1", {"u", "x"}),
])
def test_must_binds(src, must):
    assert df.must_binds(one(src)) == must


@pytest.mark.parametrize("src, used", [
    ("x = a + b[i]", {"a", "b", "i"}),
    ("s += t", {"s", "t"}),
    ("d[k] += g", {"d", "k", "g"}),
    ("for i in range(n):\n    x = y", {"range", "n"}),
    ("if c > d:\n    x = y", {"c", "d"}),
    ("while k < n:\n    k += 1", {"k", "n"}),
])
def test_reads(src, used):
    assert df.reads(one(src)) == used


def test_reads_in_counts_nested_blocks():
    assert df.reads_in(body("for i in range(n):\n    s += x[i]")) == {"range", "n", "s", "x", "i"}


@pytest.mark.parametrize("src, vars_, index", [
    ("a[i]", ("i",), (("i", 0),)),
    ("a[i + 2, j]", ("i", "j"), (("i", 2), ("j", 0))),
    ("a[3 + i, j - 1]", ("i", "j"), (("i", 3), ("j", -1))),
    ("a[i - 1 + 2]", ("i",), (("i", 1),)),
    ("a[0, -1]", ("i",), ((None, 0), (None, -1))),
    ("a[k, i]", ("i",), (None, ("i", 0))),     # k is no loop variable
    ("a[i + j]", ("i", "j"), (None,)),         # two variables: not affine
    ("a[2 * i]", ("i",), (None,)),             # a stride: not affine
    ("a[1 - i]", ("i",), (None,)),             # minus the variable: not affine
    ("a[i + 1.0]", ("i",), (None,)),           # a float offset: not affine
    ("a[i, :]", ("i",), None),                 # a slice: no index vector
    ("a[idx[i]]", ("i",), (None,)),
])
def test_affine_index(src, vars_, index):
    sub = one(src).value
    assert df.index_of(sub, vars_) == index


def test_accesses_reads_and_writes():
    s = one("a[i + 1] += b[i, j] * c[k]")
    got = [(a.base, a.index, a.write, a.aug) for a in df.accesses(s, ("i", "j"))]
    assert sorted(got, key=str) == sorted([
        ("a", (("i", 1),), True, True),
        ("b", (("i", 0), ("j", 0)), False, False),
        ("c", (None,), False, False),
    ], key=str)
    loop = one("for i in range(n):\n    x = a[i]")
    assert df.accesses(loop, ("i",)) == []  # a compound statement: its head only


def test_fresh_binds():
    assert df.fresh_binds(one("d = np.zeros_like(x)")) == (("d", True),)
    assert df.fresh_binds(one("d = x.reshape(3, 3)")) == (("d", False),)
    assert df.fresh_binds(one("t = tape_reserve(t, n, 4)")) == (("t", True),)
    assert df.fresh_binds(one("u, v = np.zeros(3), np.zeros(3)")) == (("u", False), ("v", False))
    assert df.fresh_binds(one("d += 1")) == ()
    # with the namespace, a call is what it names, whatever it is spelled
    env = {"np": np, "zl": np.zeros_like, "onp": np, "sin": np.sin}
    assert df.fresh_binds(one("d = zl(x)")) == (("d", False),)
    assert df.fresh_binds(one("d = zl(x)"), env) == (("d", True),)
    assert df.fresh_binds(one("d = onp.empty(3)"), env) == (("d", True),)
    assert df.fresh_binds(one("d = sin(x)"), env) == (("d", False),)
    assert df.fresh_binds(one("d = x.copy()"), env) == (("d", True),)
    assert df.fresh_binds(one("t = tape_reserve(t, n, 4)"), env) == (("t", True),)


LOOP = """
    s = 0.0
    for i in range(n):
        t = s + x[i + 1]
        s = t
        y[i] = t * 2.0
        u = x[i]
        z[i] += u
    r = s + u
    """


def test_carried_and_liveness():
    b = body(LOOP)
    flow = df.Dataflow(b)
    loop = b[1]
    assert flow.carried(loop) == {"s"}
    assert flow.live_after(loop) == {"s", "u"}
    assert flow.live_after(loop.body[0]) >= {"t", "x", "y", "z", "n"}
    w = body("while k < n:\n    k = k + 1\n    m = k")
    assert df.carried(w[0]) == {"k"}
    assert df.carried(body("for i in range(n):\n    i = i + 1")[0]) == set()


def indep(flow: df.Dataflow, loop: ast.stmt, names: set[str]) -> bool:
    """The dependence query as far as ``names`` go, for a ``for`` over ``range``."""
    return df.loop_index(loop) is not None and independent(loop, Names.of(flow, loop),
                                                           names).ok


def test_independent_for_names():
    b = body(LOOP)
    flow = df.Dataflow(b)
    loop = b[1]
    assert indep(flow, loop, {"y", "z", "x"})
    assert not indep(flow, loop, {"s"})        # carried
    assert not indep(flow, loop, {"u"})        # the last iteration's value is read after
    assert indep(flow, loop, {"t"})            # iteration-local, dead after the loop


@pytest.mark.parametrize("src, names, ok", [
    # each iteration its own element, at the same position in every access
    ("for i in range(n):\n    a[i, 0] = b[i]\n    a[i, 1] += a[i, 0]", {"a"}, True),
    ("for i in range(n - 1, -1, -1):\n    d[i + 1] += g[i]", {"d"}, True),
    # two offsets: iteration i writes what iteration i + 1 reads
    ("for i in range(n):\n    a[i] = a[i + 1]", {"a"}, False),
    ("for i in range(n):\n    d[i] += g\n    d[i + 1] += g", {"d"}, False),
    # an inner loop's index (every outer iteration writes every d[j])
    ("for i in range(n):\n    for j in range(m):\n        d[j] += w[i, j]", {"d"}, False),
    ("for i in range(n):\n    for j in range(m):\n        d[i, j] += w[i, j]", {"d"}, True),
    # not affine, or through an index array
    ("for i in range(n):\n    d[idx[i]] += 1.0", {"d"}, False),
    ("for i in range(n):\n    d[2 * i] = 1.0", {"d"}, False),
    # the whole array read or handed to a call while elements are written
    ("for i in range(n):\n    d[i] = np.sum(d)", {"d"}, False),
    ("for i in range(n):\n    d[i] = 1.0\n    f(d)", {"d"}, False),
    ("for i in range(n):\n    d[i] = len(d) + d.shape[0]", {"d"}, True),
    # another name of the same buffer
    ("v = d.reshape(n)\nfor i in range(n):\n    d[i] = v[i + 1]", {"d"}, False),
    ("v = np.zeros(n)\nfor i in range(n):\n    d[i] = v[i + 1]", {"d"}, True),
    # the index rebound, a break, an effect, not a range
    ("for i in range(n):\n    i = i + 1\n    d[i] = 1.0", {"d"}, False),
    ("for i in range(n):\n    d[i] = 1.0\n    if d[i] > 0:\n        break", {"d"}, False),
    ("for i in range(n):\n    d[i] = 1.0\n    t.append(i)", {"d"}, False),
    ("for i in idx:\n    d[i] = 1.0", {"d"}, False),
    ("for i in range(n):\n    d[i] = random.random()", {"d"}, False),  # the draws' order
    ("for i in range(n):\n    d[i] = np.random.rand()", {"d"}, False),
    ("for i in range(n):\n    f(d)[i] = 1.0", {"d"}, False),  # an expression's element
    ("for i in range(n):\n    d[i] = 1.0\nelse:\n    pass", {"d"}, False),
    # a read-only array is no dependence
    ("for i in range(n):\n    d[i] = x[0] + x[i + 3]", {"x"}, True),
])
def test_independent_arrays(src, names, ok):
    b = body(src)
    loop = next(s for s in b if isinstance(s, ast.For))
    assert indep(df.Dataflow(b), loop, names) is ok


def test_element_store_of_a_name_is_an_alias_unless_a_scalar():
    """``y[i] = t`` may store the array ``t`` in a list ``y``: without kinds, ``t``'s other
    uses make the loop dependent; with them, a scalar ``t`` shares no buffer."""
    b = body("for i in range(n):\n    t = s + x[i + 1]\n    s = t\n    y[i] = t")
    assert not indep(df.Dataflow(b), b[0], {"y"})
    kinds = df.Dataflow(b, is_array=lambda n: n in {"x", "y"})
    assert indep(kinds, b[0], {"y"})
    assert not indep(kinds, b[0], {"s"})
    assert kinds.shares("y") == {"y"}


def test_shares_follows_views_and_the_adjoint_map():
    b = body("""
        v = d.reshape(n)
        w = v[1:]
        z = np.zeros_like(d)
        y = x * 2.0
        """)
    flow = df.Dataflow(b, shared={"dq": "dp"})
    assert flow.shares("d") == {"d", "v", "w"}
    assert flow.shares("z") == {"z"}
    assert flow.shares("y") == {"y"}
    assert flow.shares("dq") == {"dq", "dp"}
    # an element of a list may be an array itself; appended values are the list's
    flow = df.Dataflow(body("L[k] = u\nt.append(w)\na[i] = b[i]"))
    assert flow.shares("u") == {"L", "u"}
    assert flow.shares("w") == {"t", "w"}
    assert flow.shares("a") == {"a"}


def test_view_base_and_moves():
    """``view_base``: the array a value is, or a view of (slices, an element, ``.T``, a
    view-returning call under any spelling of NumPy), none for a new array; ``moves``: the
    plain assignments binding an array to one, and the pairs of a swap."""
    env = {"np": np, "onp": np}
    for src, base in [("a", "a"), ("a[0]", "a"), ("a[1:, i]", "a"), ("a.T", "a"),
                      ("a.real", "a"), ("np.reshape(a, n)", "a"), ("onp.reshape(a, n)", "a"),
                      ("a.reshape(n)", "a"), ("np.transpose(a)", "a"), ("a.ravel()", "a"),
                      ("a * 2.0", None), ("np.sin(a)", None), ("a.copy()", None),
                      ("a.shape", None), ("f(a)", None)]:
        assert df.view_base(ast.parse(src, mode="eval").body, env) == base, src
    b = body("""
        r = a[0]
        s = r[1]
        b = a
        u, v = v, u
        t = np.sin(a)
        """)
    flow = df.Dataflow(b, is_array=lambda n: n != "s", env=env)
    assert [(t, base, swap) for t, base, _, swap in flow.moves()] == [
        ("r", "a", False), ("b", "a", False), ("u", "v", True), ("v", "u", True)]


def test_written_buffers_group_views_of_written_buffers_only():
    """A view and its base share a group only where their buffer is written (a row written
    makes its matrix written; a read-only view stays alone); a swap's names always do; a
    write spreads through swaps and views alike, in either order."""
    b = body("""
        r = a[0]
        r[1] = k
        c = x[1:3]
        t = m.T
        p, q = q, p
        w = q[0:2]
        w[0] = k
        """)
    flow = df.Dataflow(b, is_array=lambda n: n != "k", env={"np": np})
    written, groups = flow.written_buffers({"r", "w"})
    assert written == {"a", "r", "w", "q", "p"}
    assert groups.of("a") == {"a", "r"}
    assert groups.of("c") == {"c"} and groups.of("x") == {"x"}
    assert groups.of("t") == {"t"}
    assert groups.of("p") == {"p", "q", "w"}
    assert groups.of("zz") == {"zz"}
    _, groups = flow.written_buffers({"m"})
    assert groups.of("t") == {"t", "m"} and groups.of("p") == {"p", "q"}


def test_groups():
    g = df.Groups([("a", "b"), ("c", "d"), ("b", "d"), ("e", "e")])
    assert g.of("a") == g.of("d") == {"a", "b", "c", "d"}
    assert g.of("e") == {"e"} and g.of("z") == {"z"}


def test_module_under_another_name_with_the_namespace():
    """With the namespace, ``onp.reshape(x, n)`` is a view of ``x`` as ``np.reshape`` is,
    and ``onp.sin(x)`` shares nothing with a name ``onp``; a function bound to another name
    (``zl = np.zeros_like``) is what it names: a new array."""
    env = {"np": np, "onp": np, "zl": np.zeros_like}
    for src, want in [("onp.reshape(x, 3)", {"x"}), ("onp.transpose(x)", {"x"}),
                      ("onp.sin(x)", df.may_alias(ast.parse("np.sin(x)", mode="eval").body)),
                      ("zl(x)", set())]:
        assert df.may_alias(ast.parse(src, mode="eval").body, env=env) == want, src
    b = body("v = onp.reshape(d, n)\nw = onp.cos(e)\nz = zl(d)")
    flow = df.Dataflow(b, env=env)
    assert flow.shares("v") == {"v", "d"} and flow.shares("w") == {"w", "e"}
    assert flow.shares("z") == {"z"}


def test_first_writer_and_invariance():
    b = body("""
        for i in range(n):
            t = k + 1
            c = x[i] * 2.0
            d[i] = c
            e = d[0] + k
        """)
    flow = df.Dataflow(b)
    loop = b[0]
    assert flow.first_writer("d") is loop.body[2]
    assert flow.first_writer("c") is loop.body[1]
    assert flow.first_writer("q") is None
    expr = lambda src: ast.parse(src, mode="eval").body  # noqa: E731
    assert flow.invariant(loop, expr("k + 1"))
    assert flow.invariant(loop, expr("x[k]"))
    assert not flow.invariant(loop, expr("x[i]"))      # the index changes
    assert not flow.invariant(loop, expr("c * 2"))     # bound in the loop
    assert not flow.invariant(loop, expr("d[0]"))      # an array the loop writes
    assert not flow.invariant(loop, expr("f(k)"))      # a call may draw or write


def test_plain_binding():
    assert df.plain_binding(one("v = e")) == "v"
    assert df.plain_binding(one("v, = e")) is None
    assert df.plain_binding(one("v += e")) is None
    assert df.plain_binding(one("a[0] = e")) is None


@pytest.mark.parametrize("src, c", [
    ("i", 0), ("i + 2", 2), ("2 + i", 2), ("i - 3", -3), ("i + 1 - 1", 0),
    ("j + 1", None), ("3", None), ("2 * i", None), ("(i, 0)", None), ("i + n", None),
])
def test_offset(src, c):
    assert df.offset(ast.parse(src, mode="eval").body, "i") == c


def test_sums():
    b = body("""
        for i in range(n):
            t = x[i] * w
            s += t
            d[i + 1] += t
            d[i] -= t
            e[i] += e[i - 1]
            f[i] *= 2.0
            g += t
            u = g
            q[k] += t
            k = k + 1
        """)
    # g is read, e reads itself, f is scaled; q is summed into (whether k is carried is
    # the loop's question: ``carried``)
    assert df.sums(b) == {"s", "d", "q"}
    assert df.sums(b, whole=False) == {"d", "q"}  # s is a whole name
    assert df.carried(b[0]) == {"s", "g", "k"}


def test_view_root_follows_the_adjoint_view_map():
    """``view_root``: the adjoint a view (of a view ...) is of, by the adjoint-view map; the
    accumulation merging of the backend asks it (a write into ``dv2`` is one into ``dz``)."""
    from jitgrad.transpiler.backend.optimize import merge_accumulations

    shared = {"dv": "dz", "dv2": "dv", "dw": "dq"}
    assert [df.view_root(n, shared) for n in ("dv2", "dv", "dz", "dw", "x")] == [
        "dz", "dz", "dz", "dq", "x"]
    body = ast.parse("dz[0] += a\nt = dv2[1]\ndz[0] += b").body
    # (``t`` reads the array the pending ``dz[0] += a`` writes: it stays before the read)
    assert [ast.unparse(s) for s in merge_accumulations(body, shared)] == [
        "dz[0] += a", "t = dv2[1]", "dz[0] += b"]
    assert [ast.unparse(s) for s in merge_accumulations(body, {})] == [
        "t = dv2[1]", "dz[0] += a + b"]
