"""Forward mode and second order: ``jvp``, ``jacfwd``, ``jacrev``, ``hessian``, ``hvp``.

``jvp`` runs one generated function holding the primal and its tangent statements
(``transpiler/modes/forward.py``), compiled with Numba under ``jit=True``.  ``jacfwd``
calls it once per input element, ``jacrev`` the existing reverse-mode pullback once per
output element.  ``hvp`` and ``hessian`` are forward-over-reverse: the forward pass is
applied to the generated gradient code (``second_order.py``), compiled as one function.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from . import rules
from .transpiler.backend import jit as backend
from .transpiler.forward_pipeline import JVP, generate_jvp, transform_jvp

_LOCK = threading.Lock()


def _diff(f: Any, wrt: Any, jit: bool) -> Any:
    from .api import GradFunction, _as_diff

    if isinstance(f, GradFunction):  # would otherwise differentiate the function itself
        raise TypeError(f"{f.diff.func.__name__} is a jg.grad/jg.value_and_grad transform; "
                        "forward mode and jacobians take the function itself: use "
                        "jg.hvp(f, primals, v) or jg.hessian(f) for derivatives of the "
                        "gradient")
    return _as_diff(f, wrt, jit, "cpu")


def check_wrt_kinds(d: Any, args: tuple) -> dict:
    """The argument kinds, after refusing what the generated code cannot take (arity,
    complex, float16, 0-d arrays, integer ``wrt`` arguments)."""
    d._prep()
    return d._kinds(args, "tangents")


def generated_jvp(d: Any, args: tuple) -> Any:
    """The compiled forward-mode code of ``d`` for these arguments' kinds (cached on ``d``)."""
    kinds = check_wrt_kinds(d, args)
    key = ("jvp", tuple(sorted(kinds.items())), rules.version())
    cache = d.__dict__.setdefault("_jvp_cache", {})
    with _LOCK:
        gen = cache.get(key)
        if gen is None:
            wrt = [d.params[i] for i in d.wrt_positions]
            gen = generate_jvp(d._prep(), wrt, kinds)
            u = gen.unit
            gen.compiled = backend.build({"jvp": u.sources["jvp"]}, u.names, u.env,
                                         d.func.__qualname__, d.jit, frozenset(),
                                         options=d.options)
            cache[key] = gen
    return gen


def _tangent_like(t: Any, p: Any, what: str) -> Any:
    """``t`` as a tangent of the primal ``p``: same shape, ``p``'s float dtype."""
    if isinstance(p, np.ndarray):
        ta = np.asarray(t)
        if ta.dtype.kind not in "fiub" or ta.shape != p.shape:
            raise ValueError(f"{what}: tangent has shape {ta.shape}"
                             f"{'' if ta.dtype.kind in 'fiub' else ' and dtype ' + str(ta.dtype)}"
                             f", the primal has shape {p.shape}")
        # no copy: the generated code copies the tangents of arguments it writes
        return np.asarray(ta, dtype=p.dtype if p.dtype.kind == "f" else np.float64)
    if np.ndim(t) != 0 or isinstance(t, (complex, np.complexfloating)):
        raise ValueError(f"{what}: the primal is a scalar, the tangent is "
                         f"{'an array of shape ' + str(np.shape(t)) if np.ndim(t) else 'complex'}")
    return float(t)


def jvp_of(d: Any, primals: Any, tangents: Any) -> tuple[Any, Any]:
    """``(f(*primals), J @ tangents)`` for the ``Differentiated`` function ``d``."""
    name = d.func.__name__
    if not isinstance(primals, (tuple, list)):
        raise TypeError(f"jvp of {name}: primals must be a tuple of all {len(d.params)} "
                        f"positional arguments ({', '.join(d.params)}), got "
                        f"{type(primals).__name__}")
    primals = tuple(primals)
    if d.single:
        tans = (tangents,)
    else:
        if not isinstance(tangents, (tuple, list)):
            raise TypeError(f"jvp of {name}: wrt={d.wrt!r} is a tuple, so tangents must be a "
                            f"tuple of {len(d.wrt_positions)}")
        tans = tuple(tangents)
    if len(tans) != len(d.wrt_positions):
        raise ValueError(f"jvp of {name}: {len(tans)} tangents for {len(d.wrt_positions)} "
                         f"wrt arguments ({', '.join(d.params[i] for i in d.wrt_positions)})")
    gen = generated_jvp(d, primals)
    seeds = tuple(_tangent_like(t, primals[i], f"jvp of {name}, argument {i} "
                                f"('{d.params[i]}')")
                  for t, i in zip(tans, d.wrt_positions, strict=True))
    # the generated prologue copies the arguments it writes (and their tangents)
    return backend.call(gen.compiled, "jvp", (*primals, *seeds))


