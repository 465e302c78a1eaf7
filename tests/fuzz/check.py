"""Differential checker: jitgrad against the plain function and finite differences.

``check(prog, jit)`` imports the program from a temporary file, samples inputs,
and classifies jitgrad's behaviour on it:

* ``ok``       values match the plain function, gradients match finite differences,
               inputs unchanged (``skipped`` is ok-but-not-checked: no smooth point found);
* ``refused``  ``TransformError``/``RuleError`` naming the temp file and a line;
* ``wrong``    a value or gradient mismatch, a wrong gradient shape, or a mutated input;
* ``crash``    any other exception (also a refusal without a location);
* ``invalid``  the *program* is unusable (the plain function fails everywhere):
               ``gen`` tasks regenerate such programs, the shrinker rejects them.

``hang`` and worker deaths are decided by ``Pool``, which runs every check in a
spawned worker process with a per-task timeout and replaces dead or stuck workers.
"""

from __future__ import annotations

import collections
import hashlib
import importlib.util
import math
import multiprocessing as mp
import os
import re
import shutil
import sys
import tempfile
import time
import traceback
import warnings
from multiprocessing.connection import wait as conn_wait

import numpy as np

from .gen import Program, generate

SEVERITY = {"ok": 0, "skipped": 0, "refused": 1, "hang": 2, "crash": 3, "wrong": 4,
            "invalid": -1}
MAX_ABS_VALUE = 1e6
#: a float the program holds on the way to its value may be at most this large: beyond it,
#: rounding absorbs an input's effect (``(t + x) - t``) and the float function's finite
#: differences no longer approximate the derivative every AD tool computes
MAX_ABS_INTERMEDIATE = 1e9
REL_SMALL, REL_BIG = 1e-6, 1e-4
FD_AGREE = 1e-5      # the two step sizes must agree to this (relative) or the point is rejected
GRAD_TOL = 1e-4      # jitgrad's gradient must match one of them to this (relative)
VALUE_RTOL = 1e-9
GRAD_CONSISTENT = 1e-7  # value_and_grad / grad / vjp must agree with each other
ILL_HUGE = 1e6          # an ill-conditioned adjoint's wrong elements exceed 1e6 (1 + |fd|) ...
ILL_NUDGE = 1e-13       # ... and change by over ILL_CHAOS (relative) when the inputs move
ILL_CHAOS = 1e-2        # by ILL_NUDGE (relative): rounding, amplified, not a formula
REVERSE_APIS = ("value_and_grad", "grad", "vjp")


# --- random draws ----------------------------------------------------------------------------

#: every evaluation (the plain function's, each finite difference's, every jitgrad call's)
#: starts from this state of NumPy's global generator, and with ``jit=True`` of Numba's,
#: which is separate: a program's random draws are the same in all of them
DRAW_SEED = 20240
_NUMBA_SEED: list = []  # the njit function seeding Numba's generator, once compiled


def reseed(numba_too: bool = False) -> None:
    """Seed NumPy's global generator (and Numba's, compiling its seeder on first use)."""
    np.random.seed(DRAW_SEED)
    if numba_too or _NUMBA_SEED:
        if not _NUMBA_SEED:
            import numba

            @numba.njit(cache=False)
            def seed(s):
                np.random.seed(s)

            _NUMBA_SEED.append(seed)
        _NUMBA_SEED[0](DRAW_SEED)


def draws(prog: Program) -> bool:
    """Does the program (maybe) make random draws?"""
    return "random." in prog.source


# --- loading and sampling ------------------------------------------------------------------

def load(prog: Program, tmpdir: str):
    """Write the program to a .py file and import it; returns (module, path)."""
    h = hashlib.sha1(prog.source.encode()).hexdigest()[:10]
    name = f"fz_s{prog.seed}_i{prog.index}_a{prog.attempt}_{h}"
    path = os.path.join(tmpdir, name + ".py")
    with open(path, "w") as fh:
        fh.write(prog.source)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return mod, path


def unload(mod, path: str) -> None:
    sys.modules.pop(mod.__name__, None)
    try:
        os.remove(path)
    except OSError:
        pass


def sample(prog: Program, k: int) -> tuple:
    rng = np.random.default_rng([prog.seed & 0xFFFFFFFF, prog.index, prog.attempt, k])
    x = rng.uniform(-1.0, 1.0, prog.shape)
    a = float(rng.uniform(-1.2, 1.2))
    return (x, a, prog.n)


