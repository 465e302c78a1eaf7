"""Each backend step on its own, on small hand-written IR (``irtext.py``): the exact text
of the function after it."""

from __future__ import annotations

import ast

import numpy as np
from irtext import adjoint, after, code, context, lowering

from jitgrad.transpiler import notes
from jitgrad.transpiler.backend import emit
from jitgrad.transpiler.backend.passes import LIVE, lower_variants, run, start
from jitgrad.transpiler.notes import SWEEP

# --- dead code, unit seed, dead loops ---------------------------------------------------

SPLIT = adjoint("""
    a = x * 2.0
    b = x * 3.0
    y = a + 1.0
""", "dx = 0.0", "dx += _dret * 2.0")


def test_dead_code_per_variant():
    """The value needs ``a``, the gradients nothing of the forward sweep; ``b`` neither."""
    ctx = context(SPLIT)
    assert after("dead_code", start(ctx, "grad")) == code("""
        def f_grad(x, _dret):
            a = x * 2.0
            y = a + 1.0
            dx = 0.0
            dx += _dret * 2.0
            return (y, dx)
    """)
    assert after("dead_code", start(ctx, "grad_only")) == code("""
        def f_gradonly(x, _dret):
            dx = 0.0
            dx += _dret * 2.0
            return (None, dx)
    """)


def test_dead_code_knows_a_fresh_array_by_the_namespace():
    """An element write into an array nothing reads goes where the array is fresh: a call
    the table says allocates, found through the namespace (``zl = np.zeros_like``), not by
    its spelling; a user's ``zl`` keeps it.  The facts memo answers per namespace."""
    from jitgrad.transpiler.backend.optimize import dead_code

    body = ast.parse("a = zl(x)\na[0] = 1.0\ny = x * 2.0\nreturn y").body
    kept = lambda out: [ast.unparse(s) for s in out]  # noqa: E731
    memo: dict = {}
    assert kept(dead_code(body, memo=memo, env={"zl": np.zeros_like})) == [
        "y = x * 2.0", "return y"]
    assert kept(dead_code(body, memo=memo, env={"zl": lambda x: x})) == [
        "a = zl(x)", "a[0] = 1.0", "y = x * 2.0", "return y"]
    assert kept(dead_code(body, memo=memo)) == kept(body)  # (by spelling: a user's call)


def test_unit_seed_only_in_the_gradient_only_variant():
    ctx = context(SPLIT, unit_seed=True)
    body = """
        dx = 0.0
        dx += _dret * 2.0
        return (None, dx)
    """
    assert after("unit_seed", lowering(ctx, body, "grad_only")) == code("""
        def f_gradonly(x, _dret):
            dx = 0.0
            dx += 1.0 * 2.0
            return (None, dx)
    """)
    grad = lowering(ctx, body, "grad")
    kept = grad.body
    after("unit_seed", grad)
    assert grad.body is kept
    off = lowering(context(SPLIT), body, "grad_only")
    assert "_dret * 2.0" in after("unit_seed", off)


def test_dead_loop_goes_with_what_only_it_reads():
    ctx = context(adjoint())
    assert after("dead_loops", lowering(ctx, """
        m = x + 1.0
        for i in range(n):
            t = m * 2.0
        t = x * 3.0
        dx = _dret * t
        return (None, dx)
    """)) == code("""
        def f_grad(x, _dret):
            t = x * 3.0
            dx = _dret * t
            return (None, dx)
    """)


def test_a_loop_whose_result_is_read_stays():
    ctx = context(adjoint())
    s = lowering(ctx, """
        t = 0.0
        for i in range(n):
            t = t + x
        dx = _dret * t
        return (None, dx)
    """)
    assert after("dead_loops", s) == code("""
        def f_grad(x, _dret):
            t = 0.0
            for i in range(n):
                t = t + x
            dx = _dret * t
            return (None, dx)
    """)


# --- fusion, and dead code again --------------------------------------------------------

FUSABLE = """
    total = 0.0
    for i in range(x.shape[0]):
        t = k * x[i]
        total += t
    dk = 0.0
    dtotal = _dret
    for i in range(x.shape[0] - 1, -1, -1):
        dk += dtotal * x[i]
    return (total, dk)
"""


def _sweeps(s, key=1):
    loops = [st for st in s.body if isinstance(st, ast.For)]
    SWEEP.set(loops[0], (key, "forward"))
    SWEEP.set(loops[1], (key, "reverse"))
    return s


def test_fuse_independent_iterations():
    ctx = context(adjoint(params=("x", "k"), results=("total",), grads=("dk",)))
    s = _sweeps(lowering(ctx, FUSABLE))
    note = "each runs its adjoint right after it (nothing is taped)"
    assert after("fuse", s) == code(f"""
        def f_grad(x, k, _dret):
            total = 0.0
            dk = 0.0
            dtotal = _dret
            # iterations over i are independent: {note}
            for i in range(x.shape[0]):
                t = k * x[i]
                total += t
                dk += dtotal * x[i]
            return (total, dk)
    """)
    assert s.stale == {LIVE}  # it changed the body: dead_after_fuse has work to do


