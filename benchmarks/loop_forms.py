"""Forms of gmm's triangle loops (``q_times_x``) and their adjoint, timed in one process.

``python benchmarks/loop_forms.py [--d 64] [--k 100] [--n 1000] [--repeats 5]``

Each form is a Numba kernel over ``n x k`` points and components, written as jitgrad
writes the loop (``generated``: an index carried from trip to trip, ``idx1 += 1``, and
an adjoint that runs descending, ``_dt9 += dout[j1] ... _dt9 = 0.0``, with a sum into
``_dxc_i1_sum``) and as it could be written, to find what keeps LLVM from vectorising:

* ``views``: the arrays read through views from the loop's first index, indexed by the
  trip ``u`` in ``[0, m)``: Numba's wrap of a negative index (a select per access, as
  neither ``idx1`` nor ``_n`` is known to be >= 0) is folded away. Same order: the
  same bits. ``views_up``: the adjoint's trips run upwards (its sum in another order).
* ``split`` (``split_up``): views, and the sum's terms stored to a buffer in the loop
  (no reduction left in it), added after it in the loop's order.
* ``split_lanes``: as ``split_up``, the buffer added by ``lane_sum`` (four interleaved
  sums).
* ``lanes_only``: the generated loop with its sum into four interleaved scalars
  (unrolled by four; the loop itself unchanged).
* ``no_sum``: views, upwards, the sum dropped (a wrong result; the floor of the loop).
* ``unsigned``: the generated loop as the ``unsigned`` backend step writes it, its indices
  read as ``np.uintp`` in a loop versioned on their least values being >= 0 (the
  generated loop otherwise); ``unsigned_lanes``: that, its sum into four interleaved
  scalars as ``lanes_only``.

Prints the median time of each, the load (``uptime``), and whether each result equals
the generated one bit for bit.
"""

# ruff: noqa: E741 - ``l`` is GradBench's name for gmm's lower-triangle parameters

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
from numba import njit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from jitgrad.kernels.helpers import lane_sum  # noqa: E402

OPTS = {"boundscheck": False, "error_model": "numpy"}


def _fwd(views: bool, unsigned: bool = False):
    """``out[j] += l[idx] * xc[i]`` over the triangle: ``idx`` carried from trip to trip
    (as generated), or through views from each loop's first index (``views``)."""

    @njit(**OPTS)
    def kernel(l, xc, out, n):
        d1 = xc.shape[0]
        for _ in range(n):
            for ik in range(l.shape[0]):
                lrow1 = l[ik]
                idx1 = 0
                for i1 in range(d1):
                    _n = i1 + 1
                    if unsigned and idx1 >= 0 and _n >= 0:
                        for j1 in range(_n, d1):
                            out[np.uintp(j1)] += lrow1[np.uintp(idx1)] * xc[i1]
                            idx1 = idx1 + 1
                    elif views:
                        m = max(d1 - _n, 0)
                        vl, vo = lrow1[idx1:], out[_n:]
                        for u in range(m):
                            vo[u] += vl[u] * xc[i1]
                        idx1 = idx1 + m
                    else:
                        for j1 in range(_n, d1):
                            out[j1] += lrow1[idx1] * xc[i1]
                            idx1 = idx1 + 1
        return out
    return kernel


@njit(**OPTS)
def adj_generated(l, xc, dout, dl, dxc, n):
    """The adjoint as jitgrad generates it (``f.source()`` of GradBench's gmm)."""
    d1 = xc.shape[0]
    _dt9 = 0.0
    for _ in range(n):
        for ik in range(l.shape[0]):
            dlrow1 = dl[ik]
            idx1 = d1 * (d1 - 1) // 2
            for i1 in range(d1 - 1, -1, -1):
                _n_1 = i1 + 1
                s = 0.0
                for j1 in range(d1 - 1, _n_1 - 1, -1):
                    idx1 = idx1 - 1
                    _dt9 += dout[j1]
                    _dt10 = _dt9 * xc[i1]
                    _dt11 = _dt9 * l[ik, idx1]
                    _dt9 = 0.0
                    s += _dt11
                    dlrow1[idx1] += _dt10
                if d1 > _n_1:
                    dxc[i1] += s
    return dxc


