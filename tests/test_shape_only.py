"""Arrays the adjoint reads only for their shape (``backend/shape_only.py``): the reads
take a stand-in of that shape, so the array is freed after its last real use.  Checked
in the generated source, against central differences in both ``jit`` modes, by the
bytes a compiled call allocates at its peak (``tracemalloc`` sees Numba's allocations),
and through ``jg.hvp``, which differentiates the gradient code itself."""

from __future__ import annotations

import gc
import tracemalloc

import numpy as np
import pytest
from gradcheck import benchmark_workloads, check_grad, function_from_source

import jitgrad as jg

STAND_IN = "only its shape is read later"
MLP = benchmark_workloads()["mlp"]


def affine_tanh(X, W, b):
    """``X @ W`` is read again only by the adjoint of ``+ b``, for its shape."""
    h = np.tanh(X @ W + b)
    return np.sum(h * h)


def reads_it_again(X, W, b):
    """``t`` is read by the adjoint of ``u * t`` too: nothing to free earlier."""
    t = X @ W
    u = t + b
    return np.sum(u * t)


def _args(rng, n=4, m=3, k=5):
    return rng.normal(size=(n, m)), rng.normal(size=(m, k)), rng.normal(size=k)


def _src(f, *args, wrt=0):
    d = jg.differentiate(f, wrt=wrt)
    d.grad(*args)
    return d.source(*args)


@pytest.mark.parametrize("jit", [True, False])
def test_stand_in_for_a_shape_read(jit):
    args = _args(np.random.default_rng(0))
    check_grad(affine_tanh, args, (0, 1, 2), jit=jit)
    src = _src(affine_tanh, *args, wrt=(0, 1, 2))
    assert STAND_IN in src and "_t2_like = shape_stand_in(_t2)" in src
    assert "unbroadcast(_dt, _t2_like)" in src


@pytest.mark.parametrize("jit", [True, False])
def test_no_stand_in_where_the_array_is_read_again(jit):
    args = _args(np.random.default_rng(1))
    check_grad(reads_it_again, args, (0, 1, 2), jit=jit)
    src = _src(reads_it_again, *args, wrt=(0, 1, 2))
    assert "t_like" not in src


#: the user's own function spelled as jitgrad's shape-reading helper, which reads ``b``
NAMESAKE = """
import numba
import numpy as np

import jitgrad as jg


@numba.njit
def unbroadcast(a, b):
    return a + b


def user_sum(a, b):
    return unbroadcast(a, b)


@jg.grad_rule(user_sum)
def _user_sum_rule(a, b):
    def back(dy):
        return (dy, dy)
    return unbroadcast(a, b), back


def f(x):
    t = x * 2.0
    y = user_sum(x, t)
    return np.sum(y * y)
"""


@pytest.mark.parametrize("jit", [True, False])
def test_a_function_spelled_like_the_helper_reads_values(tmp_path, jit):
    """``t`` is read by the user's ``unbroadcast``, for its values: never a stand-in (the
    pass went by the name and gave it zeros: value 14 instead of 126 at [1, 2, 3]); the
    helper's own reads, under another name, still take one."""
    f = function_from_source(tmp_path, f"namesake_{int(jit)}", NAMESAKE)
    x = np.array([1.0, 2.0, 3.0])
    check_grad(f, (x,), 0, jit=jit)
    value, grad = jg.value_and_grad(f, jit=jit)(x)
    assert value == pytest.approx(126.0) and np.allclose(grad, 18.0 * x)
    src = jg.differentiate(f, jit=False).source(x)
    assert "t_like" not in src.replace("_t2_like", "") and "_t2_like" in src
    # (under jit=True the helper's operand _t2 is an element of a loop: no array, no stand-in)
    assert "t_like" not in jg.differentiate(f, jit=True).source(x)


def _peak(call) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_peak_memory_is_the_hand_adjoints():
    """The MLP benchmark's gradient allocates no more at its peak than the hand-written
    backprop (it kept ``X @ W1``, 1 MiB at this size, until the adjoint before)."""
    args = MLP.args("quick")
    d = jg.differentiate(MLP.primal, wrt=MLP.wrt)
    d.grad(*args)  # compiled, workspaces made
    MLP.adjoint(*args)
    hand = _peak(lambda: MLP.adjoint(*args))
    ours = _peak(lambda: d.grad(*args))
    assert ours <= hand + 64 * 1024, (ours, hand)


@pytest.mark.parametrize("jit", [True, False])
def test_hvp_through_stand_ins(jit):
    rng = np.random.default_rng(2)
    args = _args(rng)
    v = rng.normal(size=args[1].shape)
    hv = jg.hvp(affine_tanh, args, v, wrt=1, jit=jit)
    d = jg.differentiate(affine_tanh, wrt=1, jit=jit)
    eps = 1e-5
    fd = (d.grad(args[0], args[1] + eps * v, args[2])
          - d.grad(args[0], args[1] - eps * v, args[2])) / (2 * eps)
    np.testing.assert_allclose(hv, fd, rtol=1e-6, atol=1e-8)


def test_shape_reads_are_the_tables_queries():
    """What reads an array only for its shape is the table's queries (``.dtype`` too: the
    stand-in keeps it), ``len`` and the second argument of ``unbroadcast``."""
    import ast

    from jitgrad.transpiler.backend.shape_only import read_for_shape_only

    body = ast.parse("n = a.dtype\nm = b.shape[0] + len(c) + d.size\n"
                     "g = unbroadcast(h, e)\nk = f.shape[0] * f[0]").body
    assert read_for_shape_only(body, ("unbroadcast",)) == {"a", "b", "c", "d", "e"}