def test_no_fusion_where_the_adjoint_reads_a_carried_value():
    ctx = context(adjoint(params=("x", "k"), results=("total",), grads=("dk",)))
    s = _sweeps(lowering(ctx, FUSABLE.replace("dk += dtotal * x[i]", "dk += dtotal * t")))
    before = s.body
    after("fuse", s)
    assert s.body == before and s.stale == set()


def test_no_fusion_where_a_hook_sees_the_gradients():
    ir = adjoint(params=("x", "k"), results=("total",), grads=("dk",),
                 callables=frozenset({"hook"}))
    s = _sweeps(lowering(context(ir), FUSABLE))
    before = s.body
    after("fuse", s)
    assert s.body is before


def test_dead_after_fuse_only_where_fusion_changed_the_body():
    ctx = context(adjoint(params=("x", "k"), grads=("dk",)))
    body = """
        a = x * 2.0
        dk = _dret
        return (None, dk)
    """
    s = lowering(ctx, body)
    kept = s.body
    after("dead_after_fuse", s)
    assert s.body is kept  # liveness still holds: nothing to do
    s.stale.add(LIVE)
    assert after("dead_after_fuse", s) == code("""
        def f_grad(x, k, _dret):
            dk = _dret
            return (None, dk)
    """)
    assert s.stale == set()


# --- written once, shape stand-ins --------------------------------------------------------


def test_write_once_first_writer():
    ctx = context(adjoint(params=("z", "g"), grads=("dz",)), once=True)
    assert after("write_once", lowering(ctx, """
        dz = np.zeros_like(z)
        for i in range(z.shape[0]):
            dz[i] += g * z[i]
        return (None, dz)
    """)) == code("""
        def f_grad(z, g, _dret):
            dz = np.empty_like(z)
            # dz: each element written once (made empty); those no index reaches set to 0
            dz[max(z.shape[0], 0):] = 0.0
            for i in range(z.shape[0]):
                dz[i] = g * z[i]
            return (None, dz)
    """)


def test_no_write_once_where_the_builtins_are_shadowed():
    ctx = context(adjoint(params=("z", "g"), grads=("dz",)), once=False)
    s = lowering(ctx, """
        dz = np.zeros_like(z)
        for i in range(z.shape[0]):
            dz[i] += g * z[i]
        return (None, dz)
    """)
    assert "dz = np.zeros_like(z)" in after("write_once", s)


SHAPE = adjoint("""
    t = X @ W
    y = np.sum(t + b)
""", "db = np.zeros_like(b)", """
    dt = expand_along(_dret, t, None)
    db += unbroadcast(dt, b)
""", params=("X", "W", "b"), grads=("db",), shape_reads=("expand_along", "unbroadcast"))


def test_shape_stand_in():
    ctx = context(SHAPE, arrays=frozenset({"t", "X", "W", "b"}))
    assert after("shape_only", lowering(ctx)) == code("""
        def f_grad(X, W, b, _dret):
            t = X @ W
            # t: only its shape is read later
            t_like = shape_stand_in(t)
            y = np.sum(t + b)
            db = np.zeros_like(b)
            dt = expand_along(_dret, t_like, None)
            db += unbroadcast(dt, b)
            return (y, db)
    """)


def test_no_stand_in_for_what_is_not_a_float_array():
    ctx = context(SHAPE, arrays=frozenset({"X", "W", "b"}))
    assert "t_like" not in after("shape_only", lowering(ctx))


# --- element loops, zero cotangents skipped ----------------------------------------------

ELEMENTS = adjoint("""
    t = np.exp(c * x)
    y = np.sum(t * t)
""", "dx = np.zeros_like(x)", """
    dt = _dret * (t + t)
    dx += dt * t * c
""", params=("x", "c"), grads=("dx",))
NDIMS = {"x": 1, "c": 0, "t": 1, "y": 0, "dx": 1, "dt": 1, "_dret": 0}


def test_elements_one_loop_per_chain():
    """The forward chain keeps ``t`` (the adjoint reads it) and sums ``y`` in its loop;
    the adjoint's chain makes no array for ``dt``."""
    ctx = context(ELEMENTS, ndims=NDIMS, env={"np": np})
    assert after("elements", lowering(ctx)) == code("""
        def f_grad(x, c, _dret):
            # one loop over the elements of x (arrays kept: t; no arrays for: none)
            t = np.empty_like(x)
            y_sum = 0.0
            for _k in range(x.shape[0]):
                t_e = np.exp(c * x[_k])
                y_sum += t_e * t_e
                t[_k] = t_e
            y = y_sum
            dx = np.zeros_like(x)
            # one loop over the elements of x (arrays kept: none; no arrays for: dt)
            for _k2 in range(x.shape[0]):
                dt_e = _dret * (t[_k2] + t[_k2])
                dx[_k2] += dt_e * t[_k2] * c
            return (y, dx)
    """)
    assert ctx.element_loops


def test_no_element_loops_without_the_dimensions():
    """``jit=False`` (or second order's input): no ``ndims``, the body stays."""
    ctx = context(ELEMENTS, env={"np": np})
    s = lowering(ctx)
    kept = s.body
    after("elements", s)
    assert s.body is kept and not ctx.element_loops


