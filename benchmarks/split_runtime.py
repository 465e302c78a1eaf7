"""The unrolled GRU's gradient with its cell compiled once (split) against inlined.

Usage::

    python benchmarks/split_runtime.py [STEPS]     # default 4

Makes ``gru<STEPS>`` (``first_call_cases.gru_cell`` called STEPS times), and times its
``jg.grad`` (``jit=True``) both ways in this process: the first call (CPU seconds) and the
median of later calls; checks the two gradients agree, and that the split gradient of
``gru20`` equals the inlined one run as Python (``jit=False``: no 13-minute compile).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
import types
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

from first_call_cases import gru20, gru20_args  # noqa: E402

import jitgrad as jg  # noqa: E402
from jitgrad.transpiler.front import split  # noqa: E402

W = "Wz, Uz, Wr, Ur, Wh, Uh, b"
WRT = tuple(range(1, 9))


def gru_steps(n: int):
    """``gru20`` cut to ``n`` steps, in a file jitgrad can read."""
    calls = "".join(f"    h = gru_cell(h, xs[{i}], {W})\n" for i in range(n))
    tmp = Path(tempfile.mkdtemp(prefix="jitgrad_split_rt_"))
    (tmp / f"gru{n}.py").write_text(
        f"import numpy as np\nfrom first_call_cases import gru_cell\n\n\n"
        f"def gru{n}(xs, h0, {W}):\n    h = h0\n{calls}    return np.sum(h * h)\n")
    sys.path.insert(0, str(tmp))
    return getattr(__import__(f"gru{n}"), f"gru{n}")


def timed(f, args, inline: bool, jit: bool = True, repeat: int = 200):
    """(first call CPU s, median of later calls s, gradient), split or inlined."""
    old = split.SPLIT_SITES
    split.SPLIT_SITES = 10 ** 9 if inline else old
    try:
        fresh = types.FunctionType(f.__code__, f.__globals__, f.__name__)  # (nothing cached)
        g = jg.grad(fresh, wrt=WRT, jit=jit)
        c0 = time.process_time()
        out = g(*args)
        first = time.process_time() - c0
    finally:
        split.SPLIT_SITES = old
    runs = []
    for _ in range(repeat if jit else 0):
        t = time.perf_counter()
        g(*args)
        runs.append(time.perf_counter() - t)
    return first, statistics.median(runs) if runs else float("nan"), out


def main(steps: int) -> None:
    args = gru20_args(np.random.default_rng(0))
    f = gru_steps(steps)
    a = timed(f, args, inline=False)
    b = timed(f, args, inline=True)
    err = max(float(np.max(np.abs(x - y))) for x, y in zip(a[2], b[2], strict=True))
    print(f"gru{steps}: split first call {a[0]:.2f} CPU s, {a[1] * 1e6:.1f} us per call; "
          f"inlined {b[0]:.2f} CPU s, {b[1] * 1e6:.1f} us per call; ratio "
          f"{a[1] / b[1]:.2f}; max difference {err:.1e}")
    s = timed(gru20, args, inline=False, repeat=200)
    p = timed(gru20, args, inline=True, jit=False)
    err = max(float(np.max(np.abs(x - y))) for x, y in zip(s[2], p[2], strict=True))
    print(f"gru20: split first call {s[0]:.2f} CPU s, {s[1] * 1e6:.1f} us per call; max "
          f"difference from the inlined gradient (jit=False) {err:.1e}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 4)
