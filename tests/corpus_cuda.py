"""CUDA kernels and device functions the CUDA tests differentiate (user-style code).

Each ``CASES`` entry: (name, the differentiated kernel, a function making small launch
arguments, the launch configuration).  ``tests/cuda_sim.py`` runs them under the
simulator against central finite differences; ``tests/test_cuda.py`` reads their
generated source and compiles it to PTX.
"""

import ast
import math

import numpy as np
import numpy as onp
from numba import cuda

import jitgrad as jg
from jitgrad.rules.primitives import FLOAT

# --- kernels ----------------------------------------------------------------------------


@jg.differentiate(wrt=("x", "k"), target="cuda")
@cuda.jit
def stencil(x, k, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = x[i] * x[i + 1] + k * math.sin(x[i])


@jg.differentiate(wrt=("x", "k"), target="cuda")
def relax(x, k, steps, out):
    i = cuda.grid(1)
    if i >= out.shape[0]:
        return
    v = x[i]
    for t in range(steps):
        v = v - k * math.sin(v)
    out[i] = v * v


@jg.differentiate(wrt="x", target="cuda")
def gather(x, idx, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = x[idx[i]] ** 2 + x[i]


@jg.differentiate(wrt=("x", "a"), target="cuda")
def branch(x, a, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        if x[i] > 0.0:
            out[i] = a * x[i] * x[i]
        else:
            out[i] = math.exp(a * x[i])


@jg.differentiate(wrt=("u", "c"), target="cuda")
def heat(u, c, out):
    i, j = cuda.grid(2)
    if i >= 1 and i < u.shape[0] - 1 and j >= 1 and j < u.shape[1] - 1:
        out[i, j] = u[i, j] + c * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1]
                                   - 4.0 * u[i, j])


@cuda.jit(device=True)
def softplus(z):
    return math.log1p(math.exp(z))


@jg.differentiate(wrt=("x", "w"), target="cuda")
def calls_device(x, w, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = softplus(w * x[i])


@jg.differentiate(wrt="x", target="cuda")
def private(x, y, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = np.sin(x[i]) * y[i] + x[i] * x[i]


@jg.differentiate(wrt=("x", "y"), target="cuda")
def two_outputs(x, y, out, out2):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = x[i] * y[i]
        out2[i] = out[i] + math.cos(x[i])


@jg.differentiate(wrt=("a", "v"), target="cuda")
def matvec(a, v, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        s = 0.0
        for t in range(v.shape[0]):
            s += a[i, t] * math.tanh(v[t])
        out[i] = s


@jg.differentiate(wrt="c", target="cuda")
def accumulate(x, c, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = c * x[i]
        out[i] += math.sin(c * out[i])
        out[i] = out[i] * out[i]


@jg.differentiate(wrt=("u", "w"), target="cuda")
def box(u, w, out):
    i, j, m = cuda.grid(3)
    if i < u.shape[0] and j < u.shape[1] and m < u.shape[2] - 1:
        out[i, j, m] = w * u[i, j, m] * u[i, j, m + 1]


@jg.differentiate(wrt="x", target="cuda")
def while_loop(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        v = x[i]
        while v > 0.1:
            v = v * math.sin(v)
        out[i] = v


@jg.differentiate(wrt=("x", "k"), target="cuda")
def per_thread_trips(x, k, n, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        v = x[i]
        for t in range(n[i]):
            v = v - k * math.sin(v)
        out[i] = v


@jg.differentiate(wrt=("x", "k"), target="cuda")
def nested(x, k, m, n, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        v = x[i]
        for a in range(m):
            for b in range(n):
                v = v - k * math.sin(v + a)
        out[i] = v


def _smooth(a, b):
    if a > b:
        return a + math.log1p(math.exp(b - a))
    return b + math.log1p(math.exp(a - b))


# --- thread indices written out, grid-stride loops (issue 29 item 6) ----------------------


@jg.differentiate(wrt=("S", "vol"), target="cuda")
@cuda.jit
def black_scholes_like(S, vol, out):
    """Numba's Black-Scholes example indexes by hand and returns early."""
    i = cuda.threadIdx.x + cuda.blockIdx.x * cuda.blockDim.x
    if i >= S.shape[0]:
        return
    d1 = (math.log(S[i]) + 0.5 * vol * vol) / vol
    out[i] = S[i] * 0.5 * (1.0 + math.erf(d1 / math.sqrt(2.0)))


@jg.differentiate(wrt="A", target="cuda")
@cuda.jit
def jacobi_explicit(A, out):
    """Numba's Jacobi example: named parts, the other operand order, .y for rows."""
    tx = cuda.threadIdx.x
    bx = cuda.blockIdx.x
    bw = cuda.blockDim.x
    j = bx * bw + tx
    i = cuda.blockDim.y * cuda.blockIdx.y + cuda.threadIdx.y
    if 0 < j < A.shape[1] - 1 and 0 < i < A.shape[0] - 1:
        out[i, j] = 0.25 * (A[i, j + 1] + A[i, j - 1] + A[i - 1, j] + A[i + 1, j]) ** 2


@jg.differentiate(wrt=("x", "k"), target="cuda")
@cuda.jit
def grid_stride(x, k, out):
    """A grid-stride loop: fewer threads than elements, each doing several."""
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, out.shape[0], stride):
        out[i] = x[i] * x[i + 1] + k * math.sin(x[i])


@jg.differentiate(wrt="x", target="cuda")
@cuda.jit
def grid_stride_explicit(x, out):
    for i in range(cuda.threadIdx.x + cuda.blockIdx.x * cuda.blockDim.x, x.shape[0],
                   cuda.blockDim.x * cuda.gridDim.x):
        v = x[i]
        for t in range(3):
            v = v - 0.2 * math.sin(v)
        out[i] = v * v


def _rng(seed):
    return np.random.default_rng(seed)


CASES = [
    ("stencil", stencil, lambda: (_rng(1).uniform(-1, 1, 33), 0.7, np.zeros(32)), (2, 16)),
    ("relax", relax, lambda: (_rng(2).uniform(-1, 1, 24), 0.3, 5, np.zeros(24)), (2, 16)),
    ("gather", gather, lambda: (_rng(3).uniform(-1, 1, 16), np.array(
        [0, 3, 3, 3, 5, 1, 0, 15, 2, 2, 9, 9, 4, 4, 4, 7], dtype=np.int64), np.zeros(16)),
     (1, 16)),
    ("branch", branch, lambda: (_rng(4).uniform(-1, 1, 24), 0.9, np.zeros(24)), (2, 16)),
    ("heat", heat, lambda: (_rng(5).uniform(-1, 1, (6, 7)), 0.2, np.zeros((6, 7))),
     ((2, 2), (4, 4))),
    ("calls_device", calls_device, lambda: (_rng(6).uniform(-1, 1, 20), 0.8, np.zeros(20)),
     (2, 16)),
    ("private", private, lambda: (_rng(7).uniform(-1, 1, 20), _rng(8).uniform(-1, 1, 20),
                                  np.zeros(20)), (2, 16)),
    ("two_outputs", two_outputs, lambda: (_rng(9).uniform(-1, 1, 12),
                                          _rng(10).uniform(-1, 1, 12), np.zeros(12),
                                          np.zeros(12)), (1, 16)),
    ("matvec", matvec, lambda: (_rng(12).uniform(-1, 1, (10, 6)), _rng(13).uniform(-1, 1, 6),
                                np.zeros(10)), (1, 16)),
    ("accumulate", accumulate, lambda: (_rng(14).uniform(-1, 1, 12), 0.6, np.zeros(12)),
     (1, 16)),
    ("box3d", box, lambda: (_rng(15).uniform(-1, 1, (2, 3, 4)), 0.8, np.zeros((2, 3, 4))),
     ((1, 1, 1), (2, 3, 4))),
    ("while_loop", while_loop, lambda: (_rng(16).uniform(0.2, 1.2, 12), np.zeros(12)),
     (1, 16)),
    # up to 40 trips: the first launch overflows the 16-slot tapes and is run again
    ("per_thread_trips", per_thread_trips, lambda: (_rng(17).uniform(-1, 1, 10), 0.2,
                                                    np.array([0, 1, 3, 40, 7, 2, 17, 5, 9, 33]),
                                                    np.zeros(10)), (1, 16)),
    ("nested", nested, lambda: (_rng(18).uniform(-1, 1, 8), 0.3, 3, 4, np.zeros(8)), (1, 16)),
    ("stencil_f32", stencil, lambda: (_rng(11).uniform(-1, 1, 17).astype(np.float32),
                                      0.7, np.zeros(16, np.float32)), (1, 16)),
    ("black_scholes_like", black_scholes_like, lambda: (_rng(21).uniform(0.5, 2.0, 20), 0.4,
                                                        np.zeros(20)), (2, 16)),
    ("jacobi_explicit", jacobi_explicit, lambda: (_rng(22).uniform(-1, 1, (6, 7)),
                                                  np.zeros((6, 7))), ((2, 2), (4, 4))),
    ("grid_stride", grid_stride, lambda: (_rng(23).uniform(-1, 1, 33), 0.7, np.zeros(32)),
     (2, 4)),
    ("grid_stride_explicit", grid_stride_explicit, lambda: (_rng(24).uniform(-1, 1, 21),
                                                            np.zeros(21)), (1, 8)),
]

# --- device functions ---------------------------------------------------------------------


@jg.differentiate(wrt=(0, 1), target="cuda")
def mixed(a, b):
    return a * b + math.sin(a) * math.exp(-b)


@jg.differentiate(wrt=(0, 1), target="cuda")
def looped(a, b):
    s = a
    for t in range(6):
        if s > 0.0:
            s = s * b + np.sin(s)
        else:
            s = s - b * s * s
    return s * a


@jg.differentiate(wrt=0, target="cuda")
def with_n(a, n):
    s = 0.0
    for t in range(n):
        s = s + math.sin(a * s + 1.0)
    return s


@jg.differentiate(wrt=(0, 1), target="cuda")
def helped(a, b):
    return _smooth(a * b, a - b) * a


@jg.differentiate(wrt=(0, 1), target="cuda")
def spelled(a, b):
    """NumPy spellings device code writes as expressions (the table's ``device_rewrite``),
    reached through another name of numpy."""
    return onp.square(a - b) + onp.reciprocal(a * a + 1.0) * onp.sign(b) * onp.sign(a)


def step(x):
    """A user primitive with no gradient that device code writes as an expression."""
    return 1.0 if x > 0.0 else 0.0


def _step_on_device(args: list[ast.expr], names: dict[str, str]) -> ast.expr:
    return ast.IfExp(test=ast.Compare(left=args[0], ops=[ast.Gt()],
                                      comparators=[ast.Constant(value=0.0)]),
                     body=ast.Constant(value=1.0), orelse=ast.Constant(value=0.0))


jg.non_differentiable(step, device=True, result=FLOAT, device_rewrite=_step_on_device)


@jg.differentiate(wrt=(0, 1), target="cuda")
def stepped(a, b):
    return step(a) * b * b + a


DEVICE_CASES = [("mixed", mixed, (0.4, -0.7)), ("looped", looped, (0.3, 0.8)),
                ("looped_neg", looped, (-0.5, 0.6)), ("helped", helped, (0.7, 0.2)),
                ("helped_other_branch", helped, (-0.6, 0.9)),
                ("spelled", spelled, (0.4, -0.7)), ("spelled_neg", spelled, (-0.3, 0.5)),
                ("stepped", stepped, (0.4, -0.7)), ("stepped_off", stepped, (-0.4, 0.7))]
