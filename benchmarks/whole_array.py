"""Whole-array NumPy code from Numba's examples: the gradient against the primal and JAX.

    python benchmarks/whole_array.py [--repeats 7] [--quick]

Four workloads written as a Numba user writes them, whole arrays and ``np`` calls, no
loops over elements: Black-Scholes (``np.log``/``np.sqrt``/``np.exp`` and the polynomial
``cnd`` over arrays), linear regression and logistic regression by gradient descent
(``w = w - a * np.dot(X.T, X.dot(w) - y)`` over steps, then a loss), and a kernel density
log-likelihood (a log-sum-exp per evaluation point).  For each: the Numba primal
(``@njit``), jitgrad's gradient (``jit=True``), JAX's ``jit(grad)`` where jax imports
(float64), medians of ``repeats`` after warm-up, one thread; the gradients are checked
against JAX's (or central differences of the primal without it) before timing.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false "
                      "intra_op_parallelism_threads=1")

import numba  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import jitgrad as jg  # noqa: E402

RSQRT2PI = 0.39894228040143267794


@numba.njit
def cnd(d):
    A1 = 0.31938153
    A2 = -0.356563782
    A3 = 1.781477937
    A4 = -1.821255978
    A5 = 1.330274429
    K = 1.0 / (1.0 + 0.2316419 * np.abs(d))
    ret_val = (RSQRT2PI * np.exp(-0.5 * d * d) *
               (K * (A1 + K * (A2 + K * (A3 + K * (A4 + K * A5))))))
    return np.where(d > 0, 1.0 - ret_val, ret_val)


def black_scholes(S, X, T, R, V):
    sqrtT = np.sqrt(T)
    d1 = (np.log(S / X) + (R + 0.5 * V * V) * T) / (V * sqrtT)
    d2 = d1 - V * sqrtT
    cndd1 = cnd(d1)
    cndd2 = cnd(d2)
    expRT = np.exp(- R * T)
    call = S * cndd1 - X * expRT * cndd2
    put = X * expRT * (1.0 - cndd2) - S * (1.0 - cndd1)
    return np.sum(call) + 0.5 * np.sum(put)


def linear_regression(Y, X, w, alpha, steps):
    for _i in range(steps):
        w = w - alpha * np.dot(X.T, np.dot(X, w) - Y)
    r = np.dot(X, w) - Y
    return np.dot(r, r)


def logistic_regression(Y, X, w, steps):
    for _i in range(steps):
        w = w - 0.01 * np.dot(((1.0 / (1.0 + np.exp(-Y * np.dot(X, w))) - 1.0) * Y), X)
    return np.sum(w * w)


def kde(X, pts, h):
    total = 0.0
    for j in range(pts.shape[0]):
        z = (pts[j] - X) / h
        e = -0.5 * z * z
        m = np.max(e)
        total += m + np.log(np.sum(np.exp(e - m)))
    return total


def jax_versions():
    """The same four in ``jax.numpy`` (None without jax)."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)

    def jcnd(d):
        K = 1.0 / (1.0 + 0.2316419 * jnp.abs(d))
        r = RSQRT2PI * jnp.exp(-0.5 * d * d) * (K * (0.31938153 + K * (
            -0.356563782 + K * (1.781477937 + K * (-1.821255978 + K * 1.330274429)))))
        return jnp.where(d > 0, 1.0 - r, r)

    def jbs(S, X, T, R, V):
        sqrtT = jnp.sqrt(T)
        d1 = (jnp.log(S / X) + (R + 0.5 * V * V) * T) / (V * sqrtT)
        d2 = d1 - V * sqrtT
        c1, c2 = jcnd(d1), jcnd(d2)
        e = jnp.exp(-R * T)
        return jnp.sum(S * c1 - X * e * c2) + 0.5 * jnp.sum(X * e * (1.0 - c2) - S * (1.0 - c1))

    def jlin(Y, X, w, alpha, steps):
        w = jax.lax.fori_loop(0, steps, lambda i, w: w - alpha * X.T @ (X @ w - Y), w)
        r = X @ w - Y
        return r @ r

    def jlog(Y, X, w, steps):
        w = jax.lax.fori_loop(0, steps, lambda i, w: w - 0.01 * (
            ((1.0 / (1.0 + jnp.exp(-Y * (X @ w))) - 1.0) * Y) @ X), w)
        return jnp.sum(w * w)

    def jkde(X, pts, h):
        z = (pts[:, None] - X[None, :]) / h
        e = -0.5 * z * z
        m = jnp.max(e, axis=1)
        return jnp.sum(m + jnp.log(jnp.sum(jnp.exp(e - m[:, None]), axis=1)))

    return {"black_scholes": jbs, "linear_regression": jlin,
            "logistic_regression": jlog, "kde": jkde}, jax


