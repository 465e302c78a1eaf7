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
from numba import prange

from ..kernels import arrays as K
from ..kernels import helpers as H
from ..kernels import ieee
from ..kernels import revolve as R
from ..kernels import tangents as T
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
        np.ascontiguousarray, np.asfortranarray, np.broadcast_to, np.swapaxes, H.tape_from,
        view=True)
declare(np.zeros, np.empty, np.ones, np.full, np.zeros_like, np.empty_like, np.ones_like,
        np.full_like, np.copy, np.ndarray.copy, np.array, np.arange, np.linspace,
        H.zeros_like, H.snapshot, H.shape_stand_in, allocates=True)
declare(np.copy, np.ndarray.copy, np.array, H.snapshot, copies=True)
# fresh arrays of an argument's shape (besides those of its kind: ``np.zeros_like``), the
# values allocations from a shape start with, and sums of an array's elements
declare(H.zeros_like, H.shape_stand_in, shape_of=0)
declare(R.load_ref, shape_of=2)  # (the snapshot of a loop's state, shaped like the state)
declare(K.reshape_like, shape_of=1)  # (a cotangent reshaped to the primal's shape)
declare(np.zeros, np.zeros_like, H.zeros_like, fill=0.0)
declare(np.ones, fill=1.0)
declare(np.empty, np.empty_like, uninitialised=True)  # (their elements: what memory held)
declare(np.sum, sums=True)
# results that share no argument's buffer, besides fresh arrays: numbers and ranges
declare(builtins.range, prange, builtins.len, builtins.int, builtins.float, builtins.bool,
        builtins.abs, builtins.min, builtins.max, builtins.round, fresh=True)
# called on scalars as on arrays by compiled code (besides ufuncs and ``math``: elements.py;
# ``np.where`` becomes a conditional expression there)
declare(H.guard, K.select, np.where, builtins.abs, on_scalars=True)
# calls compiled code makes through a helper cached on disk (backend/cached_calls.py)
declare(np.zeros_like, cached_as="np_zeros_like")
declare(np.empty_like, cached_as="np_empty_like")
declare(operator.matmul, cached_as="np_matmul")  # (``a @ b``)
# generated code's in-place copies: (destination, source) arguments
declare(H.restore_into, H.copy_into, copies_into=(0, 1))
declare(R.store_slot, copies_into=(0, 2))
declare(R.load_slot, copies_into=(0, 1))
# methods that change the array or list they are called on (their spelling is all a pass
# sees of a method call: ``xs.pop()``, ``a.sort()``)
declare(np.ndarray.sort, np.ndarray.fill, np.ndarray.resize, np.ndarray.put,
        np.ndarray.partition, np.ndarray.setfield, np.ndarray.byteswap,
        *(getattr(np.ndarray, m) for m in ("itemset",) if hasattr(np.ndarray, m)),
        list.append, list.pop, list.extend, list.insert, list.remove, list.clear,
        list.reverse, list.sort, mutates=True)
# results provably larger or smaller than an array among the arguments
declare(np.concatenate, np.append, np.hstack, np.vstack, np.stack, np.diff, reshapes=True)
# helpers of generated code that read an argument only for its shape and dtype
declare(H.unbroadcast, K.expand_along, shape_args=(1,))

# --- pure: a call only computes a value (no out=); by default ufuncs, math, primitives ---
# with a gradient rule (``grad_rule``); the rest say so (``non_differentiable(..., pure=)``)
# helpers of generated code that only read their arguments
declare(H.tape_get, H.tape_from, H.lane_sum, H.broadcast_like, H.shape_stand_in, H.snapshot,
        H.pow_log, H.digamma,
        K.reduce_mean, K.reduce_prod, K.centered, K.prod_others, K.cumsum_along, K.shaped_like,
        K.transpose_back, K.split_like, K.scatter_add, K.mixed_dot, K.mixed_solve,
        K.in_dtype_of, K.sort_along, K.unsort, K.flip_along, K.diag_back, K.spread,
        K.extreme_at, K.pick, K.diff_back, T.pick_tangent, T.sort_tangent, T.trigamma,
        T.prod_others_tangent, pure=True)
# the arguments a helper is linear in, each on its own: zero where any one is (zero_skip)
declare(H.unbroadcast, K.expand_along, K.dot_grad_a, K.dot_grad_b, builtins.float,
        linear_in=(0,))
declare(H.guard, linear_in=(0, 1))
# calls made for their effect that write no array out of the reverse sweep's sight: output,
# a shape check, and generated code's own snapshot and slot copies (analysis/effects.py)
declare(builtins.print, H.same_shape, H.restore_into, H.copy_into, R.store_slot, R.load_slot,
        prange, hides_writes=False)

# --- cost of one scalar call (units of primitives.TAPE_COST, a tape round trip: 16) ---
# the reverse pass recomputes a value the adjoint needs when its recomputation costs
# no more than a tape round trip (analysis/cost.py); unlisted functions are never redone

declare(operator.add, operator.sub, operator.mul, operator.neg, operator.pos, np.add,
        np.subtract, np.multiply, np.negative, np.positive, np.square, builtins.abs, np.abs,
        np.absolute, np.fabs, math.fabs, builtins.min, builtins.max, np.minimum, np.maximum,
        np.fmin, np.fmax, np.sign, np.copysign, math.copysign, builtins.float, np.float64,
        builtins.int, builtins.bool, np.floor, np.ceil, np.trunc, math.floor, math.ceil,
        math.trunc, np.where, H.guard, K.select, cost=1)
declare(operator.truediv, operator.floordiv, operator.mod, np.divide, np.true_divide,
        np.reciprocal, cost=4)