MOVED = adjoint("""
    t = np.exp(x)
    y = np.sum(t * c)
""", "dx = np.zeros_like(x)", """
    dt = np.zeros_like(t)
    g = np.empty_like(x)
    for i in range(x.shape[0]):
        g[i] = _dret * c
    dt += unbroadcast(g, x)
    dx += dt * t
""", params=("x", "c"), grads=("dx",))


def test_moves_a_dead_array_into_a_zeroed_buffer():
    """``dt``'s zeroing and add go: it takes ``g``'s buffer, which nothing reads after;
    ``dx``, added a product (no name), keeps its zeroing."""
    from jitgrad.kernels.helpers import unbroadcast

    ndims = {**NDIMS, "g": 1}
    ctx = context(MOVED, ndims=ndims, env={"np": np, "unbroadcast": unbroadcast})
    assert after("moves", lowering(ctx)) == code("""
        def f_grad(x, c, _dret):
            t = np.exp(x)
            y = np.sum(t * c)
            dx = np.zeros_like(x)
            g = np.empty_like(x)
            for i in range(x.shape[0]):
                g[i] = _dret * c
            # dt takes the buffer of g: nothing reads g after dt is written (no zeroing, no add)
            dt = g
            dx += dt * t
            return (y, dx)
    """)
    ctx = context(MOVED, env={"np": np, "unbroadcast": unbroadcast})  # (jit=False: none)
    assert "dt = np.zeros_like(t)" in after("moves", lowering(ctx))


SKIP = """
    for i in range(n - 1, -1, -1):
        for k in range(p.shape[0] - 1, -1, -1):
            dw += dd * p[k]
            dp[k] += {}
        dd = 0.0
    return (None, (dp, dw))
"""


def _reversed(s):
    SWEEP.set(s.body[0], (1, "reverse"))
    return s


def test_zero_skip_guards_a_loop_linear_in_one_cotangent():
    ctx = context(adjoint(params=("p", "w", "n"), grads=("dp", "dw")),
                  cotangents=frozenset({"dd", "dw"}), env={"np": np})
    assert after("zero_skip", _reversed(lowering(ctx, SKIP.format("dd * w")))) == code("""
        def f_grad(p, w, n, _dret):
            for i in range(n - 1, -1, -1):
                if dd != 0.0:
                    # skipped where dd is 0: all it adds is linear in dd
                    for k in range(p.shape[0] - 1, -1, -1):
                        dw += dd * p[k]
                        dp[k] += dd * w
                dd = 0.0
            return (None, (dp, dw))
    """)


def test_no_zero_skip_outside_the_adjoint_or_where_not_linear():
    """A loop nested in no reversed loop stays; so does one adding ``dd + w`` (not zero
    where ``dd`` is)."""
    ctx = context(adjoint(params=("p", "w", "n"), grads=("dp", "dw")),
                  cotangents=frozenset({"dd", "dw"}), env={"np": np})
    assert "if dd" not in after("zero_skip", lowering(ctx, SKIP.format("dd * w")))
    assert "if dd" not in after("zero_skip", _reversed(lowering(ctx, SKIP.format("dd + w"))))



# --- ascending --------------------------------------------------------------------------

ASC = """
    for j in range(n - 1, -1, -1):
        _tape_mn -= 1
        m = _tape_m[_tape_mn]
        {}
    return (None, (dx, dw))
"""


def test_ascending_runs_an_independent_reversed_loop_forwards():
    """Each iteration writes its own ``dx[j]`` and pops one tape entry: the loop runs
    ascending and reads the iteration's slot, the cursor moved back by the trip count."""
    ctx = context(adjoint(params=("x", "w", "n"), grads=("dx", "dw")), env={"np": np})
    assert after("ascending", lowering(ctx, ASC.format("dx[j] += dw * m"))) == code("""
        def f_grad(x, w, n, _dret):
            _tape_mn -= max(n, 0)
            # iterations over j are independent: run ascending (so that it vectorises)
            for j in range(n):
                m = _tape_m[_tape_mn + j]
                dx[j] += dw * m
            return (None, (dx, dw))
    """)


def test_no_ascending_where_the_order_changes_a_value():
    """A sum (its rounding depends on the order), an element two iterations add into, an
    element another iteration writes, a value carried on, the index read after: stays."""
    ctx = context(adjoint(params=("x", "w", "n"), grads=("dx", "dw")), env={"np": np})
    for body in ("dw += m * x[j]", "dx[j] += m\n        dx[j - 1] += m",
                 "dx[j] = dx[j + 1] * m", "w = w * m\n        dx[j] += w"):
        s = lowering(ctx, ASC.format(body))
        kept = s.body
        after("ascending", s)
        assert s.body is kept, body
    s = lowering(ctx, ASC.format("dx[j] += m").replace("return", "dw = j\n    return"))
    kept = s.body
    after("ascending", s)
    assert s.body is kept

# --- cached calls ------------------------------------------------------------------------

