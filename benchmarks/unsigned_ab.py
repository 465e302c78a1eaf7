"""jitgrad's gradient with and without the ``unsigned`` backend step, timed in one process.

``python benchmarks/unsigned_ab.py [--evals gmm,ba,...] [--workloads heat,...]
[--size quick|full] [--d 64]``

For each GradBench eval (``--evals``) and workload of ``run.py`` (``--workloads``, at
its ``quick`` or ``full`` size): the gradient as jitgrad makes it now (``on``) and with the
``unsigned`` step left out of the backend list (``off``), and the hand-written adjoint
where the eval has one, called interleaved; prints median times, the median of the
rounds' ratios on/off, the load (``uptime``), and whether the two gradients are equal bit
for bit.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import types
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.gradbench.evals import EVALS  # noqa: E402
from jitgrad import api  # noqa: E402
from jitgrad.transpiler.backend import passes  # noqa: E402

#: the least time one timing sample lasts (short calls are repeated within a sample)
MIN_SAMPLE_S = 0.05


def _without_step(make):
    """``make(jit=True)`` built (and compiled, on first call) with the step a no-op."""
    k = next(i for i, p in enumerate(passes.BACKEND) if p.name == "unsigned")
    kept = passes.BACKEND[k]

    def build(*args):
        passes.BACKEND[k] = passes.BackendPass(kept.name, lambda s: None, kept.requires,
                                               kept.provides)
        made = dict(api._MADE)  # (``jg.grad`` of a module's function shares its code)
        api._MADE.clear()
        try:
            g = make(True)
            out = g(*args)
        finally:
            passes.BACKEND[k] = kept
            api._MADE.clear()
            api._MADE.update(made)
        return g, out
    return build


def _fresh(fn):
    """A copy of a plain function (so no transform made for ``fn`` is reused)."""
    return types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__,
                              fn.__closure__)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--evals", default="gmm")
    ap.add_argument("--workloads", default="")
    ap.add_argument("--size", default="quick")
    ap.add_argument("--d", type=int, default=0, help="gmm's d (0: the size's)")
    ap.add_argument("--repeats", type=int, default=15)
    a = ap.parse_args()
    for name in filter(None, a.evals.split(",")):
        e = EVALS[name]
        size = dict(e.sizes[a.size])
        if a.d and name == "gmm":
            size["d"] = a.d
        _compare(f"{name} {size}", e.gradient, e.inputs(**size), e.hand, a.repeats)
    if a.workloads:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from numba import njit
        from workloads import WORKLOADS

        import jitgrad as jg
        for name in a.workloads.split(","):
            w = WORKLOADS[name]
            f = _fresh(w.primal)
            make = (lambda f, w: lambda jit: jg.grad(_fresh(f), wrt=w.wrt, jit=jit))(f, w)
            _compare(f"{name} {w.sizes[a.size]}", make, w.args(a.size), njit(w.adjoint)
                     if not hasattr(w.adjoint, "py_func") else w.adjoint, a.repeats)


def _compare(title: str, make, args: tuple, hand, repeats: int) -> None:
    """Time ``make(True)`` with and without the step (and ``hand``), interleaved."""
    on = make(True)
    out_on = on(*args)
    off, out_off = _without_step(make)(*args)
    calls = {"on": lambda: on(*args), "off": lambda: off(*args)}
    if hand is not None:
        calls["hand"] = lambda: hand(*args)
        calls["hand"]()
    reps = {k: _reps(f) for k, f in calls.items()}
    ts: dict[str, list[float]] = {k: [] for k in calls}
    for _ in range(repeats):
        for k, f in calls.items():
            t0 = time.perf_counter()
            for _ in range(reps[k]):
                f()
            ts[k].append((time.perf_counter() - t0) / reps[k])
    med = {k: float(np.median(v)) for k, v in ts.items()}
    ratio = float(np.median(np.array(ts["on"]) / np.array(ts["off"])))  # (per round)
    same = all(np.array_equal(x, y) for x, y in zip(_flat(out_on), _flat(out_off),
                                                    strict=True))
    print(f"{title}; {os.popen('uptime').read().strip()}")
    line = "  ".join(f"{k} {v * 1e3:.2f} ms" for k, v in med.items())
    extra = f"  on/hand {med['on'] / med['hand']:.2f}x" if "hand" in med else ""
    print(f"  {line}  on/off {ratio:.3f}{extra}  same bits: {same}",
          flush=True)


def _reps(f) -> int:
    """How many calls of ``f`` one sample makes: about ``MIN_SAMPLE_S`` (a lone short call
    on a loaded machine reads many times its time)."""
    t0 = time.perf_counter()
    f()
    return max(1, int(MIN_SAMPLE_S / max(time.perf_counter() - t0, 1e-6)))


def _flat(r) -> list:
    out = []
    for x in (r if isinstance(r, (tuple, list)) else [r]):
        out += _flat(x) if isinstance(x, (tuple, list)) else [np.asarray(x)]
    return out


if __name__ == "__main__":
    main()