def copy_args(args: tuple) -> list:
    return [v.copy() if isinstance(v, np.ndarray) else v for v in args]


def plain(f, args) -> float:
    """The plain function on copies of ``args`` (random draws from ``DRAW_SEED``); raises
    ValueError on a bad result."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reseed()
        v = f(*copy_args(args))
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (float, int, np.floating,
                                                              np.integer)):
        raise ValueError(f"returns {type(v).__name__}, not a float scalar")
    v = float(v)
    if not math.isfinite(v) or abs(v) > MAX_ABS_VALUE:
        raise ValueError(f"returns {v}")
    return v


def overflows(f, args) -> bool:
    """Does the plain function pass through inf/nan (overflow, 0/0) on the way to its value?

    Float scalars become ``np.float64`` so that IEEE events raise under ``np.errstate``.
    """
    a = [np.float64(v) if isinstance(v, float) else v for v in copy_args(args)]
    g = f.__globals__
    saved = g.get("math")
    g["math"] = _Float64Math()  # math.sin(...) returns np.float64: its arithmetic checks too
    try:
        with np.errstate(all="raise", under="ignore"), warnings.catch_warnings():
            warnings.simplefilter("error")
            reseed()
            f(*a)
    except (FloatingPointError, OverflowError, RuntimeWarning, ZeroDivisionError):
        return True
    except Exception:
        return False
    finally:
        g["math"] = saved
    return False


def peak(f, args) -> float:
    """The largest magnitude of any float the program's frames hold, line by line."""
    a = copy_args(args)
    where = f.__code__.co_filename
    top = [0.0]

    def scan(frame, event, arg):
        if frame.f_code.co_filename != where:
            return None
        for v in frame.f_locals.values():
            top[0] = max(top[0], _magnitude(v))
        return scan

    old = sys.gettrace()
    sys.settrace(scan)
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            reseed()
            f(*a)
    except Exception:
        pass
    finally:
        sys.settrace(old)
    return top[0]


def _magnitude(v) -> float:
    if isinstance(v, (float, np.floating)):
        return abs(float(v))
    if isinstance(v, np.ndarray) and v.dtype.kind == "f" and v.size:
        return float(np.max(np.abs(v)))
    return 0.0


class _Float64Math:
    """The ``math`` module with float results as ``np.float64`` (IEEE events visible)."""

    def __getattr__(self, name):
        obj = getattr(math, name)
        if not callable(obj):
            return np.float64(obj) if isinstance(obj, float) else obj

        def call(*args):
            r = obj(*args)
            return np.float64(r) if isinstance(r, float) else r

        return call


def fd(f, args, pos: int, rel: float) -> np.ndarray:
    """Central differences w.r.t. argument ``pos`` (relative step ``rel``)."""
    x = args[pos]
    if np.ndim(x) == 0:
        h = rel * max(1.0, abs(x))
        a = list(args)
        a[pos] = x + h
        hi = plain(f, a)
        a[pos] = x - h
        lo = plain(f, a)
        return np.float64((hi - lo) / (2 * h))
    g = np.zeros(x.shape)
    for idx in np.ndindex(x.shape):
        h = rel * max(1.0, abs(x[idx]))
        a = list(args)
        xp = x.copy()
        xp[idx] += h
        a[pos] = xp
        hi = plain(f, a)
        xm = x.copy()
        xm[idx] -= h
        a[pos] = xm
        lo = plain(f, a)
        g[idx] = (hi - lo) / (2 * h)
    return g


def smooth_fd(f, args, positions, value):
    """(small-step fd, big-step fd, noise) per wrt position, or None if they disagree."""
    noise = 1e-15 * (1.0 + abs(value)) / REL_SMALL
    out = []
    for p in positions:
        try:
            s = fd(f, args, p, REL_SMALL)
            b = fd(f, args, p, REL_BIG)
        except Exception:
            return None
        if np.any(np.abs(s - b) > FD_AGREE * (1.0 + np.abs(b)) + 10 * noise):
            return None
        out.append((s, b))
    return out, noise