def jvp_source(d: Any, args: tuple, stage: str = "all") -> str:
    """The generated tangent code (``stage``: ``"all"`` or one of forward mode's passes)."""
    if not args:
        from .api import _guess_args

        args = tuple(_guess_args(d._prep(), d.params))
    if stage == "all":
        return generated_jvp(d, args).unit.sources["jvp"]
    names = [p.name for p in JVP]
    if stage not in names:
        raise ValueError(f"stage must be 'all' or one of {', '.join(names)} with mode='jvp'")
    kinds = check_wrt_kinds(d, args)
    u = transform_jvp(d._prep(), [d.params[i] for i in d.wrt_positions], kinds, until=stage)
    return next(p for p in JVP if p.name == stage).show(u).rstrip("\n") + "\n"


# --- public functions --------------------------------------------------------------------


def jvp(f: Callable, primals: tuple, tangents: Any, *, wrt: Any = 0,
        jit: bool = True) -> tuple[Any, Any]:
    """``(f(*primals), tangent)``: the Jacobian-vector product by forward mode (like
    ``jax.jvp``); ``tangents`` is one value per ``wrt`` argument (a tuple for a tuple wrt)."""
    return jvp_of(_diff(f, wrt, jit), primals, tangents)


def _wrt_list(d: Any) -> list[int]:
    return list(d.wrt_positions)


def _nest(per_out: list[list[Any]], tuple_out: bool, single: bool) -> Any:
    rows = [r[0] if single else tuple(r) for r in per_out]
    return tuple(rows) if tuple_out else rows[0]


def jacfwd(f: Callable, wrt: Any = 0, *, jit: bool = True) -> Callable[..., Any]:
    """The Jacobian function by forward mode: shape ``out.shape + x.shape`` (tuples nest
    as in JAX: outputs outer, ``wrt`` inner); one jvp per input element."""
    d = _diff(f, wrt, jit)

    def jac(*args: Any) -> Any:
        positions = _wrt_list(d)
        zeros = [np.zeros_like(np.asarray(args[i], dtype=float)) if np.ndim(args[i]) else 0.0
                 for i in positions]
        cols: list[list[Any]] = [[] for _ in positions]
        value = None
        for k, i in enumerate(positions):
            x = args[i]
            for j in range(int(np.size(x))):
                seeds = list(zeros)
                if np.ndim(x):
                    e = np.zeros(np.shape(x))
                    e.flat[j] = 1.0
                    seeds[k] = e
                else:
                    seeds[k] = 1.0
                value, tan = jvp_of(d, args, seeds[0] if d.single else tuple(seeds))
                cols[k].append(tan)
        tuple_out = isinstance(value, tuple)
        outs = value if tuple_out else (value,)
        per_out = []
        for o, out in enumerate(outs):
            row = []
            for k, i in enumerate(positions):
                col = [c[o] if tuple_out else c for c in cols[k]]
                m = np.stack([np.asarray(c, dtype=float).reshape(-1) for c in col], axis=-1)
                row.append(m.reshape(np.shape(out) + np.shape(args[i])))
            per_out.append(row)
        return _nest(per_out, tuple_out, d.single)

    return jac


def jacrev(f: Callable, wrt: Any = 0, *, jit: bool = True) -> Callable[..., Any]:
    """The Jacobian function by reverse mode (one pullback per output element); same
    shapes as ``jacfwd``."""
    d = _diff(f, wrt, jit)

    def jac(*args: Any) -> Any:
        value, pullback = d.vjp(*args)
        tuple_out = isinstance(value, tuple)
        outs = value if tuple_out else (value,)
        positions = _wrt_list(d)
        per_out = []
        for o, out in enumerate(outs):
            rows: list[list[Any]] = [[] for _ in positions]
            for j in range(int(np.size(out))):
                seeds = [np.zeros(np.shape(v)) if np.ndim(v) else 0.0 for v in outs]
                if np.ndim(out):
                    e = np.zeros(np.shape(out))
                    e.flat[j] = 1.0
                    seeds[o] = e
                else:
                    seeds[o] = 1.0
                g = pullback(tuple(seeds) if tuple_out else seeds[0])
                g = (g,) if d.single else g
                for k in range(len(positions)):
                    rows[k].append(g[k])
            row = []
            for k, i in enumerate(positions):
                m = np.stack([np.asarray(r, dtype=float).reshape(-1) for r in rows[k]])
                row.append(m.reshape(np.shape(out) + np.shape(args[i])))
            per_out.append(row)
        return _nest(per_out, tuple_out, d.single)

    return jac