declare(np.sqrt, math.sqrt, cost=6)
declare(np.sqrt, math.sqrt, power=0.5)  # (u ** 0.5: modes/fused.py's 1 / sqrt(u))
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
# where a draw's size argument is (kind inference: its ndim is the size's length)
for fn, k in [(np.random.rand, -1), (np.random.randn, -1), (np.random.random, 0),
              (np.random.random_sample, 0), (np.random.standard_normal, 0),
              (np.random.normal, 2), (np.random.uniform, 2), (np.random.exponential, 1)]:
    declare(fn, size_arg=k)
declare(np.random.randint, size_arg=2, result=INT)  # (integers)

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
# generated code's masks, element by element (``select`` only makes its result)
declare(H.guard, K.select, elementwise=True)
declare(np.real, np.imag, np.where, np.clip, builtins.abs, builtins.pow, builtins.float,
        builtins.int, builtins.bool, builtins.round, np.float64, np.float32, np.int64,
        np.int32, np.intp, elementwise=True)

# --- device (CUDA) code: scalar math and operators; no allocation, no linear algebra ---

_OPERATORS = (operator.add, operator.sub, operator.mul, operator.truediv, operator.pow,
              operator.floordiv, operator.mod, operator.neg, operator.pos, operator.lt,
              operator.le, operator.gt, operator.ge, operator.eq, operator.ne, operator.not_,
              operator.and_, operator.or_, operator.xor, operator.invert)
declare(*_OPERATORS, elementwise=True, device=True)
declare(builtins.pow, operator.getitem, device=True)
for fn in (builtins.abs, builtins.float, builtins.int, builtins.bool, builtins.round,
           builtins.min, builtins.max, builtins.len, builtins.range):
    declare(fn, device=True, device_as=fn.__name__)  # (generated device code calls these)
# NumPy's scalar math: the CUDA lowering spells each as ``math``'s or a builtin
# (``device_as``; the rest as expressions: ``device_rewrite``, declared beside the CUDA
# lowering in ``backend/device_rewrites.py``); ufuncs default to host-only
for fn, spelled in [
        (np.sin, "sin"), (np.cos, "cos"), (np.tan, "tan"), (np.arcsin, "asin"),
        (np.arccos, "acos"), (np.arctan, "atan"), (np.arctan2, "atan2"), (np.sinh, "sinh"),
        (np.cosh, "cosh"), (np.tanh, "tanh"), (np.arcsinh, "asinh"), (np.arccosh, "acosh"),
        (np.arctanh, "atanh"), (np.exp, "exp"), (np.expm1, "expm1"), (np.log, "log"),
        (np.log2, "log2"), (np.log10, "log10"), (np.log1p, "log1p"), (np.sqrt, "sqrt"),
        (np.hypot, "hypot"), (np.copysign, "copysign"), (np.fabs, "fabs"),
        (np.floor, "floor"), (np.ceil, "ceil"), (np.trunc, "trunc"), (np.fmod, "fmod"),
        (np.degrees, "degrees"), (np.rad2deg, "degrees"), (np.radians, "radians"),
        (np.deg2rad, "radians"), (np.isnan, "isnan"), (np.isinf, "isinf"),
        (np.isfinite, "isfinite"), (np.power, "pow"), (np.float_power, "pow")]:
    declare(fn, device=True, device_as=f"math.{spelled}")
for fn, spelled in [(np.abs, "abs"), (np.absolute, "abs"), (np.minimum, "min"),
                    (np.maximum, "max"), (np.fmin, "min"), (np.fmax, "max"),
                    (np.float64, "float"), (np.int64, "int"), (np.intp, "int")]:
    declare(fn, device=True, device_as=spelled)
declare(np.float32, np.square, np.reciprocal, np.sign, device=True)

# --- plain Python (jit=False): math functions that raise where compiled code gives inf/nan

for fn, twin in [
        (math.sqrt, ieee.np1(np.sqrt)), (math.exp, ieee.np1(np.exp)),
        (math.expm1, ieee.np1(np.expm1)), (math.log, ieee.log),
        (math.log1p, ieee.np1(np.log1p)), (math.log10, ieee.np1(np.log10)),
        (math.log2, ieee.np1(np.log2)), (math.sin, ieee.np1(np.sin)),
        (math.cos, ieee.np1(np.cos)), (math.tan, ieee.np1(np.tan)),
        (math.asin, ieee.np1(np.arcsin)), (math.acos, ieee.np1(np.arccos)),
        (math.atan, ieee.np1(np.arctan)), (math.sinh, ieee.np1(np.sinh)),
        (math.cosh, ieee.np1(np.cosh)), (math.tanh, ieee.np1(np.tanh)),
        (math.asinh, ieee.np1(np.arcsinh)), (math.acosh, ieee.np1(np.arccosh)),
        (math.atanh, ieee.np1(np.arctanh)), (math.fabs, ieee.np1(np.fabs)),
        (math.atan2, ieee.np2(np.arctan2)), (math.hypot, ieee.np2(np.hypot)),
        (math.pow, ieee.np2(np.power)), (math.fmod, ieee.np2(np.fmod)),
        (math.copysign, ieee.np2(np.copysign)), (math.erf, ieee.guarded(math.erf)),
        (math.erfc, ieee.guarded(math.erfc)), (math.gamma, ieee.gamma),
        (math.lgamma, ieee.lgamma), (math.ldexp, ieee.ldexp),
        *((getattr(math, n), ieee.np1(getattr(np, n))) for n in ("exp2", "cbrt")
          if hasattr(np, n) and hasattr(math, n))]:
    declare(fn, ieee=twin)