def find_point(f, prog: Program, tries: int = 6):
    """('point', (args, value, fds, noise, after)) or ('invalid' | 'skipped', reason).

    ``after`` is what the plain function leaves in its (copied) arguments.
    """
    valid = 0
    last = ""
    for k in range(tries):
        args = sample(prog, k)
        try:
            v = plain(f, args)
        except Exception as exc:  # the program itself fails here
            last = f"plain function: {type(exc).__name__}: {exc}"
            continue
        valid += 1
        if overflows(f, args):
            last = "non-finite intermediate values (0 * inf makes any reverse mode nan)"
            continue
        if peak(f, args) > MAX_ABS_INTERMEDIATE:
            last = "intermediate values over 1e9 (cancellation: rounding hides the derivative)"
            continue
        got = smooth_fd(f, args, prog.wrt_positions, v)
        if got is not None:
            after = copy_args(args)
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                reseed()
                f(*after)
            return "point", (args, v, got[0], got[1], after)
        last = "finite differences disagree between step sizes (non-smooth point)"
    return ("skipped" if valid else "invalid"), last


# --- the checks ----------------------------------------------------------------------------

class Mismatch(Exception):
    pass


def _fmt(v) -> str:
    return np.array2string(np.asarray(v), precision=6, separator=", ") if np.ndim(v) else \
        f"{float(v):.9g}"


def _check_value(what: str, got, want: float) -> None:
    if isinstance(got, (tuple, list, np.ndarray)) and np.ndim(got) != 0:
        raise Mismatch(f"{what} value is {type(got).__name__} {_fmt(got)}, expected scalar "
                       f"{want:.9g}")
    try:
        g = float(got)
    except Exception:
        raise Mismatch(f"{what} value is {got!r}, expected {want:.9g}") from None
    if not abs(g - want) <= VALUE_RTOL * max(1.0, abs(want)):
        raise Mismatch(f"{what} value {g!r} != plain {want!r}")


def _split_grads(prog: Program, what: str, grads) -> list:
    if isinstance(prog.wrt, tuple):
        if not isinstance(grads, tuple) or len(grads) != len(prog.wrt):
            raise Mismatch(f"{what} returned {type(grads).__name__} "
                           f"{grads!r:.200}, expected a tuple of {len(prog.wrt)} gradients")
        return list(grads)
    return [grads]


def _check_grads(prog: Program, what: str, grads, args, fds, noise) -> list:
    names = prog.params
    out = []
    for pos, g, (s, b) in zip(prog.wrt_positions, _split_grads(prog, what, grads), fds,
                              strict=True):
        arg = args[pos]
        if np.shape(g) != np.shape(arg):
            raise Mismatch(f"{what}: d/d{names[pos]} has shape {np.shape(g)}, argument has "
                           f"{np.shape(arg)}")
        try:
            ga = np.asarray(g, dtype=float)
        except Exception:
            raise Mismatch(f"{what}: d/d{names[pos]} is {g!r:.200}") from None
        tol = GRAD_TOL * (1.0 + np.abs(b)) + 10 * noise
        bad = ~(np.isfinite(ga) & ((np.abs(ga - s) <= tol) | (np.abs(ga - b) <= tol)))
        if np.any(bad):
            idx = tuple(int(i) for i in np.argwhere(np.atleast_1d(bad))[0])
            el = f"[{', '.join(map(str, idx))}]" if np.ndim(arg) else ""
            gv = np.atleast_1d(ga)[idx] if np.ndim(arg) else float(ga)
            fv = np.atleast_1d(b)[idx] if np.ndim(arg) else float(b)
            raise Mismatch(f"{what}: d/d{names[pos]}{el} = {gv:.9g}, finite differences "
                           f"{fv:.9g} ({int(np.sum(bad))} of {np.size(bad)} elements wrong)")
        out.append(ga)
    return out


def _unchanged(what: str, passed: list, before: list) -> None:
    for name, p, b in zip(["x", "a", "n"], passed, before, strict=True):
        if isinstance(b, np.ndarray) and not np.array_equal(p, b):
            raise Mismatch(f"{what} mutated its input {name}: {_fmt(b)} -> {_fmt(p)}")


def located(exc: BaseException, path: str) -> bool:
    """Does the refusal name the file and a line?"""
    text = str(exc)
    base = os.path.basename(path)
    if base not in text:
        return False
    return bool(re.search(re.escape(base) + r"[:,]\s*(line\s*)?\d+", text)
                or re.search(r"\bline\s+\d+", text))


