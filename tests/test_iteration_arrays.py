"""Arrays an iteration makes for itself (``dependence.iteration_arrays``): a loop whose
iterations write only such arrays, besides sums, still runs each iteration's adjoint right
after it (``backend/fuse.py``), and an array of a fixed shape made in a loop is allocated
once (``backend/loop_buffers.py``).  Where a precondition fails (the array is carried to
the next iteration, kept after the loop, its shape varies), the loops stay as they were;
the gradients agree with central differences either way."""

import ast
import math
import textwrap

import numpy as np
import pytest
from gradcheck import check_grad

import jitgrad as jg
from jitgrad.transpiler.analysis import dataflow as df
from jitgrad.transpiler.analysis.dependence import iteration_arrays, order_free
from jitgrad.transpiler.backend.loop_buffers import loop_buffers

FUSED = "are independent: each runs its adjoint right after it"


def rotate(r, p):
    """A helper making a small array of its own (inlined into the loop)."""
    q = np.empty(3)
    for j in range(3):
        q[j] = p[j] - r[j + 3]
    s = r[0] * q[0] + r[1] * q[1] + r[2] * q[2]
    return math.sin(s) * q[0] + math.cos(s) * q[1], q[2] * s


def per_row(c, x, w):
    """Rows of ``c`` and ``x`` each give a small array of its iteration's own (``q``)."""
    total = 0.0
    for i in range(w.shape[0]):
        u, v = rotate(c[i], x[i])
        total += w[i] * (u - 0.5) + v * v
    return total


def scratch(x, k, m):
    """A scratch array of a fixed shape, zeroed, written (at a loop's index: no scalars
    stand for its elements, ``front/small_arrays.py``) and read in each iteration."""
    total = 0.0
    for i in range(x.shape[0]):
        t = np.zeros(4)
        for j in range(m):
            t[j + 1] = math.exp(k * x[i] * (j + 1.0)) + t[j]
        total += t[1] * t[2] + math.sin(t[3])
    return total


def carried_array(x, k):
    """Precondition fails: the array of one iteration is read by the next (``prev``)."""
    total = 0.0
    prev = np.zeros(2)
    for i in range(x.shape[0]):
        t = np.empty(2)
        for j in range(2):
            t[j] = math.sin(k * x[i] * (j + 1.0))
        total += t[0] * prev[1] + t[1]
        prev = t
    return total


def kept_after(x, k, m):
    """Preconditions fail: the last iteration's array is read after the loop (so it is made
    in every trip, and its adjoint comes into the reversed loop)."""
    total = 0.0
    t = np.zeros(4)
    for i in range(x.shape[0]):
        t = np.empty(4)
        for j in range(m):
            t[j] = math.sin(k * x[i] * (j + 1.0))
        total += t[0] * t[1]
    return total + t[1]


def varying(x, k):
    """Precondition fails for the allocation: the shape changes from trip to trip."""
    total = 0.0
    for i in range(x.shape[0]):
        t = np.empty(i % 3 + 1)
        for j in range(t.shape[0]):
            t[j] = math.sin(k * x[i] + j)
        total += t[0] * t[t.shape[0] - 1]
    return total


def _rows(n=5, seed=3):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, 6)), rng.normal(size=(n, 3)), rng.uniform(0.5, 1.5, n)


CASES = {
    per_row: (_rows(), (0, 1, 2)),
    scratch: ((np.linspace(0.1, 0.9, 6), 0.7, 3), (0, 1)),
    carried_array: ((np.linspace(0.1, 0.9, 6), 0.7), (0, 1)),
    kept_after: ((np.linspace(0.1, 0.9, 6), 0.7, 3), (0, 1)),
}


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("f", list(CASES), ids=lambda f: f.__name__)
def test_values_and_gradients(f, jit):
    args, wrt = CASES[f]
    check_grad(f, args, wrt=wrt, jit=jit)


def _source(f) -> str:
    args, wrt = CASES[f]
    return jg.grad(f, wrt=wrt).source(*args)


def _loop_and_before(src: str) -> tuple[str, str]:
    """The text before the first ``for i`` loop, and that loop's text on."""
    k = src.index("for i in range(")
    return src[:k], src[k:]


@pytest.mark.parametrize("f", [per_row, scratch], ids=lambda f: f.__name__)
def test_own_arrays_fuse_and_are_made_once(f):
    """Writes into an iteration's own array no longer keep the two sweeps apart, and the
    array (of a shape of constants) and its adjoint are made once, before the loop."""
    src = _source(f)
    assert FUSED in src, src
    before, loop = _loop_and_before(src)
    assert "np.empty(" in before or "np.zeros(" in before, src
    assert "np.empty(" not in loop and "np.zeros(" not in loop, src
    assert "zeros_like" not in loop, src


