"""The transpiler halves of hook, checkpoint and nobacksies, and the runtime bridge."""

import tracemalloc

import corpus_runtime as R
import numpy as np
import pytest
from gradcheck import check_grad

import jitgrad as jg


def test_hook_scales_only_that_use(jit):
    g = jg.grad(R.with_hook, wrt=(0, 1), jit=jit)(0.7, 1.3)
    # d/dx of (hook(x) * y + x * y) with the hook doubling the first use's gradient
    np.testing.assert_allclose(g, (2 * 1.3 + 1.3, 0.7 + 0.7))


def test_array_hook_clips(jit):
    x = np.array([0.01, -0.02, 0.5, -1.0])
    g = jg.grad(R.with_array_hook, jit=jit)(x)
    np.testing.assert_allclose(g, 3.0 * np.clip(2 * 3.0 * x, -0.1, 0.1))


def test_hook_function_must_compile():
    import corpus_runtime

    def bad(g):
        return [g]  # lists of floats do not flow through Numba arithmetic

    corpus_runtime.double_orig = corpus_runtime.double
    try:
        corpus_runtime.double = bad
        with pytest.raises(jg.JitError, match="hook functions must be Numba-compilable"):
            jg.grad(R.with_hook)(0.7, 1.3)
    finally:
        corpus_runtime.double = corpus_runtime.double_orig


def test_nobacksies_refuses(jit):
    with pytest.raises(jg.TransformError, match="no second derivatives here"):
        jg.grad(R.with_nobacksies, jit=jit)(0.7, 1.3)
    check_grad(R.with_nobacksies_inactive, (0.7, 1.3), wrt=0, jit=jit)


def test_checkpoint_same_gradient(jit):
    g1 = jg.grad(R.plain_loop, jit=jit)(0.3, 20, 10)
    g2 = jg.grad(R.checkpointed_loop, jit=jit)(0.3, 20, 10)
    np.testing.assert_allclose(g1, g2, rtol=1e-12)
    check_grad(R.checkpointed_loop, (0.3, 5, 4), jit=jit)


def test_checkpoint_arrays(jit):
    check_grad(R.checkpoint_arrays, (np.linspace(-1, 1, 4), 0.7), wrt=(0, 1), jit=jit)


def _peak(f, *args):
    tracemalloc.start()
    tracemalloc.reset_peak()
    f(*args)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def test_checkpoint_tape_memory_is_smaller():
    """Tapes of a checkpointed loop body hold one body at a time (jit=False: traced)."""
    plain = jg.differentiate(R.plain_loop, jit=False)
    ck = jg.differentiate(R.checkpointed_loop, jit=False)
    plain.grad(0.3, 10, 10)
    ck.grad(0.3, 10, 10)
    p = _peak(plain.grad, 0.3, 2000, 50)
    c = _peak(ck.grad, 0.3, 2000, 50)
    assert c * 4 < p, (c, p)
    assert "_tape" in plain.source() and "_tape_s" in ck.source()


def test_bridge_records_one_node():
    @jg.differentiate(wrt=(0, 1))
    def layer(W, X):
        return np.tanh(X @ W)

    rng = np.random.default_rng(0)
    W = jg.param(rng.normal(size=(3, 2)))
    X = rng.normal(size=(4, 3))
    Y = rng.normal(size=(4, 2))
    ps = jg.Params([W])
    gs = jg.gradient(lambda: np.sum((layer(W, X) - Y) ** 2), ps)

    def loss(Wd):
        return np.sum((np.tanh(X @ Wd) - Y) ** 2)

    from gradcheck import numeric_grad

    np.testing.assert_allclose(gs[W], numeric_grad(loss, (jg.data(W).copy(),), 0), rtol=1e-5)