CALLS = adjoint("""
    t = X @ W
    t @= W
    y = np.sum(t)
""", "dW = np.zeros_like(W)", """
    g = np.zeros_like(t, dtype=np.float32)
    e = np.empty_like(t)
    dW += dot_grad_b(np.ones_like(t) + (X @ W) @ W, X, W)
""", params=("X", "W"), grads=("dW",))


def test_cached_calls():
    """One-argument ``np.zeros_like``/``np.empty_like`` and every binary ``@`` call the
    cached helpers; ``@=``, keywords and other NumPy calls stay; the shared statements
    are not changed (the unchanged ones are the IR's own objects)."""
    import numpy as np

    ctx = context(CALLS, cached_calls=True, env={"np": np})
    s = lowering(ctx)
    before = list(s.body)
    assert after("cached_calls", s) == code("""
        def f_grad(X, W, _dret):
            t = np_matmul(X, W)
            t @= W
            y = np.sum(t)
            dW = np_zeros_like(W)
            g = np.zeros_like(t, dtype=np.float32)
            e = np_empty_like(t)
            dW += dot_grad_b(np.ones_like(t) + np_matmul(np_matmul(X, W), W), X, W)
            return (y, dW)
    """)
    kept = [a is b for a, b in zip(before, s.body, strict=True)]
    assert kept == [False, True, True, False, True, False, False, True]
    assert "np.zeros_like(W)" in emit.unparse(emit.function_def("g", [], before))
    off = lowering(context(CALLS, env={"np": np}))
    assert "np_matmul" not in after("cached_calls", off)


# --- view updates ------------------------------------------------------------------------

VIEWS = adjoint("""
    y = np.sum(b[0] * x)
""", "db = np.zeros_like(b)", """
    db[0] += g
    db[0, 1] += h
    db[:, 1] += g
    db[idx] += g
    dx[1:] += g
""", params=("b", "x", "g", "h", "idx"), grads=("db",))


def test_view_updates_update_views_only():
    """A row and a strided column of ``db`` (2-d) and a slice of ``dx`` (1-d) are views:
    each augmented assignment becomes an update of a named view; an element
    (``db[0, 1]``), an index array (``db[idx]``: a copy) stay; without ``cached_calls``
    (``jit=False`` or ``parallel=True``) nothing changes."""
    ndims = {"b": 2, "db": 2, "x": 1, "dx": 1, "g": 1, "h": 0, "idx": 1}
    s = lowering(context(VIEWS, cached_calls=True, ndims=ndims))
    assert after("view_updates", s) == code("""
        def f_grad(b, x, g, h, idx, _dret):
            y = np.sum(b[0] * x)
            db = np.zeros_like(b)
            _view = db[0]
            _view += g
            db[0, 1] += h
            _view2 = db[:, 1]
            _view2 += g
            db[idx] += g
            _view3 = dx[1:]
            _view3 += g
            return (y, db)
    """)
    off = lowering(context(VIEWS, ndims=ndims))
    assert "_view" not in after("view_updates", off)


# --- outer updates -----------------------------------------------------------------------

OUTERS = adjoint("""
    y = np.sum(np.dot(X, w))
""", "dX = np.zeros_like(X)", """
    dX += dot_grad_a(g, X, w)
    _dt3 = dot_grad_a(h, _t3, r)
    dw += dot_grad_b(g, X, w)
    dX += transpose_back(_dt3, None)
    _dt4 = dot_grad_b(h, r, _t3)
    s = np.sum(dX)
    dX += transpose_back(_dt4, None)
    dA += dot_grad_b(g, r, A)
    r = h * 2.0
    dA += dot_grad_b(g, r, A)
    dB += dot_grad_a(g, B, C)
    dB += dot_grad_b(h, h, B)
    restore_into(h, g)
    dB += dot_grad_b(h, h, B)
""", params=("X", "w", "g", "h", "r", "A", "B", "C"), grads=("dX",))