def _lanes_kernel(term, lanes: bool, versioned: bool):
    """``adj_generated`` with ``term`` for each trip (``lanes``: its sum into four
    interleaved scalars, unrolled by four; ``versioned``: under the test the ``unsigned``
    step versions the loop on, ``term`` reading unsigned)."""

    @njit(**OPTS)
    def kernel(l, xc, dout, dl, dxc, n):
        d1 = xc.shape[0]
        for _ in range(n):
            for ik in range(l.shape[0]):
                dlrow1 = dl[ik]
                idx1 = d1 * (d1 - 1) // 2
                for i1 in range(d1 - 1, -1, -1):
                    m = max(d1 - i1 - 1, 0)
                    if versioned and not (i1 + 1 >= 0 and idx1 + i1 + 1 - d1 >= 0):
                        raise ValueError("the generated loop's other version")
                    s0 = s1 = s2 = s3 = 0.0
                    j1 = d1 - 1
                    for _t in range(m // 4 if lanes else 0):
                        s0 += term(l, xc, dout, dlrow1, ik, i1, j1, idx1 - 1)
                        s1 += term(l, xc, dout, dlrow1, ik, i1, j1 - 1, idx1 - 2)
                        s2 += term(l, xc, dout, dlrow1, ik, i1, j1 - 2, idx1 - 3)
                        s3 += term(l, xc, dout, dlrow1, ik, i1, j1 - 3, idx1 - 4)
                        j1 -= 4
                        idx1 -= 4
                    for j2 in range(j1, i1, -1):
                        idx1 = idx1 - 1
                        s0 += term(l, xc, dout, dlrow1, ik, i1, j2, idx1)
                    if m > 0:
                        dxc[i1] += (s0 + s1) + (s2 + s3)
        return dxc
    return kernel


@njit(inline="always", **OPTS)
def _term(l, xc, dout, dlrow1, ik, i1, j1, idx1):
    g = dout[j1]
    dlrow1[idx1] += g * xc[i1]
    return g * l[ik, idx1]


@njit(inline="always", **OPTS)
def _uterm(l, xc, dout, dlrow1, ik, i1, j1, idx1):
    g = dout[np.uintp(j1)]
    dlrow1[np.uintp(idx1)] += g * xc[i1]
    return g * l[ik, np.uintp(idx1)]


adj_lanes_only = _lanes_kernel(_term, True, False)


def _adj_views(split: bool, lanes: bool, keep_sum: bool, ascending: bool):
    """The adjoint through views from each loop's first index (the flags are constants
    of the compiled kernel): ``split`` stores the terms of the sum to a buffer, added
    after the loop (by ``lane_sum`` where ``lanes``), ``keep_sum`` False drops the sum,
    ``ascending`` runs the trips upwards (the sum in another order)."""

    @njit(**OPTS)
    def kernel(l, xc, dout, dl, dxc, n):
        d1 = xc.shape[0]
        buf = np.empty(d1)
        for _ in range(n):
            for ik in range(l.shape[0]):
                lrow, dlrow1 = l[ik], dl[ik]
                idx1 = d1 * (d1 - 1) // 2
                for i1 in range(d1 - 1, -1, -1):
                    _n_1 = i1 + 1
                    m = max(d1 - _n_1, 0)
                    vd, vl, vdl = dout[_n_1:], lrow[idx1 - m:], dlrow1[idx1 - m:]
                    s = 0.0
                    for t in range(m):
                        u = t if ascending else m - 1 - t
                        g = vd[u]
                        if split:
                            buf[u] = g * vl[u]
                        elif keep_sum:
                            s += g * vl[u]
                        vdl[u] += g * xc[i1]
                    if split and lanes:
                        s += lane_sum(buf, m)
                    elif split:
                        for t in range(m):
                            s += buf[t if ascending else m - 1 - t]
                    idx1 = idx1 - m
                    if m > 0:
                        dxc[i1] += s
        return dxc
    return kernel


_FWD = {v: _fwd(v) for v in (False, True)}
_FWD_UNSIGNED = _fwd(False, True)


def forms(d: int, k: int, n: int) -> dict:
    """name -> a call of that form on fixed inputs (fresh outputs each call)."""
    rng = np.random.default_rng(0)
    l = rng.normal(size=(k, d * (d - 1) // 2))
    xc, dout = rng.normal(size=d), rng.normal(size=d)

    def adj(fn, *flags):
        return lambda: (fn(l, xc, dout, dl := np.zeros_like(l), np.zeros(d), n, *flags), dl)

    return {
        "fwd generated": lambda: _FWD[False](l, xc, np.zeros(d), n),
        "fwd views": lambda: _FWD[True](l, xc, np.zeros(d), n),
        "fwd unsigned": lambda: _FWD_UNSIGNED(l, xc, np.zeros(d), n),
        "adj generated": adj(adj_generated),
        "adj lanes_only": adj(adj_lanes_only),
        "adj views": adj(_adj_views(False, False, True, False)),
        "adj views_up": adj(_adj_views(False, False, True, True)),
        "adj split": adj(_adj_views(True, False, True, False)),
        "adj split_up": adj(_adj_views(True, False, True, True)),
        "adj split_lanes": adj(_adj_views(True, True, True, True)),
        "adj no_sum": adj(_adj_views(False, False, False, True)),
        "adj unsigned": adj(_lanes_kernel(_uterm, False, True)),
        "adj unsigned_lanes": adj(_lanes_kernel(_uterm, True, True)),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for flag, v in (("--d", 64), ("--k", 100), ("--n", 1000), ("--repeats", 5)):
        ap.add_argument(flag, type=int, default=v)
    a = ap.parse_args()
    fs = forms(a.d, a.k, a.n)
    first = {name: f() for name, f in fs.items()}  # (compiles each)
    times: dict[str, list[float]] = {name: [] for name in fs}
    for _ in range(a.repeats):
        for name, f in fs.items():
            t0 = time.perf_counter()
            f()
            times[name].append(time.perf_counter() - t0)
    print(f"d={a.d}, k={a.k}, n={a.n}; {os.popen('uptime').read().strip()}")
    for name, ts in times.items():
        base = first["fwd generated" if name.startswith("fwd") else "adj generated"]
        pairs = zip(_flat(first[name]), _flat(base), strict=True)
        same = all(np.array_equal(x, y) for x, y in pairs)
        print(f"{name:16} {np.median(ts) * 1e3:8.1f} ms  same bits: {same}")


def _flat(r) -> list:
    return list(r) if isinstance(r, tuple) else [r]


if __name__ == "__main__":
    main()
