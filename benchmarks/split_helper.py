"""The 20-step GRU's gradient with its cell's gradient compiled once (issue 31, by hand).

Usage::

    python benchmarks/split_helper.py [rule|acc|primal ...]

Writes two forms of ``first_call_cases.gru20``'s gradient to a temporary module, built
from jitgrad's own gradient of one cell (``jg.grad(...).source``), and times each one's
first call in a fresh process (CPU seconds):

* ``rule``: ``jg.grad_rule(gru_cell)`` whose pullback calls an ``@njit`` copy of that
  gradient (one gradient per argument), then ``jg.grad(gru20)``;
* ``acc``: the cell's gradient adding into the caller's adjoints
  (``cell_vjp_acc(h, x, W.., dy, dW..) -> dh``) and an unrolled driver of 20 forward
  calls and 20 adjoint calls, as a transpiler that does not inline the cell would emit;
* ``primal``: ``numba.njit(gru20)``.

Each form is checked against jitgrad's inlined gradient (``jit=False``) first.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
STEPS = 20
W = "Wz, Uz, Wr, Ur, Wh, Uh, b"
D = "dWz, dUz, dWr, dUr, dWh, dUh, db"
CHILD = r'''
import sys, time
sys.path[:0] = [{root!r}, {here!r}, {tmp!r}]
import numpy as np
import jitgrad as jg
from first_call_cases import gru20, gru20_args
args = gru20_args(np.random.default_rng(0))
import split_forms as m
form = {form!r}
ref = jg.grad(gru20, wrt=tuple(range(1, 9)), jit=False)(*args)
c0 = time.process_time()
if form == "primal":
    import numba
    numba.njit(gru20)(*args)
elif form == "rule":
    g = jg.grad(m.gru_rule, wrt=tuple(range(1, 9)))(*args)
else:
    g = m.gru_acc(*args)[1]
cpu = time.process_time() - c0
err = 0.0 if form == "primal" else max(float(np.max(np.abs(a - b))) for a, b in zip(g, ref))
print(f"{{form}}: {{cpu:.2f}} CPU s (max difference from the inlined gradient {{err:.1e}})")
'''


def cell_gradient_body() -> str:
    """The body of jitgrad's gradient of ``sum(gru_cell(...) * dy)``, seed 1."""
    sys.path[:0] = [str(ROOT), str(HERE)]
    import numpy as np
    from first_call_cases import gru20_args

    import jitgrad as jg

    args = gru20_args(np.random.default_rng(0))
    cell_args = (args[1], args[0][0], *args[2:], args[1])
    src = jg.grad(_cell_loss(), wrt=(0, 2, 3, 4, 5, 6, 7, 8), jit=False).source(*cell_args)
    return src.split("\n", 1)[1].replace("_dret", "1.0")


def _cell_loss():
    """``sum(gru_cell(h, x, ...) * dy)``, defined in a file jitgrad can read."""
    tmp = Path(tempfile.mkdtemp(prefix="jitgrad_split_"))
    (tmp / "cell_loss.py").write_text(
        "import numpy as np\nfrom first_call_cases import gru_cell\n\n\n"
        f"def cell_loss(h, x, {W}, dy):\n"
        f"    return np.sum(gru_cell(h, x, {W}) * dy)\n")
    sys.path.insert(0, str(tmp))
    return __import__("cell_loss").cell_loss


def module_source() -> str:
    """Both split forms, as one module."""
    body = cell_gradient_body()
    ret = f"    return (_t23, (dh, {D}))"
    assert ret in body, "jitgrad's gradient of the cell changed: update this script"
    vjp = body.replace(ret, f"    return dh, {D}")
    acc = body.replace(ret, "    return dh")
    for a in D.split(", "):
        acc = acc.replace(f"    {a} = np.zeros_like({a[1:]})\n", "")
    fwd = "".join(f"    h{i + 1} = gru_cell(h{i}, xs[{i}], {W})\n" for i in range(STEPS))
    rev = "".join(f"    dh{i} = cell_vjp_acc(h{i}, xs[{i}], {W}, dh{i + 1}, {D})\n"
                  for i in reversed(range(STEPS)))
    zeros = "".join(f"    {a} = np.zeros_like({a[1:]})\n" for a in D.split(", "))
    calls = "".join(f"    h = gru_cell(h, xs[{i}], {W})\n" for i in range(STEPS))
    return f'''import numpy as np
from numba import njit

import jitgrad as jg
from first_call_cases import gru_cell
from jitgrad.kernels.arrays import dot_grad_a, dot_grad_b, expand_along
from jitgrad.kernels.helpers import guard, unbroadcast


@njit
def cell_vjp(h, x, {W}, dy):
{vjp}

@jg.grad_rule(gru_cell)
def _gru_cell_rule(h, x, {W}):
    y = gru_cell(h, x, {W})

    def back(dy):
        g = cell_vjp(h, x, {W}, dy)
        return (g[0], None, g[1], g[2], g[3], g[4], g[5], g[6], g[7])

    return y, back


def gru_rule(xs, h0, {W}):
    h = h0
{calls}    return np.sum(h * h)


@njit
def cell_vjp_acc(h, x, {W}, dy, {D}):
{acc}

@njit
def gru_acc(xs, h0, {W}):
{fwd}    value = np.sum(h{STEPS} * h{STEPS})
    dh{STEPS} = 2.0 * h{STEPS}
{zeros}{rev}    return value, (dh0, {D})
'''


def main(forms: list[str]) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="jitgrad_split_"))
    (tmp / "split_forms.py").write_text(module_source())
    for form in forms:
        code = CHILD.format(root=str(ROOT), here=str(HERE), tmp=str(tmp), form=form)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        print(out.stdout.strip() or out.stderr.strip().splitlines()[-1], flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or ["acc", "rule", "primal"])
