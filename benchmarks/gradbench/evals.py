"""The eleven evals: sizes, inputs, objective, jitgrad gradient, hand adjoint, reference.

``EVALS[name]`` is an :class:`Eval`.  Every gradient function returns a tuple of arrays
(the eval's output: gradients, or Jacobian blocks for ba and ht, (J, diag H) for kmeans).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import jitgrad as jg
from benchmarks.gradbench import ba, gmm, ht, kmeans, loader, lstm, nested, reference, simple


@dataclass(frozen=True)
class Eval:
    """One GradBench eval as this benchmark runs it."""

    name: str
    summary: str
    sizes: dict[str, dict[str, Any]]
    inputs: Callable[..., tuple]
    objective: Callable | None = None
    gradient: Callable[[bool], Callable[..., tuple]] | None = None
    reference: Callable[..., tuple] | None = None
    hand: Callable[..., tuple] | None = None
    refused: Callable[[bool], str] | None = None

    def args(self, scale: str) -> tuple:
        """Deterministic inputs at ``scale`` (test, quick or full)."""
        return self.inputs(**self.sizes[scale])

    def size_label(self, scale: str) -> str:
        """The size parameters at ``scale``, e.g. ``d=10, k=25, n=1000``."""
        return ", ".join(f"{k}={v}" for k, v in self.sizes[scale].items())


def _tupled(fn: Callable) -> Callable[..., tuple]:
    def call(*args):
        out = fn(*args)
        return out if isinstance(out, tuple) else (out,)
    return call


def _grad(f: Callable, wrt: tuple[int, ...]) -> Callable[[bool], Callable[..., tuple]]:
    return lambda jit: _tupled(jg.grad(f, wrt=wrt if len(wrt) > 1 else wrt[0], jit=jit))


def _fd(f: Callable, wrt: tuple[int, ...]) -> Callable[..., tuple]:
    return lambda *args: reference.fd_grad(f, args, wrt)


def _kmeans_gradient(jit: bool) -> Callable[..., tuple]:
    def dir_parts(points, centroids):
        # one forward-over-reverse pass gives J and H @ ones, as JAX's jvp(grad(cost))
        return jg.grad_and_hvp(kmeans.kmeans_cost, (points, centroids),
                               np.ones_like(centroids), wrt=1, jit=jit)
    return dir_parts


def _ba_gradient(jit: bool) -> Callable[..., tuple]:
    grad = jg.grad(ba.ba_residual_sum, wrt=(0, 1, 2), jit=jit)
    return lambda *args: ba.jacobian_blocks(grad, *args)


def _ht_gradient(jit: bool) -> Callable[..., tuple]:
    return _tupled(jg.jacfwd(ht.ht, wrt=0, jit=jit))


def _ht_reference(*args) -> tuple:
    return (reference.fd_jacobian(ht.ht, args, 0),)


def det_recursive_refused(jit: bool) -> str:
    """The TransformError message for the recursive (Laplace) det, or "ok"."""
    try:
        jg.grad(simple.det_recursive, wrt=0, jit=jit)(np.eye(3).ravel(), 3)
    except jg.TransformError as exc:
        return str(exc)
    return "ok"


EVALS: dict[str, Eval] = {e.name: e for e in (
    Eval("gmm", "Gaussian mixture log posterior, Wishart prior",
         {"test": dict(d=3, k=4, n=5), "quick": dict(d=10, k=25, n=1000),
          "full": dict(d=20, k=50, n=1000)},
         loader.gmm, gmm.gmm, _grad(gmm.gmm, (0, 1, 2, 3)), _fd(gmm.gmm, (0, 1, 2, 3)),
         gmm.gmm_hand),
    Eval("lstm", "diagonal LSTM, next-character log-likelihood",
         {"test": dict(layers=2, c=5, b=3), "quick": dict(layers=2, c=1024),
          "full": dict(layers=4, c=4096)},
         loader.lstm, lstm.lstm, _grad(lstm.lstm, (0, 1)), _fd(lstm.lstm, (0, 1))),
    Eval("ba", "bundle adjustment: 2 x 15 Jacobian blocks per observation",
         {"test": dict(n=3, m=4, p=7), "quick": dict(n=21, m=1000, p=4000),
          "full": dict(n=49, m=7776, p=31843)},
         loader.ba, ba.ba_objective, _ba_gradient, reference.ba_fd, ba.ba_hand),
    Eval("ht", "hand tracking (simple): 3 npts x 26 Jacobian, forward mode",
         {"test": dict(copies=1), "quick": dict(copies=1), "full": dict(copies=16)},
         loader.ht, ht.ht, _ht_gradient, _ht_reference),
    Eval("ode", "RK4 of the linear chain ODE, gradient of the last state",
         {"test": dict(n=8, s=3), "quick": dict(n=1000, s=10), "full": dict(n=10000, s=100)},
         loader.ode, simple.ode, _grad(simple.ode, (0,)), _fd(simple.ode, (0,)),
         simple.ode_hand),
    Eval("kmeans", "k-means cost: gradient J and Hessian diagonal (hvp with ones)",
         {"test": dict(n=20, k=3, d=2), "quick": dict(n=1000, k=10, d=8),
          "full": dict(n=10000, k=100, d=16)},
         loader.kmeans, kmeans.kmeans_cost, _kmeans_gradient,
         lambda p, c: reference.kmeans_fd(kmeans.kmeans_cost, p, c)),
    Eval("lse", "log-sum-exp with the max shift",
         {"test": dict(n=30), "quick": dict(n=80_000), "full": dict(n=1_280_000)},
         loader.lse, simple.lse, _grad(simple.lse, (0,)), _fd(simple.lse, (0,)),
         simple.lse_hand),
    Eval("llsq", "linear least squares, polynomial fit",
         {"test": dict(n=16, m=6), "quick": dict(n=1024, m=128),
          "full": dict(n=16392, m=128)},
         loader.llsq, simple.llsq, _grad(simple.llsq, (0,)), _fd(simple.llsq, (0,))),
    Eval("det", "determinant, loop over the ell! permutations",
         {"test": dict(ell=4), "quick": dict(ell=7), "full": dict(ell=9)},
         loader.det, simple.det, _grad(simple.det, (0,)), _fd(simple.det, (0,))),
    Eval("particle", "charged particle: d x0(t_f)^2 / dw over an Euler ODE driven by a "
         "gradient (nested)", {"test": dict(w=0.0), "quick": dict(w=0.0),
                               "full": dict(w=0.0)},
         nested.particle_inputs, nested.naive_euler, _grad(nested.naive_euler, (0,)),
         _fd(nested.naive_euler, (0,))),
    Eval("saddle", "saddle point: d max_y f(x, y) / dx, the max by 1000 gradient ascent "
         "steps (nested)", {k: dict(start=(1.0, 1.0)) for k in ("test", "quick", "full")},
         nested.saddle_inputs, nested.saddle_r1_cost, _grad(nested.saddle_r1_cost, (0,)),
         _fd(nested.saddle_r1_cost, (0,))),
)}

