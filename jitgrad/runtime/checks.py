"""Finite-difference checks: ``ngradient``, ``gradcheck`` and ``gradcheck_report``."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .params import gradient
from .tracked import data

__all__ = ["gradcheck", "gradcheck_report", "ngradient"]

_STEP = np.finfo(np.float64).eps ** (1 / 3)  # optimal relative step for central differences


def _scalar(y: Any) -> float:
    v = data(y)
    if np.shape(v) != ():
        raise ValueError(f"ngradient needs f to return a scalar, got shape {np.shape(v)}")
    return float(np.asarray(v))


def ngradient(f: Callable[..., Any], *xs: Any) -> tuple[Any, ...]:
    """Central-difference gradient of scalar ``f`` at ``xs``, for every element of every input.

    The inputs are copied (never modified); scalar inputs give scalar gradients.
    """
    points = [np.array(data(x), dtype=np.float64) for x in xs]
    scalar = [np.ndim(data(x)) == 0 and not isinstance(data(x), np.ndarray) for x in xs]

    def call() -> float:
        args = [float(p) if s else p.copy() for p, s in zip(points, scalar, strict=True)]
        return _scalar(f(*args))

    grads = []
    for p, s in zip(points, scalar, strict=True):
        g = np.zeros_like(p)
        for idx in np.ndindex(p.shape):
            x0 = p[idx]
            h = _STEP * max(1.0, abs(x0))
            p[idx] = x0 + h
            up = call()
            p[idx] = x0 - h
            down = call()
            p[idx] = x0
            g[idx] = (up - down) / (2 * h)
        grads.append(float(g) if s else g)
    return tuple(grads)


def gradcheck_report(f: Callable[..., Any], *xs: Any, grads: Sequence[Any] | None = None,
                     rtol: float = 1e-5, atol: float = 1e-5) -> list[dict[str, Any]]:
    """Compare ``grads`` (default: ``gradient(f, *xs)``) with ``ngradient``, per argument.

    Each dict has ``index, shape, max_abs_err, max_rel_err, passed`` and, for the
    worst element, ``worst`` (its index), ``analytic`` and ``numeric``. An element
    passes when ``|analytic - numeric| <= atol + rtol * |numeric|``.
    """
    numeric = ngradient(f, *xs)
    analytic = gradient(f, *xs) if grads is None else tuple(grads)
    if len(analytic) != len(numeric):
        raise ValueError(f"{len(analytic)} gradients given for {len(numeric)} arguments")
    reports = []
    for i, (a, n) in enumerate(zip(analytic, numeric, strict=True)):
        n = np.asarray(n, dtype=np.float64)
        a = np.zeros_like(n) if a is None else np.asarray(data(a), dtype=np.float64)
        rep: dict[str, Any] = {"index": i, "shape": n.shape}
        if a.shape != n.shape:
            rep.update(max_abs_err=float("inf"), max_rel_err=float("inf"), passed=False,
                       worst=None, analytic=None, numeric=None)
            reports.append(rep)
            continue
        err = np.abs(a - n)
        scale = np.maximum(np.abs(a), np.abs(n))
        rel = np.divide(err, scale, out=np.zeros_like(err), where=scale > 0)
        rel[~np.isfinite(err)] = np.inf
        excess = np.where(np.isfinite(err), err - (atol + rtol * np.abs(n)), np.inf)
        worst = np.unravel_index(int(np.argmax(excess)), n.shape) if n.size else ()
        rep.update(
            max_abs_err=float(np.max(np.where(np.isfinite(err), err, np.inf))) if n.size else 0.0,
            max_rel_err=float(rel.max()) if n.size else 0.0,
            passed=bool(np.all(excess <= 0)),
            worst=tuple(int(k) for k in worst),
            analytic=float(a[worst]) if n.size else None,
            numeric=float(n[worst]) if n.size else None,
        )
        reports.append(rep)
    return reports


def gradcheck(f: Callable[..., Any], *xs: Any, rtol: float = 1e-5, atol: float = 1e-5) -> bool:
    """True if ``gradient(f, *xs)`` matches finite differences for every element.

    On failure, warns with the worst element of each failing argument.
    """
    reports = gradcheck_report(f, *xs, rtol=rtol, atol=atol)
    bad = [r for r in reports if not r["passed"]]
    if bad:
        lines = [f"argument {r['index']} (shape {r['shape']}): worst element {r['worst']}: "
                 f"analytic {r['analytic']!r} vs numeric {r['numeric']!r} "
                 f"(abs err {r['max_abs_err']:.3g}, rel err {r['max_rel_err']:.3g})"
                 for r in bad]
        warnings.warn("gradcheck failed:\n  " + "\n  ".join(lines), stacklevel=2)
    return not bad