def numba_differs(f, args, value, after) -> str:
    """Why ``numba.njit(f)`` itself disagrees with the plain function here ('' if it does not):
    e.g. ``u -= u[::-1]`` (NumPy copies overlapping operands, Numba does not)."""
    import types

    import numba

    g = dict(f.__globals__)  # the module's functions compiled, in a copy of its globals
    for name, obj in list(g.items()):
        if isinstance(obj, types.FunctionType) and obj.__module__ == f.__module__:
            g[name] = numba.njit(types.FunctionType(obj.__code__, g, obj.__name__))
    p = copy_args(args)
    try:
        reseed(numba_too=True)
        v = g[f.__name__](*p)
    except Exception as exc:
        return f"numba.njit(f) raises {type(exc).__name__}"
    try:
        _check_value("numba.njit(f)", v, value)
        _same_effects("numba.njit(f)", p, after)
    except Mismatch as exc:
        return str(exc)
    return ""


def _same_effects(what: str, passed: list, want: list) -> None:
    for name, p, w in zip(["x", "a", "n"], passed, want, strict=True):
        if isinstance(w, np.ndarray) and not np.allclose(p, w, rtol=VALUE_RTOL, atol=1e-12):
            raise Mismatch(f"{what} left its input {name} as {_fmt(p)}, the plain function "
                           f"leaves {_fmt(w)}")


def _gist(msg: str) -> str:
    """An error message without the names, numbers and shapes that vary between programs."""
    msg = re.sub(r"\x1b\[[0-9;]*m", "", msg).replace("Numba could not compile the generated "
                                                    "code: ", "")
    msg = re.sub(r"'[^']*'|\"[^\"]*\"|\([^()]*\)|\[[^\[\]]*\]|<[^<>]*>", "_", msg)
    msg = re.sub(r"\b\w*\d\w*\b", "N", msg)
    return " ".join(msg.split())[:100]


class _NumbaRefuses(Exception):
    """The user's own function does not compile with Numba; jitgrad said so (documented)."""


def _numba_compiles(f, args) -> bool:
    import numba

    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            reseed(numba_too=True)
            numba.njit(f)(*args)
    except Exception:
        return False
    return True


def _problem(exc: BaseException, what: str, path: str) -> dict:
    """Classify an exception raised by a jitgrad call."""
    import jitgrad

    text = str(exc)
    if isinstance(exc, _NumbaRefuses):
        return dict(outcome="refused", error_type="JitError", signature="refused:numba",
                    reason=text, refusal=text)
    lines = [ln for ln in text.splitlines() if ln.strip()]
    first = lines[0] if lines else type(exc).__name__
    if isinstance(exc, Mismatch):
        kind = ("mutated" if "mutated" in text or "left its input" in text else
                "value" if " value " in text else "shape" if "shape" in text or "tuple" in text
                else "gradient")
        return dict(outcome="wrong", error_type="wrong", signature=f"wrong:{what}:{kind}",
                    reason=text)
    if isinstance(exc, (jitgrad.TransformError, jitgrad.RuleError)):
        if located(exc, path):
            msg = getattr(exc, "msg", None) or first
            return dict(outcome="refused", error_type=type(exc).__name__,
                        signature=f"refused:{type(exc).__name__}", reason=first,
                        refusal=str(msg).splitlines()[0] if str(msg) else first)
        return dict(outcome="crash", error_type=type(exc).__name__,
                    signature=f"crash:{type(exc).__name__}:unlocated",
                    reason=f"{what}: {type(exc).__name__} without a file:line location: {first}")
    return dict(outcome="crash", error_type=type(exc).__name__,
                signature=f"crash:{type(exc).__name__}:{_gist(first)}",
                reason=f"{what}: {type(exc).__name__}: {first[:300]}",
                detail="\n".join(lines[:10]),
                traceback=traceback.format_exc(limit=-8))


APIS = ("value_and_grad", "grad", "f(...)", "vjp", "jvp", "hvp")