def test_carried_array_keeps_its_sweeps():
    src = _source(carried_array)
    assert FUSED not in src, src


def test_array_read_after_loop_is_made_per_trip():
    """The last trip's array is read after the loop: made in every trip, and its adjoint,
    seeded after the loop, reaches the last trip's adjoint: the sweeps stay apart."""
    src = _source(kept_after)
    before, loop = _loop_and_before(src)
    assert FUSED not in src, src
    assert "t = np.empty(4)" in loop, loop


@pytest.mark.parametrize("jit", [True, False])
def test_varying_shape_is_made_per_trip(jit):
    """Made in every trip; the gradient call still raises, as before (never a wrong one)."""
    args = (np.linspace(0.1, 0.9, 6), 0.7)
    before, loop = _loop_and_before(jg.grad(varying, wrt=(0, 1)).source(*args))
    assert "np.empty(i % 3 + 1)" in loop, loop
    with pytest.raises(ValueError, match="does not have the shape"):
        jg.grad(varying, wrt=(0, 1), jit=jit)(*args)


def _body(src: str) -> list[ast.stmt]:
    return ast.parse(textwrap.dedent(src)).body


def test_iteration_arrays():
    """Made in the iteration (a fresh value or a view of one), bound before read, sharing
    its buffer with nothing else, named nowhere outside."""
    b = _body("""
        q = np.empty(3)
        q[0] = x[i]
        r = q[0:2]
        y = x[i]
        p = prev
        prev = q
        s = q[1] * 2.0
        """)
    flow = df.Dataflow(b, is_array=lambda n: n not in {"s"})
    own = iteration_arrays(b, flow)
    assert "s" in own and "y" not in own and "p" not in own  # y, p: views of the outside
    assert "q" not in own and "r" not in own  # q is kept (prev) for the next iteration
    b2 = b[:5] + b[6:]
    own = iteration_arrays(b2, df.Dataflow(b2, is_array=lambda n: n not in {"s"}))
    assert {"q", "r", "s"} <= own
    assert "q" not in iteration_arrays(b2, df.Dataflow(b2), outside={"q"})


def test_order_free_with_private_arrays_and_views():
    """Writes into ``private`` arrays are the iteration's own; ``v = a[i]`` of an array
    ``v`` binds a view (no element read)."""
    never = lambda e: False  # noqa: E731
    rev = _body("""
        dq = np.zeros(3)
        dq[0] = g
        t = dq[0]
        dc = dcams[i]
        dc[1] += t
        """)
    assert not order_free(rev, [], {}, never).ok
    arrays = lambda n: n in {"dq", "dc", "dcams"}  # noqa: E731
    assert order_free(rev, [], {}, never, {"dq", "t"}, arrays).ok
    v = order_free([*rev, *_body("u = dcams[0, 1]")], [], {}, never, {"dq", "t"}, arrays)
    assert v.reason == "'dcams' is summed into and used otherwise"


ALLOCS = {
    "fixed": ("for t in range(n):\n    z = np.empty(3)\n    z[0] = g\n    s += z[0]\n",
              "before"),
    "zeros": ("for t in range(n):\n    z = np.zeros((2, 3))\n    z[0, 0] += g\n", "before"),
    "symbolic": ("for t in range(n):\n    z = np.empty(m)\n    z[0] = g\n", "first trip"),
    "varies": ("for t in range(n):\n    z = np.empty(t)\n    z[0] = g\n", "kept"),
    "kept": ("for t in range(n):\n    z = np.empty(3)\n    z[0] = g\n    keep.append(z)\n"
             "use(keep)\n", "kept"),
    "after": ("for t in range(n):\n    z = np.empty(3)\n    z[0] = g\nuse(z)\n", "kept"),
    "typed": ("for t in range(n):\n    z = np.empty(3, np.int64)\n    z[0] = g\n", "kept"),
}


@pytest.mark.parametrize("case", list(ALLOCS))
def test_allocations_made_once(case):
    """``np.empty``/``np.zeros`` (float64) in a loop, of a shape the same in every trip and
    not outliving its trip: made before the loop (constant shape) or at the first trip."""
    src, where = ALLOCS[case]
    text = ast.unparse(ast.fix_missing_locations(ast.Module(
        body=loop_buffers(_body(src), {}, set(), lambda n: False if n in "gsmn" else None),
        type_ignores=[])))
    head, _, loop = text.partition("for t in")
    assert (where == "before") == ("z = np." in head), text
    assert (where == "first trip") == ("if _new_z:" in loop), text
    assert (where == "kept") == ("    z = np." in loop and "_new_z" not in text), text
    assert ("z[...] = 0.0" in text) == (case == "zeros"), text
