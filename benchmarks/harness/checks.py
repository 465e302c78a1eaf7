"""Gradient correctness checks: central finite differences and cross-tool agreement."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

AGREE_RTOL = 1e-6
#: absolute slack relative to the largest reference entry (guards near-zero entries)
AGREE_ATOL_SCALE = 1e-9


class GradientMismatch(AssertionError):
    """Two gradients (or a gradient and finite differences) disagree."""


def compare(got: Sequence[np.ndarray], ref: Sequence[np.ndarray], *,
            rtol: float = AGREE_RTOL, atol_scale: float = AGREE_ATOL_SCALE) -> float:
    """Check ``got`` against ``ref`` argument by argument.

    Passes when ``|got - ref| <= rtol * |ref| + atol_scale * max|ref|`` elementwise.
    Returns the worst normwise relative error ``max|got - ref| / max|ref|`` over the
    arguments; raises :class:`GradientMismatch` otherwise.
    """
    if len(got) != len(ref):
        raise GradientMismatch(f"expected {len(ref)} gradients, got {len(got)}")
    worst = 0.0
    for k, (g, r) in enumerate(zip(got, ref, strict=True)):
        g, r = np.asarray(g, dtype=np.float64), np.asarray(r, dtype=np.float64)
        if g.shape != r.shape:
            raise GradientMismatch(f"gradient {k}: shape {g.shape} != {r.shape}")
        atol = atol_scale * float(np.max(np.abs(r), initial=0.0))
        err = np.abs(g - r)
        bound = rtol * np.abs(r) + atol
        if not np.all(err <= bound) or not np.all(np.isfinite(g)):
            i = int(np.argmax(err - bound))
            raise GradientMismatch(
                f"gradient {k}: entry {i} got {g.flat[i]!r}, want {r.flat[i]!r} "
                f"(|diff| {err.flat[i]:.3g} > tol {bound.flat[i]:.3g})")
        scale = float(np.max(np.abs(r), initial=0.0)) or 1.0
        worst = max(worst, float(np.max(err, initial=0.0)) / scale)
    return worst


def finite_differences(f: Callable[..., float], args: tuple, wrt: Sequence[int], *,
                       max_entries: int = 40, seed: int = 0
                       ) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Central differences of scalar ``f`` at ``args`` for a sample of entries.

    Returns, per differentiated argument, the sampled flat indices and their
    estimated partial derivatives (step ``1e-6 * max(1, |x|)``).
    """
    rng = np.random.default_rng(seed)
    indices, values = [], []
    for a in wrt:
        base = np.array(args[a], dtype=np.float64)
        size = base.size
        idx = np.arange(size) if size <= max_entries else np.sort(
            rng.choice(size, max_entries, replace=False))
        est = np.empty(idx.size)
        for n, i in enumerate(idx):
            h = 1e-6 * max(1.0, abs(base.flat[i]))
            plus, minus = base.copy(), base.copy()
            plus.flat[i] += h
            minus.flat[i] -= h
            fp = f(*_replace(args, a, plus))
            fm = f(*_replace(args, a, minus))
            est[n] = (fp - fm) / (2.0 * h)
        indices.append(idx)
        values.append(est)
    return indices, values


def check_against_fd(f: Callable[..., float], grads: Sequence[np.ndarray], args: tuple,
                     wrt: Sequence[int], *, rtol: float = 1e-5, atol_scale: float = 1e-6) -> float:
    """Compare ``grads`` with central differences of ``f``; return the worst normwise
    relative error (see :func:`compare`)."""
    indices, fd = finite_differences(f, args, wrt)
    sampled = [np.asarray(g, dtype=np.float64).ravel()[i] for g, i in zip(grads, indices,
                                                                         strict=True)]
    return compare(sampled, fd, rtol=rtol, atol_scale=atol_scale)


def _replace(args: tuple, pos: int, value: np.ndarray) -> tuple:
    original = args[pos]
    new = value if np.ndim(original) else float(value)
    return args[:pos] + (new,) + args[pos + 1:]
