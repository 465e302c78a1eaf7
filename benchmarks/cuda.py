"""CUDA adjoint kernels against the primal and a hand-written gather-form adjoint (one table).

    PYTHONPATH=. python benchmarks/cuda.py                  # a GPU: full sizes, CUDA events
    NUMBA_ENABLE_CUDASIM=1 PYTHONPATH=. python benchmarks/cuda.py --scale tiny   # smoke test

Three kernels: a 1-D stencil (n = 2^24), a per-thread loop (2^20 threads x 32 steps, its
adjoint with a per-thread local tape), a 2-D heat step (4096^2).  For each: the primal
launch, jitgrad's adjoint kernel (``step.vjp``'s launch, on buffers prepared outside the
timed region), and a hand-written adjoint in gather form (each thread computes its own
input's gradient: no atomics but the scalar's), timed as the median of several launches
after a warm-up, with CUDA events on a GPU (wall time in the simulator).  The gradients of
the two adjoints are compared before anything is timed.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from numba import cuda  # noqa: E402

import jitgrad as jg  # noqa: E402

SIM = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
SIZES = {"tiny": {"n": 64, "threads": 64, "steps": 4, "side": 8},
         "full": {"n": 1 << 24, "threads": 1 << 20, "steps": 32, "side": 4096}}

# --- the kernels, as users write them ------------------------------------------------------


@jg.differentiate(wrt=("x", "k"), target="cuda")
def stencil(x, k, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = x[i] * x[i + 1] + k * math.sin(x[i])


@jg.differentiate(wrt=("x", "k"), target="cuda")
def relax(x, k, steps, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        v = x[i]
        for _ in range(steps):
            v = v - k * math.sin(v)
        out[i] = v


@jg.differentiate(wrt=("u", "c"), target="cuda")
def heat(u, c, out):
    i, j = cuda.grid(2)
    if i >= 1 and i < u.shape[0] - 1 and j >= 1 and j < u.shape[1] - 1:
        out[i, j] = u[i, j] + c * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1]
                                   - 4.0 * u[i, j])


# --- hand-written gather-form adjoints ----------------------------------------------------


@cuda.jit
def stencil_hand(x, k, dout, dx, dk):
    j = cuda.grid(1)
    n = dout.shape[0]
    if j < x.shape[0]:
        g = 0.0
        if j < n:
            g += dout[j] * (x[j + 1] + k * math.cos(x[j]))
            cuda.atomic.add(dk, 0, dout[j] * math.sin(x[j]))
        if j >= 1 and j - 1 < n:
            g += dout[j - 1] * x[j - 1]
        dx[j] = g


@cuda.jit
def relax_hand(x, k, steps, dout, dx, dk):
    i = cuda.grid(1)
    if i < dout.shape[0]:
        tape = cuda.local.array(32, np.float64)
        v = x[i]
        for t in range(steps):
            tape[t] = v
            v = v - k * math.sin(v)
        dv = dout[i]
        g = 0.0
        for t in range(steps - 1, -1, -1):
            v = tape[t]
            g -= dv * math.sin(v)
            dv = dv * (1.0 - k * math.cos(v))
        dx[i] = dv
        cuda.atomic.add(dk, 0, g)


@cuda.jit
def heat_hand(u, c, dout, du, dc):
    i, j = cuda.grid(2)
    m, n = u.shape
    if i < m and j < n:
        g = 0.0
        if 1 <= i < m - 1 and 1 <= j < n - 1:
            g += dout[i, j] * (1.0 - 4.0 * c)
            lap = u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1] - 4.0 * u[i, j]
            cuda.atomic.add(dc, 0, dout[i, j] * lap)
        for a, b in ((i - 1, j), (i + 1, j), (i, j - 1), (i, j + 1)):
            if 1 <= a < m - 1 and 1 <= b < n - 1:
                g += c * dout[a, b]
        du[i, j] = g


# --- timing ----------------------------------------------------------------------------


def timed(launch, repeats: int) -> float:
    """Median seconds of ``launch()`` after a warm-up (CUDA events on a GPU)."""
    launch()
    out = []
    for _ in range(repeats):
        if SIM:
            t0 = time.perf_counter()
            launch()
            out.append(time.perf_counter() - t0)
        else:
            start, stop = cuda.event(), cuda.event()
            start.record()
            launch()
            stop.record()
            stop.synchronize()
            out.append(cuda.event_elapsed_time(start, stop) / 1e3)
    return float(np.median(out))


def _dev(a):
    return a if SIM else cuda.to_device(a)


def _host(a):
    return a.copy_to_host() if hasattr(a, "copy_to_host") else np.asarray(a)


def case(name, d, hand, args, config, hand_config, hand_args, repeats):
    """(name, primal s, jitgrad adjoint s, hand adjoint s, max |difference|)."""
    outs = d.outputs
    seeds = {o: _dev(np.random.default_rng(1).uniform(-1, 1, _host(args[d.params.index(o)])
                                                      .shape)) for o in outs}
    built, kargs, finish = d._launch_args(args, seeds)
    built.dispatcher[config](*kargs)
    ours = finish()
    dxh = _dev(np.zeros(_host(args[d.wrt_positions[0]]).shape))
    dkh = _dev(np.zeros(1))
    hargs = (*hand_args, seeds[outs[0]], dxh, dkh)
    hand[hand_config](*hargs)
    err = max(float(np.max(np.abs(_host(ours[0]) - _host(dxh)))),
              abs(ours[1] - float(_host(dkh)[0])))
    t_primal = timed(lambda: d[config](*args), repeats)
    t_ours = timed(lambda: built.dispatcher[config](*kargs), repeats)
    t_hand = timed(lambda: hand[hand_config](*hargs), repeats)
    return name, t_primal, t_ours, t_hand, err


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", choices=sorted(SIZES), default="tiny" if SIM else "full")
    ap.add_argument("--repeats", type=int, default=3 if SIM else 20)
    opt = ap.parse_args(argv)
    s = SIZES[opt.scale]
    rng = np.random.default_rng(0)
    tpb = 64 if SIM else 256
    rows = []
    n = s["n"]
    x = _dev(rng.uniform(-1, 1, n + 1))
    out = _dev(np.zeros(n))
    blocks = (n + tpb - 1) // tpb
    rows.append(case("stencil 1-D", stencil, stencil_hand, (x, 0.7, out), (blocks, tpb),
                     ((n + tpb) // tpb, tpb), (x, 0.7), opt.repeats))
    m = s["threads"]
    x = _dev(rng.uniform(-1, 1, m))
    out = _dev(np.zeros(m))
    blocks = (m + tpb - 1) // tpb
    rows.append(case(f"loop x{s['steps']}", relax, relax_hand, (x, 0.3, s["steps"], out),
                     (blocks, tpb), (blocks, tpb), (x, 0.3, s["steps"]), opt.repeats))
    side = s["side"]
    u = _dev(rng.uniform(-1, 1, (side, side)))
    out = _dev(np.zeros((side, side)))
    t2 = (8, 8) if SIM else (16, 16)
    b2 = ((side + t2[0] - 1) // t2[0], (side + t2[1] - 1) // t2[1])
    rows.append(case("heat 2-D", heat, heat_hand, (u, 0.2, out), (b2, t2), (b2, t2),
                     (u, 0.2), opt.repeats))
    where = "simulator (wall time: not a GPU measurement)" if SIM else "GPU (CUDA events)"
    print(f"CUDA adjoints, {opt.scale} sizes, {where}")
    print(f"{'kernel':<14}{'primal ms':>11}{'jitgrad ms':>12}{'hand ms':>10}"
          f"{'jitgrad/primal':>16}{'jitgrad/hand':>14}{'max |diff|':>12}")
    for name, tp, to, th, err in rows:
        print(f"{name:<14}{tp * 1e3:>11.3f}{to * 1e3:>12.3f}{th * 1e3:>10.3f}"
              f"{to / tp:>16.2f}{to / th:>14.2f}{err:>12.1e}")
    if max(r[4] for r in rows) > 1e-6 * max(1.0, n):
        sys.exit("the adjoints disagree")


if __name__ == "__main__":
    main()
