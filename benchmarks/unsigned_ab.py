"""jitgrad's gradient with and without the ``unsigned`` backend step, timed in one process.

``python benchmarks/unsigned_ab.py [--evals gmm,ba,...] [--size quick|full] [--d 64]``

For each GradBench eval: the gradient as jitgrad makes it now (``on``) and with the
``unsigned`` step left out of the backend list (``off``), and the hand-written adjoint
where the eval has one, called interleaved; prints median times, the ratio on/off, the
load (``uptime``), and whether the two gradients are equal bit for bit.
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
from jitgrad.transpiler.backend import passes  # noqa: E402


def _without_step(make):
    """``make(jit=True)`` built (and compiled, on first call) with the step a no-op."""
    k = next(i for i, p in enumerate(passes.BACKEND) if p.name == "unsigned")
    kept = passes.BACKEND[k]

    def build(*args):
        passes.BACKEND[k] = passes.BackendPass(kept.name, lambda s: None, kept.requires,
                                               kept.provides)
        try:
            g = make(True)
            out = g(*args)
        finally:
            passes.BACKEND[k] = kept
        return g, out
    return build


def _fresh(fn):
    """A copy of a plain function (so no transform made for ``fn`` is reused)."""
    return types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__,
                              fn.__closure__)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--evals", default="gmm")
    ap.add_argument("--size", default="quick")
    ap.add_argument("--d", type=int, default=0, help="gmm's d (0: the size's)")
    ap.add_argument("--repeats", type=int, default=7)
    a = ap.parse_args()
    for name in a.evals.split(","):
        e = EVALS[name]
        size = dict(e.sizes[a.size])
        if a.d and name == "gmm":
            size["d"] = a.d
        args = e.inputs(**size)
        on = e.gradient(True)
        out_on = on(*args)
        off, out_off = _without_step(e.gradient)(*args)
        calls = {"on": lambda: on(*args), "off": lambda: off(*args)}
        if e.hand is not None:
            calls["hand"] = lambda: e.hand(*args)
            calls["hand"]()
        ts: dict[str, list[float]] = {k: [] for k in calls}
        for _ in range(a.repeats):
            for k, f in calls.items():
                t0 = time.perf_counter()
                f()
                ts[k].append(time.perf_counter() - t0)
        med = {k: float(np.median(v)) for k, v in ts.items()}
        same = all(np.array_equal(x, y) for x, y in zip(_flat(out_on), _flat(out_off),
                                                        strict=True))
        print(f"{name} {size}; {os.popen('uptime').read().strip()}")
        line = "  ".join(f"{k} {v * 1e3:.2f} ms" for k, v in med.items())
        extra = f"  hand/on {med['on'] / med['hand']:.2f}x" if "hand" in med else ""
        print(f"  {line}  on/off {med['on'] / med['off']:.3f}{extra}  same bits: {same}")


def _flat(r) -> list:
    out = []
    for x in (r if isinstance(r, (tuple, list)) else [r]):
        out += _flat(x) if isinstance(x, (tuple, list)) else [np.asarray(x)]
    return out


if __name__ == "__main__":
    main()