def test_outer_updates_add_in_place():
    """``dX += dot_grad_a(g, X, w)`` (X 2-d, w and g 1-d) becomes ``add_outer(dX, g, w)``
    and ``dA += dot_grad_b(g, r, A)`` ``add_outer(dA, r, g)``; the transposed product's
    ``_dt3`` is added where it was made, factors swapped, and the two updates of ``dX``
    are one pass (``add_outers``); ``_dt4``'s is not moved (``dX`` is read between), the
    updates of ``dA`` stay two (``r`` is rebound between), as do those of ``dB`` (``h``
    copied into between: ``restore_into``), a matrix-matrix product stays, and nothing
    changes without the dimensions or ``cached_calls``."""
    from jitgrad.kernels.arrays import dot_grad_a, dot_grad_b, transpose_back
    from jitgrad.kernels.helpers import restore_into
    env = {"np": np, "dot_grad_a": dot_grad_a, "dot_grad_b": dot_grad_b,
           "transpose_back": transpose_back, "restore_into": restore_into}
    ndims = {"X": 2, "dX": 2, "w": 1, "dw": 1, "g": 1, "h": 1, "r": 1, "_t3": 2,
             "_dt3": 2, "_dt4": 2, "A": 2, "dA": 2, "B": 2, "C": 2, "dB": 2, "s": 0}
    s = lowering(context(OUTERS, cached_calls=True, ndims=ndims, env=env))
    assert after("outer_updates", s) == code("""
        def f_grad(X, w, g, h, r, A, B, C, _dret):
            y = np.sum(np.dot(X, w))
            dX = np.zeros_like(X)
            add_outers(dX, g, w, r, h)
            dw += dot_grad_b(g, X, w)
            _dt4 = dot_grad_b(h, r, _t3)
            s = np.sum(dX)
            dX += transpose_back(_dt4, None)
            add_outer(dA, r, g)
            r = h * 2.0
            add_outer(dA, r, g)
            dB += dot_grad_a(g, B, C)
            add_outer(dB, h, h)
            restore_into(h, g)
            add_outer(dB, h, h)
            return (y, dX)
    """)
    off = lowering(context(OUTERS, ndims=ndims, env=env))
    assert "add_outer" not in after("outer_updates", off)
    flat = lowering(context(OUTERS, cached_calls=True, env=env))
    assert "add_outer" not in after("outer_updates", flat)


def test_add_outer_kernels():
    """``add_outer``/``add_outers`` add outer products into a C or F (transposed) matrix in
    place, compiled and not; a factor of the wrong length raises; factors that are views
    of the matrix are read as they were (the compiled kernel copies them first)."""
    import numba
    import pytest

    from jitgrad.kernels.helpers import add_outer, add_outers
    rng = np.random.default_rng(1)
    u1, u2, v1, v2 = rng.normal(size=4), rng.normal(size=4), rng.normal(size=3), rng.normal(size=3)
    want = 2 * np.outer(u1, v1) + np.outer(u2, v2) + 1.0

    @numba.njit
    def both(acc, u1, v1, u2, v2):
        add_outer(acc, u1, v1)
        add_outers(acc, u1, v1, u2, v2)

    for fn, one in ((both, numba.njit(lambda a, u, v: add_outer(a, u, v))),
                    (both.py_func, add_outer)):
        for acc in (np.ones((4, 3)), np.ones((3, 4)).T):
            fn(acc, u1, v1, u2, v2)
            assert np.allclose(acc, want, rtol=1e-14, atol=1e-14)
        with pytest.raises(ValueError):
            fn(np.ones((4, 3)), u1, u2, u2, v2)
        acc = np.arange(9.0).reshape(3, 3)
        seen = acc + np.outer(acc[:, 0], acc[1])
        one(acc, acc[:, 0], acc[1])
        assert np.array_equal(acc, seen)





# --- bounds ------------------------------------------------------------------------------

BOUNDS = adjoint("""
    for t in range(m):
        for i in range(n - 1, 0, -1):
            y[i] = x[i - 1] + x[i + 1, t]
            if i > 2:
                y[i // 2] = 0.0
    z = x[-1, k]
""", "", "", params=("x", "y", "n", "m", "k"), results=("z",), grads=())


def _kinds(ndims: dict[str, int]):
    from jitgrad.transpiler.analysis.kinds import Kind
    return lambda n: Kind("f" if ndims[n] else "i", ndims[n]) if n in ndims else None


def test_bounds_checks_once_per_loop():
    """``x[i - 1]``, ``x[i + 1, t]`` and ``y[i]`` are affine in the loops over ``t`` and
    ``i`` (the second reversed): one check before the outer loop, over both loops' ranges,
    when both run, one ``if`` for all arrays; ``y[i // 2]`` in an ``if`` is checked
    before its statement; the constant ``x[-1, k]`` at the top level, with no low end
    for ``k``'s dimension kept symbolic.  Without kinds (``jit=False``,
    ``parallel=True``) nothing changes."""
    kinds = _kinds({"x": 2, "y": 1, "n": 0, "m": 0, "k": 0})
    s = lowering(context(BOUNDS, kinds=kinds, once=True))
    assert after("bounds", s) == code("""
    def f_grad(x, y, n, m, k, _dret):
        # every index is checked explicitly (below): compiled with boundscheck=False
        # x[i + 1, t], x[i - 1], y[i] checked once before the loop over t
        if m > 0 and n - 1 > 0 and (n >= x.shape[0] or m - 1 >= x.shape[1] or n - 1 >= y.shape[0]):
            raise IndexError('x[i + 1, t], x[i - 1], y[i] out of range (line 3, loop over t)')
        for t in range(m):
            for i in range(n - 1, 0, -1):
                y[i] = x[i - 1] + x[i + 1, t]
                if i > 2:
                    if i // 2 < -y.shape[0] or i // 2 >= y.shape[0]:
                        raise IndexError('y[i // 2] out of range (line 5)')
                    y[i // 2] = 0.0
        if -1 < -x.shape[0] or k < -x.shape[1] or k >= x.shape[1]:
            raise IndexError('x[-1, k] out of range (line 6)')
        z = x[-1, k]
        return (z, ())
    """)
    assert s.ctx.bounds == {"grad": True}
    off = lowering(context(BOUNDS, once=True))
    assert "IndexError" not in after("bounds", off)