def run_jitgrad(f, prog: Program, path: str, jit: bool, point, apis=APIS) -> dict:
    """Every API (or those in ``apis``) on one point; collects all problems, the worst
    decides the outcome."""
    import jitgrad

    args, value, fds, noise, after = point
    problems: list = []
    grads: dict = {}

    def step(what, fn):
        try:
            fn()
        except BaseException as exc:  # noqa: BLE001 - classified, never swallowed silently
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            problems.append(dict(_problem(exc, what, path), api=what))
            return False
        return True

    def fresh():
        return copy_args(args), copy_args(args)

    def seeded():  # every call draws what the plain function drew
        reseed(numba_too=jit and draws(prog))

    holder = {}
    if not step("differentiate", lambda: holder.update(
            d=jitgrad.differentiate(f, wrt=prog.wrt, jit=jit))):
        d = None
    else:
        d = holder["d"]

    def vag():
        p, before = fresh()
        seeded()
        v, g = d.value_and_grad(*p)
        _unchanged("value_and_grad", p, before)
        _check_value("value_and_grad", v, value)
        grads["value_and_grad"] = _check_grads(prog, "value_and_grad", g, args, fds, noise)

    def grad():
        p, before = fresh()
        seeded()
        g = d.grad(*p)
        _unchanged("grad", p, before)
        grads["grad"] = _check_grads(prog, "grad", g, args, fds, noise)

    def primal():
        p, _ = fresh()
        try:
            seeded()
            v = d(*p)
        except (jitgrad.JitError, NotImplementedError):
            # (NotImplementedError: what Numba's compiled code raises at run time for what
            # it does not support, e.g. reshaping a non-contiguous array; f(...) runs the
            # user's function as Numba compiles it, so it raises the same)
            if jit and not _numba_compiles(f, fresh()[0]):
                raise _NumbaRefuses("the plain function does not compile (or run) with Numba: "
                                    "f(...) says so as Numba does") from None
            raise
        _check_value("f(...)", v, value)
        _same_effects("f(...)", p, after)

    def vjp():
        p, before = fresh()
        seeded()
        v, pb = d.vjp(*p)
        _unchanged("vjp", p, before)
        _check_value("vjp", v, value)
        seeded()
        g = pb(1.0)
        _unchanged("vjp pullback(1.0)", p, before)
        grads["vjp"] = _check_grads(prog, "vjp pullback(1.0)", g, args, fds, noise)

    def jvp():
        """Forward mode along a random direction against the finite-difference gradients
        (the directional derivative); a located forward-mode refusal is noted, not counted
        (reverse mode may support what forward mode refuses)."""
        p, before = fresh()
        rng = np.random.default_rng(prog.seed & 0xFFFFFFFF)
        vs = [rng.standard_normal(np.shape(args[k])) if np.ndim(args[k]) else
              float(rng.standard_normal()) for k in prog.wrt_positions]
        try:
            seeded()
            v, t = d.jvp(tuple(p), tuple(vs) if isinstance(prog.wrt, tuple) else vs[0])
        except (jitgrad.TransformError, jitgrad.RuleError) as exc:
            if located(exc, path):
                notes.append(f"jvp refused: {str(exc).splitlines()[0]}")
                return
            raise
        _unchanged("jvp", p, before)
        _check_value("jvp", v, value)
        small = sum(float(np.sum(np.asarray(sv) * vv)) for (sv, _), vv in zip(fds, vs,
                                                                              strict=True))
        big = sum(float(np.sum(np.asarray(bv) * vv)) for (_, bv), vv in zip(fds, vs,
                                                                            strict=True))
        scale = sum(float(np.sum(np.abs(bv) * np.abs(vv))) for (_, bv), vv in zip(
            fds, vs, strict=True))
        tol = GRAD_TOL * (1.0 + scale) + 10 * noise * sum(np.size(vv) for vv in vs)
        try:
            tf = float(t)
        except Exception:
            raise Mismatch(f"jvp tangent is {t!r:.200}, expected a scalar") from None
        if not (math.isfinite(tf) and (abs(tf - small) <= tol or abs(tf - big) <= tol)):
            raise Mismatch(f"jvp: tangent {tf:.9g}, finite differences of the directional "
                           f"derivative {big:.9g}")

    def hvp():
        """Forward over the generated reverse code along a random direction, against
        central differences of jitgrad's own gradient (checked above) at two step sizes;
        a located refusal is noted, not counted.  Run as Python (``jit=False``) in both
        modes: compiling one more function per program would double the jit=True time."""
        if "grad" not in grads:
            return
        p, before = fresh()
        rng = np.random.default_rng((prog.seed ^ 0x5BD1E995) & 0xFFFFFFFF)
        vs = [rng.standard_normal(np.shape(args[k])) if np.ndim(args[k]) else
              float(rng.standard_normal()) for k in prog.wrt_positions]
        try:
            seeded()
            hv = jitgrad.hvp(f, tuple(p), tuple(vs) if isinstance(prog.wrt, tuple) else vs[0],
                             wrt=prog.wrt, jit=False)
        except (jitgrad.TransformError, jitgrad.RuleError) as exc:
            # refused at the user's line, or at a line of the gradient code it names
            if located(exc, path) or "generated gradient code" in str(exc):
                notes.append(f"hvp refused: {str(exc).splitlines()[0]}")
                return
            raise
        _unchanged("hvp", p, before)
        hv = hv if isinstance(prog.wrt, tuple) else (hv,)
        fds2 = []
        for eps in (1e-4, 1e-5):
            hi, lo = copy_args(args), copy_args(args)
            for k, vv in zip(prog.wrt_positions, vs, strict=True):
                hi[k] = args[k] + eps * vv
                lo[k] = args[k] - eps * vv
            seeded()
            gh = d.grad(*hi)
            seeded()
            gl = d.grad(*lo)
            gh, gl = (gh, gl) if isinstance(prog.wrt, tuple) else ((gh,), (gl,))
            fds2.append([(np.asarray(a, float) - np.asarray(b, float)) / (2 * eps)
                         for a, b in zip(gh, gl, strict=True)])
        for k, h in enumerate(hv):
            h = np.asarray(h, float)
            ok = any(np.all(np.abs(h - fd[k]) <= 1e-3 * (1.0 + np.abs(fd[k])))
                     for fd in fds2)
            if not (np.all(np.isfinite(h)) and ok):
                raise Mismatch(f"hvp {k}: {_fmt(h)}, central differences of the gradient "
                               f"{_fmt(fds2[-1][k])}")

    notes: list = []
    if d is not None:
        for what, fn in (("value_and_grad", vag), ("grad", grad), ("f(...)", primal),
                         ("vjp", vjp), ("jvp", jvp), ("hvp", hvp)):
            if what in apis:
                step(what, fn)
        ref = grads.get("value_and_grad")
        for other in ("grad", "vjp"):
            if ref is None or other not in grads:
                continue
            for k, (ga, gb) in enumerate(zip(ref, grads[other], strict=True)):
                if not np.allclose(ga, gb, rtol=GRAD_CONSISTENT, atol=GRAD_CONSISTENT):
                    problems.append(dict(_problem(Mismatch(
                        f"{other} gradient {k} differs from value_and_grad's: {_fmt(gb)} vs "
                        f"{_fmt(ga)}"), other, path), api=other))
                    break
    if not problems:
        return dict(outcome="ok", reason="", problems=[], notes=notes)
    jvp_agreed = "jvp" in apis and not any(p["api"] == "jvp" for p in problems) and \
        not any(n.startswith("jvp refused") for n in notes)
    ill = ill_conditioned(d, prog, point, problems, seeded) if jvp_agreed else ""
    if ill:
        return dict(outcome="skipped", reason=ill, problems=[], notes=notes, ill=True)
    if jit and any(p["outcome"] == "wrong" for p in problems):
        differs = numba_differs(f, args, value, after)
        if differs:
            return dict(outcome="skipped", reason=f"Numba and Python disagree on this program "
                        f"({differs}), so jit=True cannot be checked", problems=[])
    worst = max(problems, key=lambda p: SEVERITY[p["outcome"]])
    out = dict(worst)
    out["problems"] = problems
    return out