__all__ = ["hessian", "hvp", "jacfwd", "jacrev", "jvp", "jvp_of", "jvp_source"]


def _second(d: Any, args: tuple) -> Any:
    """The ``Differentiated`` gradient code of ``d`` at these kinds (same ``wrt``), whose
    jvp is the Hessian-vector product (cached on ``d``)."""
    from .api import Differentiated
    from .second_order import gradient_function

    gen = d._generated(args)
    rk = gen.return_kinds
    if len(rk) != 1 or (rk[0] is not None and rk[0].ndim != 0):
        raise ValueError(f"hvp/hessian of {d.func.__name__} need a scalar output")
    g = gradient_function(d, args)
    cache = d.__dict__.setdefault("_second_cache", {})
    d2 = cache.get(id(g))
    if d2 is None or d2.func is not g:
        d2 = Differentiated(g, wrt=d.wrt, jit=d.jit)
        d2.options = dict(d.options)  # compiled as the user's function is (fastmath...)
        cache[id(g)] = d2
    return d2


def _second_jvp(d: Any, d2: Any, primals: tuple, tangents: Any) -> Any:
    """The jvp of the gradient code; a refusal says it is about the generated code."""
    from .errors import TransformError

    try:
        return jvp_of(d2, (*primals, 1.0), tangents)[1]
    except TransformError as e:
        raise TransformError(
            f"hvp/hessian of {d.func.__name__}: forward mode cannot differentiate the "
            f"generated gradient code: {e.msg}", filename=e.filename, lineno=e.lineno,
            source_line=e.source_line,
            hint="see d.source() for the gradient code; jacfwd of a hand-written gradient "
                 "or finite differences of jg.grad are the alternatives") from None


def hvp(f: Callable, primals: tuple, tangents: Any, *, wrt: Any = 0,
        jit: bool = True) -> Any:
    """The Hessian-vector product ``H @ tangents`` of a scalar ``f`` (forward-over-reverse:
    forward mode applied to the generated gradient code); the structure of ``tangents``."""
    d = _diff(f, wrt, jit)
    if not isinstance(primals, (tuple, list)):
        raise TypeError(f"hvp of {d.func.__name__}: primals must be a tuple of all "
                        f"{len(d.params)} positional arguments")
    primals = tuple(primals)
    d2 = _second(d, primals)
    t = _second_jvp(d, d2, primals, tangents)
    return t if d.single or isinstance(t, tuple) else (t,)


def hessian(f: Callable, wrt: Any = 0, *, jit: bool = True) -> Callable[..., Any]:
    """The Hessian function of a scalar ``f`` (forward-over-reverse): shape
    ``x.shape + x.shape``; for a tuple ``wrt`` a tuple of tuples (``H[i][j]`` of shape
    ``x_i.shape + x_j.shape``), as JAX nests them."""
    d = _diff(f, wrt, jit)

    def hess(*args: Any) -> Any:
        d2 = _second(d, args)
        positions = _wrt_list(d)
        zeros = [np.zeros(np.shape(args[i])) if np.ndim(args[i]) else 0.0 for i in positions]
        cols: list[list[Any]] = [[] for _ in positions]
        for k, i in enumerate(positions):
            for j in range(int(np.size(args[i]))):
                seeds = list(zeros)
                if np.ndim(args[i]):
                    e = np.zeros(np.shape(args[i]))
                    e.flat[j] = 1.0
                    seeds[k] = e
                else:
                    seeds[k] = 1.0
                t = _second_jvp(d, d2, args, seeds[0] if d.single else tuple(seeds))
                cols[k].append(t if isinstance(t, tuple) else (t,))
        rows = []
        for a, ia in enumerate(positions):  # the gradient w.r.t. argument ia, outer
            row = []
            for k, ib in enumerate(positions):  # differentiated w.r.t. argument ib, inner
                m = np.stack([np.asarray(c[a], dtype=float).reshape(-1) for c in cols[k]],
                             axis=-1)
                row.append(m.reshape(np.shape(args[ia]) + np.shape(args[ib])))
            rows.append(row[0] if d.single else tuple(row))
        return rows[0] if d.single else tuple(rows)

    return hess