def cases(quick: bool):
    """name -> (function, arguments, the positions differentiated)."""
    rng = np.random.default_rng(0)
    n = 20_000 if quick else 200_000
    S, X, T = rng.uniform(5, 30, n), rng.uniform(1, 100, n), rng.uniform(0.25, 10, n)
    m, d = (2_000, 10) if quick else (20_000, 10)
    A = rng.normal(size=(m, d))
    y = A @ rng.normal(size=d) + 0.1 * rng.normal(size=m)
    labels = np.sign(y)
    k = 2_000 if quick else 20_000
    return {
        "black_scholes": (black_scholes, (S, X, T, 0.02, 0.3), (0, 1, 2, 3, 4)),
        "linear_regression": (linear_regression, (y, A, np.zeros(d), 1e-5, 20), (0, 1, 2)),
        "logistic_regression": (logistic_regression, (labels, A, np.zeros(d), 20), (1, 2)),
        "kde": (kde, (rng.normal(size=k), np.linspace(-3, 3, 40), 0.5), (0, 1, 2)),
    }


def median_time(call, repeats: int) -> float:
    """Median seconds of ``repeats`` calls after one warm-up call."""
    call()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        call()
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def _close(a, b) -> bool:
    return all(np.allclose(np.asarray(x), np.asarray(y), rtol=1e-7, atol=1e-9)
               for x, y in zip(a, b, strict=True))


def run_case(name: str, f, args, wrt, repeats: int, jx) -> dict[str, float]:
    """Times of the primal, jitgrad's gradient and JAX's for one workload."""
    primal = numba.njit(f)
    d = jg.differentiate(f, wrt=wrt, jit=True)
    ours = d.grad(*args)
    ours = ours if isinstance(ours, tuple) else (ours,)
    out = {"primal": median_time(lambda: primal(*args), repeats),
           "jitgrad": median_time(lambda: d.grad(*args), repeats)}
    if jx is not None:
        fns, jax = jx
        static = tuple(k for k, a in enumerate(args) if isinstance(a, int))
        g = jax.jit(jax.grad(fns[name], argnums=wrt), static_argnums=static)
        ref = [np.asarray(x) for x in g(*args)]
        if not _close(ours, ref):
            raise AssertionError(f"{name}: jitgrad's gradient differs from JAX's")

        def call():
            jax.block_until_ready(g(*args))
        out["jax"] = median_time(call, repeats)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help="smaller sizes")
    ap.add_argument("--only", default="", help="comma-separated workload names")
    a = ap.parse_args()
    numba.set_num_threads(1)
    jx = jax_versions()
    print(f"median of {a.repeats}, one thread, numba {numba.__version__}"
          + ("" if jx is None else f", jax {jx[1].__version__}"))
    print(f"{'workload':20} {'primal ms':>10} {'grad ms':>9} {'jax ms':>8} "
          f"{'grad/primal':>12} {'grad/jax':>9}")
    only = {s for s in a.only.split(",") if s}
    for name, (f, args, wrt) in cases(a.quick).items():
        if only and name not in only:
            continue
        t = run_case(name, f, args, wrt, a.repeats, jx)
        tj = t.get("jax", float("nan"))
        print(f"{name:20} {t['primal'] * 1e3:10.2f} {t['jitgrad'] * 1e3:9.2f} "
              f"{tj * 1e3:8.2f} {t['jitgrad'] / t['primal']:11.2f}x "
              f"{t['jitgrad'] / tj:8.2f}x", flush=True)


if __name__ == "__main__":
    main()