def ill_conditioned(d, prog: Program, point, problems: list, seeded=reseed) -> str:
    """Why the reverse gradient's mismatch is an ill-conditioned adjoint, or "".

    Reverse mode computes (M^T g)^T b where forward mode computes g^T (M b): the same number
    in exact arithmetic, but where M's unstable modes meet g and not b, the adjoint grows
    to 1e100 and its rounding error is the result.  Any reverse mode (JAX, a hand adjoint)
    does the same.  Recognised only when every problem is a reverse-mode gradient mismatch,
    forward mode agreed with finite differences (checked by the caller), the wrong elements
    are huge, and they change by over 1% when the inputs move by 1e-13: rounding amplified,
    not a wrong formula (which is a smooth function of the inputs).
    """
    if not all(p["outcome"] == "wrong" and p["api"] in REVERSE_APIS and
               p["signature"].endswith(":gradient") for p in problems):
        return ""
    args, _, fds, _, _ = point
    try:
        seeded()
        g0 = _split_grads(prog, "grad", d.grad(*copy_args(args)))
        moved = copy_args(args)
        rng = np.random.default_rng(prog.seed & 0xFFFFFFFF)
        for k in prog.wrt_positions:
            moved[k] = moved[k] * (1 + ILL_NUDGE * rng.standard_normal(np.shape(moved[k])))
        seeded()
        g1 = _split_grads(prog, "grad", d.grad(*moved))
    except Exception:  # noqa: BLE001 - then it is not recognised, and stays wrong
        return ""
    for a, b, (_, big) in zip(g0, g1, fds, strict=True):
        a, b = np.asarray(a, float), np.asarray(b, float)
        huge = ~np.isfinite(a) | (np.abs(a) > ILL_HUGE * (1 + np.abs(big)))
        bad = np.abs(a - big) > GRAD_TOL * (1 + np.abs(big))
        if np.any(bad & ~huge):
            return ""
        chaos = ~np.isfinite(a - b) | (np.abs(a - b) > ILL_CHAOS * np.abs(a))
        if np.any(bad & ~chaos):
            return ""
    return (f"ill-conditioned adjoint: reverse mode's gradient is over {ILL_HUGE:g} times "
            f"finite differences and changes by over {ILL_CHAOS:.0%} when the inputs move by "
            f"{ILL_NUDGE:g}, while forward mode agrees with finite differences")