def test_bounds_left_to_numba_where_one_index_is_not_proved():
    """An element used as an index (``x[k[i]]``) is not checked: the function is left as
    it was, Numba checks every index, and a comment says why."""
    ir = adjoint("""
        for i in range(n):
            y[i] = x[k[i]]
    """, "", "", params=("x", "y", "k", "n"), results=("y",), grads=())
    kinds = _kinds({"x": 1, "y": 1, "k": 1, "n": 0})
    s = lowering(context(ir, kinds=kinds, once=True))
    text = after("bounds", s)
    assert "# bounds: Numba checks each index: x[k[i]]: k[i] is not an integer" in text
    assert "IndexError" not in text and s.ctx.bounds == {"grad": False}


def test_bounds_not_hoisted_out_of_a_condition():
    """A subscript evaluated only on one side of ``if``/``else``, ``and`` or a chained
    comparison might be out of range where it is not evaluated: never checked ahead."""
    kinds = _kinds({"x": 1, "y": 1, "n": 0})
    for line in ("y[i] = x[i + 1] if i < n - 1 else 0.0", "c = i < n - 1 and x[i + 1] > 0.0",
                 "c = 0.0 < y[i] < x[i + 1]"):
        ir = adjoint(f"""
            for i in range(n):
                {line}
        """, "", "", params=("x", "y", "n"), results=("y",), grads=())
        s = lowering(context(ir, kinds=kinds, once=True))
        text = after("bounds", s)
        assert "not read once each time its statement runs" in text, text
        assert "IndexError" not in text and s.ctx.bounds == {"grad": False}

# --- workspace ---------------------------------------------------------------------------

TAPED = adjoint("""
    for i in range(n):
        _tape_x[_tape_xn] = x
        _tape_xn += 1
        x = math.sin(x)
    y = x
""", "dx = _dret", """
    for i in range(n - 1, -1, -1):
        _tape_xn -= 1
        x = _tape_x[_tape_xn]
        dx = dx * np.cos(x)
""", workspace="""
    _tape_x = np.empty(0, np.float64)
    _tape_xn = 0
""", params=("x", "n"), reused=(("_tape_x", "float64"),))

TAPED_TEXT = """
    def f_grad(x, n, _dret, _ws):
        _tape_x = _ws[0]
        _tape_xn = 0
        for i in range(n):
            _tape_x[_tape_xn] = x
            _tape_xn += 1
            x = math.sin(x)
        y = x
        dx = _dret
        for i in range(n - 1, -1, -1):
            _tape_xn -= 1
            x = _tape_x[_tape_xn]
            dx = dx * np.cos(x)
        return (y, dx, (_tape_x,))
"""


def test_workspace_takes_the_tapes():
    ctx = context(TAPED)
    s = lowering(ctx)
    assert after("workspace", s) == code(TAPED_TEXT)
    assert ctx.workspaces == {"grad": ("float64",)} and s.params[-1] == "_ws"


def test_workspace_takes_an_adjoint_buffers_storage():
    ir = adjoint("y = np.sum(v * x)", "dv = np.zeros_like(v)", "dv += _dret * x",
                 params=("x", "v"), grads=("dv",), buffers=(("dv", "_ws_dv", "ws_zeros"),))
    ctx = context(ir)
    assert after("workspace", lowering(ctx, variant="grad_only")) == code("""
        def f_gradonly(x, v, _dret, _ws):
            _ws_dv = _ws[0]
            y = np.sum(v * x)
            _ws_dv, dv = ws_zeros(_ws_dv, v)
            dv += _dret * x
            return (None, dv, (_ws_dv,))
    """)
    assert ctx.workspaces == {"grad_only": ("buffer",)}


def test_no_workspace_without_tapes_or_buffers():
    ctx = context(SPLIT)
    s = lowering(ctx)
    after("workspace", s)
    assert s.params == ["x", "_dret"] and ctx.workspaces == {"grad": ()}


# --- the prange rewrite (its wiring: backend/prange.py is tested end to end) ------------


class _Rewrite:
    """A stand-in for ``prange.Parallel``: renames the function's loops' ranges."""

    made = 0

    def __init__(self):
        _Rewrite.made += 1

    def function(self, fn: ast.FunctionDef) -> ast.FunctionDef:
        new = ast.parse(emit.unparse(fn).replace("range(", "prange(")).body[0]
        new.args.args.append(ast.arg(arg="_extra"))
        return new


def test_parallel_rewrite_made_once_per_variant_and_its_function_kept():
    """One rewrite per variant (its fresh names then do not depend on which variant was
    lowered first), made once: a variant lowered again reuses it."""
    _Rewrite.made = 0
    ctx = context(TAPED, parallel=_Rewrite)
    shown = [after("parallel", lowering(ctx, variant=v)) for v in ("grad", "grad_only")]
    after("parallel", lowering(ctx, variant="grad"))
    assert _Rewrite.made == 2
    assert shown[0].startswith("def f_grad(x, n, _dret, _extra):")
    assert "for i in prange(n):" in shown[0] and " range(" not in shown[0]


