"""The built-in primitives' facts besides their rules: one table, read through ``primitives``.

Rules (``operators``, ``elementwise``, ``arrays``) say how to differentiate; this
table says what kind of value each primitive returns, which spell the same thing,
which return views or fresh arrays, which are linear, what they cost, or allowed on the
device.  Ufuncs and ``math`` functions are elementwise and broadcast by default
(``primitives.record``); only what differs from the defaults is listed.
"""

import builtins
import math
import operator
import random

import numpy as np

from ..markers import nobacksies
from . import results
from .primitives import (
    BOOL,
    BROADCAST_KEEP,
    FLOAT,
    INT,
    REDUCE,
    SAME,
    Result,
    argument,
    declare,
    fixed,
)

# --- result kinds (how the class and ndim follow from the arguments) ---------------

declare(builtins.len, builtins.int, builtins.round, math.floor, math.ceil, math.trunc,
        np.argmax, np.argmin, np.int64, np.int32, np.intp, result=INT)
declare(builtins.float, np.float64, np.float32, result=FLOAT)
declare(builtins.bool, math.isnan, math.isinf, math.isfinite, result=BOOL)
declare(builtins.abs, np.copy, np.transpose, np.clip, np.zeros_like, np.ones_like,
        np.empty_like, np.full_like, result=SAME)
declare(np.ravel, result=Result("same", ndim=1))
declare(np.expand_dims, result=Result("same", ndim=results.added))
declare(np.sign, np.floor, np.ceil, np.trunc, np.rint, result=BROADCAST_KEEP)
declare(np.linspace, result=fixed("f", 1))
declare(np.eye, np.identity, np.outer, np.linalg.inv, result=fixed("f", 2))
declare(np.linalg.norm, np.trace, np.linalg.det, result=REDUCE)
declare(np.concatenate, np.hstack, result=Result("sequence", ndim=results.same))
declare(np.vstack, result=Result("sequence", ndim=results.at_least(2)))
declare(np.stack, result=Result("sequence", ndim=results.added))
declare(np.dot, np.matmul, operator.matmul, result=Result("dot"))
declare(np.linalg.solve, result=Result("solve"))
declare(np.zeros, np.ones, np.empty, np.full, result=Result("alloc"))
declare(np.arange, result=Result("arange"))
declare(np.reshape, result=Result("reshape"))
declare(np.cumsum, result=Result("cumsum"))
declare(np.where, result=Result("where"))
declare(nobacksies, result=argument(1))

# --- spellings: array methods and attributes ------------------------------------------

for fn, spelled in [(np.sum, "sum"), (np.mean, "mean"), (np.prod, "prod"), (np.max, "max"),
                    (np.min, "min"), (np.var, "var"), (np.std, "std"), (np.copy, "copy"),
                    (np.dot, "dot"), (np.reshape, "reshape"), (np.ravel, ("ravel", "flatten")),
                    (np.transpose, "transpose"), (np.cumsum, "cumsum"), (np.clip, "clip"),
                    (builtins.float, "item")]:
    declare(fn, methods=spelled)
for fn, spelled in [(np.transpose, "T"), (np.real, "real"), (np.imag, "imag"),
                    (np.shape, "shape"), (np.size, "size"), (np.ndim, "ndim"),
                    (np.dtype, "dtype")]:
    declare(fn, attrs=spelled)
declare(builtins.len, np.shape, np.size, np.ndim, np.dtype, query=True)

# --- memory: views of the first argument, freshly allocated arrays ---------------------

declare(np.reshape, np.ravel, np.transpose, np.atleast_1d, np.atleast_2d, np.atleast_3d,
        np.squeeze, np.diagonal, np.flip, np.fliplr, np.flipud, np.expand_dims, np.asarray,
        np.ascontiguousarray, np.asfortranarray, np.broadcast_to, np.swapaxes, view=True)
declare(np.zeros, np.empty, np.ones, np.full, np.zeros_like, np.empty_like, np.ones_like,
        np.full_like, np.copy, np.ndarray.copy, np.array, np.arange, np.linspace,
        allocates=True)

# --- cost of one scalar call (units of primitives.TAPE_COST, a tape round trip: 16) ---
# the reverse pass recomputes a value the adjoint needs when its recomputation costs
# no more than a tape round trip (analysis/cost.py); unlisted functions are never redone

declare(operator.add, operator.sub, operator.mul, operator.neg, operator.pos, np.add,
        np.subtract, np.multiply, np.negative, np.positive, np.square, builtins.abs, np.abs,
        np.absolute, np.fabs, math.fabs, builtins.min, builtins.max, np.minimum, np.maximum,
        np.fmin, np.fmax, np.sign, np.copysign, math.copysign, builtins.float, np.float64,
        builtins.int, builtins.bool, np.floor, np.ceil, np.trunc, math.floor, math.ceil,
        math.trunc, cost=1)