def check(prog: Program, jit: bool, tmpdir: str, on_program=None, apis=APIS) -> dict:
    """Classify one program in one mode (see the module docstring)."""
    try:
        mod, path = load(prog, tmpdir)
    except Exception as exc:
        return dict(outcome="invalid", reason=f"import: {type(exc).__name__}: {exc}")
    ref = None
    try:
        f = getattr(mod, "f", None)
        if f is None:
            return dict(outcome="invalid", reason="no function f")
        if prog.original is not None:  # alpha-renamed: the original is the reference
            ref = load(prog.with_source(prog.original), tmpdir)
        kind, got = find_point(ref[0].f if ref else f, prog)
        if kind != "point":
            return dict(outcome=kind, reason=got)
        if ref and not _renamed_agrees(f, got):
            return dict(outcome="crash", error_type="checker", signature="crash:rename",
                        reason="checker: the alpha-renamed program computes another value "
                               "than the original (a bug of rename.py)")
        if on_program is not None:
            on_program(prog)
        out = run_jitgrad(f, prog, path, jit, got, apis)
        out["args"] = got[0]
        return out
    finally:
        unload(mod, path)
        if ref:
            unload(*ref)


def _renamed_agrees(f, point) -> bool:
    """Does the renamed function compute the original's value at the checked point?"""
    try:
        v = plain(f, point[0])
    except Exception:
        return False
    return abs(v - point[1]) <= VALUE_RTOL * max(1.0, abs(point[1]))


def check_generated(seed: int, index: int, jit: bool, tmpdir: str, on_program=None,
                    max_attempts: int = 12) -> tuple:
    """Generate program ``index`` (regenerating unusable ones) and check it."""
    res = None
    for attempt in range(max_attempts):
        prog = generate(seed, index, attempt)
        res = check(prog, jit, tmpdir, on_program)
        if res["outcome"] != "invalid":
            return prog, res
    return prog, res


# --- worker processes --------------------------------------------------------------------

def _worker(conn, root: str | None = None) -> None:
    """Worker loop: receive tasks, send result dicts.  Runs in a spawned process."""
    import numba  # noqa: F401

    import jitgrad  # noqa: F401  (import cost outside the per-task timeout)

    warnings.simplefilter("ignore")  # overflow in generated code, Numba performance notes
    np.seterr(all="ignore")
    conn.send(("ready",))

    tmpdir = tempfile.mkdtemp(prefix="jitgrad_fuzz_", dir=root)
    try:
        while True:
            try:
                task = conn.recv()
            except EOFError:
                return
            if task is None:
                return
            t0 = time.perf_counter()
            kind = task[0]
            try:
                if kind == "gen":
                    _, seed, index, jit = task
                    prog, res = check_generated(seed, index, jit, tmpdir,
                                                lambda p: conn.send(("program", p)))
                else:
                    _, prog, jit, *rest = task
                    res = check(prog, jit, tmpdir, apis=rest[0] if rest else APIS)
            except BaseException as exc:  # a bug in the checker itself
                prog = task[1] if kind == "prog" else None
                res = dict(outcome="crash", error_type="checker",
                           reason=f"checker error {type(exc).__name__}: {exc}",
                           traceback=traceback.format_exc())
            res["program"] = prog
            res["elapsed"] = time.perf_counter() - t0
            if "args" in res:
                res["args"] = tuple(res["args"])
            conn.send(res)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)