def test_no_rewrite_without_parallel():
    s = lowering(context(TAPED))
    body = s.body
    after("parallel", s)
    assert s.body is body


# --- text ----------------------------------------------------------------------------------


def test_unparse_prints_comments():
    ctx = context(adjoint())
    s = lowering(ctx, """
        # a comment
        dx = _dret
        return (None, dx)
    """)
    assert after("unparse", s) == code("""
        def f_grad(x, _dret):
            # a comment
            dx = _dret
            return (None, dx)
    """)


#: assignments whose text the fast printer makes (or leaves to the unparser): precedence,
#: right-associative powers, unary minus, element tuples, attributes, calls, constants
_PRINTED = """
a = -(b + c) ** 2
a = b - (c - d) / -(2 ** -e) ** 0.5 + np.f(x[i + 1], -1)
a = (b - c) * (d @ e) // x[b,] % ~b ** (c ** d) - (not b)
x[i, j + 1] += (a - b) * x.T[i, 2] ** -1.5 - -3 + True * None
a = b ** c ** d + (b ** c) ** d - (-b) ** 2 + (a < b) + x[1:2] + f(*b) + f(k=1)
a = 1e300 * 1e300 + 'u' + f(b)(c).d[0].e + (b if c else d) + (1).real + (-1.5).real
a = b = c
a, b = b, a
a @= b << c >> d | e & f ^ g
"""


def test_fast_printer_prints_what_the_unparser_prints():
    """The usual assignments are printed without a visitor per node (``emit``'s
    ``_fast_printer``); what it prints is ``ast.unparse``'s text, and what it cannot
    print it leaves to the unparser (None)."""
    fast = emit._fast_printer(ast._Unparser)
    printed = 0
    for s in ast.parse(_PRINTED).body:
        text = fast(s)
        assert text is None or text == ast.unparse(s), (text, ast.unparse(s))
        printed += text is not None
    assert printed == 5
    assert emit._text_unparser() is not None


def test_tape_accessors_by_the_names_the_helpers_have():
    ctx = context(TAPED, accessor=lambda n: "_" + n)
    s = lowering(ctx)
    after("workspace", s)
    assert after("tape_accessors", s) == code("""
        def f_grad(x, n, _dret, _ws):
            _tape_x = _ws[0]
            _tape_xn = 0
            for i in range(n):
                _tape_put(_tape_x, _tape_xn, x)
                _tape_xn += 1
                x = math.sin(x)
            y = x
            dx = _dret
            for i in range(n - 1, -1, -1):
                _tape_xn -= 1
                x = _tape_get(_tape_x, _tape_xn)
                dx = dx * np.cos(x)
            return (y, dx, (_tape_x,))
    """)


def test_no_accessors_without_typed_tapes():
    ctx = context(SPLIT, accessor=lambda n: "_" + n)
    s = lowering(ctx, "_tape_y[0] = x\nreturn x")
    body = s.body
    assert "_tape_y[0] = x" in after("tape_accessors", s)
    assert s.body is body
    assert ctx.accessors() == {"tape_get": "tape_get", "tape_put": "tape_put"}


def test_tape_accessors_only_for_the_tapes_the_reverse_pass_made():
    """Only the pushes and pops the reverse pass marked (``notes.TAPED``), of the tapes it
    made, are read and written through the helpers: a user's ``_tape1`` is no tape, and a
    statement of the user's is left alone even where it names a tape; an ``==`` reads
    through the helper too, and a comment's text never changes (the regex over the
    printed source rewrote the one and missed the other).  The statements without a tape
    access are the same objects."""
    ctx = context(TAPED)
    s = lowering(ctx, """
        _tape1 = np.zeros(3)
        _tape1[0] = x
        # x is _tape_x[_tape_xn]
        _tape_x[_tape_xn] = _tape1[0] + _tape_x[_tape_xn - 1]
        for i in range(n):
            y = _tape_x[i] == 0.0
        z = _tape_x[0]
        return (y, x)
    """)
    notes.TAPED.set(s.body[-2], False)  # the user's own statement
    notes.TAPED.set(s.body[-3].body[0], True)  # a pop compared (``stmts`` marks plain pops)
    first, last = s.body[0], s.body[-2]
    after("tape_accessors", s)
    assert after("unparse", s) == code("""
        def f_grad(x, n, _dret):
            _tape1 = np.zeros(3)
            _tape1[0] = x
            # x is _tape_x[_tape_xn]
            tape_put(_tape_x, _tape_xn, _tape1[0] + tape_get(_tape_x, _tape_xn - 1))
            for i in range(n):
                y = tape_get(_tape_x, i) == 0.0
            z = _tape_x[0]
            return (y, x)
    """)
    assert s.body[0] is first and s.body[-2] is last


# --- the whole list, per variant -----------------------------------------------------------