declare(operator.truediv, operator.floordiv, operator.mod, np.divide, np.true_divide,
        np.reciprocal, cost=4)
declare(np.sqrt, math.sqrt, cost=6)
declare(np.hypot, math.hypot, cost=10)
declare(np.exp, math.exp, np.expm1, math.expm1, np.exp2, np.log, math.log, np.log2,
        math.log2, np.log10, math.log10, np.log1p, math.log1p, np.sin, math.sin, np.cos,
        math.cos, np.tan, math.tan, np.arcsin, math.asin, np.arccos, math.acos, np.arctan,
        math.atan, np.arctan2, math.atan2, np.sinh, math.sinh, np.cosh, math.cosh, np.tanh,
        math.tanh, np.arcsinh, math.asinh, np.arccosh, math.acosh, np.arctanh, math.atanh,
        operator.pow, builtins.pow, math.pow, np.power, np.float_power, cost=20)

# --- random draws: another value each time (never recomputed; reruns replay the state) --

declare(*(f for n in dir(np.random) for f in [getattr(np.random, n)]
          if getattr(f, "__self__", None) is np.random.mtrand._rand),
        *(f for n in dir(random) for f in [getattr(random, n)]
          if getattr(f, "__self__", None) is random._inst),
        np.random.seed, random=True)

# --- linear (tangent = the primitive of the tangents) and elementwise ------------------

declare(operator.add, operator.sub, operator.neg, operator.pos, np.real,
        np.degrees, np.rad2deg, math.degrees, np.radians, np.deg2rad, math.radians,
        builtins.float, np.float64, np.float32,
        np.sum, np.ndarray.sum, np.mean, np.ndarray.mean, builtins.sum,
        np.trace, np.ndarray.trace, np.cumsum, np.ndarray.cumsum, np.diff,
        np.reshape, np.ravel, np.ndarray.ravel, np.expand_dims, np.transpose,
        np.ndarray.transpose, np.swapaxes, np.broadcast_to, np.atleast_1d, np.atleast_2d,
        np.atleast_3d, np.concatenate, np.stack, np.hstack, np.vstack, np.copy,
        np.ndarray.copy, np.array, np.asarray, np.ascontiguousarray, np.asfortranarray,
        np.diag, np.tril, np.triu, np.flip, np.fliplr, np.flipud, np.roll,
        operator.getitem, np.where, linear=True)
declare(np.add, np.subtract, np.negative, np.positive, linear=True)  # ufuncs: elementwise
declare(np.real, np.imag, np.where, np.clip, builtins.abs, builtins.pow, builtins.float,
        builtins.int, builtins.bool, builtins.round, np.float64, np.float32, np.int64,
        np.int32, np.intp, elementwise=True)

# --- device (CUDA) code: scalar math and operators; no allocation, no linear algebra ---

_OPERATORS = (operator.add, operator.sub, operator.mul, operator.truediv, operator.pow,
              operator.floordiv, operator.mod, operator.neg, operator.pos, operator.lt,
              operator.le, operator.gt, operator.ge, operator.eq, operator.ne, operator.not_,
              operator.and_, operator.or_, operator.xor, operator.invert)
declare(*_OPERATORS, elementwise=True, device=True)
declare(builtins.abs, builtins.pow, builtins.float, builtins.int, builtins.bool,
        builtins.round, builtins.min, builtins.max, builtins.len, builtins.range,
        operator.getitem, device=True)
# NumPy's scalar math: the CUDA lowering spells each as ``math``'s or a builtin
# (``backend/cuda.py``: NP_MATH, NP_BUILTIN); ufuncs default to host-only
declare(np.sin, np.cos, np.tan, np.arcsin, np.arccos, np.arctan, np.arctan2, np.sinh, np.cosh,
        np.tanh, np.arcsinh, np.arccosh, np.arctanh, np.exp, np.expm1, np.log, np.log2,
        np.log10, np.log1p, np.sqrt, np.hypot, np.copysign, np.fabs, np.floor, np.ceil,
        np.trunc, np.fmod, np.degrees, np.rad2deg, np.radians, np.deg2rad, np.isnan, np.isinf,
        np.isfinite, np.power, np.float_power, np.abs, np.absolute, np.minimum, np.maximum,
        np.fmin, np.fmax, np.float64, np.float32, np.int64, np.intp, np.square,
        np.reciprocal, np.sign, device=True)
