"""Run the CUDA corpus under the CUDA simulator and print one JSON result per case.

Run as ``NUMBA_ENABLE_CUDASIM=1 python tests/cuda_sim.py [names...]`` (the variable must
be set before numba is imported: ``tests/test_cuda.py`` starts this script in a
subprocess).  Each kernel's adjoint is compared with central finite differences of
the primal launch for every input element and scalar; each device function, called
from a kernel, with finite differences of the Python function.
"""

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
    sys.exit("set NUMBA_ENABLE_CUDASIM=1 before running this script")

import corpus_cuda as C  # noqa: E402
from numba import cuda  # noqa: E402


def _loss(kernel, config, args, seeds):
    """sum(seed * output) after one primal launch on fresh copies."""
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    kernel[config](*args)
    total = 0.0
    for o, s in seeds.items():
        total += float(np.sum(np.asarray(args[kernel.params.index(o)], np.float64) * s))
    return total


def _fd(kernel, config, args, seeds, wrt, eps=1e-6):
    """Central differences of ``_loss`` for every element of each ``wrt`` argument."""
    out = []
    for w in wrt:
        p = kernel.params.index(w)
        a = args[p]
        if isinstance(a, np.ndarray):
            g = np.zeros(a.shape)
            for idx in np.ndindex(a.shape):
                hi = [x.copy() if isinstance(x, np.ndarray) else x for x in args]
                lo = [x.copy() if isinstance(x, np.ndarray) else x for x in args]
                hi[p][idx] += eps
                lo[p][idx] -= eps
                g[idx] = (_loss(kernel, config, hi, seeds) - _loss(kernel, config, lo, seeds)) \
                    / (2 * eps)
            out.append(g)
        else:
            hi, lo = list(args), list(args)
            hi[p] = a + eps
            lo[p] = a - eps
            out.append((_loss(kernel, config, hi, seeds) - _loss(kernel, config, lo, seeds))
                       / (2 * eps))
    return out


def kernel_case(name, kernel, make, config):
    args = list(make())
    rng = np.random.default_rng(len(name))
    outs = kernel.outputs
    seeds = {o: rng.uniform(-1, 1, args[kernel.params.index(o)].shape) for o in outs}
    wrt = [kernel.params[i] for i in kernel.wrt_positions]
    before = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    f32 = any(isinstance(a, np.ndarray) and a.dtype == np.float32 for a in args)
    cot = {o: s.astype(args[kernel.params.index(o)].dtype) for o, s in seeds.items()}
    got = kernel.vjp[config](*args, cotangents=cot)
    got = got if isinstance(got, tuple) else (got,)
    again = kernel.vjp[config](*args, cotangents=cot)
    again = again if isinstance(again, tuple) else (again,)
    unchanged = all(np.array_equal(a, b) for a, b in zip(args, before, strict=True))
    repeat = all(np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(got, again,
                                                                            strict=True))
    dtypes_ok = all(not isinstance(args[kernel.params.index(w)], np.ndarray)
                    or g.dtype == args[kernel.params.index(w)].dtype for w, g in zip(wrt, got,
                                                                                     strict=True))
    scalars_ok = all(isinstance(g, float) for w, g in zip(wrt, got, strict=True)
                     if not isinstance(args[kernel.params.index(w)], np.ndarray))
    if f32:  # the reference: the float64 adjoint (finite differences in float32 are noise)
        args64 = [a.astype(np.float64) if isinstance(a, np.ndarray) and a.dtype.kind == "f"
                  else a for a in args]
        want = kernel.vjp[config](*args64, cotangents={o: s.astype(np.float64)
                                                       for o, s in cot.items()})
        want = want if isinstance(want, tuple) else (want,)
        tol = 1e-4
    else:
        want = _fd(kernel, config, args, seeds, wrt)
        tol = 1e-6
    err = max(float(np.max(np.abs(np.asarray(g, np.float64) - np.asarray(w))))
              for g, w in zip(got, want, strict=True))
    scale = max(float(np.max(np.abs(np.asarray(w)))) for w in want)
    return {"name": name, "err": err, "scale": scale, "tol": tol, "unchanged": unchanged,
            "repeat": repeat, "dtypes": dtypes_ok, "scalars": scalars_ok,
            "regrown": bool(kernel._checked)}