class _Slot:
    def __init__(self, ctx, root: str):
        parent, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker, args=(child, root), daemon=True)
        self.proc.start()
        child.close()
        self.conn = parent
        self.tasks = 0
        self.fresh = True

    def stop(self, kill: bool = False) -> None:
        try:
            if kill:
                self.proc.kill()
            else:
                self.conn.send(None)
        except Exception:
            pass
        self.proc.join(timeout=5 if not kill else 10)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join(timeout=10)
        self.conn.close()


class Pool:
    """``workers`` spawned processes; a dead or timed-out worker is replaced."""

    STARTUP_GRACE = 90.0  # until a fresh worker has imported numpy, numba and jitgrad

    def __init__(self, workers: int = 1, recycle: int = 60):
        self.ctx = mp.get_context("spawn")
        self.n = max(1, workers)
        self.recycle = recycle
        self.slots: list = [None] * self.n
        self.programs: dict = {}  # key -> the program a 'gen' task settled on
        self.root = tempfile.mkdtemp(prefix="jitgrad_fuzz_")  # killed workers leave files

    def close(self) -> None:
        for i, s in enumerate(self.slots):
            if s is not None:
                s.stop()
                self.slots[i] = None
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def run(self, tasks):
        """``tasks``: iterable of (key, task, timeout).  Yields (key, result) as they finish."""
        pending = collections.deque(tasks)
        busy: dict = {}  # slot index -> (key, task, deadline, started)
        while pending or busy:
            for i in range(self.n):
                if i in busy or not pending:
                    continue
                s = self.slots[i]
                if s is None or not s.proc.is_alive() or s.tasks >= self.recycle:
                    if s is not None:
                        s.stop()
                    s = self.slots[i] = _Slot(self.ctx, self.root)
                key, task, timeout = pending.popleft()
                grace = self.STARTUP_GRACE if s.fresh else 0.0
                s.fresh = False
                s.tasks += 1
                s.conn.send(task)
                now = time.monotonic()
                busy[i] = (key, task, now + timeout + grace, now, timeout)
            now = time.monotonic()
            wait_for = max(0.01, min(b[2] for b in busy.values()) - now)
            ready = conn_wait([self.slots[i].conn for i in busy] +
                              [self.slots[i].proc.sentinel for i in busy], timeout=wait_for)
            for i in list(busy):
                s = self.slots[i]
                key, task, deadline, started, timeout = busy[i]
                prog = task[1] if task[0] == "prog" else None
                res = None
                if s.conn in ready or s.proc.sentinel in ready:
                    try:
                        while s.conn.poll():
                            msg = s.conn.recv()
                            if isinstance(msg, tuple) and msg[0] == "ready":
                                deadline = time.monotonic() + timeout  # the clock starts now
                                busy[i] = (key, task, deadline, started, timeout)
                                continue
                            if isinstance(msg, tuple) and msg[0] == "program":
                                self.programs[key] = msg[1]
                                continue
                            res = msg
                            break
                    except (EOFError, OSError):
                        res = None
                    if res is None and not s.proc.is_alive():
                        code = s.proc.exitcode
                        res = dict(outcome="crash", error_type="worker died",
                                   reason=f"worker process died (exit code {code})",
                                   program=self.programs.get(key, prog))
                        s.stop(kill=True)
                        self.slots[i] = None
                if res is None and time.monotonic() > deadline:
                    s.stop(kill=True)
                    self.slots[i] = None
                    res = dict(outcome="hang", error_type="hang",
                               reason=f"no result within {timeout:.0f} s",
                               program=self.programs.get(key, prog))
                if res is not None:
                    res.setdefault("elapsed", time.monotonic() - started)
                    self.programs.pop(key, None)
                    del busy[i]
                    yield key, res
