"""CUDA code jitgrad must refuse with a TransformError naming the line (user-style code).

``BAD``: (function, wrt, launch arguments or None for a device function, a fragment of
the expected message).
"""

import math

import numpy as np
from numba import cuda


def barrier(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = x[i]
        cuda.syncthreads()


def shared(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        s = cuda.shared.array(16, np.float64)
        s[0] = x[i]
        out[i] = s[0]


def atomics(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        cuda.atomic.add(out, 0, x[i])


def thread_idx(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = x[i] * cuda.threadIdx.x


def in_place(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        x[i] = x[i] * 2.0
        out[i] = x[i]


def other_index(x, out):
    i = cuda.grid(1)
    if i < x.shape[0] - 1:
        out[i + 1] = x[i]


def reads_output_elsewhere(x, out):
    i = cuda.grid(1)
    if i < x.shape[0] - 1:
        out[i] = x[i]
        out[i] = out[i] + x[i] * out[i + 1]


def no_guard(x, out):
    i = cuda.grid(1)
    out[i] = x[i]


def no_grid(x, out):
    i = cuda.threadIdx.x
    if i < x.shape[0]:
        out[i] = x[i]


def guard_else(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = x[i]
    else:
        out[0] = 0.0


def makes_array(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        row = x[i:i + 2] * 2.0
        out[i] = row[0]


def library_call(x, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = np.sum(x)


def device_loop_n(a, n):
    s = 0.0
    for t in range(n):
        s = s + math.sin(a * s + 1.0)
    return s


def device_uses_cuda(a):
    return a * cuda.threadIdx.x


def _x():
    return np.linspace(0.1, 0.9, 8)


@cuda.jit
def stride_break(x, out):
    for i in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
        if x[i] > 0.5:
            break
        out[i] = x[i] * 2.0


@cuda.jit
def stride_offset(x, out):
    for i in range(cuda.grid(1) + 1, x.shape[0], cuda.gridsize(1)):
        out[i] = x[i] * 2.0


BAD = [
    (stride_break, "x", lambda: (_x(), np.zeros(8)), "grid-stride loop"),
    (stride_offset, "x", lambda: (_x(), np.zeros(8)), "cuda.grid(1) + 1"),
    (barrier, "x", lambda: (_x(), np.zeros(8)), "syncthreads"),
    (shared, "x", lambda: (_x(), np.zeros(8)), "shared"),
    (atomics, "x", lambda: (_x(), np.zeros(8)), "atomic"),
    (thread_idx, "x", lambda: (_x(), np.zeros(8)), "threadIdx"),
    (in_place, "x", lambda: (_x(), np.zeros(8)), "both differentiated"),
    (other_index, "x", lambda: (_x(), np.zeros(8)), "index other than the thread's own"),
    (reads_output_elsewhere, "x", lambda: (_x(), np.zeros(8)), "read at an index other"),
    (no_guard, "x", lambda: (_x(), np.zeros(8)), "one guard"),
    (no_grid, "x", lambda: (_x(), np.zeros(8)), "threadIdx"),
    (guard_else, "x", lambda: (_x(), np.zeros(8)), "one guard"),
    (makes_array, "x", lambda: (_x(), np.zeros(8)), "cannot allocate"),
    (library_call, "x", lambda: (_x(), np.zeros(8)), "not allowed in CUDA device code"),
    (device_loop_n, 0, lambda: (0.5, 3), "not known when the device function is compiled"),
    (device_uses_cuda, 0, lambda: (0.5,), "threadIdx"),
]