def test_whole_list_per_variant():
    ctx = context(TAPED)
    done = lower_variants(ctx)
    assert list(done) == ["grad", "grad_only"]
    assert done["grad"].text == code(TAPED_TEXT).replace(
        "_tape_x[_tape_xn] = x", "tape_put(_tape_x, _tape_xn, x)").replace(
        "_tape_x[_tape_xn]", "tape_get(_tape_x, _tape_xn)")
    # the value is the last x: the gradient-only variant still needs the loop's tape
    assert done["grad_only"].text.startswith("def f_gradonly(x, n, _dret, _ws):")
    assert "return (None, dx, (_tape_x,))" in done["grad_only"].text
    until = run(start(context(TAPED), "grad"), until="workspace")
    assert until.text == "" and until.params[-1] == "_ws"


# --- trip memos ---------------------------------------------------------------------------

MEMO_LOOP = """
    for i in range(n):
        t = 0.0
        for j in range(q.shape[0]):
            _t3 = q[j]
            _t2 = math.exp(_t3 {})
            _tape_e[_tape_en] = _t2
            _tape_en += 1
            t = t + _t2 * x[i]
        for j in range(q.shape[0] - 1, -1, -1):
            _tape_en -= 1
            _t2 = _tape_e[_tape_en]
            dq[j] += dt * _t2
    return (None, dq)
"""


def _fused(s):
    notes.ONE_TRIP_TAPES.set(s.body[0], True)
    return s


def test_trip_memo_pushes_in_the_first_trip_only():
    """A fused loop's push the same in every trip, and what computes it for it alone, run
    under the first trip's flag; the entry is read back in the other trips."""
    import math

    ctx = context(adjoint(params=("q", "x", "n"), grads=("dq",),
                          reused=(("_tape_e", "float64"),)), env={"np": np, "math": math},
                  is_array=lambda n: n in ("q", "x", "dq", "_tape_e"))
    assert after("trip_memo", _fused(lowering(ctx, MEMO_LOOP.format("")))) == code("""
        def f_grad(q, x, n, _dret):
            _new_trip = True
            for i in range(n):
                # 1 stored value(s) the same in every trip: made in the first
                t = 0.0
                for j in range(q.shape[0]):
                    if _new_trip:
                        _t3 = q[j]
                        _t2 = math.exp(_t3)
                        _tape_e[_tape_en] = _t2
                    else:
                        _t2 = _tape_e[_tape_en]
                    _tape_en += 1
                    t = t + _t2 * x[i]
                for j in range(q.shape[0] - 1, -1, -1):
                    _tape_en -= 1
                    _t2 = _tape_e[_tape_en]
                    dq[j] += dt * _t2
                _new_trip = False
            return (None, dq)
    """)


def test_no_trip_memo_where_a_trip_differs_or_unfused():
    """A value reading the fused loop's index is pushed in every trip; so is any push of a
    loop that is not fused (its tape holds every trip)."""
    import math

    ctx = context(adjoint(params=("q", "x", "n"), grads=("dq",),
                          reused=(("_tape_e", "float64"),)), env={"np": np, "math": math},
                  is_array=lambda n: n in ("q", "x", "dq", "_tape_e"))
    assert "_new_trip" not in after("trip_memo",
                                    _fused(lowering(ctx, MEMO_LOOP.format("* x[i]"))))
    assert "_new_trip" not in after("trip_memo", lowering(ctx, MEMO_LOOP.format("")))


# --- unsigned ----------------------------------------------------------------------------

UNSIGNED = adjoint("""
    idx = k
    for t in range(n):
        for i in range(m, n):
            y[i] = x[idx] * x[i - m, t]
            idx += 1
""", "", "", params=("x", "y", "n", "m", "k"), results=("y",), grads=())


def test_unsigned_after_bounds():
    """After the bounds step: ``x[i - m, t]``'s least value is 0 by the loop's range: read
    unsigned; ``y[i]`` from ``m`` (checked before the loop over ``t``, reading nothing it
    binds) and ``x[idx]`` from the counter's entry value are tested before the innermost
    loop, which is versioned on the test, the loop as written its ``else``; ``t`` is
    invariant in the innermost loop (LLVM hoists its select): left as written.  Without
    the bounds step's proof (no kinds: ``jit=False``) nothing changes."""
    kinds = _kinds({"x": 2, "y": 1, "n": 0, "m": 0, "k": 0, "idx": 0})
    s = lowering(context(UNSIGNED, kinds=kinds, once=True))
    after("bounds", s)
    text = after("unsigned", s)
    tail = text.split("raise IndexError('x[idx] out of range (line 4, loop over i)')\n")[1]
    assert tail == (
        "        # indices >= 0 on every trip over i read unsigned (no wraparound); else as"
        " written\n"
        "        if idx >= 0 and m >= 0:\n"
        "            for i in range(m, n):\n"
        "                y[np.uintp(i)] = x[np.uintp(idx)] * x[np.uintp(i - m), t]\n"
        "                idx += 1\n"
        "        else:\n"
        "            for i in range(m, n):\n"
        "                y[i] = x[idx] * x[i - m, t]\n"
        "                idx += 1\n"
        "    return (y, ())\n"), text
    off = lowering(context(UNSIGNED, once=True))
    after("bounds", off)
    assert "uintp" not in after("unsigned", off)