def device_case(name, fn, point):
    dg = fn.device_grad
    n = len(point)

    @cuda.jit
    def use(a, b, out):
        i = cuda.grid(1)
        if i < a.shape[0]:
            v, (da, db) = dg(a[i], b[i], 1.0)
            out[i, 0] = v
            out[i, 1] = da
            out[i, 2] = db

    assert n == 2
    a = np.array([point[0], point[0] + 0.1])
    b = np.array([point[1], point[1] - 0.2])
    out = np.zeros((2, 3))
    use[1, 2](a, b, out)
    eps = 1e-6
    err = 0.0
    for k in range(2):
        f = fn.func
        want = [f(a[k], b[k]),
                (f(a[k] + eps, b[k]) - f(a[k] - eps, b[k])) / (2 * eps),
                (f(a[k], b[k] + eps) - f(a[k], b[k] - eps)) / (2 * eps)]
        err = max(err, float(np.max(np.abs(out[k] - np.array(want)))))
    return {"name": name, "err": err, "scale": 1.0, "tol": 1e-6, "unchanged": True,
            "repeat": True, "dtypes": True, "scalars": True}


def device_arrays_case():
    """Device arrays in, device arrays out, the same gradients as NumPy in."""
    x, k, out = C.CASES[0][2]()
    dout = np.random.default_rng(0).uniform(-1, 1, out.shape)
    want = C.stencil.vjp[2, 16](x, k, out, cotangents={"out": dout})
    xd, outd, doutd = cuda.to_device(x), cuda.to_device(out), cuda.to_device(dout)
    dx, dk = C.stencil.vjp[2, 16](xd, k, outd, cotangents={"out": doutd})
    placed = hasattr(dx, "copy_to_host") and isinstance(dk, float)
    err = max(float(np.max(np.abs(dx.copy_to_host() - want[0]))), abs(dk - want[1]))
    unchanged = np.array_equal(xd.copy_to_host(), x) and np.array_equal(doutd.copy_to_host(),
                                                                        dout)
    return {"name": "device_arrays", "err": err, "scale": 1.0, "tol": 1e-12,
            "unchanged": bool(unchanged), "repeat": True, "dtypes": bool(placed),
            "scalars": True}


def float32_device_case():
    """A float32 device function against the float64 one."""
    f32 = C.mixed.device_function(np.float32(0.5), np.float32(0.25))
    f64 = C.mixed.device_grad

    @cuda.jit
    def use(a, b, out32, out64):
        i = cuda.grid(1)
        if i < a.shape[0]:
            v, (da, db) = f32(a[i], b[i], np.float32(1.0))
            out32[i, 0] = da
            out32[i, 1] = db
            v, (da, db) = f64(np.float64(a[i]), np.float64(b[i]), 1.0)
            out64[i, 0] = da
            out64[i, 1] = db

    a = np.array([0.5, 0.2, -0.4], np.float32)
    b = np.array([0.25, -0.3, 0.9], np.float32)
    o32, o64 = np.zeros((3, 2), np.float32), np.zeros((3, 2))
    use[1, 3](a, b, o32, o64)
    return {"name": "device_float32", "err": float(np.max(np.abs(o32 - o64))), "scale": 1.0,
            "tol": 1e-5, "unchanged": True, "repeat": True, "dtypes": True, "scalars": True}


EXTRA = {"device_arrays": device_arrays_case, "device_float32": float32_device_case}


def main(names):
    for name, case in EXTRA.items():
        if not names or name in names:
            try:
                res = case()
            except Exception as e:
                res = {"name": name, "error": f"{type(e).__name__}: {e}"}
            print(json.dumps(res), flush=True)
    for name, kernel, make, config in C.CASES:
        if not names or name in names:
            try:
                res = kernel_case(name, kernel, make, config)
            except Exception as e:  # reported, the test fails on it
                res = {"name": name, "error": f"{type(e).__name__}: {e}"}
            print(json.dumps(res), flush=True)
    for name, fn, point in C.DEVICE_CASES:
        if not names or name in names:
            try:
                res = device_case(name, fn, point)
            except Exception as e:
                res = {"name": name, "error": f"{type(e).__name__}: {e}"}
            print(json.dumps(res), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
